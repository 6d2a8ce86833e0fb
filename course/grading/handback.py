"""Every student's feedback at once, in the bulk form each LMS takes (OUT/handback/).

    python -m course.grading handback --out OUT [--submissions SUBS]
    make handback OUT=../class/grades [SUBMISSIONS=../class/collected]

Written from OUT's records and feedback (feedback.py), with the LMS's ids that `make collect`
kept in SUBS/.lms.json:

- canvas-feedback.zip, for Canvas's "Re-upload submissions" (Assignment page, then Download
  Submissions' neighbour "Re-upload Submissions"). Canvas reads the user id and the id of one of
  the files the student submitted from the first two all-digit parts of each file name between
  underscores (canvas-lms Assignment#infer_comment_context_from_filename), and adds the file as
  a comment on that student's submission, shown under the name of the submitted file it answers.
  Each entry is `feedback_<user id>_<attachment id>_feedback.md`: the feedback as Markdown text,
  or, where that submitted file is a zip, a zip holding `feedback.md` (so the comment's file
  opens as what its name says).
- moodle-feedback.zip, for Moodle's "Upload multiple feedback files in a zip" (assignment, View
  all submissions, the grading action; the assignment needs the "Feedback files" type). Moodle
  takes the participant id from the second part between underscores of a file's name and the
  plugin from the third and fourth (mod/assign/feedback/file/importziplib.php,
  `is_valid_filename_for_import`); each entry is
  `<full name>_<participant id>_assignfeedback_file_feedback.md`, the full name with its
  underscores made spaces, as Moodle's own download writes it.
- feedback.zip: every student's `<folder>/feedback.md`, for any other way (mail, an LMS without
  bulk upload).
- README.md: what each zip holds, who is in none of the LMS zips (a folder not made by
  `make collect`) and how to upload.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import zipfile
from pathlib import Path

from course.grading import records as rec
from course.grading.classdir import check_class_paths
from course.grading.collect import HANDLES
from course.grading.feedback import FEEDBACK_DIR
from course.grading.names import md_code, shown

HANDBACK_DIR = "handback"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)  # zip entries' time: the same records give the same bytes


class HandbackError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make handback: {message}")


def _write_bytes(path: Path, data: bytes) -> None:
    """Atomically, as records.atomic_write writes text."""
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            archive.writestr(zipfile.ZipInfo(name, FIXED_TIME), entries[name],
                             zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def canvas_entry(handle: dict, feedback: bytes) -> tuple[str, bytes] | None:
    """(file name, content) of one student's feedback for Canvas's re-upload, or None without a
    submitted file to attach it to."""
    if not handle.get("attachments"):
        return None
    attachment, submitted = sorted(handle["attachments"], key=lambda a: str(a[1]))[0]
    content = _zip({"feedback.md": feedback}) if str(submitted).lower().endswith(".zip") \
        else feedback
    return f"feedback_{handle['id']}_{attachment}_feedback.md", content


def moodle_entry(handle: dict, feedback: bytes) -> tuple[str, bytes]:
    name = " ".join(str(handle.get("name") or "Participant").replace("_", " ").split("/"))
    return f"{name}_{handle['id']}_assignfeedback_file_feedback.md", feedback


KEPT = ".handles.json"  # OUT/handback/: the LMS ids the zips were made with, for rebuilding them


def rebuild(out: Path) -> dict[str, list[str]] | None:
    """OUT/handback/ made again from the records, where make handback made it before: a regrade,
    a late student or a rescore never leaves a zip that says an older grade."""
    kept = Path(out) / HANDBACK_DIR / KEPT
    if not kept.is_file():
        return None
    try:
        handles = rec.read_json(kept)
    except (OSError, ValueError):
        return None
    return build(out, handles=handles if isinstance(handles, dict) else {})


def _handles(submissions: Path | None) -> dict:
    if submissions is None or not (Path(submissions) / HANDLES).is_file():
        return {}
    try:
        return json.loads((Path(submissions) / HANDLES).read_text(encoding="utf-8"))["students"]
    except (OSError, ValueError, KeyError) as err:
        raise HandbackError(f"{submissions}/{HANDLES} cannot be read ({err})") from None


def _entry_folder(record: rec.StudentRecord) -> str:
    """The folder of a student's feedback in feedback.zip: the student's folder name where a zip
    entry can carry it as it is (no separator, no control character, not hidden), else the
    report name (a cleaned name with a hash: the same one as OUT/reports/)."""
    name = record.student
    plain = (name and name == shown(name) and not name.startswith(".") and "/" not in name
             and "\\" not in name and len(name.encode("utf-8", "surrogateescape")) <= 200)
    return name if plain else record.report_name


def build(out: Path, submissions: Path | None = None,
          handles: dict | None = None) -> dict[str, list[str]]:
    """Write OUT/handback/; returns, per zip, the folders it holds."""
    out = Path(out).resolve()
    records = rec.load_students(out)
    if not records:
        raise HandbackError(f"{out} holds no graded student (run make grade first)")
    handles = _handles(submissions) if handles is None else handles
    zips: dict[str, dict[str, bytes]] = {"feedback.zip": {}, "canvas-feedback.zip": {},
                                         "moodle-feedback.zip": {}}
    held: dict[str, list[str]] = {name: [] for name in zips}
    for record in sorted(records.values(), key=lambda r: r.student):
        path = out / FEEDBACK_DIR / f"{record.report_name}.md"
        if not path.is_file():
            continue
        feedback = path.read_bytes()
        zips["feedback.zip"][f"{_entry_folder(record)}/feedback.md"] = feedback
        held["feedback.zip"].append(record.student)
        handle = handles.get(record.student)
        entry = None
        if handle and handle.get("lms") == "canvas":
            entry, target = canvas_entry(handle, feedback), "canvas-feedback.zip"
        elif handle and handle.get("lms") == "moodle":
            entry, target = moodle_entry(handle, feedback), "moodle-feedback.zip"
        if entry is not None:
            zips[target][entry[0]] = entry[1]
            held[target].append(record.student)
    folder = out / HANDBACK_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for name, entries in zips.items():
        if entries:
            _write_bytes(folder / name, _zip(entries))
        else:
            (folder / name).unlink(missing_ok=True)
    rec.atomic_write(folder / "README.md", readme(held, sorted(r.student for r in
                                                                 records.values())))
    rec.atomic_write(folder / KEPT, rec.dumps(handles))
    rec.private_tree(folder)
    return held


def readme(held: dict[str, list[str]], everyone: list[str]) -> str:
    in_lms = set(held["canvas-feedback.zip"]) | set(held["moodle-feedback.zip"])
    lines = ["# Feedback to hand back", "",
             f"`feedback.zip`: {len(held['feedback.zip'])} students, `<folder>/feedback.md` each "
             "(mail them, or upload them one by one)."]
    if held["canvas-feedback.zip"]:
        lines += ["", f"`canvas-feedback.zip`: {len(held['canvas-feedback.zip'])} students. In "
                  "Canvas: the assignment's page, **Re-upload Submissions**, choose this zip. Each "
                  "student gets a comment with one file, shown under the name of a file they "
                  "submitted (Canvas's rule)."]
    if held["moodle-feedback.zip"]:
        lines += ["", f"`moodle-feedback.zip`: {len(held['moodle-feedback.zip'])} students. In "
                  "Moodle: the assignment, **View all submissions**, grading action **Upload "
                  "multiple feedback files in a zip** (the assignment needs the feedback type "
                  "\"Feedback files\"), choose this zip, confirm."]
    missing = [name for name in everyone if name not in in_lms]
    lines += ["", f"## In no LMS zip: {len(missing)}", "",
              "Their folders were not made by `make collect` from the LMS's download (or they "
              "submitted no file to attach feedback to): hand theirs back from `feedback.zip`.",
              ""] + [f"- {md_code(name)}" for name in missing]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grading handback", description=(
        "every student's feedback as the zips Canvas and Moodle take; see docs/instructors.md"))
    parser.add_argument("--out", required=True, type=Path, help="a graded OUT")
    parser.add_argument("--submissions", type=Path,
                        help="the folder make collect made (its .lms.json)")
    args = parser.parse_args(argv)
    try:
        check_class_paths({"OUT": args.out, "SUBMISSIONS": args.submissions}, "make handback")
        held = build(args.out, args.submissions)
    except SystemExit as err:
        if isinstance(err.code, int) or err.code is None:
            raise
        print(err.code, file=sys.stderr)
        return 2
    folder = args.out.resolve() / HANDBACK_DIR
    print(f"hand-back in {folder}: " + ", ".join(f"{name} ({len(names)})"
                                                 for name, names in held.items() if names))
    return 0
