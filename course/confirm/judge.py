"""Judge a student's results on plain cases against the reference's (see course/confirm/harness.py).

The results come from a process that ran the student's code: anything in them may be forged, so
every check of shape, type and key happens here before a number is compared.
"""
from __future__ import annotations

import torch

from course.checks.outputs import compare

ATOL, RTOL = 1e-8, 1e-6


def judge(cases: list[dict], expected: list, got, atol: float = ATOL,
          rtol: float = RTOL) -> str | None:
    """None when the results agree with the reference's on every case, else why not."""
    if not isinstance(got, list) or len(got) != len(cases):
        return "the hidden run returned no results"
    for case, want, mine in zip(cases, expected, got):
        label = f"hidden case '{case['name']}'"
        if not isinstance(mine, dict):
            return f"{label}: no result"
        if "error" in mine:
            return f"{label}: {mine['error']}"
        outputs = mine.get("outputs")
        if not isinstance(outputs, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in outputs.items()):
            return f"{label}: the outputs are not plain tensors"
        if case["kind"] == "init":
            problem = _judge_init(want, outputs, atol, rtol)
        else:
            if "inputs modified" in outputs and bool(outputs["inputs modified"].any()):
                return f"{label}: the call changed its input tensors in place"
            tolerance = case.get("atol", atol), case.get("rtol", rtol)
            problem = compare(want, outputs, *tolerance)
            if problem and "explain" in case:
                from course.confirm.explain import explained

                problem = None if explained(case, outputs, *tolerance) else problem
            problem = problem or _dtypes_differ(want, outputs)
        if problem:
            return f"{label}: {problem}"
    return None


def _judge_init(want: dict, outputs: dict, atol: float, rtol: float) -> str | None:
    """An "init" case: the same parameters, of the same shapes; the deterministic ones (such as
    AlphaFold's open gate) with the same values."""
    reference = want["outputs"]
    if set(outputs) != set(reference):
        return f"the module's state holds {sorted(outputs)}, the reference's {sorted(reference)}"
    for key, value in reference.items():
        if tuple(value.shape) != tuple(outputs[key].shape):
            return f"{key} has shape {tuple(outputs[key].shape)}, expected {tuple(value.shape)}"
    deterministic = {k: reference[k] for k in want["deterministic"]}
    return compare(deterministic, {k: outputs[k] for k in deterministic}, atol, rtol)


def _dtypes_differ(want: dict, got: dict) -> str | None:
    """compare() lets float32 pass for float64; here the dtype is part of the answer."""
    for key, value in want.items():
        if got[key].dtype != value.dtype:
            return f"{key} dtype: expected {value.dtype}, got {got[key].dtype}"
    return None
