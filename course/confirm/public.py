"""Grade me as the instructor would: the hidden-input kind of confirmation, on a public seed.

    make check HIDDEN=1      # python -m course.progress --hidden

The grader confirms every exercise on hidden cases drawn from a secret seed, in a fresh process
that sees only the student's exercises/ and torch (course/confirm/harness.py). This rehearsal
does the same on cases of the same kinds drawn from PUBLIC_SEED, which the grader refuses as its
secret seed: the cases, their expected outputs and the stand-ins' call tables are recorded by
`make reference` (course/reference.py) into course/reference_data/hidden_public.pt.gz, so the
release needs neither solutions/ nor the grader. The student's code runs in a subprocess with a
time limit and a memory limit.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import torch

from course import ROOT
from course.confirm.judge import judge
from course.confirm.standins import load as load_file

PUBLIC_SEED = 20  # public; course/grading must refuse it as the secret seed of a grading run
PUBLIC_FILE = ROOT / "course" / "reference_data" / "hidden_public.pt.gz"
HARNESS = Path(__file__).with_name("harness.py")


def load(path: Path = PUBLIC_FILE) -> list[dict]:
    return load_file(path)


def rehearse(only: list[str] | None = None, package_root: Path = ROOT, timeout: float = 30.0,
             path: Path = PUBLIC_FILE) -> dict[str, str | None]:
    """Check id -> None (confirmed on the public hidden cases) or why not."""
    entries = [e for e in load(path) if not only or e["id"] in only]
    with tempfile.TemporaryDirectory(prefix="hidden-") as folder:
        folder = Path(folder)
        cases_file = folder / "cases.pt"
        torch.save([{k: v for k, v in e.items() if k not in ("expected", "id")} for e in entries],
                   cases_file)
        done = _run(cases_file, folder, len(entries), package_root, timeout)
        verdicts = {}
        for index, entry in enumerate(entries):
            if done.get(index) is not None:
                verdicts[entry["id"]] = done[index]
                continue
            got = torch.load(folder / f"{index}.pt", weights_only=True)
            verdicts[entry["id"]] = judge(entry["cases"], entry["expected"], got,
                                          entry["atol"], entry["rtol"])
    return verdicts


MEMORY_LIMIT = 4 * 2**30  # bytes of address space for the student's code, as the grader's default


def _limit_memory() -> None:
    """In the child, before it runs anything: an allocation past the limit fails there."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(cases_file: Path, folder: Path, count: int, package_root: Path,
         timeout: float) -> dict[int, str | None]:
    """Run the harness over every entry; index -> None (results written) or why not (a time
    limit hit, the process died). A process that dies is replaced for the entries left."""
    left, problems = list(range(count)), {}
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    while left:
        process = subprocess.Popen(
            [sys.executable, str(HARNESS), str(cases_file), str(folder), ",".join(map(str, left))],
            cwd=package_root, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            preexec_fn=_limit_memory if os.name == "posix" else None)
        events: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [events.put(line) for line in process.stdout] + [
            events.put(None)], daemon=True).start()
        current = None
        while True:
            try:
                line = events.get(timeout=timeout)
            except queue.Empty:
                process.kill()
                problems[current if current is not None else left[0]] = (
                    f"ran past the time limit of {timeout:g} s (an endless loop?)")
                break
            if line is None:
                process.wait()
                for index in ([current] if current is not None else left):
                    problems[index] = f"the process died (exit code {process.returncode})"
                break
            event = json.loads(line)
            if "start" in event:
                current = event["start"]
            elif "done" in event:
                left.remove(event["done"])
                current = None
        left = [i for i in left if i not in problems]
        process.wait()
    return problems
