"""Talking to the warm `make check` (course/check_server.py): whether one may run here, its
socket, a request with this terminal, starting and stopping it. `make check` (course/progress.py)
uses this side only; the server imports `make check` itself, so the two stay apart.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from course import ROOT

MAX_MESSAGE = 1 << 16


def available() -> bool:
    """Whether `make check` may use a server here (Linux: fork after PyTorch's import)."""
    return (sys.platform.startswith("linux") and hasattr(socket, "send_fds")
            and os.environ.get("COURSE_CHECK_SERVER", "1") != "0")


def socket_path(root: Path = ROOT) -> Path:
    """The server's socket: in the course's build/ folder, or (a path too long for a socket)
    in the temporary folder, named after this user and course folder."""
    inside = root / "build" / "check-server.sock"
    if len(os.fsencode(inside)) < 100:
        return inside
    name = hashlib.blake2b(os.fsencode(root.resolve()), digest_size=8).hexdigest()
    return Path(tempfile.gettempdir()) / f"attention-course-{os.getuid()}-{name}.sock"


def _connect(path: Path) -> socket.socket | None:
    try:
        if path.stat().st_uid != os.getuid():
            return None  # someone else's socket: never trusted
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(os.fspath(path))
        return client
    except OSError:
        return None


def request(argv: list[str], key: str, root: Path = ROOT) -> int | None:
    """Run `make check` with `argv` in the server of `root`: its exit code, or None when no
    server with this key answers (the caller then runs the checks itself)."""
    client = _connect(socket_path(root))
    if client is None:
        return None
    with client:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            socket.send_fds(client, [json.dumps({"key": key, "argv": argv}).encode()],
                            [sys.stdout.fileno(), sys.stderr.fileno()])
        except (OSError, ValueError):
            return None
        reply = b""
        while True:
            chunk = client.recv(MAX_MESSAGE)
            if not chunk:
                break
            reply += chunk
    try:
        answer = json.loads(reply)
    except ValueError:  # the run died without a word (its output, if any, is on the terminal)
        from course.i18n import _
        from course.commands import make_check

        print(_("make check: the process that ran the checks stopped; run `{command}` again "
                "(with COURSE_CHECK_SERVER=0 it runs the checks in a process of its "
                "own)").format(command=make_check()), file=sys.stderr)
        return 1
    return None if answer.get("stale") else int(answer.get("code", 1))


def stop(root: Path = ROOT) -> None:
    """Stop the server of `root`, if one runs (a request with no key it could hold)."""
    request([], "stop", root)


def start(key: str, root: Path = ROOT) -> None:
    """Start the server of `root` in the background (it outlives this process)."""
    path = socket_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    log = open(root / "build" / "check-server.log", "ab") if (root / "build").is_dir() \
        else subprocess.DEVNULL
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    try:
        subprocess.Popen([sys.executable, "-m", "course.check_server", key, os.fspath(path)],
                         cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                         start_new_session=True, close_fds=True)
    except OSError:
        pass  # no server: the next `make check` runs in its own process again
    finally:
        if log is not subprocess.DEVNULL:
            log.close()
