"""Grade a class: a folder of submissions in, a gradebook and one report per student out.

    python -m course.grade --submissions SUBS --out OUT [--jobs 2] [--lessons 00-02]
    make grade SUBMISSIONS=SUBS OUT=OUT [JOBS=2]

Every subfolder of SUBS is one student (the folder name is the student's name in the gradebook).
It holds the student's `exercises/` folder, or a whole copy of the course (also one folder deeper,
as an unpacked zip often is), or the exercise files themselves. Only top-level `exercises/*.py`
files are taken (no symlinks, nothing over 1 MiB, not `__init__.py`); the student's solutions/,
notebooks, checks or reference data are never looked at.

For each student the grader copies the pristine course as the handout has it (no `solutions/`,
see `course.handout`), lays the student's files over `exercises/`, then, each step a separate
process under an address-space limit, with a clean environment and the copy as its only
PYTHONPATH entry:
  1. probe: compile and import each exercise module the graded checks use;
  2. one strict nbval run over the lesson notebooks (`pytest --nbval --junitxml`, a fresh
     kernel per notebook) with a per-cell time limit, both steps under a per-student limit.
A check earns its points when its check cell printed `PASS <id> (<n> cases)`, the line the check
prints when every case agrees with the recorded reference. Students run in parallel, `--jobs`
at a time.

Written to OUT: gradebook.csv, results.json, reports/<student>.md, raw/<student>/ (probe output,
junit XML, the cells' outputs, pytest's output) for anyone who wants to dig.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from course import ROOT

POINTS_FILE = ROOT / "course" / "grading_points.toml"

# A student's status: the first of these that applies (the report lists every problem found).
STATUSES = {
    "no-submission": "no exercises/*.py found in the student's folder; every check scores 0",
    "grader-error": "the grader itself failed on this submission (a bug to report); see raw/",
    "syntax-error": "an exercise file the graded checks use does not compile; the checks that "
                    "need it score 0, the others are graded",
    "import-error": "an exercise file raises when imported (an exception at module level, an "
                    "import of something the course does not have, such as `solutions`); the "
                    "checks that need it score 0, the others are graded",
    "timeout": "a check cell ran past the per-cell limit (it scores 0 and the notebook goes "
               "on), or the student's total time ran out (the cells not reached score 0)",
    "memory-limit": "the student's code hit the memory limit (MemoryError, or torch could not "
                    "allocate); the check that did scores 0",
    "crashed": "a kernel died (a hard crash in the student's code, os._exit, a segfault) or "
               "nbval could not run a notebook; the checks not reached score 0",
    "ok": "every graded notebook ran to its end within the limits; points are what the checks "
          "gave, which may be 0",
}

CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(")
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.py$")
MAX_FILE_BYTES = 1024 * 1024
MEMORY_WORDS = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "std::bad_alloc",
                "Cannot allocate memory")
FLAG_NAMES = {  # identifiers (and module strings) in a student's code worth a human look
    "solutions": "mentions-solutions", "course": "imports-course", "reference_data":
    "mentions-reference-data", "subprocess": "runs-processes", "system": "runs-processes",
    "ctypes": "uses-ctypes", "importlib": "dynamic-import", "__import__": "dynamic-import",
    "exec": "exec-or-eval", "eval": "exec-or-eval", "builtins": "patches-builtins",
}


# ---------------------------------------------------------------------------- what is graded

@dataclass
class CheckCell:
    notebook: str
    cell: int              # nbval's number: the index among the notebook's code cells
    checks: list[str]      # check ids, in the order the cell calls them


@dataclass
class Lesson:
    number: str
    notebook: str
    cells: list[CheckCell]

    @property
    def checks(self) -> list[str]:
        return [c for cell in self.cells for c in cell.checks]


def check_objects():
    """Name `check_<x>` -> {lesson module: Check}, from course/checks/lesson*.py."""
    import importlib
    import pkgutil

    import course.checks as package
    from course.checks import Check

    names: dict[str, dict[str, Check]] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("lesson"):
            module = importlib.import_module(f"course.checks.{info.name}")
            for name, value in vars(module).items():
                if isinstance(value, Check) and name.startswith("check_"):
                    names.setdefault(name, {})[info.name] = value
    return names


def parse_lessons(values: list[str] | None) -> list[str] | None:
    """'00-02', '0,1', '3' -> ['00', '01', '02'] ...; None means every lesson."""
    if not values:
        return None
    found: list[str] = []
    for value in values:
        for part in filter(None, re.split(r"[,\s]+", value)):
            if "-" in part:
                low, high = part.split("-", 1)
                found += [f"{n:02d}" for n in range(int(low), int(high) + 1)]
            else:
                found.append(f"{int(part):02d}")
    return sorted(set(found))


def lesson_plan(course_dir: Path, lessons: list[str] | None = None) -> list[Lesson]:
    """The notebooks to run and the checks their check cells call, read from the notebooks."""
    import nbformat

    named = check_objects()
    notebooks = sorted((course_dir / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    present = {p.name[:2] for p in notebooks}
    if lessons is not None:
        missing = sorted(set(lessons) - present)
        if missing:
            raise SystemExit(f"no notebook for lesson(s) {', '.join(missing)} in {course_dir / 'notebooks'}")
        notebooks = [p for p in notebooks if p.name[:2] in lessons]
    plan = []
    for path in notebooks:
        number = path.name[:2]
        notebook = nbformat.read(path, as_version=4)
        cells, code_index = [], 0
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            if "check" in cell.get("metadata", {}).get("tags", []):
                ids = []
                for name in CHECK_CALL.findall(cell.source):
                    owners = named.get(name)
                    if not owners:  # a helper named check_*: not graded, but say so
                        print(f"warning: {path.name}, code cell {code_index}: {name} is no Check "
                              "in course/checks/lesson*.py; not graded", file=sys.stderr)
                        continue
                    check = owners.get(f"lesson{number}") or next(iter(owners.values()))
                    ids.append(check.id)
                if ids:
                    cells.append(CheckCell(path.name, code_index, ids))
            code_index += 1
        plan.append(Lesson(number, path.name, cells))
    return plan


def load_points(check_ids: list[str], path: Path | None = None) -> dict[str, float]:
    """Points per check from the TOML file: `default = 1` and a [points] table of id = points."""
    import tomllib

    path = POINTS_FILE if path is None else Path(path)
    config = tomllib.loads(path.read_text()) if path.exists() else {}
    default = float(config.get("default", 1))
    table = {str(k): float(v) for k, v in config.get("points", {}).items()}
    for check_id, value in table.items():
        if value < 0:
            raise SystemExit(f"{path}: negative points for {check_id}")
        if check_id not in check_ids:
            print(f"note: {path.name} gives points to {check_id}, which no graded check cell runs",
                  file=sys.stderr)
    return {check_id: table.get(check_id, default) for check_id in check_ids}


# ---------------------------------------------------------------------------- one submission

def find_exercises(student: Path) -> Path | None:
    """The folder whose *.py are the student's exercises (see the module docstring)."""
    direct = student / "exercises"
    if direct.is_dir() and not direct.is_symlink():
        return direct
    nested = [d / "exercises" for d in sorted(student.iterdir())
              if d.is_dir() and not d.is_symlink() and (d / "exercises").is_dir()
              and not (d / "exercises").is_symlink()]
    if len(nested) == 1:
        return nested[0]
    if any(p.suffix == ".py" for p in student.iterdir()):
        return student
    return None


