"""Draw a grading run's hidden cases, compute the solutions' outputs on them, judge a student's.

A PASS line printed in a student's kernel is necessary, not sufficient: the grader then runs each
exercise that passed on hidden cases, drawn from a secret seed (the student's code never sees the
seed, only the inputs), in a fresh sandboxed process that can import the student's `exercises/`
and torch and nothing else (course/confirm/harness.py). The outputs come back as plain tensors and
are compared here, in the grader's process, with the outputs of `solutions/` on the same cases.
The specs are in `lessonNN.py` beside this file (see spec.py).

Each check draws from a generator of its own, seeded with `generator_seed`: 32 bits (all that
torch's CPU generator keeps, a Mersenne Twister seeded with 32 bits) of a SHA-256 of the whole
class seed and the check's id. So every bit of the class seed changes every check's cases, the
cases of one check tell nothing of another's or of the class seed, and a seed whose derivation
meets the public rehearsal's (course/confirm/public.py) is one the grader refuses
(`public_collisions`).
"""
from __future__ import annotations

import hashlib
import importlib
import pkgutil

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
    cases = spec.make(Draw(generator_seed(seed, check.id), check.target, solutions))
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names), f"{check.id}: hidden case names repeat"
    return cases


def generator_seed(seed: int, check_id: str) -> int:
    """The seed of `check_id`'s generator for the class seed `seed`: 32 bits of a SHA-256 of
    both (torch's CPU generator keeps no more than 32 bits of a seed)."""
    digest = hashlib.sha256(f"attention-course hidden cases\0{int(seed)}\0{check_id}".encode())
    return int.from_bytes(digest.digest()[:4], "big")


def public_collisions(seed: int) -> list[str]:
    """The checks whose generator, for the class seed `seed`, is one that draws public cases:
    the generator of any check for the public seed of `make check HIDDEN=1`, whose cases and
    outputs ship with the course. A seed with any is no secret: the grader refuses it."""
    from course.confirm.public import PUBLIC_SEED

    ids = sorted(specs())
    public = {generator_seed(PUBLIC_SEED, check_id) for check_id in ids}
    return [check_id for check_id in ids if generator_seed(seed, check_id) in public]


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
