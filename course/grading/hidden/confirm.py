"""Draw a grading run's hidden cases, compute the solutions' outputs on them, judge a student's.

A PASS line printed in a student's kernel is necessary, not sufficient: the grader then runs each
exercise that passed on hidden cases, drawn from a secret seed (the student's code never sees the
seed, only the inputs), in a fresh sandboxed process that can import the student's `exercises/`
and torch and nothing else (course/confirm/harness.py). The outputs come back as plain tensors and
are compared here, in the grader's process, with the outputs of `solutions/` on the same cases.
The specs are in `lessonNN.py` beside this file (see spec.py).
"""
from __future__ import annotations

import importlib
import pkgutil
import zlib

import torch

from course.confirm import judge as judging
from course.confirm.harness import resolve, run_case
from course.grading.hidden.spec import REGISTRY, Draw, HiddenSpec


def specs() -> dict[str, HiddenSpec]:
    """Every registered spec, by check id (importing every lessonNN.py registers them)."""
    import course.grading.hidden as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("lesson"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    return REGISTRY


def draw_cases(check, seed: int, solutions: str = "solutions") -> list[dict]:
    """The hidden cases of one check (a course.checks Check) for this grading run's seed."""
    spec = specs().get(check.id)
    if spec is None:
        raise KeyError(f"no hidden cases for {check.id}: add a spec to "
                       f"course/grading/hidden/lesson{check.lesson}.py")
    own_seed = (seed * 1_000_003 + zlib.crc32(check.id.encode())) % 2**63
    cases = spec.make(Draw(own_seed, check.target, solutions))
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names), f"{check.id}: hidden case names repeat"
    return cases


def expected_outputs(check, cases: list[dict], solutions: str = "solutions") -> list[dict]:
    """The solutions' outputs on the cases; an "init" case also gets the state of a second
    construction under another seed, so `judge` can tell deterministic parameters from random."""
    impl = resolve(check.target, solutions)
    found = []
    for case in cases:
        outputs = run_case(impl, case)
        if case["kind"] == "init":
            other = run_case(impl, {**case, "torch_seed": case["torch_seed"] + 1})
            outputs = {"deterministic": {k for k in outputs if torch.equal(outputs[k], other[k])},
                       "outputs": outputs}
        found.append(outputs)
    return found


def judge(check_id: str, cases: list[dict], expected: list, got: list) -> str | None:
    """None when the student's results agree with the solutions' on every case, else why not."""
    spec = specs()[check_id]
    return judging.judge(cases, expected, got, spec.atol, spec.rtol)
