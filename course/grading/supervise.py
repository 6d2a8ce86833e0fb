"""Run a sandboxed child over a list of items (notebook cells, hidden checks), one at a time,
with deadlines that nothing the child does can move.

The child runs the items in order and prints {"start": i} before item i and {"done": i, ...}
after it, one JSON line each on its stdout (it sends the student's own output to its stderr).
Whatever else arrives on either pipe is read, capped and ignored: a flood, a keepalive every
10 ms, forged lines. The clock of an item starts when the item before it is done (for the first
item of a process: when the process starts, with an allowance for starting up, which ends at
its "start" line) and nothing moves it later; at the item's limit, or at the student's deadline,
the sandbox is killed with everything in it and a fresh child takes the next item.

A child that dies during an item charges that item (its exit code is the reason). One killed
for CPU time after it had finished other items gets one more try in a fresh process, since the
CPU-time limit counts the whole process: the second death charges the item for good. A death
is the CPU-time limit's only when the process had used up its CPU-seconds: a SIGKILL or SIGXCPU
sent from inside the sandbox (a kill of its own process group) is a death like any other.

Every WATCH seconds, what all the sandbox's processes use together is read (processes.Watch):
a sandbox over its share (more than a core's worth of CPU-seconds, or more memory than the
memory limit: a storm of processes or threads, files in its tmpfs) is killed at once and
charges the item, as a CPU-time or a memory death, without a second try.
"""
from __future__ import annotations

import json
import os
import select
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from course.grading.processes import LIVE, Running

MAX_LINE = 1 << 20      # a longer protocol line is dropped
LOG_CAP = 1 << 20       # bytes of a child's stderr kept in raw/, per run
CHUNK = 1 << 16
FAILED_TO_START = 125
WATCH = 0.25            # seconds between two looks at what a sandbox uses as a whole
CPU_SLACK = 0.5         # CPU-seconds: the kernel's and rusage's accounting may differ by ticks


@dataclass
class ItemResult:
    done: dict | None = None      # the child's "done" record
    exit_code: int | None = None  # the child died during this item
    timed_out: bool = False
    cpu_limit: bool = False       # killed for CPU time (twice, when it had a second try)
    memory_limit: bool = False    # killed by the watch for the sandbox's memory
    seconds: float = 0.0


@dataclass
class Supervised:
    results: dict[int, ItemResult] = field(default_factory=dict)
    deadline_hit: bool = False
    restarts: int = 0
    cpu: float = 0.0             # CPU-seconds of the children, where the sandbox tells


class Log:
    """A child's stderr, into a file, the first LOG_CAP bytes of it."""

    def __init__(self, path: Path, cap: int = LOG_CAP):
        self.file, self.cap, self.kept, self.dropped = open(path, "ab"), cap, 0, 0

    def write(self, data: bytes) -> None:
        keep = data[: max(0, self.cap - self.kept)]
        if keep:
            self.file.write(keep)
        self.kept += len(keep)
        self.dropped += len(data) - len(keep)

    def note(self, text: str) -> None:
        """The grader's own line, kept whatever the child wrote before it."""
        self.file.write(f"\n[{text}]\n".encode())

    def close(self) -> None:
        if self.dropped:
            self.file.write(f"\n[{self.dropped} more bytes of output not kept]\n".encode())
        self.file.close()


class Lines:
    """A byte stream cut into lines of at most MAX_LINE bytes (longer ones are dropped)."""

    def __init__(self):
        self.buffer, self.skipping = b"", False

    def feed(self, data: bytes) -> list[bytes]:
        found = []
        self.buffer += data
        while True:
            end = self.buffer.find(b"\n")
            if end < 0:
                if len(self.buffer) > MAX_LINE:
                    self.buffer, self.skipping = b"", True
                return found
            line, self.buffer = self.buffer[:end], self.buffer[end + 1:]
            if not self.skipping and len(line) <= MAX_LINE:
                found.append(line)
            self.skipping = False


def parse(line: bytes) -> dict | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _cpu_killed(proc: Running, code: int) -> bool:
    """Whether the CPU-time limit ended the process: SIGXCPU at the soft limit, SIGKILL at the
    hard one, and its CPU-seconds at the limit (what it was sent from inside does not count)."""
    if proc.killed or code not in (-signal.SIGXCPU, -signal.SIGKILL) or not proc.cpu_limit:
        return False
    return proc.cpu is not None and proc.cpu >= proc.cpu_limit - CPU_SLACK


