"""Grading a class, in named stages:

0. check: every path of the class outside the course (classdir.py), the roster, the folders
   STUDENTS= names, the sandbox, OUT's lock and seed, and (before any set-up) that this run
   grades as the class in OUT was graded: a mistake is reported in seconds, not after set-up;
1. collect: the class's folders, their report names (distinct across the whole class), and this
   run's share of it: a shard, the folders STUDENTS= names, or those OUT has no record of yet;
2. prepare: the pristine handout, the hidden cases and the solutions' outputs on them, the fork
   server (prepare.py): the set-up, timed and printed beside the grading time;
3. grade: each student (student.py), JOBS at a time under a progress bar; as each one finishes,
   its record, its report and the gradebook are written, atomically;
4. render: results.json, the feedback and the LMS files, from every record in OUT (render.py).
Ctrl-C or SIGTERM ends the running sandboxes at once and keeps every student already graded; the
same command then resumes where it stopped.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from course import ROOT
from course.grading import delivery
from course.grading.classdir import check_class_paths
from course.grading.folders import ClassFolders, UsageError, check_folders, class_folders
from course.grading.folders import students_in
from course.grading.names import shown
from course.grading.outdir import OutState, check_names, check_plan, open_out, seed_digest
from course.grading.processes import LIVE
from course.grading.records import (CheckRecord, ClassInfo, StudentRecord, file_digest,
                                    load_students, save_class, save_student)
from course.grading.render import render_class, write_student
from course.grading.report import fmt, write_gradebook
from course.grading.reuse import points_toml, reused_line
from course.grading.roster import (STORED, RosterError, folder_key, read_roster, store_roster,
                                   stored_roster)
from course.grading.sandbox import bwrap_problem
from course.grading.settings import Settings
from course.grading.wanted import wanted_students

if TYPE_CHECKING:
    from course.grading.prepare import ClassContext
    from course.grading.student import Job


@dataclass
class Options:
    """How this run is made, besides the grading limits (Settings)."""
    jobs: int = 1
    lessons: list[str] | None = None
    points_file: Path | None = None
    workdir: Path | None = None
    seed: int | None = None
    seed_file: Path | None = None
    students: list[str] | None = None
    shard: tuple[int, int] | None = None
    roster: Path | None = None
    per_lesson: bool | None = None    # None: as OUT's class was graded (reuse.py), else off
    fork: bool = True      # start sandboxed processes from the fork server (fast)
    students_file: Path | None = None
    points: dict[str, float] | None = None  # OUT's recorded points, when no points file is given
    assignment: str | None = None     # the LMS column's title (None: OUT's, else from LESSONS)
    only: str | None = None           # one check for the STUDENTS named, printed, OUT unchanged
    reused: list[str] = field(default_factory=list)  # what reuse.settle took from OUT


class Stopped(Exception):
    """The run was stopped; `graded` students are in OUT."""

    def __init__(self, graded: int, total: int):
        super().__init__(f"stopped after {graded} of {total} student(s); the same command "
                         "resumes where it stopped")


def _check_run(settings: Settings, options: Options) -> None:
    if not settings.unsafe:
        problem = bwrap_problem()
        if problem:
            raise UsageError(f"cannot sandbox the students' code: {problem}. To grade without a "
                             "sandbox anyway (every report will say so), pass --unsafe-no-sandbox "
                             "(make grade ... UNSAFE=1)")
    if options.workdir is not None and Path(options.workdir).resolve().is_relative_to(ROOT.resolve()):
        raise UsageError("--workdir must lie outside the course")


@contextlib.contextmanager
def workspace(workdir: Path | None, keep: bool):
    root = Path(tempfile.mkdtemp(prefix="grade-", dir=workdir))
    os.chmod(root, 0o700)
    try:
        yield root
    finally:
        if keep:
            print(f"working copies kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _per_run(options: Options) -> dict:
    return {"jobs": options.jobs, "students": options.students,
            "shard": f"{options.shard[0]}/{options.shard[1]}" if options.shard else None,
            "roster": str(options.roster) if options.roster else None,
            "per_lesson": bool(options.per_lesson)}


def _assignment(options: Options, lessons: list[str]) -> str:
    from course.grading.lms import default_title
    from course.grading.plan import lesson_plan

    if options.assignment is not None:
        return options.assignment
    with contextlib.redirect_stderr(io.StringIO()):
        every = [lesson.number for lesson in lesson_plan(ROOT, None)]
    return default_title(lessons, every)


def class_info(ctx: ClassContext, settings: Settings, state: OutState, options: Options,
               folders: ClassFolders | None = None) -> ClassInfo:
    """The class.json of this run: its plan, points, limits and title, and the class's identity
    (its id, the digest of the roster OUT keeps, its student folders)."""
    lessons = [lesson.number for lesson in ctx.plan]
    roster = state.out / STORED
    if options.roster is not None and roster.is_file():  # stored by this run, under its lock
        digest = file_digest(roster)
    else:
        digest = state.info.roster_digest if state.info is not None else ""
    return ClassInfo(lessons, ctx.columns, {c.id: c.points for c in ctx.checks.values()},
                     {**settings.to_json(), **_per_run(options)},
                     "none (UNSAFE)" if settings.unsafe else "bubblewrap", seed_digest(state.seed),
                     _assignment(options, lessons), class_id=state.class_id, roster_digest=digest,
                     folders=sorted(class_folders_known(state, folders)) if folders else [])


def planned_info(settings: Settings, state: OutState, options: Options) -> ClassInfo:
    """The ClassInfo this run will record, from the course's own notebooks and the points file,
    without the set-up (no handout, no hidden cases): enough to refuse a run that would grade
    differently from OUT's class before spending the set-up on it."""
    from course.grading.plan import lesson_plan, load_points

    with contextlib.redirect_stderr(io.StringIO()):  # prepare() prints its notes once
        plan = lesson_plan(ROOT, options.lessons)
        columns = [c for lesson in plan for c in lesson.checks]
        points = load_points(columns, options.points_file)
    lessons = [lesson.number for lesson in plan]
    return ClassInfo(lessons, columns, points, {**settings.to_json(), **_per_run(options)},
                     "none (UNSAFE)" if settings.unsafe else "bubblewrap", seed_digest(state.seed),
                     _assignment(options, lessons))


