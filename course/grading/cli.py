"""Grade a class: a folder of submissions in, a gradebook and one report per student out.

    python -m course.grading --submissions SUBS --out OUT [--jobs 2] [--lessons 00-02] [--full]
    make grade SUBMISSIONS=SUBS OUT=OUT [JOBS=2] [LESSONS=00-02] [FULL=1]

Every subfolder of SUBS is one student (the folder name is the student's name in the gradebook):
their `exercises/`, a whole course copy (also one folder deeper, as an unpacked zip is), or the
exercise files themselves. SUBS is only read. See docs/instructors.md.

Written to OUT: gradebook.csv, results.json, reports/<name>.md, raw/<name>/ (what the sandboxed
processes printed, for anyone who wants to dig).
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from course import ROOT
from course.grading import submission
from course.grading.hidden import confirm as hidden
from course.grading.plan import POINTS_FILE, lesson_plan, load_points, parse_lessons, warn_unrun
from course.grading.report import CheckResult, StudentResult, fmt, report_text, write_gradebook
from course.grading.sandbox import bwrap_problem
from course.grading.student import ClassContext, Settings, grade_student


class UsageError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make grade: {message}")


def students_in(submissions: Path, out: Path) -> tuple[list[Path], list[str]]:
    """The student folders (not hidden, not symlinks, not OUT) and what was skipped."""
    found, skipped = [], []
    for path in sorted(submissions.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_symlink():
            skipped.append(f"{path.name} (a symlink)")
        elif not path.is_dir():
            skipped.append(f"{path.name} (not a folder)")
        elif path.resolve() == out or out.is_relative_to(path.resolve()):
            skipped.append(f"{path.name} (the output folder)")
        else:
            found.append(path)
    return found, skipped


def check_folders(submissions: Path, out: Path) -> None:
    if not submissions.is_dir():
        raise UsageError(f"no folder of submissions at {submissions}")
    if out == ROOT or ROOT.is_relative_to(out):
        raise UsageError(f"OUT={out} would write into the course itself; choose a folder outside it")
    if out.is_relative_to(ROOT) and not out.is_relative_to(ROOT / "build"):
        raise UsageError(f"OUT={out} lies inside the course; choose a folder outside it (or under build/)")
    if submissions == ROOT or (ROOT.is_relative_to(submissions)):
        raise UsageError(f"SUBMISSIONS={submissions} holds the course itself; give the folder of "
                         "the collected submissions")
    if submissions.is_relative_to(out):
        raise UsageError("SUBMISSIONS lies inside OUT; give two separate folders")


def prepare(root: Path, lessons: list[str] | None, points_file: Path | None, seed: int,
            settings: Settings) -> ClassContext:
    """The pristine handout, the plan, and the hidden cases with the solutions' outputs."""
    import torch

    from course.checks import all_checks
    from course.handout import build

    pristine = build(root / "pristine")  # the student release: no solutions/, no grader
    grader = root / "grader"
    grader.mkdir()
    for name in ("cells.py", "nbval_plugin.py"):
        shutil.copy(ROOT / "course" / "grading" / name, grader / name)
    plan = lesson_plan(pristine, lessons)
    columns = [c for lesson in plan for c in lesson.checks]
    if not columns:
        raise UsageError("the chosen lessons have no graded check cells")
    warn_unrun(plan)
    checks = all_checks()
    ctx = ClassContext(
        pristine=pristine, grader=grader, plan=plan, points=load_points(columns, points_file),
        modules=sorted(p.stem for p in (pristine / "exercises").glob("*.py") if p.stem != "__init__"),
        course_init=(ROOT / "exercises" / "__init__.py").read_bytes(),
        cases_file=root / "hidden" / "cases.pt",
        n_cases={c: len(checks[c].cases) for c in columns},
        targets={c: checks[c].target for c in columns})
    ctx.cases_file.parent.mkdir()
    shutil.copy(ROOT / "course" / "confirm" / "harness.py", ctx.cases_file.parent / "harness.py")
    entries = []
    for index, check_id in enumerate(columns):
        cases = hidden.draw_cases(checks[check_id], seed)
        ctx.hidden_index[check_id] = index
        ctx.hidden_cases[check_id] = cases
        ctx.expected[check_id] = hidden.expected_outputs(checks[check_id], cases)
        entries.append({"target": checks[check_id].target, "cases": cases})
    torch.save(entries, ctx.cases_file)
    return ctx


