"""Where a student's code raised: the file, line and source line in the student's own code.

A check that runs the student's code catches what it raises; the traceback then runs through the
course's check machinery, torch and the student's files. Only the student's frame helps: the
innermost one outside torch, the standard library and the course's own machinery.
"""
from __future__ import annotations

import os
import sysconfig
import traceback
from dataclasses import dataclass
from pathlib import Path

from course import ROOT
from course.i18n import N_

COURSE = (ROOT / "course").resolve()
NOTEBOOK_CELL = N_("your notebook cell")  # where code typed in a cell raised (translated where shown)
_LIBRARIES = {str(Path(p).resolve()) for p in
              {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}}


@dataclass(frozen=True)
class Where:
    file: str      # as the student knows it: exercises/softmax.py, or NOTEBOOK_CELL
    line: int
    function: str
    source: str


def _ours(filename: str) -> bool:
    """A frame of the course's machinery, a library or Python itself (not the student's)."""
    if filename.startswith("<") and not filename.startswith("<ipython-input"):
        return True  # <frozen importlib...>, <string>: no line a student wrote
    path = Path(filename).resolve()
    if path.is_relative_to(COURSE):
        return True
    return any(str(path).startswith(library + os.sep) for library in _LIBRARIES)


def _shown(filename: str) -> str:
    path = Path(filename)
    try:
        return path.resolve().relative_to(ROOT.resolve()).as_posix()
    except ValueError:
        if "ipykernel" in filename or filename.startswith("<ipython-input"):
            return NOTEBOOK_CELL
        return path.name


SHOWN_FRAMES = 4


def student_frames(error: BaseException) -> list[Where]:
    """The innermost SHOWN_FRAMES frames of `error`'s traceback in the student's code, outermost
    first, as Python prints them (the last one raised)."""
    frames = [Where(_shown(f.filename), f.lineno or 0, f.name, (f.line or "").strip())
              for f in traceback.extract_tb(error.__traceback__) if not _ours(f.filename)]
    return frames[-SHOWN_FRAMES:]


def full_traceback(error: BaseException) -> str:
    """Every frame, the course's included (for the curious: course.checks.show_traceback())."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))
