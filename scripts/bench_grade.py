"""Benchmark `make grade`: a class of correct submissions, all lessons, timed; or, with --attacks,
attackers (a judge bomb, keepalives, spinning threads) next to an honest student.

    python scripts/bench_grade.py [--students 300] [--jobs 2] [--lessons 00-08] [--full]
        [--shards 3] [--grader DIR]
    python scripts/bench_grade.py --attacks [--lessons 00-02] [--cell-timeout 10] [--grader DIR]
        [--neighbours] [--before DIR] [--as-user NAME]

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

`--attacks --neighbours` asks instead what three attackers cost their classmates in a
JOBS=2 class: a process storm (up to 400 forks in its check cell, each spinning at once), a
/dev/shm flood (1 GiB written there at import, kept while its sandbox lives) and a sparse 300 MB
exercises/__init__.py. It grades four honest students beside the three attackers (the storm
first: in folder order, the honest ones are graded beside it), and the same four beside three
more honest ones, `--repeat` times in turn, and prints the honest students' mean seconds in both
classes (their ratio is what the attackers cost them; the best run and the slowest student show
the spread on a shared machine), what each attack achieved (forks that
went through, MiB written to /dev/shm) and the grader's peak resident memory. `--before DIR`
grades both classes with another checkout too (an older commit, unpacked with `git archive`),
for before and after in one run; `--as-user NAME` (as root) runs the graders as that user, with
the Python environment made reachable for it in a private mount namespace when it lives in a
folder closed to other users (a pyenv under /root).
"""
from __future__ import annotations

import argparse
import json
import os
import re
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
            # the first student's line: "grading N submission(s)", "set-up S s; grading ..."
            for key, pattern in (("setup", ("grading ", "set-up ")), ("graded", ("graded ",))):
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
        seed = base / "seed"  # a secret is never on a command line (/proc/PID/cmdline)
        seed.write_text("4242\n")
        grade(grader, subs, part, args, "--shard", f"{k}/{args.shards}", "--seed-file", str(seed))
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


# what a storm, a /dev/shm flood and a sparse file cost the classmates (JOBS=2)
SHM_FLOOD = '''
import os as _os
def _flood(files=32, mib=32):  # 1 GiB in files under the file-size limit, kept while it lives
    written = 0
    for index in range(files):
        try:
            with open(f"/dev/shm/flood{index}", "wb") as handle:
                for _ in range(mib):
                    handle.write(b"\\0" * (1 << 20))
                    written += 1
        except OSError:
            break
    _os.write(2, f"SHM wrote {written} MiB\\n".encode())
_flood()
'''
# the storm: every fork spins at once, and so does the parent once it can fork no more
SPIN_STORM = '''
import os as _os
import __main__ as _main
def batched_dot(a, b):
    if "harness" not in str(getattr(_main, "__file__", "")):
        forked = 0
        for _ in range(400):
            try:
                if _os.fork() == 0:
                    while True:
                        pass
            except OSError:
                break
            forked += 1
        _os.write(2, f"STORM forked {forked} of 400\\n".encode())
        while True:
            pass
    return (a * b).sum(dim=-1)
'''
HONEST = ("honest_a", "honest_b", "honest_c", "honest_d")
# wraps a grading run: its peak resident memory (the grader and everything it waited for)
PEAK = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]); "
        "print('PEAK', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
        "sys.exit(done.returncode)")
# run as root in a private mount namespace: make the folders `paths` reachable for uid/gid (a
# tmpfs over the closed folder above them, each bound back), then become them and run argv
REACH = '''
import os, subprocess, sys, tempfile
uid, gid, count = map(int, sys.argv[1:4])
paths, argv = sys.argv[4:4 + count], sys.argv[4 + count:]
def closed(path):
    parts = path.split("/")
    for end in range(2, len(parts)):
        if not os.stat("/".join(parts[:end])).st_mode & 0o001:
            return "/".join(parts[:end])
    return None
keep = {}
for path in paths:
    above = closed(path)
    if above:
        keep[path] = (above, tempfile.mkdtemp())
        subprocess.run(["mount", "--bind", path, keep[path][1]], check=True)
for above in {a for a, _ in keep.values()}:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", above], check=True)
for path, (_, saved) in keep.items():
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "--bind", saved, path], check=True)
os.setgroups([])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
os.execvp(argv[0], argv)
'''


def build_neighbours(subs: Path, attackers: bool) -> None:
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    others = ("fork_storm", "shm_flood", "sparse_file") if attackers else (
        "honest_e", "honest_f", "honest_g")
    for name in HONEST + others:
        write(subs / name / "exercises", perfect)
    if attackers:
        write(subs / "fork_storm" / "exercises", {"warmup.py": SPIN_STORM})
        write(subs / "shm_flood" / "exercises", {"warmup.py": SHM_FLOOD + perfect["warmup.py"]})
        with open(subs / "sparse_file" / "exercises" / "__init__.py", "wb") as handle:
            handle.truncate(300 << 20)


def _as_user(command: list[str], user) -> list[str]:
    paths = sorted({sys.base_prefix, sys.prefix})
    return ["unshare", "--mount", "--propagation", "private", sys.executable, "-c", REACH,
            str(user.pw_uid), str(user.pw_gid), str(len(paths)), *paths, *command]


