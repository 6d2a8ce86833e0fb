"""Grading one student, in six named stages:

1. collect: the student's exercise files, read (never executed) from SUBMISSIONS;
2. visible: the lessons' check cells, or with FULL=1 whole notebooks, in a sandbox (visible.py);
   a check's PASS line there is necessary, not sufficient;
3. classify: each check's verdict and the student's statuses, from what the processes did and
   what the student's code raised (classify.py);
4. confirm: each exercise whose check printed PASS, on hidden inputs in a second, barer sandbox,
   judged here against the solutions (hidden_run.py); points need both;
5. isolate: an exercise that failed there while an exercise it calls fails for this student runs
   again with only the failing ones answered by the reference's recorded calls (one bug, one
   point lost, as the check cells judge under COURSE_ISOLATE=1);
6. record: one CheckRecord per graded check and the StudentRecord (records.py).
One wall-clock deadline covers all of it; `timings` says where the seconds went.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from course.checks import lines as check_lines
from course.grading import submission
from course.grading.causes import annotate
from course.grading.classify import Classified, classify
from course.grading.identity import slot
from course.grading.hidden_run import Confirmation, HiddenRun, isolated_entry, run_hidden
from course.grading.prepare import ClassContext
from course.grading.records import CheckRecord, StudentRecord
from course.grading.report import STATUSES, UNCONFIRMED
from course.grading.settings import Settings
from course.grading.visible import run_check_cells, run_full_notebooks


@dataclass
class Job:
    """One student to grade: the folder and where their working files and raw output go."""
    student: str        # the folder name, as given
    report_name: str
    folder: Path
    scratch: Path       # private working folder (removed afterwards)
    raw: Path           # OUT/raw/<report name>/
    handle: dict | None = None   # what make collect kept of the LMS's delivery (.lms.json)
    entry: object = None         # the student's roster entry (roster.RosterEntry), if any


@dataclass
class Submission:
    files: dict[str, bytes]
    flags: list[str] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    digest: str = ""


def collect(folder: Path, ctx: ClassContext) -> Submission:
    """Stage 1: the files that are graded, and what was left out and why."""
    try:
        exercises = submission.find_exercises(folder)
        files, ignored = submission.take_files(exercises, ctx.modules, ctx.stubs["__init__.py"]) \
            if exercises else ({}, [])
        extras = submission.shipped_extras(folder, exercises)
        loose = submission.loose_files(folder, exercises, ctx.modules)
        if exercises is None:  # nothing to grade: say what was handed in instead
            loose += submission.not_exercises(folder, ctx.modules)
    except submission.TooLarge as too_large:  # not read further: nothing of it is graded
        return Submission({}, ignored=[f"{too_large} (not read: nothing of it is graded)"])
    ships = any(e.rstrip("/").split("/")[-1] == "solutions" for e in extras)
    digest = hashlib.sha256()
    for name, content in sorted(files.items()):
        digest.update(os.fsencode(name) + b"\0" + hashlib.sha256(content).digest())
    left_out = ([f"exercises/{i}" for i in ignored] + [f"{e} (only exercises/*.py count)"
                                                        for e in extras] + loose)
    # a file named like an exercise but not as one (`softmax (1).py`): flagged in the gradebook
    misnamed = ["misnamed-files"] if any("did you mean" in i for i in left_out) else []
    return Submission(
        files, submission.code_flags(files) + (["ships-solutions"] if ships else []) + misnamed,
        [f"exercises/{n}" for n in files], left_out, digest.hexdigest()[:16] if files else "")


def _visible(job: Job, ctx: ClassContext, settings: Settings, files, deadline: float):
    """Stage 2."""
    if settings.full:
        return run_full_notebooks(ctx, settings, files, deadline, job.raw,
                                  job.scratch / "root-visible", job.scratch)
    return run_check_cells(ctx, settings, files, deadline, job.raw, job.scratch / "root-visible")


def _apply_visible(checks: dict[str, CheckRecord], found: Classified) -> list[str]:
    """The visible verdicts into the records; the ids that printed PASS."""
    passed = []
    for check_id, record in checks.items():
        ok, message = found.verdicts.get(check_id, (False, "not run"))
        record.message = message
        record.blocked_by = check_lines.blocked_by(message)
        if ok:
            passed.append(check_id)
    return passed


def _apply_hidden(checks: dict[str, CheckRecord], passed: list[str],
                  confirmations: dict[str, Confirmation], found: Classified) -> None:
    """Stage 4's verdicts into the records: a check earns its points only when confirmed."""
    for check_id in passed:
        record, confirmation = checks[check_id], confirmations.get(check_id)
        if confirmation is not None and confirmation.confirmed:
            record.passed, record.confirmed, record.earned = True, True, record.points
            continue
        why = confirmation.why if confirmation is not None else "not confirmed"
        record.confirmed, record.message = False, f"{UNCONFIRMED}: {why}"
        record.hidden_failure = confirmation.case if confirmation is not None else None
        if confirmation is not None and (confirmation.timed_out or confirmation.memory):
            found.statuses.add("timeout" if confirmation.timed_out else "memory-limit")
            found.problems.append(f"{check_id}: {why}")


def _ungraded(ctx: ClassContext) -> set[str]:
    """The checks of lessons this run does not grade whose exercises graded ones call: no part of
    the assignment, so whatever the student left there (a stub), the reference's code stands in
    for them on hidden inputs (a lesson left out is no suspicion)."""
    return {u for c in ctx.checks.values() for u in c.uses} - set(ctx.checks)


