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


def read_moodle(text: str, map_from: str, map_to: str, grade_columns: list[str]) -> dict:
    """Per identifier, the grades of `grade_columns`, as Moodle's CSV import reads them when the
    header `map_from` is mapped to `map_to` and each of `grade_columns` to a grade item (every
    other column left at "ignore"); AssertionError where the import would fail."""
    assert map_to in MOODLE_MAP_TO
    rows = _rows(text)
    header = [h.strip() for h in rows[0]]  # trim_headers()
    assert map_from in header, f"no identifier column {map_from!r} in {header}"
    assert set(grade_columns) <= set(header), (grade_columns, header)
    key = header.index(map_from)
    grades, skipped = {}, []
    for row in rows[1:]:
        assert len(row) == len(header), row
        if not row[key]:
            skipped.append(row)  # "Skip invalid row with blank user field"
            continue
        assert row[key] not in grades, f"{row[key]} twice"
        # update_grade_item: '' and '-' are no grade; anything else must be a number
        grades[row[key]] = {h: _score(row[header.index(h)]) for h in grade_columns}
    return {"header": header, "grades": grades, "skipped": skipped}
