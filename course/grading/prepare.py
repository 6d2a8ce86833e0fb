"""What every student of a run shares, built once in the grader's process: the pristine handout
(compiled once, bound read-only into every sandbox), the plan, one `GradedCheck` per gradebook
column with its hidden cases and the solutions' outputs on them, and the fork server."""
from __future__ import annotations

import compileall
import gc
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course import ROOT
from course.checks import depends
from course.confirm import flat
from course.confirm.entries import hidden_entry as entry_with_calls
from course.grading import bytecode
from course.grading import identity as ids
from course.grading.hidden import confirm as hidden
from course.grading.plan import Lesson, lesson_plan, load_points, warn_unrun
from course.grading.processes import ForkServer
from course.grading.sandbox import bwrap_problem, fork_server, python_roots
from course.grading.settings import Settings

SANDBOX_FILES = ("cells.py", "nbval_plugin.py")  # the grader's files that run inside sandboxes
HIDDEN_FILES = ("harness.py", "standins.py", "flat.py")  # torch-only: what runs the hidden cases


class PlanError(SystemExit):
    """The chosen lessons cannot be graded."""


@dataclass
class GradedCheck:
    """One column of the gradebook: a check, its points, and its hidden cases."""
    id: str
    lesson: str
    points: float
    target: str            # "<module>:<attribute>" in exercises/
    n_cases: int           # visible cases: the PASS line says how many
    index: int             # its entry in the hidden cases file
    cases: list = field(default_factory=list)     # hidden cases (inputs only)
    expected: list = field(default_factory=list)  # the solutions' outputs on them
    # the checks whose exercises this one calls (directly or not), each with what a stand-in
    # replaces; and the entry with the reference's recorded calls, for judging it on its own
    uses: dict[str, tuple[str, ...]] = field(default_factory=dict)
    isolated: dict | None = None

    @property
    def module(self) -> str:
        return self.target.split(":")[0]


@dataclass
class ClassContext:
    pristine: Path                 # the handout: no solutions/, no grader; compiled
    grader: Path                   # cells.py, nbval_plugin.py, items.json (bound read-only)
    hidden: Path                   # harness.py, standins.py and cases.pt (bound read-only)
    plan: list[Lesson]
    checks: dict[str, GradedCheck]  # in gradebook column order
    stubs: dict[str, bytes]        # the handout's exercises/*.py, for what a student left out
    server: ForkServer | None = None

    @property
    def columns(self) -> list[str]:
        return list(self.checks)

    @property
    def modules(self) -> list[str]:
        return sorted(name[:-3] for name in self.stubs if name != "__init__.py")

    def graded_modules(self) -> list[str]:
        return sorted({c.module for c in self.checks.values()})


def hidden_entry(check, seed: int) -> tuple[dict, list, list]:
    """(the entry the harness runs, the cases, the solutions' outputs) for one check: the one
    place that says what a hidden run of a check gets. The entry carries the call tables of the
    exercises this one calls, so the harness judges it alone (course/confirm/entries.py)."""
    cases = hidden.draw_cases(check, seed)
    return entry_with_calls(check, cases), cases, hidden.expected_outputs(check, cases)


def plain(entry: dict) -> dict:
    """The entry without its call tables: what every hidden run gets first (the tables hold the
    reference's outputs of the exercises this one calls, so they enter a sandbox only where one
    of those exercises fails for this student, and only that exercise's calls)."""
    return {"target": entry["target"], "cases": entry["cases"]}


def _graded(plan: list[Lesson], points_file: Path | None, seed: int):
    """The gradebook's columns as GradedChecks, and the hidden entries the harness runs."""
    from course.checks import all_checks

    columns = [(lesson.number, c) for lesson in plan for c in lesson.checks]
    if not columns:
        raise PlanError("make grade: the chosen lessons have no graded check cells")
    points = load_points([c for _, c in columns], points_file)
    checks, entries = {}, []
    registry = all_checks()
    for index, (lesson, check_id) in enumerate(columns):
        check = registry[check_id]
        entry, cases, expected = hidden_entry(check, seed)
        entries.append(plain(entry))
        uses = {used.id: used.provides for used in depends.closure(check)}
        checks[check_id] = GradedCheck(check_id, lesson, points[check_id], check.target,
                                       len(check.cases), index, cases, expected, uses,
                                       entry if "calls" in entry else None)
    return checks, entries


def cell_items(plan: list[Lesson], modules: list[str]) -> list[dict]:
    """What the check-cell process runs, in order: imports of the graded modules, then cells."""
    items = [{"kind": "probe", "module": m} for m in modules]
    for lesson in plan:
        for cell in lesson.cells:
            items.append({"kind": "cell", "lesson": lesson.number, "notebook": lesson.notebook,
                          "cell": cell.cell, "source": cell.source, "setup": cell.setup})
    return items


