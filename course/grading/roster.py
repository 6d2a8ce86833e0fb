"""The roster: which LMS student each submission folder is, read and checked before any grading,
and kept in OUT so that every later run (regrade, resume, merge) writes the LMS files again.

    folder,lms_id,email,name,section
    ada,4211,ada@example.edu,"Lovelace, Ada",Section 1

`folder` is the name of the student's folder in SUBMISSIONS; `lms_id` the student's id in the LMS
(Canvas: the `ID` column of a Canvas gradebook export; Moodle: the profile's "ID number");
`email`, `name` and `section` as the LMS knows them. Two optional columns: `participant`, a
Moodle assignment's participant id (the "Identifier" column of Moodle's grading worksheet,
`Participant 2000001`, taken as its digits: the id Moodle's download names each student by,
which tells two students of the same name apart), and `extension`, a student's own deadline
(`2026-12-10` or `2026-12-10 18:00`, the end of that day when no time is given). Headers are
matched loosely (`LMS id`, `Email address`, `Identifier`, any case); a semicolon-separated file
with a byte-order mark (Excel) works too.
The same folder, id or email twice (ids and emails compared without case or accents, as Moodle's
database usually compares them) is an error: one of the two rows would take the other's grade.
"""
from __future__ import annotations

import csv
import io
import os
import re
import sys
import unicodedata
from datetime import datetime, time
from dataclasses import dataclass
from pathlib import Path

from course.grading.names import shown
from course.grading import records as rec
from course.grading.records import atomic_write

ROSTER_FIELDS = ("folder", "lms_id", "email", "name", "section")
OPTIONAL_FIELDS = ("participant", "extension")
STORED = "roster.csv"          # OUT's copy of the last roster given (owner-only)
_HEADER_ALIASES = {"folder": "folder", "submissionfolder": "folder", "lmsid": "lms_id",
                   "id": "lms_id", "idnumber": "lms_id", "email": "email",
                   "emailaddress": "email", "name": "name", "fullname": "name",
                   "student": "name", "section": "section", "participant": "participant",
                   "participantid": "participant", "identifier": "participant",
                   "extension": "extension", "due": "extension", "duedate": "extension",
                   "extendeduntil": "extension"}


class RosterError(ValueError):
    """The roster cannot be used as it is (the message says why and where)."""


@dataclass(frozen=True)
class RosterEntry:
    folder: str
    lms_id: str = ""
    email: str = ""
    name: str = ""
    section: str = ""
    participant: str = ""          # Moodle: the assignment's participant id, digits only
    extension: str = ""            # the student's own deadline, as written

    def deadline(self) -> datetime | None:
        """The extension as a time (a date alone: the end of that day), or None."""
        return parse_deadline(self.extension) if self.extension else None


def parse_deadline(text: str) -> datetime | None:
    """`2026-12-10`, `2026-12-10 18:00` or ISO 8601; None when it is none of them."""
    text = text.strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        when = datetime.combine(when.date(), time(23, 59, 59))
    return when


def folder_key(name: str) -> str:
    """How a roster's folder is matched with a graded folder: the same text in Unicode NFC (a
    roster typed on one system and folders unpacked on another may compose accents apart)."""
    return unicodedata.normalize("NFC", name)


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


def id_key(value: str) -> str:
    """An id or email as a database that ignores case and accents compares it (MySQL's default
    `utf8mb4_*_ci` collations, where Moodle often runs): two ids equal here are one to it."""
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _key(field: str, value: str) -> str:
    return folder_key(value) if field == "folder" else id_key(value)


def _entries(path: Path, rows: list[list[str]], columns: dict[str, int]) -> list[RosterEntry]:
    entries, seen = [], {}
    for number, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        values = {name: (row[i].strip() if i < len(row) else "") for name, i in columns.items()}
        if values.get("participant"):  # "Participant 2000001", as Moodle's worksheet writes it
            digits = re.sub(r"\D", "", values["participant"])
            if not digits:
                raise RosterError(f"{path.name}, line {number}: participant "
                                  f"{shown(values['participant'])!r} holds no id")
            values["participant"] = digits
        entry = RosterEntry(**values)
        if entry.extension and entry.deadline() is None:
            raise RosterError(f"{path.name}, line {number}: extension {shown(entry.extension)!r}"
                              " is no date (write 2026-12-10 or 2026-12-10 18:00)")
        if not entry.folder:
            raise RosterError(f"{path.name}, line {number}: no folder")
        for field in ("folder", "lms_id", "email", "participant"):
            value = _key(field, getattr(entry, field))
            if value and (field, value) in seen:
                raise RosterError(f"{path.name}, lines {seen[field, value]} and {number}: the "
                                  f"same {field} {shown(getattr(entry, field))!r} twice")
            seen[field, value] = number
        entries.append(entry)
    return entries


def store_roster(out: Path, path: Path) -> Path:
    """Check the roster, then keep a copy in OUT (owner-only: it holds emails) for later runs,
    its digest in OUT's class.json (re-signed), where OUT has one already; a run that makes
    class.json records the digest of the roster it stored (records.ClassInfo.roster_digest)."""
    read_roster(path)
    target = Path(out) / STORED
    atomic_write(target, Path(path).read_text(encoding="utf-8-sig"))
    os.chmod(target, 0o600)
    try:
        info = rec.load_class(out)
    except rec.ClassFileError:
        info = None  # the run that stores it writes a class.json of its own, with the digest
    if info is not None:
        info.roster_digest = rec.file_digest(target)
        rec.save_class(out, info)
    return target


def stored_roster(out: Path) -> Path | None:
    """OUT's roster, when it is the one the grader stored: its digest is the one OUT's class.json
    (verified) records. Else None, with the reason: an edited roster (two ids swapped) would send
    grades to the wrong students."""
    path = Path(out) / STORED
    if not path.is_file():
        return None
    try:
        info = rec.load_class(out)
    except rec.ClassFileError as err:
        info, why = None, str(err)
    else:
        why = "OUT has no class.json" if info is None else None
    if info is not None and (not info.roster_digest or rec.file_digest(path) != info.roster_digest):
        why = ("it is not the roster the grader stored (its digest is not the one class.json "
               "records: edited since?)")
    if why:
        print(f"warning: {path} is not used: {why}; no LMS files are written from it (and "
              "OUT/lms/ is removed). Give the roster again (ROSTER=roster.csv)", file=sys.stderr)
        return None
    return path
