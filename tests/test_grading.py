"""Instructor tooling: the handout, and `make grade` on a synthetic class of hostile submissions.

The class is graded once (lessons 00-02, two students at a time) and the whole gradebook is
compared with the one written below. Timings are printed (run with -s to see them).
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import ROOT
from course.handout import build as build_handout
from course.handout import problems as handout_problems
from course.stubs import generate

LESSONS = ["00", "01", "02"]
COLUMNS = ["00.batched_dot", "01.stable_softmax", "01.scaled_scores", "02.causal_mask",
           "02.padding_mask", "02.attention_weights", "02.attention_forward", "02.single_head"]
CELL_TIMEOUT = 20     # seconds; the endless loop costs one of these
MEMORY_MIB = 3000     # the huge allocation asks for 6 GiB
GIB6 = 6 * 1024 ** 3

# student -> (status, points per check in COLUMNS order, flags)
EXPECTED = {
    # exercises/ = the solutions
    "perfect": ("ok", [1, 1, 1, 1, 1, 1, 1, 1], ""),
    # a whole course copy (the handout) with the stubs untouched
    "untouched_stubs": ("ok", [0, 0, 0, 0, 0, 0, 0, 0], ""),
    # one realistic bug per lesson: sums every axis; hard-coded dim=-1 in the softmax's sum;
    # padding mask off by one (the second check of its cell, so the first still counts)
    "one_bug_per_lesson": ("ok", [0, 0, 1, 1, 0, 1, 1, 1], ""),
    # softmax.py does not compile: lesson 01 and, through `from .softmax import`, lesson 02 fail
    "syntax_error": ("syntax-error", [1, 0, 0, 0, 0, 0, 0, 0], ""),
    # batched_dot never returns: its cell hits the per-cell limit, the notebooks go on
    "infinite_loop": ("timeout", [0, 1, 1, 1, 1, 1, 1, 1], ""),
    # attention.py raises at import: only lesson 02 is lost
    "import_exception": ("import-error", [1, 1, 1, 0, 0, 0, 0, 0], ""),
    # ships the real solutions/, forged checks, notebooks and reference data, and a symlink to
    # the instructor's solution: all ignored, its stubs are graded
    "ships_fake_solutions": ("ok", [0, 0, 0, 0, 0, 0, 0, 0], "ships-solutions"),
    # imports the reference code instead of writing it: there is none in the grading copy
    "imports_solutions": ("import-error", [0, 0, 0, 0, 0, 0, 0, 0],
                          "dynamic-import mentions-solutions"),
    # batched_dot asks for 6 GiB: refused under the memory limit, the rest is graded
    "huge_allocation": ("memory-limit", [0, 1, 1, 1, 1, 1, 1, 1], ""),
    # softmax without the max shift: NaN for large scores
    "nan_outputs": ("ok", [1, 0, 1, 1, 1, 1, 1, 1], ""),
    # batched_dot kills the kernel: lesson 00 is lost, the other notebooks get fresh kernels
    "kills_kernel": ("crashed", [0, 1, 1, 1, 1, 1, 1, 1], ""),
    # a course copy unpacked one folder deeper (as from a zip), solutions written in exercises/
    "nested_course_copy": ("ok", [1, 1, 1, 1, 1, 1, 1, 1], "ships-solutions"),
    # nothing to grade
    "empty": ("no-submission", [0, 0, 0, 0, 0, 0, 0, 0], ""),
}


def solution(name: str) -> str:
    return (ROOT / "solutions" / name).read_text()


def mutate(text: str, find: str, replace: str) -> str:
    assert text.count(find) == 1, f"{find!r} found {text.count(find)} times"
    return text.replace(find, replace)


def write_exercises(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def build_class(subs: Path) -> None:
    """One folder per student in `subs`, as collected from a class."""
    stubs = generate()
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    write_exercises(subs / "perfect" / "exercises", perfect)

    build_handout(subs / "untouched_stubs")

    write_exercises(subs / "one_bug_per_lesson" / "exercises", {
        **perfect,
        "warmup.py": mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()"),
        "softmax.py": mutate(solution("softmax.py"),
                             "exponentials / exponentials.sum(dim=dim, keepdim=True)",
                             "exponentials / exponentials.sum(dim=-1, keepdim=True)"),
        "attention.py": mutate(solution("attention.py"),
                               "(positions < lengths[:, None])[:, None, :]",
                               "(positions <= lengths[:, None])[:, None, :]"),
    })

    write_exercises(subs / "syntax_error" / "exercises", {
        **perfect,
        "softmax.py": mutate(solution("softmax.py"), "c = q.shape[-1]", "c = q.shape[-1"),
    })

    write_exercises(subs / "infinite_loop" / "exercises", {
        **perfect,
        "warmup.py": mutate(solution("warmup.py"), "    return (a * b).sum(dim=-1)\n",
                            "    total, i = 0, 0\n"
                            "    while i < a.shape[-1]:  # forgot i += 1\n"
                            "        total = total + a[..., i] * b[..., i]\n"
                            "    return total\n"),
    })

    write_exercises(subs / "import_exception" / "exercises", {
        **perfect,
        "attention.py": solution("attention.py") + "\nDEFAULT_MASK = causal_mask(4)[5]\n",
    })

    fake = subs / "ships_fake_solutions"
    write_exercises(fake / "exercises", {**stubs})
    (fake / "exercises" / "softmax.py").unlink()
    (fake / "exercises" / "softmax.py").symlink_to(ROOT / "solutions" / "softmax.py")
    write_exercises(fake / "solutions", perfect)
    write_exercises(fake / "course" / "checks", {
        "lesson00.py": "check_batched_dot = lambda f: print('PASS 00.batched_dot (4 cases)')\n"})
    (fake / "course" / "reference_data").mkdir(parents=True)
    (fake / "course" / "reference_data" / "00.batched_dot.pt").write_bytes(b"forged")
    (fake / "notebooks").mkdir()
    (fake / "notebooks" / "00_start_here.ipynb").write_text("{}")

    write_exercises(subs / "imports_solutions" / "exercises", {
        **stubs,
        "warmup.py": "from solutions.warmup import batched_dot  # noqa: F401\n",
        "softmax.py": ("import importlib, sys\nfrom pathlib import Path\n"
                       "for parent in Path(__file__).resolve().parents:\n"
                       "    sys.path.append(str(parent))\n"
                       "_ref = importlib.import_module('solutions.softmax')\n"
                       "stable_softmax, scaled_scores = _ref.stable_softmax, _ref.scaled_scores\n"),
    })

    write_exercises(subs / "huge_allocation" / "exercises", {
        **perfect,
        "warmup.py": mutate(solution("warmup.py"), "    return (a * b).sum(dim=-1)\n",
                            f"    scratch = torch.empty({GIB6}, dtype=torch.uint8)\n"
                            "    return (a * b).sum(dim=-1) + scratch[0] * 0\n"),
    })

    write_exercises(subs / "nan_outputs" / "exercises", {
        **perfect,
        "softmax.py": mutate(solution("softmax.py"),
                             "shifted = x - x.amax(dim=dim, keepdim=True)", "shifted = x"),
    })

    write_exercises(subs / "kills_kernel" / "exercises", {
        **perfect,
        "warmup.py": mutate(solution("warmup.py"), "    return (a * b).sum(dim=-1)\n",
                            "    import os\n    os._exit(3)\n"),
    })

    nested = subs / "nested_course_copy" / "attention-course-main"
    shutil.copytree(ROOT, nested, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "__pycache__", ".pytest_cache", "out"))
    write_exercises(nested / "exercises", perfect)

    (subs / "empty").mkdir()
    (subs / "empty" / "README.txt").write_text("I will hand it in next week\n")
    (subs / ".DS_Store").write_text("not a student")  # neither a folder nor a student


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    build_class(base / "submissions")
    out = base / "out"
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "course.grade", "--submissions", str(base / "submissions"),
         "--out", str(out), "--jobs", "2", "--lessons", *LESSONS,
         "--cell-timeout", str(CELL_TIMEOUT), "--memory-limit", str(MEMORY_MIB)],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
        timeout=1800)
    seconds = time.perf_counter() - start
    print(done.stdout[-4000:], done.stderr[-4000:])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    print(f"class of {len(EXPECTED)} graded in {seconds:.0f} s with --jobs 2")
    return out


@pytest.mark.slow
def test_exact_gradebook(graded):
    with open(graded / "gradebook.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "status", "total", "max", *COLUMNS, "flags"]
    got = {r["student"]: (r["status"], [int(r[c]) for c in COLUMNS], r["flags"]) for r in rows}
    assert got == EXPECTED
    for r in rows:
        assert r["total"] == str(sum(EXPECTED[r["student"]][1])) and r["max"] == "8"
    results = json.loads((graded / "results.json").read_text())
    for student in results["students"]:
        print(f"{student['student']}: {student['seconds']} s {student['lesson_seconds']}")


@pytest.mark.slow
def test_reports_say_why(graded):
    def report(name):
        return (graded / "reports" / f"{name}.md").read_text()

    assert report("perfect").count("- PASS ") == 8
    assert "NOT IMPLEMENTED YET: 00.batched_dot" in report("untouched_stubs")
    bugs = report("one_bug_per_lesson")
    assert "FAIL 00.batched_dot, case" in bugs and "hint:" in bugs
    assert "FAIL 02.padding_mask, case" in bugs
    assert "SyntaxError" in report("syntax_error") and "exercises/softmax.py" in report("syntax_error")
    assert "TIMEOUT" in report("infinite_loop")
    assert "IndexError" in report("import_exception")
    assert "No module named 'solutions'" in report("imports_solutions")
    fake = report("ships_fake_solutions")
    assert "softmax.py (a symlink)" in fake and "solutions/ (only exercises/*.py count)" in fake
    assert "allocate" in report("huge_allocation")
    assert "NaN" in report("nan_outputs")
    assert "kernel died" in report("kills_kernel")


def test_handout_has_no_solutions_and_working_checks(tmp_path):
    """In the handout the stubs fail every check and the solutions laid over them pass every one."""
    handout = build_handout(tmp_path / "handout")
    assert not (handout / "solutions").exists() and not (handout / "tests").exists()
    assert handout_problems(handout) == []
    assert sorted(p.name for p in (handout / "exercises").glob("*.py")) == sorted(generate())
    script = (
        "import importlib, sys\n"
        "from course.checks import all_checks, NotImplementedYet, CheckFailed\n"
        "mode = sys.argv[1]\n"
        "bad = []\n"
        "for check in all_checks().values():\n"
        "    impl = getattr(importlib.import_module('exercises.' + check.module), check.attribute)\n"
        "    try:\n"
        "        check(impl, quiet=True)\n"
        "        ok = mode == 'solutions'\n"
        "    except NotImplementedYet:\n"
        "        ok = mode == 'stubs'\n"
        "    except Exception as err:\n"
        "        ok, check = False, f'{check.id}: {type(err).__name__}: {err}'\n"
        "    if not ok:\n"
        "        bad.append(str(getattr(check, 'id', check)))\n"
        "print(len(all_checks()), 'checks;', 'wrong:', bad)\n"
        "sys.exit(1 if bad else 0)\n")
    env = {**os.environ, "PYTHONPATH": str(handout), "COURSE_REFERENCE": "recorded"}
    stubs = subprocess.run([sys.executable, "-c", script, "stubs"], cwd=handout, env=env,
                           capture_output=True, text=True, timeout=600)
    assert stubs.returncode == 0, stubs.stdout + stubs.stderr
    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copy(path, handout / "exercises" / path.name)
    solved = subprocess.run([sys.executable, "-c", script, "solutions"], cwd=handout, env=env,
                            capture_output=True, text=True, timeout=600)
    assert solved.returncode == 0, solved.stdout + solved.stderr
    blocked = subprocess.run([sys.executable, "-c", "import solutions"], cwd=handout, env=env,
                             capture_output=True, text=True)
    assert blocked.returncode != 0  # nothing in the handout to import


def test_a_check_passes_only_on_its_own_pass_line():
    from course.grade import CheckCell, judge_cell

    cell = CheckCell("02_x.ipynb", 4, ["02.a", "02.b"])
    cases = {"02.a": 3, "02.b": 2}

    def record(stdout="", error=None):
        outputs = [{"type": "stream", "name": "stdout", "text": stdout}]
        if error:
            outputs.append({"type": "error", "ename": "CheckFailed", "evalue": error})
        return {"outputs": outputs, "message": "", "kernel_exit": None}

    both = record("debug print\nPASS 02.a (3 cases)\nPASS 02.b (2 cases)\n")
    assert {c: ok for c, (ok, _) in judge_cell(cell, both, cases, None).items()} == {
        "02.a": True, "02.b": True}  # extra printing costs nothing
    second = judge_cell(cell, record("PASS 02.a (3 cases)\n", "FAIL 02.b, case 'x':\n ..."),
                        cases, None)
    assert second["02.a"][0] and not second["02.b"][0]
    forged = judge_cell(cell, record("PASS 02.a (3 cases)\n", "FAIL 02.a, case 'x':\n ..."),
                        cases, None)  # the student's code printed the line, then the check failed
    assert not forged["02.a"][0] and forged["02.b"][1].startswith("not run")
    wrong_count = judge_cell(cell, record("PASS 02.a (1 cases)\nPASS 02.b (2 cases)\n"), cases, None)
    assert not wrong_count["02.a"][0]
    crashed = judge_cell(cell, {**record(), "kernel_exit": 3}, cases, None)
    assert "kernel died" in crashed["02.a"][1]


def test_lessons_option_and_points_file(tmp_path):
    from course.grade import load_points, parse_lessons

    assert parse_lessons(["00-02"]) == ["00", "01", "02"]
    assert parse_lessons(["1,3", "7"]) == ["01", "03", "07"]
    assert parse_lessons(None) is None
    config = tmp_path / "points.toml"
    config.write_text('default = 2\n[points]\n"00.batched_dot" = 0.5\n')
    assert load_points(["00.batched_dot", "01.stable_softmax"], config) == {
        "00.batched_dot": 0.5, "01.stable_softmax": 2.0}
    assert load_points(["00.batched_dot"], tmp_path / "missing.toml") == {"00.batched_dot": 1.0}
