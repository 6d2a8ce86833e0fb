"""Differences the hidden judge explains: the same formula with another admissible constant.

A hidden case may carry "explain": the name of an entry here. When the student's outputs differ
from the reference's, the entry finds the constant they were computed with (course/checks/
families.py) and accepts the difference when it lies in the documented range, as the visible
check does: never a looser tolerance. The formulas are written out here (no solutions needed:
the public rehearsal of `make check HIDDEN=1` runs without them), and run through the harness's
own `run_case`, so that their outputs carry the same names as the student's.
"""
from __future__ import annotations

import torch
from torch import nn

from course.checks.families import LAYER_NORM_EPS, fit, scaled_gap
from course.confirm.harness import run_case


class PairBiasWithEps(nn.Module):
    """AlphaFold2's pair bias (LayerNorm over c_z, a bias-free Linear to one number per head, the
    head axis before i and j) with a LayerNorm of the given eps."""

    def __init__(self, c_z: int, N_head: int, eps: float):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z, eps=eps)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)

    def forward(self, z):
        return self.linear_z(self.layer_norm_z(z)).movedim(-1, -3)


def layer_norm_eps(case: dict, got: dict, atol: float, rtol: float) -> bool:
    """Whether `got` is the pair bias with a LayerNorm eps in the accepted range."""
    if case.get("kind") != "module" or case.get("device"):
        return False

    def distance(eps: float) -> float:
        outputs = run_case(lambda c_z, N_head: PairBiasWithEps(c_z, N_head, eps), case)
        outputs.pop("inputs modified", None)
        return scaled_gap(outputs, got, atol, rtol)

    eps = fit(distance, 1e-16, 1e-1)
    return eps is not None and LAYER_NORM_EPS[0] <= eps <= LAYER_NORM_EPS[1]


EXPLAIN = {"pair bias, LayerNorm eps": layer_norm_eps}


def explained(case: dict, got: dict, atol: float, rtol: float) -> bool:
    """Whether the case names an explanation and it accepts `got`."""
    explain = EXPLAIN.get(case.get("explain", ""))
    if explain is None:
        return False
    try:
        with torch.enable_grad():
            return bool(explain(case, got, atol, rtol))
    except Exception:  # noqa: BLE001 - outputs it cannot read are not explained
        return False
