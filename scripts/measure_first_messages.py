"""How often does the first message a student sees point at the bug? And how many FAILs does it cost?

    python scripts/measure_first_messages.py [--root COURSE] [--set NAME ...] [--bugs FILE ...]
        [--only SUBSTRING] [--show]

Each bug is a realistic student mistake (none of them is in the mutation suite), applied to a
scratch copy of solutions/ as if it were the student's exercises/. The bugs live in sets, one file
each in scripts/bug_sets/ (or a file given with --bugs, e.g. kept outside the repository): a set
says its ROLE, "tuned" (the hints were written with its bugs in view) or "held-out" (written
without reading the hints, never tuned against). Every set is reported on its own, per lesson;
tuned and held-out figures are never added together. For each bug the script runs every check in
lesson order, as `make check` and the check cells do, and reports:

- first: whether the first failing check's message points at the bug (its `concept`, a regular
  expression for the idea the message must name, matches the message);
- fails: how many checks end as FAIL (a check that reports BLOCKED does not count);
- crash: whether a check crashed instead of failing (anything but CheckFailed escaped it);
and per set and lesson: caught (some check fails), named (the first message names the bug).

`--root` names the course tree to measure (default: this one), so the same bugs measure an older
checkout: `git worktree add /tmp/before <commit>` then `--root /tmp/before`.
"""
from __future__ import annotations

import argparse
import importlib
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Bug:
    home: str      # the check whose exercise holds the bug
    file: str      # solutions/<file>
    find: str      # exact snippet (once in the file)
    replace: str
    concept: str   # regex: what a message that points at the bug names
    why: str
    kind: str = ""  # the class of bug, for a count per class


SETS = Path(__file__).resolve().parent / "bug_sets"


@dataclass
class BugSet:
    name: str       # the file's stem
    role: str       # "tuned" (the hints were written with these bugs in view) or "held-out"
    bugs: list[Bug]


def bugs_from(path: Path) -> BugSet:
    """A set of bugs in a file of its own: a Python file whose BUGS holds (class, home, file,
    find, replace, concept, why) tuples and whose ROLE says "tuned" or "held-out" (default
    held-out: a file written without reading the hints, e.g. kept outside the repository so that
    nobody tunes the checks to it)."""
    namespace: dict = {}
    exec(compile(Path(path).read_text(), str(path), "exec"), namespace)
    bugs = [Bug(home, file, find, replace, concept, why, kind)
            for kind, home, file, find, replace, concept, why in namespace["BUGS"]]
    return BugSet(Path(path).stem, namespace.get("ROLE", "held-out"), bugs)


def bug_sets(names: list[str] | None = None) -> list[BugSet]:
    """The sets in scripts/bug_sets/ (those named, if any), tuned ones first."""
    found = [bugs_from(path) for path in sorted(SETS.glob("*.py"))
             if not names or path.stem in names]
    unknown = set(names or ()) - {s.name for s in found}
    if unknown:
        raise SystemExit(f"no bug set {sorted(unknown)} in {SETS}")
    return sorted(found, key=lambda s: (s.role != "tuned", s.name))


