"""Sandboxed processes once started: reading their pipes, their exit code and CPU time, killing
the whole sandbox; what the sandbox as a whole uses (`Watch`); every one running now (`LIVE`),
so that a stopped run ends them at once; and the grader's side of the fork server
(course/grading/forkserver.py)."""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
STATUS = struct.Struct("id")  # what the fork server reports: exit code, CPU-seconds
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
# a sandbox's processes together: CPU-seconds at most BURST + RATE x its wall seconds, at most
# RUNNING threads wanting a CPU at once on CROWDED looks in a row (an honest sandbox runs one
# thread: OMP, MKL and OpenBLAS get one each; a busy machine hides a storm's rate, not its
# count), memory the per-process limit
RATE, BURST, RUNNING, CROWDED = 1.25, 2.0, 2, 4
PSS_EVERY = 5.0  # seconds between two exact (and slow: ~10 ms a process) looks at memory


def die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


class Live:
    """Every sandbox running now, so that a stopped run (Ctrl-C, SIGTERM) ends them at once, and
    no new one starts after that."""

    def __init__(self):
        self.lock, self.running, self.stopped = threading.Lock(), set(), threading.Event()

    def add(self, running: "Running") -> None:
        with self.lock:
            self.running.add(running)
        if self.stopped.is_set():
            running.kill()

    def discard(self, running: "Running") -> None:
        with self.lock:
            self.running.discard(running)

    def stop(self) -> None:
        self.stopped.set()
        with self.lock:
            running = list(self.running)
        for each in running:
            each.kill()


LIVE = Live()


class Watch:
    """What every process of one sandbox uses together, read from the sandbox's own /proc (seen
    from the host through the root of its first process: only its PID namespace is there).
    Without cgroups this is what bounds a tree of processes: a storm of spinners, or of forks
    that each allocate up to the per-process limit.

    Its memory is what its processes hold (their anonymous memory) and what its folders in
    memory hold (`in_memory`: its tmpfs mounts, /dev/shm among them; files there are RAM, and a
    mapped one is counted there, not again in a process). No other memory can be had in a
    sandbox: what no process and no file holds (memfds, System V IPC, shared anonymous
    mappings) is refused by its seccomp filter (course/grading/seccomp.py)."""

    def __init__(self, ns_pid: int, memory_bytes: int, in_memory: list[str] = ()):
        root = f"/proc/{ns_pid}/root"
        self.proc, self.memory, self.started = f"{root}/proc", memory_bytes, time.monotonic()
        self.folders = [f"{root}{path}" for path in in_memory]
        self.crowded = 0  # looks in a row that found more than RUNNING threads running
        self.measured = -PSS_EVERY  # when memory was last looked at exactly

    def in_files(self) -> int:
        """Bytes the sandbox's tmpfs mounts hold (files, unlinked ones still open included)."""
        total = 0
        for folder in self.folders:
            try:
                found = os.statvfs(folder)
            except OSError:
                continue
            total += (found.f_blocks - found.f_bfree) * found.f_frsize
        return total

    def _pids(self) -> list[str]:
        try:
            return [p for p in os.listdir(self.proc) if p.isdigit()]
        except OSError:
            return []

    def _running(self, pid: str, threads: int, state: bytes) -> int:
        """Threads of process `pid` that are running or waiting for a CPU (state R)."""
        if threads <= 1:
            return int(state == b"R")
        found = 0
        try:
            for task in os.listdir(f"{self.proc}/{pid}/task"):
                with open(f"{self.proc}/{pid}/task/{task}/stat", "rb") as handle:
                    found += handle.read().rsplit(b")", 1)[1].split()[0] == b"R"
        except (OSError, IndexError):
            pass
        return found

    def usage(self) -> tuple[int, float, int, int]:
        """(processes, CPU-seconds, resident private bytes, threads running) of the sandbox now.
        Private: resident minus shared, so pages a fork shares with its parent count once in
        each of them (a bound from above: `proportional` tells the truth when it matters)."""
        count, ticks, private, running = 0, 0, 0, 0
        for pid in self._pids():
            try:
                with open(f"{self.proc}/{pid}/stat", "rb") as handle:
                    fields = handle.read().rsplit(b")", 1)[1].split()
                with open(f"{self.proc}/{pid}/statm", "rb") as handle:
                    pages = handle.read().split()
            except (OSError, IndexError):
                continue
            count += 1
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            private += (int(pages[1]) - int(pages[2])) * PAGE
            running += self._running(pid, int(fields[17]), fields[0])
        return count, ticks / TICK, private, running

    def proportional(self) -> int:
        """The anonymous memory of the sandbox's processes, each page shared by n of them
        counted 1/n in each (Pss_Anon of smaps_rollup): slower to read, exact."""
        total = 0
        for pid in self._pids():
            try:
                with open(f"{self.proc}/{pid}/smaps_rollup", "rb") as handle:
                    lines = dict(line.split(b":", 1) for line in handle.read().splitlines()[1:])
            except (OSError, ValueError):
                continue
            kib = lines.get(b"Pss_Anon", lines.get(b"Pss", b"0 kB")).split()[0]
            total += int(kib) * 1024
        return total

    def overuse(self) -> tuple[str, str] | None:
        """("cpu" or "memory", why) when the sandbox as a whole is over its share, else None."""
        count, cpu, private, running = self.usage()
        files = self.in_files() if self.memory else 0
        seconds = time.monotonic() - self.started
        self.crowded = self.crowded + 1 if running > RUNNING else 0
        if self.crowded >= CROWDED:
            return "cpu", (f"{running} of its threads and processes wanted a CPU at once, on "
                           f"{CROWDED} looks in a row (an exercise runs one)")
        if cpu > BURST + RATE * seconds:
            return "cpu", (f"its {count} processes used {cpu:.1f} CPU-seconds in {seconds:.1f} s "
                           f"of wall time, more than one core's worth")
        if not self.memory or private + files <= self.memory or self.crowded or \
                seconds - self.measured < PSS_EVERY:
            return None  # a crowd is stopped for its crowd, before an exact look would end
        self.measured = seconds
        used = self.proportional()
        if used + files > self.memory:
            return "memory", (f"its {count} processes held {used >> 20} MiB together and its "
                              f"files in memory (/tmp, /dev/shm, ...) {files >> 20} MiB, more "
                              f"than the {self.memory >> 20} MiB limit")
        return None


