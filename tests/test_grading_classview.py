"""The class page (OUT/class/): records keep why each check failed, and every grading run and merge
writes the page from the records alone.

Fast tests read synthesised records: the kinds of failure, causes counted once at their root,
older records without causes, item statistics, unnamed failures grouped, what changed since the
last run, nothing a student may not see, Chinese text in the figure. The graded tests grade one
class made of the course's own mutants of lessons 00-02 (one known bug per student, one perfect
student, one with the untouched stubs), once for the module, and check that the page attributes
each student to the cause its mutant names, that it renders offline in headless Chromium in both
languages, and that a regrade, a late student (a resumed run) and a merge of shards write it anew.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from course import ROOT
from course.grading import causes as cz
from course.grading import records as rec
from course.grading.classpage import CLASS_DIR, figure_png, write_class_page
from course.grading.classview import class_view, pearson, quintile_of, updated_history
from course.grading.records import CheckRecord, ClassInfo, StudentRecord
from course.i18n import set_language

CHECKS = ["06.gate", "06.full_module", "07.rope"]
DTYPE_HINT_LINE = ("your result is float64 for float32 inputs: the output's dtype must follow the "
                   "input's, and something in your code fixes it (dtype=torch.float64 or "
                   ".double()): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, "
                   "x.new_tensor) and never cast the result")
HIDDEN_VALUES = "max |expected - got| = 0.734512 at [0, 2, 1]; expected tensor([0.1234567])"
SEED_DIGEST = "5f1d7e3a9c0b2e4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d"


def fail(check: str, hint: str, case: str = "x (5, 8)", problem: str = "output differs") -> str:
    return f"FAIL {check}, case '{case}':\n  {problem}\n  hint: {hint}\n  2 of 9 cases fail: ..."


def row(check: str, passed: bool = True, message: str = "", **fields) -> CheckRecord:
    fields.setdefault("confirmed", True if passed else None)
    record = CheckRecord(check, check[:2], 1.0, 1.0 if passed else 0.0, passed,
                         message or f"PASS {check} (9 cases)", **fields)
    cz.annotate(record)
    return record


def student(name: str, *rows: CheckRecord, status: str = "ok") -> StudentRecord:
    given = {r.id: r for r in rows}
    checks = [given.get(c) or row(c) for c in CHECKS]
    return StudentRecord(name, name, status, sum(c.earned for c in checks), 3.0, checks,
                         flags=["mentions-solutions"])


def class_info() -> ClassInfo:
    return ClassInfo(["06", "07"], list(CHECKS), {c: 1.0 for c in CHECKS}, {}, "bubblewrap",
                     SEED_DIGEST)


# ------------------------------------------------------------------------------- fast, records

def test_a_failure_is_read_into_its_kind_cause_case_and_roots():
    named = cz.classify(False, fail("07.rope", DTYPE_HINT_LINE, "x (3, 16), in float32"), None,
                        None, [])
    assert (named.kind, named.case) == ("fail", "x (3, 16), in float32")
    assert named.id.startswith("your result is {got} for {want} inputs") and named.named
    raised = cz.classify(False, fail("07.rope", "your code raised before it returned, at the line "
                                     "shown above"), None, None, [])
    assert (raised.kind, raised.id, raised.named) == ("fail", "", False)
    hidden = cz.classify(False, f"{cz.UNCONFIRMED}: hidden case 'a batch of one': "
                         f"{HIDDEN_VALUES}", False, "a batch of one", [])
    assert (hidden.kind, hidden.id, hidden.case) == ("hidden", cz.HIDDEN, "a batch of one")
    blocked = cz.classify(False, "BLOCKED 06.full_module by 06.gate:\n  ...", None, None,
                          ["06.gate"])
    assert (blocked.kind, blocked.roots) == ("blocked", ("06.gate",))
    after = cz.classify(False, "not run: 02.causal_mask failed first in the same cell", None,
                        None, [])
    assert (after.kind, after.roots) == ("blocked", ("02.causal_mask",))
    for message, kind, cause in [
            ("NOT IMPLEMENTED YET: 07.rope calls `apply_rope` in ...", "todo", cz.NOT_IMPLEMENTED),
            ("TIMEOUT: the check cell ran past the per-cell time limit", "timeout", cz.TIMEOUT),
            ("CRASHED: the process died (exit code 1)", "error", cz.CRASHED),
            ("exercises/mha.py could not be imported: SyntaxError", "error", cz.IMPORT_ERROR),
            ("grader error: boom", "error", cz.GRADER_ERROR)]:
        found = cz.classify(False, message, None, None, [])
        assert (found.kind, found.id) == (kind, cause), message
    assert cz.classify(True, "PASS 07.rope (9 cases)", True, None, []) is None


def test_blocked_failures_count_once_at_their_root():
    gate = fail("06.gate", DTYPE_HINT_LINE)
    blocked = "BLOCKED 06.full_module by 06.gate:\n  this check also runs your MultiHeadAttention"
    records = [student("ada", row("06.gate", False, gate),
                       row("06.full_module", False, blocked, blocked_by=["06.gate"])),
               student("bob", row("06.gate", False, gate),
                       row("06.full_module", False, blocked, blocked_by=["06.gate"])),
               student("cy", row("06.full_module", False, fail("06.full_module",
                                                                DTYPE_HINT_LINE)))]
    view = class_view(class_info(), records)
    [root] = view.causes["06.gate"]
    assert root.students == ["ada", "bob"] and root.blocks == {"06.full_module": 2}
    [own] = view.causes["06.full_module"]
    assert own.students == ["cy"]
    full = view.row("06.full_module")
    assert (full.failed, full.blocked, full.passed) == (1, 2, 0)
    assert view.notebook_failures == 3 and view.named == 3    # each failure once


def test_older_records_read_with_an_unknown_cause(tmp_path):
    """A record written before records kept causes reads, and its cause is unknown (not
    guessed): the share of named causes leaves it out and says how many there are."""
    old = student("ada", row("07.rope", False, fail("07.rope", DTYPE_HINT_LINE)),
                  row("06.gate", False, f"{cz.UNCONFIRMED}: hidden case 'one head'",
                      confirmed=False, hidden_failure="one head")).to_json()
    for check in old["checks"]:
        del check["cause"]
    record = StudentRecord.from_json(old)
    assert all(c.cause is None for c in record.checks)
    rope = next(c for c in record.checks if c.id == "07.rope")
    assert (cz.why(rope).kind, cz.why(rope).id) == ("fail", cz.UNKNOWN)
    gate = next(c for c in record.checks if c.id == "06.gate")
    assert (cz.why(gate).kind, cz.why(gate).case) == ("hidden", "one head")
    view = class_view(class_info(), [record, student("bob", row("07.rope", False, fail(
        "07.rope", DTYPE_HINT_LINE)))])
    assert (view.unknown, view.named, view.notebook_failures, view.named_share) == (1, 1, 2, 1.0)
    write_class_page(tmp_path, class_info(), [record])
    assert "graded before the grader kept causes" in (tmp_path / CLASS_DIR / "index.html").read_text()


def test_item_statistics():
    assert pearson([0, 1, 0, 1], [1.0, 2.0, 1.0, 2.0]) == pytest.approx(1.0)
    assert pearson([1, 1, 1], [1.0, 2.0, 3.0]) is None
    # ties share a quintile: ten students, five totals
    assert quintile_of([0, 0, 1, 1, 2, 2, 3, 3, 4, 4]) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert quintile_of([5.0] * 7) == [2] * 7
    def checks(i):   # student i: the higher i, the stronger; 07.rope is failed by the strong
        return [row(c, ok, "" if ok else fail(c, DTYPE_HINT_LINE))
                for c, ok in (("06.gate", i >= 3), ("06.full_module", i >= 4), ("07.rope", i < 2))]
    view = class_view(class_info(), [student(f"s{i}", *checks(i)) for i in range(10)])
    gate, rope = view.row("06.gate"), view.row("07.rope")
    assert gate.share == pytest.approx(0.7) and gate.discrimination > 0
    assert rope.discrimination < 0          # the strong students fail it: it stands out
    # totals 1, 1, 0, 1, 2 x 6: quintiles 0 (the 0), 1 (the 1s) and 3 (the 2s)
    assert gate.quintiles == [0.0, pytest.approx(1 / 3), None, 1.0, None]


def test_unnamed_failures_are_grouped_by_what_the_check_found():
    def raised(n):
        return fail("07.rope", "your code raised before it returned, at the line shown above",
                    problem=f"raised ValueError: too many values to unpack (expected {n})")
    view = class_view(class_info(), [student("ada", row("07.rope", False, raised(2))),
                                     student("bob", row("07.rope", False, raised(3)))])
    [group] = view.unnamed
    assert group.students == ["ada", "bob"] and group.checks == {"07.rope": 2}
    assert group.text == "raised ValueError: too many values to unpack (expected N)"
    assert view.named_share == 0.0


def test_what_changed_since_the_last_run():
    bug = fail("07.rope", DTYPE_HINT_LINE)
    first = class_view(class_info(), [student("ada", row("07.rope", False, bug)),
                                      student("bob")], when="first")
    history = updated_history([], first.snapshot)
    second = class_view(class_info(), [student("ada"), student("bob", row("06.gate", False, bug)),
                                       student("cy")], history=history)
    assert second.changes.since == "first" and second.changes.new == ["cy"]
    assert second.changes.to_pass == {"07.rope": ["ada"]}
    assert second.changes.to_fail == {"06.gate": ["bob"]}
    history = updated_history(history, second.snapshot)
    again = class_view(class_info(), [student("ada"), student("bob", row("06.gate", False, bug)),
                                      student("cy")], history=history)
    assert again.changes.to_pass == {"07.rope": ["ada"]}   # a run that changed nothing keeps it
    assert len(updated_history(history, again.snapshot)) == 2


def test_the_page_shows_nothing_a_student_may_not_see(tmp_path):
    """No hidden value, no seed or its digest, no grader flag, in the page or its CSV files, even
    when a record's message holds what differed on hidden inputs."""
    hidden = row("06.gate", False, f"{cz.UNCONFIRMED}: hidden case 'one head': {HIDDEN_VALUES}",
                 confirmed=False, hidden_failure="one head")
    write_class_page(tmp_path, class_info(), [student("ada", hidden), student("bob")])
    for path in (tmp_path / CLASS_DIR).glob("*.*"):
        if path.suffix == ".png":
            continue
        text = path.read_text(encoding="utf-8")
        for secret in ("0.734512", "0.1234567", SEED_DIGEST[:12], "mentions-solutions", "271828"):
            assert secret not in text, (path.name, secret)
    assert "one head" in (tmp_path / CLASS_DIR / "index.html").read_text()


