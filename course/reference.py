"""Record what the solutions return on every check case, so checks run without `solutions/`.

    python -m course.reference --record     # after changing a solution or a check
    python -m course.reference --record 03  # only the checks whose id starts with 03
    python -m course.reference --verify     # recorded results still match the solutions

For each check: `<id>.pt` (each case's outputs) and `<id>.calls.pt.gz` (the calls the reference
made to other exercises in each case: the stand-ins' tables). A full recording also writes
`hidden_public.pt.gz`, the hidden-input kind of cases drawn from the public seed with their
expected outputs (`make check HIDDEN=1`, course/confirm/public.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from course.checks import all_checks
from course.checks.expected import REFERENCE_DIR, LiveReference, RecordedReference, record_calls
from course.checks.outputs import compare
from course.confirm.public import PUBLIC_FILE, PUBLIC_SEED
from course.confirm.public import load as load_public
from course.confirm.standins import pack, save


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
        calls = {case.name: record_calls(check, case) for case in check.cases}
        calls_file = REFERENCE_DIR / f"{check.id}.calls.pt.gz"
        if any(calls.values()):
            save(pack(calls), calls_file)
        elif calls_file.exists():
            calls_file.unlink()
        written.append(check.id)
    if not check_ids:  # a full recording also drops files of checks that no longer exist
        known = set(all_checks())
        for path in REFERENCE_DIR.glob("*.pt*"):
            if path.name.split(".pt")[0].removesuffix(".calls") not in known | {"hidden_public"}:
                path.unlink()
        record_public()
        written.append("hidden_public")
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
        problems += _verify_calls(check, live, recorded)
    return problems


def _verify_calls(check, live, recorded) -> list[str]:
    """The recorded call tables still hold the calls the solutions make, with their outputs."""
    problems = []
    for case in check.cases:
        fresh, stored = live.calls(check, case), recorded.calls(check, case)
        if [c["target"] for c in fresh] != [c["target"] for c in stored]:
            problems.append(f"{check.id} / {case.name}: the recorded calls differ; "
                            "run `make reference`")
            continue
        for new, old in zip(fresh, stored):
            if isinstance(new.get("output"), torch.Tensor) and compare(
                    {"output": old["output"]}, {"output": new["output"]}, 1e-12, 1e-10):
                problems.append(f"{check.id} / {case.name}: a recorded call of {new['target']} "
                                "returns something else now; run `make reference`")
                break
    return problems


# ----------------------------------------------- the hidden-input kinds of cases, public seed

def record_public(path: Path = PUBLIC_FILE) -> Path:
    """Draw every check's hidden cases from the public seed, with the solutions' outputs and the
    stand-ins' tables (developers only: needs solutions/ and course/grading/)."""
    from course.confirm.entries import hidden_entry, saveable
    from course.grading.hidden import confirm as hidden

    entries = []
    for check in all_checks().values():
        cases = hidden.draw_cases(check, PUBLIC_SEED)
        spec = hidden.specs()[check.id]
        entry = hidden_entry(check, cases)
        entry.update(id=check.id, atol=spec.atol, rtol=spec.rtol,
                     expected=saveable(hidden.expected_outputs(check, cases)))
        entries.append(entry)
    save(entries, path)
    return path


def verify_public(path: Path = PUBLIC_FILE) -> list[str]:
    """What differs between the recorded public cases and a fresh draw (developers only)."""
    from course.grading.hidden import confirm as hidden

    if not Path(path).exists():
        return [f"{path.name} is missing: run `make reference`"]
    recorded = {e["id"]: e for e in load_public(path)}
    problems = []
    for check in all_checks().values():
        entry = recorded.get(check.id)
        cases = hidden.draw_cases(check, PUBLIC_SEED)
        if entry is None or [c["name"] for c in entry["cases"]] != [c["name"] for c in cases]:
            problems.append(f"{check.id}: the public hidden cases changed; run `make reference`")
            continue
        for case, want in zip(cases, hidden.expected_outputs(check, cases)):
            if case["kind"] == "init":
                continue
            stored = entry["expected"][cases.index(case)]
            if compare(stored, want, 1e-12, 1e-10):
                problems.append(f"{check.id} / hidden '{case['name']}': the recorded outputs "
                                "differ; run `make reference`")
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
    problems = verify() + verify_public()
    print("\n".join(problems) or "recorded references match the solutions")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
