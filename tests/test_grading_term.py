"""An instructor's term around `make grade`: LMS files (read as Canvas's importer and a model of
Moodle's read them), feedback to hand back, the hand-back zips, shards merged.

Fast tests build records by hand (records.py is the contract the grader writes); the slow one
grades a small class on one machine and in three shards and checks that the merge is the same
OUT, byte for byte apart from timings.
"""
from __future__ import annotations

import csv
import io
import dataclasses
import json
import re
from pathlib import Path

import pytest

from course import ROOT
from course.grading import records as rec
from course.grading.feedback import feedback_text, write_feedback
from course.grading.lms import RosterError, canvas_csv, moodle_csv, read_roster, write_lms
from course.grading.merge import MergeError, merge
from course.grading.names import csv_cell
from course.grading.records import CheckRecord, ClassInfo, StudentRecord
from tests.lms_formats import moodle_import, read_canvas
from tests.term_class import tree

DATA = ROOT / "tests" / "data" / "lms"
CHECKS = ["00.batched_dot", "01.stable_softmax", "01.scaled_scores"]
POINTS = {"00.batched_dot": 1.0, "01.stable_softmax": 2.0, "01.scaled_scores": 1.5}
SEED_DIGEST = "5f1d7e3a9c0b2e4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a3c5e7b9d1f3a5c7e9b0d"
HIDDEN_VALUES = "max |expected - got| = 0.734512 at [0, 2, 1]; expected tensor([0.1234567, -2.71828])"
VISIBLE_FAIL = ("FAIL 00.batched_dot, case 'two vectors':\n  output shape () but expected (2,)\n"
                "  hint: sum over the last axis only: `(a * b).sum(dim=-1)`")


def info(**changes) -> ClassInfo:
    base = dict(lessons=["00", "01"], checks=list(CHECKS), points=dict(POINTS),
                settings={"cell_timeout": 60, "student_timeout": 600, "hidden_timeout": 60,
                          "memory_mib": 4096, "fsize_mib": 256, "full": False, "unsafe": False,
                          "keep": False},
                sandbox="bubblewrap", seed_digest=SEED_DIGEST)
    return ClassInfo(**{**base, **changes})


def check(check_id: str, earned: float | None = None, **fields) -> CheckRecord:
    points = POINTS[check_id]
    passed = fields.pop("passed", True)
    return CheckRecord(check_id, check_id[:2], points, points if passed else 0.0, passed,
                       fields.pop("message", f"PASS {check_id} (5 cases)"), **fields)


def student(name: str, *checks: CheckRecord, status: str = "ok", **fields) -> StudentRecord:
    checks = list(checks) or [check(c, confirmed=True) for c in CHECKS]
    return StudentRecord(name, fields.pop("report_name", name), status,
                         sum(c.earned for c in checks), sum(POINTS.values()), checks, **fields)


def the_class() -> list[StudentRecord]:
    return [
        student("ada"),
        student("bob", check("00.batched_dot", passed=False, message=VISIBLE_FAIL),
                check("01.stable_softmax", confirmed=True), check("01.scaled_scores", confirmed=True)),
        student("cy", check("00.batched_dot", passed=False, confirmed=False,
                            message=f"PASS in the notebook, not confirmed on hidden inputs: hidden "
                                    f"case 'a batch of one, one query': {HIDDEN_VALUES}",
                            hidden_failure="a batch of one, one query"),
                check("01.stable_softmax", passed=False, message="FAIL 01.stable_softmax ..."),
                check("01.scaled_scores", passed=False, blocked_by=["01.stable_softmax"],
                      message="BLOCKED by 01.stable_softmax"),
                flags=["unconfirmed", "mentions-solutions"], seconds=3.7,
                problems=["grader error: FileNotFoundError('/home/instructor/grade-x/s0003')",
                          "exercises/softmax.py: SyntaxError: invalid syntax (line 3)"]),
        student("dee", *[check(c, passed=False, message="no submission") for c in CHECKS],
                status="no-submission"),
    ]


# ------------------------------------------------------------------------------------ roster


def test_roster_headers_are_matched_loosely_and_duplicates_refused(tmp_path):
    roster = read_roster(DATA / "roster.csv")
    assert [e.folder for e in roster] == ["ada", "bob", "cy", "eve", "fay"]
    assert roster[0].lms_id == "4211" and roster[0].email == "ada@example.edu"
    assert roster[0].name == "Lovelace, Ada" and roster[3].email == "" and roster[4].lms_id == ""
    semicolons = tmp_path / "excel.csv"  # Excel in many locales: a BOM and semicolons
    semicolons.write_text("\ufeffFolder;LMS ID;Email;Name;Section\nada;4211;a@x;Ada;1\n",
                          encoding="utf-8")
    assert read_roster(semicolons)[0].lms_id == "4211"
    twice = tmp_path / "twice.csv"
    twice.write_text("folder,lms_id\nada,1\nbob,1\n")
    with pytest.raises(RosterError, match="lines 2 and 3: the same lms_id"):
        read_roster(twice)
    # one student to a database that ignores case and accents (MySQL's *_ci collations)
    for first, second in (("AB12", "ab12"), ("José", "jose")):
        twice.write_text(f"folder,lms_id\nada,{first}\nbob,{second}\n", encoding="utf-8")
        with pytest.raises(RosterError, match="the same lms_id"):
            read_roster(twice)
    no_folder = tmp_path / "nofolder.csv"
    no_folder.write_text("student,lms_id\nada,1\n")
    with pytest.raises(RosterError, match="needs a `folder` column"):
        read_roster(no_folder)