class Running:
    """A sandboxed process: its stdout (`out`) and stderr (`err`) as pipes to read, its exit
    code (negative: the signal that ended it), and a kill that takes the whole sandbox."""
    out: int
    err: int
    killed: bool = False
    cpu: float | None = None     # CPU-seconds it used, once it has ended (when known)
    cpu_limit: int = 0           # the CPU-seconds each process may use (RLIMIT_CPU; 0: none)
    watch: Watch | None = None   # the sandbox's processes together (None: no sandbox)

    def poll(self) -> int | None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.kill()
        LIVE.discard(self)
        for fd in (self.out, self.err):
            try:
                os.close(fd)
            except OSError:
                pass


class ExecRunning(Running):
    def __init__(self, proc: subprocess.Popen, out: int, err: int, sandboxed: bool):
        self.proc, self.out, self.err, self.sandboxed = proc, out, err, sandboxed

    def poll(self) -> int | None:
        if self.proc.returncode is None:
            try:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            except ChildProcessError:
                pid = 0
            if pid:
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.cpu = usage.ru_utime + usage.ru_stime
        code = self.proc.returncode
        if code is not None and self.sandboxed and 128 < code < 128 + 65:
            return -(code - 128)  # bubblewrap exits with 128 + the signal that ended its child
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.killed = True
        kill_group(self.proc)


class ForkRunning(Running):
    def __init__(self, holder: subprocess.Popen, status: int, out: int, err: int):
        self.holder, self.status, self.out, self.err = holder, status, out, err
        self.code: int | None = None

    def poll(self) -> int | None:
        if self.code is None and select.select([self.status], [], [], 0)[0]:
            data = os.read(self.status, STATUS.size)
            if len(data) == STATUS.size:
                self.code, self.cpu = STATUS.unpack(data)
            else:  # the copy that waits for it is gone: so is the sandbox
                self.code = -signal.SIGKILL
            os.close(self.status)
            kill_group(self.holder)  # whatever it left running dies with the sandbox
        return self.code

    def kill(self) -> None:
        if self.poll() is None:
            self.killed = True
            kill_group(self.holder)
            deadline = time.monotonic() + 10
            while self.poll() is None and time.monotonic() < deadline:
                select.select([self.status], [], [], 0.1)
            if self.code is None:
                self.code = -signal.SIGKILL


class ForkServer:
    """The client side of course/grading/forkserver.py: one server per grading run."""

    def __init__(self, log: Path, python: str, env: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        source = (Path(__file__).with_name("forkserver.py")).read_text()
        with open(log, "ab") as errors:
            self.proc = subprocess.Popen(
                [python, "-s", "-c", source, str(theirs.fileno())],
                pass_fds=[theirs.fileno()], env=env, cwd="/", stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True,
                preexec_fn=die_with_parent)
        theirs.close()
        self.socket, self.lock, self.ready, self.alive = ours, threading.Lock(), False, True

    def wait_ready(self, timeout: float = 300) -> bool:
        """Whether the server has imported torch and waits for requests."""
        if not self.ready and select.select([self.socket], [], [], timeout)[0]:
            self.ready = self.socket.recv(16) == b"ready"
        return self.ready

    def spawn(self, request: dict, out: int, err: int) -> int:
        """Ask for a sandboxed process; the read end of its status pipe."""
        status_r, status_w = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.socket, [json.dumps(request).encode()], [out, err, status_w])
        except OSError:
            self.alive = False  # the server is gone: the grader goes on without it
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        return status_r

    def close(self) -> None:
        self.socket.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kill_group(self.proc)
