"""From an LMS's bulk download of the submissions to one folder per student, for make grade.

    python -m course.grading collect --from DOWNLOAD --submissions SUBS [--roster roster.csv]
    make collect FROM=../class/download.zip SUBMISSIONS=../class/collected [ROSTER=...]

DOWNLOAD is the zip (or its unpacked folder) that the LMS's "Download all submissions" gives,
read as the LMS wrote it (download.py: Canvas's and Moodle's naming, Canvas's renaming of a name
handed in before, zips without the UTF-8 flag, PowerShell's backslashes). Each student's files go
to SUBS/<folder>/, a zip a student handed in unpacked there. The folder is the roster's `folder`
for that student (Canvas: by `lms_id`, the user id; Moodle: by `participant` where the roster has
it, else by the full name as Moodle's download cleans it), else the name the download gives.

SUBS/.lms.json keeps what the grader and `make handback` need: the LMS, its ids (the Canvas user
and attachment ids, the Moodle participant id), Canvas's late flag, the files Canvas renamed, and
the history of the downloads collected. A second download collected into the same SUBS (a late
student, resubmissions, the download after an extension) adds the students it is the first to
hold, replaces the files of those whose files changed (the replaced ones move to SUBS/.replaced/)
and updates every id; a student it does not hold keeps their folder. Nothing one student handed
in stops the class: each problem is that student's line in the report, and the folders appear
only once every student is read (each written in a temporary folder first). Everything written
is readable by its owner only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from course import ROOT
from course.grading.classdir import check_class_paths
from course.grading.download import (Download, DownloadError, Student, canvas_parts,  # noqa: F401
                                     moodle_clean, read_download, short_name, unpacked)
from course.grading.names import shown
from course.grading.records import atomic_write, dumps, private_tree
from course.grading.roster import RosterEntry, RosterError, folder_key, read_roster

HANDLES = ".lms.json"
REPLACED = ".replaced"
CollectError = DownloadError
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


def exercise_modules(course: Path = ROOT) -> set[str]:
    """The exercises' module names (`softmax`, `attention`, ...), from the course's exercises/."""
    return {p.stem for p in (course / "exercises").glob("*.py") if p.name != "__init__.py"}


@dataclass
class Row:
    """One student's line of the collect report."""
    folder: str
    student: Student
    key: tuple[str, str] = ("", "")         # (lms, id)
    state: str = "new"                     # new, updated, unchanged
    notes: list[str] = field(default_factory=list)
    problem: str = ""                      # what the instructor must do, if anything


def _canvas_roster(roster: list[RosterEntry]) -> dict[str, str]:
    return {e.lms_id: e.folder for e in roster if e.lms_id}


def folder_names(download: Download, roster: list[RosterEntry],
                 known: dict[tuple[str, str], str]) -> tuple[dict[tuple[str, str], str],
                                                              dict[tuple[str, str], str]]:
    """Each student's folder, and the problems that need the instructor: (lms, id) -> folder,
    (lms, id) -> problem. `known`: the folders an earlier collect gave (kept)."""
    by_uid = _canvas_roster(roster)
    by_pid = {e.participant: e.folder for e in roster if e.participant}
    by_name: dict[str, list[RosterEntry]] = {}
    for entry in roster:
        if entry.name:
            by_name.setdefault(moodle_clean(entry.name), []).append(entry)
    named: dict[str, list[tuple[str, str]]] = {}
    for key, s in download.students.items():
        if s.lms == "moodle":
            named.setdefault(folder_key(s.name), []).append(key)
    chosen, problems = {}, {}
    for key, s in sorted(download.students.items()):
        # the roster's folder first (it may name a student an earlier collect could not), then
        # the folder an earlier collect gave, then the download's name
        folder = by_uid.get(s.key) if s.lms == "canvas" else by_pid.get(s.key)
        folder = folder or known.get(key)
        if folder is None and s.lms == "moodle":
            rows = by_name.get(folder_key(s.name), [])
            twins = named.get(folder_key(s.name), [])
            if folder is None and len(rows) == 1 and len(twins) == 1 and not rows[0].participant:
                folder = rows[0].folder
            elif folder is None and rows and (len(twins) > 1 or len(rows) > 1):
                ids = ", ".join(k[1] for k in twins)
                problems[key] = (
                    f"{len(twins)} students named {shown(s.name)!r} in the download (participant "
                    f"ids {ids}) and {len(rows)} roster row(s) of that name: which is which is "
                    "known only by participant id. Add a `participant` column to the roster "
                    "(the \"Identifier\" of Moodle's grading worksheet, e.g. Participant "
                    f"{s.key}) and run make collect again")
        plain = short_name(s.name) if s.name and not s.name.startswith(".") and "/" not in s.name \
            else None
        chosen[key] = folder or plain or f"{s.lms}-{s.key}"
    counts: dict[str, int] = {}
    for folder in chosen.values():
        counts[folder_key(folder).casefold()] = counts.get(folder_key(folder).casefold(), 0) + 1
    return ({k: (v if counts[folder_key(v).casefold()] == 1 or known.get(k) == v else f"{v}_{k[1]}")
             for k, v in chosen.items()}, problems)


