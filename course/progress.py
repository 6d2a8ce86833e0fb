"""Where a student stands: every check of the course run on `exercises/`, one line each.

    python -m course.progress        # or: make check

Each exercise gets PASS, FAIL with the first line of the reason, or TODO (its code still raises
NotImplementedError). The checks are discovered with `course.checks.all_checks()`, so a new
lesson's checks appear here without a change; they compare with the recorded reference results
in `course/reference_data/`, so this works without the reference solutions. It always exits 0:
a table of work in progress is not an error.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import sys
from dataclasses import dataclass

from course.checks import CheckFailed, NotImplementedYet, all_checks, lines
from course.checks.core import Check
from course.checks.expected import RecordedReference

REASON_WIDTH = 110  # keeps a row on one line of a terminal


@dataclass
class Row:
    lesson: str
    check: str
    exercise: str  # "file.py: name", where the student writes it
    status: str    # PASS, FAIL or TODO
    reason: str = ""


def _first_line(message: str) -> str:
    first = lines.summary(message)
    return first if len(first) <= REASON_WIDTH else first[:REASON_WIDTH - 1] + "…"


def run_check(check: Check, package: str = "exercises", reference=None) -> Row:
    """Run one check on the student's code; never raises (a crash is a FAIL with its reason)."""
    row = Row(check.lesson, check.id, f"exercises/{check.module}.py: {check.attribute}", lines.PASS)
    printed = io.StringIO()  # the student's prints would break the table
    try:
        with contextlib.redirect_stdout(printed):
            check(check.resolve(package), reference=reference, quiet=True)
    except NotImplementedYet:
        row.status = lines.TODO
    except CheckFailed as failure:
        row.status, row.reason = lines.FAIL, _first_line(str(failure))
    except Exception as error:  # import error, syntax error, missing name, missing reference
        row.status = lines.FAIL
        row.reason = _first_line(f"{type(error).__name__}: {error}")
    return row


def progress(package: str = "exercises") -> list[Row]:
    """One row per check, in lesson order."""
    reference = RecordedReference()
    # stable sort: within a lesson, the order the lesson's module defines its checks in
    checks = sorted(all_checks().values(), key=lambda c: c.lesson)
    return [run_check(check, package, reference) for check in checks]


def table(rows: list[Row]) -> str:
    headers = ("lesson", "check", "exercise", "status")
    widths = [max(len(h), *(len(getattr(r, h)) for r in rows)) for h in headers]
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)),
        "  ".join("-" * w for w in widths)]
    for r in rows:
        cells = [r.lesson, r.check, r.exercise, r.status]
        line = "  ".join(c.ljust(w) for c, w in zip(cells, widths))
        out.append((line + "  " + r.reason) if r.reason else line.rstrip())
    counts = {s: sum(r.status == s for r in rows) for s in (lines.PASS, lines.FAIL, lines.TODO)}
    out.append("")
    out.append(f"{counts['PASS']} of {len(rows)} exercises pass, {counts['FAIL']} fail, "
               f"{counts['TODO']} to do. A lesson's check cell shows the whole message.")
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="a table of every exercise: PASS, FAIL or TODO")
    parser.parse_args(argv)
    importlib.invalidate_caches()
    print(table(progress()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
