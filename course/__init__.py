"""Machinery that runs the course: checks, stub generation, notebook builds, widgets, plots.

Nothing in here teaches attention; that lives in `solutions/` (reference code) and `exercises/`
(the student's copy). Keeping the two apart lets a reader see at once which files to study.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
