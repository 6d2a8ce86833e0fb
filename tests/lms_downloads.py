"""Bulk downloads of submissions as Canvas and Moodle write them, and students' zips as their tools
write them: built from those programs' own source, never from the course's collect code.

- Canvas. An uploaded submission file lands in the student's own submissions folder of the course,
  where a name already there is always renamed (canvas-lms app/models/attachment.rb,
  `handle_duplicates`: `:rename` whenever `folder.for_submissions?`), by
  `Attachment.make_unique_filename`: `softmax.py` -> `softmax-1.py` ... `-7`, then
  `softmax-<uuid>.py`, with the extension found by `/(\\.[A-Za-z][A-Za-z0-9]*)*(\\.[A-Za-z0-9]*)$/`.
  The folder keeps every earlier attempt's and assignment's files, so a resubmission, or the same
  name in a second assignment, arrives renamed. "Download Submissions" (app/models/
  content_zipper.rb, `add_submission`, `get_filename`, `add_upload_submission`) writes, for the
  current attempt only, `<sanitize(sortable name [+ LATE] + user id)>_<attachment id>_<display
  name>`, `sanitize_file_name` removing every non-word character and lower-casing; the zip is
  rubyzip's, which sets no UTF-8 flag on its names (`Zip.unicode_names` is false by default).
- Moodle (mod/assign/classes/downloader.php, since 4.1, `get_student_prefix` and
  `load_submissionplugin_filelist`): `clean_filename(<full name, '_' -> ' '>_<participant id>)`
  then `_assignsubmission_file` and the file's path, in folders (the default) or flat; with blind
  marking the name is "Participant". clean_filename is PARAM_FILE (lib/moodlelib.php
  `clean_param`): control characters and `&<>"`|':\\/` removed. Participant ids are the
  assignment's own (`get_uniqueid_for_user`), not the profile's id or ID number.
- PowerShell 5.1's `Compress-Archive` (Microsoft.PowerShell.Archive 1.0.1.0, .NET's ZipArchive):
  backslashes in entry names (PowerShell/Microsoft.PowerShell.Archive issue 48), "version made
  by" MS-DOS.
"""
from __future__ import annotations

import io
import re
import uuid
import zipfile
from dataclasses import dataclass, field

EXTENSION = re.compile(r"(\.[A-Za-z][A-Za-z0-9]*)*(\.[A-Za-z0-9]*)$")
FIXED = (2026, 11, 30, 12, 0, 0)


def make_unique_filename(filename: str, existing: set[str], attempts: int = 1) -> str:
    """canvas-lms Attachment.make_unique_filename (the current one, with its eight tries)."""
    if attempts <= 1 and filename not in existing:
        return filename
    extension = EXTENSION.search(filename)
    ext = extension.group(0) if extension else ""
    base = filename[: len(filename) - len(ext)] if ext else filename
    backup = f"{base}-{uuid.UUID(int=len(existing) + 1)}{ext}"
    if attempts >= 8:
        return backup
    addition = attempts or 1
    while f"{base}-{addition}{ext}" in existing:
        addition += 1
        if addition >= 8:
            return backup
    return f"{base}-{addition}{ext}"


def canvas_sanitize(text: str) -> str:
    """content_zipper.rb `sanitize_file_name`: `gsub(/[^[[:word:]]]/, '').downcase`."""
    return re.sub(r"[^\w]", "", text).lower()


def moodle_clean(text: str) -> str:
    """Moodle's clean_filename (PARAM_FILE)."""
    return re.sub(r"[\x00-\x1f\x7f&<>\"`|':\\/]", "", text)


def plain_zip(files: dict[str, bytes | str]) -> bytes:
    """A student's zip as Python's, Info-ZIP's or macOS's tools write it (forward slashes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, FIXED), data)
    return buffer.getvalue()


def powershell_zip(files: dict[str, bytes | str]) -> bytes:
    """A zip written by Windows PowerShell 5.1's Compress-Archive: backslash separators, made by
    MS-DOS (host 0)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name.replace("/", "\\"), FIXED)
            info.create_system = 0
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