# ---------------------------------------------------------------------------- LMS formats


def test_the_samples_from_the_docs_read_as_the_importers_read_them():
    """The test's readers accept what Canvas and Moodle export (their import takes the same)."""
    canvas = read_canvas((DATA / "canvas_export_sample.csv").read_text())
    assert canvas["assignments"] == ["Homework 1 (1234)", "Quiz 1"]
    assert canvas["points"] == {"Homework 1 (1234)": "10", "Quiz 1": "5"}
    assert canvas["students"][1]["sis_login_id"] == "charles@example.edu"
    users = [{"id": 11, "username": "ada", "idnumber": "4211", "email": "ada@example.edu"},
             {"id": 12, "username": "charles", "idnumber": "4212", "email": "charles@example.edu"}]
    moodle = moodle_import((DATA / "moodle_export_sample.csv").read_text(), users,
                           "Email address", "useremail", ["Assignment: Homework 1 (Real)"])
    assert moodle["ok"] and moodle["grades"] == {11: {"Assignment: Homework 1 (Real)": 9.0}}


def test_canvas_files_have_the_export_columns_and_points_possible():
    roster = read_roster(DATA / "roster.csv")
    graded = {r.student: r for r in the_class()}
    text = canvas_csv(info(), roster, graded)
    sample = next(csv.reader(io.StringIO((DATA / "canvas_export_sample.csv").read_text())))
    assert next(csv.reader(io.StringIO(text)))[:5] == sample[:5]  # Student .. Section, as exported
    got = read_canvas(text)
    assert got["assignments"] == ["Attention course"] and got["points"] == {"Attention course": "4.5"}
    rows = {s["id"] or s["sis_login_id"]: s["scores"]["Attention course"] for s in got["students"]}
    # cy: unconfirmed and blocked; eve: no submission; fay: no ID, found by her login (email)
    assert rows == {"4211": 4.5, "4212": 3.5, "4213": 0.0, "4214": 0.0, "fay@example.edu": 0.0}
    assert "dee" not in text  # graded but not in the roster: listed elsewhere, not imported
    assert text.encode() == (DATA / "expected_canvas.csv").read_bytes()
    lessons = read_canvas(canvas_csv(info(), roster, graded, by_lesson=True))
    assert lessons["assignments"] == ["Attention course: lesson 00", "Attention course: lesson 01"]
    assert lessons["points"] == {"Attention course: lesson 00": "1",
                                 "Attention course: lesson 01": "3.5"}
    assert lessons["students"][0]["scores"] == {"Attention course: lesson 00": 1.0,
                                                "Attention course: lesson 01": 3.5}


def site(roster) -> list[dict]:
    """A Moodle site with one user per roster student (their profile's ID number and email as
    the roster has them, empty where it has none) and two other users."""
    users = [{"id": 100 + i, "username": e.folder, "idnumber": e.lms_id, "email": e.email}
             for i, e in enumerate(roster)]
    return users + [{"id": 900, "username": "teacher", "idnumber": "", "email": ""},
                    {"id": 901, "username": "other", "idnumber": "9999", "email": "o@x"}]


def imported_as_intended(text: str, roster, graded, column: str = "Attention course") -> dict:
    """Moodle's import of `text` (by ID number) on `site(roster)`: every grade lands on the
    student whose row it is, or the import fails; returns the grades by folder."""
    users = site(roster)
    result = moodle_import(text, users, "ID number", "useridnumber", [column])
    assert result["ok"], result["error"]
    folder_of = {u["id"]: u["username"] for u in users}
    got = {folder_of[uid]: grades[column] for uid, grades in result["grades"].items()}
    for folder, grade in got.items():
        record = graded.get(folder)
        assert grade == (record.total if record else 0.0), (folder, grade)
    return got


def test_moodle_file_maps_by_id_number_and_never_misfiles():
    roster = read_roster(DATA / "roster.csv")
    graded = {r.student: r for r in the_class()}
    text = moodle_csv(info(), roster, graded)
    assert text.splitlines()[0] == "ID number,Full name,Section,Attention course"
    assert imported_as_intended(text, roster, graded) == {
        "ada": 4.5, "bob": 3.5, "cy": 0.0, "eve": 0.0}  # fay has no ID number: left out
    assert text.encode() == (DATA / "expected_moodle.csv").read_bytes()
    lessons = moodle_csv(info(), roster, graded, by_lesson=True)
    header = lessons.splitlines()[0].split(",")
    assert header == ["ID number", "Full name", "Section", "Attention course: lesson 00",
                      "Attention course: lesson 01"]  # no total: it would count twice
    result = moodle_import(lessons, site(roster), "ID number", "useridnumber", header[3:])
    assert result["ok"] and result["grades"][100] == {"Attention course: lesson 00": 1.0,
                                                      "Attention course: lesson 01": 3.5}


