"""The Python environment's bytecode, compiled before any sandbox runs.

Inside a sandbox the environment is read-only and PYTHONDONTWRITEBYTECODE is set, so a module
with no cached bytecode (`__pycache__/*.pyc`) is compiled from source by every sandboxed process
that imports it, and the result is thrown away. An environment installed without compiling its
bytecode (uv's default) holds only what the grader's own imports cached: measured on lessons
00-02, each sandboxed stage of one student then cost 2.8 CPU-seconds instead of 0.8, three
times the work, charged to the student's CPU-time limit. `make venv` compiles at install
(scripts/setup_venv.sh); this catches an environment made another way, once: when everything
is compiled already, a pass costs about half a second, and it runs while the fork server
imports torch.
"""
from __future__ import annotations

import compileall
import os
import sysconfig
import threading
from pathlib import Path


def site_packages() -> list[Path]:
    """The environment's package folders (purelib and platlib, once each)."""
    paths = sysconfig.get_paths()
    return sorted({Path(paths[key]) for key in ("purelib", "platlib") if paths.get(key)})


def compile_environment(folders: list[Path] | None = None) -> bool:
    """Compile every module of the writable package folders that has no up-to-date bytecode.
    A folder the grader may not write (a shared, read-only install) is left as it is. Whether
    every folder could be written."""
    writable = True
    for folder in site_packages() if folders is None else folders:
        if not folder.is_dir():
            continue
        if not os.access(folder, os.W_OK):
            writable = False
            continue
        # quiet=2: files that do not compile on this Python (a package's examples for another
        # version) are not the grader's business
        compileall.compile_dir(folder, quiet=2, workers=1)
    return writable


def in_background() -> threading.Thread:
    """compile_environment in a thread of its own (join it before the first sandbox starts)."""
    thread = threading.Thread(target=compile_environment, name="bytecode", daemon=True)
    thread.start()
    return thread