def test_the_figure_draws_chinese_glyphs():
    from course.fonts import find_cjk_family

    assert find_cjk_family(), "a CJK font (Debian fonts-noto-cjk) draws the Chinese labels"
    view = class_view(class_info(), [student("ada", row("07.rope", False, fail(
        "07.rope", DTYPE_HINT_LINE)))])
    set_language("zh_CN")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            png = figure_png(view)
    finally:
        set_language(None)
    assert png and png.startswith(b"\x89PNG")
    assert not [w for w in caught if "missing from" in str(w.message)], [str(w.message) for w in caught]


@pytest.mark.slow
def test_the_page_reads_every_suffix_a_derived_case_takes():
    """A derived case's name ("..., called twice") is read back to English by its suffix: every
    suffix the checks append (course/checks/lines.py) is one the class page knows."""
    from course.checks.lines import _SUFFIXES

    assert {suffix for _pattern, suffix in _SUFFIXES} == set(cz.DERIVED_SUFFIXES)


def test_a_chinese_message_names_the_cause_of_the_english_one(monkeypatch):
    """A student whose checks speak Chinese counts under the same cause (and the same English
    case name) as one whose checks speak English: every mutant of lessons 00-02, both ways."""
    from course.checks import CheckFailed, all_checks
    from tests.mutant_class import mutants_of
    from tests.mutation import mutated_module

    monkeypatch.setenv("COURSE_ISOLATE", "1")
    differ, named = [], 0
    for mutant in mutants_of(["00", "01", "02"]):
        check = all_checks()[mutant.check]
        impl = getattr(mutated_module(mutant), check.attribute)
        found = []
        for language in ("en", "zh_CN"):
            set_language(language)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    check(impl, quiet=True)
            except CheckFailed as failure:
                found.append(cz.classify(False, str(failure), None, None, []))
            finally:
                set_language(None)
        english, chinese = found
        named += english.named
        if (english.id, english.tests, english.case) != (chinese.id, chinese.tests, chinese.case):
            differ.append(mutant.id)
    assert not differ and named >= 80, (differ, named)