def test_the_model_of_moodle_catches_the_row_that_takes_anothers_grade():
    """The issue's case, in the earlier file's form (mapped by email): a row without an email
    keeps the student of the row above, so ivy's 0 lands on hal; as the first row it stops the
    whole import. The model must see both, or it proves nothing about the file we write."""
    users = [{"id": 1, "username": "hal", "idnumber": "1", "email": "hal@x"},
             {"id": 2, "username": "ivy", "idnumber": "2", "email": ""}]
    old = "Email address,ID number,Full name,Attention course\r\nhal@x,1,Hal,10\r\n,2,Ivy,0\r\n"
    result = moodle_import(old, users, "Email address", "useremail", ["Attention course"])
    assert result["ok"] and result["grades"] == {1: {"Attention course": 0.0}}  # hal's 10 lost
    first = "Email address,Attention course\r\n,0\r\nhal@x,10\r\n"
    assert not moodle_import(first, users, "Email address", "useremail",
                             ["Attention course"])["ok"]
    zero = "ID number,Attention course\r\n1,10\r\n0,5\r\n"  # PHP's empty("0") is true
    assert moodle_import(zero, users, "ID number", "useridnumber",
                         ["Attention course"])["grades"] == {1: {"Attention course": 5.0}}


@pytest.mark.parametrize("seed", range(40))
def test_no_roster_makes_a_moodle_file_that_misfiles_a_grade(seed, tmp_path):
    """Random rosters (ids missing, "0", formula-like, in any case; emails missing) and random
    grades: the Moodle file, imported by the model of Moodle's code, gives each student their
    own grade or leaves them out; never another's, and the import never stops."""
    import random

    rng = random.Random(seed)
    lines, folders = ["folder,lms_id,email,name"], []
    for i in range(rng.randint(1, 8)):
        lms_id = rng.choice(["", "0" if i == 0 else "", f"{4000 + i}", f"s{i}X", f"-{i}",
                             f"=SUM({i})", f" {i}7 "])  # the roster refuses one id twice
        email = rng.choice(["", f"p{i}@x"])
        folders.append(f"p{i}")
        lines.append(f"p{i},{lms_id},{email},Person {i}")
    roster_file = tmp_path / "roster.csv"
    roster_file.write_text("\n".join(lines) + "\n")
    roster = read_roster(roster_file)
    graded = {f: student(f, *[check(c, passed=rng.random() < 0.5) for c in CHECKS])
              for f in folders if rng.random() < 0.8}
    got = imported_as_intended(moodle_csv(info(), roster, graded), roster, graded)
    assert set(got) == {e.folder for e in roster if e.lms_id not in ("", "0")
                        and e.lms_id[0] not in "=+-@"}


def test_no_cell_is_a_formula():
    for value in ("=1+1", "+1", "-1", "@SUM(A1)", "\uff1d1"):
        assert csv_cell(value).startswith("'"), value
    for value in ("\t=1", "\r=1"):  # a control character is written as an escape: plain text
        assert csv_cell(value).startswith(("'", "\\")), value
    assert csv_cell("Lovelace, Ada") == "Lovelace, Ada" and csv_cell(4.5) == "4.5"
    roster = read_roster(DATA / "roster.csv")
    for text in (canvas_csv(info(), roster, {}), moodle_csv(info(), roster, {})):
        for row in csv.reader(io.StringIO(text)):
            for cell in row:
                assert not cell.startswith(("=", "+", "-", "@")), cell
        assert "'=HYPERLINK(" in text and "'+Section 2" in text


def test_write_lms_lists_the_unmatched_and_never_drops_them(tmp_path, capsys):
    files = write_lms(tmp_path, info(), rec_dict(the_class()), DATA / "roster.csv")
    assert files.missing == ["eve", "fay"] and files.unknown == ["dee"]
    assert files.not_moodle == ["fay (no ID number: Moodle would give its grade to the student "
                                "of the row above)"] and files.not_canvas == []
    assert files.not_ok == []  # dee is not ok, but not in the roster: listed as unknown
    summary = files.summary.read_text()
    assert "## In the roster without a submission (0 points): 2" in summary
    assert "- `eve`" in summary and "- `dee`" in summary and "never both" in summary
    err = capsys.readouterr().err
    assert "2 in the roster, no submission (0 points): eve, fay" in err
    assert "1 graded, not in the roster (left out of the LMS files): dee" in err
    assert sorted(p.name for p in (tmp_path / "lms").iterdir()) == ["canvas.csv", "moodle.csv",
                                                                   "summary.md"]
    write_lms(tmp_path, info(), rec_dict(the_class()), DATA / "roster.csv", per_lesson=True)
    assert sorted(p.name for p in (tmp_path / "lms").iterdir()) == [
        "canvas-lessons.csv", "canvas.csv", "moodle-lessons.csv", "moodle.csv", "summary.md"]
    write_lms(tmp_path, info(), rec_dict(the_class()), DATA / "roster.csv")  # lessons off again
    assert not (tmp_path / "lms" / "canvas-lessons.csv").exists()
    assert write_lms(tmp_path, info(), [], None) is None


