"""Benchmark `make grade`: a class of correct submissions, all lessons, timed; or, with --attacks,
issue 21's attackers next to an honest student.

    python scripts/bench_grade.py [--students 300] [--jobs 2] [--lessons 00-08] [--full]
        [--shards 3] [--grader DIR]
    python scripts/bench_grade.py --attacks [--lessons 00-02] [--cell-timeout 10] [--grader DIR]

Prints the seconds for the class and per student; the set-up (from the start to the grader's
"grading N submission(s)" line: building the working copy, the hidden cases and the solutions'
outputs on them, the fork server) and what follows the last student; and where a student's
seconds go, per grading stage (collect, the visible check cells, classify, the hidden run, the
isolated rerun), the mean over the class from OUT/raw/*/timings.json: wall seconds, CPU-seconds
of the sandboxed processes, CPU-seconds of the grader's own thread; then the CPU-seconds per
student in all. With the machine's load before and after: on a shared machine wall seconds
mostly measure the others; CPU-seconds much less so (compare runs made one after the other, or
`perf stat -e task-clock` around this script, which also counts the forks the grader cannot).
The goal: 300 students, all lessons, JOBS=2, under 150 s on 2 idle cores (0.5 s per student:
about 1 CPU-second of every process together), the set-up under 15 s. `--shards N` also grades the class as N shards one after the other, then
merges them (`python -m course.grading merge`), and prints that total. `--grader DIR` times
another checkout of the course (e.g. an older commit) on the same class.

`--attacks` grades a class of five one at a time (JOBS=1, so that each student's seconds are
its own): honest (the solutions); judge_bomb (torch.save replaced, so that every hidden result
claims 2**32 elements over a one-element storage: the issue's attack, a file of about 1.6 kB);
keepalive_fast / keepalive_slow (a check cell that writes, on every pipe it has, a non-JSON line
every 10 ms / forged {"start": i} lines every 0.5 s, for three cell time limits, then returns
the right answer: a grader that lets it run accepts its PASS); cpu_spinner (four threads of
matrix products for three cell time limits, then the answer). It prints each student's seconds,
the ratio to the honest one's, the status and points: a judge bomb should cost no more than
twice the honest student, a keepalive stop at its cell's time limit. Figures only: the hostile
tests (tests/test_grading_hostile.py) assert the gradebook.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hostile import attacks  # noqa: E402 - the attacks the hostile class grades
from tests.hostile.classroom import write  # noqa: E402


def uptime() -> str:
    load = os.getloadavg()
    return f"load average {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f} on {os.cpu_count()} CPUs"


def make_class(subs: Path, students: int) -> None:
    for i in range(students):
        folder = subs / f"student{i:03d}" / "exercises"
        folder.mkdir(parents=True)
        for path in (ROOT / "solutions").glob("*.py"):
            shutil.copy(path, folder / path.name)


def grade(grader: Path, subs: Path, out: Path, args, *extra: str) -> tuple[float, str]:
    """Seconds for the whole command, and its output; `grade.setup` the seconds until it
    announced its first student, `grade.teardown` those after it said it had graded them."""
    command = [sys.executable, "-m", "course.grading", "--submissions", str(subs),
               "--out", str(out), "--jobs", str(args.jobs), *extra]
    if args.lessons:
        command += ["--lessons", args.lessons]
    if args.full:
        command.append("--full")
    start, cpu = time.perf_counter(), _children_cpu()
    lines, stamps, errors = [], {}, []
    with subprocess.Popen(command, cwd=grader, env={**os.environ, "PYTHONPATH": str(grader)},
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        reader = threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True)
        reader.start()
        for line in proc.stdout:
            for key, pattern in (("setup", "grading "), ("graded", "graded ")):
                if line.startswith(pattern) and key not in stamps:
                    stamps[key] = time.perf_counter() - start
            lines.append(line)
        proc.wait()
        reader.join()
    seconds = time.perf_counter() - start
    stdout = "".join(lines)
    if proc.returncode != 0:
        raise SystemExit(f"grading failed:\n{stdout[-3000:]}\n{''.join(errors)[-3000:]}")
    grade.cpu = _children_cpu() - cpu  # the grader, bubblewrap, the fork server's own import
    grade.setup = stamps.get("setup", float("nan"))
    grade.teardown = seconds - stamps.get("graded", float("nan"))
    return seconds, stdout


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def full_marks(out: Path) -> tuple[int, int]:
    rows = (out / "gradebook.csv").read_text().splitlines()[1:]
    return sum(1 for r in rows if r.split(",")[2] == r.split(",")[3]), len(rows)


def stages(out: Path) -> tuple[str, float, float]:
    """A table of the mean seconds per student per stage over the class: wall, CPU of the
    sandboxed processes (where the grader knows it), CPU of the grader's own thread; and the
    sandboxes' and the grader threads' CPU-seconds in all."""
    found = [json.loads(p.read_text()) for p in (out / "raw").glob("*/timings.json")]
    if not found:
        return "  (this grader writes no per-stage timings)", 0.0, 0.0
    names = [k for k in found[0] if not k.endswith("cpu")]

    def mean(key):
        return sum(t.get(key, 0.0) for t in found) / len(found)

    rows = [f"  {'stage':>10} {'wall s':>8} {'sandbox CPU-s':>14} {'grader CPU-s':>13}"]
    for name in names:
        rows.append(f"  {name:>10} {mean(name):8.3f} {mean(f'{name} cpu'):14.3f} "
                    f"{mean(f'{name} grader cpu'):13.3f}")
    sandboxes = sum(t.get(f"{n} cpu", 0.0) for t in found for n in names)
    threads = sum(t.get(f"{n} grader cpu", 0.0) for t in found for n in names)
    rows.append(f"  {'all':>10} {sum(mean(n) for n in names):8.3f} "
                f"{sandboxes / len(found):14.3f} {threads / len(found):13.3f}")
    return "\n".join(rows), sandboxes, threads


def sharded(args, grader: Path, subs: Path, base: Path) -> None:
    parts = [base / f"shard-{k}" for k in range(1, args.shards + 1)]
    start = time.perf_counter()
    for k, part in enumerate(parts, start=1):
        grade(grader, subs, part, args, "--shard", f"{k}/{args.shards}", "--seed", "4242")
    merged = subprocess.run([sys.executable, "-m", "course.grading", "merge", "--parts",
                             *map(str, parts), "--out", str(base / "merged")], cwd=grader,
                            env={**os.environ, "PYTHONPATH": str(grader)}, capture_output=True,
                            text=True)
    seconds = time.perf_counter() - start
    if merged.returncode != 0:
        print(f"merge failed or missing (course/grading/merge.py):\n{merged.stderr[-2000:]}")
        return
    good, total = full_marks(base / "merged")
    print(f"{args.shards} shards one after the other, then merged: {seconds:.1f} s for the "
          f"class; {good}/{total} with full marks")


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


def build_attackers(subs: Path, cell_timeout: float) -> None:
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


def attackers(args, base: Path) -> int:
    build_attackers(base / "submissions", args.cell_timeout)
    load = os.getloadavg()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(base / "submissions"),
         "--out", str(base / "out"), "--jobs", "1", "--lessons", args.lessons or "00-02",
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
    print(f"lessons {args.lessons or '00-02'}, cell time limit {args.cell_timeout:g} s, JOBS=1, "
          f"load average {load[0]:.2f} before; the class took {seconds:.0f} s")
    for name, s in students.items():
        print(f"{name:>15}: {s['seconds']:7.1f} s ({s['seconds'] / honest:5.1f} x honest), "
              f"{s['status']}, {s['total']:g}/{s['maximum']:g}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lessons", default=None, help="e.g. 00-02 (default: all)")
    parser.add_argument("--full", action="store_true", help="FULL=1: every cell, strict nbval")
    parser.add_argument("--shards", type=int, default=0, help="also grade as N shards + merge")
    parser.add_argument("--grader", type=Path, default=ROOT, help="the course checkout to time")
    parser.add_argument("--attacks", action="store_true", help="issue 21's attackers instead")
    parser.add_argument("--cell-timeout", type=float, default=10, help="with --attacks")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    try:
        if args.attacks:
            return attackers(args, base)
        make_class(base / "submissions", args.students)
        print(f"before: {uptime()}", flush=True)
        seconds, stdout = grade(args.grader.resolve(), base / "submissions", base / "out", args)
        print(f"after:  {uptime()}")
        good, total = full_marks(base / "out")
        print(f"{args.students} students, lessons {args.lessons or 'all'}, JOBS={args.jobs}: "
              f"{seconds:.1f} s for the class, {seconds / args.students:.2f} s per student "
              f"(wall); {good}/{total} with full marks")
        print(f"set-up (start to the first student): {grade.setup:.1f} s; after the last "
              f"student (results, feedback, shutting down): {grade.teardown:.1f} s")
        table, sandboxes, _ = stages(base / "out")
        print("per student, mean over the class:\n" + table)
        total = grade.cpu + sandboxes  # an older grader's processes are all its children
        cores = min(args.jobs, os.cpu_count() or 1)
        print(f"CPU: {grade.cpu:.0f} s in the grader's processes and their children (set-up "
              f"included), {sandboxes:.0f} s more in copies of the fork server; "
              f"{total / args.students:.2f} CPU-s per student in all, so about "
              f"{total / cores:.0f} s for the class on {cores} idle cores")
        if args.shards:
            sharded(args, args.grader.resolve(), base / "submissions", base)
        return 0 if good == total else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
