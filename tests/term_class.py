"""A small class as an LMS hands it over, and a course folder with a class folder beside it, for
the tests that run an instructor's term as documented (test_docs_commands.py, test_slurm.py).

The course folder is a copy made of links to this repository's top-level files and folders (the
grader resolves them to the repository itself), so `make grade SUBMISSIONS=../class/...` runs
as written, with `../class` beside it inside the test's temporary folder.
"""
from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path

from course import ROOT
from course.stubs import generate
from tests.hostile.classroom import mutate, solution

LESSONS = "00-01"
COLUMNS = ["00.batched_dot", "01.stable_softmax", "01.scaled_scores"]
PERFECT = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
WARMUP_BUG = mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()")
SCORES_BUG = mutate(solution("softmax.py"), "/ math.sqrt(c)", "/ c")
# folder, Canvas user id, Canvas sortable name, email, name as the roster has it
ROSTER = [("ada", "4211", "lovelaceada", "ada@example.edu", "Lovelace, Ada"),
          ("bob", "4212", "babbagebob", "bob@example.edu", "Babbage, Bob"),
          ("cy", "4213", "youngcy", "cy@example.edu", "Young, Cy"),
          ("dee", "4214", "deedee", "dee@example.edu", "Dee, Dee"),
          ("Ann Lee", "4215", "leeann", "ann@example.edu", "Lee, Ann"),
          ("学生A", "4216", "学生a", "xuesheng@example.edu", "学生A")]
# the final gradebook's rows: folder -> "status,total,max,<points per check>,flags"
EXPECTED = {"Ann Lee": "ok,3,3,1,1,1,", "ada": "ok,3,3,1,1,1,", "bob": "ok,0,3,0,0,0,",
            "cy": "ok,2,3,0,1,1,", "dee": "ok,1,3,1,0,0,misnamed-files",
            "学生A": "ok,3,3,1,1,1,"}


def course_copy(base: Path) -> Path:
    """base/attention-course: a link to each top-level entry of the repository (not .git)."""
    course = base / "attention-course"
    course.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "build", ".pytest_cache"):
            (course / entry.name).symlink_to(entry)
    return course


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def canvas_download(path: Path) -> None:
    """What Canvas's "Download Submissions" gives for the class, minus the late 学生A: flat
    files named `<sortable name>_<user id>_<attachment id>_<file>` (content_zipper.rb); most
    students handed in a zip of exercises/, dee two loose files, one renamed by the browser."""
    exercises = {"ada": PERFECT, "bob": generate(), "cy": {**PERFECT, "warmup.py": WARMUP_BUG},
                 "Ann Lee": {**PERFECT, "softmax.py": SCORES_BUG}}
    with zipfile.ZipFile(path, "w") as archive:
        for number, (folder, uid, sortable, _, _) in enumerate(ROSTER):
            attachment = 90001 + number
            if folder in exercises:
                archive.writestr(f"{sortable}_{uid}_{attachment}_exercises.zip", _zip(
                    {f"exercises/{n}": t for n, t in exercises[folder].items()}))
            elif folder == "dee":
                archive.writestr(f"{sortable}_{uid}_{attachment}_warmup.py", PERFECT["warmup.py"])
                archive.writestr(f"{sortable}_{uid}_{attachment + 100}_softmax (1).py",
                                 PERFECT["softmax.py"])


def roster(path: Path) -> None:
    lines = ["folder,lms_id,email,name,section"]
    lines += [f'{folder},{uid},{email},"{name}",Section 1' for folder, uid, _, email, name in ROSTER]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def the_late_student(collected: Path) -> None:
    folder = collected / "学生A" / "exercises"
    folder.mkdir(parents=True)
    for name, text in PERFECT.items():
        (folder / name).write_text(text)


def the_correction(collected: Path) -> None:
    (collected / "Ann Lee" / "exercises" / "softmax.py").write_text(PERFECT["softmax.py"])


def rows(out: Path) -> dict[str, str]:
    import csv

    with open(out / "gradebook.csv", encoding="utf-8", newline="") as handle:
        found = list(csv.reader(handle))
    return {r[0]: ",".join(r[1:]) for r in found[1:]}


TIMING = re.compile(r"Graded in \S+ s")


def tree(out: Path) -> dict[str, object]:
    """An OUT's gradebook, records, reports, feedback and LMS files, timings taken out."""
    found = {}
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out).as_posix()
        if not path.is_file() or path.name.startswith(".") or not (
                relative in ("gradebook.csv", "roster.csv") or relative.startswith(
                    ("students/", "reports/", "feedback/", "lms/"))):
            continue
        if relative.startswith("students/"):
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("seconds")
            data.pop("mac", None)  # it covers the seconds too
            data.pop("class_id", None)  # each OUT is a class of its own (a merge's too)
            found[relative] = data
        else:
            found[relative] = TIMING.sub("Graded in N s", path.read_text(encoding="utf-8"))
    return found


def make_env(extra: dict | None = None) -> dict:
    """The environment a term's commands run in: this machine's, with make told not to rebuild
    the course's .venv (the links point at this repository's own)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env["MAKEFLAGS"] = "-o .venv/.installed -o .venv/.installed-cpu"
    env.pop("PYTHONPATH", None)
    return {**env, **(extra or {})}