def test_a_misspelt_folder_is_named_with_the_roster_entry_it_resembles(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("folder,lms_id,email\nalice_smith,1,a@x\n")
    files = write_lms(tmp_path, info(), [student("alice_smyth")], roster)
    assert files.unknown == ["alice_smyth (did you mean 'alice_smith' of the roster?)"]
    assert files.missing == ["alice_smith"]


def test_a_roster_matches_folders_whatever_the_unicode_form(tmp_path):
    import unicodedata

    roster = tmp_path / "roster.csv"
    roster.write_text(f"folder,lms_id\n{unicodedata.normalize('NFD', 'José')},7\n", encoding="utf-8")
    files = write_lms(tmp_path, info(), [student(unicodedata.normalize("NFC", "José"))], roster)
    assert files.missing == [] and files.unknown == []
    assert read_canvas(files.canvas.read_text())["students"][0]["scores"]["Attention course"] == 4.5


def class_roster(tmp_path: Path) -> Path:
    """The test roster where a class keeps it: outside the course (classdir.py)."""
    path = tmp_path / "class" / "roster.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((DATA / "roster.csv").read_bytes())
    return path


def rec_dict(records: list[StudentRecord]) -> dict[str, StudentRecord]:
    return {r.report_name: r for r in records}


# -------------------------------------------------------------------------------- feedback


def test_feedback_says_what_failed_without_hidden_values(tmp_path):
    records = the_class()
    written = write_feedback(tmp_path, info(), records)
    assert [p.name for p in written] == ["ada.md", "bob.md", "cy.md", "dee.md"]
    ada = (tmp_path / "feedback" / "ada.md").read_text()
    assert ada.startswith("# ada: 4.5 / 4.5 points\n")
    assert "- `00.batched_dot`: 1 / 1: PASS" in ada
    bob = (tmp_path / "feedback" / "bob.md").read_text()
    assert "- `00.batched_dot`: 0 / 1: FAIL" in bob
    assert "  hint: sum over the last axis only: `(a * b).sum(dim=-1)`" in bob  # the visible message
    cy = (tmp_path / "feedback" / "cy.md").read_text()
    assert "failed on a hidden case of this kind: `a batch of one, one query`" in cy
    assert "BLOCKED: it calls `01.stable_softmax`, which did not pass" in cy
    assert "exercises/softmax.py: SyntaxError" in cy
    for secret in (HIDDEN_VALUES, "0.734512", "0.1234567", SEED_DIGEST, SEED_DIGEST[:8],
                   "not confirmed on hidden inputs", "/home/instructor", "grader error",
                   "unconfirmed", "mentions-solutions", "3.7"):
        assert secret not in cy, secret
    assert "**no-submission**" in (tmp_path / "feedback" / "dee.md").read_text()
    (tmp_path / "feedback" / "gone.md").write_text("a student no longer in the class")
    write_feedback(tmp_path, info(), records)
    assert not (tmp_path / "feedback" / "gone.md").exists()


def test_feedback_text_cannot_be_broken_out_of():
    """A message with backticks stays in its code block; a folder name is plain text."""
    record = student("<img src=x>_*bold*", check("00.batched_dot", passed=False,
                                                 message="```\n# not a heading\n````"),
                     *[check(c, confirmed=True) for c in CHECKS[1:]])
    text = feedback_text(info(), record)
    assert text.startswith("# &lt;img src=x&gt;\\_\\*bold\\*: ")
    assert "  `````\n  ```\n  # not a heading\n  ````\n  `````" in text


# ----------------------------------------------------------------------------------- merge


def write_part(out: Path, records: list[StudentRecord], class_info: ClassInfo | None = None,
               seconds: float = 1.0) -> Path:
    """An OUT as the grader writes it: its seed, class.json, students/*.json (signed with the
    seed), reports/, results.json."""
    out.mkdir(parents=True, exist_ok=True)
    (out / rec.SEED_FILE).write_text("271828\n")
    rec.save_class(out, class_info or info())
    for record in records:
        rec.save_student(out, record)
        (out / "reports").mkdir(exist_ok=True)
        (out / "reports" / f"{record.report_name}.md").write_text(f"# {record.student}: report\n")
        (out / "raw" / record.report_name).mkdir(parents=True)
        (out / "raw" / record.report_name / "sandbox-output.txt").write_text("printed\n")
    (out / "results.json").write_text(json.dumps({"seconds": seconds, "jobs": 2, "skipped": []}))
    return out


def test_merge_is_the_union_of_the_parts(tmp_path):
    ada, bob, cy, dee = the_class()
    parts = [write_part(tmp_path / "p1", [ada, cy]), write_part(tmp_path / "p2", [bob]),
             write_part(tmp_path / "p3", [dee], seconds=9.5)]
    records = merge(parts, tmp_path / "out", roster=class_roster(tmp_path), per_lesson=True)
    out = tmp_path / "out"
    assert [r.student for r in records] == ["ada", "bob", "cy", "dee"]
    assert sorted(rec.load_students(out)) == ["ada", "bob", "cy", "dee"]
    book = (out / "gradebook.csv").read_text().splitlines()
    assert book[0] == "student,status,total,max," + ",".join(CHECKS) + ",flags"
    assert [line.split(",")[0] for line in book[1:]] == ["ada", "bob", "cy", "dee"]
    assert (out / "reports" / "cy.md").read_text() == "# cy: report\n"
    assert (out / "raw" / "bob" / "sandbox-output.txt").is_file()
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["ada.md", "bob.md", "cy.md", "dee.md"]
    assert (out / "lms" / "canvas.csv").read_text() == (DATA / "expected_canvas.csv").read_text()
    results = json.loads((out / "results.json").read_text())
    assert results["seconds"] == 9.5 and [s["student"] for s in results["students"]] == \
        ["ada", "bob", "cy", "dee"]
    # the parts' class.json, with the merge's choice of LMS files (a later run into OUT keeps it),
    # as a class of its own (a new id, its records signed again), keeping the roster's digest
    merged = rec.load_class(out)
    assert merged.class_id and merged.roster_digest == rec.file_digest(out / "roster.csv")
    assert all(r.class_id == merged.class_id for r in rec.load_students(out).values())
    assert dataclasses.replace(merged, class_id="", roster_digest="") == info(
        settings={**info().settings, "per_lesson": True})
    assert (out / "roster.csv").read_bytes() == (DATA / "roster.csv").read_bytes()
    merge(parts[:2], out)  # a merge may replace its own OUT, and only what it wrote
    assert sorted(rec.load_students(out)) == ["ada", "bob", "cy"]
    assert not (out / "lms").exists() and not (out / "feedback" / "dee.md").exists()


@pytest.mark.parametrize("change, what", [
    ({"seed_digest": "0" * 64}, "seed_digest"),
    ({"points": {**POINTS, "01.scaled_scores": 3.0}}, "points"),
    ({"checks": CHECKS[:2]}, "checks"),
    ({"settings": {"cell_timeout": 10}}, "settings.cell_timeout"),
    ({"sandbox": "none (UNSAFE)"}, "sandbox"),
])
def test_merge_refuses_parts_graded_differently(tmp_path, change, what):
    ada, bob, *_ = the_class()
    other = info(**change)
    if "settings" in change:
        other.settings = {**info().settings, **change["settings"]}
    parts = [write_part(tmp_path / "p1", [ada]), write_part(tmp_path / "p2", [bob], other)]
    with pytest.raises(MergeError, match=re.escape(what)):
        merge(parts, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_merge_ignores_how_each_shard_was_started(tmp_path):
    ada, bob, *_ = the_class()
    second = info()
    second.settings = {**second.settings, "keep": True, "shard": "2/2", "jobs": 4}
    merge([write_part(tmp_path / "p1", [ada]), write_part(tmp_path / "p2", [bob], second)],
          tmp_path / "out")
    assert "shard" not in rec.load_class(tmp_path / "out").settings


def test_merge_refuses_a_student_in_two_parts_and_foreign_folders(tmp_path):
    ada, bob, *_ = the_class()
    p1, p2 = write_part(tmp_path / "p1", [ada, bob]), write_part(tmp_path / "p2", [bob])
    with pytest.raises(MergeError, match="students graded in two parts: 'bob'"):
        merge([p1, p2], tmp_path / "out")
    with pytest.raises(MergeError, match="no class.json"):
        merge([p1, tmp_path / "nothing"], tmp_path / "out")
    with pytest.raises(MergeError, match="a part is given twice"):
        merge([p1, p1], tmp_path / "out")
    with pytest.raises(MergeError, match="overlaps the part"):
        merge([p1], p1 / "merged")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("not a merge")
    with pytest.raises(MergeError, match="not empty and no merge wrote it"):
        merge([p1], tmp_path / "mine")
    assert (tmp_path / "mine" / "thesis.tex").exists()
    other = student("bob2", report_name="bob")  # a report name no folder "bob2" could have
    with pytest.raises(MergeError, match="bob.json .its report name is not its folder's"):
        merge([write_part(tmp_path / "q1", [bob]), write_part(tmp_path / "q2", [other])],
              tmp_path / "out")


def test_merge_entry_point_and_make_target(tmp_path, monkeypatch):
    """`python -m course.grading merge` and `make grade-merge` reach merge() with their args."""
    import subprocess

    from course.grading import __main__ as entry
    from course.grading import merge as merging

    seen = {}
    monkeypatch.setattr(merging, "merge", lambda parts, out, roster, per_lesson, seed_file=None: seen.update(
        parts=[str(p) for p in parts], out=str(out), roster=roster, per_lesson=per_lesson) or [])
    done = subprocess.run(["make", "--no-print-directory", "-n", "-o", ".venv/.installed",
                           "grade-merge", "PARTS=a/shard-1 a/shard-2", "OUT=a/class",
                           "ROSTER=r.csv", "PER_LESSON=1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    line = next(l for l in done.stdout.splitlines() if "course.grading merge" in l)
    import shlex

    argv = shlex.split(line)
    assert entry.main(argv[argv.index("course.grading") + 1:]) == 0
    assert seen == {"parts": ["a/shard-1", "a/shard-2"], "out": "a/class",
                    "roster": Path("r.csv"), "per_lesson": True}
    usage = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed",
                            "grade-merge"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 2 and "usage: make grade-merge" in usage.stderr


# ----------------------------------------------------- one machine and three shards, graded


SEED = 424242


def records_of_today(out: Path) -> None:
    """Until the grader writes records itself (records.py is its contract), make them from its
    results.json, as the grader will: the kind of the failed hidden case from its message."""
    import hashlib

    if (out / rec.CLASS_FILE).exists():
        return
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for data in results["students"]:
        record = StudentRecord.from_json(data)
        for c in record.checks:
            found = re.search(r"hidden case '([^']*)'", c.message) if c.confirmed is False else None
            c.hidden_failure = found[1] if found else None
        rec.save_student(out, record)
    rec.save_class(out, ClassInfo(results["lessons"], results["checks"], results["points"],
                                  results["settings"], results["sandbox"],
                                  hashlib.sha256(str(SEED).encode()).hexdigest()))


def grade_small_class(subs: Path, out: Path, *extra: str, roster: Path | None = None) -> None:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "course.grading", "--submissions", str(subs),
                           "--out", str(out), "--lessons", "00-01", "--seed", str(SEED),
                           "--jobs", "2", *extra], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    records_of_today(out)
    info_, records = rec.load_class(out), rec.load_students(out)
    if not (out / "feedback").is_dir():  # the grader's render step calls these once it has one
        write_feedback(out, info_, records)
    if roster is not None and not (out / "lms").is_dir():
        write_lms(out, info_, records, roster)


def build_small_class(subs: Path) -> None:
    from tests.hostile import attacks
    from tests.hostile.classroom import mutate, solution, write

    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    write(subs / "ada" / "exercises", perfect)
    write(subs / "bob" / "exercises", {**perfect, "warmup.py": mutate(
        solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()")})
    # a cheater whose forged PASS lines hide a bug: its batched_dot is off by 0.001, which only
    # the hidden cases can show (and whose values its feedback must not give away)
    write(subs / "cy" / "exercises", {**perfect, "warmup.py": attacks.PATCH_CHECK_CALL + mutate(
        solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum(dim=-1) + 1e-3")})
    (subs / "dee").mkdir()  # handed in nothing


@pytest.mark.slow
def test_a_graded_class_with_a_cheater_gives_feedback_without_hidden_values(tmp_path):
    """A small class graded for real (shards and their merge: tests/test_docs_commands.py and
    tests/test_slurm.py): the gradebook, the LMS files, and the cheater's feedback, which names
    the kind of hidden case it failed, never its values or the run's output."""
    from course.grading.sandbox import bwrap_problem

    if bwrap_problem():
        pytest.skip(bwrap_problem())
    subs = tmp_path / "submissions"
    build_small_class(subs)
    roster = class_roster(tmp_path)
    grade_small_class(subs, tmp_path / "one", "--roster", str(roster))
    one = tmp_path / "one"
    assert {"gradebook.csv", "students/cy.json", "reports/cy.md", "feedback/cy.md",
            "lms/canvas.csv", "lms/moodle.csv", "lms/summary.md"} <= set(tree(one))
    book = (one / "gradebook.csv").read_text().splitlines()
    assert book[1:] == ["ada,ok,3,3,1,1,1,", "bob,ok,2,3,0,1,1,", "cy,ok,2,3,0,1,1,"
                        + "dynamic-import imports-course unconfirmed",
                        "dee,no-submission,0,3,0,0,0,"]
    cy = rec.load_students(one)["cy"].checks[0]
    assert cy.confirmed is False and cy.hidden_failure
    feedback = (one / "feedback" / "cy.md").read_text()
    assert f"`{cy.hidden_failure}`" in feedback
    assert cy.message.split(f"'{cy.hidden_failure}'")[-1].strip(": ") not in feedback
    assert str(SEED) not in feedback and not re.search(r"\d\.\d{4,}", feedback)
    for path in (one / "raw" / "cy").glob("hidden*"):
        for line in path.read_text(errors="replace").splitlines():
            assert len(line.strip()) < 20 or line.strip() not in feedback, line
    canvas = read_canvas((one / "lms" / "canvas.csv").read_text())
    assert {s["id"] or s["sis_login_id"]: s["scores"]["Attention course, lessons 00-01"]
            for s in canvas["students"]} == {"4211": 3.0, "4212": 2.0, "4213": 2.0, "4214": 0.0,
                                             "fay@example.edu": 0.0}


# The cluster recipes of docs/instructors.md (Kubernetes, Slurm, shards by hand) are run as
# written by tests/test_docs_commands.py and, on a real Slurm, by tests/test_slurm.py.


# ---------------------------------------------- what plain nbval on a student's notebook proves


@pytest.mark.slow
def test_plain_nbval_passes_a_wrong_cell_the_student_saved(tmp_path):
    """docs/instructors.md: `pytest --nbval` compares with the notebook's own saved outputs, so
    a wrong result the student saved passes; only a saved output that differs fails."""
    import os
    import subprocess
    import sys

    import nbformat
    from nbclient import NotebookClient

    wrong = ("import torch\n\ndef batched_dot(a, b):\n    return (a * b).sum()  # should be dim=-1\n\n"
             "print(batched_dot(torch.ones(2, 3), torch.ones(2, 3)))")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(wrong)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()  # the student's run
    assert notebook.cells[0].outputs[0]["text"] == "tensor(6.)\n"  # wrong: [3., 3.] is right
    path = tmp_path / "student.ipynb"
    nbformat.write(notebook, path)

    def nbval() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "--nbval", str(path), "-q",
                               "-p", "no:cacheprovider", "-c", os.devnull, "--rootdir", str(tmp_path)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)

    done = nbval()
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]
    notebook.cells[0].outputs[0]["text"] = "tensor([3., 3.])\n"  # the right answer, saved
    nbformat.write(notebook, path)
    done = nbval()
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-2000:]


# ------------------------------------------------ collect, hand-back, the class's folders


def _zip_bytes(files: dict[str, bytes | str]) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_collect_reads_a_moodle_download_in_folders_and_flat(tmp_path):
    from course.grading.collect import collect

    download = tmp_path / "class" / "moodle.zip"
    download.parent.mkdir()
    download.write_bytes(_zip_bytes({
        "Ada Lovelace_1001_assignsubmission_file/exercises.zip": _zip_bytes(
            {"exercises/warmup.py": "x = 1\n", "../evil.py": "no", "__MACOSX/._x": "mac"}),
        "Bob Babbage_1002_assignsubmission_file_warmup.py": "y = 2\n",        # before Moodle 3.1
        "Bob Babbage_1002_assignsubmission_file_softmax (1).py": "z = 3\n",
        "Ann Lee_1003_assignsubmission_onlinetext/onlinetext.html": "<p>hi</p>",
        ".._1004_assignsubmission_file/x.py": "a name that is a path",
        "readme.txt": "not anyone's"}))
    roster = tmp_path / "class" / "roster.csv"
    roster.write_text("folder,lms_id,name\nada,A1,Ada Lovelace\n")
    handles = collect(download, tmp_path / "class" / "collected", roster)
    subs = tmp_path / "class" / "collected"
    assert sorted(p.name for p in subs.iterdir()) == [".lms.json", "Ann Lee", "Bob Babbage", "ada",
                                                      "moodle-1004"]
    assert (subs / "ada" / "exercises" / "warmup.py").read_text() == "x = 1\n"
    assert not (subs / "evil.py").exists() and not (subs / "ada" / "__MACOSX").exists()
    assert sorted(p.name for p in (subs / "Bob Babbage").iterdir()) == ["softmax (1).py", "warmup.py"]
    ada = handles["students"]["ada"]
    assert (ada["lms"], ada["id"], ada["name"], ada["attachments"]) == (
        "moodle", "1001", "Ada Lovelace", [])
    assert ada["notes"] == ["left out: ../evil.py (a path outside the student's folder)"]
    again = collect(download, subs)  # the same download again: nothing changes
    assert {r.state for r in again["report"]} == {"unchanged"}
    (subs / "ada" / "stray.txt").unlink(missing_ok=True)
    other = tmp_path / "class" / "other"
    (other / "x").mkdir(parents=True)
    with pytest.raises(SystemExit, match="not made by make collect"):
        collect(download, other)


def test_collect_reads_a_canvas_download_as_canvas_reads_its_names(tmp_path):
    from course.grading.collect import canvas_parts, collect

    assert canvas_parts("lovelaceada_late_4211_90001_softmax_v2.py") == (
        "lovelaceada", True, "4211", "90001", "softmax_v2.py")
    assert canvas_parts("4211_90001_warmup.py") == ("", False, "4211", "90001", "warmup.py")
    assert canvas_parts("late_4211_90001_warmup.py") == ("", True, "4211", "90001", "warmup.py")
    download = tmp_path / "download"
    download.mkdir()  # an unpacked download works too
    (download / "lovelaceada_4211_90001_warmup.py").write_text("w\n")
    (download / "lovelaceada_4211_90002_exercises.zip").write_bytes(
        _zip_bytes({"attention-course-main/exercises/softmax.py": "s\n"}))
    (download / "smithjo_4212_90003_warmup.py").write_text("j\n")
    handles = collect(download, tmp_path / "collected")
    ada = tmp_path / "collected" / "lovelaceada"
    assert (ada / "attention-course-main" / "exercises" / "softmax.py").read_text() == "s\n"
    assert handles["students"]["lovelaceada"]["attachments"] == [["90001", "warmup.py"],
                                                                  ["90002", "exercises.zip"]]
    assert handles["students"]["smithjo"]["id"] == "4212"


def test_handback_zips_name_each_student_as_the_lms_reads_them(tmp_path):
    import json
    import zipfile

    from course.grading.handback import build
    from tests.lms_formats import canvas_reupload_target, moodle_feedback_target

    out, subs = tmp_path / "grades", tmp_path / "collected"
    records = [student("ada"), student("Ann_Lee", report_name="Ann_Lee~1"), student("cy")]
    for record in records:
        rec.save_student(out, record)
    write_feedback(out, info(), records)
    subs.mkdir()
    (subs / ".lms.json").write_text(json.dumps({"students": {
        "ada": {"lms": "canvas", "id": "4211", "name": "lovelaceada",
                "attachments": [["90002", "warmup.py"], ["90001", "exercises.zip"]]},
        "Ann_Lee": {"lms": "moodle", "id": "1003", "name": "Ann_Lee van 2"}}}))
    held = build(out, subs)
    assert held == {"feedback.zip": ["Ann_Lee", "ada", "cy"], "canvas-feedback.zip": ["ada"],
                    "moodle-feedback.zip": ["Ann_Lee"]}
    folder = out / "handback"
    with zipfile.ZipFile(folder / "canvas-feedback.zip") as archive:
        (name,) = archive.namelist()
        assert canvas_reupload_target(name) == ("4211", "90001")
        inner = zipfile.ZipFile(io.BytesIO(archive.read(name)))  # exercises.zip: a zip back
        assert inner.read("feedback.md").decode().startswith("# ada: 4.5 / 4.5 points")
    with zipfile.ZipFile(folder / "moodle-feedback.zip") as archive:
        (name,) = archive.namelist()
        assert moodle_feedback_target(name) == (1003, "assignfeedback", "file", "feedback.md")
    assert "- `cy`" in (folder / "README.md").read_text()
    first = (folder / "feedback.zip").read_bytes()
    build(out, subs)
    assert (folder / "feedback.zip").read_bytes() == first  # the same records, the same bytes


def test_the_class_folders_must_lie_outside_the_course(tmp_path):
    from course.grading.classdir import ClassPathError, check_class_paths

    check_class_paths({"OUT": tmp_path / "grades", "ROSTER": None})
    for variable, path in (("OUT", ROOT / "grades"), ("SUBMISSIONS", ROOT / "build" / "x"),
                           ("ROSTER", ROOT / "roster.csv"), ("SEED_FILE", ROOT / "seed"),
                           ("OUT", ROOT.parent)):
        with pytest.raises(ClassPathError) as refused:
            check_class_paths({variable: path})
        message = str(refused.value.code)
        assert message.startswith(f"make grade: {variable}={path} ")
        assert "keep the class beside the course, e.g. " + variable + "=../class/" in message


def test_students_are_whole_folder_names(tmp_path):
    from course.grading.wanted import WantedError, wanted_students

    folders = ["Ann Lee", "Ann", "Lee", "ada", "bob", "Bo Li"]
    assert wanted_students(["ada bob"], None, folders) == ["ada", "bob"]
    assert wanted_students(["Ann Lee"], None, folders) == ["Ann Lee"]  # the whole name wins
    assert wanted_students(["Ann Lee\nBo Li\r\nada"], None, folders) == ["Ann Lee", "Bo Li", "ada"]
    assert wanted_students(["ada", "Bo Li"], None, folders) == ["ada", "Bo Li"]  # --students
    names = tmp_path / "students.txt"
    names.write_text("\ufeffAnn Lee\n\nBo Li  \n", encoding="utf-8")
    assert wanted_students(None, names, folders) == ["Ann Lee", "Bo Li"]
    assert wanted_students(None, None, folders) is None
    with pytest.raises(WantedError):
        wanted_students(["  "], None, folders)


def test_a_run_into_out_takes_outs_lessons_points_and_limits(tmp_path):
    from course.grading.reuse import points_toml, settle
    from course.grading.run import Options

    recorded = info(settings={**info().settings, "cell_timeout": 20, "hidden_timeout": 20,
                              "per_lesson": True, "unsafe": True, "jobs": 4})
    (tmp_path / rec.SEED_FILE).write_text("271828\n")
    rec.save_class(tmp_path, recorded)
    options = Options()
    settings = settle(tmp_path, {}, options)
    assert options.lessons == ["00", "01"] and options.points == POINTS and options.per_lesson
    assert (settings.cell_timeout, settings.hidden_timeout, settings.unsafe) == (20, 20, False)
    assert options.reused[:2] == ["lessons", "points"] and "cell_timeout" in options.reused
    given = Options(lessons=["00"], points_file=tmp_path / "p.toml", per_lesson=False)
    settings = settle(tmp_path, {"cell_timeout": 30.0}, given)
    assert given.lessons == ["00"] and given.points is None and given.per_lesson is False
    assert (settings.cell_timeout, settings.hidden_timeout) == (30.0, 30.0)
    fresh = Options()
    assert settle(tmp_path / "new", {}, fresh).cell_timeout == 60 and fresh.lessons is None
    edited = json.loads((tmp_path / rec.CLASS_FILE).read_text())  # its limits raised by hand
    edited["settings"]["cell_timeout"] = edited["settings"]["hidden_timeout"] = 9999
    (tmp_path / rec.CLASS_FILE).write_text(json.dumps(edited))
    taken = Options()
    assert settle(tmp_path, {}, taken).cell_timeout == 60 and taken.lessons is None
    import tomllib

    assert tomllib.loads(points_toml(POINTS))["points"] == POINTS


def test_feedback_names_the_files_not_graded(tmp_path):
    record = student("dee", ignored=["exercises/softmax (1).py (not a module name; did you mean "
                                     "exercises/softmax.py?)", "solutions/ (only exercises/*.py "
                                     "count)"])
    text = feedback_text(info(), record)
    assert "## Files not graded" in text and "softmax (1).py" in text
    assert "did you mean exercises/softmax.py?" in text and "hand it in again" in text
    assert "## Files not graded" not in feedback_text(info(), student("ada"))


def test_a_merge_writes_the_lms_files_from_the_roster_its_parts_keep(tmp_path):
    """Shards graded with ROSTER= keep it; a merge given none writes the LMS files from theirs,
    and a later run into the merged OUT finds it there too (render.py)."""
    from course.grading.roster import store_roster

    ada, bob, *_ = the_class()
    p1, p2 = write_part(tmp_path / "p1", [ada]), write_part(tmp_path / "p2", [bob])
    for part in (p1, p2):
        store_roster(part, class_roster(tmp_path))
    merge([p1, p2], tmp_path / "out")
    rows = read_canvas((tmp_path / "out" / "lms" / "canvas.csv").read_text())["students"]
    assert {r["id"]: r["scores"]["Attention course"] for r in rows if r["id"]} == {
        "4211": 4.5, "4212": 3.5, "4213": 0.0, "4214": 0.0}
    assert oct((tmp_path / "out" / "roster.csv").stat().st_mode & 0o777) == "0o600"


def test_collect_reads_a_students_zip_only_within_its_limits(monkeypatch):
    from course.grading import download as collect

    monkeypatch.setattr(collect, "MAX_STUDENT_BYTES", 100)
    files, left_out = collect.unpacked([("a.zip", _zip_bytes({"x.py": "x" * 60, "y.py": "y" * 60,
                                                              "z.py": "z"})),
                                        ("b.py", b"b" * 50)])
    assert [name for name, _ in files] == ["x.py", "z.py"]
    assert any("y.py (over" in item for item in left_out) and any("b.py (over" in item
                                                                 for item in left_out)
    assert collect.unpacked([("c.zip", b"not a zip")])[1] == [
        "c.zip (not a readable zip: File is not a zip file)"]
