"""`make check`: the progress table over every exercise (course/progress.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from course import ROOT
from course.checks import all_checks
from course.progress import progress, table, wrap

STATUSES = ("PASS", "FAIL", "BLOCKED", "TODO")


def statuses(rows):
    return {row.check: row.status for row in rows}


def test_untouched_stubs_are_all_todo():
    rows = progress("exercises")
    assert [r.check for r in rows if r.status != "TODO"] == []
    assert sorted(statuses(rows)) == sorted(all_checks())  # every check, discovered


def test_the_lesson_column_is_the_checks_lesson_not_its_id():
    rows = {r.check: r for r in progress("exercises")}
    for check in all_checks().values():
        assert rows[check.id].lesson == check.lesson
    assert rows["08.gate_elementwise"].lesson == "08"


def test_the_solutions_pass_every_check():
    assert set(statuses(progress("solutions")).values()) == {"PASS"}


@pytest.fixture
def student(tmp_path, monkeypatch):
    """A student's package: the solutions with one bug and one file that does not parse."""
    package = tmp_path / "student_work"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    softmax = package / "softmax.py"
    text = softmax.read_text()
    assert "/ math.sqrt(c)" in text
    softmax.write_text(text.replace("/ math.sqrt(c)", "/ c"))
    (package / "warmup.py").write_text("def batched_dot(a, b)\n    return a\n")  # no colon
    monkeypatch.syspath_prepend(str(tmp_path))
    return "student_work"


def test_a_bug_is_one_fail_and_what_it_blocks_says_so(student):
    rows = {r.check: r for r in progress(student)}
    assert rows["00.batched_dot"].status == "FAIL"
    assert "SyntaxError" in rows["00.batched_dot"].reason
    assert rows["01.scaled_scores"].status == "FAIL"
    assert "max |expected - got|" in rows["01.scaled_scores"].reason
    assert "[case '" in rows["01.scaled_scores"].reason
    assert rows["02.causal_mask"].status == "PASS"
    assert rows["02.attention_weights"].status == "BLOCKED"
    assert rows["02.attention_weights"].reason == "by 01.scaled_scores; right on its own"
    text = table(list(rows.values()))
    assert "\n" not in rows["01.scaled_scores"].reason
    assert "hint: these scores match a division by c" in text  # the whole message, below
    assert all(len(line) <= 80 for line in text.split("\n\n", 1)[1].splitlines()), text


def test_only_shows_the_whole_message_of_the_chosen_check(student):
    rows = progress(student, only=["02.attention_weights"])
    assert [r.check for r in rows] == ["02.attention_weights"]
    text = table(rows, full=True)
    assert "BLOCKED 02.attention_weights by 01.scaled_scores:" in text
    assert "all 19 cases pass" in text


def test_make_check_prints_the_table_and_exits_0():
    done = subprocess.run([sys.executable, "-m", "course.progress"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["status", "check"]
    rows = [line for line in lines if line.split()[:1] and line.split()[0] in STATUSES]
    assert len(rows) == len(all_checks())
    assert "exercises pass" in lines[-1]


def test_make_check_only_takes_an_alias(tmp_path):
    done = subprocess.run([sys.executable, "-m", "course.progress", "--only", "07.gate_headwise"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "08.gate_headwise" in done.stdout and "NOT IMPLEMENTED YET: 08.gate_headwise" in done.stdout


def test_wrap_keeps_the_indent_and_80_columns():
    message = "FAIL x, case 'y':\n  hint: " + "word " * 40
    wrapped = wrap(message)
    assert all(len(line) <= 80 for line in wrapped.splitlines())
    assert wrapped.splitlines()[2].startswith("      word")


def test_a_not_implemented_message_names_one_lesson():
    """Lesson 06's check on untouched stubs stops in an earlier lesson's part of the module: the
    message names that lesson only, never two contradicting ones."""
    import re

    from course.checks import NotImplementedYet
    from exercises.mha import MultiHeadAttention

    with pytest.raises(NotImplementedYet) as raised:
        all_checks()["06.gate"](MultiHeadAttention, quiet=True)
    assert len(set(re.findall(r"lesson (\d\d)", str(raised.value)))) == 1, str(raised.value)


def test_only_takes_a_lesson_an_exercise_a_file_or_an_id():
    from course.progress import choose

    assert choose(["01"])[0] == ["01.stable_softmax", "01.scaled_scores"]
    assert choose(["1"])[0] == choose(["01."])[0] == choose(["01"])[0]
    assert choose(["stable_softmax"]) == (["01.stable_softmax"], [])
    assert choose(["softmax"])[0] == ["01.stable_softmax", "01.scaled_scores"]
    assert choose(["MultiHeadAttention"])[0] == ["03.multi_head_attention", "05.global_attention",
                                                  "06.gate", "06.full_module"]
    assert choose(["07.gate_headwise", "nothing_like_it"]) == (["08.gate_headwise"],
                                                              ["nothing_like_it"])


def test_only_suggests_ids_when_nothing_matches():
    done = subprocess.run([sys.executable, "-m", "course.progress", "--only", "stable_sofmax"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "no check matches 'stable_sofmax'; did you mean 01.stable_softmax" in done.stdout
    assert "ONLY= takes a check id" in done.stdout


def test_the_table_speaks_the_learners_language(monkeypatch):
    from course.i18n import set_language
    from course.progress import Row

    set_language("zh_CN")
    try:
        text = table([Row("01", "01.stable_softmax", "softmax.py: stable_softmax", "PASS")])
    finally:
        set_language(None)
    assert text.splitlines()[0].split()[:2] == ["状态", "检查"]
