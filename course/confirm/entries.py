"""A hidden entry with its call tables: what the grader hands the sandboxed harness for one check.

    from course.confirm.entries import hidden_entry
    entry = hidden_entry(check, cases)       # in the grader's process, where solutions/ is
    torch.save([entry, ...], cases_file)     # beside harness.py and standins.py in the sandbox

The entry holds the check's target and hidden cases (as before) plus, for a check whose exercise
calls other exercises, "stand_ins" (the targets to replace) and "calls" (one table per case: every
call the reference made to those targets while it ran that case, with outputs and, for gradient
cases, the VJPs backward asked for). The harness replays them in place of the student's own
functions, so each hidden case judges one exercise; no reference code enters the sandbox, only
recorded tensors.
"""
from __future__ import annotations

import torch

from course.confirm.harness import resolve, run_case
from course.confirm.standins import Patch, Recorder


def hidden_entry(check, cases: list[dict], solutions: str = "solutions") -> dict:
    """{"target", "cases", "stand_ins", "calls"} for `check` (a course.checks Check)."""
    targets = list(check.stand_in_targets())
    calls: list[list[dict]] = []
    resolve(check.target, solutions)  # imported before the patch, so that every name is there
    for case in cases:
        table: list[dict] = []
        if targets and case["kind"] != "init":
            with Patch(solutions, targets, Recorder(table)):
                run_case(resolve(check.target, solutions), case)
        calls.append(table)
    entry = {"target": check.target, "cases": cases}
    if any(calls):
        entry.update(stand_ins=targets, calls=calls)
    return entry


def saveable(value):
    """The grader's expected outputs as torch.save(weights_only) can load them (sets as lists)."""
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, dict):
        return {k: saveable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [saveable(v) for v in value]
    return value


def size_of(entries) -> int:
    """Bytes that torch.save writes for `entries` (to keep an eye on the tables' size)."""
    import io

    buffer = io.BytesIO()
    torch.save(entries, buffer)
    return buffer.tell()