class _Process:
    """One child, from its start to its end: which items it finished, and why it ended."""

    def __init__(self, run: "_Supervisor", proc: Running):
        self.run, self.proc, self.lines = run, proc, Lines()
        self.clock, self.budget = time.monotonic(), run.startup + run.item_timeout
        self.finished_any, self.started_next, self.open = False, False, {proc.out, proc.err}
        self.watched = time.monotonic()

    def follow(self) -> None:
        """Until the child ends, is killed at a limit, or every item is done."""
        run = self.run
        while run.remaining:
            now = time.monotonic()
            limit = min(run.deadline, self.clock + self.budget)
            if now >= limit:
                return self.stop(now >= run.deadline)
            code = self.proc.poll()
            if code is not None:
                self.drain()
                return self.died(code)
            if self.proc.watch is not None and now - self.watched >= WATCH:
                self.watched = now
                over = self.proc.watch.overuse()
                if over is not None:
                    return self.overused(*over)
            self.read(min(WATCH, limit - now))

    def read(self, timeout: float) -> None:
        if not self.open:
            time.sleep(min(timeout, 0.05))
            return
        for fd in select.select(list(self.open), [], [], max(0.0, timeout))[0]:
            data = os.read(fd, CHUNK)
            if not data:
                self.open.discard(fd)
            elif fd == self.proc.err:
                self.run.log.write(data)
            else:
                for line in self.lines.feed(data):
                    self.handle(parse(line))

    def drain(self) -> None:
        """What the child wrote before it ended (at most a pipe's buffer on each pipe)."""
        for _ in range(64):
            if not self.open or not select.select(list(self.open), [], [], 0)[0]:
                return
            self.read(0)

    def handle(self, record: dict | None) -> None:
        run = self.run
        if record is None or not run.remaining:
            return
        if record.get("start") == run.remaining[0] and type(record.get("start")) is int:
            if not self.started_next:  # the start-up allowance ends here: it can only shorten
                now = time.monotonic()
                self.budget = min(self.budget, now + run.item_timeout - self.clock)
            self.started_next = True
        elif record.get("done") == run.remaining[0] and type(record.get("done")) is int:
            now = time.monotonic()
            run.results[run.remaining.pop(0)] = ItemResult(done=record, seconds=now - self.clock)
            self.finished_any, self.started_next = True, False
            self.clock, self.budget = now, run.item_timeout

    def stop(self, at_deadline: bool) -> None:
        self.proc.kill()
        run = self.run
        if at_deadline:
            run.deadline_hit = True
        else:
            run.charge(ItemResult(timed_out=True, seconds=time.monotonic() - self.clock))

    def overused(self, kind: str, why: str) -> None:
        """The sandbox as a whole went over its share: killed, and the item charged."""
        self.proc.kill()
        run = self.run
        run.log.note(f"the grader stopped the sandbox: {why}")
        seconds = time.monotonic() - self.clock
        run.charge(ItemResult(exit_code=-signal.SIGKILL, cpu_limit=kind == "cpu",
                              memory_limit=kind == "memory", seconds=seconds))

    def died(self, code: int) -> None:
        run, item = self.run, self.run.remaining[0] if self.run.remaining else None
        if item is None:
            return
        seconds = time.monotonic() - self.clock
        if _cpu_killed(self.proc, code):
            if self.finished_any and item not in run.retried:
                run.retried.add(item)  # the CPU time of the items before it counted too
                return
            return run.charge(ItemResult(exit_code=code, cpu_limit=True, seconds=seconds))
        if self.started_next or not self.finished_any or code != 0:
            run.charge(ItemResult(exit_code=code, seconds=seconds))


@dataclass
class _Supervisor:
    start: Callable[[list[int]], Running]
    remaining: list[int]
    item_timeout: float
    deadline: float
    startup: float
    log: Log
    results: dict[int, ItemResult] = field(default_factory=dict)
    retried: set[int] = field(default_factory=set)
    deadline_hit: bool = False
    cpu: float = 0.0

    def charge(self, result: ItemResult) -> None:
        self.results[self.remaining.pop(0)] = result


def supervise(start: Callable[[list[int]], Running], items: list[int], item_timeout: float,
              deadline: float, log: Path, startup: float = 60.0) -> Supervised:
    """Run `start(remaining items)` until every item is done, died or timed out, or the
    deadline (a time.monotonic() value) passes."""
    run = _Supervisor(start, list(items), item_timeout, deadline, startup, Log(log))
    restarts = -1
    try:
        while run.remaining and time.monotonic() < run.deadline and not LIVE.stopped.is_set():
            restarts += 1
            try:
                proc = start(list(run.remaining))
            except OSError as problem:
                run.log.write(f"the sandbox could not start: {problem}\n".encode())
                run.charge(ItemResult(exit_code=FAILED_TO_START))
                continue
            try:
                _Process(run, proc).follow()
            finally:
                proc.close()
                run.cpu += proc.cpu or 0.0
    finally:
        run.log.close()
    return Supervised(run.results, run.deadline_hit or bool(run.remaining), max(0, restarts),
                      round(run.cpu, 3))
