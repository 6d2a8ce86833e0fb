"""An instructor's term around `make grade`: LMS files, feedback to hand back, shards merged.

Fast tests build records by hand (records.py is the contract the grader writes); the slow one
grades a small class on one machine and in three shards and checks that the merge is the same
OUT, byte for byte apart from timings.
"""
from __future__ import annotations

import csv
import io
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
from tests.lms_formats import read_canvas, read_moodle

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
    assert [e.folder for e in roster] == ["ada", "bob", "cy", "eve"]
    assert roster[0].lms_id == "4211" and roster[0].email == "ada@example.edu"
    assert roster[0].name == "Lovelace, Ada" and roster[3].email == ""
    semicolons = tmp_path / "excel.csv"  # Excel in many locales: a BOM and semicolons
    semicolons.write_text("\ufeffFolder;LMS ID;Email;Name;Section\nada;4211;a@x;Ada;1\n",
                          encoding="utf-8")
    assert read_roster(semicolons)[0].lms_id == "4211"
    twice = tmp_path / "twice.csv"
    twice.write_text("folder,lms_id\nada,1\nbob,1\n")
    with pytest.raises(RosterError, match="lines 2 and 3: the same lms_id"):
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
    moodle = read_moodle((DATA / "moodle_export_sample.csv").read_text(), "Email address",
                         "useremail", ["Assignment: Homework 1 (Real)"])
    assert moodle["grades"]["charles@example.edu"] == {"Assignment: Homework 1 (Real)": None}


def test_canvas_file_has_the_export_columns_and_points_possible():
    roster = read_roster(DATA / "roster.csv")
    text = canvas_csv(info(), roster, {r.student: r for r in the_class()}, per_lesson=True)
    sample = next(csv.reader(io.StringIO((DATA / "canvas_export_sample.csv").read_text())))
    assert next(csv.reader(io.StringIO(text)))[:5] == sample[:5]  # Student .. Section, as exported
    got = read_canvas(text)
    assert got["assignments"] == ["Attention course", "Attention course: lesson 00",
                                  "Attention course: lesson 01"]
    assert got["points"] == {"Attention course": "4.5", "Attention course: lesson 00": "1",
                             "Attention course: lesson 01": "3.5"}
    rows = {s["id"]: s for s in got["students"]}
    assert rows["4211"]["scores"] == {"Attention course": 4.5, "Attention course: lesson 00": 1.0,
                                      "Attention course: lesson 01": 3.5}
    assert rows["4212"]["scores"]["Attention course"] == 3.5
    assert rows["4213"]["scores"]["Attention course"] == 0.0  # unconfirmed and blocked: 0
    assert rows["4214"]["scores"]["Attention course"] == 0.0  # eve: in the roster, no submission
    assert rows["4211"]["sis_login_id"] == "ada@example.edu" and rows["4211"]["section"] == "Section 1"
    assert "dee" not in text  # graded but not in the roster: listed elsewhere, not imported
    assert text.encode() == (DATA / "expected_canvas.csv").read_bytes()


def test_moodle_file_maps_by_email_or_by_id_number():
    roster = read_roster(DATA / "roster.csv")
    text = moodle_csv(info(), roster, {r.student: r for r in the_class()})
    by_email = read_moodle(text, "Email address", "useremail", ["Attention course"])
    assert by_email["grades"] == {"ada@example.edu": {"Attention course": 4.5},
                                  "bob@example.edu": {"Attention course": 3.5},
                                  "cy@example.edu": {"Attention course": 0.0}}
    assert [row[1] for row in by_email["skipped"]] == ["4214"]  # eve has no email: summary says so
    by_number = read_moodle(text, "ID number", "useridnumber", ["Attention course"])
    assert by_number["grades"]["4214"] == {"Attention course": 0.0}
    assert text.splitlines()[0] == "Email address,ID number,Full name,Section,Attention course"
    assert text.encode() == (DATA / "expected_moodle.csv").read_bytes()


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
    assert files.missing == ["eve"] and files.unknown == ["dee"] and files.no_email == ["eve"]
    assert files.not_ok == []  # dee is not ok, but not in the roster: listed as unknown
    summary = files.summary.read_text()
    assert "## In the roster without a submission (0 points in both files): 1" in summary
    assert "- `eve`" in summary and "- `dee`" in summary
    err = capsys.readouterr().err
    assert "1 in the roster, no submission (0 points): eve" in err
    assert "1 graded, not in the roster (left out of the LMS files): dee" in err
    assert sorted(p.name for p in (tmp_path / "lms").iterdir()) == ["canvas.csv", "moodle.csv",
                                                                   "summary.md"]
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
    records = merge(parts, tmp_path / "out", roster=DATA / "roster.csv", per_lesson=True)
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
    assert rec.load_class(out) == info()  # the parts' class.json, as it was
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
TIMING = re.compile(r"Graded in \S+ s")  # the one line of a report that a timing changes


