"""Grading one student: notebook check cells in the sandbox, then hidden confirmation.

1. The student's exercise files are read (never executed) from SUBMISSIONS and laid over a
   scratch copy of the handout, the only writable folder of the sandbox.
2. Check cells (default) or the whole notebooks under strict nbval (`full`) run in the sandbox;
   a check's PASS line there is necessary, not sufficient.
3. Each exercise whose check printed PASS runs on hidden cases in a fresh sandbox that holds
   only a copy of the student's exercises/ and the harness (torch-only); its outputs are compared
   with the solutions' here, in the grader's process. Points need both.
"""
from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from course.grading import submission
from course.grading.hidden import confirm as hidden
from course.grading.plan import Lesson
from course.grading.report import STATUSES, UNCONFIRMED, CheckResult, StudentResult
from course.grading.sandbox import Limits, Sandbox, interpreter
from course.grading.supervise import supervise
from course.grading.verdict import MEMORY_WORDS, judge_cell, kernel_died, why_failed

MAX_RESULT_BYTES = 64 * 1024 * 1024


@dataclass
class Settings:
    cell_timeout: float = 60
    student_timeout: float = 600
    hidden_timeout: float = 60
    memory_mib: int = 4096
    fsize_mib: int = 256
    full: bool = False
    unsafe: bool = False
    keep: bool = False

    def limits(self) -> Limits:
        return Limits(self.memory_mib, self.fsize_mib)

    def line(self) -> str:
        return (f"limits: {self.cell_timeout:g} s per cell, {self.student_timeout:g} s per "
                f"student, {self.memory_mib} MiB; " +
                ("full notebooks (strict nbval)" if self.full else "check cells only") +
                ("; UNSAFE, no sandbox" if self.unsafe else "; bubblewrap sandbox"))


@dataclass
class ClassContext:
    """What every student shares: built once per grading run, in the grader's process."""
    pristine: Path            # the handout, grader files removed
    grader: Path              # cells.py, nbval_plugin.py (bound read-only)
    plan: list[Lesson]
    points: dict[str, float]
    modules: list[str]        # the handout's exercise module names
    course_init: bytes
    cases_file: Path          # the hidden cases of every graded check (torch.save)
    hidden_index: dict[str, int] = field(default_factory=dict)
    hidden_cases: dict[str, list] = field(default_factory=dict)
    expected: dict[str, list] = field(default_factory=dict)
    n_cases: dict[str, int] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)


def _write_files(folder: Path, files: dict[str, bytes], pristine: Path) -> None:
    """The handout's exercises/ (stubs for whatever the student did not hand in), the student's
    files laid over it."""
    folder.mkdir(parents=True, exist_ok=True)
    for stub in (pristine / "exercises").glob("*.py"):
        shutil.copy(stub, folder / stub.name)
    for name, content in files.items():
        (folder / name).write_bytes(content)


def _clean(record: dict) -> dict:
    """A record as the report code expects it, whatever the sandboxed process wrote (it runs the
    student's code, so it may write anything: the worst it can do is fail its own checks)."""
    outputs = []
    for output in record.get("outputs") or []:
        if isinstance(output, dict) and output.get("type") in ("stream", "error"):
            outputs.append({k: str(output.get(k, ""))[:8000] for k in ("type", "name", "text", "ename", "evalue")})
    clean = {"outputs": outputs, "message": str(record.get("message", ""))[:8000],
             "kernel_exit": None, "seconds": 0.0}
    for key in ("ok", "kind", "error"):
        if key in record:
            clean[key] = record[key] if record[key] in (True, False, None) else str(record[key])[:8000]
    return clean


def _cell_items(ctx: ClassContext, modules: list[str]) -> list[dict]:
    items = [{"kind": "probe", "module": m} for m in modules]
    for lesson in ctx.plan:
        for cell in lesson.cells:
            items.append({"kind": "cell", "lesson": lesson.number, "notebook": lesson.notebook,
                          "cell": cell.cell, "source": cell.source, "setup": cell.setup})
    return items


def run_check_cells(ctx: ClassContext, settings: Settings, scratch: Path, raw: Path,
                    deadline: float, modules: list[str]):
    """(probe records by module, cell records by (notebook, cell), deadline hit?)."""
    control = scratch / "control"
    control.mkdir()
    items = _cell_items(ctx, modules)
    (control / "items.json").write_text(json.dumps(items))
    box = Sandbox(writable={scratch / "course": "/course"},
                  readonly={control: "/control", ctx.grader: "/grader"},
                  env={"PYTHONPATH": "/course"}, cwd="/course", unsafe=settings.unsafe)
    run = supervise(
        box, lambda rest: [interpreter(), box.path(ctx.grader / "cells.py"),
                           box.path(control / "items.json"), ",".join(map(str, rest))],
        list(range(len(items))), settings.cell_timeout, deadline, settings.limits(),
        raw / "sandbox-output.txt")
    probes, cells = {}, {}
    for index, item in enumerate(items):
        outcome = run.results.get(index)
        if outcome is None:
            continue
        if outcome.done is not None and isinstance(outcome.done.get("record"), dict):
            record = _clean(outcome.done["record"])
        elif outcome.timed_out:
            record = {"ok": None, "timed_out": True, "outputs": [], "kernel_exit": None,
                      "message": f"Timeout of {settings.cell_timeout:g} seconds exceeded"}
        else:
            record = {"ok": None, "outputs": [], "kernel_exit": outcome.exit_code,
                      "message": f"the process died (exit code {outcome.exit_code})"}
        if item["kind"] == "probe":
            probes[item["module"]] = record
        else:
            record.setdefault("outputs", [])
            cells[(item["notebook"], item["cell"])] = record
    return probes, cells, run.deadline_hit


