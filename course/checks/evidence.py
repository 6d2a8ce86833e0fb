"""Evidence a diagnosis can read from a case's outcome: the calls the student's exercise made to
other exercises, paired with the calls the reference made in the same case.

A call is "direct" when the exercise's own code made it (not an exercise it called). Calls are
paired in order, per callee: the student's k-th call of split_heads with the reference's k-th.
"""
from __future__ import annotations

from course.confirm.standins import same


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
    """The names of the arguments of one call that differ ("*" when the names themselves do)."""
    if reference["args"].keys() != mine["args"].keys():
        return ["*"]
    return [name for name, value in reference["args"].items()
            if not same(value, mine["args"][name])]


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
            if wrong:
                return hints.get(tuple(sorted(wrong)))
    return None
