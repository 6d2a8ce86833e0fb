"""The sandbox every piece of a student's code runs in: bubblewrap (`bwrap`), or nothing when the
instructor passes the explicit unsafe switch.

A `Layout` says what a sandbox sees, by path inside it. Nothing else is there: the system (/usr,
/lib, a few files of /etc) and the Python environment read-only, its own /proc (a new PID
namespace: no other process is visible), a read-only /dev with a private /dev/shm of SHM_BYTES,
no network (loopback only), no other user (uid 1000; no user namespace can be made inside), and:
- `tmpfs`: private writable folders of a fixed size (the private /tmp, the scratch copy),
- `ro`: host folders or files bound read-only (the pristine handout's folders, the hidden cases),
- `files`: contents copied in (the student's exercise files),
- `rw`: single host files the process may write (one result file per hidden check), so that
  no sandbox can create a file on the host, only fill the ones the grader made, each capped by
  the file-size limit;
- `discard`: paths that are /dev/null (a log nobody reads: it costs no space and has no limit).
bubblewrap reads its whole command line from a file descriptor (`--args`), so the process it
starts sees `bwrap --args 3` in /proc, not the host paths of the binds. Resource limits (address
space, file size, CPU time, no core dumps) apply to every process inside, and a process limit
(NPROC) to the sandbox as a whole: set inside it, it counts the processes of its own user
namespace (as root, each job slot runs as an unprivileged uid of its own: course/grading/
identity.py). What all its processes use together is watched (`Watch` in processes.py). The
whole sandbox dies with its first process, and with the grader.

No kernel object outlives a sandbox or is shared with another: besides its own namespaces (IPC
and network among them), every process in it runs under the grader's seccomp filter (no
keyrings, no System V IPC, no memfd, no shared anonymous memory: course/grading/seccomp.py) with
a session keyring of its own, and finds /proc/keys, /proc/key-users and /dev/zero closed.

Two ways to start the sandboxed process: `exec` (bubblewrap runs the command) and `fork` (a
copy of the fork server, which imported torch once, enters a sandbox that bubblewrap holds
open with a placeholder; see course/grading/forkserver.py). Both give a `Running`
(course/grading/processes.py).
"""
from __future__ import annotations

import functools
import base64
import json
import os
import re
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from course.grading import identity as ids
from course.grading import seccomp
from course.grading.identity import Identity
from course.grading.processes import (LIVE, ExecRunning, ForkRunning, ForkServer, Running, Watch,
                                      kill_group)

MIB = 1024 * 1024
START_CPU = 30   # CPU-seconds a process started from scratch needs for Python and torch
SHM_BYTES = 16 * MIB  # the private /dev/shm: POSIX shared memory and semaphores, no more
NPROC = 64       # processes and threads per sandbox: no exercise starts one; a notebook kernel
                 # (FULL=1) and torch's own threads stay far below
# sets the process limit inside the sandbox, then runs the command (the exec path)
NPROC_LAUNCHER = ("import os, resource, sys; n = int(sys.argv[1]); "
                  "resource.setrlimit(resource.RLIMIT_NPROC, (n, n)); os.execv(sys.argv[2], sys.argv[2:])")
FIX = "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`)"
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd", "group",
             "localtime", "hosts", "fonts", "ssl/certs", "mime.types")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PROC_HIDDEN = ("keys", "key-users")  # /proc files a sandbox finds empty (an unreadable /dev/null)
# what every sandboxed process finds in its environment; the course's switches for sandboxed
# checks (such as COURSE_ISOLATE) belong here
# recorded references, and every check judges its own exercise alone (dependencies answered by
# stand-ins replaying the reference's recorded calls), so one bug costs one point
COURSE_ENV = {"COURSE_REFERENCE": "recorded", "COURSE_ISOLATE": "1"}
BASE_ENV = {
    "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2", "JUPYTER_PLATFORM_DIRS": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1", **COURSE_ENV,
}


def python_roots() -> list[Path]:
    """What the Python interpreter and its environment need, read-only: the base installation,
    the virtual environment and the real interpreter binary (resolved, so the bind holds no
    path into the instructor's repository beyond the environment itself)."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(os.path.realpath(sys.executable)).parent}
    return sorted(r for r in roots if not any(r != o and r.is_relative_to(o) for o in roots))


def interpreter() -> str:
    """The environment's python, by a path that exists inside the sandbox."""
    python = Path(sys.prefix).resolve() / "bin" / "python"
    return str(python) if python.exists() else os.path.realpath(sys.executable)


def base_env() -> dict[str, str]:
    return {"PATH": f"{Path(interpreter()).parent}:/usr/local/bin:/usr/bin:/bin", **BASE_ENV}


