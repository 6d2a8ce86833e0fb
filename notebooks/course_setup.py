"""Imported by the first cell of every lesson: puts the course on sys.path, turns on autoreload.

Autoreload means an edit to exercises/*.py takes effect at the next cell you run, without
restarting the kernel. The kernel's own bin folder goes on PATH too, so the `dot` that the course
environment installs is found even when Jupyter was started without `make lab`.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BIN = str(Path(sys.executable).parent)
if BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")

try:
    from IPython import get_ipython
    ipython = get_ipython()
except ImportError:
    ipython = None
if ipython is not None:
    ipython.run_line_magic("load_ext", "autoreload")
    ipython.run_line_magic("autoreload", "2")
