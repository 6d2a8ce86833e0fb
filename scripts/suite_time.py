"""Time the whole test suite: its wall time, and its slowest tests.

    .venv/bin/python scripts/suite_time.py              # what `make test` runs (pytest.ini)
    .venv/bin/python scripts/suite_time.py -- -n 0       # extra pytest arguments after --
    .venv/bin/python scripts/suite_time.py --slowest 30

It runs pytest once (with a JUnit report in build/), then prints the wall time, the number of
tests, the load average before and after (a busy machine makes every figure larger; compare
runs made under the same load), and the slowest tests with their seconds. A benchmark, not a
test: nothing here fails because the machine is slow.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def slowest(report: Path, count: int) -> list[tuple[float, str]]:
    cases = []
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        cases.append((float(case.get("time", 0) or 0), name))
    return sorted(cases, reverse=True)[:count]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slowest", type=int, default=15, help="how many of the slowest to list")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args(argv)
    report = ROOT / "build" / "suite-junit.xml"
    report.parent.mkdir(exist_ok=True)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", f"--junitxml={report}",
                           *args.pytest_args], cwd=ROOT)
    seconds = time.perf_counter() - started
    cases = list(ET.parse(report).getroot().iter("testcase")) if report.exists() else []
    print(f"\nsuite: {seconds:.0f} s wall ({seconds / 60:.1f} min), {len(cases)} tests, exit code "
          f"{done.returncode}; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
          f"on {os.cpu_count()} cores")
    if cases:
        print(f"the {args.slowest} slowest tests (seconds, setup included):")
        for value, name in slowest(report, args.slowest):
            print(f"  {value:7.1f}  {name}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