# --------------------------------------------------------------------------- a graded class

LESSONS = ["00", "01", "02"]
SEED = "8128\n"        # the class's secret seed (any but the public one)


@dataclass
class Graded:
    root: Path
    subs: Path
    out: Path
    roster: Path
    seed: Path
    students: dict     # folder name -> Mutant


def grade(subs: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    nice = ["nice", "-n", "5"] if shutil.which("nice") else []
    done = subprocess.run([*nice, sys.executable, "-m", "course.grading", "--submissions",
                           str(subs), "--out", str(out), *extra], cwd=ROOT, capture_output=True,
                          text=True, timeout=1800,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "COURSE_LANG": "en"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "the class page" not in done.stderr, done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
    from course.stubs import generate
    from tests.mutant_class import write_mutant_class

    root = tmp_path_factory.mktemp("mutant-class")
    subs, out = root / "subs", root / "out"
    students = write_mutant_class(subs, LESSONS)
    stubs = subs / "untouched_stubs"
    stubs.mkdir()
    for name, text in generate().items():
        (stubs / name).write_text(text)
    roster, seed = root / "roster.csv", root / "seed"
    folders = sorted(p.name for p in subs.iterdir())
    roster.write_text("folder,lms_id,email,name,section\n" + "".join(
        f"{name},{4000 + i},s{i}@example.edu,S {i},Section {'AB'[i % 2]}\n"
        for i, name in enumerate(folders)))
    seed.write_text(SEED)
    seed.chmod(0o600)
    grade(subs, out, "--lessons", "00-02", "--jobs", "2",
          "--roster", str(roster), "--seed-file", str(seed))
    return Graded(root, subs, out, roster, seed, students)


def causes_of(out: Path) -> list[dict]:
    from tests.mutant_class import cause_rows

    return cause_rows(out)


def harness_cause(mutant, root: Path) -> cz.Why:
    """The cause a mutant's check names when the bug lives in a package, as a student's
    exercises/ do (the mutation tests load the mutated file as a lone module, which can hide the
    calls the evidence rules compare)."""
    from course.checks import all_checks
    from course.progress import run_check
    from tests.mutation import Cascade, cascade_package

    name = "pkg_" + hashlib.sha1(mutant.id.encode()).hexdigest()[:10]
    sys.path.insert(0, str(root))
    try:
        package = cascade_package(Cascade(mutant.check, ((mutant.file, mutant.find,
                                                          mutant.replace),), (), mutant.id),
                                  root, name)
        found = run_check(all_checks()[mutant.check], package)
    finally:
        sys.path.remove(str(root))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]
    return cz.classify(False, found.message, None, None, [])


@pytest.mark.slow
def test_the_page_attributes_each_mutant_to_the_cause_it_names(graded, tmp_path, monkeypatch):
    from tests.mutant_class import attribution

    monkeypatch.setenv("COURSE_ISOLATE", "1")
    records = rec.load_students(graded.out)
    rows = causes_of(graded.out)
    tally: dict[str, list[str]] = {}
    for name, mutant in graded.students.items():
        mine = [r for r in rows if name in r["students"]]
        record = records[name]
        message = next(c.message for c in record.checks if c.id == mutant.check)
        verdict = attribution(mutant, mine, message)
        if verdict == "wrong":
            # the mutant's fragment was written against the mutation harness's message: the
            # same bug in a package (a student's exercises/) gets another hint, which the
            # page shows
            package = harness_cause(mutant, tmp_path)
            if (package.id, package.tests) == (mine[0]["cause"], mine[0]["tests"] or None):
                verdict = "harness"
        tally.setdefault(verdict, []).append(name)
        # one bug, one root failure: no student is counted twice, nor under a blocked check
        assert [r["check"] for r in mine] == [mutant.check], (name, mine)
    students = len(graded.students)
    print({k: len(v) for k, v in tally.items()}, "of", students, {
        k: v for k, v in tally.items() if k != "right"})
    assert len(tally.get("right", [])) >= 0.9 * students, tally
    assert not tally.get("wrong"), tally["wrong"]
    perfect = [r for r in rows if "perfect" in r["students"] or "untouched_stubs" in r["students"]]
    assert not perfect, perfect    # the perfect student passes, the stubs are not attempted
    # the table: every mutant fails its own check only; the stubs attempt nothing
    table = list(csv.DictReader(io.StringIO((graded.out / CLASS_DIR / "checks.csv").read_text())))
    for line in [t for t in table if t["section"] == "all"]:
        bugs = sum(m.check == line["check"] for m in graded.students.values())
        assert [int(line[k]) for k in ("graded", "attempted", "passed", "failed in the notebook",
                                       "failed on hidden inputs only", "blocked", "errors",
                                       "timeouts", "not attempted")] == \
            [students + 2, students + 1, students + 1 - bugs, bugs, 0, 0, 0, 0, 1], line
        sections = [t for t in table if t["check"] == line["check"] and t["section"] != "all"]
        assert sorted(t["section"] for t in sections) == ["Section A", "Section B"]
        for column in ("graded", "passed", "failed in the notebook"):
            assert sum(int(t[column]) for t in sections) == int(line[column])


def screenshot(page_path: Path, png: Path) -> dict:
    """Open the page in headless Chromium, refusing every request but the page's own file;
    save a screenshot; return what the page holds and every request it made."""
    from tests.browser import chromium

    requests = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.route("**/*", lambda route: route.continue_() if route.request.url ==
                   page_path.as_uri() else route.abort())
        page.on("request", lambda request: requests.append(request.url))
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        found = page.evaluate("""() => ({
            title: document.title,
            rows: document.querySelectorAll('#checks tbody tr').length,
            tables: document.querySelectorAll('table').length,
            images: [...document.images].map(i => [i.src.slice(0, 22), i.naturalWidth]),
        })""")
        page.screenshot(path=str(png))
    found["requests"] = requests
    return found


@pytest.mark.slow
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_the_page_renders_offline_in_chromium(graded, tmp_path, language):
    """The table and the figure are there, and the page asks the network for nothing. With
    COURSE_SCREENSHOTS=docs/screenshots the screenshot is kept for the instructors' guide."""
    out = tmp_path / "out"
    shutil.copytree(graded.out, out)
    set_language(language)
    try:
        write_class_page(out, rec.load_class(out), rec.load_students(out), graded.roster)
    finally:
        set_language(None)
    png = tmp_path / "page.png"
    found = screenshot(out / CLASS_DIR / "index.html", png)
    assert found["rows"] == 8 and found["tables"] >= 10, found
    assert found["requests"] == [(out / CLASS_DIR / "index.html").as_uri()], found["requests"]
    [(source, width)] = found["images"]
    assert source == "data:image/png;base64," and width > 500
    assert found["title"].startswith("全班概览" if language == "zh_CN" else "The class at a glance")
    keep = os.environ.get("COURSE_SCREENSHOTS")
    if keep:
        small_png(png, Path(keep) / f"class_page{'_zh' if language == 'zh_CN' else ''}.png")


def small_png(source: Path, target: Path) -> None:
    """The screenshot in 256 colours (a third of its size; a page has few colours)."""
    from PIL import Image

    with Image.open(source) as image:
        image.convert("RGB").quantize(colors=256).save(target, optimize=True)


@pytest.mark.slow
def test_a_regrade_a_late_student_and_a_merge_write_the_page_anew(graded, tmp_path):
    from course.grading.merge import merge

    subs, out = tmp_path / "subs", tmp_path / "out"
    shutil.copytree(graded.subs, subs)
    shutil.copytree(graded.out, out)
    name = next(n for n, m in graded.students.items() if m.check == "01.scaled_scores")
    shutil.copy(ROOT / "solutions" / "softmax.py", subs / name / "exercises" / "softmax.py")
    # a regrade of one student: the page says who went from failing to passing
    grade(subs, out, "--students", name)
    page = (out / CLASS_DIR / "index.html").read_text()
    assert "failing, now passing" in page and name in page.split("Since the last run")[1]
    assert not [r for r in causes_of(out) if name in r["students"]]
    history = json.loads((out / CLASS_DIR / "history.json").read_text())
    assert len(history) == 2 and history[-1]["states"][name] == "P" * 8
    # a late student: the same command as the first run grades only them
    late = subs / "late_student" / "exercises"
    shutil.copytree(graded.subs / "perfect" / "exercises", late)
    (late / "warmup.py").write_text((ROOT / "solutions" / "warmup.py").read_text().replace(
        "(a * b).sum(dim=-1)", "(a * b).sum()"))
    grade(subs, out, "--lessons", "00-02", "--jobs", "2", "--roster", str(graded.roster),
          "--seed-file", str(graded.seed))
    page = (out / CLASS_DIR / "index.html").read_text()
    assert "Graded since: 1 students." in page and "late_student" in page
    assert any("late_student" in r["students"] and r["check"] == "00.batched_dot"
               for r in causes_of(out))
    # the same class graded as two shards and merged: the same tables
    records = sorted(rec.student_files(out))
    parts = []
    for k in range(2):
        part = tmp_path / f"part{k}"
        (part / rec.STUDENTS_DIR).mkdir(parents=True)
        for file in (rec.SEED_FILE, rec.CLASS_FILE, "roster.csv"):
            shutil.copy2(out / file, part / file)
        for path in records[k::2]:
            shutil.copy2(path, part / rec.STUDENTS_DIR / path.name)
        parts.append(part)
    merged = tmp_path / "merged"
    merge(parts, merged)
    for table in ("checks.csv", "causes.csv"):
        assert (merged / CLASS_DIR / table).read_text() == (out / CLASS_DIR / table).read_text()
    assert "No earlier run into this OUT" in (merged / CLASS_DIR / "index.html").read_text()
    merge(parts, merged)     # a second merge of the same shards: nothing changed since the last
    assert "No earlier run into this OUT" in (merged / CLASS_DIR / "index.html").read_text()
