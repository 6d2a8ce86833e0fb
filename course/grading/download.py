"""Reading an LMS's bulk download of submissions as the LMS itself wrote it (no file is written here).

    read_download(source, exercises) -> Download

What each LMS writes, from its own source:

- Canvas (canvas-lms app/models/content_zipper.rb): one flat file per submitted file, named
  `<name>_<user id>_<attachment id>_<display name>` where `<name>` is the student's sortable
  name, then `late` when Canvas counts the submission late, passed through `sanitize_file_name`
  (every character that is no word character removed, then lower-cased: "Lovelace, Ada" is
  `lovelaceada`, an on-time `LATE` is `late`). Only the files of the current attempt are in the
  download. The display name is the name Canvas gave the file when it was uploaded into the
  student's own "Submissions" folder, where a name handed in before (a resubmission, or the same
  name in an earlier assignment) is renamed by `Attachment.make_unique_filename`: `softmax.py`
  becomes `softmax-1.py`, then `softmax-2.py`, ... up to `-7`, then `softmax-<uuid>.py`
  (app/models/attachment.rb). The zip is written by rubyzip without the UTF-8 flag, so a name
  that is not ASCII reaches Python's zipfile as cp437 mojibake (`curi├⌐marie`).
- Moodle (mod/assign/classes/downloader.php, `get_student_prefix`, since Moodle 4.1; the same
  names before it): one folder per participant, `<prefix>_assignsubmission_file/<files>` ("Download
  submissions in folders", the default), or flat files `<prefix>_assignsubmission_file_<file>`.
  `<prefix>` is clean_filename(full name with `_` made spaces + `_` + participant id): Moodle's
  PARAM_FILE cleaning removes control characters and `& < > " \\` | ' : \\ /` (lib/moodlelib.php,
  `clean_param`), so "Liam O'Brien" arrives as `Liam OBrien`, and two students with the same full
  name differ only by their participant id (an id of the assignment, not of the profile).
- A zip a student made on Windows with PowerShell 5.1's `Compress-Archive` (module 1.0.1.0) stores
  `exercises\\softmax.py` with backslashes (PowerShell/Microsoft.PowerShell.Archive issue 48, fixed
  only in module 1.2.3.0); Info-ZIP and libarchive (libarchive pull request 970) read them as
  folders, and so does this module.

Every file of a student's current attempt is kept with the name the student gave it: a Canvas
renaming of an exercise's file (`softmax-1.py`, `softmax-1-1.py`, `softmax-<uuid>.py`) is undone
where the name that remains is an exercise's, and said (`Student.renamed`); a file of any other
name keeps it.
"""
from __future__ import annotations

import io
import os
import re
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

MAX_STUDENT_BYTES = 32 << 20     # all files of one student, unpacked
MAX_ENTRIES = 2000               # files of one student, unpacked
MAX_NAME_BYTES = 255             # a file name on Linux's file systems (NAME_MAX)
UTF8_FLAG = 0x800                # a zip entry's "language encoding" bit (APPNOTE 4.4.4, bit 11)
MOODLE = re.compile(r"^(?P<name>[^_/]*)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
                    r"(?:_(?P<rest>.*))?$")
# what Canvas's make_unique_filename appends: -1 ... -7, or -<uuid> after the eighth
CANVAS_SUFFIX = re.compile(r"-(?:[1-9]\d*|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
                           r"[0-9a-f]{12})$")
# Moodle's PARAM_FILE: control characters and these are removed
MOODLE_REMOVED = re.compile(r"[\x00-\x1f\x7f&<>\"`|':\\/]")


class DownloadError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make collect: {message}")


@dataclass
class Student:
    """One student of the download: who they are in the LMS, and their files."""
    lms: str                      # "canvas" or "moodle"
    key: str                      # Canvas user id, or Moodle participant id
    name: str                     # as the download names them
    files: list[tuple[str, bytes]] = field(default_factory=list)   # (relative path, content)
    attachments: list[list] = field(default_factory=list)         # Canvas: [id, file name]
    late: bool | None = None      # Canvas: its own late flag; Moodle's download says nothing
    renamed: list[list[str]] = field(default_factory=list)        # [as delivered, as graded]
    left_out: list[str] = field(default_factory=list)             # what was not taken, and why
    bytes: int = 0


@dataclass
class Download:
    students: dict[tuple[str, str], Student]   # by (lms, id)
    stray: list[str]                           # entries that belong to no student


def moodle_clean(name: str) -> str:
    """A full name as Moodle's download writes it: `_` made a space, then PARAM_FILE's cleaning."""
    text = MOODLE_REMOVED.sub("", unicodedata.normalize("NFC", name).replace("_", " "))
    return "" if text in (".", "..") else text


