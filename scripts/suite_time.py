"""Time the test suite: its wall time, its CPU seconds, the load it ran under, its slowest tests.

    .venv/bin/python scripts/suite_time.py               # what `make test` runs
    .venv/bin/python scripts/suite_time.py --by-file     # and the seconds of each test file
    .venv/bin/python scripts/suite_time.py -- -n 0 tests/test_notebooks.py   # pytest arguments
    .venv/bin/python scripts/suite_time.py --report build/suite-junit.xml    # an earlier run

It runs pytest once (with a JUnit report in build/), then prints the wall time, the CPU seconds
of pytest and everything it waited for (kernels, servers, sandboxes), the load average during
the run, and the slowest tests. Each test's CPU seconds come from tests/conftest.py (the JUnit
property `cpu_s`). CPU seconds hardly change with the machine's load, wall seconds do: on a
busy machine compare CPU seconds, and the estimate for idle cores (CPU seconds shared by the
workers, or the longest worker's share if that is larger). A benchmark, not a test: nothing
here fails because the machine is slow.

A process a test waited for counts where it ended: a server or browser that a module- or
session-scoped fixture started is counted in the test during whose tear-down it stopped
(one browser test shows the whole browser file's chromium); the per-file totals are right.
"""
from __future__ import annotations

import argparse
import os
import resource
import shlex
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKE_TEST_ARGS = ["-n", str(min(len(os.sched_getaffinity(0)) + 1, 4))]  # the Makefile's PYTEST_ARGS


@dataclass
class Case:
    name: str      # path::test[param]
    file: str
    wall: float    # seconds, set-up and tear-down included
    cpu: float     # CPU seconds (the test's process and its children), or nan if not recorded
    outcome: str   # passed, failed, error, skipped


def file_of(classname: str) -> str:
    """tests.test_x.TestClass -> tests/test_x.py (the longest prefix that is a file)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (ROOT / candidate).exists():
            return candidate
    return classname or "?"


def read_cases(report: Path) -> list[Case]:
    cases = []
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "")
        file = file_of(module)
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        outcome = ("failed" if case.find("failure") is not None else
                   "error" if case.find("error") is not None else
                   "skipped" if case.find("skipped") is not None else "passed")
        cases.append(Case(f"{file}::{case.get('name', '')}", file, float(case.get("time") or 0),
                          float(props.get("cpu_s", "nan")), outcome))
    return cases


class LoadSampler(threading.Thread):
    """The 1-minute load average every few seconds while pytest runs."""

    def __init__(self, every: float = 5.0):
        super().__init__(daemon=True)
        self.samples, self.every, self.done = [os.getloadavg()[0]], every, threading.Event()

    def run(self):
        while not self.done.wait(self.every):
            self.samples.append(os.getloadavg()[0])


def workers_of(args: list[str]) -> int:
    """How many xdist workers the pytest arguments ask for (1 without xdist)."""
    for i, arg in enumerate(args):
        value = None
        if arg in ("-n", "--numprocesses") and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("-n") and len(arg) > 2:
            value = arg[2:]
        elif arg.startswith("--numprocesses="):
            value = arg.split("=", 1)[1]
        if value is not None:
            if value in ("auto", "logical"):
                limit = next((int(a.split("=", 1)[1]) for a in args if a.startswith("--maxprocesses=")), None)
                count = os.cpu_count() or 1
                return min(count, limit) if limit else count
            return max(int(value), 1)
    return 1


def summary(cases: list[Case], slowest: int, by_file: bool, cores: int) -> list[str]:
    lines = []
    cpu = sum(c.cpu for c in cases if c.cpu == c.cpu)
    recorded = sum(c.cpu == c.cpu for c in cases)
    longest = max(cases, key=lambda c: c.cpu if c.cpu == c.cpu else c.wall, default=None)
    if recorded:
        estimate = max(cpu / cores, longest.cpu)
        lines.append(f"tests' CPU seconds: {cpu:.0f} ({recorded} of {len(cases)} tests recorded); "
                     f"on {cores} idle cores about {estimate / 60:.1f} min (CPU seconds / {cores}, "
                     "at least the longest test; waits for servers and browsers come on top)")
    key = (lambda c: c.cpu) if recorded else (lambda c: c.wall)
    lines.append(f"the {slowest} slowest tests by {'CPU' if recorded else 'wall'} seconds "
                 "(set-up and tear-down included):")
    lines.append("     CPU-s   wall-s")
    for case in sorted(cases, key=key, reverse=True)[:slowest]:
        mark = "" if case.outcome == "passed" else f"  [{case.outcome}]"
        lines.append(f"  {case.cpu:8.1f} {case.wall:8.1f}  {case.name}{mark}")
    if by_file:
        files: dict[str, list[Case]] = defaultdict(list)
        for case in cases:
            files[case.file].append(case)
        lines.append("by file (CPU seconds, wall seconds, tests):")
        lines.append("     CPU-s   wall-s  tests")
        for file, found in sorted(files.items(), key=lambda kv: -sum(key(c) for c in kv[1])):
            lines.append(f"  {sum(c.cpu for c in found):8.1f} {sum(c.wall for c in found):8.1f} "
                         f"{len(found):6d}  {file}")
    return lines


def run_pytest(args: list[str], report: Path) -> tuple[int, float, float, list[float]]:
    """(exit code, wall seconds, CPU seconds of pytest and its children, load samples)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = LoadSampler()
    sampler.start()
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *args],
                          cwd=ROOT)
    seconds = time.perf_counter() - started
    sampler.done.set()
    sampler.samples.append(os.getloadavg()[0])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return done.returncode, seconds, cpu, sampler.samples


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowest", type=int, default=15, help="how many of the slowest to list")
    parser.add_argument("--by-file", action="store_true", help="seconds and tests of each file")
    parser.add_argument("--report", type=Path, help="summarise this JUnit file instead of running")
    parser.add_argument("--cores", type=int, default=2, help="idle cores of the estimate (2)")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments (after --); "
                        f"default: {' '.join(MAKE_TEST_ARGS)}, as `make test`")
    args = parser.parse_args(argv)
    if args.report:
        cases = read_cases(args.report)
        print("\n".join(summary(cases, args.slowest, args.by_file, args.cores)))
        return 0
    pytest_args = args.pytest_args or MAKE_TEST_ARGS
    report = ROOT / "build" / "suite-junit.xml"
    report.parent.mkdir(exist_ok=True)
    report.unlink(missing_ok=True)
    code, seconds, cpu, load = run_pytest(pytest_args, report)
    cases = read_cases(report) if report.exists() else []
    print(f"\nsuite: {seconds:.0f} s wall ({seconds / 60:.1f} min), {cpu:.0f} CPU-s, {len(cases)} "
          f"tests, {workers_of(pytest_args)} worker(s), exit code {code}; load average "
          f"{load[0]:.1f} before, {sum(load) / len(load):.1f} mean, {load[-1]:.1f} after, on "
          f"{os.cpu_count()} cores; pytest {shlex.join(pytest_args)}")
    if cases:
        print("\n".join(summary(cases, args.slowest, args.by_file, args.cores)))
    return code


if __name__ == "__main__":
    sys.exit(main())