def run_full_notebooks(ctx: ClassContext, settings: Settings, scratch: Path, raw: Path,
                       deadline: float):
    """FULL=1: strict nbval over every graded notebook, one kernel each, in the sandbox."""
    import subprocess

    from course.grading.supervise import _kill

    log = scratch / "course" / ".grade-cells.jsonl"
    box = Sandbox(writable={scratch / "course": "/course"}, readonly={ctx.grader: "/grader"},
                  env={"PYTHONPATH": "/course:/grader",
                       "COURSE_GRADE_CELL_LOG": "/course/.grade-cells.jsonl"},
                  cwd="/course", unsafe=settings.unsafe)
    argv = [interpreter(), "-m", "pytest", "-p", "nbval.plugin", "-p", "nbval_plugin", "--nbval",
            *[f"notebooks/{lesson.notebook}" for lesson in ctx.plan],
            "--nbval-sanitize-with", "notebooks/nbval_sanitize.cfg",
            f"--nbval-cell-timeout={settings.cell_timeout:g}", "--nbval-kernel-startup-timeout=120",
            "-p", "no:cacheprovider", "-q", "-rN", "--tb=short", "-c", "/dev/null"]
    with open(raw / "pytest.txt", "wb") as out:
        proc = box.popen(argv, settings.limits(), out, subprocess.STDOUT)
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
            hit = False
        except subprocess.TimeoutExpired:
            _kill(proc)
            hit = True
    cells: dict[tuple[str, int], dict] = {}
    if log.exists():
        for line in log.read_text(errors="replace").splitlines()[:100_000]:
            try:
                record = json.loads(line)
                key = (record.get("notebook"), record.get("cell"))
            except (ValueError, AttributeError):
                continue
            if record.get("when") == "call" or key not in cells:
                cells[key] = record
    return {}, cells, hit


def run_hidden(ctx: ClassContext, settings: Settings, files: dict[str, bytes], check_ids: list[str],
               scratch: Path, raw: Path, deadline: float) -> dict[str, str | None]:
    """Check id -> None (confirmed) or why not, for each of `check_ids`."""
    if not check_ids:
        return {}
    sub, results = scratch / "hidden" / "sub", scratch / "hidden" / "results"
    _write_files(sub / "exercises", files, ctx.pristine)
    results.mkdir(parents=True)
    box = Sandbox(writable={results: "/results"},
                  readonly={sub: "/sub", ctx.cases_file.parent: "/hidden"},
                  env={"PYTHONPATH": "/sub"}, cwd="/sub", unsafe=settings.unsafe)
    indices = [ctx.hidden_index[c] for c in check_ids]
    run = supervise(
        box, lambda rest: [interpreter(), box.path(ctx.cases_file.parent / "harness.py"),
                           box.path(ctx.cases_file), box.path(results), ",".join(map(str, rest))],
        indices, settings.hidden_timeout, deadline, settings.limits(), raw / "hidden-output.txt")
    verdicts = {}
    for check_id, index in zip(check_ids, indices):
        outcome = run.results.get(index)
        path = results / f"{index}.pt"
        if outcome is None:
            verdicts[check_id] = "the hidden run did not reach this check (time limit)"
        elif outcome.timed_out:
            verdicts[check_id] = f"the hidden run of this check ran past {settings.hidden_timeout:g} s"
        elif outcome.done is None:
            verdicts[check_id] = f"the process died during the hidden run (exit code {outcome.exit_code})"
        elif not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RESULT_BYTES:
            verdicts[check_id] = "the hidden run wrote no readable result (missing or too large)"
        else:
            try:
                got = torch.load(path, weights_only=True)
            except Exception as err:  # noqa: BLE001 - a forged or broken file
                verdicts[check_id] = f"the hidden run's result could not be read ({type(err).__name__})"
                continue
            verdicts[check_id] = hidden.judge(check_id, ctx.hidden_cases[check_id],
                                              ctx.expected[check_id], got)
    return verdicts