def _standing_in(ctx: ClassContext, passed: list[str]) -> dict[str, tuple[dict, list[str]]]:
    """The checks among `passed` that call exercises of ungraded lessons, with their entries."""
    ungraded = _ungraded(ctx)
    found = {c: isolated_entry(ctx.checks[c], ungraded) for c in passed} if ungraded else {}
    return {c: entry for c, entry in found.items() if entry is not None}


def _a_bug(record: CheckRecord) -> bool:
    """Failed visibly, or on a named hidden case (not refused, timed out or killed there)."""
    return record.confirmed is None or record.hidden_failure is not None


def _isolate(ctx: ClassContext, settings: Settings, files: dict[str, bytes],
              checks: dict[str, CheckRecord], passed: list[str], deadline: float,
              job: Job) -> HiddenRun:
    """Stage 5: an exercise whose hidden run failed while an exercise it calls fails too (its
    own check, visible or hidden) runs again on the same hidden cases with the failing one
    replaced by the reference's recorded calls; confirmed so, it earns its points: one bug is
    charged once, as the check cells charge it under COURSE_ISOLATE=1."""
    # a bug fails its exercise's check, or a hidden case by name; a refused result, a timeout or
    # a dead process is no bug to spare the exercises that call it (nor a reason to run again)
    failing = {c for c, r in checks.items() if not r.passed and _a_bug(r)}
    ungraded = _ungraded(ctx)
    todo = {}
    for check_id in passed:
        record = checks[check_id]
        found = None if record.passed or record.hidden_failure is None else isolated_entry(
            ctx.checks[check_id], failing | ungraded)
        if found is not None:
            todo[check_id] = found
    if not todo:
        return HiddenRun({})
    run = run_hidden(ctx, settings, files, list(todo), deadline, job.scratch, job.raw,
                     job.scratch / "root-isolated", {c: e for c, (e, _) in todo.items()})
    for check_id, confirmation in run.confirmations.items():
        record = checks[check_id]
        if confirmation.confirmed:
            record.passed, record.confirmed, record.earned = True, True, record.points
            record.blocked_by = [c for c in todo[check_id][1] if c not in ungraded]
            record.stand_ins = [c for c in todo[check_id][1] if c in ungraded]
            record.message = check_lines.pass_line(check_id, ctx.checks[check_id].n_cases)
    return run


def _record(job: Job, sub: Submission, checks: dict[str, CheckRecord], found: Classified,
            settings: Settings, seconds: float, status: str | None = None) -> StudentRecord:
    """Stage 5."""
    rows = list(checks.values())
    for row in rows:
        annotate(row)
    flags = list(sub.flags) + (["unconfirmed"] if any(r.confirmed is False for r in rows) else [])
    order = [s for s in STATUSES if s in found.statuses]
    return StudentRecord(
        job.student, job.report_name, status or (order[0] if order else "ok"),
        sum(r.earned for r in rows), sum(r.points for r in rows), rows, problems=found.problems,
        flags=flags, taken=sub.taken, ignored=sub.ignored,
        other_failed_cells=found.other_failed, seconds=round(seconds, 1), unsafe=settings.unsafe,
        submission_digest=sub.digest)


def grade_student(job: Job, ctx: ClassContext, settings: Settings) -> StudentRecord:
    """One student's record; every sandbox runs as this thread's job slot (as root: its uid)."""
    with slot():
        return _grade(job, ctx, settings)


def _grade(job: Job, ctx: ClassContext, settings: Settings) -> StudentRecord:
    start = time.monotonic()
    deadline, timings = start + settings.student_timeout, {}
    job.raw.mkdir(parents=True, exist_ok=True)
    job.scratch.mkdir(parents=True, exist_ok=True)

    def stage(name, run, *args):  # wall seconds, and the CPU-seconds of this grader thread
        begun, cpu = time.monotonic(), time.thread_time()
        try:
            return run(*args)
        finally:
            timings[name] = round(time.monotonic() - begun, 3)
            timings[f"{name} grader cpu"] = round(time.thread_time() - cpu, 3)

    sub = stage("collect", collect, job.folder, ctx)
    checks = {c.id: CheckRecord(c.id, c.lesson, c.points, 0.0, False, "no submission")
              for c in ctx.checks.values()}
    if not sub.files:
        return _record(job, sub, checks, Classified(), settings, 0.0, "no-submission")
    visible = stage("visible", _visible, job, ctx, settings, sub.files, deadline)
    found = stage("classify", classify, ctx, visible, settings)
    passed = _apply_visible(checks, found)
    standing = _standing_in(ctx, passed)
    hidden = stage("confirm", run_hidden, ctx, settings, sub.files, passed, deadline,
                   job.scratch, job.raw, job.scratch / "root-hidden",
                   {c: entry for c, (entry, _) in standing.items()} or None)
    _apply_hidden(checks, passed, hidden.confirmations, found)
    for check_id, (_, used) in standing.items():
        checks[check_id].stand_ins = used
    alone = stage("isolate", _isolate, ctx, settings, sub.files, checks, passed, deadline, job)
    record = _record(job, sub, checks, found, settings, time.monotonic() - start)
    timings.update({"visible cpu": visible.cpu, "confirm cpu": hidden.cpu,
                    "isolate cpu": alone.cpu})
    (job.raw / "timings.json").write_text(json.dumps(timings))
    return record