def _grader_help() -> str:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "course.grading", "--help"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=300)
    return done.stdout


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
    write(subs / "cy" / "exercises", {**perfect, "warmup.py": attacks.FROM_REFERENCE})
    (subs / "dee").mkdir()  # handed in nothing


def tree(out: Path) -> dict[str, object]:
    """The gradebook, records, reports, feedback and LMS files of an OUT, timings taken out:
    file -> text (or the parsed record)."""
    found = {}
    for path in sorted(out.rglob("*")):
        relative = path.relative_to(out).as_posix()
        if not path.is_file() or path.name.startswith(".") or not (
                relative == "gradebook.csv" or relative.startswith(
                    ("students/", "reports/", "feedback/", "lms/"))):
            continue
        if relative.startswith("students/"):
            data = json.loads(path.read_text(encoding="utf-8"))
            data.pop("seconds")
            data.pop("mac", None)  # it covers the seconds too
            found[relative] = data
        else:
            found[relative] = TIMING.sub("Graded in N s", path.read_text(encoding="utf-8"))
    return found


@pytest.mark.slow
def test_three_shards_merged_are_one_run(tmp_path):
    from course.grading.merge import grading_key
    from course.grading.sandbox import bwrap_problem

    if bwrap_problem():
        pytest.skip(bwrap_problem())
    subs = tmp_path / "submissions"
    build_small_class(subs)
    roster = DATA / "roster.csv"
    helps = _grader_help()
    grade_small_class(subs, tmp_path / "one", *(["--roster", str(roster)] if "--roster" in helps
                                                else []), roster=roster)
    parts = [tmp_path / f"shard-{k}" for k in (1, 2, 3)]
    folders = sorted(p.name for p in subs.iterdir())
    for k, part in enumerate(parts, start=1):
        if "--shard" in helps:
            grade_small_class(subs, part, "--shard", f"{k}/3")
        else:  # until the grader has --shard: each shard's share in its own SUBMISSIONS
            share = tmp_path / f"subs-{k}"
            for name in folders[k - 1::3]:
                import shutil

                shutil.copytree(subs / name, share / name)
            grade_small_class(share, part)
    merge(parts, tmp_path / "merged", roster=roster)

    one, merged = tree(tmp_path / "one"), tree(tmp_path / "merged")
    assert {"gradebook.csv", "students/cy.json", "reports/cy.md", "feedback/cy.md",
            "lms/canvas.csv", "lms/moodle.csv", "lms/summary.md"} <= set(one)
    assert sorted(one) == sorted(merged)
    for name in one:
        assert one[name] == merged[name], name
    assert grading_key(rec.load_class(tmp_path / "one")) == \
        grading_key(rec.load_class(tmp_path / "merged"))
    book = (tmp_path / "merged" / "gradebook.csv").read_text().splitlines()
    assert book[1:] == ["ada,ok,3,3,1,1,1,", "bob,ok,2,3,0,1,1,", "cy,ok,2,3,0,1,1,"
                        + "imports-course mentions-reference-data unconfirmed",
                        "dee,no-submission,0,3,0,0,0,"]
    assert sorted(p.name for p in (tmp_path / "merged" / "raw").iterdir()) == ["ada", "bob", "cy", "dee"]

    # the cheater's feedback names the kind of hidden case, never its values or the run's output
    cy = rec.load_students(tmp_path / "merged")["cy"].checks[0]
    assert cy.confirmed is False and cy.hidden_failure
    feedback = (tmp_path / "merged" / "feedback" / "cy.md").read_text()
    assert f"`{cy.hidden_failure}`" in feedback
    assert cy.message.split(f"'{cy.hidden_failure}'")[-1].strip(": ") not in feedback
    assert str(SEED) not in feedback and not re.search(r"\d\.\d{4,}", feedback)
    for path in (tmp_path / "merged" / "raw" / "cy").glob("hidden*"):
        for line in path.read_text(errors="replace").splitlines():
            assert len(line.strip()) < 20 or line.strip() not in feedback, line
    canvas = read_canvas((tmp_path / "merged" / "lms" / "canvas.csv").read_text())
    assert {s["id"]: s["scores"]["Attention course"] for s in canvas["students"]} == \
        {"4211": 3.0, "4212": 2.0, "4213": 2.0, "4214": 0.0}


