"""The gradebook as the import files of two LMSs, Canvas and Moodle, through a roster (roster.py).

    write_lms(out, info, records, roster_path, per_lesson=False)   # OUT/lms/

Everything comes from the records (records.py) and the roster, so a one-machine run, a regrade, a
resumed run and a merge of shards write the same files, and every run writes them all again.
Written to OUT/lms/:

- canvas.csv: Canvas's gradebook import format. Its columns are those of a Canvas gradebook
  export, `Student, ID, SIS User ID, SIS Login ID, Section`, then the course's total, and a second
  row `Points Possible`. Sources: Instructure, "How do I import grades in the Gradebook?"
  (https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/
  ta-p/807), and the importer itself, canvas-lms app/models/gradebook_importer.rb: the header
  must start with "Student" and "ID" and its last student column must be "Section"; a row whose
  first cell is "Points Possible" sets points; a student is found by `ID` (read with Ruby's
  `to_i`: "4211a" would be 4211), then by SIS User ID or SIS Login ID, then by name
  (`process_student`). So an ID is written only when it is all digits, and a row needs an ID or
  an email (a row Canvas could match by name alone is left out and listed).
- moodle.csv: Moodle's "Import grades from CSV", mapped by ID number: `ID number, Full name,
  Section`, then the total. Moodle's importer (grade/import/csv/classes/load_data.php,
  `prepare_import_grade_data` and `map_user_data_with_value`) keeps the student of the row above
  when a row's identifier is empty (PHP's `empty()`: "" and "0"), so such a row would give its
  grade to the previous student, and as the first row it stops the import; it looks users up by
  the whole site's `idnumber` (usually without case). So a row is written only with an ID
  number that is present, not "0", unique without case and written as it is (no formula guard
  needed); every other roster row is left out of the file and listed in summary.md.
  tests/lms_formats.py is a model of that matching, and the tests check every file against it.
- canvas-lessons.csv and moodle-lessons.csv (PER_LESSON=1): the same rows with one column per
  lesson and no total. Import either the total or the lessons, never both: an LMS adds every
  imported column into the course's total.
- summary.md: the roster's students without a submission (0 points), the graded folders not in
  the roster (in no file), the rows left out of a file and why, the students whose status is not
  `ok`.

Every text cell a spreadsheet could read as a formula gets a leading `'` (OWASP, "CSV Injection").
"""
from __future__ import annotations

import csv
import difflib
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course.grading.names import csv_cell, md_code, shown
from course.grading.records import ClassInfo, StudentRecord, atomic_write
from course.grading.roster import (ROSTER_FIELDS, RosterEntry, RosterError, folder_key, id_key,
                                   read_roster)

__all__ = ["ROSTER_FIELDS", "RosterEntry", "RosterError", "folder_key", "read_roster",
           "write_lms", "canvas_csv", "moodle_csv", "LmsFiles"]

LMS_DIR = "lms"
TITLE = "Attention course"          # the assignment's name in the LMS (a column header)


def lesson_ranges(lessons: list[str]) -> str:
    """['00', '01', '02', '05'] -> '00-02, 05'."""
    numbers = sorted(int(n) for n in lessons)
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]:02d}" if len(r) == 1 else f"{r[0]:02d}-{r[-1]:02d}" for r in runs)


def default_title(lessons: list[str], every: list[str] | None = None) -> str:
    """The LMS column of an assignment: the course's name for every lesson, else with the lessons
    it grades (Canvas matches an imported column to an assignment by its title, so two
    assignments of one term need two titles)."""
    if every is not None and sorted(lessons) == sorted(every):
        return TITLE
    return f"{TITLE}, lesson{'s' if len(lessons) > 1 else ''} {lesson_ranges(lessons)}"


def title_of(info: ClassInfo) -> str:
    """The title the class's LMS columns carry: ASSIGNMENT=, else TITLE (a class recorded before
    assignments had titles)."""
    return info.assignment or TITLE
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_STUDENT_COLUMNS = ["ID number", "Full name", "Section"]
MOODLE_MAX_GRADE = 100   # Moodle refuses more unless the site sets unlimitedgrades
FILES = ("canvas.csv", "moodle.csv", "canvas-lessons.csv", "moodle-lessons.csv", "summary.md")


@dataclass
class LmsFiles:
    """What write_lms wrote, and what an instructor must look at before importing."""
    folder: Path
    missing: list[str] = field(default_factory=list)    # roster folders with no submission
    unknown: list[str] = field(default_factory=list)    # graded folders not in the roster
    not_canvas: list[str] = field(default_factory=list)  # "folder (why)": left out of canvas
    not_moodle: list[str] = field(default_factory=list)  # "folder (why)": left out of moodle
    not_ok: list[str] = field(default_factory=list)     # "folder (status)" of graded students
    written: list[str] = field(default_factory=list)    # file names, in FILES order

    @property
    def canvas(self) -> Path:
        return self.folder / "canvas.csv"

    @property
    def moodle(self) -> Path:
        return self.folder / "moodle.csv"

    @property
    def summary(self) -> Path:
        return self.folder / "summary.md"


