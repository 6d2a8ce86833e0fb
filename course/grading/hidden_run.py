"""Stage 4 of grading a student: each exercise whose check printed PASS runs on the run's hidden
cases, in a fresh sandbox that holds only a copy of the student's exercises/, the torch-only
harness and the cases (never the seed, never the expected outputs). Each check's results come
back in one file the grader made (the sandbox can write that file, up to the file-size limit,
and create none), are validated as untrusted data (course/grading/untrusted.py) and judged
here, in the grader's process, against the solutions' outputs."""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path

from course.confirm import flat
from course.confirm import judge as judging
from course.grading.hidden.confirm import specs
from course.grading.prepare import ClassContext, GradedCheck
from course.grading.sandbox import Layout, Sandbox, interpreter
from course.grading.settings import Settings
from course.grading.supervise import supervise
from course.grading.untrusted import Untrusted, load_results
from course.grading.visible import died_message, memory_message

SUB, HIDDEN, RESULTS = "/sub", "/hidden", "/results"
ISOLATED = "/tmp/cases-isolated.pt"  # the second pass's entries (with call tables)
HARNESS_LOG = "student-output.txt"  # where the harness sends the student's printing: discarded


_specs = functools.cache(specs)  # the registry, filled once (specs() lists the lesson modules)


@dataclass
class HiddenRun:
    confirmations: dict[str, "Confirmation"]   # by check id
    cpu: float = 0.0                           # CPU-seconds of the sandboxed processes


@dataclass
class Confirmation:
    confirmed: bool
    why: str = ""                 # why not, for the report
    case: str | None = None       # the name (kind) of the hidden case that failed
    timed_out: bool = False
    memory: bool = False          # stopped for the sandbox's memory


def _layout(ctx: ClassContext, settings: Settings, files: dict[str, bytes],
            results: dict[int, Path], isolated: bytes | None = None) -> Layout:
    exercises = {f"{SUB}/exercises/{name}": data for name, data in {**ctx.stubs, **files}.items()}
    if isolated is not None:
        exercises[ISOLATED] = isolated
    return Layout(
        tmpfs={"/tmp": settings.tmp_bytes(), SUB: settings.tmp_bytes(), RESULTS: 1 << 20},
        ro={HIDDEN: ctx.hidden}, discard=[f"{RESULTS}/{HARNESS_LOG}"],
        rw={f"{RESULTS}/{index}.pt": path for index, path in results.items()},
        files=exercises,
        env={"PYTHONPATH": SUB}, cwd=SUB)


def judge(check: GradedCheck, got: list[dict]) -> Confirmation:
    """Compare validated results with the solutions' case by case: the first case that
    differs names the kind of input that failed."""
    spec = _specs()[check.id]
    for case, want, mine in zip(check.cases, check.expected, got):
        problem = judging.judge([case], [want], [mine], spec.atol, spec.rtol)
        if problem:
            return Confirmation(False, problem, case["name"])
    return Confirmation(True)


def _confirmation(check: GradedCheck, outcome, path: Path, settings: Settings,
                  deadline: float) -> Confirmation:
    if time.monotonic() >= deadline:  # the student's budget covers the grader's comparison too
        return Confirmation(False, "not judged: the student's time limit was reached first")
    if outcome is None:
        return Confirmation(False, "the hidden run did not reach this check (the student's time limit)")
    if outcome.timed_out or outcome.cpu_limit:
        limit = (f"its CPU-time limit ({settings.cpu():g} s)" if outcome.cpu_limit
                 else f"{settings.hidden_timeout:g} s")
        return Confirmation(False, f"the hidden run of this check ran past {limit}", timed_out=True)
    if outcome.memory_limit:
        return Confirmation(False, f"the hidden run of this check: {memory_message(settings)}",
                            memory=True)
    if outcome.done is None:
        return Confirmation(False, f"during the hidden run, {died_message(outcome.exit_code)}")
    try:
        got = load_results(path, check.expected)
    except Untrusted as problem:
        return Confirmation(False, f"the hidden run's result was refused: {problem}")
    return judge(check, got)


def isolated_entry(check: GradedCheck, failing: set[str]) -> tuple[dict, list[str]] | None:
    """`check`'s entry judged without the exercises it calls that fail for this student: only
    their calls are answered from the reference's recorded tables (those tables hold the
    reference's outputs, so a passing exercise is never handed in); None where none fails."""
    blockers = [c for c in check.uses if c in failing]
    if check.isolated is None or not blockers:
        return None
    targets = {t for c in blockers for t in check.uses[c]} & set(check.isolated["stand_ins"])
    if not targets:
        return None
    calls = [[call for call in table if call["target"] in targets]
             for table in check.isolated["calls"]]
    return ({"target": check.target, "cases": check.cases, "stand_ins": sorted(targets),
             "calls": calls}, blockers)


def _isolated_cases(ctx: ClassContext, entries: dict[int, dict], run: set[int]) -> bytes:
    """The cases file of a run where some checks carry stand-ins: their entries, the plain hidden
    cases of the other checks of the run, nothing for the checks it does not run."""
    every = [entries.get(c.index, {"target": c.target, "cases": c.cases if c.index in run else []})
             for c in ctx.checks.values()]
    try:
        return flat.dumps(every)  # the harness reads it in a fraction of torch.load's time
    except flat.Unsupported:
        import io

        import torch

        buffer = io.BytesIO()
        torch.save(every, buffer)
        return buffer.getvalue()


def run_hidden(ctx: ClassContext, settings: Settings, files: dict[str, bytes],
               check_ids: list[str], deadline: float, scratch: Path, raw: Path,
               root: Path, isolated: dict[str, dict] | None = None) -> HiddenRun:
    """Each of `check_ids`' confirmation; with `isolated` (check id -> its isolated_entry), those
    checks run with the stand-ins their entries carry (the others of `check_ids` as they are)."""
    if not check_ids:
        return HiddenRun({})
    checks = [ctx.checks[c] for c in check_ids]
    folder = scratch / ("results-isolated" if isolated else "results")
    folder.mkdir(parents=True, exist_ok=True)
    paths = {c.index: folder / f"{c.index}.pt" for c in checks}
    for path in paths.values():
        path.touch()
    extra = None if not isolated else _isolated_cases(
        ctx, {ctx.checks[c].index: entry for c, entry in isolated.items()},
        {c.index for c in checks})
    box = Sandbox(_layout(ctx, settings, files, paths, extra), settings.unsafe, root, ctx.server)
    limits = settings.limits("hidden", forked=ctx.server is not None)
    cases = ISOLATED if isolated else f"{HIDDEN}/cases.pt"
    log = raw / ("hidden-isolated-output.txt" if isolated else "hidden-output.txt")
    run = supervise(
        lambda rest: box.start([interpreter(), box.p(f"{HIDDEN}/harness.py"), box.p(cases),
                                box.p(RESULTS), ",".join(map(str, rest))], limits),
        [c.index for c in checks], settings.hidden_timeout, deadline, log)
    return HiddenRun({c.id: _confirmation(c, run.results.get(c.index), paths[c.index], settings,
                                          deadline) for c in checks}, run.cpu)
