"""How the LMS delivered a student's submission, kept in the student's record: which LMS, Canvas's
late flag with the roster's extension, and the files the LMS renamed (make collect undid it).

    handles(submissions) -> {folder: handle}          # SUBS/.lms.json, as make collect wrote it
    apply(record, handle, entry)                       # record.lms, .late, .extension, .delivered

Late. Canvas names a late submission in its download (content_zipper.rb, `get_filename`), judged
against the due date that applies to that student in Canvas (an extension given in Canvas as an
"Assign to" date for one student counts). An extension given only in the roster (`extension`)
also counts where it can be proved: the files were in a download made before the extension
ended, so they were handed in before it (on time); if the download came later, the files may
have come after it, and the student stays late with the extension shown, for the instructor to
look at in the LMS. Moodle's download says nothing of time: `late` is unknown (None) there, and
Moodle's own submissions page shows it.
"""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from course.grading.records import StudentRecord
from course.grading.roster import RosterEntry

HANDLES = ".lms.json"
MAX_HANDLES_BYTES = 64 << 20


def handles(submissions: Path | None) -> dict[str, dict]:
    """SUBS/.lms.json's students by folder ({} where make collect did not make SUBS)."""
    if submissions is None:
        return {}
    path = Path(submissions) / HANDLES
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_HANDLES_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
        students = data.get("students", {})
        return students if isinstance(students, dict) else {}
    except (OSError, ValueError, AttributeError):
        return {}


def late_verdict(handle: dict | None, entry: RosterEntry | None) -> bool | None:
    """Whether the submission is late: the LMS's flag, lifted by a roster extension that provably
    covers it; None where the LMS does not say."""
    flagged = handle.get("late") if handle else None
    if not flagged:
        return flagged if flagged is not None else None
    deadline = entry.deadline() if entry is not None and entry.extension else None
    if deadline is None:
        return True
    try:
        downloaded = datetime.fromisoformat(str(handle.get("downloaded")))
    except ValueError:
        return True
    return downloaded > deadline


def handle_of(record: StudentRecord) -> dict | None:
    """The part of a handle a record keeps: enough to judge its lateness again (rescore.py)."""
    if not record.lms:
        return None
    return {"lms": record.lms, "late": record.lms_late, "downloaded": record.downloaded,
            "renamed": record.delivered}


def apply(record: StudentRecord, handle: dict | None, entry: RosterEntry | None) -> StudentRecord:
    """Fill the record's delivery fields and their flags (`late`, `extension`)."""
    record.lms = str(handle.get("lms", "")) if handle else ""
    record.lms_late = handle.get("late") if handle else None
    record.downloaded = str(handle.get("downloaded", "")) if handle else ""
    record.extension = entry.extension if entry is not None else ""
    record.late = late_verdict(handle, entry)
    record.delivered = [[str(a), str(b)] for a, b in
                        ((pair[0], pair[1]) for pair in (handle or {}).get("renamed", []) or []
                         if isinstance(pair, list) and len(pair) == 2)]
    flags = [f for f in record.flags if f not in ("late", "extension")]
    flags += (["late"] if record.late else []) + (["extension"] if record.extension else [])
    record.flags = flags
    return record