def take_files(folder: Path) -> tuple[dict[str, bytes], list[str]]:
    """(file name -> content) of the exercise files taken, and what was left out and why."""
    taken, ignored = {}, []
    for path in sorted(folder.iterdir()):
        if path.suffix != ".py":
            continue
        if path.is_symlink():
            ignored.append(f"{path.name} (a symlink)")
        elif not path.is_file():
            ignored.append(f"{path.name} (not a file)")
        elif path.name == "__init__.py":
            if path.read_bytes() != (ROOT / "exercises" / "__init__.py").read_bytes():
                ignored.append(f"{path.name} (the course's own is used)")
        elif not MODULE_NAME.match(path.name):
            ignored.append(f"{path.name} (not a module name)")
        elif path.stat().st_size > MAX_FILE_BYTES:
            ignored.append(f"{path.name} (over {MAX_FILE_BYTES // 1024} KiB)")
        else:
            taken[path.name] = path.read_bytes()
    return taken, ignored


def code_flags(files: dict[str, bytes]) -> list[str]:
    """Names in the student's code an instructor may want to look at (see FLAG_NAMES)."""
    flags = set()
    for content in files.values():
        try:
            for token in tokenize.tokenize(io.BytesIO(content).readline):
                if token.type == tokenize.NAME and token.string in FLAG_NAMES:
                    flags.add(FLAG_NAMES[token.string])
                elif token.type == tokenize.STRING:
                    text = token.string.strip("'\"rbfRBF")
                    first = re.split(r"[./]", text, maxsplit=1)[0]
                    if first in ("solutions", "course") or "reference_data" in text:
                        flags.add(FLAG_NAMES.get(first, "mentions-reference-data")
                                  if "reference_data" not in text else "mentions-reference-data")
        except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, IndentationError):
            continue
    return sorted(flags)


