"""Grade a class: a folder of submissions in, a gradebook and one report per student out.

    python -m course.grading --submissions SUBS --out OUT [--jobs 2] [--lessons 00-02] [--full]
        [--students ada bob] [--shard K/N] [--roster roster.csv [--per-lesson]]
    make grade SUBMISSIONS=SUBS OUT=OUT [JOBS=2] [LESSONS=00-02] [FULL=1] [STUDENTS="ada bob"]
        [SHARD=K/N] [ROSTER=roster.csv [PER_LESSON=1]]

Every subfolder of SUBS is one student (the folder name is the student's name in the gradebook):
their `exercises/`, a whole course copy (also one folder deeper, as an unpacked zip is), or the
exercise files themselves. SUBS is only read. See docs/instructors.md.

Written to OUT, as each student finishes: students/<name>.json (the record), reports/<name>.md,
raw/<name>/ (what the sandboxed processes printed) and gradebook.csv; at the end results.json
(and feedback/, lms/). A run into an OUT that holds a class adds to it: the students it has no
record of (a stopped run resumes), or the ones STUDENTS= names (a regrade), with OUT's seed.
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from course.grading.folders import UsageError, parse_shard
from course.grading.plan import POINTS_FILE, parse_lessons
from course.grading.run import Options, Stopped, grade_class
from course.grading.settings import Settings


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m course.grading",
        description="grade a folder of submissions in a sandbox; see docs/instructors.md",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--submissions", required=True, help="folder with one subfolder per student")
    p.add_argument("--out", required=True, help="where the gradebook goes")
    p.add_argument("--jobs", type=int, default=1, help="students graded at the same time")
    p.add_argument("--lessons", nargs="+", help="only these lessons, e.g. 00-02 or 01,03")
    p.add_argument("--full", action="store_true",
                   help="run every cell of every notebook under strict nbval (slow)")
    p.add_argument("--students", nargs="+", metavar="FOLDER",
                   help="regrade only these folders into OUT (every other row stays as it is)")
    p.add_argument("--shard", metavar="K/N", help="grade share K of N of the class (every N-th "
                   "folder in sorted order, from the K-th) into its own OUT")
    p.add_argument("--roster", type=Path, help="roster CSV: also write OUT/lms/ (Canvas, Moodle)")
    p.add_argument("--per-lesson", action="store_true",
                   help="one LMS column per lesson besides the total")
    p.add_argument("--points", type=Path, default=POINTS_FILE, help="points per check (TOML)")
    p.add_argument("--cell-timeout", type=float, default=Settings.cell_timeout,
                   help="wall seconds one check cell, one import or one hidden check may run")
    p.add_argument("--student-timeout", type=float, default=Settings.student_timeout,
                   help="wall seconds for all of one student's work")
    p.add_argument("--cpu-limit", type=float, default=Settings.cpu_seconds,
                   help="CPU-seconds per sandboxed process (0: the cell timeout)")
    p.add_argument("--memory-limit", type=int, default=Settings.memory_mib,
                   help="address-space limit per sandboxed process, MiB (0: none)")
    p.add_argument("--tmp-limit", type=int, default=Settings.tmp_mib,
                   help="size of a sandbox's private /tmp, and of its scratch copy, MiB")
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
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.seed is not None:
        print("warning: --seed puts the secret seed on the command line, which every user of "
              "this machine can read (/proc/PID/cmdline) while the grader runs; give it in a "
              "file instead: --seed-file FILE (make grade ... SEED_FILE=FILE)", file=sys.stderr)
    if not args.submissions.strip() or not args.out.strip():
        parser().error("give both folders: make grade SUBMISSIONS=<dir> OUT=<dir>")
    settings = Settings(cell_timeout=args.cell_timeout, student_timeout=args.student_timeout,
                        hidden_timeout=args.cell_timeout, memory_mib=args.memory_limit,
                        tmp_mib=args.tmp_limit, cpu_seconds=args.cpu_limit, full=args.full,
                        unsafe=args.unsafe_no_sandbox, keep=args.keep)
    _interrupt_on_sigterm()
    try:
        try:
            lessons = parse_lessons(args.lessons)
        except ValueError:
            raise UsageError(f"--lessons {' '.join(args.lessons)}: give lessons such as 00-02 "
                             "or 1,3") from None
        options = Options(args.jobs, lessons, args.points, args.workdir,
                          args.seed, args.seed_file, args.students, parse_shard(args.shard),
                          args.roster, args.per_lesson, not args.no_fork_server)
        grade_class(Path(args.submissions), Path(args.out), settings=settings, options=options)
    except SystemExit as err:  # the grader's own errors say what to do (UsageError, ...)
        if isinstance(err.code, int) or err.code is None:
            raise
        print(err.code, file=sys.stderr)
        return 2
    except (Stopped, KeyboardInterrupt) as stopped:
        print(f"make grade: {stopped or 'stopped'}", file=sys.stderr)
        return 130
    return 0
