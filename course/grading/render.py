"""Everything in OUT that is rendered from the records: per student, the record and the report as
soon as the student is graded; for the class, the gradebook after every student, and at the end
results.json, the feedback to hand back and the LMS files.

`render_class` is the one place where the LMS, feedback and class-page writers
(course/grading/lms.py, course/grading/feedback.py, course/grading/classpage.py) are called;
every kind of run (a class, a regrade, a resumed or stopped run, a merge of shards) renders
through it, so OUT's files always agree with its records.
The LMS files come from the roster given to this run, else from the one OUT keeps (roster.py),
and per lesson when this run or the class's record (class.json) asks for it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from course.grading import records as rec
from course.grading.classpage import write_safely as write_class_safely
from course.grading.feedback import write_feedback
from course.grading.lms import LMS_DIR, write_lms
from course.grading.records import ClassInfo, StudentRecord, atomic_write
from course.grading.report import report_text, write_gradebook
from course.grading.roster import STORED, stored_roster

REPORTS_DIR = "reports"


def write_student(out: Path, record: StudentRecord, limits_line: str) -> None:
    """A graded student's record, then its report, each written atomically."""
    rec.save_student(out, record)
    atomic_write(out / REPORTS_DIR / f"{record.report_name}.md", report_text(record, limits_line))


def write_results(out: Path, info: ClassInfo, records: list[StudentRecord], run: dict) -> None:
    """results.json: the class's plan, this run's figures, every record."""
    atomic_write(out / "results.json", json.dumps({
        "lessons": info.lessons, "checks": info.checks, "points": info.points,
        "sandbox": info.sandbox, "settings": info.settings, **run,
        "students": [r.to_json() for r in sorted(records, key=lambda r: r.student)]},
        indent=1, ensure_ascii=False))


def render_class(out: Path, info: ClassInfo, records: list[StudentRecord], run: dict,
                 roster: Path | None = None, per_lesson: bool | None = None) -> list[str]:
    """The class's files from its records; returns what was written besides the gradebook."""
    records = sorted(records, key=lambda r: r.student)
    roster = roster if roster is not None else stored_roster(out)
    if roster is None and (Path(out) / STORED).is_file():  # refused: an earlier run's LMS files
        shutil.rmtree(Path(out) / LMS_DIR, ignore_errors=True)  # would map grades as it did
    if per_lesson is None:
        per_lesson = bool((info.settings or {}).get("per_lesson"))
    write_gradebook(out, info.checks, records)
    write_results(out, info, records, run)
    written = ["results.json"]
    write_feedback(out, info, records)
    written.append("feedback/")
    if roster is not None:
        write_lms(out, info, records, roster, per_lesson)
        written.append("lms/")
    if write_class_safely(out, info, records, roster):
        written.append("class/")
    from course.grading.handback import rebuild

    if rebuild(out) is not None:
        written.append("handback/")
    rec.private_tree(out)
    return written
