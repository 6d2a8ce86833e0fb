"""The sandbox every piece of a student's code runs in: bubblewrap (`bwrap`), or nothing when the
instructor passes the explicit unsafe switch.

Inside the sandbox a process sees: the system (/usr, /lib, a few files of /etc) and the Python
environment read-only, a private /tmp, its own /proc (a new PID namespace: no other process is
visible) and /dev, no network (a new network namespace with only loopback), no other user
(a new user namespace, uid 1000), and only the folders the grader binds in: the student's scratch
copy (the one writable place) and, read-only, what the step needs. Not the other submissions,
not OUT, not the instructor's repository (solutions/, the pristine copy, the grader's files),
not the grader's command line or environment. The process is killed with all its children when
the grader kills it or dies (--die-with-parent; the PID namespace ends with its first process).
Resource limits (address space, file size, no core dumps) apply to everything inside.
"""
from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024
FIX = "install bubblewrap (Debian/Ubuntu: `sudo apt-get install bubblewrap`)"
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd", "group",
             "localtime", "hosts", "fonts", "ssl/certs", "mime.types")


def python_roots() -> list[Path]:
    """What the Python interpreter and its environment need, read-only: the base installation,
    the virtual environment and the real interpreter binary (resolved, so the bind holds no
    path into the instructor's repository beyond the environment itself)."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(),
             Path(os.path.realpath(sys.executable)).parent}
    return sorted(r for r in roots if not any(r != o and r.is_relative_to(o) for o in roots))


def interpreter() -> str:
    """The environment's python, by a path that exists inside the sandbox."""
    return str(Path(sys.prefix).resolve() / "bin" / "python")


def bwrap_problem() -> str | None:
    """None when bubblewrap can start a sandbox here, else what is wrong and how to fix it."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap (bwrap) is not installed; {FIX}"
    try:
        done = subprocess.run(["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                               "--proc", "/proc", "--dev", "/dev", "true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"bubblewrap could not start: {err}"
    if done.returncode != 0:
        return (f"bubblewrap cannot create namespaces here ({done.stderr.strip()}); allow "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run "
                "the grader where it can")
    return None


@dataclass
class Limits:
    memory_mib: int = 4096
    fsize_mib: int = 256

    def apply(self) -> None:
        """In the child between fork and exec: inherited by everything inside."""
        if self.memory_mib > 0:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_mib * MIB,) * 2)
        if self.fsize_mib > 0:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.fsize_mib * MIB,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@dataclass
class Sandbox:
    """One sandboxed step: `writable` and `readonly` map host folders to paths inside."""
    writable: dict[Path, str] = field(default_factory=dict)
    readonly: dict[Path, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"
    unsafe: bool = False

    def path(self, host: Path) -> str:
        """Where a host path (inside one of the bound folders) is seen by the sandboxed process."""
        host = Path(host)
        for folder, inside in [*self.writable.items(), *self.readonly.items()]:
            if host == folder or host.is_relative_to(folder):
                return str(host) if self.unsafe else str(Path(inside) / host.relative_to(folder))
        raise ValueError(f"{host} is not bound into the sandbox")

    def environment(self) -> dict[str, str]:
        base = {
            "PATH": f"{Path(interpreter()).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2", "COURSE_REFERENCE": "recorded",
            "JUPYTER_PLATFORM_DIRS": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        }
        env = {**base, **self.env}
        if self.unsafe:  # the same variables, with host paths
            env = {k: self._host(v) for k, v in env.items()}
            env["HOME"] = env["TMPDIR"] = self._host_tmp()
        return env

    def _host(self, value: str) -> str:
        for folder, inside in [*self.writable.items(), *self.readonly.items()]:
            value = value.replace(inside, str(folder)) if value.startswith(inside) or \
                f":{inside}" in value else value
        return value

    def _host_tmp(self) -> str:
        first = next(iter(self.writable))
        tmp = first / ".tmp"
        tmp.mkdir(exist_ok=True)
        return str(tmp)

    def command(self, argv: list[str]) -> list[str]:
        if self.unsafe:
            return argv
        cmd = ["bwrap", "--unshare-all", "--uid", "1000", "--gid", "1000", "--hostname", "sandbox",
               "--die-with-parent", "--new-session", "--clearenv"]
        for system in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.exists(system):
                cmd += ["--ro-bind", system, system] if not os.path.islink(system) else \
                    ["--symlink", os.readlink(system), system]
        for name in ETC_FILES:
            cmd += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # the private /tmp first: a Python environment that lives under /tmp (a clone in /tmp,
        # as CI may use) is bound on top of it instead of being hidden by it
        cmd += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        for root in python_roots():
            cmd += ["--ro-bind", str(root), str(root)]
        for host, inside in self.readonly.items():
            cmd += ["--ro-bind", str(host), inside]
        for host, inside in self.writable.items():
            cmd += ["--bind", str(host), inside]
        for key, value in self.environment().items():
            cmd += ["--setenv", key, value]
        return [*cmd, "--chdir", self.cwd, *argv]

    def popen(self, argv: list[str], limits: Limits, stdout, stderr) -> subprocess.Popen:
        return subprocess.Popen(
            self.command(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
            env=self.environment() if self.unsafe else {"PATH": "/usr/bin:/bin"},
            cwd=self._host(self.cwd) if self.unsafe else "/", preexec_fn=limits.apply,
            start_new_session=True)
