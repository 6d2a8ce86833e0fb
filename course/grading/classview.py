"""The class at a glance, as numbers: per check, who passed, who failed and why; computed from the
student records alone (course/grading/records.py), never from a student's code.

    view = class_view(info, records, sections={"ada": "Section 1"}, previous=[...])

- per check (in the gradebook's order): graded, attempted (the exercise is no stub), passed,
  failed in the notebook, failed only on hidden inputs, blocked, errors, timeouts, not attempted;
- per check, its causes ranked by number of students. Only root failures count: a failure BLOCKED
  by another check is counted once, at that check's cause (which lists what it blocks). A cause is
  the hint's catalog id (course/grading/causes.py), the kind of hidden case, or an error;
- the share of the failures in the notebook whose hint names a cause, and the failures whose hint
  names none grouped by what the check found (numbers and quoted values masked);
- item statistics as PrairieLearn and Moodle give them: the share passing, the discrimination
  (Pearson's correlation between passing the check and the rest of the total, i.e. the total
  without this check's points) and the pass rate by quintile of the total;
- per section, the share passing, where the roster has sections;
- what changed since the last run into the same OUT (`history`).
Nothing here reads a hidden value: a check that failed on hidden inputs is known by the kind of
hidden case only (its name, which the release's README lists), as the student's feedback is.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone

from course.grading.causes import FAILURES, UNKNOWN, Why, hint_line, problem_line, why
from course.grading.names import shown

ROOT_KINDS = ("fail", "hidden", "error", "timeout")    # what a cause row counts (not blocked, todo)
STATE = {None: "P", "fail": "F", "hidden": "H", "blocked": "B", "todo": "T", "error": "E",
         "timeout": "O"}
PASSING = "P"
ABSENT = "-"
QUINTILES = 5
MIN_FOR_STATISTICS = 5        # students with a submission before item statistics mean anything
WEAK_VISIBLE_SHARE = 0.05     # failing on hidden inputs: this share of those passing the notebook
HISTORY_RUNS = 20             # snapshots kept in OUT/class/history.json
UNNAMED_GROUPS = 10


@dataclass
class CheckRow:
    id: str
    lesson: str
    graded: int = 0          # students with a submission
    attempted: int = 0       # of them, whose exercise is no stub
    passed: int = 0
    failed: int = 0          # in the notebook, on its own
    hidden: int = 0          # PASS in the notebook, not on hidden inputs
    blocked: int = 0
    errors: int = 0
    timeouts: int = 0
    todo: int = 0
    share: float | None = None             # passed / graded
    discrimination: float | None = None    # correlation with the rest of the total
    quintiles: list[float | None] = field(default_factory=list)  # pass rate, lowest total first

    @property
    def weak_visible(self) -> bool:
        """Many pass its notebook cases and fail its hidden inputs: its visible cases are weak."""
        notebook = self.passed + self.hidden
        return self.hidden >= 2 and notebook > 0 and self.hidden / notebook >= WEAK_VISIBLE_SHARE


@dataclass
class CauseRow:
    check: str
    kind: str                 # fail, hidden, error or timeout
    id: str                   # the hint's msgid, a cause id (causes.CAUSE_IDS), "" or UNKNOWN
    case: str | None          # hidden: the kind of hidden case
    tests: str | None         # under a crash's hint: the msgid of what the failing case tests
    students: list[str]       # report names
    blocks: dict[str, int] = field(default_factory=dict)   # checks it blocks: students
    example: str | None = None   # one student's hint line as graded (visible cases only)

    @property
    def named(self) -> bool:
        return self.kind == "fail" and self.id not in ("", UNKNOWN)


@dataclass
class Unnamed:
    text: str                 # what the check found, numbers masked
    checks: Counter
    students: list[str]


@dataclass
class Changes:
    since: str | None = None             # when the run compared with ended (None: first run)
    new: list[str] = field(default_factory=list)        # students graded since
    gone: list[str] = field(default_factory=list)
    to_pass: dict[str, list[str]] = field(default_factory=dict)   # check: students now passing
    to_fail: dict[str, list[str]] = field(default_factory=dict)   # check: students now failing


@dataclass
class ClassView:
    students: int
    with_submission: int
    checks: list[CheckRow]
    causes: dict[str, list[CauseRow]]        # check: its causes, most students first
    named: int                               # root failures in the notebook with a named cause
    notebook_failures: int                   # root failures in the notebook
    unknown: int                             # of them, from records that keep no cause
    unnamed: list[Unnamed]
    sections: dict[str, list[CheckRow]]      # section: its table ("": no section)
    section_of: dict[str, str]               # report name: section
    changes: Changes
    snapshot: dict                           # this run's states, for history.json

    @property
    def named_share(self) -> float | None:
        known = self.notebook_failures - self.unknown
        return self.named / known if known else None

    def row(self, check: str) -> CheckRow:
        return next(r for r in self.checks if r.id == check)


# ---------------------------------------------------------------------------------- statistics

def pearson(xs: list[float], ys: list[float]) -> float | None:
    """Pearson's correlation, or None when either has no spread."""
    n = len(xs)
    if n < 3:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return sxy / math.sqrt(sxx * syy)


