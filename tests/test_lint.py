"""Lint: `ruff check` with pyflakes' rules (ruff.toml) on the course's own code, the solutions, the
tests and the lessons' jupytext sources. exercises/ is left out: its stubs import what the
student will need."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from course import ROOT


def test_ruff_finds_nothing():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: it is in requirements.txt (make test installs it)"
    done = subprocess.run([ruff, "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
