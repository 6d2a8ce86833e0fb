"""From an LMS's bulk download of the submissions to one folder per student, for make grade.

    python -m course.grading collect --from DOWNLOAD --submissions SUBS [--roster roster.csv]
    make collect FROM=../class/download.zip SUBMISSIONS=../class/collected [ROSTER=...]

DOWNLOAD is the zip (or its unpacked folder) that the LMS's "Download all submissions" gives:

- Canvas (canvas-lms app/models/content_zipper.rb, `add_upload_submission` and `get_filename`):
  flat files named `<sortable name>[_late]_<user id>_<attachment id>_<file name>`; the user id is
  the `ID` of a Canvas gradebook export, the roster's `lms_id`.
- Moodle (mod/assign's download, `get_submission_prefix` and `load_submissionplugin_filelist`):
  one folder per participant, `<full name>_<participant id>_assignsubmission_file/<files>`
  (or, without "Download submissions in folders", flat files with that prefix); the participant
  id is the assignment's own, not the profile's ID number.

Each student's files go to SUBS/<folder>/, a zip a student handed in unpacked there (entries
with absolute paths, `..`, links, or past the size limits are left out and named). The folder
is the roster's `folder` for that student (Canvas: by `lms_id`; Moodle: by `name`, the full name
as Moodle shows it), else the name the download gives. SUBS/.lms.json keeps what `make
handback` needs to return each student's feedback in the LMS's own bulk form: the Canvas user and
attachment ids, the Moodle participant id. File names are kept as the LMS wrote them: a
`softmax (1).py` stays so, and the grader tells the student (feedback.py).
"""
from __future__ import annotations

import argparse
import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from course.grading.classdir import check_class_paths
from course.grading.roster import RosterError, folder_key, read_roster

HANDLES = ".lms.json"
MAX_STUDENT_BYTES = 32 << 20     # all files of one student, unpacked
MAX_ENTRIES = 2000               # files of one student, unpacked
MOODLE = re.compile(r"^(?P<name>[^_/]*)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
                    r"(?:_(?P<rest>.*))?$")


class CollectError(SystemExit):
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


def canvas_parts(name: str) -> tuple[str, str, str, str] | None:
    """(name, user id, attachment id, file name) of a Canvas download's file name, read as
    Canvas's own re-upload reads it (`infer_comment_context_from_filename`: the first two parts
    between underscores that are all digits), or None."""
    parts = name.split("_")
    for i in range(len(parts) - 2):
        if parts[i].isdigit() and parts[i + 1].isdigit():
            person = "_".join(p for p in parts[:i] if p != "late")
            return person, parts[i], parts[i + 1], "_".join(parts[i + 2:])
    return None


def _entries(source: Path):
    """(path inside the download, content) of every file, in name order."""
    if source.is_dir():
        for path in sorted(source.rglob("*")):
            if path.is_file() and not path.is_symlink():
                yield path.relative_to(source).as_posix(), path.read_bytes()
        return
    try:
        with zipfile.ZipFile(source) as archive:
            for info in sorted(archive.infolist(), key=lambda i: i.filename):
                if not info.is_dir():
                    yield info.filename, archive.read(info)
    except (OSError, zipfile.BadZipFile) as err:
        raise CollectError(f"FROM={source}: not a zip file or folder ({err})") from None


def read_download(source: Path) -> tuple[dict[tuple[str, str], Student], list[str]]:
    """The download's students by (lms, id), and the entries that belong to nobody."""
    students: dict[tuple[str, str], Student] = {}
    stray = []
    for path, content in _entries(Path(source)):
        parts = PurePosixPath(path).parts
        moodle = next((MOODLE.match(p) for p in parts if MOODLE.match(p)), None)
        if moodle:
            at = next(i for i, p in enumerate(parts) if MOODLE.match(p))
            relative = "/".join(filter(None, [moodle["rest"] or "", *parts[at + 1:]]))
            student = students.setdefault(("moodle", moodle["pid"]),
                                          Student("moodle", moodle["pid"], moodle["name"]))
            student.files.append((relative, content))
            continue
        canvas = canvas_parts(parts[-1])
        if canvas:
            person, uid, aid, name = canvas
            student = students.setdefault(("canvas", uid), Student("canvas", uid, person))
            student.files.append((name, content))
            student.attachments.append([aid, name])
        else:
            stray.append(path)
    return students, stray


def _safe(name: str) -> str | None:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts or name.startswith("/"):
        return None
    return path.as_posix()


def _members(name: str, content: bytes, budget: int, left_out: list[str]) -> list[tuple[str, bytes]]:
    """A zip's files, read only while their declared sizes fit in `budget` bytes (a zip's
    reader never gives more than an entry declares)."""
    members = []
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            for info in archive.infolist():
                if info.is_dir():
                    continue
                if (info.external_attr >> 16) & 0o170000 == 0o120000:
                    left_out.append(f"{name}: {info.filename} (a link)")
                elif info.file_size > budget or len(members) >= MAX_ENTRIES:
                    left_out.append(f"{name}: {info.filename} (over {MAX_STUDENT_BYTES >> 20} "
                                    f"MiB or {MAX_ENTRIES} files in all)")
                else:
                    members.append((info.filename, archive.read(info)))
                    budget -= info.file_size
    except (zipfile.BadZipFile, OSError, RuntimeError, ValueError) as err:
        left_out.append(f"{name} (not a readable zip: {err})")
    return members


