"""Which folders a regrade names: STUDENTS= (and --students) and STUDENTS_FILE= (--students-file).

Folder names may hold spaces (`Ann Lee`, as an LMS download names folders), so a name is never
cut where it could be whole:

- STUDENTS_FILE: one folder name per line, exactly (blank lines and a UTF-8 byte-order mark are
  ignored, trailing spaces and carriage returns stripped);
- STUDENTS: one name per line; a line that is not a folder's whole name is read as names
  separated by spaces (`STUDENTS="ada bob"`). A line that is a folder's whole name is that
  folder, even where its words are folder names too.
"""
from __future__ import annotations

from pathlib import Path


class WantedError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make grade: {message}")


def read_students_file(path: Path) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise WantedError(f"STUDENTS_FILE={path}: cannot read it ({err})") from None
    names = [line.rstrip("\r").rstrip() for line in text.split("\n")]
    return [name for name in names if name.strip()]


def split_students(values: list[str] | None, folders: list[str]) -> list[str]:
    """The folder names `values` mean: each value line by line, a line that is no folder's
    whole name split at spaces. Names stay in the order given, once each."""
    known, found = set(folders), []
    for value in values or []:
        for line in value.split("\n"):
            line = line.rstrip("\r")
            if line in known or line.strip() in known:
                found.append(line if line in known else line.strip())
            else:
                found += line.split()
    return list(dict.fromkeys(found))


def wanted_students(values: list[str] | None, students_file: Path | None,
                    folders: list[str]) -> list[str] | None:
    """STUDENTS and STUDENTS_FILE together; None when neither names anyone (grade the class)."""
    names = split_students(values, folders)
    if students_file is not None:
        names += read_students_file(students_file)
    names = list(dict.fromkeys(names))
    if (values or students_file is not None) and not names:
        raise WantedError("STUDENTS and STUDENTS_FILE name no folder; leave them out to grade "
                          "the whole class")
    return names or None