def _digest(files: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for name, content in sorted(files):
        digest.update(os.fsencode(name) + b"\0" + hashlib.sha256(content).digest())
    return digest.hexdigest()


def _on_disk(folder: Path) -> list[tuple[str, bytes]]:
    if not folder.is_dir():
        return []
    return [(p.relative_to(folder).as_posix(), p.read_bytes()) for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink()]


def _write_folder(target: Path, files: list[tuple[str, bytes]]) -> None:
    target.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    for relative, content in files:
        path = target / relative
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(PRIVATE_FILE)


def _download_time(source: Path) -> str:
    """When the download was made: the zip's modification time (a browser sets it when the
    download ends), never later than now."""
    when = min(datetime.fromtimestamp(Path(source).stat().st_mtime), datetime.now())
    return when.isoformat(timespec="seconds")


def _handle(s: Student, notes: list[str], downloaded: str) -> dict:
    return {"lms": s.lms, "id": s.key, "name": s.name, "attachments": s.attachments,
            "late": s.late, "renamed": s.renamed, "notes": notes, "downloaded": downloaded}


def _notes(s: Student, left_out: list[str]) -> list[str]:
    notes = [f"{goal} was handed in as {name} (Canvas numbers a file name handed in before); "
             f"graded as {goal}" for name, goal in s.renamed]
    if s.late:
        notes.append("late (Canvas's flag)")
    notes += [f"left out: {item}" for item in s.left_out + left_out]
    return notes


def _existing(submissions: Path) -> dict:
    """SUBS/.lms.json of an earlier collect, or {} for a new or empty SUBS; refuses a SUBS that
    holds anything else."""
    if not submissions.exists() or not any(submissions.iterdir()):
        return {}
    path = submissions / HANDLES
    if not path.is_file():
        raise CollectError(f"SUBMISSIONS={submissions} holds files but no {HANDLES}: it was not "
                           "made by make collect; collect into a new folder")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CollectError(f"{path} cannot be read ({err})") from None


def collect(source: Path, submissions: Path, roster: Path | None = None,
            course: Path = ROOT) -> dict:
    """Write one folder per student into SUBMISSIONS (new, empty, or made by an earlier collect)
    and SUBMISSIONS/.lms.json; returns the handles, with "report": the rows of this collect."""
    source, submissions = Path(source).resolve(), Path(submissions).resolve()
    check_class_paths({"FROM": source, "SUBMISSIONS": submissions, "ROSTER": roster},
                      "make collect")
    before = _existing(submissions)
    download = read_download(source, exercise_modules(course))
    if not download.students:
        raise CollectError(f"FROM={source} holds no file named as Canvas or Moodle name "
                           "submissions in a bulk download")
    entries = read_roster(roster) if roster is not None else []
    known = {(h["lms"], h["id"]): folder for folder, h in before.get("students", {}).items()}
    names, problems = folder_names(download, entries, known)
    downloaded = _download_time(source)
    handles = {"lms": sorted({*before.get("lms", []), *(s.lms for s in download.students.values())}),
               "students": dict(before.get("students", {})),
               "collects": list(before.get("collects", []))}
    rows = []
    submissions.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".collect-", dir=submissions.parent))
    try:
        for key, student in sorted(download.students.items(), key=lambda kv: names[kv[0]]):
            files, left_out = unpacked(student.files)
            row = Row(names[key], student, key, notes=_notes(student, left_out),
                      problem=problems.get(key, ""))
            current = submissions / row.folder
            if current.exists() and _digest(_on_disk(current)) == _digest(files):
                row.state = "unchanged"
            else:
                row.state = "updated" if current.exists() else "new"
                _write_folder(staging / row.folder, files)
            handles["students"][row.folder] = _handle(
                student, row.notes, downloaded if row.state != "unchanged" else
                before.get("students", {}).get(row.folder, {}).get("downloaded", downloaded))
            rows.append(row)
        _move_in(staging, submissions, rows)
        for row in rows:
            old = known.get(row.key)
            if old is not None and old != row.folder:  # the roster names them now: one folder
                _set_aside(submissions, old)
                handles["students"].pop(old, None)
                row.notes.append(f"collected before into {old}, which is set aside in "
                                 f"{REPLACED}/: the roster names this student {row.folder}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    handles["collects"].append({
        "collected": datetime.now().isoformat(timespec="seconds"), "downloaded": downloaded,
        "from": source.name, "new": [r.folder for r in rows if r.state == "new"],
        "updated": [r.folder for r in rows if r.state == "updated"],
        "stray": download.stray})
    atomic_write(submissions / HANDLES, dumps(handles))
    private_tree(submissions)
    handles["report"] = rows
    return handles


