"""OUT across runs: a late student adds a row and changes no other, STUDENTS= regrades only those
folders (whole names, spaces and all) as OUT's class was graded (its lessons, limits, roster), the
LMS files follow every run, a run killed or stopped keeps every finished student and the same
command resumes, a run that would grade differently from the class in OUT is refused before any
set-up; and FULL=1 grades a perfect student `ok` (it gave everyone `memory-limit`). Small
classes, lesson 00 only."""
from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import ROOT
from course.stubs import generate
from tests.hostile.classroom import mutate, solution, write

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap")]
PERFECT = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
BUG = mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()")
ENDLESS = mutate(solution("warmup.py"), "    return (a * b).sum(dim=-1)\n",
                 "    while True:\n        pass\n")


def command(subs: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "course.grading", "--submissions", str(subs), "--out", str(out),
            "--lessons", "00", *extra]


def grade(subs: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(subs, out, *extra), cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900)


def rows(out: Path) -> dict[str, str]:
    text = (out / "gradebook.csv").read_text()
    return {r["student"]: ",".join(r.values()) for r in csv.DictReader(io.StringIO(text))}


def snapshot(out: Path, names: list[str]) -> dict[str, bytes]:
    return {f"{d}/{n}{s}": (out / d / f"{n}{s}").read_bytes()
            for n in names for d, s in (("students", ".json"), ("reports", ".md"))}


def test_late_students_and_regrades_change_no_other_row(tmp_path):
    subs, late, out = tmp_path / "subs", tmp_path / "late", tmp_path / "out"
    write(subs / "ada" / "exercises", PERFECT)
    write(subs / "bob" / "exercises", {**PERFECT, "warmup.py": BUG})
    write(subs / "cy", generate())
    first = grade(subs, out)
    assert first.returncode == 0, first.stderr
    book = rows(out)
    assert book == {"ada": "ada,ok,1,1,1,", "bob": "bob,ok,0,1,0,", "cy": "cy,ok,0,1,0,"}
    assert stat.S_IMODE((out / ".seed").stat().st_mode) == 0o600
    kept = snapshot(out, ["ada", "bob", "cy"])

    write(late / "dee" / "exercises", PERFECT)  # one late student, in a folder of their own
    second = grade(late, out)
    assert second.returncode == 0, second.stderr
    assert rows(out) == {**book, "dee": "dee,ok,1,1,1,"}
    assert snapshot(out, ["ada", "bob", "cy"]) == kept

    write(subs / "bob" / "exercises", PERFECT)  # bob hands in a fix: regrade bob alone
    third = grade(subs, out, "--students", "bob")
    assert third.returncode == 0, third.stderr
    assert "bob: ok, 1/1" in third.stdout and "ada:" not in third.stdout
    assert rows(out) == {**book, "dee": "dee,ok,1,1,1,", "bob": "bob,ok,1,1,1,"}
    assert snapshot(out, ["ada", "cy"]) == {k: v for k, v in kept.items() if "bob" not in k}

    again = grade(subs, out)  # nothing left to grade; the changed files would be named
    assert again.returncode == 0 and "grading 0 submission(s)" in again.stdout
    other_plan = grade(subs, out, "--lessons", "00-01")
    assert other_plan.returncode == 2 and "graded differently (checks" in other_plan.stderr
    other_seed = grade(subs, out, "--seed", "12345")
    assert other_seed.returncode == 2 and "another seed" in other_seed.stderr
    unknown = grade(subs, out, "--students", "bbo")
    assert unknown.returncode == 2 and "did you mean 'bob'" in unknown.stderr
    assert rows(out) == {**book, "dee": "dee,ok,1,1,1,", "bob": "bob,ok,1,1,1,"}


def _start(subs: Path, out: Path) -> subprocess.Popen:
    """The grader started as from a script's background (`make grade ... &`, a CI job): with
    SIGINT ignored, which it inherits; its Ctrl-C must stop it all the same."""
    return subprocess.Popen(command(subs, out, "--cell-timeout", "20"), cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))


def _when_graded(proc: subprocess.Popen, out: Path, count: int) -> None:
    """Until `count` students are finished: their records written, then the gradebook with them
    (a student is finished when both are; a kill in between leaves the gradebook one behind,
    whole, and the record, which the next run picks up)."""
    deadline = time.monotonic() + 600

    def finished() -> int:
        if not (out / "gradebook.csv").exists():
            return 0
        return min(len(list((out / "students").glob("*.json"))), len(rows(out)))

    while finished() < count:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)


def _when_started(proc: subprocess.Popen, out: Path, name: str) -> None:
    """Until the run has begun grading `name`: the grader makes its raw/ folder then."""
    deadline = time.monotonic() + 600
    while not (out / "raw" / name).is_dir():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


