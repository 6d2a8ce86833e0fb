"""A Moodle term as Moodle writes it (tests/lms_downloads.py, from Moodle's own code): names Moodle
cleans, two students of one name told apart by participant id, blind marking, a zip from Windows
PowerShell, a late student and a resubmission in a second download. Collected, graded by the real
grader (sandboxed), imported through a model of Moodle's own importer: every student gets the
grade their code deserves, in the right row. (The Canvas term runs as documented in
tests/test_docs_commands.py.)"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from course import ROOT
from course.stubs import generate
from tests import term_class as term
from tests.lms_downloads import MoodleAssignment, powershell_zip
from tests.lms_formats import moodle_import

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("bwrap") is None,
                                                   reason="bubblewrap (bwrap) is not installed")]
TITLE = "Attention course, lessons 00-01"
# folder, Moodle ID number, full name, participant id (of this assignment)
ROSTER = [("liam", "S-101", "Liam O'Brien", ""), ("wei1", "S-102", "Wei Zhang", "2000102"),
          ("wei2", "S-103", "Wei Zhang", "2000103"), ("ada", "S-104", "Ada Lovelace", ""),
          ("bob", "S-105", "Bob Babbage", ""), ("grace", "S-106", "Grace Hopper", "")]
# what each student's code deserves: folder -> (status, total, max, per check..., flags)
DESERVED = {"ada": "ok,3,3,1,1,1,", "bob": "ok,3,3,1,1,1,", "grace": "ok,3,3,1,1,1,",
            "liam": "ok,3,3,1,1,1,", "wei1": "ok,2,3,1,1,0,", "wei2": "ok,3,3,1,1,1,"}


def _exercises(files: dict[str, str]) -> dict[str, str]:
    return {f"exercises/{name}": text for name, text in files.items()}


def test_a_moodle_term_gives_every_student_their_grade(tmp_path):
    klass = tmp_path / "class"
    klass.mkdir()
    roster = klass / "roster.csv"
    roster.write_text("folder,ID number,name,participant\n" + "".join(
        f'{f},{i},"{n}",{p}\n' for f, i, n, p in ROSTER), encoding="utf-8")
    moodle = MoodleAssignment()
    perfect = {n: term.PERFECT[n] for n in ("warmup.py", "softmax.py")}
    moodle.submit("Liam O'Brien", 2000101, perfect)
    moodle.submit("Wei Zhang", 2000102, {**perfect, "softmax.py": term.SCORES_BUG})
    moodle.submit("Wei Zhang", 2000103, perfect)
    moodle.submit("Ada Lovelace", 2000104, {"exercises.zip": powershell_zip(_exercises(perfect))})
    moodle.submit("Bob Babbage", 2000105, generate())
    (klass / "download.zip").write_bytes(moodle.download())
    run = _runner(klass)
    run("collect", "--from", "download.zip", "--submissions", "collected", "--roster", "roster.csv")
    grade = ("--submissions", "collected", "--out", "grades", "--jobs", "2", "--lessons", "00-01",
             "--roster", "roster.csv")
    run(*grade)
    first = term.rows(klass / "grades")
    assert first["bob"] == "ok,0,3,0,0,0," and "grace" not in first
    moodle.submit("Bob Babbage", 2000105, perfect)               # a resubmission
    moodle.submit("Grace Hopper", 2000106, perfect)              # late
    (klass / "download-2.zip").write_bytes(moodle.download())
    collected = run("collect", "--from", "download-2.zip", "--submissions", "collected",
                    "--roster", "roster.csv")
    assert "1 new, 1 with new files" in collected.stdout
    regraded = run(*grade)
    assert "regrading 1 student(s) whose files changed" in regraded.stderr
    assert term.rows(klass / "grades") == DESERVED
    users = [{"id": k, "username": f, "idnumber": i, "email": f"{f}@x"}
             for k, (f, i, _, _) in enumerate(ROSTER, start=1)]
    imported = moodle_import((klass / "grades" / "lms" / "moodle.csv").read_text(), users,
                             "ID number", "useridnumber", [TITLE])
    assert imported["ok"]
    assert {users[k - 1]["username"]: g[TITLE] for k, g in imported["grades"].items()} == \
        {f: float(row.split(",")[1]) for f, row in DESERVED.items()}


def _runner(klass):
    def run(*argv):
        done = subprocess.run([sys.executable, "-m", "course.grading", *argv], cwd=klass,
                              capture_output=True, text=True, timeout=900,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done
    return run
