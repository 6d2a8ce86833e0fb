"""Where a student stands: every check of the course run on `exercises/`, one row each.

    python -m course.progress                       # or: make check
    python -m course.progress --only 01.scaled_scores   # make check ONLY=01.scaled_scores
    python -m course.progress --hidden              # make check HIDDEN=1

Each exercise gets PASS, FAIL, BLOCKED (it fails because an exercise it calls fails: the row
names that one) or TODO (its code still raises NotImplementedError). Below the table comes the
whole message of each failing exercise (of every chosen one with --only), wrapped to 80 columns.
The checks are discovered with `course.checks.all_checks()` and compare with the recorded
reference results in `course/reference_data/`, so this works without the reference solutions.
With --hidden, every written exercise also runs on hidden-input kinds of cases drawn from a
public seed, as the grader does on its secret one (course/confirm/public.py). It always exits 0:
a table of work in progress is not an error.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import sys
import textwrap
from dataclasses import dataclass

from course.checks import Blocked, NotImplementedYet, all_checks, lines
from course.checks.core import Check
from course.checks.depends import Session
from course.checks.expected import RecordedReference
from course.checks.registry import canonical
from course.checks.problem_text import localised
from course.columns import width as display_width
from course.i18n import _

WIDTH = 80


@dataclass
class Row:
    lesson: str
    check: str
    exercise: str  # "file.py: name", where the student writes it
    status: str    # PASS, FAIL, BLOCKED or TODO
    reason: str = ""   # one line: the problem (FAIL), what blocks it (BLOCKED)
    message: str = ""  # the whole message of a check that did not pass
    hidden: str | None = None  # with --hidden: "" when confirmed, else why not


def run_check(check: Check, package: str = "exercises", session: Session | None = None) -> Row:
    """Run one check on the student's code; never raises (a crash is a FAIL with its reason)."""
    session = session or Session(RecordedReference())
    row = Row(check.lesson, check.id, f"{check.module}.py: {check.attribute}", lines.PASS)
    printed = io.StringIO()  # the student's prints would break the table
    try:
        with contextlib.redirect_stdout(printed):
            failure = check.judge(check.resolve(package), session=session)
    except Exception as error:  # import error, syntax error, missing name, missing reference
        failure = error
        session.statuses.pop(check.id, None)
    if failure is None:
        return row
    row.message = str(failure) if not isinstance(failure, Exception) or \
        isinstance(failure, AssertionError) else f"{type(failure).__name__}: {failure}"
    if isinstance(failure, NotImplementedYet):
        row.status = lines.TODO
    elif isinstance(failure, Blocked):
        row.status, row.reason = lines.BLOCKED, _blocked_reason(failure)
    else:
        row.status, row.reason = lines.FAIL, lines.summary(row.message)
    return row


def _blocked_reason(failure: Blocked) -> str:
    alone = {"pass": _("right on its own"), "fail": _("also wrong on its own"),
             "untried": _("not tried on its own")}[failure.alone]
    return _("by {roots}; {alone}").format(roots=", ".join(failure.roots), alone=alone)


def progress(package: str = "exercises", only: list[str] | None = None) -> list[Row]:
    """One row per check (or per chosen check), in lesson order."""
    session = Session(RecordedReference())
    # stable sort: within a lesson, the order the lesson's module defines its checks in
    checks = sorted(all_checks().values(), key=lambda c: c.lesson)
    chosen = {canonical(c) for c in only} if only else None
    rows = []
    for check in checks:
        if chosen is None or check.id in chosen:
            rows.append(run_check(check, package, session))
    return rows


