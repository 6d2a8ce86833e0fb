"""Benchmark the class page (OUT/class/, course/grading/classpage.py) on synthesised records.

    python scripts/bench_class_page.py [--students 300] [--lessons 00-09] [--lang en|zh]
        [--repeat 3] [--keep DIR]

No student is graded: the records of a class are made up (each student an ability, each check a
difficulty; a failing check gets a kind as a class spreads them: mostly a failure in the notebook
under one of a few catalog hints per check, some without a named cause, some on hidden inputs
only, blocked, not attempted, errors and timeouts), written to a scratch OUT as the grader writes
them, with a roster of three sections and an earlier run in the history. It prints the seconds of
building OUT/class/ in a fresh process, its imports (matplotlib) included, from the records on disk
(reading and verifying every record first); then, in this process, from the records in memory
(what `make grade` and `make grade-merge` do after the last student) and from the records on disk;
each the best of `--repeat`, and the size of the page. The goal: under 2 s for 300 students, all
lessons.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from course.grading import records as rec  # noqa: E402
from course.grading.causes import PLACEHOLDER, catalog  # noqa: E402
from course.grading.classpage import CLASS_DIR, HISTORY, teaching, write_class_page  # noqa: E402
from course.grading.plan import parse_lessons  # noqa: E402
from course.grading.records import CheckRecord, ClassInfo, StudentRecord  # noqa: E402

SEED = 20260  # the synthetic class's own numbers; no grading seed is involved
KINDS = [("fail", 0.80), ("hidden", 0.06), ("blocked", 0.05), ("todo", 0.05), ("error", 0.03),
         ("timeout", 0.01)]


def _message(check: str, kind: str, hint: str | None, rng: random.Random, roots: list[str]):
    if kind == "fail":
        problem = f"output shape ({rng.randint(1, 9)}, {rng.randint(1, 9)}) as expected; max " \
                  f"|expected - got| = {rng.random():.3g} (tolerance 1e-09 + 1e-07*|expected|)"
        if hint is None:
            problem = f"raised ValueError: too many values to unpack (expected {rng.randint(2, 4)})"
            hint = "your code raised before it returned, at the line shown above"
        return f"FAIL {check}, case 'case {rng.randint(1, 6)}':\n  {problem}\n  hint: {hint}\n"
    if kind == "hidden":
        return "PASS in the notebook, not confirmed on hidden inputs: hidden case 'a batch of one'"
    if kind == "blocked":
        return f"BLOCKED {check} by {', '.join(roots)}:\n  your x calls your y, which fails: fix."
    if kind == "todo":
        return f"NOT IMPLEMENTED YET: {check} calls `x` in exercises/x.py, which still raises"
    if kind == "error":
        return "exercises/attention.py could not be imported: SyntaxError: invalid syntax (line 3)"
    return "TIMEOUT: the check cell ran past the per-cell time limit (an endless loop?)"


def synthesise(students: int, checks: list[str]) -> tuple[ClassInfo, list[StudentRecord]]:
    rng = random.Random(SEED)
    known = catalog()
    hints = sorted({t.msgid for t in known.templates})
    per_check = {c: rng.sample(hints, 5) for c in checks}
    difficulty = {c: rng.gauss(0.0, 1.0) for c in checks}
    records = []
    for i in range(students):
        ability = rng.gauss(0.8, 1.2)
        rows = []
        for j, check in enumerate(checks):
            passed = rng.random() < 1 / (1 + 2.718 ** (difficulty[check] - ability))
            row = CheckRecord(check, check[:2], 1.0, 1.0 if passed else 0.0, passed,
                              f"PASS {check} (8 cases)", True if passed else None)
            if not passed:
                kind = rng.choices([k for k, _ in KINDS], [w for _, w in KINDS])[0]
                roots = [checks[j - 1]] if kind == "blocked" and j else []
                kind = "fail" if kind == "blocked" and not roots else kind
                msgid = rng.choices(per_check[check], [8, 4, 2, 1, 1])[0]
                hint = None if rng.random() < 0.07 else PLACEHOLDER.sub("3", msgid)
                row.message = _message(check, kind, hint, rng, roots)
                row.blocked_by = roots
                if kind == "hidden":
                    row.confirmed, row.hidden_failure = False, "a batch of one"
            rows.append(row)
        records.append(StudentRecord(f"student {i:03d}", f"student_{i:03d}", "ok",
                                     sum(r.earned for r in rows), float(len(rows)), rows))
    from course.grading.causes import annotate

    for record in records:
        for row in record.checks:
            annotate(row, known)
    lessons = sorted({c[:2] for c in checks})
    info = ClassInfo(lessons, checks, {c: 1.0 for c in checks}, {}, "bubblewrap")
    return info, records


def run_child(out: Path) -> int:
    """In a fresh process: the class page from OUT's records, timed from before its imports."""
    begun, cpu = time.perf_counter(), time.process_time()
    from course.grading.classpage import write_class_page as write
    from course.grading.records import load_class, load_students

    write(out, load_class(out), load_students(out), out / "roster.csv")
    print(f"{time.process_time() - cpu:.3f} {time.perf_counter() - begun:.3f}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--lessons", default="00-09")
    parser.add_argument("--lang", default="en", choices=["en", "zh"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the OUT here and keep it")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args.child)
    if args.lang == "zh":
        os.environ["COURSE_LANG"] = "zh_CN"
    lessons = parse_lessons([args.lessons])
    checks = list(teaching(lessons))
    info, records = synthesise(args.students, checks)
    out = args.keep or Path(tempfile.mkdtemp(prefix="bench-class-page-"))
    out.mkdir(parents=True, exist_ok=True)
    (out / rec.SEED_FILE).write_text(f"{SEED}\n")
    for record in records:
        rec.save_student(out, record)
    rec.save_class(out, info)
    roster = out / "roster.csv"
    roster.write_text("folder,lms_id,email,name,section\n" + "".join(
        f"{r.student},{4000 + i},s{i}@example.edu,S {i},Section {1 + i % 3}\n"
        for i, r in enumerate(records)))
    # an earlier run: a tenth of the class not yet graded, every failure of a fifth still a stub
    earlier = records[: len(records) * 9 // 10]
    write_class_page(out, info, earlier, roster)
    history = json.loads((out / CLASS_DIR / HISTORY).read_text())
    print(f"{len(records)} students, {len(checks)} checks of lessons {', '.join(info.lessons)}, "
          f"language {args.lang}; the machine's load average: {os.getloadavg()[0]:.2f}")
    fresh = []
    for _ in range(args.repeat):
        (out / CLASS_DIR / HISTORY).write_text(json.dumps(history))
        done = subprocess.run([sys.executable, __file__, "--child", str(out)], check=True,
                              capture_output=True, text=True, env=os.environ.copy())
        fresh.append(tuple(float(x) for x in done.stdout.split()[-2:]))
    print(f"a fresh process, imports included: {min(w for _, w in fresh):.2f} s, "
          f"{min(c for c, _ in fresh):.2f} CPU-seconds (best of {args.repeat}; all: "
          f"{', '.join(f'{w:.2f} s / {c:.2f} CPU-s' for c, w in fresh)})")
    memory, disk = [], []
    for _ in range(args.repeat):
        (out / CLASS_DIR / HISTORY).write_text(json.dumps(history))
        begun = time.perf_counter()
        write_class_page(out, info, records, roster)
        memory.append(time.perf_counter() - begun)
        (out / CLASS_DIR / HISTORY).write_text(json.dumps(history))
        begun = time.perf_counter()
        write_class_page(out, info, rec.load_students(out), roster)
        disk.append(time.perf_counter() - begun)
    print(f"the machine's load average after: {os.getloadavg()[0]:.2f} (on a busy machine, wall "
          "seconds measure the others too; CPU-seconds much less so)")
    page = out / CLASS_DIR / "index.html"
    print(f"from the records in memory: {min(memory):.2f} s (best of {args.repeat}; "
          f"all: {', '.join(f'{s:.2f}' for s in memory)})")
    print(f"reading and verifying every record first: {min(disk):.2f} s (best of {args.repeat}; "
          f"all: {', '.join(f'{s:.2f}' for s in disk)})")
    print(f"index.html: {page.stat().st_size / 1024:.0f} KiB; written to {out / CLASS_DIR}"
          + ("" if args.keep else " (removed)"))
    if not args.keep:
        import shutil

        shutil.rmtree(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
