"""The fork server: `import torch` once per grading run, a fresh copy of it in every sandbox.

Importing torch costs a process a few CPU-seconds, more than a student's check cells take. This
process (started by course/grading/sandbox.py as `python -s -c <this file> FD`, in a clean
environment, cwd /) imports torch and nothing of the course, then waits on the socket FD. For
each request it forks a copy of itself (copy-on-write: nothing written by one copy reaches the
server or another copy) that joins the namespaces of a bubblewrap sandbox the grader has just
made (its mount, PID, network, IPC, UTS, cgroup and user namespaces), drops every capability,
forks once more (to be inside the sandbox's PID namespace), takes a session keyring of its own,
installs the grader's seccomp filter (as bubblewrap does for what it starts), sets the resource
limits, and runs the requested script there with its argv, environment, cwd and sys.path. The server never runs
a student's code and holds nothing secret: no seed, no expected outputs, no host paths but the
Python environment's. The first copy reports the script's exit code on a pipe of its own.

Request (one JSON message, file descriptors alongside: stdout, stderr, status):
    {"ns_pid": pid of a process inside the sandbox, or null (no sandbox: UNSAFE),
     "script": "/grader/cells.py", "args": [...], "env": {...}, "cwd": "/course",
     "path": ["/course"], "rlimits": {"AS": [soft, hard], "NPROC": ...},
     "as": [uid, gid] of the job slot when the grader runs as root (course/grading/identity.py),
           else null,
     "keyctl": the keyctl system call's number (a session keyring of its own), or null,
     "seccomp": the seccomp filter (base64 of a `struct sock_filter[]`, course/grading/
                seccomp.py) every sandboxed process runs under, or null}
This file imports only the standard library and torch: it must run without the course on
sys.path.
"""
import base64
import ctypes
import fcntl
import gc
import json
import os
import resource
import runpy
import signal
import socket
import struct
import sys
import traceback

LIBC = ctypes.CDLL(None, use_errno=True)
NAMESPACES = (("mnt", 0x00020000), ("uts", 0x04000000), ("ipc", 0x08000000),
              ("net", 0x40000000), ("cgroup", 0x02000000), ("pid", 0x20000000))
CLONE_NEWUSER = 0x10000000
NS_GET_USERNS = 0xB701
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 38, 24, 47
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
KEYCTL_JOIN_SESSION_KEYRING = 1
PR_CAP_AMBIENT_CLEAR_ALL = 4
CAP_VERSION_3 = 0x20080522
FAILED_TO_ENTER = 125  # the exit code of a copy that could not enter its sandbox


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _prctl(option: int, arg: int, arg3: int = 0) -> int:
    return LIBC.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(arg3), ctypes.c_ulong(0),
                      ctypes.c_ulong(0))