# ------------------------------------------- the cluster recipes of docs/instructors.md


class Parsed(Exception):
    """Raised in place of running the grader: the command line parsed, here are its values."""


def parse_like_the_grader(argv: list[str], monkeypatch) -> dict:
    """`python -m course.grading ARGV` through the grader's own entry point and argument parser,
    stopped right after parsing; SystemExit (argparse's error) when the CLI refuses the line."""
    import argparse

    from course.grading import __main__ as entry

    original = argparse.ArgumentParser.parse_args

    def parse(self, args=None, namespace=None):
        raise Parsed(vars(original(self, args, namespace)))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse)
    with pytest.raises(Parsed) as parsed:
        entry.main(argv)
    return parsed.value.args[0]


def grader_options(monkeypatch) -> str:
    import contextlib
    import io as io_

    from course.grading import __main__ as entry

    text = io_.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
        entry.main(["--help"])
    return text.getvalue()


def doc_block(name: str) -> str:
    """The fenced block of docs/instructors.md whose first lines name it (`# grade-job.yaml`)."""
    doc = (ROOT / "docs" / "instructors.md").read_text(encoding="utf-8")
    for block in re.findall(r"^```\w*\n(.*?)^```", doc, re.S | re.M):
        if any(line == f"# {name}" or line.startswith(f"# {name}:")
               for line in block.splitlines()[:2]):
            return block
    raise AssertionError(f"no block named {name} in docs/instructors.md")


def run_recording(script: str, tmp_path: Path, env: dict, cwd: Path | None = None,
                  fakes: dict[str, str] | None = None) -> list[list[str]]:
    """Run a shell script with `python` (and any `fakes`) replaced by recorders of their argv."""
    import stat
    import subprocess

    bin_dir, record = tmp_path / "bin", tmp_path / "argv"
    bin_dir.mkdir(exist_ok=True)
    record.mkdir(exist_ok=True)
    recorder = ('#!/bin/bash\nf=$(mktemp "$ARGV_DIR/argv.XXXXXX")\nprintf "%s\\0" "$@" > "$f"\n')
    for name, text in {"python": recorder, **(fakes or {})}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(stat.S_IRWXU)
    done = subprocess.run(["bash", "-c", script], cwd=cwd or tmp_path, capture_output=True,
                          text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ARGV_DIR": str(record),
                               "HOME": str(tmp_path), **env})
    assert done.returncode == 0, done.stderr
    found = []
    for path in sorted(record.iterdir(), key=lambda p: p.stat().st_mtime_ns):
        found.append(path.read_bytes().decode().split("\0")[:-1])
        path.unlink()
    return found


def grader_argv(argv: list[str]) -> list[str]:
    """The arguments after `python -m course.grading`."""
    assert argv[:2] == ["-m", "course.grading"], argv
    return argv[2:]


def check_shard_line(argv: list[str], k: int, n: int, monkeypatch, has_shard: bool) -> dict:
    """Parse a shard's command line with the grader's parser; until the grader has --shard, the
    rest of the line is parsed and --shard's value checked here."""
    assert argv[argv.index("--shard") + 1] == f"{k}/{n}"
    if not has_shard:
        at = argv.index("--shard")
        argv = argv[:at] + argv[at + 2:]
    return parse_like_the_grader(argv, monkeypatch)


