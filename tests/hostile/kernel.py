"""A second hostile class, graded one student at a time (one job slot, as root one uid): students
who reach for what a sandbox might share with the next one on its slot (the kernel's keyrings,
System V IPC, /dev/shm, /tmp, an abstract socket), hold memory outside every limit, kill their
own process group, or write text meant to forge the instructor's reports; and an honest one.

Lesson 00 only (one check, 00.batched_dot). Each attack prints what it got on stderr, which the
grader keeps in raw/<student>/sandbox-output.txt (the visible run imports warmup.py first)."""
from __future__ import annotations

from pathlib import Path

from course import ROOT
from course.grading import seccomp
from tests.hostile.classroom import write

MEMORY_MIB = 1000   # the class's memory limit: the fork server's copies start at ~670 MiB of
TMP_MIB = 900       # address space; --tmp-limit: d_hoards_files fills 800 MiB of /tmp
HTML = "<img src=x onerror=alert(1)>"
FORGER = f"f``{HTML}``"  # a folder name: backticks and raw HTML
FORGED_FILE = "<img src=y onerror=alert(3)>.py"  # a file name: raw HTML
FORGED_MESSAGE = "no\n```\n\n# INJECTED HEADING\n\n" + HTML + "\n\n[click](https://phish.example/)\n\n```"

_CALLS = '''
import ctypes, os, sys
_libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL, SHMGET, MSGGET = {add_key}, {keyctl}, {shmget}, {msgget}
KEY_SPEC_USER_KEYRING, KEYCTL_SETPERM, KEYCTL_SEARCH, KEYCTL_READ = -4, 5, 10, 11
IPC_CREAT, IPC_KEY = 0o1000, 0x5EED
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]


def _errno():
    return os.strerror(ctypes.get_errno())
'''

# a correct batched_dot that leaves every value it is called with (the hidden inputs among them)
# wherever the next student on its job slot might look
STASH = _CALLS + '''
import json, socket
_stashed = []


def _stash(text):
    said = {{}}
    data = text.encode()
    key = _libc.syscall(ctypes.c_long(ADD_KEY), b"user", f"pair:{{len(_stashed)}}".encode(), data,
                        ctypes.c_size_t(len(data)), ctypes.c_int(KEY_SPEC_USER_KEYRING))
    if key >= 0:  # readable by every process of this uid
        _libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(KEYCTL_SETPERM), ctypes.c_long(key),
                      ctypes.c_long(0x3F3F3F3F))
    said["key"] = "stored" if key >= 0 else _errno()
    shm = _libc.shmget(IPC_KEY, 1 << 16, IPC_CREAT | 0o666)
    if shm >= 0:
        address = _libc.shmat(shm, None, 0)
        ctypes.memmove(address, data[:60000] + b"\\0", min(len(data), 60000) + 1)
    said["shm"] = "stored" if shm >= 0 else _errno()
    said["msg"] = "stored" if _libc.msgget(IPC_KEY, IPC_CREAT | 0o666) >= 0 else _errno()
    for path in ("/dev/shm/pair", "/tmp/pair", "pair"):
        try:
            with open(path, "a") as handle:
                handle.write(text + "\\n")
            said[path] = "stored"
        except OSError as err:
            said[path] = err.strerror
    _stashed.append(text)
    print(f"STASH {{json.dumps(said)}}", file=sys.stderr, flush=True)


_stash("imported")  # at import too, where what it prints is kept (raw/)


def batched_dot(a, b):
    out = (a * b).sum(dim=-1)
    if a.device.type == "cpu":
        _stash(json.dumps({{"a": a.detach().flatten()[:4].tolist(),
                            "out": out.detach().flatten()[:4].tolist()}}))
    return out
'''

# a batched_dot that is wrong unless it finds what a classmate left: it says what it found
REPLAY = _CALLS + '''
import json, socket
found, keys = {{}}, []
try:
    found["/proc/keys"] = [l.split()[-2] for l in open("/proc/keys") if "pair:" in l]
    for line in open("/proc/keys"):  # a key this uid may read, by the id /proc/keys shows
        if "pair:" in line:
            buffer = ctypes.create_string_buffer(4096)
            size = _libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(KEYCTL_READ),
                                 ctypes.c_long(int(line.split()[0], 16)), buffer, ctypes.c_long(4096))
            keys.append(buffer.raw[:max(size, 0)].decode(errors="replace"))
except OSError as err:
    found["/proc/keys"] = err.strerror
for number in range(200):
    key = _libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(KEYCTL_SEARCH),
                        ctypes.c_long(KEY_SPEC_USER_KEYRING), b"user", f"pair:{{number}}".encode(),
                        ctypes.c_long(0))
    if key < 0:
        found.setdefault("keyctl", _errno())
        break
    buffer = ctypes.create_string_buffer(4096)
    size = _libc.syscall(ctypes.c_long(KEYCTL), ctypes.c_long(KEYCTL_READ), ctypes.c_long(key),
                         buffer, ctypes.c_long(4096))
    keys.append(buffer.raw[:max(size, 0)].decode(errors="replace"))
found["keys"] = keys
shm = _libc.shmget(IPC_KEY, 0, 0)
found["shm"] = (ctypes.string_at(_libc.shmat(shm, None, 0)).decode(errors="replace")
                if shm >= 0 else _errno())
found["msg"] = "a queue" if _libc.msgget(IPC_KEY, 0) >= 0 else _errno()
for path in ("/dev/shm/pair", "/tmp/pair", "pair"):
    try:
        found[path] = open(path).read()
    except OSError as err:
        found[path] = err.strerror
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    client.connect("\\0pair")
    found["abstract socket"] = client.recv(1000).decode()
except OSError as err:
    found["abstract socket"] = err.strerror
print(f"REPLAY {{json.dumps(found)}}", file=sys.stderr, flush=True)


def batched_dot(a, b):
    return (a * b).sum()  # wrong on any batch: only a classmate's values could help it
'''

