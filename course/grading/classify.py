"""Stage 3 of grading a student: from what the visible run recorded, each check's verdict (its PASS
line, or why it failed) and the student's statuses.

Statuses come from what happened to the student's processes (a probe that raised, an exit code,
a time or CPU limit) and from the exceptions the student's code raised (cells.py and the nbval
plugin record them), never from text: lesson 05's committed outputs print the
torch.cuda.OutOfMemoryError of a recorded GPU run, and a student may print anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from course.grading.prepare import ClassContext
from course.grading.settings import Settings
from course.grading.verdict import judge_cell, kernel_died, why_failed
from course.grading.visible import Visible

MEMORY_ERRORS = ("MemoryError", "OutOfMemoryError")
PROBE_KINDS = ("syntax-error", "import-error", "memory-limit")


def ran_out_of_memory(raised: list) -> bool:
    """Whether one of the exceptions ([[name, message]]) is running out of memory: Python's
    MemoryError, torch's OutOfMemoryError (CUDA), or torch's CPU allocator failing."""
    return any(name in MEMORY_ERRORS or (name == "RuntimeError" and "can't allocate memory" in text)
               for name, text in raised)


@dataclass
class Classified:
    statuses: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    other_failed: list[str] = field(default_factory=list)
    verdicts: dict[str, tuple[bool, str]] = field(default_factory=dict)  # PASS line?, message
    module_problem: dict[str, str] = field(default_factory=dict)


def _probes(visible: Visible, found: Classified) -> None:
    for module, record in visible.probes.items():
        if record.get("ok") is False:
            kind = record.get("kind")
            found.statuses.add(kind if kind in PROBE_KINDS else "import-error")
            found.module_problem[module] = str(record.get("error", ""))[:2000]
        elif record.get("ok") is None:
            found.statuses.add("timeout" if record.get("timed_out") or record.get("cpu_limit")
                               else "memory-limit" if record.get("memory_limit") else "crashed")
            found.module_problem[module] = (
                "importing it did not finish in time" if record.get("timed_out") else
                "importing it used up the CPU-time limit" if record.get("cpu_limit") else
                f"importing it: {record.get('message')}" if record.get("memory_limit") else
                f"importing it killed the process ({record.get('message')})")
    for module, what in found.module_problem.items():
        found.problems.append(f"exercises/{module}.py: {what}")


def _lesson_statuses(notebook: str, records: list[dict], found: Classified) -> None:
    if any(ran_out_of_memory(r.get("raised", [])) or r.get("memory_limit") for r in records):
        found.statuses.add("memory-limit")
    if any(kernel_died(r) or "Kernel dead" in r.get("message", "") for r in records):
        found.statuses.add("crashed")
        found.problems.append(f"{notebook}: the kernel (the process running the cells) died")
    if any(r.get("cpu_limit") or ("Timeout of" in r.get("message", "") and not kernel_died(r))
           for r in records):
        found.statuses.add("timeout")


def _message(ctx: ClassContext, check_id: str, passed: bool, message: str, record, hit: bool,
             found: Classified, settings: Settings) -> str:
    module = ctx.checks[check_id].module
    if not passed and module in found.module_problem and "PASS" not in message:
        return f"exercises/{module}.py could not be imported: {found.module_problem[module]}"
    if record is None:
        return (f"not run: the student's time limit ({settings.student_timeout:g} s) was reached "
                "first" if hit else "not run: the notebook stopped before this cell")
    if record.get("cpu_limit"):
        return (f"TIMEOUT: the check cell used up the CPU-time limit ({settings.cpu():g} "
                "CPU-seconds; many threads, or an endless loop?)")
    if record.get("memory_limit"):
        return f"MEMORY: {record.get('message')}"
    return message


def classify(ctx: ClassContext, visible: Visible, settings: Settings) -> Classified:
    found = Classified()
    _probes(visible, found)
    if visible.deadline_hit:
        found.statuses.add("timeout")
        found.problems.append(f"stopped at the student's time limit ({settings.student_timeout:g} s)")
    n_cases = {c.id: c.n_cases for c in ctx.checks.values()}
    for lesson in ctx.plan:
        mine = {n: r for (nb, n), r in visible.cells.items() if nb == lesson.notebook}
        _lesson_statuses(lesson.notebook, list(mine.values()), found)
        check_cells = {cell.cell for cell in lesson.cells}
        for number, record in sorted(mine.items()):
            if number not in check_cells and record.get("outcome", "passed") != "passed":
                found.other_failed.append(f"{lesson.notebook} code cell {number}: {why_failed(record)}")
        for cell in lesson.cells:
            record = mine.get(cell.cell)
            for check_id, (passed, message) in judge_cell(cell, record, n_cases).items():
                message = _message(ctx, check_id, passed, message, record, visible.deadline_hit,
                                   found, settings)
                if check_id not in found.verdicts or not passed:
                    found.verdicts[check_id] = (passed, message)
    return found

