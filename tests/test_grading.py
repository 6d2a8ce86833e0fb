"""`make grade`: a hostile class graded in the sandbox, hidden confirmation, and the interface.

The hostile class (tests/hostile/) is graded once (lessons 00-02, two students at a time); the
whole gradebook is compared with the one expected, and checksums show that nothing outside each
student's own sandbox changed. Timings are printed (run with -s to see them).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from course import ROOT
from course.checks import all_checks
from course.grading.hidden import confirm as hidden
from course.confirm.harness import resolve, run_case
from course.grading.submission import report_names
from course.handout import build as build_handout
from course.handout import problems as handout_problems
from course.stubs import generate
from tests.hostile.classroom import COLUMNS, EXPECTED, LESSONS, build_class
from tests.mutation import all_mutants, mutated_module

CELL_TIMEOUT = 10     # seconds; the endless loop costs one of these
MEMORY_MIB = 3000     # the huge allocation asks for 6 GiB
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap")


def tree_digest(folder: Path) -> dict[str, str]:
    """Relative path -> sha256 (symlinks by their target), for every entry under folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[relative] = "link:" + os.readlink(path)
        elif path.is_file():
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def grade(subs: Path, out: Path, *extra: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course.grading", "--submissions", str(subs),
                           "--out", str(out), *extra], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=timeout)


def _pwned_in_root() -> list[Path]:
    return [p for p in (ROOT / "PWNED.txt", ROOT / "solutions" / "PWNED.txt",
                        ROOT / "reports" / "PWNED.md") if p.exists()]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    subs, out, work = base / "submissions", base / "out", base / "work"
    work.mkdir()
    build_class(subs, out, work)
    before = tree_digest(subs)
    start = time.perf_counter()
    done = grade(subs, out, "--jobs", "2", "--lessons", *LESSONS, "--cell-timeout", str(CELL_TIMEOUT),
                 "--memory-limit", str(MEMORY_MIB), "--workdir", str(work), "--keep")
    seconds = time.perf_counter() - start
    print(done.stdout[-3000:], done.stderr[-3000:])
    print(f"hostile class of {len(EXPECTED)} graded in {seconds:.0f} s with --jobs 2")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    time.sleep(2)  # anything a student left running would keep writing now
    pwned = _pwned_in_root()
    for path in pwned:
        path.unlink()
    yield {"out": out, "subs": subs, "work": work, "before": before, "pwned_root": pwned,
           "stdout": done.stdout, "stderr": done.stderr}
    shutil.rmtree(work, ignore_errors=True)


