"""Checks for lesson 01 (Q, K, V by hand): stable softmax and scaled scores."""
from __future__ import annotations

import torch

from course.checks.core import Case, Check
from course.checks.inputs import randn


def _finite(outputs) -> str | None:
    out = outputs["output"]
    if not torch.isfinite(out).all():
        return f"output holds {int((~torch.isfinite(out)).sum())} NaN/inf values"
    return None


def _sums_to_one(dim: int):
    def expect(outputs) -> str | None:
        sums = outputs["output"].sum(dim=dim)
        worst = (sums - 1).abs().max().item()
        return None if worst < 1e-12 else f"sums along dim={dim} are off from 1 by up to {worst:.3g}"
    return expect


check_stable_softmax = Check(
    id="01.stable_softmax",
    target="softmax:stable_softmax",
    lesson="01",
    cases=[
        Case("[0.1, 0.3, 1.0, 0.8]",
             lambda f: f(torch.tensor([0.1, 0.3, 1.0, 0.8], dtype=torch.float64)),
             hint="softmax(x)_i = exp(x_i) / sum_j exp(x_j)"),
        Case("rows of a (3, 5) matrix sum to 1",
             lambda f: f(randn(3, 5, seed=11), dim=-1),
             hint="normalise each slice along `dim`: sum(dim=dim, keepdim=True)",
             expect=_sums_to_one(-1)),
        Case("(2, 4, 3) along dim=1",
             lambda f: f(randn(2, 4, 3, seed=12), dim=1),
             hint="use the `dim` argument everywhere (max and sum), not a hard-coded -1"),
        Case("huge inputs [1000, 1001, 1002] stay finite",
             lambda f: f(torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)),
             hint="exp(1000) overflows to inf and inf/inf is NaN: subtract the max before exp",
             expect=_finite),
        Case("huge inputs [1000, 1001, 1002]",
             lambda f: f(torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)),
             hint="exp(1000) overflows to inf and inf/inf is NaN: subtract the max before exp"),
        Case("rows on different scales [[-1000, -999], [1000, 1001]] stay finite",
             lambda f: f(torch.tensor([[-1000.0, -999.0], [1000.0, 1001.0]], dtype=torch.float64)),
             hint="subtract each row's own max (amax(dim, keepdim=True)), not one global max",
             expect=_finite),
        Case("(3, 6) with spread x 30 along dim=0",
             lambda f: f(randn(3, 6, seed=13, scale=30.0), dim=0),
             hint="the max must be taken along `dim` with keepdim=True so it broadcasts back"),
    ],
)


check_scaled_scores = Check(
    id="01.scaled_scores",
    target="softmax:scaled_scores",
    lesson="01",
    cases=[
        Case("seed example q=[1,0], keys [1,0], [0,1]",
             lambda f: f(torch.tensor([[1.0, 0.0]], dtype=torch.float64),
                         torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)),
             hint="scores are q @ k^T, then divide by sqrt(c) (c = q.shape[-1]): here [[1/sqrt(2), 0]]",
             shape_hint="the result is (queries, keys): q @ k.transpose(-2, -1), not k @ q^T"),
        Case("3 queries, 5 keys, c=4: shape (3, 5)",
             lambda f: f(randn(3, 4, seed=21), randn(5, 4, seed=22)),
             hint="the result is (queries, keys): q @ k.transpose(-2, -1), not k @ q^T"),
        Case("scale probe: q = k = ones(16), score 16/sqrt(16) = 4",
             lambda f: f(torch.ones(1, 16, dtype=torch.float64), torch.ones(1, 16, dtype=torch.float64)),
             hint="divide by sqrt(c), with c = q.shape[-1] (not by c, not by the sequence length)"),
        Case("scale probe: 2 queries, 7 keys, c=9",
             lambda f: f(randn(2, 9, seed=23), randn(7, 9, seed=24)),
             hint="divide by sqrt(c), with c = q.shape[-1] (not by c, not by the sequence length)"),
        Case("batch (2, 3), 4 queries, 6 keys, c=8",
             lambda f: f(randn(2, 3, 4, 8, seed=25), randn(2, 3, 6, 8, seed=26)),
             hint="transpose only the last two axes of k (k.transpose(-2, -1)), keep the batch axes"),
    ],
)
