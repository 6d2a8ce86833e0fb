"""Who a sandbox runs as on the host, so that a process limit holds for it.

A normal user's sandboxes run as that user (bubblewrap maps it to uid 1000 inside). The kernel
counts processes per user namespace and user (Linux 5.14 and later), so an RLIMIT_NPROC set
inside a sandbox bounds that sandbox alone. Root is different: the kernel exempts uid 0 from
RLIMIT_NPROC even inside a user namespace (100 of 100 forks went through under a limit of 20).
So, run as root, each job slot gets an unprivileged uid of its own (SLOT_UID + slot, group
SLOT_GID), as the IOI judge sandbox `isolate` does (uids from 60000, one per box), and
bubblewrap runs as that uid: the limit then holds, and a student who escaped bubblewrap would be
a user without a home, not root.

Such a uid must reach what a sandbox binds: the grader's working folder is made readable to
SLOT_GID (mode 0750, so no other user reads it), and a folder it cannot reach (a Python under
/root, mode 0700; a --workdir in a closed folder) is bound for it, in a mount namespace private
to the process that starts bubblewrap (it vanishes with it), on an empty folder it can reach
("bridges", in the working folder, or in the system's tmp when that one is closed too).
"""
from __future__ import annotations

import atexit
import ctypes
import fcntl
import grp
import os
import pwd
import queue
import shutil
import stat
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SLOT_GID = 61000
SLOT_UID = 61001          # slot k of the run holding block b runs as SLOT_UID + BLOCK * b + k
BLOCK, BLOCKS = 64, 16    # job slots per grading run; runs as root at once on one host
LOCK_FOLDER = Path("/run/attention-course-slots")  # root's own: /run is root's to write
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18


@dataclass(frozen=True)
class Identity:
    """One job slot's host identity and the folders bound for it (host path -> bridge path)."""
    uid: int
    gid: int
    bridges: tuple[tuple[str, str], ...] = ()
    workdir: str = ""     # the run's working folder (root:SLOT_GID, 0750), where `own` reaches

    def source(self, path: str) -> str:
        """Where bubblewrap, running as this uid, finds the host path `path`."""
        for host, bridge in self.bridges:
            if path == host or path.startswith(host.rstrip("/") + "/"):
                return bridge + path[len(host):]
        return path

    def become(self) -> None:
        """In a child of the grader (root), before exec: bind the bridges in a private mount
        namespace, then become the slot's uid with no supplementary group."""
        if self.bridges:
            libc = ctypes.CDLL(None, use_errno=True)
            _check(libc.unshare(CLONE_NEWNS), "unshare(mount namespace)")
            _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount(private)")
            for host, bridge in self.bridges:
                _check(libc.mount(host.encode(), bridge.encode(), None, MS_BIND | MS_REC, None),
                       f"mount(bind {host})")
        os.setgroups([])
        os.setresgid(self.gid, self.gid, self.gid)
        os.setresuid(self.uid, self.uid, self.uid)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def reachable(path: Path, uid: int, gid: int) -> bool:
    """Whether `uid` (in group `gid` only) may search every folder on the way to `path`."""
    path = Path(path)
    for folder in [*reversed(path.parents), path]:
        try:
            info = os.stat(folder)
        except OSError:
            return False
        bit = (stat.S_IXUSR if info.st_uid == uid else stat.S_IXGRP if info.st_gid == gid
               else stat.S_IXOTH)
        if not info.st_mode & bit:
            return False
    return True


def ids_free() -> str | None:
    """None when the slots' uids and group are nobody's on this host, else who has them."""
    taken = [f"uid {u.pw_uid} ({u.pw_name})" for u in pwd.getpwall()
             if SLOT_UID <= u.pw_uid < SLOT_UID + BLOCK * BLOCKS]
    taken += [f"gid {g.gr_gid} ({g.gr_name})" for g in grp.getgrall() if g.gr_gid == SLOT_GID]
    return ", ".join(taken) or None


class SlotsExhausted(OSError):
    """Every block of job slots' uids is held by another grading run as root."""


def lock_folder(folder: Path | None = None) -> int:
    """A descriptor of the folder of the slots' locks: root's own (made mode 0700 where it is
    missing), never a link, writable by no other user, so that no other user can hold a lock
    (and stop every grading run) or put a link where root creates one (the world-writable
    /run/lock allowed both). OSError, saying why, where the folder is not such."""
    folder = Path(folder or LOCK_FOLDER)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    info = os.fstat(fd)
    if info.st_uid != 0 or info.st_mode & 0o022:
        os.close(fd)
        raise OSError(f"{folder} holds the job slots' locks but is not root's own (owner uid "
                      f"{info.st_uid}, mode {info.st_mode & 0o777:o}): remove it, and the grader "
                      "makes it again")
    return fd


