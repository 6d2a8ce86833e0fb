"""Evidence a diagnosis can read from a case's outcome: the calls the student's exercise made to
other exercises, paired with the calls the reference made in the same case.

A call is "direct" when the exercise's own code made it (not an exercise it called). Calls are
paired in order, per callee: the student's k-th call of split_heads with the reference's k-th.
"""
from __future__ import annotations

import torch

from course.confirm.standins import TIGHT, same
from course.i18n import N_, _

# target -> {argument name: equivalent(reference's value, the student's, the reference's call)}:
# values that differ and still mean the same to the callee (the scores of a softmax that differ
# only by a constant per row, or where one side hides a key with -inf and the other with -1e9)
EQUIVALENT: dict[str, dict] = {}

POLARITY = N_("your {exercise} passes {callee} a `{name}` with True and False swapped: True "
              "marks what may be attended (a real token, a key the query may see), False what "
              "is hidden; pass the mask as it is (or build it that way round)")


def equivalent(target: str, name: str):
    """Register, as a decorator, when two values of one argument of `target` are the same to
    it: the `where:` line and the argument hints then do not flag them."""
    def register(function):
        EQUIVALENT.setdefault(target, {})[name] = function
        return function
    return register


def inverted(want, have) -> bool:
    """Two bool tensors of one shape, each the other's negation (a mask of the other polarity)."""
    return isinstance(want, torch.Tensor) and isinstance(have, torch.Tensor) and \
        want.dtype == torch.bool and have.dtype == torch.bool and want.shape == have.shape and \
        want.numel() > 1 and want.device.type != "meta" and have.device.type != "meta" and \
        bool((want == ~have).all())


def direct(check, call: dict) -> bool:
    """Whether the exercise's own code made this call (and it is not the exercise itself)."""
    own = set(check.own_targets())
    root = None if check.is_class else check.target
    return (call["parent"] is None or call["parent"] in own) and call["target"] != root \
        and call["target"] not in own


def pairs(check, outcome, target: str | None = None) -> list[tuple[dict, dict | None]]:
    """(reference's call, the student's matching call or None) for every direct reference call
    (of `target` only, if given), in the reference's order."""
    mine: dict[str, list[dict]] = {}
    for call in outcome.seen:
        if direct(check, call):
            mine.setdefault(call["target"], []).append(call)
    counts: dict[str, int] = {}
    found = []
    for call in outcome.calls:
        if not direct(check, call):
            continue
        index = counts.get(call["target"], 0)
        counts[call["target"]] = index + 1
        if target is None or call["target"] == target:
            theirs = mine.get(call["target"], [])
            found.append((call, theirs[index] if index < len(theirs) else None))
    return found


def differing(reference: dict, mine: dict) -> list[str]:
    """The names of the arguments of one call that differ ("*" when the names themselves do);
    values the callee takes as the same (EQUIVALENT) do not."""
    if reference["args"].keys() != mine["args"].keys():
        return ["*"]
    rules = EQUIVALENT.get(reference["target"], {})
    return [name for name, value in reference["args"].items()
            if not same(value, mine["args"][name]) and not _equivalent(
                rules.get(name), value, mine["args"][name], reference)]


def _equivalent(rule, want, have, reference) -> bool:
    if rule is None:
        return False
    try:
        return bool(rule(want, have, reference))
    except Exception:  # noqa: BLE001 - values the rule cannot read are not the same
        return False


def same_softmax(want, have, dim: int) -> bool:
    """Two score tensors whose softmax along `dim` is the same: equal up to a constant per row,
    a key hidden by -inf on one side and by a fill far below the row's max (-1e9) on the other,
    and a row that hides every key (all -inf, or the constant a lesson fills it with) on both."""
    if not (isinstance(want, torch.Tensor) and isinstance(have, torch.Tensor)) or \
            want.shape != have.shape or want.dtype != have.dtype or \
            not want.dtype.is_floating_point or want.device.type == "meta":
        return False
    a, b = _softmax_or_blind(want.double(), dim), _softmax_or_blind(have.double(), dim)
    rtol, atol = TIGHT.get(want.dtype, (1e-5, 1e-7))
    return bool(torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def _softmax_or_blind(x, dim: int):
    """softmax along dim, a row of all -inf as the uniform row a constant fill gives."""
    blind = torch.isneginf(x).all(dim=dim, keepdim=True)
    return torch.softmax(x.masked_fill(blind, 0.0), dim=dim)


def argument(outcome, target: str, name: str, source: str = "calls"):
    """The argument `name` of the first call of `target` (in the reference's calls, or the
    student's with source="seen"), or None."""
    for call in getattr(outcome, source):
        if call["target"] == target:
            return call["args"].get(name)
    return None


def argument_hint(check, outcomes, target: str, hints: dict[tuple[str, ...], str]) -> str | None:
    """The hint for the set of arguments that differ in the first direct call of `target` whose
    arguments differ from the reference's (e.g. only `v` of scaled_dot_product_attention: the
    values come from the wrong projection), or None when no entry of `hints` names that set."""
    for outcome in outcomes:
        if not outcome.failed:
            continue
        for reference, mine in pairs(check, outcome, target):
            wrong = differing(reference, mine) if mine is not None else []
            if len(wrong) == 1 and wrong != ["*"] and inverted(reference["args"][wrong[0]],
                                                               mine["args"][wrong[0]]):
                return _(POLARITY).format(exercise=check.attribute, name=wrong[0],
                                          callee=reference["target"].split(":")[1])
            if wrong:
                return hints.get(tuple(sorted(wrong)))
    return None