def scratch_package(root: Path, course: Path, bug: Bug, name: str) -> str:
    package = root / name
    shutil.copytree(course / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    path = package / bug.file
    text = path.read_text()
    if text.count(bug.find) != 1:
        raise SystemExit(f"{bug.why}: snippet found {text.count(bug.find)} times in {bug.file}")
    path.write_text(text.replace(bug.find, bug.replace))
    return name


def measure(bug: Bug, package: str) -> dict:
    """The first failing check's message, the FAIL rows, and any check that crashed."""
    from course.checks import CheckFailed, all_checks
    from course.progress import progress

    rows = progress(package)
    if rows and hasattr(rows[0], "message"):  # make check keeps every message
        failing = [r for r in rows if r.status not in ("PASS", "TODO")]
        first = (failing[0].check, failing[0].message) if failing else None
        crashed = [f"{r.check}: {r.message}" for r in rows if r.status == "CRASH"]
    else:  # an older course: run the checks once more, as the check cells do
        first, crashed = None, []
        for check in sorted(all_checks().values(), key=lambda c: c.lesson):
            try:
                check(check.resolve(package), quiet=True)
            except CheckFailed as failure:
                first = first or (check.id, str(failure))
            except Exception as error:  # noqa: BLE001 - a crash of the check itself
                crashed.append(f"{check.id}: {type(error).__name__}: {error}")
                first = first or (check.id, f"{type(error).__name__}: {error}")
    fails = [r.check for r in rows if r.status == "FAIL"]
    points = first is not None and re.search(bug.concept, first[1], re.S | re.I) is not None
    return {"first": first, "points": points, "fails": fails, "crashed": crashed}


def run_set(bug_set: BugSet, course: Path, only: str, show: bool) -> dict:
    """Measure every bug of one set; print a line per bug; return the tallies per lesson."""
    lessons: dict[str, list[int]] = {}  # lesson -> [bugs, caught, named, one FAIL, crashed]
    kinds: dict[str, list[int]] = {}    # class -> [bugs, caught, named, caught in its own check]
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        for index, bug in enumerate(b for b in bug_set.bugs if only in b.why):
            package = scratch_package(Path(tmp), course, bug,
                                      f"measured_{bug_set.name}_{index}")
            result = measure(bug, package)
            caught, named = result["first"] is not None, bool(result["points"])
            row = lessons.setdefault(bug.home[:2], [0, 0, 0, 0, 0])
            for i, flag in enumerate((True, caught, named, len(result["fails"]) == 1,
                                      bool(result["crashed"]))):
                row[i] += flag
            kind = kinds.setdefault(bug.kind or "-", [0, 0, 0, 0])
            for i, flag in enumerate((True, caught, named,
                                      caught and result["first"][0] == bug.home)):
                kind[i] += flag
            mark = "points" if named else "MISSES" if caught else "PASSES"
            where = result["first"][0] if caught else "no failure"
            print(f"{mark:7s} fails={len(result['fails']):2d} first={where:24s} "
                  f"{bug.home}: {bug.why}", flush=True)
            if show and caught:
                print("    " + result["first"][1].replace("\n", "\n    "))
            for crash in result["crashed"]:
                print(f"    CRASH {crash}")
        sys.path.remove(tmp)
    return {"lessons": lessons, "kinds": kinds}


def report(bug_set: BugSet, tallies: dict) -> list[int]:
    """Print one set's figures per lesson (and per class of bug); return its totals."""
    lessons, kinds = tallies["lessons"], tallies["kinds"]
    total = [sum(row[i] for row in lessons.values()) for i in range(5)]
    print(f"\n{bug_set.name} ({bug_set.role}): caught {total[1]}/{total[0]}, named by the first "
          f"message {total[2]}/{total[0]}, exactly one FAIL {total[3]}, a check crashed {total[4]}")
    print(f"  {'lesson':6s} {'bugs':>5s} {'caught':>7s} {'named':>6s} {'one FAIL':>9s}")
    for lesson, (n, caught, named, one, _) in sorted(lessons.items()):
        print(f"  {lesson:6s} {n:5d} {caught:7d} {named:6d} {one:9d}")
    if len(kinds) > 1 or "-" not in kinds:
        print(f"  {'class':12s} {'bugs':>5s} {'caught':>7s} {'named':>6s} {'own check first':>16s}")
        for kind, (n, caught, named, own) in kinds.items():
            print(f"  {kind:12s} {n:5d} {caught:7d} {named:6d} {own:16d}")
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--only", default="", help="only bugs whose description contains this")
    parser.add_argument("--show", action="store_true", help="print every first message")
    parser.add_argument("--set", action="append", dest="sets", metavar="NAME",
                        help="a set of scripts/bug_sets/ (repeatable; default: every set)")
    parser.add_argument("--bugs", type=Path, action="append", default=[],
                        help="a file of bugs kept outside the repository (see bugs_from)")
    args = parser.parse_args(argv)
    course = args.root.resolve()
    sys.path.insert(0, str(course))
    importlib.invalidate_caches()
    start = time.perf_counter()
    chosen = ([] if args.bugs and not args.sets else bug_sets(args.sets)) + \
        [bugs_from(path) for path in args.bugs]
    totals = {}
    for bug_set in chosen:
        print(f"\n=== {bug_set.name} ({bug_set.role}, {len(bug_set.bugs)} bugs)")
        tallies = run_set(bug_set, course, args.only, args.show)
        totals[bug_set.name] = (bug_set.role, report(bug_set, tallies))
    print(f"\n{course} ({time.perf_counter() - start:.0f} s): each set on its own; tuned and "
          "held-out figures are never added together")
    for name, (role, (n, caught, named, one, crashed)) in totals.items():
        print(f"  {name:24s} {role:9s} caught {caught:3d}/{n:<3d} named {named:3d}/{n:<3d} "
              f"one FAIL {one:3d} crashed {crashed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