@needs_bwrap
@pytest.mark.slow
def test_hostile_gradebook(hostile):
    with open(hostile["out"] / "gradebook.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "status", "total", "max", *COLUMNS, "flags"]
    got = {r["student"]: (r["status"], [int(r[c]) for c in COLUMNS], r["flags"]) for r in rows}
    assert got == EXPECTED
    for r in rows:
        assert r["total"] == str(sum(EXPECTED[r["student"]][1])) and r["max"] == "8"
    assert "symlinked_student (a symlink)" in hostile["stderr"]


@needs_bwrap
@pytest.mark.slow
def test_nothing_outside_a_sandbox_changed(hostile):
    out, subs = hostile["out"], hostile["subs"]
    assert tree_digest(subs) == hostile["before"], "a file under SUBMISSIONS changed"
    assert not hostile["pwned_root"], f"a student wrote into the repository: {hostile['pwned_root']}"
    for path in out.rglob("*"):
        assert "PWNED" not in path.name, path
        if path.is_file() and path.suffix in (".md", ".csv", ".json"):
            assert "PWNED = 1" not in path.read_text(encoding="utf-8"), path
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    names = {s["student"]: s["report_name"] for s in results["students"]}
    assert len(set(names.values())) == len(names)
    assert sorted(p.name for p in (out / "reports").iterdir()) == sorted(f"{n}.md" for n in names.values())
    for student, name in names.items():  # each report is its own student's
        assert (out / "reports" / f"{name}.md").read_text(encoding="utf-8").startswith(f"# {student}: ")
    pristine = next(hostile["work"].glob("grade-*/pristine"))
    fresh = build_handout(hostile["work"] / "fresh")
    fresh_digest = {k: v for k, v in tree_digest(fresh).items()
                    if not k.startswith(("course/grading", "course/grade"))}
    assert tree_digest(pristine) == fresh_digest, "the pristine copy changed"
    assert not list(hostile["work"].glob("PWNED*"))


@needs_bwrap
@pytest.mark.slow
def test_hostile_reports_say_why(hostile):
    out = hostile["out"]
    names = {s["student"]: s["report_name"] for s in
             json.loads((out / "results.json").read_text(encoding="utf-8"))["students"]}

    def report(student):
        return (out / "reports" / f"{names[student]}.md").read_text(encoding="utf-8")

    assert report("perfect").count("confirmed on hidden inputs): 1 / 1") == 8
    assert names["先生A"] != names["学生A"] and names["perfect"] == "perfect"
    assert "NOT IMPLEMENTED YET: 00.batched_dot" in report("untouched_stubs")
    bugs = report("one_bug_per_lesson")
    assert "FAIL 00.batched_dot, case" in bugs and "hint:" in bugs
    assert "SyntaxError" in report("syntax_error") and "exercises/softmax.py" in report("syntax_error")
    assert "TIMEOUT" in report("infinite_loop")
    assert "IndexError" in report("import_exception")
    assert "allocate" in report("huge_allocation")
    assert "NaN" in report("nan_outputs")
    assert "kernel died" in report("kills_kernel")
    misnamed = report("misnamed_files")
    assert "Softmax.py (taken as a helper module" in misnamed
    assert "softmax (1).py (not a module name; did you mean exercises/softmax.py?)" in misnamed
    fake = report("ships_fake_solutions")
    assert "softmax.py (a symlink)" in fake and "solutions/ (only exercises/*.py count)" in fake
    for cheat in ("cheat_patch_check", "cheat_reference_data", "cheat_patch_torch"):
        assert "PASS in the notebook, not confirmed on hidden inputs" in report(cheat), cheat
    assert "no solutions found" in report("cheat_walk_to_solutions")
    assert "kernel died" in report("cheat_pass_then_exit")
    assert len(report("flood_of_output")) < 20_000
    assert "UNSAFE" not in report("perfect")


# ---------------------------------------------------------------------- hidden confirmation

# Mutants whose bug cannot change any output on hidden inputs, with the reason. (None today.)
NOT_OUTPUT_CHANGING: dict[str, str] = {}
SEEDS = (11, 12, 13)


def test_every_check_has_hidden_specs():
    missing = sorted(set(all_checks()) - set(hidden.specs()))
    assert not missing, f"checks without hidden cases (add them to course/grading/hidden/lessonNN.py): {missing}"


def _confirm(check, impl, seed):
    cases = hidden.draw_cases(check, seed)
    expected = hidden.expected_outputs(check, cases)
    got = []
    for case in cases:
        try:
            got.append({"outputs": run_case(impl, case)})
        except Exception as err:  # noqa: BLE001
            got.append({"error": f"raised {type(err).__name__}: {err}"})
    return hidden.judge(check.id, cases, expected, got)


@pytest.mark.parametrize("seed", SEEDS)
def test_solutions_are_confirmed(seed):
    for check in all_checks().values():
        assert _confirm(check, resolve(check.target, "solutions"), seed) is None, check.id


def test_hidden_cases_differ_between_seeds():
    check = all_checks()["00.batched_dot"]
    first, second = hidden.draw_cases(check, 1), hidden.draw_cases(check, 2)
    assert not all(a["args"][0].shape == b["args"][0].shape and a["args"][0].equal(b["args"][0])
                   for a, b in zip(first, second))


@pytest.mark.parametrize("mutant", all_mutants(), ids=lambda m: m.id)
def test_hidden_confirmation_catches_mutant(mutant):
    if mutant.id in NOT_OUTPUT_CHANGING:
        pytest.skip(NOT_OUTPUT_CHANGING[mutant.id])
    check = all_checks()[mutant.check]
    buggy = getattr(mutated_module(mutant), check.attribute)
    for seed in SEEDS:
        assert _confirm(check, buggy, seed) is not None, f"seed {seed}: the mutant was confirmed"


# ----------------------------------------------------------------------------- the interface

def test_report_names_are_distinct_and_readable():
    names = report_names(["perfect", "先生A", "学生A", "a b", "a_b", "Perfect", "..\\x", "x"])
    assert len(set(names.values())) == len(names)
    assert len({n.casefold() for n in names.values()}) == len(names)
    assert names["x"] == "x" and names["先生A"] == "先生A" and names["学生A"] == "学生A"
    # names that clash once cleaned (or differ only in case) all get a hash: none is favoured
    assert names["a b"].startswith("a_b-") and names["a_b"].startswith("a_b-")
    assert names["perfect"].startswith("perfect-") and names["Perfect"].startswith("Perfect-")
    assert all("/" not in n and not n.startswith(".") for n in names.values())


def test_usage_errors_write_nothing(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    done = subprocess.run(["make", "-s", "grade", "SUBMISSIONS=", f"OUT={out}"], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode != 0 and "usage: make grade" in done.stderr
    empty = grade(subs, out)
    assert empty.returncode == 2 and "an empty class" in empty.stderr
    inside = grade(subs, ROOT / "grades")
    assert inside.returncode == 2 and "inside the course" in inside.stderr
    repo = grade(ROOT, out)
    assert repo.returncode == 2
    assert not out.exists() and not (ROOT / "grades").exists()
    assert not (ROOT / "gradebook.csv").exists()


def test_refuses_without_bubblewrap(tmp_path):
    subs = tmp_path / "subs"
    (subs / "someone" / "exercises").mkdir(parents=True)
    (subs / "someone" / "exercises" / "warmup.py").write_text("x = 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run([sys.executable, "-m", "course.grading", "--submissions", str(subs),
                           "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "apt-get install bubblewrap" in done.stderr and "--unsafe-no-sandbox" in done.stderr
    assert not (tmp_path / "out").exists()


@needs_bwrap
@pytest.mark.slow
def test_same_gradebook_whatever_jobs_and_relative_paths(tmp_path):
    """Relative SUBMISSIONS and OUT work; JOBS=1 and JOBS=3 give the same gradebook."""
    subs = tmp_path / "subs"
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    for name in ("b_perfect", "a_perfect"):
        (subs / name / "exercises").mkdir(parents=True)
        for file, text in perfect.items():
            (subs / name / "exercises" / file).write_text(text)
    (subs / "c_stub").mkdir()
    for file, text in generate().items():
        (subs / "c_stub" / file).write_text(text)
    books = []
    for jobs in ("1", "3"):
        done = subprocess.run([sys.executable, "-m", "course.grading", "--submissions", "subs",
                               "--out", f"out{jobs}", "--jobs", jobs, "--lessons", "00"],
                              cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        books.append((tmp_path / f"out{jobs}" / "gradebook.csv").read_text())
    assert books[0] == books[1]
    assert "a_perfect,ok,1,1,1," in books[0] and "c_stub,ok,0,1,0," in books[0]


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
    from course.grading.plan import CheckCell
    from course.grading.verdict import judge_cell

    cell = CheckCell("02_x.ipynb", 4, ["02.a", "02.b"])
    cases = {"02.a": 3, "02.b": 2}

    def record(stdout="", error=None, exit_code=None):
        outputs = [{"type": "stream", "name": "stdout", "text": stdout}]
        if error:
            outputs.append({"type": "error", "ename": "CheckFailed", "evalue": error})
        return {"outputs": outputs, "message": "", "kernel_exit": exit_code}

    both = record("debug print\nPASS 02.a (3 cases)\nPASS 02.b (2 cases)\n")
    assert {c: ok for c, (ok, _) in judge_cell(cell, both, cases).items()} == {"02.a": True, "02.b": True}
    second = judge_cell(cell, record("PASS 02.a (3 cases)\n", "FAIL 02.b, case 'x':\n ..."), cases)
    assert second["02.a"][0] and not second["02.b"][0]
    forged = judge_cell(cell, record("PASS 02.a (3 cases)\n", "FAIL 02.a, case 'x':\n ..."), cases)
    assert not forged["02.a"][0] and forged["02.b"][1].startswith("not run")
    assert not judge_cell(cell, record("PASS 02.a (1 cases)\nPASS 02.b (2 cases)\n"), cases)["02.a"][0]
    died = judge_cell(cell, record("PASS 02.a (3 cases)\nPASS 02.b (2 cases)\n", exit_code=0), cases)
    assert not died["02.a"][0] and "kernel died" in died["02.a"][1]


def test_lessons_option_and_points_file(tmp_path):
    from course.grading.plan import load_points, parse_lessons

    assert parse_lessons(["00-02"]) == ["00", "01", "02"]
    assert parse_lessons(["1,3", "7"]) == ["01", "03", "07"]
    assert parse_lessons(None) is None
    config = tmp_path / "points.toml"
    config.write_text('default = 2\n[points]\n"00.batched_dot" = 0.5\n')
    assert load_points(["00.batched_dot", "01.stable_softmax"], config) == {
        "00.batched_dot": 0.5, "01.stable_softmax": 2.0}
    assert load_points(["00.batched_dot"], tmp_path / "missing.toml") == {"00.batched_dot": 1.0}


def _one_perfect_student(tmp_path) -> Path:
    subs = tmp_path / "subs"
    (subs / "ada" / "exercises").mkdir(parents=True)
    for path in (ROOT / "solutions").glob("*.py"):
        shutil.copy(path, subs / "ada" / "exercises" / path.name)
    return subs


@needs_bwrap
@pytest.mark.slow
def test_full_notebooks_option(tmp_path):
    """FULL=1: the whole lesson under strict nbval, in the sandbox, then hidden confirmation."""
    done = grade(_one_perfect_student(tmp_path), tmp_path / "out", "--lessons", "00", "--full")
    assert done.returncode == 0, done.stderr
    assert "ada,ok,1,1,1," in (tmp_path / "out" / "gradebook.csv").read_text()
    assert "strict nbval" in (tmp_path / "out" / "reports" / "ada.md").read_text()


def test_unsafe_switch_is_stated_in_every_report(tmp_path):
    done = grade(_one_perfect_student(tmp_path), tmp_path / "out", "--lessons", "00",
                 "--unsafe-no-sandbox")
    assert done.returncode == 0, done.stderr
    assert "ada,ok,1,1,1," in (tmp_path / "out" / "gradebook.csv").read_text()
    assert "**UNSAFE" in (tmp_path / "out" / "reports" / "ada.md").read_text()
    assert "WITHOUT a sandbox" in done.stderr


def test_private_tmp_does_not_hide_an_environment_under_tmp():
    """A clone (and its .venv) under /tmp, as CI may use: the environment is bound after the
    sandbox's private /tmp, so it stays visible inside."""
    from course.grading.sandbox import Sandbox, python_roots

    cmd = Sandbox().command(["true"])
    tmpfs = cmd.index("--tmpfs")
    for root in python_roots():
        binds = [i for i in range(len(cmd) - 2)
                 if cmd[i] == "--ro-bind" and cmd[i + 1] == str(root)]
        assert binds and min(binds) > tmpfs, f"{root} is bound before the private /tmp"
