"""OUT across runs (issue 22): a late student adds a row and changes no other, STUDENTS= regrades
only those folders, a run killed or stopped keeps every finished student and the same command
resumes, a run that would grade differently from the class in OUT is refused; and FULL=1 grades
a perfect student `ok` (it gave everyone `memory-limit`). Small classes, lesson 00 only."""
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
    return subprocess.Popen(command(subs, out, "--cell-timeout", "20"), cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


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

    stopped = _start(subs, out)  # resumes; Ctrl-C while zed runs
    _when_graded(stopped, out, 3)
    time.sleep(1)
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