def grade_neighbours(grader: Path, base: Path, args, user) -> dict:
    """Grade the class in `base` with `grader` (as `user`, if given): figures of the run."""
    command = [sys.executable, "-c", PEAK, sys.executable, "-m", "course.grading",
               "--submissions", str(base / "submissions"), "--out", str(base / "out"),
               "--jobs", "2", "--lessons", args.lessons or "00-02",
               "--cell-timeout", f"{args.cell_timeout:g}"]
    if user is not None:
        for path in [base, *base.rglob("*")]:
            os.chown(path, user.pw_uid, user.pw_gid, follow_symlinks=False)
        command = _as_user(command, user)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=grader, capture_output=True, text=True, env={
        **os.environ, "PYTHONPATH": str(grader), "HOME": str(base)})
    if done.returncode != 0:
        raise SystemExit(f"grading failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    students = {s["student"]: s for s in json.loads(
        (base / "out" / "results.json").read_text())["students"]}
    logs = {n: (base / "out" / "raw" / n / "sandbox-output.txt").read_text(errors="replace")
            for n in students if (base / "out" / "raw" / n / "sandbox-output.txt").exists()}
    peak = re.search(r"PEAK (\d+)", done.stderr)
    return {"seconds": time.perf_counter() - start, "students": students, "logs": logs,
            "peak_mib": int(peak[1]) // 1024 if peak else None}


def _mean(runs: list[dict], names) -> tuple[float, float, float]:
    """The honest students' seconds over the runs: (mean, lowest run's mean, slowest student)."""
    per_run = [sum(r["students"][n]["seconds"] for n in names) / len(names) for r in runs]
    slowest = max(r["students"][n]["seconds"] for r in runs for n in names)
    return sum(per_run) / len(per_run), min(per_run), slowest


def _neighbour_line(label: str, attacked: list[dict], calm: list[dict]) -> str:
    beside, alone = _mean(attacked, HONEST), _mean(calm, HONEST)
    logs = [r["logs"] for r in attacked]
    storm = [m[1] for log in logs if (m := re.search(r"STORM forked (\d+)", log.get("fork_storm", "")))]
    shm = [m[1] for log in logs if (m := re.search(r"SHM wrote (\d+) MiB", log.get("shm_flood", "")))]
    attackers = ", ".join(f"{n} {attacked[0]['students'][n]['status']} "
                          f"{attacked[0]['students'][n]['seconds']:g} s"
                          for n in ("fork_storm", "shm_flood", "sparse_file"))
    return (f"{label}: honest students {beside[0]:.1f} s beside the attackers (best run "
            f"{beside[1]:.1f}, slowest student {beside[2]:.1f}), {alone[0]:.1f} s beside honest "
            f"ones ({alone[1]:.1f}, {alone[2]:.1f}): {beside[0] / alone[0]:.2f} x; storm forks: "
            f"{', '.join(storm) or 'not told'}; /dev/shm: {', '.join(shm) or '?'} MiB written; "
            f"grader peak {max(r['peak_mib'] or 0 for r in attacked)} MiB (beside honest ones: "
            f"{max(r['peak_mib'] or 0 for r in calm)} MiB); {attackers}")


def neighbours(args, base: Path) -> int:
    """Each grader grades the attacked class and the calm one in turn, `--repeat` times (a
    shared machine's load moves between runs: the spread says how much)."""
    import pwd

    user = pwd.getpwnam(args.as_user) if args.as_user else None
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
    graders = [("after", args.grader.resolve())] + (
        [("before", args.before.resolve())] if args.before else [])
    print(f"JOBS=2, lessons {args.lessons or '00-02'}, cell time limit {args.cell_timeout:g} s, "
          f"as {args.as_user or pwd.getpwuid(os.getuid()).pw_name}; {uptime()}", flush=True)
    for label, grader in graders:
        runs: dict[bool, list[dict]] = {True: [], False: []}
        for turn in range(args.repeat):
            for attackers in (True, False):
                folder = base / f"{label}-{turn}-{'attacked' if attackers else 'calm'}"
                build_neighbours(folder / "submissions", attackers)
                runs[attackers].append(grade_neighbours(grader, folder, args, user))
        print(_neighbour_line(f"{label} ({grader})", runs[True], runs[False]), flush=True)
    print(f"after: {uptime()}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--lessons", default=None, help="e.g. 00-02 (default: all)")
    parser.add_argument("--full", action="store_true", help="FULL=1: every cell, strict nbval")
    parser.add_argument("--shards", type=int, default=0, help="also grade as N shards + merge")
    parser.add_argument("--grader", type=Path, default=ROOT, help="the course checkout to time")
    parser.add_argument("--attacks", action="store_true", help="time the attackers (judge bomb, keepalives, spinners) instead")
    parser.add_argument("--cell-timeout", type=float, default=10, help="with --attacks")
    parser.add_argument("--neighbours", action="store_true", help="with --attacks: what a storm, "
                        "a /dev/shm flood and a sparse file cost the others of a JOBS=2 class")
    parser.add_argument("--before", type=Path, help="with --neighbours: another checkout to "
                        "compare (e.g. `git archive` of an older commit)")
    parser.add_argument("--as-user", help="with --neighbours, as root: grade as this user")
    parser.add_argument("--repeat", type=int, default=2, help="with --neighbours: runs of each class")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="bench-grade-"))
    try:
        if args.attacks and args.neighbours:
            return neighbours(args, base)
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
