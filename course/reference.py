"""Record what the solutions return on every check case, so checks run without `solutions/`.

    python -m course.reference --record     # after changing a solution or a check
    python -m course.reference --record 03  # only the checks whose id starts with 03
    python -m course.reference --verify     # recorded results still match the solutions
"""
from __future__ import annotations

import argparse
import sys

import torch

from course.checks import all_checks
from course.checks.expected import REFERENCE_DIR, LiveReference, RecordedReference
from course.checks.outputs import compare


def record(check_ids=None) -> list[str]:
    REFERENCE_DIR.mkdir(exist_ok=True)
    live = LiveReference()
    written = []
    for check in all_checks().values():
        if check_ids and not check.id.startswith(tuple(check_ids)):
            continue
        results = {case.name: live.outputs(check, case)
                   for case in check.cases if case.expect is None}
        torch.save(results, REFERENCE_DIR / f"{check.id}.pt")
        written.append(check.id)
    if not check_ids:  # a full recording also drops files of checks that no longer exist
        for name in {p.stem for p in REFERENCE_DIR.glob("*.pt")} - set(all_checks()):
            (REFERENCE_DIR / f"{name}.pt").unlink()
    return written


def verify() -> list[str]:
    """Return a description of every case whose recorded result differs from the solutions."""
    live, recorded = LiveReference(), RecordedReference()
    problems = []
    for check in all_checks().values():
        for case in check.cases:
            if case.expect is not None:
                continue
            try:
                problem = compare(recorded.outputs(check, case), live.outputs(check, case),
                                  atol=1e-12, rtol=1e-10)
            except (FileNotFoundError, KeyError) as err:
                problem = str(err)
            if problem:
                problems.append(f"{check.id} / {case.name}: {problem}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--record", action="store_true")
    group.add_argument("--verify", action="store_true")
    parser.add_argument("only", nargs="*", help="with --record: only check ids starting with these")
    args = parser.parse_args(argv)
    if args.record:
        for check_id in record(args.only):
            print(f"recorded {check_id}")
        return 0
    problems = verify()
    print("\n".join(problems) or "recorded references match the solutions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
