"""Helpers for tests that run the lesson notebooks in scratch copies of the course."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from course import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SANITIZE = "notebooks/nbval_sanitize.cfg"
# the pytest plugins an nbval run needs none of (each costs start-up time in every run)
UNUSED_PLUGINS = ("xdist", "xdist.looponfail", "timeout", "cacheprovider", "randomly")


def run_nbval(workspace: Path, notebook: str, timeout: int = 600,
              record: Path | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """Strict nbval (stored outputs compared) on one notebook of `workspace`; (result, seconds).

    The kernel gets its own empty IPython folder (no one's startup files run in it). With
    `record`, the kernel loads tests/catalog_recorder.py, which writes there every message the
    run renders with its Chinese rendering (the outputs stay the English ones)."""
    with tempfile.TemporaryDirectory(prefix="nbval-ipython-") as ipython:
        env = {**os.environ, "PYTHONPATH": str(workspace), "IPYTHONDIR": ipython}
        if record is not None:
            profile = Path(ipython) / "profile_default"
            profile.mkdir()
            (profile / "ipython_kernel_config.py").write_text(
                'c.InteractiveShellApp.extensions = ["tests.catalog_recorder"]\n')
            env["COURSE_CATALOG_RECORD"] = str(record)
        disabled = [arg for name in UNUSED_PLUGINS for arg in ("-p", f"no:{name}")]
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--nbval", f"notebooks/{notebook}",
             "--nbval-sanitize-with", SANITIZE, "--nbval-cell-timeout=300", *disabled,
             "-q", "--rootdir", str(workspace), "-c", "/dev/null"],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=timeout)
    return done, time.perf_counter() - start


def execute_allowing_errors(path: Path) -> nbformat.NotebookNode:
    """Run every cell of a notebook even after errors; return the executed notebook."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return notebook


def cells_tagged(notebook: nbformat.NotebookNode, tag: str):
    return [c for c in notebook.cells if tag in c.get("metadata", {}).get("tags", [])]
