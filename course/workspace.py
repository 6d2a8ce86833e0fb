"""Scratch copies of the course with some `exercises/` laid over it.

Notebooks import the student's code from `exercises/`. To run them against the solutions (to
build the committed outputs, or to test them) we copy the course and put `solutions/*.py` where
the exercises were; the grader does the same with a student's files.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from course import ROOT

# never copied: the environment, history, caches and build output
SKIP = {".venv", ".git", "build", ".pytest_cache", "__pycache__", ".ipynb_checkpoints", "out"}


def copy_course(dest: Path, exercises_from: Path | None = None, source: Path = ROOT) -> Path:
    """Copy the course to `dest` (created); if given, lay the *.py of `exercises_from` over exercises/."""
    dest = Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, ignore=lambda _dir, names: [n for n in names if n in SKIP])
    if exercises_from is not None:
        for path in sorted(Path(exercises_from).glob("*.py")):
            shutil.copy2(path, dest / "exercises" / path.name)
    return dest


def solutions_workspace(dest: Path) -> Path:
    """A course copy whose exercises are the solutions."""
    return copy_course(dest, exercises_from=ROOT / "solutions")


def stubs_workspace(dest: Path) -> Path:
    """A course copy whose exercises are freshly generated stubs (whatever exercises/ holds now)."""
    from course.stubs import write

    workspace = copy_course(dest)
    write(exercises=workspace / "exercises", solutions=workspace / "solutions")
    return workspace
