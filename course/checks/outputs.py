"""What a case returns, as a dict of tensors, and how two such dicts are compared.

Used by the check engine, the recorded references and the grader's hidden confirmation, so that
"the same" means the same everywhere.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

Outputs = Mapping[str, torch.Tensor]


class Gradients(dict):
    """A case's outputs in which some gradients never arrived: autograd gave None for the names
    in `missing` (their tensors hold NaN, so that the comparison fails), which a message names
    as missing, not as NaN the code computed."""

    def __init__(self, values=(), missing=()):
        super().__init__(values)
        self.missing = frozenset(missing)


def missing(outputs) -> frozenset:
    """The names of the gradients that never arrived (see Gradients)."""
    return getattr(outputs, "missing", frozenset())


def as_outputs(result: Any) -> dict[str, torch.Tensor]:
    """Normalise what a case returns to a dict of tensors."""
    if isinstance(result, torch.Tensor):
        return {"output": result.detach()}
    if isinstance(result, Mapping):
        found = {str(k): _tensor(v) for k, v in result.items()}
        return Gradients(found, missing(result)) if missing(result) else found
    if isinstance(result, (tuple, list)):
        return {f"output[{i}]": _tensor(v) for i, v in enumerate(result)}
    return {"output": _tensor(result)}


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    return torch.as_tensor(value)


def compare(expected: Outputs, got: Outputs, atol: float, rtol: float) -> str | None:
    """Describe the first difference between two output dicts, or return None if they agree."""
    return first_difference(expected, got, atol, rtol)[1]


def first_difference(expected: Outputs, got: Outputs, atol: float,
                     rtol: float) -> tuple[str | None, str | None]:
    """(key, description) of the first difference between two output dicts; (None, None) if none."""
    if set(expected) != set(got):
        return None, f"outputs: expected {sorted(expected)}, got {sorted(got)}"
    for key in expected:
        problem = difference(key, expected[key], got[key], atol, rtol)
        if problem:
            return key, problem
    return None, None


# the loosest tolerance a comparison in each dtype may use: float32 cannot agree to 1e-7
FLOOR = {torch.float32: (1e-6, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2)}


def tolerances(want: torch.Tensor, atol: float, rtol: float) -> tuple[float, float]:
    """(atol, rtol) for comparing with `want`: a case's own, at least its dtype's rounding."""
    floor_atol, floor_rtol = FLOOR.get(want.dtype, (0.0, 0.0))
    return max(atol, floor_atol), max(rtol, floor_rtol)


def difference(key: str, want: torch.Tensor, have: torch.Tensor, atol: float,
               rtol: float) -> str | None:
    label = "output" if key == "output" else key
    if tuple(want.shape) != tuple(have.shape):
        return f"{label} shape: expected {tuple(want.shape)}, got {tuple(have.shape)}"
    if not want.dtype.is_floating_point and want.dtype != have.dtype:
        return f"{label} dtype: expected {want.dtype}, got {have.dtype}"
    if want.dtype.is_floating_point or have.dtype.is_floating_point:
        atol, rtol = tolerances(want, atol, rtol)
        problem = _values(label, want, have, atol, rtol)
        if want.dtype != have.dtype:
            if problem is None:
                return f"{label} dtype: expected {want.dtype}, got {have.dtype} (the values agree)"
            return f"{problem}; and its dtype is {have.dtype}, not {want.dtype}"
        return problem
    if not torch.equal(want, have):
        return f"{label}: expected {want.tolist()}, got {have.tolist()}"
    return None


def largest_gap(want: torch.Tensor, have: torch.Tensor) -> float:
    """max |want - have| of two same-shaped tensors, NaN and infinities where both agree ignored."""
    want64, have64 = want.double(), have.double()
    same_nan = torch.isnan(want64) & torch.isnan(have64)
    diff = (want64 - have64).abs().masked_fill(same_nan, 0.0)
    diff = torch.where(torch.isinf(want64) & (want64 == have64), 0.0, diff)
    return float(diff.max()) if diff.numel() else 0.0


def _values(label: str, want: torch.Tensor, have: torch.Tensor, atol: float,
            rtol: float) -> str | None:
    want64, have64 = want.double(), have.double()
    # the usual answer in one operation: isclose's rule (equal, infinities too, or a finite gap
    # within atol + rtol*|expected|, no NaN) passes every test below; what it refuses is
    # looked at below, for the message
    if atol >= 0 and rtol >= 0 and bool(torch.isclose(have64, want64, rtol=rtol, atol=atol).all()):
        return None
    nan_got = torch.isnan(have64) & ~torch.isnan(want64)
    if nan_got.any():
        return (f"{label} shape {tuple(have.shape)} as expected, but it holds "
                f"{int(nan_got.sum())} NaN where the reference has numbers")
    same_nan = torch.isnan(want64) & torch.isnan(have64)
    diff = (want64 - have64).abs().masked_fill(same_nan, 0.0)
    diff = torch.where(torch.isinf(want64) & (want64 == have64), 0.0, diff)
    limit = atol + rtol * want64.abs().nan_to_num(0.0)
    if (diff > limit).any():
        return (f"{label} shape {tuple(have.shape)} as expected; "
                f"max |expected - got| = {diff.max().item():.3g} "
                f"(tolerance {atol:g} + {rtol:g}*|expected|)")
    return None