def table(rows: list[Row], full: bool = False) -> str:
    """The one-line-per-exercise table, then the whole message of each failing exercise."""
    width = max(len(r.check) for r in rows) if rows else 10
    hidden = any(r.hidden is not None for r in rows)
    out = [f"{'status':<8} {'check':<{width}}  " + _("exercise (in exercises/), or what blocks it")
           + (_("  [hidden]") if hidden else ""),
           f"{'-' * 7:<8} {'-' * width}  {'-' * 43}"]
    for r in rows:
        note = r.reason if r.status == lines.BLOCKED else r.exercise
        mark = "" if r.hidden is None else ("  [" + (_("hidden: confirmed") if not r.hidden
                                                      else _("hidden: differs")) + "]")
        out.append(f"{r.status:<8} {r.check:<{width}}  {note}{mark}".rstrip())
    also_wrong = _("also wrong on its own")  # in the reason of a BLOCKED row, in its language
    for r in rows:
        if r.message and (full or r.status == lines.FAIL or
                          (r.status == lines.BLOCKED and r.reason.endswith(also_wrong))):
            out += ["", wrap(r.message)]
        if r.hidden:
            out += ["", wrap(_("hidden {id}: {why}").format(id=r.check,
                                                             why=localised(r.hidden)))]
    counts = {s: sum(r.status == s for r in rows)
              for s in (lines.PASS, lines.FAIL, lines.BLOCKED, lines.TODO)}
    out += ["", wrap(_("The whole message of one check: make check ONLY=<check>. Your code on "
                       "the kinds of hidden cases the grader uses: make check HIDDEN=1.")),
            _("{passed} of {total} exercises pass, {failed} fail, {blocked} blocked, {todo} to "
              "do.").format(passed=counts[lines.PASS], total=len(rows), failed=counts[lines.FAIL],
                            blocked=counts[lines.BLOCKED], todo=counts[lines.TODO])]
    return "\n".join(out)


def wrap(message: str, width: int = WIDTH) -> str:
    """A check's message with every long line wrapped at `width`, continuations indented."""
    out = []
    for line in message.splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        if _WIDE.search(line):
            first, *rest = _fill_wide(line.strip(), width - len(indent), width - len(indent) - 4)
            out += [indent + first] + [indent + "    " + piece for piece in rest]
            continue
        first, *rest = textwrap.wrap(line.strip(), width - len(indent), break_long_words=False,
                                     break_on_hyphens=False) or [""]
        out.append(indent + first)
        out += [indent + "    " + piece for piece in
                textwrap.wrap(" ".join(rest), width - len(indent) - 4, break_long_words=False,
                              break_on_hyphens=False)]
    return "\n".join(out)


# Chinese (and other East Asian) text: a character takes two columns, and a line may break
# between any two characters, but not before a closing mark nor after an opening one.
_WIDE = re.compile("[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f"
                   "\uff00-\uff60\uffe0-\uffe6]")
_OPEN, _CLOSE = "（【《「『“‘", "，。、；：！？）】》」』”’"
_PIECE = re.compile(rf"\s+|[{_OPEN}]*(?:{_WIDE.pattern}|[^\s{_WIDE.pattern[1:-1]}]+)[{_CLOSE}]*")


def _fill_wide(text: str, first: int, rest: int) -> list[str]:
    """`text` in lines of at most `first` columns, then `rest` (a longer piece gets its own)."""
    lines, current, limit = [], "", first
    for piece in _PIECE.findall(text):
        if piece.isspace():
            current += " " if current else ""
            continue
        if current.strip() and display_width(current + piece) > limit:
            lines.append(current.rstrip())
            current, limit = "", rest
        current += piece
    return lines + [current.rstrip()]


def add_hidden(rows: list[Row]) -> None:
    """Run the public hidden cases of every written exercise (make check HIDDEN=1)."""
    from course.confirm.public import rehearse

    written = [r.check for r in rows if r.status != lines.TODO]
    if not written:
        return
    verdicts = rehearse(written)
    for row in rows:
        if row.check in verdicts:
            row.hidden = verdicts[row.check] or ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="a table of every exercise: PASS, FAIL, "
                                                 "BLOCKED or TODO")
    parser.add_argument("--only", nargs="*", default=None, help="check ids (whole messages)")
    parser.add_argument("--hidden", action="store_true",
                        help="also run the hidden-input kinds of cases (public seed)")
    args = parser.parse_args(argv)
    importlib.invalidate_caches()
    only = [i for value in args.only or [] for i in value.replace(",", " ").split()] or None
    rows = progress(only=only)
    if only and not rows:
        print(_("no check with the id {ids}").format(ids=", ".join(only)))
        return 0
    if args.hidden:
        add_hidden(rows)
    print(table(rows, full=bool(only)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
