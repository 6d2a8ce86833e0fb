"""Benchmark issue 21's attacks: what a judge-bomb student and keepalive students cost, next to an
honest one.

    python scripts/bench_grade_attacks.py [--lessons 00-02] [--cell-timeout 10] [--grader DIR]

Grades a class of five one at a time (JOBS=1, so that each student's seconds are its own):
- honest: the solutions;
- judge_bomb: torch.save replaced, so that every hidden result claims 2**32 elements over a
  one-element storage (the issue's attack: a file of about 1.6 kB);
- keepalive_fast / keepalive_slow: a check cell that writes, on every pipe it has, a non-JSON
  line every 10 ms / forged {"start": i} lines every 0.5 s, for three cell time limits, then
  returns the right answer (a grader that lets it run accepts its PASS);
- cpu_spinner: four threads of matrix products for three cell time limits, then the answer.
Prints each student's seconds, the ratio to the honest student's, its status and points: a
judge bomb should cost no more than twice the honest student, a keepalive stop at its cell's
time limit. `--grader DIR` runs another checkout of the course (e.g. an older commit) on the
same class. Figures only; the hostile tests assert the gradebook.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile import attacks  # noqa: E402 - the attacks the hostile class grades
from tests.hostile.classroom import write  # noqa: E402


# in the notebook's check cell only, for `seconds`, then the right answer
KEEPALIVE = attacks._PIPES + '''
import __main__ as _main
def batched_dot(a, b):
    until = _time.time() + {seconds}
    while "harness" not in str(getattr(_main, "__file__", "")) and _time.time() < until:
        _say({line!r})
        _time.sleep({pause})
    return (a * b).sum(dim=-1)
'''
SPINNER = '''
import threading as _threading, time as _time, __main__ as _main
import torch as _torch
def _spin(until):
    x = _torch.randn(128, 128)
    while _time.time() < until:
        x = _torch.mm(x, x).clamp(-1, 1)
def batched_dot(a, b):
    if "harness" not in str(getattr(_main, "__file__", "")):
        until = _time.time() + {seconds}
        for _ in range(4):
            _threading.Thread(target=_spin, args=(until,), daemon=True).start()
        _spin(until)
    return (a * b).sum(dim=-1)
'''
FORGED_STARTS = "".join(json.dumps({"start": i}) + "\n" for i in range(100)).encode()


def build(subs: Path, cell_timeout: float) -> None:
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    write(subs / "honest" / "exercises", perfect)
    bomb = attacks.JUDGE_BOMB.replace("2 ** 62", "2 ** 32")
    write(subs / "judge_bomb" / "exercises", {**perfect, "warmup.py": bomb + perfect["warmup.py"]})
    seconds = 3 * cell_timeout
    for name, line, pause in (("keepalive_fast", b"still working\n", 0.01),
                              ("keepalive_slow", FORGED_STARTS, 0.5)):
        write(subs / name / "exercises", {**perfect, "warmup.py": KEEPALIVE.format(
            seconds=seconds, line=line, pause=pause)})
    write(subs / "cpu_spinner" / "exercises", {**perfect, "warmup.py": SPINNER.format(seconds=seconds)})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", default="00-02")
    parser.add_argument("--cell-timeout", type=float, default=10)
    parser.add_argument("--grader", type=Path, default=ROOT, help="the course checkout to time")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="bench-attacks-"))
    try:
        build(base / "submissions", args.cell_timeout)
        load = os.getloadavg()
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "course.grading", "--submissions", str(base / "submissions"),
             "--out", str(base / "out"), "--jobs", "1", "--lessons", args.lessons,
             "--cell-timeout", f"{args.cell_timeout:g}"], cwd=args.grader.resolve(),
            env={**os.environ, "PYTHONPATH": str(args.grader.resolve())}, capture_output=True,
            text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            return 1
        students = {s["student"]: s for s in json.loads(
            (base / "out" / "results.json").read_text())["students"]}
        honest = students["honest"]["seconds"] or 0.1
        print(f"lessons {args.lessons}, cell time limit {args.cell_timeout:g} s, JOBS=1, "
              f"load average {load[0]:.2f} before; the class took {seconds:.0f} s")
        for name, s in students.items():
            print(f"{name:>15}: {s['seconds']:7.1f} s ({s['seconds'] / honest:5.1f} x honest), "
                  f"{s['status']}, {s['total']:g}/{s['maximum']:g}")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
