"""Stage 2 of grading a student: the lessons' check cells (or, with FULL=1, whole notebooks under
strict nbval) in a sandbox that holds the pristine handout read-only, the student's exercise
files, and a private scratch folder and /tmp of a fixed size."""
from __future__ import annotations

import json
import os
import select
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from course.confirm.flat import FOLDER_VARIABLE
from course.grading.prepare import ClassContext
from course.grading.sandbox import Layout, Sandbox, interpreter
from course.grading.settings import Settings
from course.grading.supervise import CHUNK, Lines, Log, parse, supervise

COURSE, GRADER = "/course", "/grader"
CELL_LOG = "/grade/cells.jsonl"


@dataclass
class Visible:
    """What the visible run produced: import probes by module, cell records by (notebook,
    cell), and whether the student's deadline stopped it."""
    probes: dict[str, dict] = field(default_factory=dict)
    cells: dict[tuple[str, int], dict] = field(default_factory=dict)
    deadline_hit: bool = False
    cpu: float = 0.0            # CPU-seconds of the sandboxed processes (where known)


def course_layout(ctx: ClassContext, settings: Settings, files: dict[str, bytes]) -> Layout:
    """/course: a private folder of fixed size, the handout's folders bound read-only into it,
    the student's exercises/ (stubs for what they did not hand in) copied in."""
    ro = {f"{COURSE}/{p.name}": p for p in sorted(ctx.pristine.iterdir()) if p.name != "exercises"}
    ro[GRADER] = ctx.grader
    exercises = {**ctx.stubs, **files}
    return Layout(tmpfs={"/tmp": settings.tmp_bytes(), COURSE: settings.tmp_bytes()}, ro=ro,
                  files={f"{COURSE}/exercises/{name}": data for name, data in exercises.items()},
                  env={"PYTHONPATH": COURSE, FOLDER_VARIABLE: f"{GRADER}/reference"},
                  cwd=COURSE)


def _clean(record: dict) -> dict:
    """A record as the verdict code expects it, whatever the sandboxed process wrote (it runs
    the student's code, so it may write anything: the worst it can do is fail its own checks)."""
    outputs = []
    for output in record.get("outputs") or []:
        if isinstance(output, dict) and output.get("type") in ("stream", "error"):
            outputs.append({k: str(output.get(k, ""))[:8000]
                            for k in ("type", "name", "text", "ename", "evalue")})
    chains = [record.get("raised")] + [o.get("raised") for o in record.get("outputs") or []
                                        if isinstance(o, dict) and o.get("type") == "error"]
    raised = [[str(part)[:300] for part in pair[:2]] for chain in chains
              if isinstance(chain, list) for pair in chain[:8]
              if isinstance(pair, list) and len(pair) >= 2]
    clean = {"outputs": outputs, "message": str(record.get("message", ""))[:8000],
             "kernel_exit": None, "seconds": 0.0, "raised": raised}
    for key in ("ok", "kind", "error"):
        if key in record:
            clean[key] = record[key] if record[key] in (True, False, None) else str(record[key])[:8000]
    return clean


def _outcome_record(outcome, settings: Settings) -> dict:
    if outcome.done is not None and isinstance(outcome.done.get("record"), dict):
        return _clean(outcome.done["record"])
    if outcome.cpu_limit:
        return {"ok": None, "cpu_limit": True, "outputs": [], "kernel_exit": None, "raised": [],
                "message": f"CPU-time limit of {settings.cpu():g} s exceeded"}
    if outcome.memory_limit:
        return {"ok": None, "memory_limit": True, "outputs": [], "kernel_exit": None,
                "raised": [], "message": memory_message(settings)}
    if outcome.timed_out:
        return {"ok": None, "timed_out": True, "outputs": [], "kernel_exit": None, "raised": [],
                "message": f"Timeout of {settings.cell_timeout:g} seconds exceeded"}
    return {"ok": None, "outputs": [], "kernel_exit": outcome.exit_code, "raised": [],
            "signalled": outcome.exit_code is not None and outcome.exit_code < 0,
            "message": died_message(outcome.exit_code)}


def memory_message(settings: Settings) -> str:
    return (f"the sandbox held more memory than its limit of {settings.memory_mib} MiB (its "
            "processes and its files in /tmp and /dev/shm together)")


