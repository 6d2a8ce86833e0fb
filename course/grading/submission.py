"""Reading one student's folder (the grader only reads it; no student code runs here).

Every file is stat'ed before it is used and read with a bound, through a descriptor that
follows no link (a sparse 300 MB `exercises/__init__.py` costs a stat, not 300 MB); a folder
is listed only up to MAX_ENTRIES entries, and the files taken total MAX_TOTAL_BYTES at most.
Names are shown escaped (names.shown): a file name that is no UTF-8 is no reason to fail."""
from __future__ import annotations

import difflib
import io
import os
import re
import stat
import tokenize
from itertools import islice
from pathlib import Path

from course.grading.names import shown

MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.py$")
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024   # every file taken from one student, together
MAX_ENTRIES = 2000                  # entries of one folder the grader looks at
FLAG_NAMES = {  # identifiers (and module strings) in a student's code worth a human look
    "solutions": "mentions-solutions", "course": "imports-course", "reference_data":
    "mentions-reference-data", "subprocess": "runs-processes", "system": "runs-processes",
    "ctypes": "uses-ctypes", "importlib": "dynamic-import", "__import__": "dynamic-import",
    "exec": "exec-or-eval", "eval": "exec-or-eval", "builtins": "patches-builtins",
    "_exit": "exits-process", "fork": "runs-processes", "sys": None,
}
STRING_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")


class TooLarge(ValueError):
    """A submission the grader does not read further; the message says why."""


def entries(folder: Path) -> list[Path]:
    """The folder's entries, sorted; TooLarge when it holds more than MAX_ENTRIES."""
    with os.scandir(folder) as scan:
        found = [Path(e.path) for e in islice(scan, MAX_ENTRIES + 1)]
    if len(found) > MAX_ENTRIES:
        raise TooLarge(f"{shown(folder.name)}/ holds more than {MAX_ENTRIES} entries")
    return sorted(found)


def read_bounded(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """A plain file's content, or None when it is a link, no plain file, or over `limit` bytes:
    checked on the opened descriptor, so nothing swapped in between is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        return handle.read(limit + 1)[:limit]


def _is_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def find_exercises(student: Path) -> Path | None:
    """The folder whose *.py are the student's exercises: exercises/, a course copy one folder
    deeper (an unpacked zip), or the student's folder itself. Symlinks are never followed."""
    direct = student / "exercises"
    if _is_dir(direct):
        return direct
    listed = entries(student)
    nested = [d / "exercises" for d in listed if _is_dir(d) and _is_dir(d / "exercises")]
    if len(nested) == 1:
        return nested[0]
    if any(p.suffix == ".py" for p in listed):
        return student
    return None


def _normal(name: str) -> str:
    stem = re.sub(r"\s*\(\d+\)$", "", name.removesuffix(".py")).strip()
    return re.sub(r"[^a-z0-9_]", "_", stem.lower())


def suggestion(name: str, modules: list[str]) -> str:
    close = difflib.get_close_matches(_normal(name), modules, n=1, cutoff=0.6)
    return f"; did you mean exercises/{close[0]}.py?" if close else ""


def take_files(folder: Path, modules: list[str], course_init: bytes) -> tuple[dict[str, bytes], list[str]]:
    """(file name -> content) of the files taken, and what was left out and why.

    `modules` are the handout's exercise modules. Other valid module names are taken too (a
    student may write helpers), but listed, with the nearest exercise name."""
    taken, ignored, total = {}, [], 0
    for path in entries(folder):
        if path.suffix != ".py":
            continue
        name, why = shown(path.name), _left_out(path, modules, course_init, total)
        if why:
            if why != "same":
                ignored.append(f"{name} ({why})")
            continue
        content = read_bounded(path)
        if content is None:
            ignored.append(f"{name} (changed while it was read)")
            continue
        taken[path.name], total = content, total + len(content)
        if path.stem not in modules:
            ignored.append(f"{name} (taken as a helper module: no exercise has this "
                           f"name{suggestion(path.name, modules)})")
    return taken, ignored


def _left_out(path: Path, modules: list[str], course_init: bytes, total: int) -> str | None:
    """Why the *.py file `path` is not taken ("same": the course's own __init__.py), or None.
    Only its stat is read here: the content is read once it is known to be small."""
    try:
        info = os.lstat(path)
    except OSError:
        return "unreadable"
    if stat.S_ISLNK(info.st_mode):
        return "a symlink"
    if not stat.S_ISREG(info.st_mode):
        return "not a file"
    if path.name == "__init__.py":
        same = info.st_size == len(course_init) and read_bounded(path, len(course_init)) == course_init
        return "same" if same else "the course's own is used"
    if not MODULE_NAME.match(path.name):
        return f"not a module name{suggestion(path.name, modules)}"
    if info.st_size > MAX_FILE_BYTES:
        return f"over {MAX_FILE_BYTES // 1024} KiB"
    if total + info.st_size > MAX_TOTAL_BYTES:
        return f"over {MAX_TOTAL_BYTES >> 20} MiB taken in all"
    return None


def loose_files(student: Path, exercises: Path | None, modules: list[str]) -> list[str]:
    """*.py files outside the exercises folder (not graded), with the nearest exercise name."""
    if exercises is None or exercises == student:
        return []
    return [f"{shown(p.name)} (outside exercises/, not graded{suggestion(p.name, modules)})"
            for p in entries(student) if p.suffix == ".py"]


def not_exercises(student: Path, modules: list[str], limit: int = 20) -> list[str]:
    """What a submission with no exercise file holds (a notebook, a PDF, another folder), two
    levels deep: named in the report and the feedback, so that a student who handed in their
    notebooks learns that the exercises/*.py files are what is graded."""
    found = []
    for path in entries(student):
        inner = entries(path)[:limit] if _is_dir(path) and not path.is_symlink() else [path]
        for item in inner:
            name = item.relative_to(student).as_posix() + ("/" if _is_dir(item) else "")
            why = ("a notebook: the graded code is in exercises/*.py" if item.suffix == ".ipynb"
                   else "not an exercise file")
            found.append(f"{shown(name)} ({why}{suggestion(item.name, modules)})")
            if len(found) >= limit:
                return found + ["..."]
    return found


def code_flags(files: dict[str, bytes]) -> list[str]:
    """Names in the student's code an instructor may want to look at (no effect on points)."""
    flags = set()
    for content in files.values():
        try:
            for token in tokenize.tokenize(io.BytesIO(content).readline):
                if token.type == tokenize.NAME and FLAG_NAMES.get(token.string):
                    flags.add(FLAG_NAMES[token.string])
                elif token.type == tokenize.STRING:
                    text = STRING_PREFIX.sub("", token.string).rstrip("'\"")
                    if "reference_data" in text:
                        flags.add("mentions-reference-data")
                    first = re.split(r"[./\\\\]", text, maxsplit=1)[0]
                    if first in ("solutions", "course"):
                        flags.add(FLAG_NAMES[first])
                    if "/proc" in text:
                        flags.add("reads-proc")
        except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, IndentationError):
            continue
    return sorted(flags)


def shipped_extras(student: Path, exercises: Path | None) -> list[str]:
    """Course folders the submission ships besides its exercises (all ignored), two levels deep."""
    extras = []
    names = ("solutions", "notebooks", "course", "tests")
    for first in entries(student):
        if not _is_dir(first):
            continue
        if first.name in names:
            extras.append(f"{first.name}/")
        elif exercises is not None and exercises.parent == first:
            extras += [f"{first.name}/{n}/" for n in names if _is_dir(first / n)]
    return extras