def shipped_extras(student: Path, exercises: Path | None) -> list[str]:
    """Course folders the submission ships besides its exercises (all ignored), two levels deep."""
    extras = []
    names = ("solutions", "notebooks", "course", "tests")
    for first in sorted(student.iterdir()):
        if not first.is_dir() or first.is_symlink():
            continue
        if first.name in names:
            extras.append(f"{first.name}/")
        elif exercises is not None and exercises.parent == first:
            extras += [f"{first.name}/{n}/" for n in names if (first / n).is_dir()]
    return extras


@dataclass
class CheckResult:
    id: str
    lesson: str
    points: float
    earned: float
    passed: bool
    message: str


@dataclass
class StudentResult:
    student: str
    status: str
    total: float
    maximum: float
    checks: list[CheckResult]
    problems: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    other_failed_cells: list[str] = field(default_factory=list)
    seconds: float = 0.0
    lesson_seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class Settings:
    cell_timeout: float = 60
    student_timeout: float = 600
    import_timeout: float = 60
    memory_mib: int = 4096
    fsize_mib: int = 1024
    keep: bool = False


def child_env(workspace: Path, home: Path, shared: Path) -> dict[str, str]:
    """A clean environment: nothing of the instructor's (PYTHONPATH, COURSE_REFERENCE=live...)."""
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home), "TMPDIR": str(home / "tmp"), "IPYTHONDIR": str(home / "ipython"),
        "MPLCONFIGDIR": str(shared / "matplotlib"),
        "PYTHONPATH": str(workspace), "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
        "COURSE_REFERENCE": "recorded", "LANG": "C.UTF-8", "JUPYTER_PLATFORM_DIRS": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
    }


