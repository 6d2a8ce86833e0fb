"""Grade a class: a folder of submissions in, a gradebook and one report per student out.

    python -m course.grading --submissions SUBS --out OUT [--jobs 2] [--lessons 00-02] [--full]
        [--students ada "Ann Lee"] [--students-file FILE] [--shard K/N]
        [--roster roster.csv] [--per-lesson] [--seed-file SEED]
    make grade SUBMISSIONS=SUBS OUT=OUT [JOBS=2] [LESSONS=00-02] [FULL=1] [STUDENTS="ada bob"]
        [STUDENTS_FILE=FILE] [SHARD=K/N] [ROSTER=roster.csv] [PER_LESSON=1] [SEED_FILE=SEED]

Every subfolder of SUBS is one student (the folder name is the student's name in the gradebook):
their `exercises/`, a whole course copy (also one folder deeper, as an unpacked zip is), or the
exercise files themselves. SUBS is only read. See docs/instructors.md.

Written to OUT, as each student finishes: students/<name>.json (the record), reports/<name>.md,
raw/<name>/ (what the sandboxed processes printed) and gradebook.csv; at the end results.json
(and feedback/, lms/). A run into an OUT that holds a class adds to it: the students it has no
record of (a stopped run resumes), or the ones STUDENTS= names (a regrade), with OUT's seed and,
unless told otherwise, the lessons, points and limits OUT recorded (reuse.py). SUBS, OUT, the
roster and the seed file lie outside the course (classdir.py). Options that are not given stay
None here, so that a run into OUT can tell them from OUT's own.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from course.grading.folders import UsageError, parse_shard
from course.grading.plan import parse_lessons
from course.grading.reuse import settle
from course.grading.roster import RosterError
from course.grading.run import Options, Stopped, grade_class
from course.grading.settings import Settings

# option -> the Settings field it sets (None on the command line: OUT's value, else the default)
SETTING_OPTIONS = {"cell_timeout": "cell_timeout", "student_timeout": "student_timeout",
                   "cpu_limit": "cpu_seconds", "memory_limit": "memory_mib",
                   "tmp_limit": "tmp_mib"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m course.grading",
        description="grade a folder of submissions in a sandbox; see docs/instructors.md "
                    "(an option left out takes OUT's value, when OUT holds a class)")
    p.add_argument("--submissions", required=True, help="folder with one subfolder per student")
    p.add_argument("--out", required=True, help="where the gradebook goes")
    p.add_argument("--jobs", type=int, default=1, help="students graded at the same time "
                   "(default: 1)")
    p.add_argument("--lessons", nargs="+", help="only these lessons, e.g. 00-02 or 01,03 "
                   "(default: OUT's, else every lesson)")
    p.add_argument("--full", action="store_true",
                   help="run every cell of every notebook under strict nbval (slow)")
    p.add_argument("--students", nargs="+", metavar="FOLDER",
                   help="regrade only these folders into OUT (every other row stays as it is); "
                   "a value that is no folder's whole name is split at spaces and newlines")
    p.add_argument("--students-file", type=Path, metavar="FILE",
                   help="regrade the folders this file names, one whole name per line")
    p.add_argument("--only", metavar="CHECK", help="with --students: run this one check for "
                   "them, sandboxed as a run grades it, and print its whole result (the message, "
                   "the hidden verdict); OUT is not changed")
    p.add_argument("--shard", metavar="K/N", help="grade share K of N of the class (every N-th "
                   "folder in sorted order, from the K-th) into its own OUT")
    p.add_argument("--roster", type=Path, help="roster CSV: also write OUT/lms/ (Canvas, Moodle)")
    p.add_argument("--assignment", metavar="TITLE",
                   help="the assignment's title: the LMS files' grade column (default: OUT's, else "
                   "'Attention course' for every lesson, 'Attention course, lessons 00-01' for "
                   "some); each assignment is graded into an OUT of its own")
    p.add_argument("--per-lesson", action=argparse.BooleanOptionalAction, default=None,
                   help="also the LMS files with one column per lesson (default: OUT's choice)")
    p.add_argument("--points", type=Path, help="points per check (TOML; default: OUT's, else "
                   "course/grading/points.toml)")
    p.add_argument("--cell-timeout", type=float, help="wall seconds one check cell, one import "
                   f"or one hidden check may run (default: OUT's, else {Settings.cell_timeout:g})")
    p.add_argument("--student-timeout", type=float, help="wall seconds for all of one student's "
                   f"work (default: OUT's, else {Settings.student_timeout:g})")
    p.add_argument("--cpu-limit", type=float, help="CPU-seconds per sandboxed process (0 or "
                   "default: the cell timeout)")
    p.add_argument("--memory-limit", type=int, help="address-space limit per sandboxed process, "
                   f"MiB (0: none; default: OUT's, else {Settings.memory_mib})")
    p.add_argument("--tmp-limit", type=int, help="size of a sandbox's private /tmp, and of its "
                   f"scratch copy, MiB (default: OUT's, else {Settings.tmp_mib})")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="grade without bubblewrap (every report says so); never for real classes")
    p.add_argument("--keep", action="store_true", help="keep the working copies (debugging)")
    p.add_argument("--workdir", type=Path, help="where working copies go (default: system tmp)")
    p.add_argument("--seed", type=int, help="the hidden cases' seed (default: OUT's, else a "
                   "fresh secret one; stored in OUT/.seed). Deprecated: a command line is "
                   "readable by every user of the machine; use --seed-file")
    p.add_argument("--seed-file", type=Path, help="read the seed from this file (a mounted "
                   "secret), e.g. to grade shards of one class on several machines")
    p.add_argument("--no-fork-server", action="store_true",
                   help="start every sandboxed process from scratch (slower; same grades)")
    return p


def _interrupt_on_sigterm() -> None:
    """Ctrl-C (SIGINT) and SIGTERM stop the run the same way. SIGINT's handler is installed
    here, not inherited: a process started in the background of a script (`make grade ... &`,
    a CI job, a test runner) starts with SIGINT ignored, and would then grade on after a
    Ctrl-C sent to it."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _given(args) -> dict:
    """The Settings fields the command line set (the others come from OUT or the defaults)."""
    given = {field: getattr(args, option) for option, field in SETTING_OPTIONS.items()
             if getattr(args, option) is not None}
    for flag, field in (("full", "full"), ("unsafe_no_sandbox", "unsafe"), ("keep", "keep")):
        if getattr(args, flag):
            given[field] = True
    return given


