"""The gradebook as the import files of two LMSs, Canvas and Moodle, through a roster.

    write_lms(out, info, records, roster_path, per_lesson=False)   # OUT/lms/{canvas,moodle}.csv

The roster is a CSV file (UTF-8, a header row, comma or semicolon separated) that maps each
submission folder to the student's identity in the LMS:

    folder,lms_id,email,name,section
    ada,4211,ada@example.edu,"Lovelace, Ada",Section 1

`folder` is the name of the student's folder in SUBMISSIONS; `lms_id` the student's id in the LMS
(Canvas: the `ID` column of a Canvas gradebook export; Moodle: the profile's "ID number");
`email`, `name` and `section` as the LMS knows them. Headers are matched loosely (`LMS id`,
`Email address`, any case). Everything comes from the records (records.py), so a one-machine run,
a regrade and a merge of shards write the same files. Written to OUT/lms/:

- canvas.csv, Canvas's gradebook import format. Its columns are those of a Canvas gradebook export,
  `Student, ID, SIS User ID, SIS Login ID, Section`, then one column per assignment, and a second
  row `Points Possible` that gives each new assignment its maximum. Sources: Instructure, "How do
  I import grades in the Gradebook?" (https://community.canvaslms.com/t5/Instructor-Guide/
  How-do-I-import-grades-in-the-Gradebook/ta-p/807), and the importer itself, canvas-lms
  app/models/gradebook_importer.rb: the header must start with "Student" and "ID" and its last
  student column must be "Section" (`header?`, `update_column_count`); a row whose first cell is
  "Points Possible" sets points (`process_pp`); a student is found by the `ID` column first, then
  by SIS User ID, then SIS Login ID, then by name (`process_student`); a column titled like an
  existing assignment updates it, any other title creates one (`parse_assignments`).
- moodle.csv, for Moodle's "Import grades from CSV" (Grades > Import > CSV file). Its first
  column, `Email address`, is the identifier: on the import's mapping page, "Map from" `Email
  address` to "Map to" `useremail` (or from `ID number` to `useridnumber`), then map each grade
  column to "new grade item" or an existing one. Sources: MoodleDocs "Grade import"
  (https://docs.moodle.org/en/Grade_import) and grade/import/csv/classes/load_data.php
  (`map_user_data_with_value`: the identifier fields userid, username, useridnumber, useremail; a
  row with an empty identifier is skipped; an identifier that matches no user stops the import).
- summary.md: the roster's students without a submission (they get 0 in both files), the graded
  folders that are not in the roster (they are in neither file), the roster rows Moodle cannot
  match by email, and the students whose status is not `ok` (read their report before importing).

With `per_lesson`, each file has one more column per lesson (its points) after the total.
Every text cell a spreadsheet could read as a formula gets a leading `'` (OWASP, "CSV Injection").
"""
from __future__ import annotations

import csv
import difflib
import io
import sys
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

from course.grading.names import csv_cell, shown
from course.grading.records import ClassInfo, StudentRecord, atomic_write

LMS_DIR = "lms"
TITLE = "Attention course"          # the assignment's name in the LMS (a column header)
ROSTER_FIELDS = ("folder", "lms_id", "email", "name", "section")
_HEADER_ALIASES = {"folder": "folder", "submissionfolder": "folder", "lmsid": "lms_id",
                   "id": "lms_id", "email": "email", "emailaddress": "email", "name": "name",
                   "fullname": "name", "student": "name", "section": "section"}
# cells starting with these are formulas to Excel, LibreOffice or Google Sheets (OWASP lists
# = + - @ tab and carriage return; the full-width forms and a line feed are read the same way)
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_STUDENT_COLUMNS = ["Email address", "ID number", "Full name", "Section"]


class RosterError(ValueError):
    """The roster cannot be used as it is (the message says why and where)."""


@dataclass(frozen=True)
class RosterEntry:
    folder: str
    lms_id: str = ""
    email: str = ""
    name: str = ""
    section: str = ""


@dataclass
class LmsFiles:
    """What write_lms wrote, and what an instructor must look at before importing."""
    canvas: Path
    moodle: Path
    summary: Path
    missing: list[str] = field(default_factory=list)    # roster folders with no submission
    unknown: list[str] = field(default_factory=list)    # graded folders not in the roster
    no_email: list[str] = field(default_factory=list)   # roster folders Moodle cannot match by email
    not_ok: list[str] = field(default_factory=list)     # "folder (status)" of graded students