class _UnflaggedName(zipfile.ZipInfo):
    """A name written as UTF-8 bytes without the UTF-8 flag, as rubyzip writes it (Python's
    zipfile would set the flag on any name that is not ASCII)."""

    def _encodeFilenameFlags(self):
        return self.filename.encode("utf-8"), self.flag_bits & ~0x800


def _raw_zip(entries: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries:
            archive.writestr(_UnflaggedName(name, FIXED), data)
    return buffer.getvalue()


@dataclass
class CanvasStudent:
    user_id: int
    sortable_name: str                     # "Lovelace, Ada"
    folder: set[str] = field(default_factory=set)   # display names in their submissions folder
    current: list[tuple[int, str, bytes]] = field(default_factory=list)  # this attempt's files
    late: bool = False


class CanvasCourse:
    """The state of one Canvas course that its downloads depend on."""

    def __init__(self):
        self.students: dict[int, CanvasStudent] = {}
        self.next_attachment = 7001

    def enrol(self, user_id: int, sortable_name: str) -> None:
        self.students[user_id] = CanvasStudent(user_id, sortable_name)

    def submit(self, user_id: int, files: dict[str, bytes | str], late: bool = False) -> None:
        """A new attempt: each file uploaded into the student's submissions folder (renamed if
        its name is there already); the attempt holds exactly these files."""
        student = self.students[user_id]
        student.current, student.late = [], late
        for name, data in files.items():
            shown = make_unique_filename(name, student.folder)
            student.folder.add(shown)
            data = data.encode() if isinstance(data, str) else data
            student.current.append((self.next_attachment, shown, data))
            self.next_attachment += 1

    def new_assignment(self) -> None:
        """A second assignment: attempts start empty, the submissions folders stay."""
        for student in self.students.values():
            student.current, student.late = [], False

    def download(self) -> bytes:
        """The assignment's "Download Submissions" zip, as rubyzip writes it (no UTF-8 flag)."""
        entries = []
        for student in self.students.values():
            if not student.current:
                continue
            prefix = canvas_sanitize("_".join(
                [student.sortable_name] + (["LATE"] if student.late else []) +
                [str(student.user_id)]))
            for attachment, shown, data in student.current:
                entries.append((f"{prefix}_{attachment}_{shown}", data))
        return _raw_zip(entries)


@dataclass
class MoodleStudent:
    full_name: str
    participant: int
    files: dict[str, bytes] = field(default_factory=dict)


class MoodleAssignment:
    """One Moodle assignment's submissions and its "Download all submissions" zip."""

    def __init__(self, blind: bool = False, folders: bool = True):
        self.students: list[MoodleStudent] = []
        self.blind, self.folders = blind, folders

    def submit(self, full_name: str, participant: int, files: dict[str, bytes | str]) -> None:
        found = next((s for s in self.students if s.participant == participant), None)
        if found is None:
            found = MoodleStudent(full_name, participant)
            self.students.append(found)
        found.files = {n: d.encode() if isinstance(d, str) else d for n, d in files.items()}

    def prefix(self, student: MoodleStudent) -> str:
        name = "Participant" if self.blind else student.full_name
        return moodle_clean(name.replace("_", " ") + "_" + str(student.participant))

    def download(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:  # ZipStream: UTF-8 names, flagged
            for student in self.students:
                for name, data in student.files.items():
                    if self.folders:
                        path = moodle_clean(f"{self.prefix(student)}_assignsubmission_file") \
                            + "/" + name
                    else:
                        path = moodle_clean(f"{self.prefix(student)}_assignsubmission_file_{name}")
                    archive.writestr(zipfile.ZipInfo(path, FIXED), data)
        return buffer.getvalue()