def _number(points: float) -> str:
    return f"{points:.10g}"


def canvas_problem(entry: RosterEntry) -> str | None:
    """Why Canvas could give this row's grade to someone else, or None."""
    if entry.lms_id and not entry.lms_id.isdigit():
        if not entry.email:
            return f"ID {entry.lms_id!r} is not a Canvas ID (all digits) and there is no email"
    elif not entry.lms_id and not entry.email:
        return "no ID and no email: Canvas would match the row by name alone"
    return None


def moodle_problem(entry: RosterEntry, ids: dict[str, int]) -> str | None:
    """Why Moodle could give this row's grade to someone else (or stop the import), or None."""
    if not entry.lms_id:
        return "no ID number: Moodle would give its grade to the student of the row above"
    if entry.lms_id == "0":
        return "ID number 0, which Moodle reads as empty (the row above would take its grade)"
    if csv_cell(entry.lms_id) != entry.lms_id:
        return "the ID number starts like a spreadsheet formula and cannot be written as it is"
    if ids.get(id_key(entry.lms_id), 0) > 1:
        return "the same ID number as another row once case and accents are ignored"
    return None


def _lessons_of(info: ClassInfo, records: list[StudentRecord]) -> dict[str, str]:
    """Check id -> lesson, from the records (ids start with their lesson: '01.stable_softmax')."""
    found = {c.id: c.lesson for r in records for c in r.checks}
    return {check: found.get(check, check.split(".")[0]) for check in info.checks}


def _scores(info: ClassInfo, record: StudentRecord | None, lessons: dict[str, str],
            by_lesson: bool) -> tuple[list[str], list[str]]:
    """(this student's score cells, the Points Possible cells): the total, or each lesson."""
    earned = {c.id: c.earned for c in record.checks} if record else {}
    if not by_lesson:
        return ([_number(record.total if record else 0.0)],
                [_number(sum(info.points.get(c, 0.0) for c in info.checks))])
    cells, maxima = [], []
    for lesson in info.lessons:
        mine = [c for c in info.checks if lessons[c] == lesson]
        cells.append(_number(sum(earned.get(c, 0.0) for c in mine)))
        maxima.append(_number(sum(info.points.get(c, 0.0) for c in mine)))
    return cells, maxima


def _csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)  # RFC 4180 line ends
    return buffer.getvalue()


def score_headers(info: ClassInfo, by_lesson: bool, title: str = TITLE) -> list[str]:
    return [f"{title}: lesson {lesson}" for lesson in info.lessons] if by_lesson else [title]


def canvas_csv(info: ClassInfo, roster: list[RosterEntry], graded: dict[str, StudentRecord],
               by_lesson: bool = False, title: str = TITLE) -> str:
    """Canvas's gradebook import file: one row per roster student Canvas can find safely (0
    without a submission); the total, or (by_lesson) one column per lesson."""
    graded = {folder_key(k): v for k, v in graded.items()}
    lessons = _lessons_of(info, list(graded.values()))
    _, maxima = _scores(info, None, lessons, by_lesson)
    rows = [CANVAS_STUDENT_COLUMNS + score_headers(info, by_lesson, title),
            ["Points Possible", "", "", "", ""] + maxima]
    for entry in roster:
        if canvas_problem(entry):
            continue
        cells, _ = _scores(info, graded.get(folder_key(entry.folder)), lessons, by_lesson)
        # SIS User ID stays empty: Canvas matches the ID column first, the login (email) next
        canvas_id = entry.lms_id if entry.lms_id.isdigit() else ""
        rows.append([csv_cell(entry.name or entry.folder), canvas_id, "",
                     csv_cell(entry.email), csv_cell(entry.section)] + cells)
    return _csv(rows)


def _moodle_ids(roster: list[RosterEntry]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for entry in roster:
        if entry.lms_id:
            counts[id_key(entry.lms_id)] = counts.get(id_key(entry.lms_id), 0) + 1
    return counts


def moodle_csv(info: ClassInfo, roster: list[RosterEntry], graded: dict[str, StudentRecord],
               by_lesson: bool = False, title: str = TITLE) -> str:
    """Moodle's CSV grade import file, mapped by ID number: only rows Moodle matches safely."""
    graded = {folder_key(k): v for k, v in graded.items()}
    lessons = _lessons_of(info, list(graded.values()))
    ids = _moodle_ids(roster)
    rows = [MOODLE_STUDENT_COLUMNS + score_headers(info, by_lesson, title)]
    for entry in roster:
        if moodle_problem(entry, ids):
            continue
        cells, _ = _scores(info, graded.get(folder_key(entry.folder)), lessons, by_lesson)
        rows.append([entry.lms_id, csv_cell(entry.name or entry.folder),
                     csv_cell(entry.section)] + cells)
    return _csv(rows)


def _suggest(folder: str, known: list[str]) -> str:
    close = difflib.get_close_matches(folder, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r} of the roster?)" if close else ""


