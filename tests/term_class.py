"""A term of two Canvas assignments as Canvas hands it over (tests/lms_downloads.py, written from
canvas-lms' own code), and a course folder with a class folder beside it, for the tests that run an
instructor's term as documented (test_docs_commands.py, test_slurm.py).

The course folder is a copy made of links to this repository's top-level files and folders (the
grader resolves them to the repository itself), so `make grade SUBMISSIONS=../class/...` runs
as written, with `../class` beside it inside the test's temporary folder.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from course import ROOT
from course.stubs import generate
from tests.hostile.classroom import mutate, solution
from tests.lms_downloads import CanvasCourse, plain_zip, powershell_zip

LESSONS = "00-01"
COLUMNS = ["00.batched_dot", "01.stable_softmax", "01.scaled_scores"]
A2_COLUMNS = ["02.causal_mask", "02.padding_mask", "02.attention_weights",
              "02.attention_forward", "02.single_head"]
PERFECT = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
WARMUP_BUG = mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()")
SCORES_BUG = mutate(solution("softmax.py"), "/ math.sqrt(c)", "/ c")
CAUSAL_BUG = mutate(solution("attention.py"), "dtype=torch.bool).tril()", "dtype=torch.bool).triu()")
# folder, Canvas user id, Canvas sortable name, email, name as the roster has it
ROSTER = [("ada", "4211", "Lovelace, Ada", "ada@example.edu", "Lovelace, Ada"),
          ("bob", "4212", "Babbage, Bob", "bob@example.edu", "Babbage, Bob"),
          ("cy", "4213", "Young, Cy", "cy@example.edu", "Young, Cy"),
          ("dee", "4214", "Dee, Dee", "dee@example.edu", "Dee, Dee"),
          ("Ann Lee", "4215", "Lee, Ann", "ann@example.edu", "Lee, Ann"),
          ("学生A", "4216", "学生A", "xuesheng@example.edu", "学生A"),
          ("alan", "4217", "Turing, Alan", "alan@example.edu", "Turing, Alan"),
          ("katherine", "4218", "Johnson, Katherine", "kj@example.edu", "Johnson, Katherine"),
          ("barbara", "4219", "Liskov, Barbara", "bl@example.edu", "Liskov, Barbara"),
          ("emmy", "4220", "Noether, Emmy", "en@example.edu", "Noether, Emmy"),
          ("liam", "4221", "Hunt, Liam", "lh@example.edu", "Hunt, Liam")]
MARIE = (4230, "Curié, Marie")      # in no roster: her folder is named by the download
A2_DOWNLOADED = 1795176000          # 2026-11-20 12:00 UTC: when the instructor downloaded A2
LIAM_EXTENSION = "2026-11-25"       # granted after A2 was graded

# What each student's code deserves, by the files they handed in (see canvas_term):
# folder -> "status,total,max,<points per check>,flags" of the final gradebooks
EXPECTED = {"Ann Lee": "ok,3,3,1,1,1,", "ada": "ok,3,3,1,1,1,", "alan": "ok,3,3,1,1,1,",
            "barbara": "ok,3,3,1,1,1,", "bob": "ok,0,3,0,0,0,", "curiémarie": "ok,1,3,1,0,0,",
            "cy": "ok,2,3,0,1,1,", "dee": "ok,1,3,1,0,0,misnamed-files",
            "katherine": "ok,3,3,1,1,1,", "学生A": "ok,3,3,1,1,1,late"}
EXPECTED_A2 = {"ada": "ok,5,5,1,1,1,1,1,", "alan": "ok,5,5,1,1,1,1,1,",
               "barbara": "ok,5,5,1,1,1,1,1,", "cy": "ok,4,5,0,1,1,1,1,",
               "emmy": "ok,5,5,1,1,1,1,1,", "katherine": "ok,5,5,1,1,1,1,1,",
               "liam": "ok,5,5,1,1,1,1,1,extension"}


def course_copy(base: Path) -> Path:
    """base/attention-course: a link to each top-level entry of the repository (not .git)."""
    course = base / "attention-course"
    course.mkdir(parents=True)
    for entry in ROOT.iterdir():
        if entry.name not in (".git", "build", ".pytest_cache"):
            (course / entry.name).symlink_to(entry)
    return course


def _ex(files: dict[str, str]) -> dict[str, str]:
    return {f"exercises/{n}": t for n, t in files.items()}


def canvas_term() -> tuple[CanvasCourse, dict[str, bytes]]:
    """The term's Canvas downloads, as Canvas writes them (tests/lms_downloads.py): assignment 1
    (lessons 00-01), its later download (a resubmission, a late student), assignment 2 (lesson 02).
    Returns the course and {name: zip bytes}."""
    course = CanvasCourse()
    for _folder, uid, sortable, *_ in ROSTER:
        course.enrol(int(uid), sortable)
    course.enrol(*MARIE)
    uid = {folder: int(u) for folder, u, *_ in ROSTER}
    stub = generate()
    perfect = {n: PERFECT[n] for n in ("warmup.py", "softmax.py")}
    course.submit(uid["ada"], {"exercises.zip": plain_zip(_ex(PERFECT))})
    course.submit(uid["bob"], {"exercises.zip": plain_zip(_ex(stub))})
    course.submit(uid["cy"], {"exercises.zip": plain_zip(_ex({**PERFECT, "warmup.py": WARMUP_BUG}))})
    course.submit(uid["dee"], {"warmup.py": PERFECT["warmup.py"],
                               "softmax (1).py": PERFECT["softmax.py"]})  # as a browser saved it
    course.submit(uid["Ann Lee"], {"exercises.zip": plain_zip(_ex({**PERFECT,
                                                                   "softmax.py": SCORES_BUG}))})
    course.submit(uid["alan"], perfect)
    course.submit(uid["katherine"], {"exercises.zip": powershell_zip(_ex(PERFECT))})
    course.submit(uid["barbara"], {"warmup.py": PERFECT["warmup.py"], "softmax.py": SCORES_BUG})
    course.submit(MARIE[0], {"warmup.py": PERFECT["warmup.py"]})
    downloads = {"a1/download.zip": course.download()}
    # before the due date ends: barbara hands in both files again (Canvas: warmup-1.py,
    # softmax-1.py); after it, 学生A hands in late
    course.submit(uid["barbara"], perfect)
    course.submit(uid["学生A"], {"exercises.zip": plain_zip(_ex(PERFECT))}, late=True)
    downloads["a1/download-2.zip"] = course.download()
    course.new_assignment()
    lesson02 = {n: PERFECT[n] for n in ("softmax.py", "attention.py")}
    course.submit(uid["ada"], {"exercises.zip": plain_zip(_ex(PERFECT))})  # exercises-1.zip
    course.submit(uid["alan"], lesson02)                                    # softmax-1.py
    course.submit(uid["barbara"], lesson02)                                 # softmax-2.py
    course.submit(uid["emmy"], {"attention.py": PERFECT["attention.py"]})   # lesson 02 only
    course.submit(uid["liam"], lesson02, late=True)
    course.submit(uid["cy"], {**lesson02, "attention.py": CAUSAL_BUG})
    course.submit(uid["katherine"], {"exercises.zip": powershell_zip(_ex(PERFECT))})
    downloads["a2/download.zip"] = course.download()
    return course, downloads


def write_download(klass: Path, name: str, data: bytes, when: int | None = None) -> None:
    path = klass / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if when is not None:
        os.utime(path, (when, when))


def roster(path: Path, extensions: dict[str, str] | None = None) -> None:
    extensions = extensions or {}
    lines = ["folder,lms_id,email,name,section,extension"]
    lines += [f'{folder},{uid},{email},"{name}",Section 1,{extensions.get(folder, "")}'
              for folder, uid, _, email, name in ROSTER]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def the_correction(collected: Path) -> None:
    """Ann Lee's corrected softmax.py, which reached the instructor by mail."""
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
