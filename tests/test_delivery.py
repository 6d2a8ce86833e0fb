"""What the LMS's delivery leaves in a record (late, extension, renamed files), what the feedback asks
of a student on each LMS, points changed from the records, and a submission with no exercise."""
from __future__ import annotations

from pathlib import Path

from course.grading import delivery
from course.grading import records as rec
from course.grading.feedback import feedback_text
from course.grading.rescore import rescore, rescore_record
from course.grading.roster import RosterEntry
from tests.test_grading_term import info, student


def test_an_extension_lifts_canvas_late_flag_only_where_it_provably_covers_the_files():
    late = {"lms": "canvas", "late": True, "downloaded": "2026-11-20T12:00:00"}
    assert delivery.late_verdict(late, None) is True
    assert delivery.late_verdict(late, RosterEntry("a", extension="2026-11-25")) is False
    assert delivery.late_verdict(late, RosterEntry("a", extension="2026-11-20 11:00")) is True
    assert delivery.late_verdict({**late, "late": False}, None) is False
    assert delivery.late_verdict({"lms": "moodle"}, RosterEntry("a", extension="2026-11-25")) is None
    record = delivery.apply(student("ada"), late, RosterEntry("ada", extension="2026-11-19"))
    assert record.flags[-2:] == ["late", "extension"] and record.lms_late is True
    again = delivery.apply(record, delivery.handle_of(record), RosterEntry("ada", extension="2026-12-01"))
    assert again.late is False and "late" not in again.flags and "extension" in again.flags


def test_the_feedback_asks_only_what_a_student_can_do_on_their_lms():
    ignored = ["exercises/softmax (1).py (not a module name; did you mean exercises/softmax.py?)"]
    canvas = student("ada", ignored=ignored)
    canvas.lms = "canvas"
    text = feedback_text(info(), canvas)
    assert "Canvas may list the new file as `softmax-1.py`" in text and "graded as `softmax.py`" in text
    canvas.delivered = [["softmax-2.py", "softmax.py"]]
    assert "`softmax.py`: Canvas delivered it as `softmax-2.py`" in feedback_text(info(), canvas)
    moodle = student("bob", ignored=ignored)
    moodle.lms = "moodle"
    assert "edit your Moodle submission" in feedback_text(info(), moodle)
    assert "hand it in again" in feedback_text(info(), student("cy", ignored=ignored))


def test_points_are_arithmetic_on_the_records(tmp_path):
    record = student("ada")
    passed = [c.id for c in record.checks if c.passed]
    changed = rescore_record(record, {passed[0]: 3.0})
    assert changed and record.checks[0].points == 3.0 and record.total == sum(
        c.earned for c in record.checks)


def test_a_rescore_writes_every_file_again_and_runs_no_student_code(tmp_path, monkeypatch):
    import course.grading.student as grading_student

    monkeypatch.setattr(grading_student, "grade_student", lambda *a: (_ for _ in ()).throw(
        AssertionError("a student was graded")))
    out = tmp_path / "grades"
    out.mkdir()
    (out / rec.SEED_FILE).write_text("12345\n")
    records = [student("ada"), student("bob")]
    for record in records:
        rec.save_student(out, record)
    rec.save_class(out, info())
    points = tmp_path / "points.toml"
    first = records[0].checks[0].id
    points.write_text(f'default = 1\n\n[points]\n"{first}" = 4\n')
    done = rescore(out, points)
    assert done["students"] == 2
    again = rec.load_students(out)
    assert again["ada"].checks[0].points == 4 and rec.load_class(out).points[first] == 4
    assert (out / "gradebook.csv").read_text().count("\n") == 3
    assert Path(out / "feedback" / "ada.md").read_text().startswith("# ada: ")


def test_a_submission_of_notebooks_only_is_named(tmp_path):
    from course.grading.submission import find_exercises, not_exercises

    folder = tmp_path / "nina"
    (folder / "notebooks").mkdir(parents=True)
    (folder / "notebooks" / "01_qkv_by_hand.ipynb").write_text("{}")
    (folder / "report.pdf").write_text("%PDF")
    assert find_exercises(folder) is None
    named = not_exercises(folder, ["softmax", "warmup"])
    assert any(n.startswith("notebooks/01_qkv_by_hand.ipynb (a notebook: the graded code is in "
                            "exercises/*.py") for n in named)
    assert any(n.startswith("report.pdf (not an exercise file") for n in named)