def quintile_of(totals: list[float]) -> list[int]:
    """Each student's quintile of the total (0: lowest), ties in one quintile (their mid-rank)."""
    n = len(totals)
    order = sorted(range(n), key=lambda i: totals[i])
    ranks = [0.0] * n
    start = 0
    while start < n:
        end = start
        while end + 1 < n and totals[order[end + 1]] == totals[order[start]]:
            end += 1
        for k in range(start, end + 1):
            ranks[order[k]] = (start + end) / 2
        start = end + 1
    return [min(QUINTILES - 1, int(QUINTILES * (r + 0.5) / n)) for r in ranks]


def _item_statistics(row: CheckRow, passed: list[int], rest: list[float], quintile: list[int]):
    if len(passed) < MIN_FOR_STATISTICS:
        return
    row.discrimination = pearson([float(p) for p in passed], rest)
    groups: dict[int, list[int]] = defaultdict(list)
    for q, p in zip(quintile, passed):
        groups[q].append(p)
    row.quintiles = [sum(groups[q]) / len(groups[q]) if groups[q] else None
                     for q in range(QUINTILES)]


# ------------------------------------------------------------------------------------ unnamed

NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?(?![\w.])", re.IGNORECASE)
QUOTED = re.compile(r"'[^']*'")


def unnamed_key(message: str) -> str:
    """What a failure without a named cause found, with numbers and quoted values masked, so that
    students who differ only in a shape or a value fall in one group."""
    text = shown(problem_line(message))        # a student's exception text: no control codes
    return NUMBER.sub("N", QUOTED.sub("'…'", text))[:300]


# ---------------------------------------------------------------------------------- the view

def _state(w: Why | None) -> str:
    return STATE.get(None if w is None else w.kind, "E")


def class_view(info, records, sections: dict[str, str] | None = None,
               history: list[dict] | None = None, when: str | None = None) -> ClassView:
    """The view of `records` (StudentRecords) graded as `info` (ClassInfo) says. `sections`:
    a student's folder name -> section; `history`: the earlier runs' snapshots, oldest first."""
    records = sorted(records, key=lambda r: r.student)
    sections = sections or {}
    checks = list(info.checks)
    whys = {r.report_name: {c.id: why(c) for c in r.checks} for r in records}
    earned = {r.report_name: {c.id: c.earned for c in r.checks} for r in records}
    submitted = [r for r in records if r.status != "no-submission"]
    section_of = {r.report_name: sections.get(r.student, "") for r in records}

    rows = _rows(submitted, whys, earned, checks)
    causes, named, notebook, unknown, unnamed = _causes(records, whys, checks)
    return ClassView(
        len(records), len(submitted), rows, causes, named, notebook, unknown, unnamed,
        _sections(submitted, whys, earned, checks, section_of), section_of,
        _changes(history or [], records, whys, checks),
        {"when": when or datetime.now(timezone.utc).isoformat(timespec="seconds"),
         "checks": checks, "states": {r.report_name: "".join(
             _state(whys[r.report_name][c]) if c in whys[r.report_name] else ABSENT
             for c in checks) for r in records}})