def _todo(folders: ClassFolders, state: OutState, options: Options, ctx: ClassContext) -> list[Path]:
    """Who this run grades: the students STUDENTS= names; else those OUT has no record of, and
    those whose files changed since their record (a resubmission a second collect brought)."""
    if options.students:
        return folders.chosen
    done = [p for p in folders.chosen if folders.names[p.name] in state.records]
    changed = [p for p in done if _digest(p, ctx) !=
               state.records[folders.names[p.name]].submission_digest]
    if done:
        print(f"resuming: {len(done) - len(changed)} student(s) already graded in {state.out} "
              "are kept", file=sys.stderr)
    if changed:
        print(f"regrading {len(changed)} student(s) whose files changed since they were graded: "
              f"{', '.join(shown(p.name) for p in changed)}", file=sys.stderr)
    return [p for p in folders.chosen if p not in done or p in changed]


def class_folders_known(state: OutState, folders: ClassFolders) -> set[str]:
    """The class's student folders: SUBMISSIONS' now, and those class.json (verified) records
    of every run before (a late student may be graded from a folder of their own). An earlier
    grader's class.json lists none: then its records' students count as the class's."""
    known = set(folders.names)
    if state.info is not None:
        known |= set(state.info.folders)
        if not state.info.folders:
            known |= {r.student for r in state.records.values()}
    return known


def class_records(records: dict[str, StudentRecord], known: set[str],
                  say: bool = True) -> dict[str, StudentRecord]:
    """The records of the class's students (`class_folders_known`); each other is left out,
    with a line: a record put there by hand, or of another class's folder."""
    kept = {}
    for name, record in records.items():
        if record.student in known:
            kept[name] = record
        elif say:
            print(f"warning: students/{name}.json left out: no folder {shown(record.student)!r} "
                  "in SUBMISSIONS or in any run of OUT's class (a record of a student with no "
                  "folder); it is in no file of the class", file=sys.stderr)
    return kept


def _digest(folder: Path, ctx: ClassContext) -> str | None:
    from course.grading.student import collect

    try:
        return collect(folder, ctx).digest
    except Exception:  # noqa: BLE001 - unreadable now: it shows as changed
        return None


def _grader_error(job: Job, ctx: ClassContext, settings: Settings, err: Exception) -> StudentRecord:
    job.raw.mkdir(parents=True, exist_ok=True)
    (job.raw / "grader-error.txt").write_text(traceback.format_exc(), errors="backslashreplace")
    checks = [CheckRecord(c.id, c.lesson, c.points, 0.0, False, f"grader error: {err}")
              for c in ctx.checks.values()]
    return StudentRecord(job.student, job.report_name, "grader-error", 0.0,
                         sum(c.points for c in checks), checks,
                         problems=[f"grader error: {err!r}"], unsafe=settings.unsafe)