def fork_server(log: Path) -> ForkServer:
    """A fork server for this grading run, in the sandboxes' own environment."""
    return ForkServer(log, interpreter(), base_env())


@functools.cache
def bwrap_options() -> frozenset[str]:
    """The options this bubblewrap knows (--disable-userns came with 0.8.0, 2023)."""
    try:
        done = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(re.findall(r"^\s+(--[a-z-]+)", done.stdout + done.stderr, re.M))


def nproc_per_namespace() -> bool:
    """Whether the kernel counts RLIMIT_NPROC per user namespace (Linux 5.14 and later): on an
    older one it counts every process of the user, so a normal user's sandboxes get no process
    limit there (a job slot's uid, as root, has no other process: it gets it anyway)."""
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return bool(found) and (int(found[1]), int(found[2])) >= (5, 14)


def no_userns() -> list[str]:
    """No user namespace can be made inside (where this bubblewrap can say so: 0.8.0 on)."""
    return ["--disable-userns"] if "--disable-userns" in bwrap_options() else []


def bwrap_problem(identity: Identity | None = None) -> str | None:
    """None when bubblewrap can start a sandbox here (as `identity`, when given), else what is
    wrong and how to fix it."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap (bwrap) is not installed; {FIX}"
    try:
        done = subprocess.run(["bwrap", "--unshare-all", "--unshare-user", *no_userns(),
                               "--die-with-parent", "--ro-bind", "/", "/", "--proc", "/proc",
                               "--dev", "/dev", "true"], capture_output=True, text=True,
                              timeout=30, cwd="/",
                              preexec_fn=identity.become if identity is not None else None)
    except (OSError, subprocess.SubprocessError) as err:
        return f"bubblewrap could not start: {err}"
    if done.returncode != 0:
        return (f"bubblewrap cannot create namespaces here ({done.stderr.strip()}); allow "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run "
                "the grader where it can")
    return None


@dataclass
class Limits:
    memory_mib: int = 4096      # address space per process (0: none); the sandbox's together
    fsize_mib: int = 64         # largest file a process may write
    cpu_seconds: float = 0      # CPU time per process (0: none); SIGXCPU, then SIGKILL 2 s later
    nproc: int = NPROC          # processes and threads in the sandbox (0: none), set inside it

    def rlimits(self) -> dict[str, tuple[int, int]]:
        found = {"CORE": (0, 0)}
        if self.memory_mib > 0:
            found["AS"] = (self.memory_mib * MIB,) * 2
        if self.fsize_mib > 0:
            found["FSIZE"] = (self.fsize_mib * MIB,) * 2
        if self.cpu_seconds > 0:
            seconds = max(1, int(self.cpu_seconds + 0.999))
            found["CPU"] = (seconds, seconds + 2)
        return found

    def inside(self) -> dict[str, tuple[int, int]]:
        """The limits set inside the sandbox only: NPROC counts the processes of the user
        namespace it is set in, so it must not be set on bubblewrap (outside, it would count
        every process of the grader's user)."""
        return {**self.rlimits(), **({"NPROC": (self.nproc,) * 2} if self.nproc > 0 else {})}

    def apply(self) -> None:
        """In a child before exec: inherited by everything it starts."""
        for name, value in self.rlimits().items():
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), value)

    def starter(self, identity: Identity | None):
        """What the child that execs bubblewrap runs first: become the slot's uid, leave the
        grader's session keyring for an empty one of its own, then limits."""
        def start() -> None:
            if identity is not None:
                identity.become()
            seccomp.new_session_keyring()
            self.apply()
        return start


@dataclass
class Layout:
    """What one sandbox sees, by path inside it (see the module docstring)."""
    tmpfs: dict[str, int] = field(default_factory=dict)       # path -> size in bytes
    ro: dict[str, Path] = field(default_factory=dict)         # path -> host folder or file
    rw: dict[str, Path] = field(default_factory=dict)         # path -> host file
    files: dict[str, bytes] = field(default_factory=dict)     # path -> content
    discard: list[str] = field(default_factory=list)          # paths that are /dev/null
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"

    def environment(self) -> dict[str, str]:
        return {**base_env(), **self.env}


def _depth(path: str) -> tuple[int, str]:
    return path.count("/"), path


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)  # no CLOEXEC: bubblewrap reads it
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _encoded(program: bytes | None) -> str | None:
    return base64.b64encode(program).decode("ascii") if program is not None else None