def folder_key(name: str) -> str:
    """How a roster's folder is matched with a graded folder: the same text in Unicode NFC (a
    roster typed on one system and folders unpacked on another may compose accents apart)."""
    return unicodedata.normalize("NFC", name)


def _number(points: float) -> str:
    return f"{points:.10g}"


def _field_name(header: str) -> str | None:
    key = "".join(c for c in header.strip().lower() if c.isalnum())
    return _HEADER_ALIASES.get(key)


def read_roster(path: Path) -> list[RosterEntry]:
    """The roster's rows, in file order; RosterError when a row cannot be mapped safely."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # Excel writes a byte-order mark
    except (OSError, UnicodeDecodeError) as err:
        raise RosterError(f"cannot read the roster {path}: {err}") from err
    try:  # only the separator is guessed (from the header); quoting stays RFC 4180's
        delimiter = csv.Sniffer().sniff(text.splitlines()[0] if text else "",
                                        delimiters=",;\t").delimiter
    except csv.Error:
        delimiter = ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        raise RosterError(f"the roster {path} is empty")
    columns = {}
    for index, header in enumerate(rows[0]):
        name = _field_name(header)
        if name in columns:
            raise RosterError(f"{path.name}: two columns mean {name!r}")
        if name:
            columns[name] = index
    if "folder" not in columns or not {"lms_id", "email"} & set(columns):
        raise RosterError(f"{path.name}: the header needs a `folder` column and an `lms_id` or "
                          f"`email` column (found {rows[0]}); expected: {','.join(ROSTER_FIELDS)}")
    return _entries(path, rows, columns)


def _entries(path: Path, rows: list[list[str]], columns: dict[str, int]) -> list[RosterEntry]:
    entries, seen = [], {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        values = {name: (row[i].strip() if i < len(row) else "") for name, i in columns.items()}
        entry = RosterEntry(**values)
        if not entry.folder:
            raise RosterError(f"{path.name}, line {number}: no folder")
        for key in ("folder", "lms_id", "email"):
            value = folder_key(getattr(entry, key))
            if value and (key, value) in seen:
                raise RosterError(f"{path.name}, lines {seen[key, value]} and {number}: the same "
                                  f"{key} {shown(value)!r} twice")
            seen[key, value] = number
        entries.append(entry)
    return entries


def _lessons_of(info: ClassInfo, records: list[StudentRecord]) -> dict[str, str]:
    """Check id -> lesson, from the records (ids start with their lesson: '01.stable_softmax')."""
    found = {c.id: c.lesson for r in records for c in r.checks}
    return {check: found.get(check, check.split(".")[0]) for check in info.checks}


def _scores(info: ClassInfo, record: StudentRecord | None, lessons: dict[str, str],
            per_lesson: bool) -> tuple[list[str], list[str]]:
    """(this student's score cells, the Points Possible cells): the total, then each lesson."""
    earned = {c.id: c.earned for c in record.checks} if record else {}
    total = record.total if record else 0.0
    cells = [_number(total)]
    maxima = [_number(sum(info.points.get(c, 0.0) for c in info.checks))]
    if per_lesson:
        for lesson in info.lessons:
            mine = [c for c in info.checks if lessons[c] == lesson]
            cells.append(_number(sum(earned.get(c, 0.0) for c in mine)))
            maxima.append(_number(sum(info.points.get(c, 0.0) for c in mine)))
    return cells, maxima


def _csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)  # RFC 4180 line ends
    return buffer.getvalue()


def _score_headers(info: ClassInfo, per_lesson: bool, title: str) -> list[str]:
    return [title] + ([f"{title}: lesson {lesson}" for lesson in info.lessons] if per_lesson else [])


def canvas_csv(info: ClassInfo, roster: list[RosterEntry], graded: dict[str, StudentRecord],
               per_lesson: bool = False, title: str = TITLE) -> str:
    """Canvas's gradebook import file: one row per roster student (0 without a submission)."""
    graded = {folder_key(k): v for k, v in graded.items()}
    lessons = _lessons_of(info, list(graded.values()))
    _, maxima = _scores(info, None, lessons, per_lesson)
    rows = [CANVAS_STUDENT_COLUMNS + _score_headers(info, per_lesson, title),
            ["Points Possible", "", "", "", ""] + maxima]
    for entry in roster:
        cells, _ = _scores(info, graded.get(folder_key(entry.folder)), lessons, per_lesson)
        # SIS User ID stays empty: Canvas matches the ID column first, the login (email) next
        rows.append([csv_cell(entry.name or entry.folder), csv_cell(entry.lms_id), "",
                     csv_cell(entry.email), csv_cell(entry.section)] + cells)
    return _csv(rows)