def _grade_one(job: Job, ctx: ClassContext, settings: Settings) -> StudentRecord:
    from course.grading.student import grade_student

    if job.raw.exists():
        shutil.rmtree(job.raw)
    try:
        return delivery.apply(grade_student(job, ctx, settings), job.handle, job.entry)
    except Exception as err:  # noqa: BLE001 - one student never stops the class
        return delivery.apply(_grader_error(job, ctx, settings, err), job.handle, job.entry)
    finally:
        if not settings.keep:
            shutil.rmtree(job.scratch, ignore_errors=True)


def grade_all(jobs: list[Job], ctx: ClassContext, settings: Settings, state: OutState,
              info: ClassInfo, workers: int) -> dict[str, StudentRecord]:
    """Stage 3: every job, `workers` at a time; OUT is written by this thread only. On Ctrl-C,
    the students whose grading had ended are recorded before the others are stopped (a worker
    takes its next student as soon as one ends, before this thread has written the record)."""
    from tqdm import tqdm

    records, limits = dict(state.records), settings.line()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool, \
            tqdm(total=len(jobs), unit="student", file=sys.stderr, disable=None) as bar:
        futures = {pool.submit(_grade_one, job, ctx, settings): job for job in jobs}
        recorded: set = set()

        def record(future) -> None:
            try:  # one student's failure is that student's row: the class goes on
                result = future.result()
                write_student(state.out, result, limits)
            except Exception as err:  # noqa: BLE001
                result = _grader_error(futures[future], ctx, settings, err)
                write_student(state.out, result, limits)
            records[result.report_name] = result
            write_gradebook(state.out, info.checks, records.values())
            recorded.add(future)
            bar.update(1)
            tqdm.write(f"  {shown(result.student)}: {result.status}, {fmt(result.total)}/"
                       f"{fmt(result.maximum)} in {result.seconds:g} s", file=sys.stdout)

        try:
            for future in as_completed(futures):
                record(future)
        except KeyboardInterrupt:
            ended = [f for f in futures if f.done() and not f.cancelled() and f not in recorded]
            LIVE.stop()
            for future in futures:
                future.cancel()
            for future in ended:
                record(future)
            raise Stopped(len(recorded), len(jobs)) from None
    return records


def _check_first(submissions: Path, out: Path, settings: Settings,
                 options: Options) -> ClassFolders:
    """Stage 0 and 1, before OUT is touched: paths, roster, folders, the sandbox."""
    from course.handout import release_files

    check_class_paths({"SUBMISSIONS": submissions, "OUT": out, "ROSTER": options.roster,
                       "SEED_FILE": options.seed_file, "STUDENTS_FILE": options.students_file})
    check_folders(submissions, out)
    if options.roster is not None:
        try:
            read_roster(options.roster)
        except RosterError as err:
            raise UsageError(f"ROSTER={options.roster}: {err}") from None
    everyone, _ = students_in(submissions, out)
    options.students = wanted_students(options.students, options.students_file,
                                       [p.name for p in everyone])
    folders = class_folders(submissions, out, options.students, options.shard)
    _check_run(settings, options)
    release_files(ROOT)  # a class folder committed into the course: refused before the set-up
    return folders


def grade_class(submissions: Path, out: Path, jobs: int = 1, lessons: list[str] | None = None,
                settings: Settings | None = None, points_file: Path | None = None,
                workdir: Path | None = None, seed: int | None = None,
                options: Options | None = None) -> list[StudentRecord]:
    """Grade a class into OUT; the class's records (every student OUT holds), sorted."""
    begun = time.monotonic()
    settings = settings or Settings()
    options = options or Options(jobs, lessons, points_file, workdir, seed)
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    folders = _check_first(submissions, out, settings, options)                    # 0, 1
    state = open_out(out, options.seed, options.seed_file)
    try:
        known = class_folders_known(state, folders)
        state.records = class_records(state.records, known)
        check_names(state, folders.names)
        if options.only is None:
            check_plan(state, planned_info(settings, state, options))
        if options.roster is not None:
            store_roster(state.out, options.roster)
        line = reused_line(state.out, options)
        if line:
            print(line, file=sys.stderr)
        with workspace(options.workdir, settings.keep) as root:
            if options.points is not None and options.points_file is None:
                options.points_file = root / "points.toml"
                options.points_file.write_text(points_toml(options.points))
            if options.only is not None:
                return _only(folders, state, root, settings, options)
            return _graded(folders, state, root, settings, options, begun)
    finally:
        state.close()


