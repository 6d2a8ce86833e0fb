"""A warm `make check`: PyTorch imported once, a fresh copy of the process for every run.

A `make check` in a new process pays for importing PyTorch (about 1.2 CPU-seconds) and, at the
first case it runs on the meta device, for PyTorch's compiler machinery, which that case imports
(about 1.3 more): more than a student's own exercises take. So the first `make check` that has
a check to run starts this server in the background, once it has printed its table; the next
ones send it their request over a Unix socket, with their terminal (stdout and stderr). For each
request the server forks a copy of itself, which imports the student's exercises afresh, runs
`make check` there (course/progress.py, with its cache) writing to that terminal, and exits. The
server itself never imports an exercise and never runs a check, so every run starts from the
same state; nor does it compute with PyTorch before it forks (a thread pool does not survive a
fork): it only imports, and runs one operation on the meta device.

It stops after IDLE seconds without a request, when its course folder is gone, or when a request
comes with another key (the course's files, the language, the versions: course/check_cache.py);
that caller then runs the checks itself and starts a new server. A caller that is interrupted
(Ctrl-C) takes its run down with it. Linux only; elsewhere, or with COURSE_CHECK_SERVER=0,
`make check` runs in its own process.

    python -m course.check_server KEY SOCKET     # what `make check` starts (course/check_client.py)
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

from course import ROOT
from course.check_client import MAX_MESSAGE, _connect

IDLE = 900            # seconds without a request before the server stops
POLL = 5              # seconds between two looks at its course folder


def _bind(path: Path) -> socket.socket | None:
    """The listening socket, or None when another live server holds the path."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(os.fspath(path))
    except OSError:
        if _connect(path) is not None:
            server.close()
            return None  # a server is already there
        path.unlink(missing_ok=True)  # left by one that died
        server.bind(os.fspath(path))
    os.chmod(path, 0o600)
    server.listen(8)
    return server


def warm_up() -> None:
    """Import what every run needs, without computing (see the module's docstring)."""
    import torch
    import torch.nn.functional as F

    # the first operations on the meta device import PyTorch's symbolic shapes and compiler
    # (about 800 modules); a meta tensor holds no data, so nothing is computed
    x = torch.ones(2, 3, device="meta", dtype=torch.float64)
    ((x * x).sum(dim=-1) + 1, x @ x.T, x.softmax(dim=-1), F.linear(x, x), x.masked_fill(x > 0, 0))
    import course.check_cache  # noqa: F401
    import course.checks.depends  # noqa: F401
    import course.checks.expected  # noqa: F401
    import course.checks.kinds  # noqa: F401
    import course.progress  # noqa: F401
    from course.i18n import language, translations

    translations(language())


def _run(connection: socket.socket, request: dict, fds: list[int]) -> None:
    """In the forked copy: the caller's terminal as stdout and stderr, then `make check`."""
    code = 1
    try:
        os.setpgid(0, 0)  # its own group: what it starts (HIDDEN=1's rehearsal) goes with it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for target, fd in zip((1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            os.close(fd)
        os.chdir(ROOT)
        from course.progress import main

        code = main(request["argv"], served=True)
    except BaseException:  # noqa: BLE001 - whatever happens, the caller gets an answer
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            connection.sendall(json.dumps({"code": code}).encode())
        except OSError:
            pass
        os._exit(code if isinstance(code, int) else 1)


def _serve_one(connection: socket.socket, key: str) -> bool:
    """Answer one request; False when the server must stop (a request with another key)."""
    with connection:
        message, fds, _flags, _address = socket.recv_fds(connection, MAX_MESSAGE, 2)
        try:
            request = json.loads(message)
        except ValueError:
            request = {}
        if request.get("key") != key or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            connection.sendall(json.dumps({"stale": True}).encode())
            return False
        child = os.fork()
        if child == 0:
            _run(connection, request, fds)
        try:
            os.setpgid(child, child)  # as the copy does itself: whichever comes first
        except OSError:
            pass
        for fd in fds:
            os.close(fd)
        start = time.monotonic()
        while True:  # until the run ends, or its caller goes (then the run goes too)
            readable, _, _ = select.select([connection], [], [], 0.5)
            if os.waitpid(child, os.WNOHANG)[0] == child:
                print(f"ran {request['argv']} in {time.monotonic() - start:.1f} s", flush=True)
                return True
            if readable and not connection.recv(1):  # the caller went: answered, or interrupted
                if _exited_within(child, 1.0):
                    print(f"ran {request['argv']} in {time.monotonic() - start:.1f} s", flush=True)
                    return True
                try:
                    os.killpg(child, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(child, 0)
                print(f"stopped {request['argv']}: its caller went", flush=True)
                return True


def _exited_within(child: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if os.waitpid(child, os.WNOHANG)[0] == child:
            return True
        time.sleep(0.05)
    return False


def serve(key: str, path: Path) -> int:
    server = _bind(path)
    if server is None:
        return 0
    inode = path.stat().st_ino
    try:
        warm_up()
        print(f"ready: {path} (pid {os.getpid()})", flush=True)
        server.settimeout(POLL)
        last = time.monotonic()
        while time.monotonic() - last < IDLE and (ROOT / "course").is_dir():
            try:
                connection, _ = server.accept()
            except socket.timeout:
                continue
            connection.settimeout(None)
            if not _serve_one(connection, key):
                break
            last = time.monotonic()
    finally:
        server.close()
        try:
            if path.stat().st_ino == inode:
                path.unlink()
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1], Path(sys.argv[2])))