def moodle_csv(info: ClassInfo, roster: list[RosterEntry], graded: dict[str, StudentRecord],
               per_lesson: bool = False, title: str = TITLE) -> str:
    """Moodle's CSV grade import file: the identifier first, then the grade columns."""
    graded = {folder_key(k): v for k, v in graded.items()}
    lessons = _lessons_of(info, list(graded.values()))
    rows = [MOODLE_STUDENT_COLUMNS + _score_headers(info, per_lesson, title)]
    for entry in roster:
        cells, _ = _scores(info, graded.get(folder_key(entry.folder)), lessons, per_lesson)
        rows.append([csv_cell(entry.email), csv_cell(entry.lms_id),
                     csv_cell(entry.name or entry.folder), csv_cell(entry.section)] + cells)
    return _csv(rows)


def _suggest(folder: str, known: list[str]) -> str:
    close = difflib.get_close_matches(folder, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r} of the roster?)" if close else ""


def check_roster(roster: list[RosterEntry], records: list[StudentRecord], files: LmsFiles) -> None:
    """Fill files' lists: who is in one list (roster, graded folders) and not the other."""
    graded = {folder_key(r.student) for r in records}
    in_roster = {folder_key(e.folder) for e in roster}
    files.missing = [e.folder for e in roster if folder_key(e.folder) not in graded]
    files.unknown = [f"{r.student}{_suggest(r.student, files.missing)}"
                     for r in sorted(records, key=lambda r: r.student)
                     if folder_key(r.student) not in in_roster]
    files.no_email = [e.folder for e in roster if not e.email]
    files.not_ok = [f"{r.student} ({r.status})" for r in sorted(records, key=lambda r: r.student)
                    if folder_key(r.student) in in_roster and r.status != "ok"]


def summary_text(files: LmsFiles, roster_path: Path, n_roster: int, n_graded: int) -> str:
    def section(title: str, items: list[str]) -> list[str]:
        return ["", f"## {title}: {len(items)}", ""] + [f"- `{shown(i)}`" for i in items]

    lines = ["# LMS files: what to check before importing", "",
             f"Roster `{shown(Path(roster_path).name)}`: {n_roster} students; graded "
             f"folders: {n_graded}. `canvas.csv` and `moodle.csv` have one row per roster student."]
    lines += section("In the roster without a submission (0 points in both files)", files.missing)
    lines += section("Graded but not in the roster (in neither file: add them to the roster and "
                     "render again)", files.unknown)
    lines += section("In the roster without an email (Moodle skips these rows when it matches "
                     "by email; map by ID number instead)", files.no_email)
    lines += section("Status other than ok (read their report before importing)", files.not_ok)
    return "\n".join(lines) + "\n"


def write_lms(out: Path, info: ClassInfo, records, roster_path: Path | None,
              per_lesson: bool = False, title: str = TITLE) -> LmsFiles | None:
    """Write OUT/lms/canvas.csv, moodle.csv and summary.md for the roster; None without one.

    `records`: the StudentRecords of the class (a list, or records.load_students' dict)."""
    if roster_path is None:
        return None
    out = Path(out)
    records = list(records.values()) if isinstance(records, dict) else list(records)
    roster = read_roster(Path(roster_path))
    graded = {folder_key(r.student): r for r in records}
    folder = out / LMS_DIR
    files = LmsFiles(folder / "canvas.csv", folder / "moodle.csv", folder / "summary.md")
    check_roster(roster, records, files)
    atomic_write(files.canvas, canvas_csv(info, roster, graded, per_lesson, title))
    atomic_write(files.moodle, moodle_csv(info, roster, graded, per_lesson, title))
    atomic_write(files.summary, summary_text(files, Path(roster_path), len(roster), len(records)))
    for label, items in (("in the roster, no submission (0 points)", files.missing),
                         ("graded, not in the roster (left out of the LMS files)", files.unknown)):
        if items:
            print(f"lms: {len(items)} {label}: " + ", ".join(shown(i) for i in items),
                  file=sys.stderr)
    return files