def only_plan(plan: list[Lesson], check_id: str) -> list[Lesson]:
    """The plan cut to the one check cell that runs `check_id` (ONLY=): its lesson, that cell,
    that check."""
    from dataclasses import replace

    for lesson in plan:
        for cell in lesson.cells:
            if check_id in cell.checks:
                return [Lesson(lesson.number, lesson.notebook, [replace(cell, checks=[check_id])])]
    raise PlanError(f"make grade: ONLY={check_id}: no check cell of the graded lessons "
                    f"({', '.join(lesson.number for lesson in plan)}) runs it")


def prepare(root: Path, lessons: list[str] | None, points_file: Path | None, seed: int,
            settings: Settings, fork: bool = True, only: str | None = None) -> ClassContext:
    """Build the class context under `root` (the run's private working folder)."""
    ids.configure(None if settings.unsafe else job_slots(root))
    import torch

    # the grader's own tensors (references, hidden results) are small: a pool of threads per
    # operation only costs their wake-ups (three times the CPU-seconds of the set-up, and more
    # on a busy machine)
    torch.set_num_threads(1)
    server = fork_server(root / "forkserver.log") if fork and not settings.unsafe else None
    compiling = bytecode.in_background()  # no sandbox may compile the environment's modules
    try:  # the server imports torch meanwhile
        ctx = _context(root, lessons, points_file, seed, server, only)
    except BaseException:
        if server is not None:
            server.close()
        raise
    if server is not None and not server.wait_ready():
        server.close()
        ctx.server = None  # every sandboxed process then starts by exec: slower, the same grades
    compiling.join()
    # what the set-up made (torch, the course, the references) lives until the end: out of the
    # cycle collector's sight, so that its full collections (and the one at exit, seconds long)
    # no longer walk it
    gc.freeze()
    return ctx


def job_slots(root: Path) -> ids.Slots | None:
    """Run as root: an unprivileged uid per job slot (course/grading/identity.py), when this host
    allows it; else None, and a warning that the sandboxes have no process limit."""
    if os.geteuid() != 0:
        return None
    why = ids.ids_free()
    if why is None:
        try:
            slots = ids.Slots(root, python_roots())
        except OSError as err:  # every block held, or the locks' folder not root's own
            why = str(err)
        else:
            why = bwrap_problem(slots.identity(0))
            if why is None:
                return slots
            slots.close()
        os.chmod(root, 0o700)
    print(f"warning: grading as root, and the sandboxes cannot run as the unprivileged uids "
          f"{ids.SLOT_UID}+ ({why}): they run as root, where the kernel ignores their process "
          "limit. Grade as a normal user, or see docs/trust-boundary.md", file=sys.stderr)
    return None


def _share(root: Path) -> None:
    """The run's files readable by the job slots' group (root), and by no other user."""
    if not ids.configured():
        return
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            os.chown(path, 0, ids.SLOT_GID)
            os.chmod(path, path.stat().st_mode | (0o050 if path.is_dir() else 0o040))


def _context(root: Path, lessons, points_file, seed: int, server, only=None) -> ClassContext:
    from course.handout import build

    pristine = build(root / "pristine")  # the student release: no solutions/, no grader
    compileall.compile_dir(pristine, quiet=1, workers=1)  # read-only in the sandbox: compile once
    plan = lesson_plan(pristine, lessons)
    warn_unrun(plan)
    if only is not None:
        from course.checks.registry import canonical

        plan = only_plan(plan, canonical(only))
    checks, entries = _graded(plan, points_file, seed)
    grader, cases = root / "grader", root / "hidden"
    grader.mkdir()
    cases.mkdir()
    # every student's checks load the recorded references: from flat sidecars, 10x sooner
    flat.write_sidecars(pristine / "course" / "reference_data", grader / "reference")
    for name in SANDBOX_FILES:
        shutil.copy(ROOT / "course" / "grading" / name, grader / name)
    for name in HIDDEN_FILES:
        shutil.copy(ROOT / "course" / "confirm" / name, cases / name)
    compileall.compile_dir(cases, quiet=1, workers=1)  # what every hidden run imports: once
    flat.save(entries, cases / "cases.pt")
    stubs = {p.name: p.read_bytes() for p in sorted((pristine / "exercises").glob("*.py"))}
    ctx = ClassContext(pristine, grader, cases, plan, checks, stubs, server)
    (grader / "items.json").write_text(json.dumps(cell_items(plan, ctx.graded_modules())))
    _share(root)
    return ctx
