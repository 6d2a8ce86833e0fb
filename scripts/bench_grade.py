"""Benchmark `make grade`: a class of correct submissions, all lessons, timed.

    python scripts/bench_grade.py [--students 30] [--jobs 2] [--lessons 00-08] [--full]

Prints seconds per student and for the class, with the machine's load (uptime) before and after.
The issue's goal: 30 students, all lessons, under 2 minutes on 2 cores with JOBS=2. Run it also
with --jobs 1 for a per-student figure less sensitive to other work on the machine.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def uptime() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lessons", default=None, help="e.g. 00-02 (default: all)")
    parser.add_argument("--full", action="store_true", help="FULL=1: every cell, strict nbval")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    try:
        subs = base / "submissions"
        for i in range(args.students):
            folder = subs / f"student{i:02d}" / "exercises"
            folder.mkdir(parents=True)
            for path in (ROOT / "solutions").glob("*.py"):
                shutil.copy(path, folder / path.name)
        print(f"before: {uptime()}", flush=True)
        command = [sys.executable, "-m", "course.grading", "--submissions", str(subs),
                   "--out", str(base / "out"), "--jobs", str(args.jobs)]
        if args.lessons:
            command += ["--lessons", args.lessons]
        if args.full:
            command.append("--full")
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        print(f"after:  {uptime()}")
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            return 1
        rows = (base / "out" / "gradebook.csv").read_text().splitlines()[1:]
        full = sum(1 for r in rows if r.split(",")[2] == r.split(",")[3])
        print(f"{args.students} students, lessons {args.lessons or 'all'}, JOBS={args.jobs}: "
              f"{seconds:.1f} s for the class, {seconds / args.students:.2f} s per student "
              f"(wall), {seconds * args.jobs / args.students:.2f} s per student per job; "
              f"{full}/{len(rows)} with full marks")
        return 0 if full == len(rows) else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