def canvas_parts(name: str) -> tuple[str, bool, str, str, str] | None:
    """(name, late, user id, attachment id, file name) of a Canvas download's file name, read as
    Canvas's own re-upload reads it (`infer_comment_context_from_filename`: the first two parts
    between underscores that are all digits), or None. `late`: the part before the user id is
    Canvas's late flag."""
    parts = name.split("_")
    for i in range(len(parts) - 2):
        if parts[i].isdigit() and parts[i + 1].isdigit():
            before = parts[:i]
            late = bool(before) and before[-1].lower() == "late"
            person = "_".join(before[:-1] if late else before)
            return person, late, parts[i], parts[i + 1], "_".join(parts[i + 2:])
    return None


def canvas_original(name: str, exercises: set[str]) -> str | None:
    """The name Canvas's renaming hides (`softmax-1.py` -> `softmax.py`, also `softmax-2-1.py`
    and `softmax-<uuid>.py`) when that name is an exercise's file, else None."""
    stem, dot, suffix = name.rpartition(".")
    if not dot or f".{suffix}" != ".py":
        return None
    original = stem
    while CANVAS_SUFFIX.search(original):
        original = CANVAS_SUFFIX.sub("", original)
    return f"{original}.py" if original != stem and original in exercises else None


def entry_name(info: zipfile.ZipInfo) -> str:
    """An entry's name as its writer meant it: a name without the UTF-8 flag that is valid UTF-8
    read as UTF-8 (rubyzip, as Canvas runs it, writes UTF-8 without setting the flag; Python
    would show cp437), and backslashes read as separators (PowerShell 5.1's Compress-Archive)."""
    name = info.filename
    if not info.flag_bits & UTF8_FLAG:
        try:
            name = name.encode("cp437").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            pass
    return name.replace("\\", "/")


def _within(limit: int, info: zipfile.ZipInfo) -> bool:
    return 0 <= info.file_size <= limit


def _source_entries(source: Path):
    """(path inside the download, size, reader) of every file, in name order; the reader reads
    the content (a zip's reader never gives more than the entry declares). Sizes are known
    before any content is read."""
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            relative = os.fsdecode(os.fsencode(path.relative_to(source)))
            yield relative.replace(os.sep, "/"), path.stat().st_size, path.read_bytes
        return
    try:
        archive = zipfile.ZipFile(source)
    except (OSError, zipfile.BadZipFile) as err:
        raise DownloadError(f"FROM={source}: not a zip file or folder ({err})") from None
    with archive:
        for info in sorted(archive.infolist(), key=entry_name):
            if info.is_dir():
                continue
            yield entry_name(info), info.file_size, (lambda info=info: archive.read(info))


def read_download(source: Path, exercises: set[str]) -> Download:
    """The download's students by (lms, id), and the entries that belong to nobody. Nothing is
    read beyond what a student may hand in (MAX_STUDENT_BYTES, MAX_ENTRIES): a larger entry is
    left out, named, before its content is read."""
    students: dict[tuple[str, str], Student] = {}
    stray: list[str] = []
    for path, size, read in _source_entries(Path(source)):
        parts = PurePosixPath(path).parts
        moodle = next((m for m in map(MOODLE.match, parts) if m), None)
        if moodle:
            at = next(i for i, p in enumerate(parts) if MOODLE.match(p))
            relative = "/".join(filter(None, [moodle["rest"] or "", *parts[at + 1:]]))
            student = students.setdefault(("moodle", moodle["pid"]),
                                          Student("moodle", moodle["pid"], moodle["name"]))
            _take(student, relative, size, read)
            continue
        canvas = canvas_parts(parts[-1])
        if canvas:
            person, late, uid, aid, name = canvas
            student = students.setdefault(("canvas", uid), Student("canvas", uid, person))
            student.late = bool(student.late) or late
            student.attachments.append([aid, name])
            _take(student, name, size, read)
        else:
            stray.append(path)
    for student in students.values():
        if student.lms == "canvas":
            _undo_canvas_renames(student, exercises)
    return Download(students, stray)


def _take(student: Student, name: str, size: int, read) -> None:
    if size > MAX_STUDENT_BYTES - student.bytes or len(student.files) >= MAX_ENTRIES:
        student.left_out.append(f"{name} (over {MAX_STUDENT_BYTES >> 20} MiB or {MAX_ENTRIES} "
                                "files in all: not read)")
        return
    try:
        content = read()
    except (OSError, zipfile.BadZipFile, RuntimeError, ValueError, EOFError) as err:
        student.left_out.append(f"{name} (cannot be read: {err})")
        return
    student.files.append((name, content))
    student.bytes += len(content)


