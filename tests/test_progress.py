"""`make check`: the progress table over every exercise (course/progress.py)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

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


def test_the_tables_status_words_are_the_checks_own():
    """course/progress.py names the four words itself (the checks' module imports PyTorch)."""
    from course import progress as module
    from course.checks import lines

    assert (module.PASS, module.FAIL, module.BLOCKED, module.TODO) == (
        lines.PASS, lines.FAIL, lines.BLOCKED, lines.TODO)


# ------------------------------------------------------------------- what make check remembers

@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A copy of the course whose exercises are the solutions (every check passes)."""
    from course.workspace import solutions_workspace

    return solutions_workspace(tmp_path_factory.mktemp("written") / "course")


def make_check(course, *args: str, **env: str) -> str:
    done = subprocess.run([sys.executable, "-m", "course.progress", *args], cwd=course,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(course), **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_remembered_result_is_never_stale(written):
    """A bug in lesson 01's file, then the file as it was: each time the table is the one a run
    without the cache prints, the exercises that call the changed file included (lesson 02's
    attention_weights: BLOCKED although its own file did not change)."""
    softmax = written / "exercises" / "softmax.py"
    right = softmax.read_text()
    first = make_check(written)
    assert "27 of 27" in first.splitlines()[-1] or " 0 fail" in first
    assert (written / "build" / "check-cache.json").exists()
    softmax.write_text(right.replace("/ math.sqrt(c)", "/ c"))
    broken = make_check(written)
    assert broken == make_check(written, COURSE_CHECK_CACHE="0")
    rows = {line.split()[1]: line.split()[0] for line in broken.splitlines()
            if line.split()[:1] and line.split()[0] in STATUSES}
    assert rows["01.scaled_scores"] == "FAIL" and rows["02.attention_weights"] == "BLOCKED"
    assert rows["00.batched_dot"] == "PASS"
    softmax.write_text(right)
    assert make_check(written) == first
    # a bug in lesson 03's file, remembered; then a change in lesson 07's file, which calls it:
    # lesson 07's checks run again and read the remembered status of lesson 03's (FAIL)
    mha, transformer = written / "exercises" / "mha.py", written / "exercises" / "transformer.py"
    mha_text, transformer_text = mha.read_text(), transformer.read_text()
    split = "return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)"
    assert split in mha_text
    try:
        mha.write_text(mha_text.replace(split, "return x.view(*batch, N_head, L, width // N_head)"))
        make_check(written)
        transformer.write_text(transformer_text + "# an edit\n")
        again = make_check(written)
        assert again == make_check(written, COURSE_CHECK_CACHE="0")
        assert re.search(r"^BLOCKED +07\.decoder_block +by 03\.split_heads", again, re.M), again
    finally:
        mha.write_text(mha_text)
        transformer.write_text(transformer_text)


def test_a_run_with_nothing_changed_imports_no_pytorch(written):
    make_check(written)
    script = ("import sys; from course.progress import main; main([]); "
              "print('torch imported' if 'torch' in sys.modules else 'no torch')")
    done = subprocess.run([sys.executable, "-c", script], cwd=written, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(written)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "no torch"


def test_the_key_holds_every_file_a_check_can_reach(written):
    """An exercise's own file, the files it imports (a helper module of the student's own too)
    and those of the exercises it calls; the course's files; the language. Code that can reach
    what its imports do not name (importlib, open, ...) is never remembered."""
    from course.check_cache import Cache

    exercises = written / "exercises"
    mha = exercises / "mha.py"
    original = mha.read_text()

    def keys():
        cache = Cache(root=written, path=written / "build" / "keys.json")
        catalog = {e.id: e for e in cache.catalog() or _catalog(cache)}
        return {i: cache.key(e, catalog) for i, e in catalog.items()}

    def _catalog(cache):
        from course.check_cache import catalog_of_checks

        entries = catalog_of_checks()
        cache.keep_catalog(entries)
        return entries

    before = keys()
    (exercises / "helpers.py").write_text("SCALE = 1\n")
    mha.write_text("from .helpers import SCALE\n" + original)
    with_helper = keys()
    changed = {i for i in before if before[i] != with_helper[i]}
    assert "03.multi_head_attention" in changed and "07.decoder_block" in changed  # mha's callers
    assert "01.scaled_scores" not in changed and "00.batched_dot" not in changed
    (exercises / "helpers.py").write_text("SCALE = 2\n")
    assert keys()["03.multi_head_attention"] != with_helper["03.multi_head_attention"]
    (exercises / "helpers.py").write_text("import importlib\nSCALE = 2\n")
    assert keys()["03.multi_head_attention"] is None  # never remembered
    mha.write_text(original)
    (exercises / "helpers.py").unlink()
    assert keys() == before
    softmax = exercises / "softmax.py"
    text = softmax.read_text()
    softmax.write_text(text + "# an edit\n")
    after = keys()
    assert after["02.attention_weights"] != before["02.attention_weights"]  # calls softmax.py's
    assert after["04.pair_bias"] == before["04.pair_bias"]
    softmax.write_text(text)
    os.environ["COURSE_LANG"] = "zh_CN"
    try:
        assert keys()["00.batched_dot"] != before["00.batched_dot"]
    finally:
        del os.environ["COURSE_LANG"]
    reference = written / "course" / "reference_data" / "00.batched_dot.pt"
    data = reference.read_bytes()
    reference.write_bytes(data + b"\0")
    try:
        assert keys()["01.stable_softmax"] != before["01.stable_softmax"]
    finally:
        reference.write_bytes(data)


def test_a_warm_make_check_prints_what_a_cold_one_prints(written):
    """`make check` (--warm) answered by the warm process: the same table as a run in a process
    of its own; the process says it ran it."""
    from course import check_client as check_server

    env = {"COURSE_CHECK_SERVER": "1"}
    log = written / "build" / "check-server.log"
    log.unlink(missing_ok=True)
    warmup = written / "exercises" / "warmup.py"
    warmup.write_text(warmup.read_text() + "# an edit\n")  # a check to run: the process is wanted
    try:
        make_check(written, "--warm", **env)  # none runs yet: this one runs here, then starts one
        deadline = time.monotonic() + 300
        while not (log.exists() and "ready:" in log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "ready:" in log.read_text()
        transformer = written / "exercises" / "transformer.py"
        text = transformer.read_text()
        assert "x.pow(2).mean(dim=-1, keepdim=True)" in text
        transformer.write_text(text.replace("x.pow(2).mean(dim=-1, keepdim=True)",
                                            "x.pow(2).sum(dim=-1, keepdim=True)"))
        try:
            warm = make_check(written, "--warm", "--only", "07", **env)
            cold = make_check(written, "--only", "07", COURSE_CHECK_CACHE="0")
        finally:
            transformer.write_text(text)
        assert warm == cold and "FAIL     07.rms_norm" in warm
        assert "ran ['--warm', '--only', '07']" in log.read_text()
        interrupted_run_goes_with_its_caller(written, env)
    finally:
        check_server.stop(written)


def interrupted_run_goes_with_its_caller(course, env):
    """A student's exercise that never returns, and Ctrl-C: the run in the warm process stops."""
    import signal

    import psutil

    warmup = course / "exercises" / "warmup.py"
    text = warmup.read_text()
    warmup.write_text(text.replace("return (a * b).sum(dim=-1)", "while True:\n        pass"))
    server = next(p for p in psutil.process_iter(["cmdline"])
                  if "course.check_server" in " ".join(p.info["cmdline"] or [])
                  and str(course) in " ".join(p.info["cmdline"] or []))
    try:
        client = subprocess.Popen([sys.executable, "-m", "course.progress", "--warm", "--only", "00"],
                                  cwd=course, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env={**os.environ, "PYTHONPATH": str(course), **env})
        deadline = time.monotonic() + 120
        while not server.children() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.children(), "the warm process never started the run"
        time.sleep(1)
        client.send_signal(signal.SIGINT)  # Ctrl-C
        client.wait(timeout=30)
        deadline = time.monotonic() + 10
        while server.children() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not server.children(), "the run outlived its caller"
        assert "its caller went" in (course / "build" / "check-server.log").read_text()
    finally:
        warmup.write_text(text)


def test_every_command_make_check_suggests_keeps_the_learners_language():
    """In Chinese, the table's footer and the answer to an unknown ONLY= name `make check
    LANG=zh` (without it, the run they suggest would answer in English); in English, no LANG."""
    def suggested(*args: str, **env: str) -> list[str]:
        done = subprocess.run([sys.executable, "-m", "course.progress", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, **env})
        assert done.returncode == 0, done.stderr
        text = re.sub(r"\s+", " ", done.stdout)  # a wrapped line may break a command
        return re.findall(r"make check(?: [A-Z]+=\S+)*", text)

    chinese = suggested(COURSE_LANG="zh_CN") + suggested("--only", "stable_sofmax",
                                                         COURSE_LANG="zh_CN")
    assert len(chinese) >= 3 and all(" LANG=zh" in command for command in chinese), chinese
    english = suggested("--only", "stable_sofmax")
    assert english and not [command for command in english if "LANG=" in command], english
