"""Which wrong formula the evidence matches: candidate implementations run through the cases.

A diagnosis names the bug when one candidate, a small implementation of a known wrong formula
written in the check's own module (never imported from solutions/, which a student's copy lacks),
gives the student's result in every float64 case that differs. Each candidate runs through the
case's own `run`, on the case's own inputs, so a candidate needs no access to them; it runs only
when the check already fails.

    CANDIDATES = [(N_("the mask's polarity is inverted: ..."), inverted_mask_weights), ...]
    diagnose=lambda outcomes: candidates.matching(outcomes, CANDIDATES)
"""
from __future__ import annotations

import torch

from course.checks.outputs import as_outputs
from course.i18n import _


def matching(outcomes, candidates, rtol: float = 1e-6, atol: float = 1e-9,
             tags: tuple[str, ...] = ()) -> str | None:
    """The hint of the first candidate that reproduces the student's outputs in every float64
    case that differs (those with one of `tags`, if given), or None."""
    differing = [o for o in outcomes if o.status == "differs" and o.case.variant is None
                 and (not tags or set(tags) & set(o.case.tags))]
    if not differing:
        return None
    for hint, impl in candidates:
        if all(reproduces(o, impl, rtol, atol) for o in differing):
            return _(hint)
    return None


def reproduces(outcome, impl, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """Whether `impl`, run through the outcome's case, gives what the student's code gave."""
    try:
        with torch.no_grad():
            mine = as_outputs(outcome.case.run(impl))
    except Exception:  # noqa: BLE001 - a candidate that cannot run this case is not the bug
        return False
    got = outcome.got or {}
    if set(mine) != set(got):
        return False
    for key, have in got.items():
        want = mine[key]
        if want.shape != have.shape:
            return False
        if not want.dtype.is_floating_point:
            if not torch.equal(want, have.to(want.dtype)):
                return False
        elif not torch.allclose(want.double(), have.double(), rtol=rtol, atol=atol,
                                equal_nan=True):
            return False
    return True
