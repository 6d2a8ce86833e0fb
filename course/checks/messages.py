"""The message of a check that fails on its own (FAIL) or meets a stub (NOT IMPLEMENTED YET).

    FAIL 00.batched_dot, case 'two vectors of length 5':
      raised NameError: name 'reslt' is not defined
      at exercises/warmup.py, line 14, in batched_dot:
          return reslt
      hint: `reslt` is not defined there: a typo, a name used before it is assigned, ...
      1 of 6 cases passes; the failing ones: 'two vectors of length 5', ...
"""
from __future__ import annotations

from course.checks import hints, lines
from course.checks.failures import CheckFailed, NotImplementedYet
from course.checks.where import NOTEBOOK_CELL
from course.checks.problem_text import localised
from course.i18n import _, listed

SHOWN_NAMES = 3


def fail(check, outcomes: list, tally: bool = True) -> CheckFailed:
    """CheckFailed for outcomes of which at least one failed (`tally`: with the line that counts
    the failing cases)."""
    shown, hint, notes = hints.choose(check, outcomes)
    text = [lines.fail_header(check.id, shown.case.name), f"  {localised(shown.problem)}"]
    text += where_lines(shown)
    text.append("  " + _("hint: {hint}").format(hint=hint))
    text += [f"  {note}" for note in notes]
    text += count(outcomes) if tally else []
    return CheckFailed("\n".join(text), errors(outcomes))


def where_lines(outcome) -> list[str]:
    """Where the student's code raised: file, line, function and the line itself, for each of
    the student's frames (the last one raised)."""
    found = []
    for where in outcome.where:
        file = _(where.file) if where.file == NOTEBOOK_CELL else where.file
        found += [_("  at {file}, line {line}, in {function}:").format(
                      file=file, line=where.line, function=where.function),
                  f"      {where.source}"]
    return found


def count(outcomes: list) -> list[str]:
    """How many cases fail, and which (the first few)."""
    failing = [lines.case_name(o.case.name) for o in outcomes if o.failed]
    if len(outcomes) < 2 or len(failing) < 2:
        return []
    names = listed(f"'{n}'" for n in failing[:SHOWN_NAMES])
    more = "" if len(failing) <= SHOWN_NAMES else _(" and {n} more").format(
        n=len(failing) - SHOWN_NAMES)
    return [_("  {failing} of {total} cases fail: {names}{more}").format(
        failing=len(failing), total=len(outcomes), names=names, more=more)]


def errors(outcomes: list) -> dict[str, BaseException]:
    return {o.case.name: o.error for o in outcomes if o.error is not None}


def not_implemented(check, outcome) -> NotImplementedYet:
    """An untouched stub: which function still raises, in which file."""
    return NotImplementedYet(
        lines.not_implemented_prefix(check.id)
        + _("calls `{name}` in exercises/{module}.py, which still raises NotImplementedError "
            "({error}). Write that part, then rerun this cell.").format(
            name=check.attribute, module=check.module, error=outcome.problem),
        errors([outcome]))