def _options(args) -> Options:
    try:
        lessons = parse_lessons(args.lessons)
    except ValueError:
        raise UsageError(f"--lessons {' '.join(args.lessons)}: give lessons such as 00-02 "
                         "or 1,3") from None
    options = Options(args.jobs, lessons, args.points, args.workdir, args.seed, args.seed_file,
                      args.students, parse_shard(args.shard), args.roster, args.per_lesson,
                      not args.no_fork_server, args.students_file)
    options.assignment, options.only = args.assignment, args.only
    return options


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.seed is not None:
        print("warning: --seed puts the secret seed on the command line, which every user of "
              "this machine can read (/proc/PID/cmdline) while the grader runs; give it in a "
              "file instead: --seed-file FILE (make grade ... SEED_FILE=FILE)", file=sys.stderr)
    if not args.submissions.strip() or not args.out.strip():
        parser().error("give both folders: make grade SUBMISSIONS=<dir> OUT=<dir>")
    _interrupt_on_sigterm()
    try:
        options = _options(args)
        settings = settle(Path(args.out).resolve(), _given(args), options)
        grade_class(Path(args.submissions), Path(args.out), settings=settings, options=options)
    except SystemExit as err:  # the grader's own errors say what to do (UsageError, ...)
        if isinstance(err.code, int) or err.code is None:
            raise
        print(err.code, file=sys.stderr)
        return 2
    except RosterError as err:
        print(f"make grade: {err}", file=sys.stderr)
        return 2
    except (Stopped, KeyboardInterrupt) as stopped:
        # a Ctrl-C outside the students' loop (setting up, writing the results) has no words
        # of its own: every record is written whole, so the same command resumes there too
        print(f"make grade: {str(stopped) or 'stopped; the same command resumes where it stopped'}",
              file=sys.stderr)
        return 130
    return 0