def _same(fd_a: int, fd_b: int) -> bool:
    a, b = os.fstat(fd_a), os.fstat(fd_b)
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def become(uid: int, gid: int) -> None:
    """Root's copy becomes the job slot's uid first, the owner of the sandbox's namespaces, and
    joins them as that uid: its processes then count against the sandbox's process limit."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    _prctl(PR_SET_DUMPABLE, 1)  # its /proc files belong to it, as an exec'd process's do


def join_sandbox(pid: int) -> None:
    """Enter the namespaces of process `pid`. bubblewrap nests the sandbox's user namespace in
    the one that owns its mounts, so: that owner first, then the other namespaces, then the
    sandbox's own user namespace."""
    fds = {}
    for name, _ in NAMESPACES + (("user", CLONE_NEWUSER),):
        try:
            fds[name] = os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if name in ("user", "mnt", "pid"):
                raise
    mine = os.open("/proc/self/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    owner = fcntl.ioctl(fds["mnt"], NS_GET_USERNS)
    current = mine
    if not _same(owner, mine):
        _check(LIBC.setns(owner, CLONE_NEWUSER), "setns(user namespace owning the mounts)")
        current = owner
    for name, flag in NAMESPACES:
        if name in fds:
            _check(LIBC.setns(fds[name], flag), f"setns({name})")
    if not _same(fds["user"], current):
        _check(LIBC.setns(fds["user"], CLONE_NEWUSER), "setns(user)")
    for fd in (*fds.values(), owner, mine):
        os.close(fd)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """No capability left in any set (joining a user namespace grants them all), as bubblewrap
    leaves its own sandboxed processes; fail closed if the kernel says otherwise."""
    for cap in range(64):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    _check(LIBC.capset(ctypes.byref(_CapHeader(CAP_VERSION_3, 0)), (_CapData * 2)()), "capset")
    with open("/proc/self/status") as status:
        caps = {line.split(":")[0]: int(line.split(":")[1], 16) for line in status
                if line.startswith(("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"))}
    if len(caps) != 5 or any(caps.values()):
        raise OSError(f"capabilities left after dropping them: {caps}")


class _Program(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def confine(request: dict) -> None:
    """What bubblewrap does for the processes it starts itself: a session keyring of this
    process's own (not the grader's), then the grader's seccomp filter (no_new_privs is set
    already); fail closed if the filter cannot be had."""
    if request.get("keyctl"):
        LIBC.syscall(ctypes.c_long(int(request["keyctl"])),
                     ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING), ctypes.c_void_p(None))
    if request.get("seccomp"):
        program = base64.b64decode(request["seccomp"])
        buffer = ctypes.create_string_buffer(program, len(program))
        filters = _Program(len(program) // 8, ctypes.addressof(buffer))
        _check(_prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(filters)),
               "seccomp")


def run_script(request: dict, out: int, err: int, base_path: list[str]) -> None:
    """In the sandbox, as the student's process: stdio, limits, environment, then the script."""
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.closerange(3, 2**31 - 1)  # close_range(2): every descriptor but stdio, however many
    os.setsid()
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if request.get("ns_pid"):
        drop_capabilities()
    _check(_prctl(PR_SET_NO_NEW_PRIVS, 1), "no_new_privs")
    confine(request)
    for name, (soft, hard) in request.get("rlimits", {}).items():
        resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (soft, hard))
    os.chdir(request["cwd"])
    os.umask(0o022)
    os.environ.clear()
    os.environ.update(request["env"])
    script = request["script"]
    sys.argv = [script, *request["args"]]
    sys.path[:] = [os.path.dirname(script), *request.get("path", []), *base_path]
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 0
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:  # noqa: BLE001 - the script's own failure, reported like python's
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code & 0xFF)


def serve_one(request: dict, fds: list[int], base_path: list[str]) -> None:
    """The first copy: enter the sandbox, fork the process that runs the script, report its
    exit code (negative: the signal that ended it) and CPU-seconds on the status pipe."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    out, err, status = fds
    try:
        if request.get("as"):
            become(*map(int, request["as"]))
        if request.get("ns_pid"):
            join_sandbox(int(request["ns_pid"]))
        child = os.fork()
    except BaseException as problem:  # noqa: BLE001
        os.write(err, f"could not enter the sandbox: {problem}\n".encode())
        os.write(status, struct.pack("id", FAILED_TO_ENTER, 0.0))
        os._exit(0)
    if child == 0:
        try:
            os.close(status)
            run_script(request, out, err, base_path)
        except BaseException as problem:  # noqa: BLE001
            os.write(2, f"could not start in the sandbox: {problem!r}\n".encode())
        os._exit(FAILED_TO_ENTER)
    os.close(out)
    os.close(err)
    _, wait_status, usage = os.wait4(child, 0)
    cpu = usage.ru_utime + usage.ru_stime  # with the processes it waited for
    os.write(status, struct.pack("id", os.waitstatus_to_exitcode(wait_status), cpu))
    os._exit(0)


def main(fd: int) -> int:
    server = socket.socket(fileno=fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the first copies
    import torch  # what every sandboxed process needs, imported once here

    # torch's first operation on the meta device imports its symbolic-shape machinery (sympy
    # among 336 modules: 0.74 CPU-seconds), which every check's meta-device case meets: once
    # here, not once per sandboxed process (it was 0.85 of the 0.9 CPU-seconds a process spent
    # on lesson 00's one check)
    torch.empty(1, device="meta") + 1
    # what was imported lives as long as every copy: out of the cycle collector's sight, so that
    # no copy spends its time (and copies of the shared pages) walking it
    gc.freeze()
    base_path = [p for p in sys.path if p]
    server.send(b"ready")
    while True:
        message, fds, _, _ = socket.recv_fds(server, 1 << 20, 8)
        if not message:  # the grader is done: end without tearing torch down (seconds when busy)
            sys.stderr.flush()
            os._exit(0)
        pid = os.fork()
        if pid == 0:
            server.close()
            try:
                serve_one(json.loads(message), fds, base_path)
            finally:
                os._exit(FAILED_TO_ENTER)
        for descriptor in fds:
            os.close(descriptor)


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