def _causes(records, whys, checks):
    """Root failures grouped by (check, kind, cause); what each blocks; the unnamed ones."""
    groups: dict[tuple, CauseRow] = {}
    blocks: dict[str, Counter] = defaultdict(Counter)   # student/root check: blocked checks
    named = notebook = unknown = 0
    unnamed: dict[str, Unnamed] = {}
    messages = {r.report_name: {c.id: c.message for c in r.checks} for r in records}
    for r in records:
        name = r.report_name
        for check in checks:
            w = whys[name].get(check)
            if w is None or w.kind not in ROOT_KINDS:
                if w is not None and w.kind == "blocked":
                    for root in w.roots:
                        blocks[f"{name}\0{root}"][check] += 1
                continue
            case = w.case if w.kind == "hidden" else None
            key = (check, w.kind, w.id, case, w.tests or "")
            row = groups.setdefault(key, CauseRow(check, w.kind, w.id, case, w.tests, []))
            row.students.append(name)
            if w.kind != "fail":
                continue
            notebook += 1
            if w.id == UNKNOWN:
                unknown += 1
            elif w.id:
                named += 1
                if row.example is None:
                    row.example = shown(hint_line(messages[name][check]) or "")[:600] or None
            else:
                key_text = unnamed_key(messages[name][check])
                group = unnamed.setdefault(key_text, Unnamed(key_text, Counter(), []))
                group.checks[check] += 1
                group.students.append(name)
    for row in groups.values():
        for student in row.students:
            for blocked, n in blocks.get(f"{student}\0{row.check}", {}).items():
                row.blocks[blocked] = row.blocks.get(blocked, 0) + n
    by_check: dict[str, list[CauseRow]] = {c: [] for c in checks}
    for row in groups.values():
        by_check[row.check].append(row)
    for rows in by_check.values():
        rows.sort(key=lambda r: (-len(r.students), FAILURES.index(r.kind), r.id, r.case or "",
                                 r.tests or ""))
    ranked = sorted(unnamed.values(), key=lambda u: (-len(u.students), u.text))[:UNNAMED_GROUPS]
    return by_check, named, notebook, unknown, ranked


def _rows(submitted, whys, earned, checks) -> list[CheckRow]:
    """The table's rows for these students (a class, or one section of it)."""
    rows = {c: CheckRow(c, c.split(".", 1)[0]) for c in checks}
    for r in submitted:
        for check in checks:
            if check not in whys[r.report_name]:
                continue
            row, w = rows[check], whys[r.report_name][check]
            row.graded += 1
            kind = None if w is None else w.kind
            if kind == "todo":
                row.todo += 1
                continue
            row.attempted += 1
            if kind is None:
                row.passed += 1
            else:
                attribute = {"fail": "failed", "hidden": "hidden", "blocked": "blocked",
                             "error": "errors", "timeout": "timeouts"}[kind]
                setattr(row, attribute, getattr(row, attribute) + 1)
    quintile = quintile_of([r.total for r in submitted]) if submitted else []
    for check, row in rows.items():
        if row.graded:
            row.share = row.passed / row.graded
        mine = [(i, r) for i, r in enumerate(submitted) if check in whys[r.report_name]]
        passed = [int(whys[r.report_name][check] is None) for _, r in mine]
        rest = [r.total - earned[r.report_name].get(check, 0.0) for _, r in mine]
        _item_statistics(row, passed, rest, [quintile[i] for i, _ in mine])
    return [rows[c] for c in checks]


def _sections(submitted, whys, earned, checks, section_of) -> dict[str, list[CheckRow]]:
    """The table per section, where the roster gives sections ("" : students without one)."""
    if not any(section_of.values()):
        return {}
    members: dict[str, list] = defaultdict(list)
    for r in submitted:
        members[section_of[r.report_name]].append(r)
    return {s: _rows(members[s], whys, earned, checks) for s in sorted(members)}


def _changes(history: list[dict], records, whys, checks) -> Changes:
    """This run against the last snapshot that differs from it (a run that changed nothing, such
    as a second merge of the same shards, leaves the last change on the page)."""
    now = {r.report_name: "".join(_state(whys[r.report_name].get(c)) if c in whys[r.report_name]
                                  else ABSENT for c in checks) for r in records}
    earlier = [h for h in history if h.get("checks") == checks and h.get("states") != now]
    if not earlier:
        return Changes()
    last = earlier[-1]
    before = last.get("states", {})
    found = Changes(since=last.get("when"))
    found.new = sorted(set(now) - set(before))
    found.gone = sorted(set(before) - set(now))
    for name in sorted(set(now) & set(before)):
        for index, check in enumerate(checks):
            old, new = before[name][index:index + 1], now[name][index]
            if old == new or not old:
                continue
            if new == PASSING and old != ABSENT:
                found.to_pass.setdefault(check, []).append(name)
            elif old == PASSING and new != ABSENT:
                found.to_fail.setdefault(check, []).append(name)
    return found


def updated_history(history: list[dict], snapshot: dict) -> list[dict]:
    """The history with this run's snapshot at its end (unless it repeats the last one)."""
    history = [h for h in history if isinstance(h, dict)]
    if history and history[-1].get("states") == snapshot["states"] and \
            history[-1].get("checks") == snapshot["checks"]:
        return history[-HISTORY_RUNS:]
    return (history + [snapshot])[-HISTORY_RUNS:]