def _undo_canvas_renames(student: Student, exercises: set[str]) -> None:
    """`softmax-1.py` back to `softmax.py`. Where several files of the attempt come to one name
    (the student attached it twice), the one Canvas stored last (the largest attachment id) is
    kept and the others are named as left out."""
    ids = {name: int(aid) for aid, name in student.attachments if aid.isdigit()}

    def target(name: str) -> str | None:
        own = name.endswith(".py") and name[:-3] in exercises
        return name if own else canvas_original(name, exercises)

    chosen: dict[str, str] = {}
    for name, _ in student.files:
        goal = target(name)
        if goal is not None and (goal not in chosen or ids.get(name, 0) > ids.get(chosen[goal], 0)):
            chosen[goal] = name
    kept = []
    for name, content in student.files:
        goal = target(name)
        if goal is None:
            kept.append((name, content))
        elif chosen[goal] != name:
            student.left_out.append(f"{name} (an earlier copy of {goal} in the same attempt: "
                                    f"{chosen[goal]} is graded)")
        else:
            kept.append((goal, content))
            if goal != name:
                student.renamed.append([name, goal])
    student.files = kept


def _safe(name: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or name.startswith("/"):
        return None
    return path.as_posix()


def short_name(part: str) -> str:
    """A path part the file system takes (at most MAX_NAME_BYTES bytes): a longer one is cut and
    given a hash of the whole, so two long names never become one."""
    raw = part.encode("utf-8", "surrogateescape")
    if len(raw) <= MAX_NAME_BYTES:
        return part
    import hashlib

    stem, dot, suffix = part.rpartition(".")
    suffix = f".{suffix}" if dot and len(suffix) <= 16 else ""
    digest = "~" + hashlib.sha256(raw).hexdigest()[:12]
    room = MAX_NAME_BYTES - len(digest.encode()) - len(suffix.encode())
    head = raw[:room].decode("utf-8", "ignore")
    return head + digest + suffix


def members(name: str, content: bytes, budget: int, left_out: list[str]) -> list[tuple[str, bytes]]:
    """A zip's files, read only while their declared sizes fit in `budget` bytes (a zip's
    reader never gives more than an entry declares)."""
    found = []
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                member = entry_name(info)
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    left_out.append(f"{name}: {member} (a link)")
                elif not _within(budget, info) or len(found) >= MAX_ENTRIES:
                    left_out.append(f"{name}: {member} (over {MAX_STUDENT_BYTES >> 20} "
                                    f"MiB or {MAX_ENTRIES} files in all)")
                else:
                    found.append((member, archive.read(info)))
                    budget -= info.file_size
    except (zipfile.BadZipFile, OSError, RuntimeError, ValueError, EOFError, NotImplementedError) \
            as err:
        left_out.append(f"{name} (not a readable zip: {err})")
    return found


def unpacked(files: list[tuple[str, bytes]]) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The student's files with each zip they handed in unpacked in its place (one level), and
    what was left out and why. Paths are made safe: nothing outside the student's folder, no
    part longer than the file system takes, no file where a folder of the same path is needed."""
    found: dict[str, bytes] = {}
    left_out: list[str] = []
    total = 0
    for name, content in files:
        items = members(name, content, MAX_STUDENT_BYTES - total, left_out) \
            if name.lower().endswith(".zip") else [(name, content)]
        for member, data in items:
            safe = _safe(member)
            if safe is None:
                left_out.append(f"{member} (a path outside the student's folder)")
                continue
            safe = "/".join(short_name(p) for p in PurePosixPath(safe).parts)
            if PurePosixPath(safe).parts[0].startswith("__MACOSX"):
                continue
            if total + len(data) > MAX_STUDENT_BYTES or len(found) >= MAX_ENTRIES:
                left_out.append(f"{member} (over {MAX_STUDENT_BYTES >> 20} MiB or "
                                f"{MAX_ENTRIES} files in all)")
                continue
            clash = _clash(safe, found)
            if clash:
                left_out.append(f"{member} ({clash})")
                continue
            found[safe] = data
            total += len(data)
    return list(found.items()), left_out


def _clash(path: str, found: dict[str, bytes]) -> str | None:
    """Why `path` cannot be written beside the files already found, or None: a file where a
    folder is needed (`exercises` beside `exercises/x.py`), or the same path twice (a case twin
    on a disk that ignores case counts as the same)."""
    folded = {p.casefold() for p in found}
    if path.casefold() in folded:
        return "a second file of the same name"
    parents = [str(p) for p in PurePosixPath(path).parents if str(p) != "."]
    if any(p.casefold() in folded for p in parents):
        return "a file of that name is already where a folder is needed"
    prefix = path.casefold() + "/"
    if any(p.startswith(prefix) for p in folded):
        return "a folder of that name holds other files"
    return None
