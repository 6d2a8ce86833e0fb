"""The system calls no sandbox may make, as a seccomp filter (classic BPF, written here).

A sandbox must share no kernel object with the next one, and hold no memory the grader cannot
count. Namespaces separate most objects (course/grading/sandbox.py: PID, IPC, network, mount,
UTS, user); what they leave is refused here, with EPERM, as Flatpak refuses the keyring calls
(flatpak/flatpak@96f9a67 common/flatpak-run.c, setup_seccomp):

- the kernel's keyrings (`add_key`, `keyctl`, `request_key`): keys belong to a uid, not to a
  namespace, so a key one student's sandbox left under a job slot's uid was read by the next
  student graded on that slot (and, as a normal user, a sandbox reached the instructor's own
  keyrings);
- memory that no process holds, which neither the address-space limit nor the watch can count
  (measured: a shared mapping shrunk to one page kept its 512 MiB; a memfd can be held by a
  descriptor in flight in a socket; a System V segment outlives every process that attached
  it): `memfd_create`, `memfd_secret`, System V IPC (`shmget`, `msgget`, `semget`: the message
  queues and semaphore arrays of a fresh IPC namespace may hold gigabytes of kernel memory),
  and `mmap` of shared anonymous memory (MAP_SHARED with MAP_ANONYMOUS). What is left is
  memory of a process (counted by the watch) or of a tmpfs of a fixed size (counted too).

Only the host's own system-call ABI is let through (x86_64 or aarch64): a call of any other
ABI (i386's `int 0x80` from a 64-bit process, x32) is refused whatever it is, so no table of
another ABI's numbers is needed. On another machine the grader has no filter (`program`
returns None) and says so (`problem`).

bubblewrap installs the program with `--seccomp FD` on the process it starts; a copy of the
fork server installs it itself (course/grading/forkserver.py, which cannot import the course:
it gets the program's bytes in its request).
"""
from __future__ import annotations

import ctypes
import errno
import functools
import platform
import struct
import sys

# classic BPF (linux/filter.h, linux/bpf_common.h)
LD_W_ABS = 0x00 | 0x00 | 0x20      # BPF_LD | BPF_W | BPF_ABS: A = 32 bits of seccomp_data at k
JEQ_K, JGE_K, JSET_K = 0x15, 0x35, 0x45  # BPF_JMP | BPF_JEQ/JGE/JSET | BPF_K
RET_K = 0x06                      # BPF_RET | BPF_K
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
# struct seccomp_data { int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]; }
NR, ARCH, ARGS = 0, 4, 16
MAP_SHARED, MAP_ANONYMOUS = 0x01, 0x20   # MAP_SHARED_VALIDATE (0x03) holds MAP_SHARED's bit
X32_SYSCALL_BIT = 0x40000000

KEYCTL_JOIN_SESSION_KEYRING = 1

# the host's ABI: its audit arch, the numbers of the calls refused (asm/unistd_64.h,
# asm-generic/unistd.h) and mmap's (refused only for shared anonymous memory)
ABIS = {
    "x86_64": (0xC000003E, {"add_key": 248, "request_key": 249, "keyctl": 250,
                            "memfd_create": 319, "memfd_secret": 447, "shmget": 29,
                            "msgget": 68, "semget": 64}, 9),
    "aarch64": (0xC00000B7, {"add_key": 217, "request_key": 218, "keyctl": 219,
                             "memfd_create": 279, "memfd_secret": 447, "shmget": 194,
                             "msgget": 186, "semget": 190}, 222),
}
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}
_LIBC = ctypes.CDLL(None, use_errno=True)


def assemble(lines: list[tuple]) -> bytes:
    """`struct sock_filter[]` from (code, k, jump if true, jump if false) lines whose jumps
    name a label (a str line) or are None (the next line); labels take no place."""
    at, index = {}, 0
    for line in lines:
        if isinstance(line, str):
            at[line] = index
        else:
            index += 1
    ops, index = [], 0
    for line in lines:
        if isinstance(line, str):
            continue
        code, k, *jumps = line
        jt, jf = (0 if label is None else at[label] - index - 1 for label in (jumps + [None, None])[:2])
        ops.append(struct.pack("=HBBI", code, jt, jf, k))
        index += 1
    return b"".join(ops)


def build(machine: str) -> bytes:
    """The filter for `machine`'s ABI (ABIS), as the bytes of a `struct sock_filter[]`."""
    arch, refused, mmap = ABIS[machine]
    low = ARGS + 8 * 3 + (0 if sys.byteorder == "little" else 4)  # mmap's flags: args[3]
    return assemble([
        (LD_W_ABS, ARCH),
        (JEQ_K, arch, None, "deny"),                  # a call of another ABI
        (LD_W_ABS, NR),
        (JGE_K, X32_SYSCALL_BIT, "deny", None),       # x32's calls (never on aarch64)
        *[(JEQ_K, number, "deny", None) for number in sorted(refused.values())],
        (JEQ_K, mmap, None, "allow"),
        (LD_W_ABS, low),
        (JSET_K, MAP_ANONYMOUS, None, "allow"),       # a private or a file's mapping
        (JSET_K, MAP_SHARED, "deny", "allow"),
        "allow", (RET_K, SECCOMP_RET_ALLOW),
        "deny", (RET_K, SECCOMP_RET_ERRNO | errno.EPERM),
    ])


def host_machine() -> str:
    machine = platform.machine().lower()
    return MACHINES.get(machine, machine)


@functools.cache
def program() -> bytes | None:
    """This host's filter, or None where the grader has none (another ABI, a big-endian
    aarch64)."""
    machine = host_machine()
    if machine not in ABIS or sys.byteorder != "little":
        return None
    return build(machine)


def problem() -> str | None:
    """Why this host's sandboxes get no filter, or None."""
    if program() is not None:
        return None
    return (f"this machine's system calls ({host_machine()}) have no filter in the grader "
            f"(x86_64 and aarch64 do): its sandboxes may use the kernel's keyrings, System V "
            "IPC and memfds")


def keyctl_number() -> int | None:
    """`keyctl`'s number on this host (None: an ABI the grader has no table for)."""
    machine = host_machine()
    return ABIS[machine][1]["keyctl"] if machine in ABIS else None


def new_session_keyring() -> None:
    """Leave the session keyring this process inherited (the grader's, and with it the user's
    keys it links) for a new, empty one of its own; called before the filter, which refuses
    every keyring call after it. Quietly nothing on a kernel without keyrings."""
    number = keyctl_number()
    if number is not None:
        _LIBC.syscall(ctypes.c_long(number), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING),
                      ctypes.c_void_p(None))