def check_roster(roster: list[RosterEntry], records: list[StudentRecord], files: LmsFiles) -> None:
    """Fill files' lists: who is in one list (roster, graded folders) and not the other, and
    which rows a file leaves out."""
    graded = {folder_key(r.student) for r in records}
    in_roster = {folder_key(e.folder) for e in roster}
    ordered = sorted(records, key=lambda r: r.student)
    files.missing = [e.folder for e in roster if folder_key(e.folder) not in graded]
    files.unknown = [f"{r.student}{_suggest(r.student, files.missing)}" for r in ordered
                     if folder_key(r.student) not in in_roster]
    ids = _moodle_ids(roster)
    files.not_canvas = [f"{e.folder} ({why})" for e in roster if (why := canvas_problem(e))]
    files.not_moodle = [f"{e.folder} ({why})" for e in roster if (why := moodle_problem(e, ids))]
    files.not_ok = [f"{r.student} ({r.status})" for r in ordered
                    if folder_key(r.student) in in_roster and r.status != "ok"]


def summary_text(files: LmsFiles, roster_name: str, n_roster: int, n_graded: int,
                 maximum: float, title: str = TITLE) -> str:
    def section(title: str, items: list[str]) -> list[str]:
        return ["", f"## {title}: {len(items)}", ""] + [f"- {md_code(i)}" for i in items]

    lines = ["# LMS files: what to check before importing", "",
             f"Roster {md_code(roster_name)}: {n_roster} students; graded folders: {n_graded}. "
             f"Files: {', '.join(f'`{n}`' for n in files.written if n != 'summary.md')}. Import "
             "the total (`canvas.csv`, `moodle.csv`) or the lessons (`*-lessons.csv`), never "
             "both: the LMS would count every point twice."]
    lines += ["", f"The column is {md_code(title)}, out of {maximum:g} points. Canvas reads the "
              "maximum from the `Points Possible` row and fills the assignment of that title "
              "(or creates one). **Moodle's CSV import carries no maximum**: a \"new grade "
              "item\" is out of 100, so create the grade item first (Gradebook setup, Add grade "
              f"item, {md_code(title)}, Maximum grade {maximum:g}) and map the column to it."]
    if maximum > MOODLE_MAX_GRADE:
        lines += ["", f"**The maximum, {maximum:g}, is over {MOODLE_MAX_GRADE}**: Moodle stops "
                  "the import unless the site allows it (`unlimitedgrades`)."]
    lines += section("In the roster without a submission (0 points)", files.missing)
    lines += section("Graded but not in the roster (in no file: add them to the roster and run "
                     "again)", files.unknown)
    lines += section("Left out of the Canvas files", files.not_canvas)
    lines += section("Left out of the Moodle files (add their ID number in Moodle and the roster)",
                     files.not_moodle)
    lines += section("Status other than ok (read their report before importing)", files.not_ok)
    return "\n".join(lines) + "\n"


def _warn(files: LmsFiles) -> None:
    for label, items in (("in the roster, no submission (0 points)", files.missing),
                         ("graded, not in the roster (left out of the LMS files)", files.unknown),
                         ("left out of the Canvas files", files.not_canvas),
                         ("left out of the Moodle files", files.not_moodle)):
        if items:
            print(f"lms: {len(items)} {label}: " + ", ".join(shown(i) for i in items),
                  file=sys.stderr)


def write_lms(out: Path, info: ClassInfo, records, roster_path: Path | None,
              per_lesson: bool = False, title: str | None = None) -> LmsFiles | None:
    """Write OUT/lms/ for the roster (and remove what an earlier run wrote there that this
    one does not: a file of PER_LESSON=1 that is off now); None without a roster.

    `records`: the StudentRecords of the class (a list, or records.load_students' dict)."""
    if roster_path is None:
        return None
    records = list(records.values()) if isinstance(records, dict) else list(records)
    title = title or title_of(info)
    roster = read_roster(Path(roster_path))
    graded = {folder_key(r.student): r for r in records}
    files = LmsFiles(Path(out) / LMS_DIR)
    check_roster(roster, records, files)
    texts = {"canvas.csv": canvas_csv(info, roster, graded, False, title),
             "moodle.csv": moodle_csv(info, roster, graded, False, title)}
    if per_lesson:
        texts["canvas-lessons.csv"] = canvas_csv(info, roster, graded, True, title)
        texts["moodle-lessons.csv"] = moodle_csv(info, roster, graded, True, title)
    files.written = [name for name in FILES if name in texts] + ["summary.md"]
    maximum = sum(info.points.get(c, 0.0) for c in info.checks)
    texts["summary.md"] = summary_text(files, Path(roster_path).name, len(roster), len(records),
                                       maximum, title)
    for name, text in texts.items():
        atomic_write(files.folder / name, text)
    for name in set(FILES) - set(texts):
        (files.folder / name).unlink(missing_ok=True)
    _warn(files)
    return files