def claim_block(folder: Path | None = None) -> tuple[int, int]:
    """A block of uids no other grading run on this host holds: two runs as root at once (a
    cluster node's array tasks, a test suite's workers) would otherwise share their slots' uids,
    and with them the kernel's per-user process count. Returns (block, the open lock file): the
    flock holds until that file is closed (Slots.close) or this process ends. The locks lie in
    a folder of root's own (`lock_folder`) and are opened without following a link."""
    folder = Path(folder or LOCK_FOLDER)
    home = lock_folder(folder)
    try:
        for block in range(BLOCKS):
            try:
                fd = os.open(f"attention-course-slots-{block}.lock", os.O_RDWR | os.O_CREAT |
                             os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=home)
            except OSError:
                continue  # not a plain file of root's (only root could have put it there)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return block, fd
    finally:
        os.close(home)
    raise SlotsExhausted(f"{BLOCKS} grading runs as root hold every block of job slots' uids "
                         f"(their locks: {folder})")


class Slots:
    """The job slots of one grading run as root: a uid each (from a block of its own), shared
    bridges."""

    def __init__(self, workdir: Path, roots: list[Path]):
        block, self._lock = claim_block()
        self.first = SLOT_UID + BLOCK * block
        os.chown(workdir, 0, SLOT_GID)
        os.chmod(workdir, 0o750)
        closed = [Path(r) for r in roots if not reachable(r, SLOT_UID, SLOT_GID)]
        home = workdir / "bridges"
        if not reachable(workdir, SLOT_UID, SLOT_GID):  # then bridged too, from the system's tmp
            closed.append(workdir)
            home = Path(tempfile.mkdtemp(prefix="grade-bridges-"))
            atexit.register(shutil.rmtree, home, True)
        home.mkdir(exist_ok=True)
        os.chown(home, 0, SLOT_GID)
        os.chmod(home, 0o750)
        bridges = []
        for index, folder in enumerate(closed):
            (home / str(index)).mkdir()
            bridges.append((str(folder), str(home / str(index))))
        self.free: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.made, self.lock = 0, threading.Lock()
        self.bridges = tuple(bridges)
        self.workdir = str(workdir)

    def take(self) -> int:
        """A free slot: one that a finished student gave back, else a new one."""
        try:
            return self.free.get_nowait()
        except queue.Empty:
            with self.lock:
                self.made += 1
                return self.made - 1

    def close(self) -> None:
        """Give the block of uids back (a grading run keeps it until it ends)."""
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

    def identity(self, slot: int) -> Identity:
        if slot >= BLOCK:
            raise OSError(f"more than {BLOCK} job slots as root")
        return Identity(self.first + slot, SLOT_GID, self.bridges, self.workdir)


_RUN: Slots | None = None
_LOCAL = threading.local()


def configure(slots: Slots | None) -> None:
    """This process's grading run: its slots (root), or None (a normal user, or no sandbox)."""
    global _RUN
    _RUN = slots


def configured() -> bool:
    """Whether this run's sandboxes run as job slots' uids."""
    return _RUN is not None


def current() -> Identity | None:
    """The identity sandboxes started by this thread run as (None: the grader's own)."""
    return getattr(_LOCAL, "identity", None)


@contextmanager
def slot():
    """Hold a job slot (and its uid) while one student is graded in this thread."""
    run = _RUN
    if run is None:
        yield None
        return
    number = run.take()
    _LOCAL.identity = run.identity(number)
    try:
        yield _LOCAL.identity
    finally:
        _LOCAL.identity = None
        run.free.put(number)


def own(path: Path, identity: Identity | None) -> None:
    """Hand a file the sandbox writes (a result file, a cell log) to the slot's uid, and open
    the folders on its way from the run's working folder to the slots' group (read and search,
    nothing for others), whatever the grader's umask: with a umask of 077 (an instructor's, or
    `make collect`'s in the same process) they were root's alone, bubblewrap could not bind the
    file as the slot's uid, and every hidden run failed to start."""
    if identity is None:
        return
    os.chown(path, identity.uid, identity.gid)
    if not identity.workdir:
        return
    top = Path(identity.workdir)
    folder = Path(path).parent
    while folder != top and folder.is_relative_to(top):
        info = os.stat(folder)
        if info.st_gid != SLOT_GID:
            os.chown(folder, -1, SLOT_GID)
        if info.st_mode & 0o050 != 0o050:
            os.chmod(folder, stat.S_IMODE(info.st_mode) | 0o050)
        folder = folder.parent