def grade_student(name: str, report_name: str, folder: Path, ctx: ClassContext,
                  settings: Settings, scratch: Path, raw: Path) -> StudentResult:
    start = time.monotonic()
    deadline = start + settings.student_timeout
    raw.mkdir(parents=True, exist_ok=True)
    graded = [(lesson, c) for lesson in ctx.plan for c in lesson.checks]
    maximum = sum(ctx.points[c] for _, c in graded)

    exercises = submission.find_exercises(folder)
    files, ignored = submission.take_files(exercises, ctx.modules, ctx.course_init) \
        if exercises else ({}, [])
    extras = submission.shipped_extras(folder, exercises)
    notes = dict(
        flags=submission.code_flags(files) + (["ships-solutions"] if any(
            e.rstrip("/").split("/")[-1] == "solutions" for e in extras) else []),
        taken=[f"exercises/{n}" for n in files],
        ignored=[f"exercises/{i}" for i in ignored] + [f"{e} (only exercises/*.py count)" for e in extras]
        + submission.loose_files(folder, exercises, ctx.modules),
        unsafe=settings.unsafe)

    def result(status, outcomes, **extra) -> StudentResult:
        rows = []
        for lesson, c in graded:
            passed, message, confirmed = outcomes[c]
            rows.append(CheckResult(c, lesson.number, ctx.points[c],
                                    ctx.points[c] if passed else 0.0, passed, message, confirmed))
        if any(r.confirmed is False for r in rows):
            extra.setdefault("flags", []).append("unconfirmed")
        return StudentResult(name, report_name, status, sum(r.earned for r in rows), maximum, rows,
                             seconds=round(time.monotonic() - start, 1), **extra)

    if not files:
        return result("no-submission", {c: (False, "no submission", None) for _, c in graded},
                      **notes)

    shutil.copytree(ctx.pristine, scratch / "course", symlinks=False)
    _write_files(scratch / "course" / "exercises", files, ctx.pristine)
    modules = sorted({ctx.targets[c].split(":")[0] for _, c in graded})
    found_status: set[str] = set()
    problems: list[str] = []
    if settings.full:
        probes, cells, hit = run_full_notebooks(ctx, settings, scratch, raw, deadline)
    else:
        probes, cells, hit = run_check_cells(ctx, settings, scratch, raw, deadline, modules)

    module_problem: dict[str, str] = {}
    for module, record in probes.items():
        if record.get("ok") is False:
            kind = record.get("kind")
            found_status.add(kind if kind in ("syntax-error", "import-error", "memory-limit")
                             else "import-error")
            module_problem[module] = str(record.get("error", ""))[:2000]
        elif record.get("ok") is None:
            found_status.add("timeout" if record.get("timed_out") else "crashed")
            module_problem[module] = ("importing it did not finish in time" if record.get("timed_out")
                                      else f"importing it killed the process ({record.get('message')})")
    for module, what in module_problem.items():
        problems.append(f"exercises/{module}.py: {what}")
    if hit:
        found_status.add("timeout")
        problems.append(f"stopped at the student's time limit ({settings.student_timeout:g} s)")

    outcomes: dict[str, tuple[bool, str]] = {}
    other_failed: list[str] = []
    for lesson in ctx.plan:
        mine = {n: r for (nb, n), r in cells.items() if nb == lesson.notebook}
        texts = json.dumps(list(mine.values()))
        if any(word in texts for word in MEMORY_WORDS):
            found_status.add("memory-limit")
        if any(kernel_died(r) for r in mine.values()) or "Kernel dead" in texts:
            found_status.add("crashed")
            problems.append(f"{lesson.notebook}: the kernel (the process running the cells) died")
        if any("Timeout of" in r.get("message", "") and not kernel_died(r) for r in mine.values()):
            found_status.add("timeout")
        check_cells = {cell.cell for cell in lesson.cells}
        for number, record in sorted(mine.items()):
            if number not in check_cells and record.get("outcome", "passed") != "passed":
                other_failed.append(f"{lesson.notebook} code cell {number}: {why_failed(record)}")
        for cell in lesson.cells:
            record = mine.get(cell.cell)
            for check_id, (passed, message) in judge_cell(cell, record, ctx.n_cases).items():
                module = ctx.targets[check_id].split(":")[0]
                if not passed and module in module_problem and "PASS" not in message:
                    message = f"exercises/{module}.py could not be imported: {module_problem[module]}"
                if record is None:
                    message = (f"not run: the student's time limit ({settings.student_timeout:g} s) "
                               "was reached first" if hit else "not run: the notebook stopped before this cell")
                if check_id not in outcomes or not passed:
                    outcomes[check_id] = (passed, message)

    passed_ids = [c for c, (ok, _) in outcomes.items() if ok]
    verdicts = run_hidden(ctx, settings, files, passed_ids, scratch, raw, deadline)
    final = {}
    for _, c in graded:
        ok, message = outcomes.get(c, (False, "not run"))
        if ok:
            why = verdicts.get(c, "not confirmed")
            if why is None:
                final[c] = (True, message, True)
            else:
                final[c] = (False, f"{UNCONFIRMED}: {why}", False)
        else:
            final[c] = (False, message, None)
    order = [s for s in STATUSES if s in found_status]
    return result(order[0] if order else "ok", final, problems=problems,
                  other_failed_cells=other_failed, **notes)
