"""A run into an OUT that holds a class grades as that class was graded, unless told otherwise.

OUT/class.json records the lessons, the points of every check and the grading limits of the run
that made the class; a regrade (`STUDENTS=`), a late student or a resumed run takes them from
there, so `make grade SUBMISSIONS=... OUT=... STUDENTS="dan"` needs no `LESSONS=` again. An
option given on the command line wins (and a different one is refused, as before, since the rows
of one gradebook must be comparable). Never taken from OUT: `UNSAFE=1` (grading without a
sandbox is asked for each time) and the per-run choices (JOBS, STUDENTS, SHARD, ...).

    settle(out, given, options) -> Settings      # fills options.lessons, .points, .per_lesson
"""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from course.grading import records as rec
from course.grading.settings import Settings

NEVER_REUSED = {"unsafe", "keep"}


def recorded(out: Path) -> rec.ClassInfo | None:
    """OUT's class.json, read without the lock (the run checks it again once OUT is locked)."""
    try:
        return rec.load_class(Path(out))
    except (OSError, ValueError, TypeError):
        return None


def settle(out: Path, given: dict, options) -> Settings:
    """The run's Settings: `given` (the options the command line set) over OUT's record over
    the defaults. Also settles `options.lessons`, `options.points` (OUT's points, when no
    points file is given) and `options.per_lesson`; `options.reused` names what came from OUT."""
    info = recorded(out)
    names = {f.name for f in fields(Settings)}
    values = {} if info is None else {k: v for k, v in (info.settings or {}).items()
                                      if k in names and k not in NEVER_REUSED}
    if "cell_timeout" in given:
        values.pop("hidden_timeout", None)
        given = {**given, "hidden_timeout": given["cell_timeout"]}
    settings = Settings(**{**values, **given})
    options.reused = []
    if info is None:
        return settings
    options.reused = sorted(k for k in values if k not in given and
                            values[k] != getattr(Settings(), k))
    if options.lessons is None:
        options.lessons = list(info.lessons)
        options.reused.insert(0, "lessons")
    if options.points_file is None:
        options.points = dict(info.points)
        options.reused.insert(1, "points")
    if options.per_lesson is None:
        options.per_lesson = bool((info.settings or {}).get("per_lesson"))
    if getattr(options, "assignment", None) is None:
        options.assignment = info.assignment  # "" for a class recorded before titles were kept
    return settings


def points_toml(points: dict[str, float]) -> str:
    """A points file (course/grading/plan.py's format) that gives every check its points."""
    lines = ["# the points OUT/class.json recorded for this class", "default = 0", "", "[points]"]
    lines += [f"{json.dumps(check)} = {value!r}" for check, value in points.items()]
    return "\n".join(lines) + "\n"


def reused_line(out: Path, options) -> str | None:
    if not getattr(options, "reused", None):
        return None
    lessons = ", ".join(options.lessons or [])
    parts = [f"lessons {lessons}" if k == "lessons" else "its points" if k == "points" else k
             for k in options.reused]
    return (f"grading as {out} was graded: {'; '.join(parts)} (recorded in its class.json; "
            "other lessons or limits need a fresh OUT; new points, roster or title: make grade "
            "OUT=... POINTS=... without SUBMISSIONS, from the records)")