def bwrap_args(layout: Layout, fds: list[int], identity: Identity | None = None) -> list[str]:
    """bubblewrap's options for `layout` (file descriptors it must read appended to `fds`); run
    as `identity` (a job slot's uid, when the grader is root), host folders it cannot reach are
    bound from their bridges."""
    args = ["--unshare-all", "--unshare-user", *no_userns(), "--uid", "1000", "--gid", "1000",
            "--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]
    for system in SYSTEM:
        if os.path.islink(system):
            args += ["--symlink", os.readlink(system), system]
        elif os.path.exists(system):
            args += ["--ro-bind", system, system]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--proc", "/proc"]
    for name in PROC_HIDDEN:  # which keys and key quotas the sandbox's uid has: not its business
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", "/dev/null", f"/proc/{name}"]
    # /dev/zero cannot be opened (bubblewrap remounts its node read-only and nodev): opened for
    # writing, a shared mapping of it is memory no process holds (seccomp.py)
    args += ["--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev/zero", "--remount-ro", "/dev"]
    program = seccomp.program()
    if program is not None:  # keyrings, memory no process holds: refused (seccomp.py)
        fds.append(_memfd("seccomp", program))
        args += ["--seccomp", str(fds[-1])]
    for path, size in sorted(layout.tmpfs.items(), key=lambda item: _depth(item[0])):
        args += ["--size", str(int(size)), "--tmpfs", path]
    # after the private /tmp: an environment that lives under /tmp stays visible
    source = identity.source if identity is not None else str
    for root in python_roots():
        args += ["--ro-bind", source(str(root)), str(root)]
    for path, host in sorted(layout.ro.items(), key=lambda item: _depth(item[0])):
        args += ["--ro-bind", source(str(host)), path]
    made = set(layout.tmpfs)
    for path, host in sorted(layout.rw.items(), key=lambda item: _depth(item[0])):
        args += ["--bind", source(str(host)), path]
    for path, content in sorted(layout.files.items(), key=lambda item: _depth(item[0])):
        parent = os.path.dirname(path)
        if parent not in made and parent not in layout.ro:
            args += ["--dir", parent]
            made.add(parent)
        fds.append(_memfd("student-file", content))
        args += ["--perms", "0644", "--file", str(fds[-1]), path]
    for path in layout.discard:
        args += ["--dev-bind", "/dev/null", path]
    for key, value in layout.environment().items():
        args += ["--setenv", key, value]
    return args + ["--chdir", layout.cwd]


@dataclass
class Sandbox:
    """One sandboxed step. With `unsafe`, the layout is made of real folders and links under
    `root` on the host and nothing is isolated."""
    layout: Layout
    unsafe: bool = False
    root: Path | None = None          # UNSAFE only: where the layout is laid out on the host
    server: ForkServer | None = None  # start by fork through this server, else by exec

    def p(self, inside: str) -> str:
        """How the process sees the in-sandbox path `inside` (a host path when UNSAFE)."""
        return str(self.root) + inside if self.unsafe else inside

    def _unsafe_layout(self) -> None:
        for path in sorted(self.layout.tmpfs, key=_depth):
            Path(self.p(path)).mkdir(parents=True, exist_ok=True)
        for path, host in [*self.layout.ro.items(), *self.layout.rw.items()]:
            Path(self.p(path)).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(host, self.p(path))
        for path, content in self.layout.files.items():
            Path(self.p(path)).parent.mkdir(parents=True, exist_ok=True)
            Path(self.p(path)).write_bytes(content)
        for path in self.layout.discard:
            os.symlink("/dev/null", self.p(path))

    def _env(self) -> dict[str, str]:
        env = self.layout.environment()
        if self.unsafe:
            env = {k: ":".join(self.p(v) if v.startswith("/") and not v.startswith(
                ("/usr", "/bin", str(Path(interpreter()).parent))) else v for v in value.split(":"))
                for k, value in env.items()}
        return env

    def start(self, argv: list[str], limits: Limits) -> Running:
        """Start `argv` (argv[1] a script when forking: `python script args...`)."""
        if LIVE.stopped.is_set():
            raise OSError("the grading run was stopped")
        if self.unsafe and self.root is not None and not self.root.exists():
            self.root.mkdir(parents=True)
            self._unsafe_layout()
        identity = None if self.unsafe else ids.current()
        for host in self.layout.rw.values():  # the files it may write: the slot's own
            ids.own(host, identity)
        if identity is None and not nproc_per_namespace():
            limits = replace(limits, nproc=0)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            running = None
            if self.server is not None and self.server.alive and not self.unsafe:
                try:
                    running = self._fork(argv, limits, identity, out_w, err_w, out_r, err_r)
                except OSError:
                    if self.server.alive:  # the sandbox failed, not the server
                        raise
                    limits = replace(limits, cpu_seconds=limits.cpu_seconds and
                                     limits.cpu_seconds + START_CPU)
            if running is None:
                running = self._exec(argv, limits, identity, out_w, err_w, out_r, err_r)
        except BaseException:
            os.close(out_r)
            os.close(err_r)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        running.cpu_limit = limits.rlimits().get("CPU", (0, 0))[0]
        LIVE.add(running)
        return running

    def _bwrap(self, command: list[str], limits: Limits, identity: Identity | None, stdout: int,
               stderr: int) -> tuple[subprocess.Popen, int | None]:
        """bubblewrap running `command` in this layout, and the pid of its first process inside
        (which it tells, --info-fd, once the sandbox is set up; None if it failed)."""
        fds: list[int] = []
        info_r, info_w = os.pipe()
        args = bwrap_args(self.layout, fds, identity) + ["--info-fd", str(info_w)]
        fds.append(_memfd("bwrap-args", "\0".join(args).encode() + b"\0"))
        try:
            # the command (in-sandbox paths only) must follow on bwrap's own command line
            proc = subprocess.Popen(["bwrap", "--args", str(fds[-1]), "--", *command],
                                    stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                    env={"PATH": "/usr/bin:/bin"}, cwd="/",
                                    pass_fds=[*fds, info_w], preexec_fn=limits.starter(identity),
                                    start_new_session=True)
        except BaseException:
            os.close(info_r)
            raise
        finally:
            for fd in (*fds, info_w):
                os.close(fd)
        with os.fdopen(info_r, "rb") as info:
            said = info.read(1 << 16)
        try:
            return proc, int(json.loads(said)["child-pid"])
        except (ValueError, KeyError, TypeError):
            return proc, None

    def _exec(self, argv, limits, identity, out_w, err_w, out_r, err_r) -> Running:
        if self.unsafe:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w,
                                    env=self._env(), cwd=self.p(self.layout.cwd),
                                    preexec_fn=limits.apply, start_new_session=True)
            return ExecRunning(proc, out_r, err_r, sandboxed=False)
        if limits.nproc > 0:  # set inside: see Limits.inside
            argv = [interpreter(), "-S", "-c", NPROC_LAUNCHER, str(limits.nproc), *argv]
        proc, ns_pid = self._bwrap(argv, limits, identity, out_w, err_w)
        running = ExecRunning(proc, out_r, err_r, sandboxed=True)
        running.watch = Watch(ns_pid, limits.memory_mib * MIB, self.in_memory()) if ns_pid else None
        return running

    def _holder(self, err: int, limits: Limits, identity: Identity | None) -> tuple[subprocess.Popen, int]:
        """bubblewrap holding the sandbox open around a placeholder, and the placeholder's pid.
        bubblewrap tells the pid (--info-fd) before it has set the sandbox up; the placeholder
        says "ready" once it runs, that is once every mount is in place."""
        ready_r, ready_w = os.pipe()
        try:
            holder, pid = self._bwrap(["/bin/sh", "-c", "echo ready && exec sleep infinity"],
                                      replace(limits, cpu_seconds=0), identity, ready_w, err)
        finally:
            os.close(ready_w)
        with os.fdopen(ready_r, "rb") as ready:
            told = ready.readline()
        if pid is None or told != b"ready\n":
            kill_group(holder)
            raise OSError(f"bubblewrap did not start its sandbox ({told[:50]!r})")
        return holder, pid

    def _fork(self, argv, limits, identity, out_w, err_w, out_r, err_r) -> Running:
        assert not self.unsafe, "without a sandbox, processes are started by exec"
        holder, pid = self._holder(err_w, limits, identity)
        request = {"ns_pid": pid, "script": argv[1], "args": argv[2:], "env": self._env(),
                   "cwd": self.p(self.layout.cwd),
                   "path": [p for p in self._env().get("PYTHONPATH", "").split(":") if p],
                   "rlimits": limits.inside(),
                   "as": [identity.uid, identity.gid] if identity is not None else None,
                   "keyctl": seccomp.keyctl_number(), "seccomp": _encoded(seccomp.program())}
        try:
            status = self.server.spawn(request, out_w, err_w)
        except OSError:
            kill_group(holder)
            raise
        running = ForkRunning(holder, status, out_r, err_r)
        running.watch = Watch(pid, limits.memory_mib * MIB, self.in_memory())
        return running

    def in_memory(self) -> list[str]:
        """The sandbox's folders whose files are memory (tmpfs): the watch counts them."""
        return sorted({*self.layout.tmpfs, "/dev/shm"})
