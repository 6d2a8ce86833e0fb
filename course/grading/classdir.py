"""The class lives beside the course, never inside it.

What a term produces or collects (the submissions, the roster with its emails, the secret seed,
OUT and the job logs) is private to the instructor, while the course folder is what the handout,
the grading sandboxes and a container build are made from (see docs/trust-boundary.md). So every
path of the class must lie outside the course folder:

    course/            the course repository (this one)
    class/             the class folder, beside it
      collected/       SUBMISSIONS: one folder per student
      roster.csv       ROSTER
      seed             SEED_FILE (owner-only)
      grades/          OUT

`check_class_paths` refuses a path inside the course with the one line that fixes it.
"""
from __future__ import annotations

from pathlib import Path

from course import ROOT

# the make variable each option is given with, and its place in the documented class folder
WHERE = {"SUBMISSIONS": "../class/collected", "OUT": "../class/grades",
         "ROSTER": "../class/roster.csv", "SEED_FILE": "../class/seed",
         "STUDENTS_FILE": "../class/students.txt", "PARTS": "../class/grades/shard-1 ...",
         "FROM": "../class/download.zip", "POINTS": "../class/points.toml"}


class ClassPathError(SystemExit):
    def __init__(self, message: str, command: str = "make grade"):
        super().__init__(f"{command}: {message}")


def inside_course(path: Path, course: Path = ROOT) -> bool:
    """Whether `path` (resolved) is the course folder, lies in it, or holds it."""
    path, course = Path(path).resolve(), Path(course).resolve()
    return path == course or path.is_relative_to(course) or course.is_relative_to(path)


def check_class_paths(paths: dict[str, Path | None], command: str = "make grade",
                      course: Path = ROOT) -> None:
    """Refuse any of `paths` (make variable -> path, None when not given) that lies inside the
    course folder (or holds it), naming the variable and where the class folder keeps it."""
    for variable, path in paths.items():
        if path is None or not inside_course(path, course):
            continue
        resolved = Path(path).resolve()
        what = "holds the course itself" if Path(course).resolve().is_relative_to(resolved) \
            else "lies inside the course"
        raise ClassPathError(
            f"{variable}={path} {what} ({Path(course).resolve()}), where the handout and the "
            f"students' sandboxes are made from; keep the class beside the course, e.g. "
            f"{variable}={WHERE.get(variable, '../class/...')} (see docs/instructors.md)", command)