def _graded(folders: ClassFolders, state: OutState, root: Path, settings: Settings,
            options: Options, begun: float) -> list[StudentRecord]:
    from course.grading.prepare import prepare
    from course.grading.student import Job

    ctx = prepare(root, options.lessons, options.points_file, state.seed, settings,  # 2. prepare
                  options.fork)
    try:
        info = class_info(ctx, settings, state, options, folders)
        check_plan(state, info)
        save_class(state.out, info)
        if state.info is not None and not state.info.class_id:  # an earlier grader's class:
            for record in state.records.values():  # its verified records join this class
                save_student(state.out, record)
        todo = _todo(folders, state, options, ctx)
        for name in folders.skipped:
            print(f"skipped: {shown(name)}", file=sys.stderr)
        if settings.unsafe:
            print("WARNING: grading WITHOUT a sandbox (--unsafe-no-sandbox)", file=sys.stderr)
        setup = time.monotonic() - begun
        print(f"set-up {setup:.1f} s; grading {len(todo)} submission(s): lessons "
              f"{', '.join(lesson.number for lesson in ctx.plan)}, {len(ctx.columns)} checks, "
              f"{options.jobs} at a time" + ("" if ctx.server else " (no fork server)"), flush=True)
        delivered = delivery.handles(folders.students[0].parent)
        entries = _roster_entries(options.roster or stored_roster(state.out))
        jobs = [Job(p.name, folders.names[p.name], p, root / f"s{i:04d}",
                    state.out / "raw" / folders.names[p.name], delivered.get(p.name),
                    entries.get(folder_key(p.name))) for i, p in enumerate(todo)]
        started = time.monotonic()
        try:
            records = grade_all(jobs, ctx, settings, state, info, options.jobs)   # 3. grade
        except Stopped:
            _render(state, info, class_records(load_students(state.out), set(info.folders),
                                               say=False), started, setup, folders, options)
            raise
        _render(state, info, records, started, setup, folders, options)           # 4. render
        print(f"graded {len(todo)} submission(s) in {time.monotonic() - started:.1f} s after "
              f"{setup:.1f} s of set-up; gradebook: {state.out / 'gradebook.csv'}, reports: "
              f"{state.out / 'reports'}", flush=True)
        return sorted(records.values(), key=lambda r: r.student)
    finally:
        if ctx.server is not None:
            ctx.server.close()


def _only(folders: ClassFolders, state: OutState, root: Path, settings: Settings,
          options: Options) -> list[StudentRecord]:
    """ONLY=<check> STUDENTS=...: that check alone for those students, in the sandbox as a run
    grades it (its check cell, then its hidden inputs), printed whole; OUT is not written."""
    from course.grading.prepare import prepare
    from course.grading.report import report_text
    from course.grading.student import Job

    if not options.students:
        raise UsageError("ONLY= runs one check for the students STUDENTS= names; name them")
    ctx = prepare(root, options.lessons, options.points_file, state.seed, settings, options.fork,
                  options.only)
    try:
        results = []
        for i, path in enumerate(folders.chosen):
            job = Job(path.name, folders.names[path.name], path, root / f"s{i:04d}",
                      root / "raw" / folders.names[path.name])
            record = _grade_one(job, ctx, settings)
            print(report_text(record, settings.line()), flush=True)
            results.append(record)
        print(f"ONLY={options.only}: {len(results)} student(s) run; {state.out} is unchanged",
              file=sys.stderr)
        return results
    finally:
        if ctx.server is not None:
            ctx.server.close()


def _roster_entries(path: Path | None) -> dict:
    """The roster's entries by folder (checked before the set-up), {} without a roster."""
    return {} if path is None else {folder_key(e.folder): e for e in read_roster(path)}


def _render(state: OutState, info: ClassInfo, records: dict[str, StudentRecord], started: float,
            setup: float, folders: ClassFolders, options: Options) -> None:
    run = {"seconds": round(time.monotonic() - started, 1), "setup_seconds": round(setup, 1),
           "jobs": options.jobs, "skipped": folders.skipped}
    render_class(state.out, info, list(records.values()), run, None, options.per_lesson)