def test_the_kubernetes_manifests_are_jobs_the_grader_accepts(tmp_path, monkeypatch):
    import yaml

    has_shard = "--shard" in grader_options(monkeypatch)
    job = yaml.safe_load(doc_block("grade-job.yaml"))
    assert (job["apiVersion"], job["kind"]) == ("batch/v1", "Job")
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"]
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and pod["hostUsers"] is False
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert int(env["SHARDS"]["value"]) == spec["completions"]
    volumes = {v["name"]: v for v in pod["volumes"]}  # the seed: a file, never on a command line
    assert volumes["seed"]["secret"]["secretName"] == "attention-grading-seed"
    assert container["securityContext"]["procMount"] == "Unmasked"
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/class/submissions"]["readOnly"] is True
    assert container["command"] == ["bash", "-c"] and len(container["args"]) == 1
    outs = []
    for index in range(spec["completions"]):
        (argv,) = run_recording(container["args"][0], tmp_path, {
            "JOB_COMPLETION_INDEX": str(index), "SHARDS": env["SHARDS"]["value"]})
        args = check_shard_line(grader_argv(argv), index + 1, spec["completions"], monkeypatch,
                                has_shard)
        assert args["submissions"] == "/class/submissions" and args["seed"] is None
        assert str(args["seed_file"]) == f"{mounts['/secrets']['mountPath']}/seed"
        outs.append(str(args["out"]))
    assert outs == [f"/class/grades/shard-{k}" for k in range(1, spec["completions"] + 1)]

    merge_job = yaml.safe_load(doc_block("merge-job.yaml"))
    assert merge_job["kind"] == "Job" and "completionMode" not in merge_job["spec"]
    (merger,) = merge_job["spec"]["template"]["spec"]["containers"]
    assert merger["image"] == container["image"]
    for k in range(1, 4):
        (tmp_path / "class" / "grades" / f"shard-{k}").mkdir(parents=True)
    script = merger["args"][0].replace("/class/", f"{tmp_path}/class/")
    (argv,) = run_recording(script, tmp_path, {})
    args = parse_like_the_grader(grader_argv(argv), monkeypatch)
    assert [str(p) for p in args["parts"]] == [f"{tmp_path}/class/grades/shard-{k}" for k in (1, 2, 3)]
    assert str(args["out"]) == f"{tmp_path}/class/grades/class" and args["roster"] is not None


SBATCH = """#!/bin/bash
# a stand-in for Slurm's sbatch: prints a job id (--parsable), runs --wrap's command at once
echo "$*" >> "$ARGV_DIR/../sbatch.log"
wrap=""
while [ $# -gt 0 ]; do
  case "$1" in
    --wrap) wrap="$2"; shift ;;
    --wrap=*) wrap="${1#--wrap=}" ;;
  esac
  shift
done
if [ -n "$wrap" ]; then sh -c "$wrap"; fi
echo "4242;cluster"
"""


def test_the_slurm_scripts_run_lines_the_grader_accepts(tmp_path, monkeypatch):
    has_shard = "--shard" in grader_options(monkeypatch)
    array = doc_block("grade-array.sbatch")
    assert re.search(r"^#SBATCH --array=1-3$", array, re.M)
    course, klass = tmp_path / "course", tmp_path / "class"
    (course / ".venv" / "bin").mkdir(parents=True)
    (klass / "grades").mkdir(parents=True)
    (klass / "seed").write_text("2718281828\n")
    (course / ".venv" / "bin" / "python").symlink_to(tmp_path / "bin" / "python")
    for task in (1, 2, 3):
        (argv,) = run_recording(array, tmp_path, {
            "SLURM_SUBMIT_DIR": str(course), "SLURM_ARRAY_TASK_ID": str(task),
            "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_CPUS_PER_TASK": "2", "CLASS": str(klass)})
        args = check_shard_line(grader_argv(argv), task, 3, monkeypatch, has_shard)
        assert str(args["seed_file"]) == f"{klass}/seed" and args["jobs"] == 2
        assert str(args["out"]) == f"{klass}/grades/shard-{task}"
        (klass / "grades" / f"shard-{task}").mkdir()

    (course / "grade-array.sbatch").write_text(array)
    (argv,) = run_recording(doc_block("submit.sh"), tmp_path, {"CLASS": str(klass)}, cwd=course,
                            fakes={"sbatch": SBATCH})
    args = parse_like_the_grader(grader_argv(argv), monkeypatch)
    assert [str(p) for p in args["parts"]] == [f"{klass}/grades/shard-{k}" for k in (1, 2, 3)]
    assert str(args["out"]) == f"{klass}/grades/class" and str(args["seed_file"]) == f"{klass}/seed"
    assert "--dependency=afterok:4242 " in (tmp_path / "sbatch.log").read_text()


def test_the_by_hand_shard_lines_are_ones_the_grader_accepts(monkeypatch):
    import shlex

    has_shard = "--shard" in grader_options(monkeypatch)
    block = doc_block("by hand: the seed once a term, then one shard per machine (a shared "
                      "folder), then the merge")
    lines = [l for l in block.splitlines() if "-m course.grading" in l]
    assert len(lines) == 3
    for k, line in enumerate(lines, start=1):
        argv = shlex.split(line)
        args = check_shard_line(argv[argv.index("course.grading") + 1:], k, 3, monkeypatch,
                                has_shard)
        assert str(args["seed_file"]) == "seed" and args["out"] == f"grades/shard-{k}"


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
