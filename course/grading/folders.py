"""The class as folders: which subfolders of SUBMISSIONS are students, their report names, and which
of them this run grades (every one, a shard, or the ones named with STUDENTS=)."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from course import ROOT
from course.grading.names import check_distinct, shown

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class UsageError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make grade: {message}")


@dataclass
class ClassFolders:
    students: list[Path]                        # every student folder, sorted by name
    names: dict[str, str]                       # folder name -> report name (whole class)
    skipped: list[str] = field(default_factory=list)
    chosen: list[Path] = field(default_factory=list)  # this run's share (shard, STUDENTS=)


def check_folders(submissions: Path, out: Path) -> None:
    if not submissions.is_dir():
        raise UsageError(f"no folder of submissions at {submissions}")
    if out == ROOT or ROOT.is_relative_to(out):
        raise UsageError(f"OUT={out} would write into the course itself; choose a folder outside it")
    if out.is_relative_to(ROOT) and not out.is_relative_to(ROOT / "build"):
        raise UsageError(f"OUT={out} lies inside the course; choose a folder outside it (or under build/)")
    if submissions == ROOT or ROOT.is_relative_to(submissions):
        raise UsageError(f"SUBMISSIONS={submissions} holds the course itself; give the folder of "
                         "the collected submissions")
    if submissions.is_relative_to(out):
        raise UsageError("SUBMISSIONS lies inside OUT; give two separate folders")
    if out.is_relative_to(submissions):
        inside = out.relative_to(submissions).parts
        where = f"in the folder of the student {shown(inside[0])!r}, " if inside else ""
        raise UsageError(f"OUT={out} lies inside SUBMISSIONS ({where}where every folder is a "
                         "student's); keep OUT beside it, e.g. OUT=../class/grades")


def students_in(submissions: Path, out: Path) -> tuple[list[Path], list[str]]:
    """The student folders (not hidden, not symlinks, not OUT) and what was skipped."""
    found, skipped = [], []
    for path in sorted(submissions.iterdir()):
        if path.name.startswith("."):
            continue
        if path.is_symlink():
            skipped.append(f"{path.name} (a symlink)")
        elif not path.is_dir():
            skipped.append(f"{path.name} (not a folder)")
        elif path.resolve() == out or out.is_relative_to(path.resolve()):
            skipped.append(f"{path.name} (the output folder)")
        else:
            found.append(path)
    return found, skipped


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """"K/N" (1 <= K <= N) -> (K, N)."""
    if text is None:
        return None
    match = SHARD.match(text)
    if not match or not 1 <= int(match[1]) <= int(match[2]):
        raise UsageError(f"--shard {text!r}: give K/N with 1 <= K <= N, e.g. 2/3")
    return int(match[1]), int(match[2])


def _named(students: list[Path], wanted: list[str]) -> list[Path]:
    by_name = {p.name: p for p in students}
    unknown = [w for w in wanted if w not in by_name]
    if unknown:
        hints = [f"{shown(w)!r}" + (f" (did you mean {shown(close[0])!r}?)" if (
            close := difflib.get_close_matches(w, list(by_name), n=1)) else "") for w in unknown]
        raise UsageError(f"STUDENTS names no folder of SUBMISSIONS: {', '.join(hints)}")
    return [by_name[w] for w in dict.fromkeys(wanted)]


def class_folders(submissions: Path, out: Path, wanted: list[str] | None = None,
                  shard: tuple[int, int] | None = None) -> ClassFolders:
    """The class, and this run's share of it: shard K of N takes every N-th folder in sorted
    order, starting with the K-th; STUDENTS= takes the folders it names (within the shard)."""
    students, skipped = students_in(submissions, out)
    if not students:
        raise UsageError(f"no student folders in {submissions} (an empty class)")
    try:
        names = check_distinct([p.name for p in students])
    except ValueError as err:
        raise UsageError(str(err)) from None
    chosen = students if shard is None else students[shard[0] - 1::shard[1]]
    if wanted:
        named = _named(students, wanted)
        outside = [p.name for p in named if p not in chosen]
        if outside:
            raise UsageError(f"STUDENTS names folders outside shard {shard[0]}/{shard[1]}: "
                             f"{', '.join(shown(n) for n in outside)}")
        chosen = named
    return ClassFolders(students, names, skipped, chosen)
