"""Run a sandboxed child over a list of items (notebook cells, hidden checks), one at a time,
and notice at once when it dies or hangs.

The child prints {"start": i} before item i and {"done": i, ...} after it, one JSON line each,
on its stdout (it sends the student's own output elsewhere). When the child exits before an item
is done, that item is marked dead (with the exit code) and a fresh child takes over from the next
item; when an item runs past its time limit, the child is killed with everything it started, and
the same happens. The whole run stops at the student's deadline.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course.grading.sandbox import Limits, Sandbox

MAX_LINE = 1 << 20


@dataclass
class ItemResult:
    done: dict | None = None     # the child's "done" record
    exit_code: int | None = None  # the child died during this item
    timed_out: bool = False
    seconds: float = 0.0


@dataclass
class Supervised:
    results: dict[int, ItemResult] = field(default_factory=dict)
    deadline_hit: bool = False
    restarts: int = 0


def _reader(stream, lines: queue.Queue) -> None:
    try:
        while True:
            line = stream.readline(MAX_LINE)
            if not line:
                break
            lines.put(line)
    finally:
        lines.put(None)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def supervise(sandbox: Sandbox, argv_for: Callable[[list[int]], list[str]], items: list[int],
              item_timeout: float, deadline: float, limits: Limits, log: Path,
              startup: float = 120.0) -> Supervised:
    """Run `argv_for(remaining items)` in the sandbox until every item is done, died or timed out."""
    out = Supervised()
    remaining = list(items)
    with open(log, "ab") as log_file:
        while remaining and time.monotonic() < deadline:
            proc = sandbox.popen(argv_for(remaining), limits, subprocess.PIPE, log_file)
            lines: queue.Queue = queue.Queue()
            threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
            current, started = None, time.monotonic()
            limit = min(deadline, started + startup + item_timeout)
            while True:
                try:
                    line = lines.get(timeout=max(0.05, min(0.5, limit - time.monotonic())))
                except queue.Empty:
                    line = ""
                if line is None:  # the child is gone
                    code = proc.wait()
                    if current is not None:
                        out.results[current] = ItemResult(exit_code=code,
                                                          seconds=time.monotonic() - started)
                        remaining.remove(current)
                    elif code != 0 and remaining:  # died before its first item: give up on it
                        first = remaining.pop(0)
                        out.results[first] = ItemResult(exit_code=code)
                    break
                if line:
                    try:
                        record = json.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(record, dict):
                        continue
                    if isinstance(record.get("start"), int) and record["start"] in remaining:
                        current, started = record["start"], time.monotonic()
                        limit = min(deadline, started + item_timeout)
                    elif record.get("done") == current and current is not None:
                        out.results[current] = ItemResult(done=record,
                                                          seconds=time.monotonic() - started)
                        remaining.remove(current)
                        current = None
                        limit = min(deadline, time.monotonic() + item_timeout)
                    continue
                if time.monotonic() >= limit:
                    _kill(proc)
                    if time.monotonic() >= deadline:
                        out.deadline_hit = True
                    elif current is not None:
                        out.results[current] = ItemResult(timed_out=True,
                                                          seconds=time.monotonic() - started)
                        remaining.remove(current)
                    elif remaining:
                        out.results[remaining.pop(0)] = ItemResult(timed_out=True)
                    break
            if proc.poll() is None:
                _kill(proc)
            if remaining:
                out.restarts += 1
    if remaining:
        out.deadline_hit = True
    return out