def grade_class(submissions: Path, out: Path, jobs: int = 1, lessons: list[str] | None = None,
                settings: Settings | None = None, points_file: Path | None = None,
                workdir: Path | None = None, seed: int | None = None) -> list[StudentResult]:
    settings = settings or Settings()
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    check_folders(submissions, out)
    students, skipped = students_in(submissions, out)
    if not students:
        raise UsageError(f"no student folders in {submissions} (an empty class)")
    if not settings.unsafe:
        problem = bwrap_problem()
        if problem:
            raise UsageError(f"cannot sandbox the students' code: {problem}. To grade without a "
                             "sandbox anyway (every report will say so), pass --unsafe-no-sandbox "
                             "(make grade ... UNSAFE=1)")
    if workdir is not None and Path(workdir).resolve().is_relative_to(ROOT.resolve()):
        raise UsageError("--workdir must lie outside the course")
    seed = secrets.randbits(62) if seed is None else seed
    names = submission.report_names([s.name for s in students])
    root = Path(tempfile.mkdtemp(prefix="grade-", dir=workdir))
    os.chmod(root, 0o700)
    try:
        ctx = prepare(root, lessons, points_file, seed, settings)
        columns = [c for lesson in ctx.plan for c in lesson.checks]
        out.mkdir(parents=True, exist_ok=True)
        (out / "reports").mkdir(exist_ok=True)
        for name in skipped:
            print(f"skipped: {name}", file=sys.stderr)
        if settings.unsafe:
            print("WARNING: grading WITHOUT a sandbox (--unsafe-no-sandbox)", file=sys.stderr)
        print(f"grading {len(students)} submission(s): lessons "
              f"{', '.join(lesson.number for lesson in ctx.plan)}, {len(columns)} checks, "
              f"{jobs} at a time", flush=True)
        started = time.monotonic()

        def one(index_student):
            index, student = index_student
            scratch = root / f"s{index:04d}"
            scratch.mkdir()
            report_name = names[student.name]
            raw = out / "raw" / report_name
            if raw.exists():
                shutil.rmtree(raw)
            try:
                result = grade_student(student.name, report_name, student, ctx, settings,
                                       scratch, raw)
            except Exception as err:  # noqa: BLE001 - one student never stops the class
                import traceback

                raw.mkdir(parents=True, exist_ok=True)
                (raw / "grader-error.txt").write_text(traceback.format_exc())
                result = StudentResult(student.name, report_name, "grader-error", 0.0,
                                       sum(ctx.points.values()),
                                       [CheckResult(c, lesson.number, ctx.points[c], 0.0, False,
                                                    f"grader error: {err}")
                                        for lesson in ctx.plan for c in lesson.checks],
                                       problems=[f"grader error: {err!r}"], unsafe=settings.unsafe)
            finally:
                if not settings.keep:
                    shutil.rmtree(scratch, ignore_errors=True)
            (out / "reports" / f"{report_name}.md").write_text(report_text(result, settings.line()),
                                                               encoding="utf-8")
            print(f"  {student.name}: {result.status}, {fmt(result.total)}/{fmt(result.maximum)}"
                  f" in {result.seconds:g} s", flush=True)
            return result

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, enumerate(students)))
        elapsed = time.monotonic() - started
        write_gradebook(out, columns, results)
        (out / "results.json").write_text(json.dumps({
            "lessons": [lesson.number for lesson in ctx.plan], "checks": columns,
            "points": ctx.points, "seconds": round(elapsed, 1), "jobs": jobs,
            "sandbox": "none (UNSAFE)" if settings.unsafe else "bubblewrap",
            "settings": asdict(settings), "skipped": skipped,
            "students": [asdict(r) for r in sorted(results, key=lambda r: r.student)]},
            indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"graded {len(results)} submission(s) in {elapsed:.1f} s; "
              f"gradebook: {out / 'gradebook.csv'}, reports: {out / 'reports'}", flush=True)
        return results
    finally:
        if not settings.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"working copies kept in {root}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="grade a folder of submissions in a sandbox; see docs/instructors.md",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--submissions", required=True, help="folder with one subfolder per student")
    parser.add_argument("--out", required=True, help="where the gradebook goes")
    parser.add_argument("--jobs", type=int, default=1, help="students graded at the same time")
    parser.add_argument("--lessons", nargs="+", help="only these lessons, e.g. 00-02 or 01,03")
    parser.add_argument("--full", action="store_true",
                        help="run every cell of every notebook under strict nbval (slow)")
    parser.add_argument("--points", type=Path, default=POINTS_FILE, help="points per check (TOML)")
    parser.add_argument("--cell-timeout", type=float, default=Settings.cell_timeout,
                        help="seconds one check cell (one hidden check) may run")
    parser.add_argument("--student-timeout", type=float, default=Settings.student_timeout,
                        help="seconds for all of one student's work")
    parser.add_argument("--memory-limit", type=int, default=Settings.memory_mib,
                        help="address-space limit per sandbox, MiB (0: none)")
    parser.add_argument("--unsafe-no-sandbox", action="store_true",
                        help="grade without bubblewrap (every report says so); never for real classes")
    parser.add_argument("--keep", action="store_true", help="keep the working copies (debugging)")
    parser.add_argument("--workdir", type=Path, help="where working copies go (default: system tmp)")
    parser.add_argument("--seed", type=int, help="the hidden cases' seed (default: a fresh secret one)")
    args = parser.parse_args(argv)
    if not args.submissions.strip() or not args.out.strip():
        parser.error("give both folders: make grade SUBMISSIONS=<dir> OUT=<dir>")
    settings = Settings(cell_timeout=args.cell_timeout, student_timeout=args.student_timeout,
                        hidden_timeout=args.cell_timeout, memory_mib=args.memory_limit,
                        full=args.full, unsafe=args.unsafe_no_sandbox, keep=args.keep)
    try:
        grade_class(Path(args.submissions), Path(args.out), args.jobs, parse_lessons(args.lessons),
                    settings, args.points, args.workdir, args.seed)
    except UsageError as err:
        print(err.code, file=sys.stderr)
        return 2
    return 0