def unpacked(files: list[tuple[str, bytes]]) -> tuple[list[tuple[str, bytes]], list[str]]:
    """The student's files with each zip they handed in unpacked in its place (one level), and
    what was left out and why."""
    found, left_out, total = [], [], 0
    for name, content in files:
        members = _members(name, content, MAX_STUDENT_BYTES - total, left_out) \
            if name.lower().endswith(".zip") else [(name, content)]
        for member, data in members:
            safe = _safe(member)
            if safe is None:
                left_out.append(f"{member} (a path outside the student's folder)")
            elif total + len(data) > MAX_STUDENT_BYTES or len(found) >= MAX_ENTRIES:
                left_out.append(f"{member} (over {MAX_STUDENT_BYTES >> 20} MiB or "
                                f"{MAX_ENTRIES} files in all)")
            elif not PurePosixPath(safe).parts[0].startswith("__MACOSX"):
                found.append((safe, data))
                total += len(data)
    return found, left_out


def folder_names(students: list[Student], roster_path: Path | None) -> dict[tuple[str, str], str]:
    """Each student's folder: the roster's (Canvas by lms_id, Moodle by full name), else the
    name in the download, with the LMS's id added where two would share a folder."""
    roster = read_roster(roster_path) if roster_path is not None else []
    by_id = {e.lms_id: e.folder for e in roster if e.lms_id}
    by_name: dict[str, list[str]] = {}
    for entry in roster:
        by_name.setdefault(folder_key(entry.name), []).append(entry.folder)
    chosen, counts = {}, {}
    for s in students:
        named = by_name.get(folder_key(s.name), [])
        folder = by_id.get(s.key) if s.lms == "canvas" else (named[0] if len(named) == 1 else None)
        # a name from the download is a student's text: never a path, never a hidden folder
        plain = s.name if s.name and not s.name.startswith(".") and "/" not in s.name else None
        chosen[s.lms, s.key] = folder or plain or f"{s.lms}-{s.key}"
        counts[chosen[s.lms, s.key]] = counts.get(chosen[s.lms, s.key], 0) + 1
    return {k: (v if counts[v] == 1 else f"{v}_{k[1]}") for k, v in chosen.items()}


def collect(source: Path, submissions: Path, roster: Path | None = None) -> dict:
    """Write one folder per student into SUBMISSIONS (new or empty) and SUBMISSIONS/.lms.json."""
    source, submissions = Path(source).resolve(), Path(submissions).resolve()
    check_class_paths({"FROM": source, "SUBMISSIONS": submissions, "ROSTER": roster},
                      "make collect")
    if submissions.exists() and any(submissions.iterdir()):
        raise CollectError(f"SUBMISSIONS={submissions} is not empty; collect into a new folder")
    students, stray = read_download(source)
    if not students:
        raise CollectError(f"FROM={source} holds no file named as Canvas or Moodle name "
                           "submissions in a bulk download")
    names = folder_names(list(students.values()), roster)
    handles = {"lms": sorted({s.lms for s in students.values()}), "students": {}}
    for key, student in sorted(students.items(), key=lambda kv: names[kv[0]]):
        folder = submissions / names[key]
        files, left_out = unpacked(student.files)
        for relative, content in files:
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(content)
        folder.mkdir(parents=True, exist_ok=True)
        handles["students"][names[key]] = {"lms": student.lms, "id": student.key,
                                           "name": student.name,
                                           "attachments": student.attachments}
        for item in left_out:
            print(f"collect: {names[key]}: left out {item}", file=sys.stderr)
    (submissions / HANDLES).write_text(json.dumps(handles, indent=1, ensure_ascii=False))
    for path in stray:
        print(f"collect: not a student's file, left out: {path}", file=sys.stderr)
    return handles


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grading collect", description=(
        "one folder per student from an LMS's bulk download; see docs/instructors.md"))
    parser.add_argument("--from", dest="source", required=True, type=Path,
                        help="the LMS's download: a zip, or its unpacked folder")
    parser.add_argument("--submissions", required=True, type=Path, help="new folder to fill")
    parser.add_argument("--roster", type=Path, help="roster CSV: name folders as it does")
    args = parser.parse_args(argv)
    try:
        handles = collect(args.source, args.submissions, args.roster)
    except RosterError as err:
        print(f"make collect: {err}", file=sys.stderr)
        return 2
    except SystemExit as err:
        if isinstance(err.code, int) or err.code is None:
            raise
        print(err.code, file=sys.stderr)
        return 2
    print(f"collected {len(handles['students'])} student(s) ({', '.join(handles['lms'])}) into "
          f"{args.submissions.resolve()}")
    return 0