def run_limited(cmd: list[str], cwd: Path, env: dict, timeout: float, settings: Settings,
                stdout: Path) -> tuple[int | None, bool]:
    """Run cmd under the memory and file-size limits; kill its whole process tree at `timeout`.

    Returns (exit code or None when killed, timed out?).
    """
    import psutil

    limited = [sys.executable, "-m", "course.grade_sandbox", "limit",
               "--memory-mib", str(settings.memory_mib), "--fsize-mib", str(settings.fsize_mib),
               "--", *cmd]
    seen: dict[int, psutil.Process] = {}
    with open(stdout, "wb") as out:
        proc = subprocess.Popen(limited, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + max(timeout, 0.1)
        timed_out = False
        try:
            parent = psutil.Process(proc.pid)
        except psutil.Error:
            parent = None
        while True:
            try:
                code = proc.wait(timeout=0.25)
                break
            except subprocess.TimeoutExpired:
                pass
            if parent is not None:  # remember descendants: kernels live in their own session
                try:
                    for child in parent.children(recursive=True):
                        seen.setdefault(child.pid, child)
                except psutil.Error:
                    pass
            if time.monotonic() > deadline:
                timed_out = True
                _kill([parent] if parent else [], seen)
                proc.wait()
                code = None
                break
        _kill([], seen)  # whatever outlived its parent (a kernel nbval could not stop)
    return code, timed_out


def _kill(first, seen) -> None:
    import psutil

    for process in [*first, *seen.values()]:
        try:
            if process.is_running():
                process.kill()
        except psutil.Error:
            pass


def read_probe(path: Path) -> dict[str, dict]:
    results: dict[str, dict] = {}
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "module" in record:
            results[record["module"]] = record
    return results


def read_cells(path: Path) -> dict[tuple[str, int], dict]:
    """The grade_nbval log: (notebook, code-cell number) -> record (the call phase wins)."""
    cells: dict[tuple[str, int], dict] = {}
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            key = (record.get("notebook"), record.get("cell"))
            if record.get("when") == "call" or key not in cells:
                cells[key] = record
    return cells


def read_junit(path: Path) -> dict[tuple[str, int], tuple[str, str]]:
    """nbval's junit XML: (notebook, code-cell number) -> (passed|failed|error|skipped, message)."""
    found: dict[tuple[str, int], tuple[str, str]] = {}
    if not path.exists():
        return found
    try:
        tree = ElementTree.parse(path)
    except ElementTree.ParseError:
        return found
    for case in tree.iter("testcase"):
        match = re.fullmatch(r"Cell (\d+)", case.get("name", ""))
        if not match:
            continue
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome, message = child.tag, child.get("message", "")
                break
        notebook = case.get("classname", "").removeprefix("notebooks.")
        found[(notebook, int(match[1]))] = (outcome, message)
    return found


def judge_cell(cell: CheckCell, record: dict | None, n_cases: dict[str, int],
               junit: tuple[str, str] | None) -> dict[str, tuple[bool, str]]:
    """Check id -> (passed, message) for one check cell, from the outputs it really produced."""
    if record is None:
        return {c: (False, "") for c in cell.checks}  # reason filled in by the caller
    stdout = "".join(o["text"] for o in record["outputs"] if o["type"] == "stream")
    lines = set(stdout.splitlines())
    errors = [o for o in record["outputs"] if o["type"] == "error"]
    died = kernel_died(record)
    timed_out = not died and ("Timeout of" in record.get("message", "") or (
        junit is not None and "Timeout of" in junit[1]))
    results: dict[str, tuple[bool, str]] = {}
    failed_before = None
    for check_id in cell.checks:
        mine = [e for e in errors if _names_check(e["evalue"], check_id)]
        passed = (f"PASS {check_id} ({n_cases[check_id]} cases)" in lines and not mine
                  and failed_before is None
                  and (not errors or any(_names_check(e["evalue"], c) for e in errors
                                         for c in cell.checks if c != check_id)))
        if passed:
            results[check_id] = (True, f"PASS {check_id} ({n_cases[check_id]} cases)")
            continue
        if mine:
            message = mine[0]["evalue"].strip()
        elif died:
            message = (f"CRASHED: the kernel died (exit code {record['kernel_exit']}) while "
                       "this check cell ran (os._exit, a segfault, an abort in native code?)")
        elif timed_out:
            message = "TIMEOUT: the check cell ran past the per-cell time limit (an endless loop?)"
        elif failed_before is not None:
            message = f"not run: {failed_before} failed first in the same cell"
        elif errors:
            error = errors[0]
            message = f"the check cell raised {error['ename']}: {error['evalue'].strip()}"
        elif record.get("message"):
            message = "the check cell did not finish: " + record["message"].strip().splitlines()[-1]
        else:
            message = "no PASS line and no error (did the code print instead of return?)"
        results[check_id] = (False, message)
        failed_before = failed_before or check_id
    return results


def why_failed(record: dict) -> str:
    """One line on why a (non-check) cell failed."""
    message = record.get("message") or ""
    errors = [o for o in record.get("outputs", []) if o["type"] == "error"]
    if kernel_died(record):
        return f"the kernel died (exit code {record['kernel_exit']})"
    if "Timeout of" in message:
        return "ran past the per-cell time limit"
    if errors:
        first = errors[0]["evalue"].strip().splitlines()
        return f"{errors[0]['ename']}: {first[0] if first else ''}"
    if "Cell outputs differ" in message:
        return "its outputs differ from the committed notebook's (strict nbval)"
    lines = message.strip().splitlines()
    return lines[-1] if lines else record.get("outcome", "failed")


def kernel_died(record: dict) -> bool:
    """The kernel exited by itself during this cell (exit code -9 is nbval killing it)."""
    code = record.get("kernel_exit")
    return code is not None and code != -9


def _names_check(evalue: str, check_id: str) -> bool:
    return (evalue.startswith(f"FAIL {check_id},") or
            evalue.startswith(f"NOT IMPLEMENTED YET: {check_id} "))


def grade_student(name: str, folder: Path, pristine: Path, plan: list[Lesson],
                  points: dict[str, float], settings: Settings, scratch: Path,
                  raw: Path) -> StudentResult:
    start = time.monotonic()
    deadline = start + settings.student_timeout
    raw.mkdir(parents=True, exist_ok=True)
    from course.checks import all_checks

    checks = all_checks()
    n_cases = {c: len(checks[c].cases) for lesson in plan for c in lesson.checks}
    graded = [(lesson, c) for lesson in plan for c in lesson.checks]
    maximum = sum(points[c] for _, c in graded)

    def result(status, outcomes, **extra) -> StudentResult:
        rows = [CheckResult(c, lesson.number, points[c], points[c] if outcomes[c][0] else 0.0,
                            outcomes[c][0], outcomes[c][1]) for lesson, c in graded]
        return StudentResult(name, status, sum(r.earned for r in rows), maximum, rows,
                             seconds=round(time.monotonic() - start, 1), **extra)

    exercises = find_exercises(folder)
    files, ignored = take_files(exercises) if exercises else ({}, [])
    extras = shipped_extras(folder, exercises)
    notes = dict(flags=code_flags(files) + (["ships-solutions"] if any(
        e.rstrip("/").split("/")[-1] == "solutions" for e in extras) else []),
        taken=[f"exercises/{n}" for n in files],
        ignored=[f"exercises/{i}" for i in ignored] + [f"{e} (only exercises/*.py count)" for e in extras])
    if not files:
        return result("no-submission", {c: (False, "no submission") for _, c in graded}, **notes)

    workspace = scratch / "course"
    shutil.copytree(pristine, workspace, symlinks=False)
    for file_name, content in files.items():
        (workspace / "exercises" / file_name).write_bytes(content)
    home = scratch / "home"
    (home / "tmp").mkdir(parents=True)
    env = child_env(workspace, home, scratch.parent)
    problems: list[str] = []
    found_status: set[str] = set()

    # 1. probe: compile and import each module the graded checks use
    modules = sorted({checks[c].module for _, c in graded})
    probe_code, probe_timed_out = run_limited(
        [sys.executable, "-m", "course.grade_sandbox", "probe", *modules], workspace, env,
        min(settings.import_timeout, deadline - time.monotonic()), settings, raw / "probe.txt")
    probe = read_probe(raw / "probe.txt")
    module_problem: dict[str, str] = {}
    for module in modules:
        record = probe.get(module)
        if record is None:  # never reached: the probe stopped at an earlier module
            continue
        if record["ok"] is False:
            found_status.add(record["kind"])
            module_problem[module] = record["error"]
        elif record["ok"] is None:  # started importing, never finished
            found_status.add("timeout" if probe_timed_out else "crashed")
            module_problem[module] = (
                f"importing it did not finish within {settings.import_timeout:g} s"
                if probe_timed_out else f"importing it killed the process (exit {probe_code})")
    if not probe and not probe_timed_out and probe_code != 0:
        found_status.add("crashed")
        problems.append(f"the import probe failed (exit {probe_code}); see raw/probe.txt")
    for module, what in module_problem.items():
        problems.append(f"exercises/{module}.py: {what}")

    # 2. the notebooks: one strict nbval run over all of them, each with its own kernel
    outcomes: dict[str, tuple[bool, str]] = {}
    other_failed: list[str] = []
    cell_log, junit_path = raw / "cells.jsonl", raw / "junit.xml"
    left = deadline - time.monotonic()
    code, timed_out = None, True
    if left > 1:
        code, timed_out = run_limited(
            [sys.executable, "-m", "pytest", "-p", "nbval.plugin", "-p", "course.grade_nbval",
             "--nbval", *[f"notebooks/{lesson.notebook}" for lesson in plan],
             "--nbval-sanitize-with", "notebooks/nbval_sanitize.cfg",
             f"--nbval-cell-timeout={settings.cell_timeout:g}",
             "--nbval-kernel-startup-timeout=120",
             "-p", "no:cacheprovider", "-q", "-rN", "--tb=short", "--rootdir", str(workspace),
             "-c", "/dev/null", f"--junitxml={junit_path}"],
            workspace, {**env, "COURSE_GRADE_CELL_LOG": str(cell_log)}, left, settings,
            raw / "pytest.txt")
    cells = read_cells(cell_log)
    junit = read_junit(junit_path)
    if timed_out:
        found_status.add("timeout")
        problems.append(f"stopped at the student's time limit ({settings.student_timeout:g} s)")
    elif code not in (0, 1):
        found_status.add("crashed")
        problems.append(f"nbval stopped with exit code {code}; see raw/pytest.txt")
    lesson_seconds: dict[str, float] = {}
    for lesson in plan:
        mine = {number: r for (notebook, number), r in cells.items() if notebook == lesson.notebook}
        lesson_seconds[lesson.number] = round(sum(r.get("seconds", 0) for r in mine.values()), 1)
        texts = json.dumps(list(mine.values()))
        if any(word in texts for word in MEMORY_WORDS):
            found_status.add("memory-limit")
        if any(kernel_died(r) for r in mine.values()) or "Kernel dead" in texts:
            found_status.add("crashed")
            problems.append(f"{lesson.notebook}: the kernel died")
        if any("Timeout of" in r.get("message", "") and not kernel_died(r) for r in mine.values()):
            found_status.add("timeout")
        check_cells = {cell.cell for cell in lesson.cells}
        for number, record in sorted(mine.items()):
            if number not in check_cells and record["outcome"] != "passed":
                other_failed.append(f"{lesson.notebook} code cell {number}: {why_failed(record)}")
        for cell in lesson.cells:
            record = mine.get(cell.cell)
            verdicts = judge_cell(cell, record, n_cases, junit.get((lesson.notebook, cell.cell)))
            for check_id, (passed, message) in verdicts.items():
                module = checks[check_id].module
                if not passed and module in module_problem and "PASS" not in message:
                    message = f"exercises/{module}.py could not be imported: {module_problem[module]}"
                if record is None:
                    message = (f"not run: the student's time limit ({settings.student_timeout:g} s) "
                               "was reached first" if timed_out else
                               "not run: the notebook stopped before this cell")
                if check_id not in outcomes or not passed:
                    outcomes[check_id] = (passed, message)
    order = [s for s in STATUSES if s in found_status]
    status = order[0] if order else "ok"
    return result(status, outcomes, problems=problems, other_failed_cells=other_failed,
                  lesson_seconds=lesson_seconds, **notes)


# ---------------------------------------------------------------------------- the class

def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "_"


def students_in(submissions: Path, out: Path) -> list[Path]:
    out = out.resolve()
    found = []
    for path in sorted(submissions.iterdir()):
        if path.name.startswith(".") or not path.is_dir() or path.is_symlink():
            continue
        if path.resolve() == out or out.is_relative_to(path.resolve()):
            continue
        found.append(path)
    return found


def fmt(points: float) -> str:
    return f"{points:g}"


def write_gradebook(out: Path, plan: list[Lesson], results: list[StudentResult]) -> Path:
    columns = [c for lesson in plan for c in lesson.checks]
    path = out / "gradebook.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "status", "total", "max", *columns, "flags"])
        for r in results:
            earned = {c.id: c.earned for c in r.checks}
            writer.writerow([r.student, r.status, fmt(r.total), fmt(r.maximum),
                             *[fmt(earned[c]) for c in columns], " ".join(r.flags)])
    return path


def report_text(r: StudentResult, settings: Settings) -> str:
    lines = [f"# {r.student}: {fmt(r.total)} / {fmt(r.maximum)} points, status {r.status}", "",
             f"Status `{r.status}`: {STATUSES[r.status]}.", ""]
    lines.append(f"Graded in {r.seconds:g} s (limits: {settings.cell_timeout:g} s per cell, "
                 f"{settings.student_timeout:g} s per student, {settings.memory_mib} MiB).")
    lines.append("Files graded: " + (", ".join(r.taken) or "none"))
    if r.ignored:
        lines.append("Ignored: " + ", ".join(r.ignored))
    if r.flags:
        lines.append("Flags (worth a look, no effect on points): " + ", ".join(r.flags))
    if r.problems:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in r.problems]
    lesson = None
    for c in r.checks:
        if c.lesson != lesson:
            lesson = c.lesson
            lines += ["", f"## Lesson {lesson}", ""]
        if c.passed:
            lines.append(f"- {c.message}: {fmt(c.earned)} / {fmt(c.points)}")
        else:
            lines.append(f"- FAIL {c.id}: 0 / {fmt(c.points)}")
            lines += ["", "  ```", *[f"  {line}" for line in c.message.splitlines()], "  ```", ""]
    if r.other_failed_cells:
        lines += ["", "## Other cells that failed (not graded; often a consequence of the above)", ""]
        lines += [f"- {cell}" for cell in r.other_failed_cells]
    return "\n".join(lines).rstrip() + "\n"


