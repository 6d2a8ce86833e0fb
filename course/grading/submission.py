"""Reading one student's folder (the grader only reads it; no student code runs here)."""
from __future__ import annotations

import difflib
import io
import os
import re
import stat
import tokenize
from pathlib import Path

MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.py$")
MAX_FILE_BYTES = 1024 * 1024
FLAG_NAMES = {  # identifiers (and module strings) in a student's code worth a human look
    "solutions": "mentions-solutions", "course": "imports-course", "reference_data":
    "mentions-reference-data", "subprocess": "runs-processes", "system": "runs-processes",
    "ctypes": "uses-ctypes", "importlib": "dynamic-import", "__import__": "dynamic-import",
    "exec": "exec-or-eval", "eval": "exec-or-eval", "builtins": "patches-builtins",
    "_exit": "exits-process", "fork": "runs-processes", "sys": None,
}
STRING_PREFIX = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")


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
    nested = [d / "exercises" for d in sorted(student.iterdir())
              if _is_dir(d) and _is_dir(d / "exercises")]
    if len(nested) == 1:
        return nested[0]
    if any(p.suffix == ".py" for p in student.iterdir()):
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
    taken, ignored = {}, []
    for path in sorted(folder.iterdir()):
        if path.suffix != ".py":
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(info.st_mode):
            ignored.append(f"{path.name} (a symlink)")
        elif not stat.S_ISREG(info.st_mode):
            ignored.append(f"{path.name} (not a file)")
        elif path.name == "__init__.py":
            if path.read_bytes() != course_init:
                ignored.append(f"{path.name} (the course's own is used)")
        elif not MODULE_NAME.match(path.name):
            ignored.append(f"{path.name} (not a module name{suggestion(path.name, modules)})")
        elif info.st_size > MAX_FILE_BYTES:
            ignored.append(f"{path.name} (over {MAX_FILE_BYTES // 1024} KiB)")
        else:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as handle:
                taken[path.name] = handle.read(MAX_FILE_BYTES + 1)[:MAX_FILE_BYTES]
            if path.stem not in modules:
                ignored.append(f"{path.name} (taken as a helper module: no exercise has this "
                               f"name{suggestion(path.name, modules)})")
    return taken, ignored


def loose_files(student: Path, exercises: Path | None, modules: list[str]) -> list[str]:
    """*.py files outside the exercises folder (not graded), with the nearest exercise name."""
    if exercises is None or exercises == student:
        return []
    return [f"{p.name} (outside exercises/, not graded{suggestion(p.name, modules)})"
            for p in sorted(student.glob("*.py"))]


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
    for first in sorted(student.iterdir()):
        if not _is_dir(first):
            continue
        if first.name in names:
            extras.append(f"{first.name}/")
        elif exercises is not None and exercises.parent == first:
            extras += [f"{first.name}/{n}/" for n in names if _is_dir(first / n)]
    return extras