def died_message(code: int | None) -> str:
    """Why a process the grader did not stop ended: its exit code, or the signal that killed it
    (sent from inside the sandbox, or by the kernel: never a limit of the grader's)."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return (f"the process was killed by {name}, sent from inside its sandbox or by the "
                f"kernel (no limit of the grader's was reached; exit code {code})")
    return f"the process died (exit code {code})"


def run_check_cells(ctx: ClassContext, settings: Settings, files: dict[str, bytes],
                    deadline: float, raw: Path, root: Path) -> Visible:
    """The graded modules' imports and every check cell, in one process (a fresh one after a
    crash or a timeout)."""
    box = Sandbox(course_layout(ctx, settings, files), settings.unsafe, root, ctx.server)
    items = json.loads((ctx.grader / "items.json").read_text())
    limits = settings.limits("cells", forked=ctx.server is not None)
    run = supervise(
        lambda rest: box.start([interpreter(), box.p(f"{GRADER}/cells.py"),
                                box.p(f"{GRADER}/items.json"), ",".join(map(str, rest))],
                               limits),
        list(range(len(items))), settings.cell_timeout, deadline, raw / "sandbox-output.txt")
    found = Visible(deadline_hit=run.deadline_hit, cpu=run.cpu)
    for index, item in enumerate(items):
        outcome = run.results.get(index)
        if outcome is None:
            continue
        record = _outcome_record(outcome, settings)
        if item["kind"] == "probe":
            found.probes[item["module"]] = record
        else:
            found.cells[(item["notebook"], item["cell"])] = record
    return found


def _pytest_argv(ctx: ClassContext, settings: Settings, box: Sandbox) -> list[str]:
    return [interpreter(), "-m", "pytest", "-p", "nbval.plugin", "-p", "nbval_plugin", "--nbval",
            *[box.p(f"{COURSE}/notebooks/{lesson.notebook}") for lesson in ctx.plan],
            "--nbval-sanitize-with", box.p(f"{COURSE}/notebooks/nbval_sanitize.cfg"),
            f"--nbval-cell-timeout={settings.cell_timeout:g}", "--nbval-kernel-startup-timeout=120",
            "-p", "no:cacheprovider", "-q", "-rN", "--tb=short", "-c", "/dev/null"]


def _follow(proc, deadline: float, log: Log) -> bool:
    """Copy a process's output into `log` (capped) until it ends; True if the deadline hit."""
    open_fds = {proc.out, proc.err}
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            proc.kill()
            return True
        if not open_fds:
            time.sleep(0.1)
            continue
        for fd in select.select(list(open_fds), [], [], 0.5)[0]:
            data = os.read(fd, CHUNK)
            if data:
                log.write(data)
            else:
                open_fds.discard(fd)
    return False


def _cell_log(path: Path) -> dict[tuple[str, int], dict]:
    cells: dict[tuple[str, int], dict] = {}
    lines = Lines()
    with open(path, "rb") as handle:
        for line in lines.feed(handle.read(64 << 20) + b"\n")[:100_000]:
            record = parse(line)
            if record is None or not isinstance(record.get("cell"), int):
                continue
            key = (str(record.get("notebook")), record["cell"])
            if record.get("when") == "call" or key not in cells:
                cells[key] = {**_clean(record), **{k: record[k] for k in ("outcome", "when")
                                                   if isinstance(record.get(k), str)},
                              "kernel_exit": record.get("kernel_exit")
                              if isinstance(record.get("kernel_exit"), int) else None}
    return cells


def run_full_notebooks(ctx: ClassContext, settings: Settings, files: dict[str, bytes],
                       deadline: float, raw: Path, root: Path, scratch: Path) -> Visible:
    """FULL=1: strict nbval over every graded notebook, one kernel each, in the sandbox."""
    log_file = scratch / "cells.jsonl"
    log_file.touch()
    layout = course_layout(ctx, settings, files)
    layout.rw[CELL_LOG] = log_file
    layout.env.update({"PYTHONPATH": f"{COURSE}:{GRADER}", "COURSE_GRADE_CELL_LOG": CELL_LOG})
    box = Sandbox(layout, settings.unsafe, root)  # a kernel per notebook: exec, not fork
    log = Log(raw / "pytest.txt")
    try:
        proc = box.start(_pytest_argv(ctx, settings, box), settings.limits("full"))
        try:
            hit = _follow(proc, deadline, log)
        finally:
            proc.close()
    finally:
        log.close()
    return Visible({}, _cell_log(log_file), hit)