def grade_class(submissions: Path, out: Path, jobs: int = 1, lessons: list[str] | None = None,
                settings: Settings | None = None, points_file: Path | None = None,
                workdir: Path | None = None) -> list[StudentResult]:
    from course.handout import build

    settings = settings or Settings()
    submissions, out = Path(submissions), Path(out)
    if not submissions.is_dir():
        raise SystemExit(f"no folder of submissions at {submissions}")
    students = students_in(submissions, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reports").mkdir(exist_ok=True)
    if workdir is not None and Path(workdir).resolve().is_relative_to(ROOT.resolve()):
        raise SystemExit("--workdir must lie outside the course: from inside it, a student's "
                         "code could reach solutions/ through a parent folder")
    root = Path(tempfile.mkdtemp(prefix="grade-", dir=workdir))
    try:
        pristine = build(root / "pristine")
        plan = lesson_plan(pristine, lessons)
        columns = [c for lesson in plan for c in lesson.checks]
        _warn_unrun(plan, lessons)
        points = load_points(columns, points_file)
        # warm matplotlib's font cache once, shared by every student's kernel
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"],
                       env=child_env(pristine, root, root), cwd=pristine,
                       capture_output=True, timeout=300)
        print(f"grading {len(students)} submission(s): lessons "
              f"{', '.join(lesson.number for lesson in plan)}, {len(columns)} checks, "
              f"{jobs} at a time", flush=True)
        started = time.monotonic()

        def one(index_student):
            index, student = index_student
            scratch = root / f"s{index:04d}"
            scratch.mkdir()
            raw = out / "raw" / safe_name(student.name)
            if raw.exists():
                shutil.rmtree(raw)
            try:
                result = grade_student(student.name, student, pristine, plan, points, settings,
                                       scratch, raw)
            except Exception as err:  # noqa: BLE001 - one student never stops the class
                import traceback

                raw.mkdir(parents=True, exist_ok=True)
                (raw / "grader-error.txt").write_text(traceback.format_exc())
                result = StudentResult(student.name, "grader-error", 0.0,
                                       sum(points.values()),
                                       [CheckResult(c, lesson.number, points[c], 0.0, False,
                                                    f"grader error: {err}")
                                        for lesson in plan for c in lesson.checks],
                                       problems=[f"grader error: {err!r}"])
            finally:
                if not settings.keep:
                    shutil.rmtree(scratch, ignore_errors=True)
            (out / "reports" / f"{safe_name(student.name)}.md").write_text(
                report_text(result, settings))
            print(f"  {student.name}: {result.status}, {fmt(result.total)}/{fmt(result.maximum)}"
                  f" in {result.seconds:g} s", flush=True)
            return result

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, enumerate(students)))
        elapsed = time.monotonic() - started
        write_gradebook(out, plan, results)
        (out / "results.json").write_text(json.dumps({
            "lessons": [lesson.number for lesson in plan], "checks": columns, "points": points,
            "seconds": round(elapsed, 1), "jobs": jobs, "settings": asdict(settings),
            "students": [asdict(r) for r in results]}, indent=1))
        print(f"graded {len(results)} submission(s) in {elapsed:.1f} s; "
              f"gradebook: {out / 'gradebook.csv'}, reports: {out / 'reports'}", flush=True)
        return results
    finally:
        if not settings.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"working copies kept in {root}")


