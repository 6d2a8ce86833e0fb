"""How long `make check` takes a student who has just changed one file, and where the time goes.

    .venv/bin/python scripts/bench_check.py              # every scenario, best of 3
    .venv/bin/python scripts/bench_check.py --repeat 5

In a fresh handout (no solutions/), for each lesson NN: the exercises of lessons 00 to NN written
(the reference code), the later ones untouched stubs, as a student working in order has them. One
`make check` fills the cache and starts the warm process (course/check_server.py); then the
student edits the file of lesson NN's exercise (a line added) and runs `make check` again: that
run is timed, wall clock and CPU seconds, the warm process's copy included (best of the repeats,
each after another edit). Beside it, the same run with the cache alone (no warm process: the
first `make check` of a session, or COURSE_CHECK_SERVER=0), and before either (each check run
in a new process: COURSE_CHECK_CACHE=0), which is what `make check` cost before. Also timed: a run with nothing changed,
and the worst case, the whole course written and lesson 01's file changed (every exercise that
calls it runs again). Then where the time of a full run goes: the interpreter, PyTorch's import,
collecting the checks, and each check.

It prints the load average: figures from a busy machine are larger (the CPU seconds less so than
the wall clock), so compare runs made under the same load. A benchmark, not a test.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# the file of each lesson's (last) exercise
LESSON_FILE = {"00": "warmup", "01": "softmax", "02": "attention", "03": "mha", "04": "bias",
               "05": "mha", "06": "mha", "07": "transformer", "08": "gated_attention",
               "09": "tiled"}
BEGIN = re.compile(r"^\s*# BEGIN SOLUTION lesson (\d\d)\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")


def written_up_to(lesson: str, exercises: Path) -> None:
    """exercises/ as a student has it after lesson `lesson`: the reference code of the lessons
    up to it, stubs for the later ones."""
    from course.stubs import make_stub

    for path in sorted((ROOT / "solutions").glob("*.py")):
        if path.name == "__init__.py":
            continue
        kept, inside = [], False
        for line in path.read_text().splitlines(keepends=True):
            begin = BEGIN.match(line)
            if begin and begin[1] <= lesson:
                inside = True  # written: the markers go, the code stays
                continue
            if inside and END.match(line):
                inside = False
                continue
            kept.append(line)
        (exercises / path.name).write_text(make_stub("".join(kept), path.name))


def make_check(course: Path, cache: bool = True, warm: bool = True) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, output) of one `make check` in `course` (python -m
    course.progress --warm, as the Makefile runs it); cache=False: without its cache, warm=False:
    in its own process. The CPU seconds count the warm process's copy too (its rusage is the
    server's, not this process's: read from /proc after the run; see `server_cpu`)."""
    env = {**os.environ, "PYTHONPATH": str(course), "COURSE_CHECK_CACHE": "1" if cache else "0"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    served_before = server_cpu(course)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "course.progress"] + (["--warm"] if warm else []),
                          cwd=course, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    deadline = time.monotonic() + 2  # until the server has reaped the copy that ran it
    while warm and server_cpu(course) == served_before and time.monotonic() < deadline:
        time.sleep(0.1)
    return wall, cpu + server_cpu(course) - served_before, done.stdout


def server_pid(course: Path) -> int | None:
    """The warm server of `course`, if one runs."""
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = status.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"course.check_server" in command and os.fsencode(course) in b" ".join(command):
            return int(status.parent.name)
    return None


def server_cpu(course: Path) -> float:
    """CPU seconds of the warm server's finished copies (its children's rusage: /proc stat's
    cutime and cstime), 0 when none runs."""
    pid = server_pid(course)
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def wait_for_server(course: Path, timeout: float = 300) -> None:
    """Until the warm server has warmed up (its log says `ready`)."""
    log = course / "build" / "check-server.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server_pid(course) is not None and log.exists() and "ready:" in log.read_text():
            return
        time.sleep(0.5)
    raise RuntimeError(f"no warm server after {timeout:.0f} s: {log}")


def edit(path: Path, n: int) -> None:
    """A student's edit: one line more (the code the same, the content not)."""
    path.write_text(path.read_text() + f"# edit {n}\n")


def best(runs: list[tuple[float, float, str]]) -> str:
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    return f"{wall:5.2f} s wall, {cpu:5.2f} CPU-s"


def breakdown(course: Path) -> str:
    """Where the CPU time of a full run goes, measured inside one process."""
    script = r'''
import time, sys
t0 = time.process_time()
import torch
t1 = time.process_time()
from course.check_cache import catalog_of_checks
catalog = catalog_of_checks()
t2 = time.process_time()
from course.progress import _run
from course.checks.depends import Session
from course.checks.expected import RecordedReference
session = Session(RecordedReference())
per = []
for entry in catalog:
    a = time.process_time()
    _run(entry.check(), "exercises", session)
    per.append((time.process_time() - a, entry.id))
t3 = time.process_time()
print(f"PyTorch import {t1 - t0:.2f}, collecting {len(catalog)} checks {t2 - t1:.2f}, "
      f"running them {t3 - t2:.2f}")
print("slowest: " + ", ".join(f"{i} {s:.2f}" for s, i in sorted(per, reverse=True)[:6]))
'''
    env = {**os.environ, "PYTHONPATH": str(course)}
    start = subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True)
    assert start.returncode == 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    interpreter = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    done = subprocess.run([sys.executable, "-c", script], cwd=course, env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return f"interpreter start {interpreter:.2f}, " + done.stdout.strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lessons", nargs="*", default=sorted(LESSON_FILE))
    args = parser.parse_args(argv)
    from course.handout import build

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    (ROOT / "build").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-check-", dir=ROOT / "build") as scratch:
        course = build(Path(scratch) / "release")
        exercises = course / "exercises"
        edits = 0
        for lesson in args.lessons:
            written_up_to(lesson, exercises)
            target = exercises / f"{LESSON_FILE[lesson]}.py"
            runs = {"warm": [], "cache only": [], "before": []}
            make_check(course)  # fills the cache, starts the warm process
            wait_for_server(course)
            for _ in range(args.repeat):
                for name, options in (("warm", {}), ("cache only", {"warm": False}),
                                      ("before", {"warm": False, "cache": False})):
                    edits += 1
                    edit(target, edits)
                    runs[name].append(make_check(course, **options))
            print(f"lessons 00-{lesson} written, {target.name} changed: {best(runs['warm'])}; "
                  f"cache only {best(runs['cache only'])}; before {best(runs['before'])}")
        make_check(course)  # the cache as the files are now
        same = [make_check(course) for _ in range(args.repeat)]
        print(f"nothing changed: {best(same)}")
        worst, worst_before = [], []
        for _ in range(args.repeat):
            edits += 1
            edit(exercises / "softmax.py", edits)
            worst.append(make_check(course))
            edits += 1
            edit(exercises / "softmax.py", edits)
            worst_before.append(make_check(course, cache=False, warm=False))
        print(f"all written, softmax.py changed (everything that calls it runs): {best(worst)}; "
              f"before {best(worst_before)}")
        print("a full run, inside one process (CPU-s): " + breakdown(course))
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