def _move_in(staging: Path, submissions: Path, rows: list[Row]) -> None:
    """Each new or changed student's folder into SUBMISSIONS (a replaced one to .replaced/)."""
    submissions.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    for row in rows:
        if row.state != "unchanged":
            _set_aside(submissions, row.folder)
            os.replace(staging / row.folder, submissions / row.folder)


def _set_aside(submissions: Path, folder: str) -> None:
    """Move SUBMISSIONS/<folder> to SUBMISSIONS/.replaced/ (kept, and no longer graded)."""
    current = submissions / folder
    if current.exists():
        kept = submissions / REPLACED / f"{folder}~{datetime.now().strftime('%Y%m%dT%H%M%S')}"
        kept.parent.mkdir(mode=PRIVATE_DIR, exist_ok=True)
        os.replace(current, kept)


def report_lines(handles: dict) -> tuple[list[str], list[str]]:
    """(the report's lines, the problems that need the instructor)."""
    lines, problems = [], []
    for row in handles["report"]:
        late = ", late" if row.student.late else ""
        lines.append(f"  {shown(row.folder)}: {row.state} ({row.student.lms} "
                     f"{shown(row.student.key)}{late}, {len(row.student.files)} file(s))")
        lines += [f"      {shown(note)}" for note in row.notes]
        if row.problem:
            problems.append(f"{shown(row.folder)}: {row.problem}")
    return lines, problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grading collect", description=(
        "one folder per student from an LMS's bulk download; see docs/instructors.md"))
    parser.add_argument("--from", dest="source", required=True, type=Path,
                        help="the LMS's download: a zip, or its unpacked folder")
    parser.add_argument("--submissions", required=True, type=Path,
                        help="a new folder, or one an earlier collect made (a second download "
                             "adds and updates students)")
    parser.add_argument("--roster", type=Path, help="roster CSV: name folders as it does")
    args = parser.parse_args(argv)
    umask = os.umask(0o077)  # what collect writes is the instructor's alone
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
    finally:
        os.umask(umask)
    lines, problems = report_lines(handles)
    rows = handles["report"]
    counts = {state: sum(r.state == state for r in rows) for state in ("new", "updated", "unchanged")}
    print(f"collected {len(rows)} student(s) ({', '.join(handles['lms'])}) into "
          f"{args.submissions.resolve()}: {counts['new']} new, {counts['updated']} with new files "
          f"(regrade them: make grade resumes with them), {counts['unchanged']} unchanged")
    print("\n".join(lines))
    for path in handles["collects"][-1]["stray"]:
        print(f"collect: not a student's file, left out: {shown(path)}", file=sys.stderr)
    for problem in problems:
        print(f"collect: NEEDS YOU: {problem}", file=sys.stderr)
    return 1 if problems else 0