def _warn_unrun(plan: list[Lesson], lessons: list[str] | None) -> None:
    from course.checks import all_checks

    run = {c for lesson in plan for c in lesson.checks}
    numbers = {lesson.number for lesson in plan}
    for check in all_checks().values():
        if check.lesson in numbers and check.id not in run:
            print(f"warning: no check cell of lesson {check.lesson} runs {check.id}; not graded",
                  file=sys.stderr)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="grade a folder of submissions with nbval; see docs/instructors.md",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--submissions", required=True, type=Path,
                        help="folder with one subfolder per student")
    parser.add_argument("--out", required=True, type=Path, help="where the gradebook goes")
    parser.add_argument("--jobs", type=int, default=1, help="students graded at the same time")
    parser.add_argument("--lessons", nargs="+", help="only these lessons, e.g. 00-02 or 01,03")
    parser.add_argument("--points", type=Path, default=POINTS_FILE, help="points per check (TOML)")
    parser.add_argument("--cell-timeout", type=float, default=Settings.cell_timeout,
                        help="seconds one notebook cell may run")
    parser.add_argument("--student-timeout", type=float, default=Settings.student_timeout,
                        help="seconds for all of one student's notebooks together")
    parser.add_argument("--import-timeout", type=float, default=Settings.import_timeout,
                        help="seconds to import the student's modules (the probe)")
    parser.add_argument("--memory-limit", type=int, default=Settings.memory_mib,
                        help="address-space limit per process, MiB (0: none)")
    parser.add_argument("--keep", action="store_true", help="keep the working copies (debugging)")
    parser.add_argument("--workdir", type=Path, help="where working copies go (default: system tmp)")
    args = parser.parse_args(argv)
    if not str(args.submissions).strip() or not str(args.out).strip():
        parser.error("give both folders: make grade SUBMISSIONS=<dir> OUT=<dir>")
    settings = Settings(cell_timeout=args.cell_timeout, student_timeout=args.student_timeout,
                        import_timeout=args.import_timeout, memory_mib=args.memory_limit,
                        keep=args.keep)
    grade_class(args.submissions, args.out, args.jobs, parse_lessons(args.lessons), settings,
                args.points, args.workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