def test_a_killed_or_stopped_run_keeps_its_students_and_resumes(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    for name in ("ada", "bob", "cy"):
        write(subs / name / "exercises", PERFECT)
    write(subs / "zed" / "exercises", {**PERFECT, "warmup.py": ENDLESS})  # graded last, slowly

    killed = _start(subs, out)
    _when_graded(killed, out, 2)
    killed.kill()  # SIGKILL: no clean-up at all
    killed.communicate()
    book = rows(out)  # whole and valid: written atomically after each student
    assert 2 <= len(book) <= 3 and all(line.endswith(",ok,1,1,1,") for line in book.values())

    shutil.rmtree(out / "raw" / "zed", ignore_errors=True)  # if the killed run had begun it
    stopped = _start(subs, out)  # resumes; Ctrl-C while zed runs
    _when_graded(stopped, out, 3)  # cy recorded,
    _when_started(stopped, out, "zed")  # zed begun: 20 s of endless loop before its record
    # (not frozen first: a stopped process takes a signal on whichever thread runs first when
    # it resumes, and a worker thread's Ctrl-C does not wake the main one)
    stopped.send_signal(signal.SIGINT)
    _, stderr = stopped.communicate(timeout=120)
    assert stopped.returncode == 130 and "the same command resumes" in stderr, stderr
    assert "resuming:" in stderr and set(rows(out)) == {"ada", "bob", "cy"}

    done = grade(subs, out, "--cell-timeout", "20")
    assert done.returncode == 0, done.stderr
    assert "grading 1 submission(s)" in done.stdout
    assert rows(out)["zed"] == "zed,timeout,0,1,0,"
    assert json.loads((out / "results.json").read_text())["checks"] == ["00.batched_dot"]


def test_full_notebooks_do_not_mistake_printed_text_for_memory_errors(tmp_path):
    """Lesson 05's committed outputs print a recorded torch.cuda.OutOfMemoryError."""
    write(tmp_path / "subs" / "ada" / "exercises", PERFECT)
    done = subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(tmp_path / "subs"),
         "--out", str(tmp_path / "out"), "--lessons", "05", "--full"], cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert rows(tmp_path / "out")["ada"] == "ada,ok,2,2,1,1,", (tmp_path / "out" / "reports" /
                                                                "ada.md").read_text()


ROSTER = "folder,lms_id,email\nada,1,a@x\nAnn Lee,2,b@x\ncy,3,c@x\n"


def canvas_totals(out: Path) -> dict[str, str]:
    text = (out / "lms" / "canvas.csv").read_text()
    return {r["ID"]: r["Attention course, lesson 00"] for r in csv.DictReader(io.StringIO(text))
            if r["Student"] != "Points Possible"}


def test_a_regrade_grades_as_out_was_graded_and_the_lms_files_follow(tmp_path):
    """The first run sets lessons, a limit and the roster; a regrade of 'Ann Lee' (a folder
    name with a space) and a late student's run give none of them again, and the LMS files
    follow both."""
    subs, out, roster = tmp_path / "subs", tmp_path / "out", tmp_path / "roster.csv"
    write(subs / "ada" / "exercises", PERFECT)
    write(subs / "Ann Lee" / "exercises", {**PERFECT, "warmup.py": BUG})
    roster.write_text(ROSTER)
    first = grade(subs, out, "--cell-timeout", "30", "--roster", str(roster))
    assert first.returncode == 0, first.stderr
    assert canvas_totals(out) == {"1": "1", "2": "0", "3": "0"}

    write(subs / "Ann Lee" / "exercises", PERFECT)
    regrade = subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(subs), "--out", str(out),
         "--students", "Ann Lee"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900)
    assert regrade.returncode == 0, regrade.stderr
    assert "lessons 00; its points; cell_timeout; hidden_timeout" in regrade.stderr
    assert "Ann Lee: ok, 1/1" in regrade.stdout and "set-up " in regrade.stdout
    assert canvas_totals(out) == {"1": "1", "2": "1", "3": "0"}
    assert json.loads((out / "class.json").read_text())["settings"]["cell_timeout"] == 30

    write(subs / "cy" / "exercises", PERFECT)  # late: the same command without any option
    late = subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(subs), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=900)
    assert late.returncode == 0, late.stderr
    assert "grading 1 submission(s)" in late.stdout
    assert canvas_totals(out) == {"1": "1", "2": "1", "3": "1"}


def test_mistakes_are_refused_before_the_set_up(tmp_path):
    """A roster that cannot be used, a folder STUDENTS does not name, an OUT inside the course,
    other lessons than OUT's: each refused with its fix, before the set-up (nothing printed of
    it, nothing written)."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    write(subs / "ada" / "exercises", PERFECT)
    bad = tmp_path / "roster.csv"
    bad.write_text("student,lms_id\nada,1\n")
    for extra, said in ((["--roster", str(bad)], "needs a `folder` column"),
                        (["--students", "Ann Lee"], "STUDENTS names no folder"),
                        (["--roster", str(ROOT / "roster.csv")], "ROSTER=")):
        done = grade(subs, out, *extra)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert "set-up" not in done.stdout and not out.exists()
    inside = grade(subs, ROOT / "grades")
    assert inside.returncode == 2 and "keep the class beside the course" in inside.stderr
    assert grade(subs, out).returncode == 0
    other = grade(subs, out, "--lessons", "00-01")
    assert other.returncode == 2 and "OUT has lessons 00, this run 00, 01" in other.stderr
    assert "set-up" not in other.stdout