# memory outside every limit: a memfd, a System V segment, shared anonymous memory (each then
# dropped from every process's mappings), 400 MiB each, beyond the class's limit together
HOARD_KERNEL = _CALLS + '''
import json, time
MIB, EACH = 1 << 20, 400
held, keep = {{}}, []
try:
    total = 0
    while total < EACH:  # RLIMIT_FSIZE (64 MiB) bounds one memfd, not how many
        fd = os.memfd_create("hoard")
        os.ftruncate(fd, 50 * MIB)
        os.write(fd, b"x" * (50 * MIB))
        keep.append(fd)
        total += 50
    held["memfd"] = total
except OSError as err:
    held["memfd"] = err.strerror
CHUNK = 100  # MiB at a time: within the address-space limit
held["sysv"] = 0
for _ in range(EACH // CHUNK):
    segment = _libc.shmget(0, CHUNK * MIB, 0o600)  # IPC_PRIVATE
    address = _libc.shmat(segment, None, 0) if segment >= 0 else None
    if address in (None, ctypes.c_void_p(-1).value):
        held["sysv"] = _errno()
        break
    ctypes.memset(ctypes.c_void_p(address), 1, CHUNK * MIB)
    _libc.shmdt(ctypes.c_void_p(address))  # held by the IPC namespace, by no process
    held["sysv"] += CHUNK
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                       ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def shared(fd, flags):
    """EACH MiB of shared memory, written, then each mapping cut to one page: the memory stays
    (the shared object keeps its pages), out of every process's resident and address space."""
    done = 0
    for _ in range(EACH // CHUNK):
        address = _libc.mmap(None, CHUNK * MIB, 3, flags, fd, 0)  # PROT_READ | PROT_WRITE
        if address in (None, ctypes.c_void_p(-1).value):
            return _errno()
        ctypes.memset(ctypes.c_void_p(address), 1, CHUNK * MIB)
        _libc.munmap(ctypes.c_void_p(address + 4096), CHUNK * MIB - 4096)
        done += CHUNK
    return done


held["shared"] = shared(-1, 0x01 | 0x20)  # MAP_SHARED | MAP_ANONYMOUS
try:
    held["/dev/zero"] = shared(os.open("/dev/zero", os.O_RDWR), 0x01)
except OSError as err:
    held["/dev/zero"] = err.strerror
print(f"HOARD {{json.dumps(held)}}", file=sys.stderr, flush=True)
time.sleep(5)  # held while the watch looks


def batched_dot(a, b):
    return (a * b).sum(dim=-1)
'''

# memory in files: /tmp and /dev/shm filled, and 250 MiB of its own, beyond the limit together
# (each within its own limit: /tmp's size, the address space)
HOARD_FILES = '''
import sys, time
MIB = 1 << 20
written = 0
files = [(f"/tmp/hoard{n}", 50) for n in range(16)] + [("/dev/shm/hoard", 16)]  # 64 MiB a file
for path, size in files:
    try:
        with open(path, "wb") as handle:
            for _ in range(size):
                handle.write(b"x" * MIB)
                written += 1
    except OSError:
        pass
block = bytearray(250 * MIB)
for offset in range(0, len(block), 4096):
    block[offset] = 1
print(f"HOARD files {written} MiB and 250 MiB of its own", file=sys.stderr, flush=True)
time.sleep(20)


def batched_dot(a, b):
    return (a * b).sum(dim=-1)
'''

# its check cell ends with the process group killing itself: no CPU timeout
KILLS_GROUP = '''
import os, signal


def batched_dot(a, b):
    os.killpg(0, signal.SIGKILL)
'''

FORGES = f'''
def batched_dot(a, b):
    raise ValueError({FORGED_MESSAGE!r})
'''

EXPECTED = {
    "a_stash": ("ok", 1),
    "ada": ("ok", 1),
    "b_replay": ("ok", 0),
    "c_hoards_kernel": ("ok", 1),        # its hoard refused, its code right
    "d_hoards_files": ("memory-limit", 0),
    "e_kills_its_group": ("crashed", 0),
    FORGER: ("ok", 0),
}


def build(subs: Path) -> None:
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    numbers = seccomp.ABIS.get(seccomp.host_machine(), seccomp.ABIS["x86_64"])[1]
    calls = {"add_key": numbers["add_key"], "keyctl": numbers["keyctl"],
             "shmget": numbers["shmget"], "msgget": numbers["msgget"]}
    write(subs / "ada" / "exercises", perfect)
    for name, body in (("a_stash", STASH), ("b_replay", REPLAY), ("c_hoards_kernel", HOARD_KERNEL)):
        write(subs / name / "exercises", {**perfect, "warmup.py": body.format(**calls)})
    for name, body in (("d_hoards_files", HOARD_FILES), ("e_kills_its_group", KILLS_GROUP),
                       (FORGER, FORGES)):
        write(subs / name / "exercises", {**perfect, "warmup.py": body})
    (subs / FORGER / "exercises" / FORGED_FILE).write_text("X = 1\n")
