"""`make grade`: hidden confirmation, and the interface. The hostile class is in
tests/test_grading_hostile.py, the limits in tests/test_grading_limits.py, OUT across runs
(resume, regrade, late students) in tests/test_grading_out.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course import ROOT
from course.checks import all_checks
from course.grading.hidden import confirm as hidden
from course.confirm.harness import resolve, run_case
from course.grading.names import check_distinct
from course.handout import build as build_handout
from course.handout import problems as handout_problems
from course.stubs import generate
from tests.mutation import all_mutants, mutated_module

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap")


def grade(subs: Path, out: Path, *extra: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "course.grading", "--submissions", str(subs),
                           "--out", str(out), *extra], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=timeout)


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
    folders = ["perfect", "先生A", "学生A", "a b", "a_b", "Perfect", "..\\x", "x", "Ann Lee",
               "Ann_Lee-a36e143c", "Ann_Lee~a36e143c5359", "--out=evil", "=1+1", "é", "e\u0301"]
    names = check_distinct(folders)
    assert len(set(names.values())) == len({n.casefold() for n in names.values()}) == len(folders)
    # a plain lower-case file name stays as it is; anything else gets "~" and its own hash
    assert names["x"] == "x" and names["perfect"] == "perfect" and names["a_b"] == "a_b"
    assert names["a b"].startswith("a_b~") and names["Perfect"].startswith("Perfect~")
    assert names["先生A"].startswith("先生A~") and names["Ann Lee"].startswith("Ann_Lee~")
    assert names["--out=evil"].startswith("out_evil~")
    assert all("/" not in n and not n.startswith((".", "-")) for n in names.values())


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
    from course.grading.plan import PointsError, load_points, parse_lessons

    assert parse_lessons(["00-02"]) == ["00", "01", "02"]
    assert parse_lessons(["1,3", "7"]) == ["01", "03", "07"]
    assert parse_lessons(None) is None
    config = tmp_path / "points.toml"
    config.write_text('default = 2\n[points]\n"00.batched_dot" = 0.5\n"07.gate_headwise" = 3\n')
    assert load_points(["00.batched_dot", "01.stable_softmax", "08.gate_headwise"], config) == {
        "00.batched_dot": 0.5, "01.stable_softmax": 2.0, "08.gate_headwise": 3.0}  # an alias
    assert load_points(["00.batched_dot"], tmp_path / "missing.toml") == {"00.batched_dot": 1.0}
    config.write_text('[points]\n"06.gated_mha" = 3\n"00.batched_dot" = 1\n')
    with pytest.raises(PointsError) as error:
        load_points(["00.batched_dot"], config)
    assert "no check is called '06.gated_mha'" in str(error.value.code)
    assert "06.full_module" in str(error.value.code) and "07.gate_headwise" in str(error.value.code)


def test_the_instructors_guide_points_example_is_valid(tmp_path):
    """The TOML example in docs/instructors.md loads: every check it names exists."""
    import re

    from course.grading.plan import load_points

    guide = (ROOT / "docs" / "instructors.md").read_text()
    example = re.search(r"```toml\n(.*?)```", guide, re.S)[1]
    (tmp_path / "points.toml").write_text(example)
    assert load_points(["00.batched_dot"], tmp_path / "points.toml")["00.batched_dot"] == 0


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
    from course.grading.sandbox import Layout, bwrap_args, python_roots

    cmd = bwrap_args(Layout(tmpfs={"/tmp": 1 << 20}), [])
    tmpfs = cmd.index("--tmpfs")
    for root in python_roots():
        binds = [i for i in range(len(cmd) - 2)
                 if cmd[i] == "--ro-bind" and cmd[i + 1] == str(root)]
        assert binds and min(binds) > tmpfs, f"{root} is bound before the private /tmp"


def test_shards_are_a_deterministic_partition_of_the_class(tmp_path):
    from course.grading.folders import UsageError, class_folders, parse_shard

    subs = tmp_path / "subs"
    folders = ["ada", "bob", "cy", "dee", "eve", "Ann Lee", "zed"]
    for name in folders:
        (subs / name).mkdir(parents=True)
    out = tmp_path / "out"
    shares = [[p.name for p in class_folders(subs, out, shard=parse_shard(f"{k}/3")).chosen]
              for k in (1, 2, 3)]
    assert shares == [["Ann Lee", "cy", "zed"], ["ada", "dee"], ["bob", "eve"]]  # sorted, every 3rd
    assert sorted(sum(shares, [])) == sorted(folders)
    assert [p.name for p in class_folders(subs, out, ["dee", "ada"], parse_shard("2/3")).chosen] \
        == ["dee", "ada"]
    for bad in ("0/3", "4/3", "2", "a/b"):
        with pytest.raises(UsageError):
            parse_shard(bad)
    with pytest.raises(UsageError, match="outside shard 1/3"):
        class_folders(subs, out, ["ada"], parse_shard("1/3"))


# ------------------------------------------------------------ one bug is charged once

def test_the_public_seed_is_refused():
    from course.confirm.public import PUBLIC_SEED
    from course.grading.outdir import OutError, check_seed

    with pytest.raises(OutError, match="public"):
        check_seed(PUBLIC_SEED)
    check_seed(PUBLIC_SEED + 1)


def test_an_isolated_entry_holds_only_the_failing_exercises_calls():
    """The call tables hold the reference's outputs: a sandbox gets those of the exercises that
    fail for this student and no others (a passing one is never answered for it)."""
    from course.grading.hidden_run import isolated_entry
    from course.grading.prepare import _graded
    from course.grading.plan import lesson_plan

    checks, entries = _graded(lesson_plan(ROOT, ["01", "02"]), None, 7)
    assert all("calls" not in entry for entry in entries)  # the first pass: no tables at all
    weights = checks["02.attention_weights"]
    assert set(weights.uses) == {"01.scaled_scores", "01.stable_softmax"}
    assert isolated_entry(weights, set()) is None
    assert isolated_entry(weights, {"00.batched_dot"}) is None
    entry, blockers = isolated_entry(weights, {"01.scaled_scores"})
    assert blockers == ["01.scaled_scores"] and entry["stand_ins"] == ["softmax:scaled_scores"]
    assert entry["cases"] is weights.cases
    targets = {call["target"] for table in entry["calls"] for call in table}
    assert targets == {"softmax:scaled_scores"}


ONE_BUG = [  # (file, snippet, bug, lessons, the one check that must lose its point, a dependent)
    ("softmax.py", "q @ k.transpose(-2, -1) / math.sqrt(c)", "q @ k.transpose(-2, -1)", "01-02",
     "01.scaled_scores", "02.attention_weights"),
    ("transformer.py", "return x * cos + rotated * sin", "return x * sin + rotated * cos", "07",
     "07.rope", "07.decoder_block"),
]


@needs_bwrap
@pytest.mark.parametrize("file, find, bug, lessons, root, dependent", ONE_BUG,
                         ids=["scaled_scores", "rope"])
def test_one_upstream_bug_costs_one_point(tmp_path, file, find, bug, lessons, root, dependent):
    """One bug costs one point: scaled_scores without / sqrt(c) loses 01.scaled_scores only, and RoPE with cos
    and sin swapped 07.rope only; every exercise that calls them is right, so it earns its
    points (confirmed on hidden inputs with the reference in place of the buggy one), and the
    student's record says which."""
    import csv
    import json

    subs = _one_perfect_student(tmp_path)
    path = subs / "ada" / "exercises" / file
    source = path.read_text()
    assert source.count(find) == 1
    path.write_text(source.replace(find, bug))
    out = tmp_path / "out"
    done = grade(subs, out, "--lessons", lessons)
    assert done.returncode == 0, done.stderr
    row = next(csv.DictReader((out / "gradebook.csv").open()))
    lost = [c for c, v in row.items() if c[:2].isdigit() and v != "1"]
    assert lost == [root], row
    record = json.loads(next((out / "students").glob("*.json")).read_text())
    by_id = {c["id"]: c for c in record["checks"]}
    assert by_id[dependent]["blocked_by"] == [root]
    assert by_id[dependent]["confirmed"] is True
