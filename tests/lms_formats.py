"""What Canvas's and Moodle's grade importers accept, as the tests read an LMS file.

Written from the importers' own code, so a file these accept is one the LMS parses the same way:

- Canvas: canvas-lms app/models/gradebook_importer.rb (`row_has_student_headers?`,
  `update_column_count`, `header?`, `strip_non_assignment_columns`, `check_for_non_student_row`,
  `process_student`, `no_score?`) and Instructure's guide "How do I import grades in the
  Gradebook?".
- Moodle: grade/import/csv/classes/load_data.php (`map_user_data_with_value`, `update_grade_item`)
  and grade/import/grade_import_form.php (the "Map from" / "Map to" choices), MoodleDocs "Grade
  import".
"""
from __future__ import annotations

import csv
import io
import re

CANVAS_NON_ASSIGNMENT = re.compile("Current Score|Current Points|Current Grade|Final Score|"
                                   "Final Points|Final Grade|Override Score|Override Grade|"
                                   "Override Status")
MOODLE_MAP_TO = {"userid", "username", "useridnumber", "useremail"}


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _score(value: str) -> float | None:
    value = value.strip()
    if value in ("", "-", "EX"):
        return None
    return float(value.replace(",", "."))  # Canvas's decimal_comma_to_period; raises if not a number


def read_canvas(text: str) -> dict:
    """The assignments, their points possible and the students, as Canvas's importer reads them;
    AssertionError where it would reject the file ("Invalid header row")."""
    rows = _rows(text)
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], header
    columns = 3
    sis_user = sis_login = None
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        sis_login, columns = 2, 4
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        sis_user, sis_login, columns = 2, 3, 5
    assert "Section" in header[columns - 1], f"the last student column is {header[columns - 1]!r}"
    assignments = [(i, h) for i, h in enumerate(header) if i >= columns
                   and not CANVAS_NON_ASSIGNMENT.search(h)]
    points, students = {}, []
    for row in rows[1:]:
        if row and "Points Possible" in row[0]:
            points = {h: row[i] for i, h in assignments if i < len(row) and row[i]}
            continue
        students.append({
            "name": row[0], "id": row[1], "section": row[columns - 1],
            "sis_user_id": row[sis_user] if sis_user is not None else None,
            "sis_login_id": row[sis_login] if sis_login is not None else None,
            "scores": {h: _score(row[i]) for i, h in assignments}})
    return {"assignments": [h for _, h in assignments], "points": points, "students": students}


MOODLE_EMPTY = ("", "0")  # PHP's empty() on a string from a CSV cell


def _php_trim(value: str) -> str:
    return value.strip(" \t\n\r\0\x0b")


def fold(value: str, collation: str) -> str:
    """How Moodle's database compares two identifiers: "exact" (PostgreSQL's default) or "ci"
    (MySQL's utf8mb4 *_ci collations: no case, no accents)."""
    if collation == "exact":
        return value
    import unicodedata

    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def moodle_import(text: str, users: list[dict], map_from: str, map_to: str,
                  grade_columns: list[str], collation: str = "ci",
                  gradepointmax: float = 100) -> dict:
    """Moodle's "Import grades from CSV", as grade/import/csv/classes/load_data.php runs it
    (`prepare_import_grade_data`, `map_user_data_with_value`, `check_user_exists`,
    `import_new_grade_item`, `insert_grade_record`), on a site whose users are `users` (dicts
    with id, username, idnumber, email). `map_from` (a header) is mapped to `map_to`, each of
    `grade_columns` to a new grade item, every other column left at "ignore".

    Returns {"ok": bool, "error": str, "grades": {user id: {column: grade}}}; grades stay
    only when the whole import succeeds (Moodle keeps nothing of a failed one). What the code
    does and this model keeps: the identifier of the row before stays when a row's is empty
    (`$this->studentid` is set once, before the loop), an unknown or ambiguous identifier stops
    the import, as does a grade over `gradepointmax`."""
    assert map_to in MOODLE_MAP_TO
    field = {"userid": "id", "username": "username", "useridnumber": "idnumber",
             "useremail": "email"}[map_to]
    rows = _rows(text)
    header = [_php_trim(h) for h in rows[0]]             # trim_headers()
    mapping = {i: 0 for i in range(len(header))}          # every column: ignore
    for column in grade_columns:
        mapping[header.index(column)] = "new"
    mapping[header.index(map_from)] = map_to             # $map[$formdata->mapfrom] = mapto
    student, grades = None, {}
    for line in rows[1:]:
        if len(line) <= 1:                               # "no data on this line"
            continue
        new = {}
        for key, value in enumerate(line):
            value = _php_trim(value)
            kind = mapping.get(key, 0)
            if kind == map_to:
                if value not in MOODLE_EMPTY:            # "Skip invalid row with blank user field"
                    found = [u for u in users if fold(str(u[field]), collation)
                             == fold(value, collation)]
                    if len(found) != 1:                  # none, or get_record's "more than one"
                        return {"ok": False, "error": f"user mapping error: {value}", "grades": {}}
                    student = found[0]["id"]
            elif kind == "new" and value != "-":
                new[header[key]] = value
        if student is None:                              # "usermappingerrorusernotfound"
            return {"ok": False, "error": "user not found", "grades": {}}
        for column, value in new.items():
            if value != "" and float(value) > gradepointmax:
                return {"ok": False, "error": f"grade {value} over {gradepointmax}", "grades": {}}
            grades.setdefault(student, {})[column] = float(value) if value != "" else None
    return {"ok": True, "error": "", "grades": grades}


def canvas_reupload_target(filename: str) -> tuple[str, str] | None:
    """(user id, attachment id) Canvas's "Re-upload submissions" reads from a file's name
    (Assignment#infer_comment_context_from_filename: the first two parts between underscores
    that are all digits), or None (the file is ignored)."""
    import os

    parts = os.path.basename(filename).split("_")
    digits = [p for p in parts if re.fullmatch(r"\d+", p)][:2]
    if len(digits) < 2 or parts[-1].startswith("link") or filename.startswith("._"):
        return None
    return digits[0], digits[1]


def moodle_feedback_target(path: str) -> tuple[int, str, str, str] | None:
    """(participant id, plugin type, plugin name, file name) Moodle's "Upload multiple feedback
    files in a zip" reads from a file's path in the zip (mod/assign/feedback/file/importziplib.php,
    `is_valid_filename_for_import`), or None (the file is skipped)."""
    name = path.rsplit("/", 1)[-1]
    if name.startswith((".", "~")):
        return None
    parts = ("/import/" + path).split("/")
    while parts:
        part = parts.pop(0)
        info = part.split("_", 4)
        if len(info) < 4 or not re.fullmatch(r"\d+(\.\d*)?", info[1]):
            continue
        rest = info[4] if len(info) == 5 else ""
        return int(float(info[1])), info[2], info[3], "/".join([rest] + parts)
    return None
