"""One class graded on several machines: merge the OUT folders of its shards into one OUT.

    python -m course.grading merge --parts OUT1 OUT2 ... --out OUT [--seed-file seed]
        [--roster roster.csv] [--per-lesson]
    make grade-merge PARTS="OUT1 OUT2 ..." OUT=OUT [ROSTER=roster.csv] [PER_LESSON=1]

Each part is the OUT of one `make grade ... SHARD=K/N` (same class, same seed, same points; see
docs/instructors.md, "Grade on a cluster"). The merged OUT is what one machine grading the whole
class would have written, timings apart: the student records (students/*.json) and their
reports and raw output are copied as they are; the gradebook, results.json, the feedback and the
LMS files are rendered anew from the records. A part graded with another seed, plan, points or
sandbox is refused (their points would not be comparable), and so is a student graded in two
parts. Nothing in the parts is changed.

The parts are not trusted: every record and class.json must carry the MAC the grader wrote
(keyed by the class's secret seed: `--seed-file`, else each part's own OUT/.seed), every record
must be one of its part's class (its class id, checks and points: not a record another OUT
signed with the same seed) for a student folder that part's class has, and every report name
must be the one the grader makes from that student's folder name, so an edited record (999
points), a record of another class or a report name such as `../../X` is refused, each with the
reason, and nothing is written outside OUT. A part's roster is used only when its class.json
records its digest. Every file of a part is read with a bound. The merged OUT is a class of its
own: a new class id, under which every record is signed again (once verified).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from course.grading import records as rec
from course.grading import outdir
from course.grading.feedback import FEEDBACK_DIR
from course.grading.lms import LMS_DIR, RosterError, read_roster
from course.grading.names import shown, valid_report_name
from course.grading.outdir import read_seed_file, seed_digest
from course.grading.records import ClassInfo, StudentRecord
from course.grading.render import render_class
from course.grading.roster import STORED, store_roster

MARKER = ".merged"       # lets a later merge replace an OUT that a merge wrote
RENDERED = ("gradebook.csv", "results.json", rec.CLASS_FILE, STORED)
COPIED_DIRS = (rec.STUDENTS_DIR, "reports", "raw", FEEDBACK_DIR, LMS_DIR)
# what may differ between the shards of one class: how each run was started, not how it graded
PER_RUN = outdir.PER_RUN | outdir.IDENTITY | {"seconds", "started", "finished", "progress"}
SHARD_ONLY = {"shard", "students"}  # true of one part, not of the merged class: left out of OUT


class MergeError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make grade-merge: {message}")


def grading_key(info: ClassInfo) -> dict:
    """What must be equal in every part: ClassInfo without its per-run settings."""
    data = {k: v for k, v in info.to_json().items() if k not in PER_RUN}
    data["settings"] = {k: v for k, v in (info.settings or {}).items() if k not in PER_RUN}
    return data


def _differences(first: dict, other: dict) -> list[str]:
    keys = sorted(set(first) | set(other))
    found = []
    for key in keys:
        if key == "settings":
            found += [f"settings.{k}" for k in _differences(first[key], other.get(key, {}))]
        elif first.get(key) != other.get(key):
            found.append(key)
    return found


def _key(part: Path, seed: int | None) -> bytes:
    if seed is not None:
        return rec.mac_key(seed)
    key = rec.out_key(part)
    if key is None:
        raise MergeError(f"{part} keeps no {rec.SEED_FILE}: give the class's seed with "
                         "--seed-file, so that its records can be verified")
    return key


def _read(path: Path) -> dict:
    try:
        data = rec.read_json(path)
    except (OSError, ValueError) as err:
        raise MergeError(f"{path} cannot be read as a record ({err})") from None
    if not isinstance(data, dict):
        raise MergeError(f"{path} is no record")
    return data


def load_part(part: Path, seed: int | None) -> tuple[Path, ClassInfo, dict[str, StudentRecord]]:
    """One part's class and records, each verified (MAC, report name) before it is used."""
    if not (part / rec.CLASS_FILE).is_file():
        raise MergeError(f"{part} is not the OUT of a grading run (no {rec.CLASS_FILE})")
    key, data = _key(part, seed), _read(part / rec.CLASS_FILE)
    if not rec.verify(data, key):
        raise MergeError(f"{part}/{rec.CLASS_FILE} fails its MAC: it was edited, or graded with "
                         "another seed than the one given")
    info = ClassInfo.from_json(data)
    if seed is not None and info.seed_digest != seed_digest(seed):
        raise MergeError(f"{part} was graded with another seed than --seed-file's")
    students, refused = {}, []
    for path in rec.student_files(part):
        data = _read(path)
        if not rec.verify(data, key):
            refused.append(f"{path.name} (fails its MAC)")
        elif not valid_report_name(data.get("report_name"), data.get("student")):
            refused.append(f"{path.name} (its report name is not its folder's)")
        else:
            record = StudentRecord.from_json(data)
            why = rec.why_refused(data, record, info, None, path.stem)
            if why is None and info.folders and record.student not in info.folders:
                why = "a student with no folder in that part's class"
            if why:
                refused.append(f"{path.name} ({why})")
            else:
                students[record.report_name] = record
    if refused:
        raise MergeError(f"{part}/{rec.STUDENTS_DIR}: records the grader did not write as they "
                         f"are: {', '.join(refused)}; regrade those students into that part")
    return part, info, students


def load_parts(parts: list[Path], seed: int | None = None
               ) -> list[tuple[Path, ClassInfo, dict[str, StudentRecord]]]:
    loaded = [load_part(part, seed) for part in parts]
    first_part, first, _ = loaded[0]
    for part, info, _ in loaded[1:]:
        differ = _differences(grading_key(first), grading_key(info))
        if differ:
            raise MergeError(f"{part} was graded differently from {first_part} ({', '.join(differ)}"
                             " differ: seed_digest is the secret seed, checks and lessons the "
                             "plan); grade every shard with the same --seed, points and options")
    return loaded


def check_disjoint(loaded) -> list[StudentRecord]:
    """Every student once, every report name once; the class sorted by folder name."""
    by_student: dict[str, Path] = {}
    by_report: dict[str, str] = {}
    twice = []
    for part, _, students in loaded:
        for record in students.values():
            if record.student in by_student:
                twice.append(f"{shown(record.student)!r} ({by_student[record.student]} and {part})")
            elif by_report.get(record.report_name, record.student) != record.student:
                raise MergeError(f"two students share the report name {record.report_name!r}: "
                                 f"{shown(by_report[record.report_name])!r} and "
                                 f"{shown(record.student)!r}")
            by_student[record.student] = part
            by_report[record.report_name] = record.student
    if twice:
        raise MergeError("students graded in two parts: " + "; ".join(twice) + ". Each shard must "
                         "grade its own share of the class (SHARD=K/N with one N)")
    return sorted((r for _, _, s in loaded for r in s.values()), key=lambda r: r.student)


def prepare_out(out: Path, parts: list[Path]) -> None:
    """An empty (or new) OUT, or one an earlier merge wrote (its merged files are replaced)."""
    for part in parts:
        if out == part or out.is_relative_to(part) or part.is_relative_to(out):
            raise MergeError(f"--out {out} overlaps the part {part}; choose a folder of its own")
    if out.exists() and not out.is_dir():
        raise MergeError(f"--out {out} is a file; give a folder")
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise MergeError(f"{out} is not empty and no merge wrote it; choose an empty folder")
        for name in COPIED_DIRS:
            shutil.rmtree(out / name, ignore_errors=True)
        for name in RENDERED:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by `python -m course.grading merge`; a later merge may "
                              "replace this folder\n")


def copy_seed(loaded, out: Path, seed: int | None) -> None:
    """The class's seed into OUT (owner-only), so that regrades into OUT work and its records
    can be signed: --seed-file's, else the first part's."""
    target = out / rec.SEED_FILE
    if seed is not None:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{seed}\n")
    elif (loaded[0][0] / rec.SEED_FILE).is_file():
        shutil.copy2(loaded[0][0] / rec.SEED_FILE, target)  # keeps its owner-only mode


def copy_students(loaded, out: Path) -> None:
    """Each student's record, signed again for the merged class (OUT's class.json, written
    first), and their report and raw output, byte for byte, from the part that graded them."""
    for part, _, students in loaded:
        for record in students.values():
            name = record.report_name
            assert valid_report_name(name, record.student)  # load_part refused every other
            rec.save_student(out, record)
            relative = f"reports/{name}.md"
            if (part / relative).is_file() and not (part / relative).is_symlink():
                (out / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(part / relative, out / relative)
            if (part / "raw" / name).is_dir():
                shutil.copytree(part / "raw" / name, out / "raw" / name, symlinks=True)


def _part_results(part: Path) -> dict:
    try:
        return json.loads((part / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def keep_roster(loaded, out: Path, roster: Path | None) -> str:
    """The merged OUT keeps the roster given, else the one the parts keep, when that part's
    class.json records its digest (LMS files then follow every later run into OUT); returns
    the digest of the roster kept ("": none)."""
    if roster is not None:
        return rec.file_digest(store_roster(out, roster))
    for part, info, _ in loaded:
        if (part / STORED).is_file():
            if not info.roster_digest or rec.file_digest(part / STORED) != info.roster_digest:
                print(f"warning: {part / STORED} is not used: it is not the roster the grader "
                      "stored (its digest is not the one its class.json records); give the "
                      "roster with --roster", file=sys.stderr)
                continue
            shutil.copy2(part / STORED, out / STORED)
            return info.roster_digest
    return ""


def merge(parts, out, roster: Path | None = None, per_lesson: bool | None = None,
          seed_file: Path | None = None) -> list[StudentRecord]:
    """Merge the OUTs `parts` into `out`; return the class's records (sorted by folder).
    `per_lesson` None: as the parts were graded."""
    from course.grading.classdir import check_class_paths

    parts = [Path(p).resolve() for p in parts]
    out = Path(out).resolve()
    check_class_paths({"OUT": out, "ROSTER": roster}, "make grade-merge")
    if not parts:
        raise MergeError("give the parts to merge: --parts OUT1 OUT2 ...")
    if len(set(parts)) != len(parts):
        raise MergeError("a part is given twice")
    if roster is not None:
        read_roster(Path(roster))  # a roster that cannot be used stops the merge before it writes
    try:
        seed = read_seed_file(seed_file) if seed_file is not None else None
    except outdir.OutError as err:
        raise MergeError(str(err.code).removeprefix("make grade: ")) from None
    loaded = load_parts(parts, seed)
    records = check_disjoint(loaded)
    prepare_out(out, parts)
    copy_seed(loaded, out, seed)
    info = replace(loaded[0][1], class_id=rec.new_class_id(),
                   folders=sorted({f for _, part, _ in loaded for f in part.folders}))
    info.roster_digest = keep_roster(loaded, out, roster)
    info.settings = {k: v for k, v in (info.settings or {}).items() if k not in SHARD_ONLY}
    if per_lesson is not None:
        info.settings["per_lesson"] = per_lesson
    rec.save_class(out, info)
    copy_students(loaded, out)
    runs = [_part_results(p) for p in parts]
    render_class(out, info, records, {
        "seconds": max((r.get("seconds", 0) for r in runs), default=0),
        "jobs": runs[0].get("jobs") if runs else None,
        "skipped": sorted({s for r in runs for s in r.get("skipped", [])}),
        "merged_from": [str(p) for p in parts]}, None, per_lesson)
    return records


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course.grading merge",
        description="merge the OUT folders of a class graded in shards (SHARD=K/N) into one OUT; "
                    "see docs/instructors.md")
    parser.add_argument("--parts", nargs="+", required=True, type=Path,
                        help="the shards' OUT folders")
    parser.add_argument("--out", required=True, type=Path, help="the merged OUT (empty or new)")
    parser.add_argument("--roster", type=Path, help="roster CSV: also write OUT/lms/ (Canvas, Moodle)")
    parser.add_argument("--per-lesson", action=argparse.BooleanOptionalAction, default=None,
                        help="also the LMS files per lesson (default: as the parts were graded)")
    parser.add_argument("--seed-file", type=Path, help="the class's secret seed, to verify every "
                        "record of the parts (default: each part's own OUT/.seed)")
    args = parser.parse_args(argv)
    try:
        records = merge(args.parts, args.out, args.roster, args.per_lesson, seed_file=args.seed_file)
    except MergeError as err:
        print(err.code, file=sys.stderr)
        return 2
    except RosterError as err:
        print(f"make grade-merge: {err}", file=sys.stderr)
        return 2
    print(f"merged {len(records)} student(s) from {len(args.parts)} part(s) into {args.out.resolve()}: "
          f"gradebook.csv, reports/, feedback/" + (", lms/" if (args.out / LMS_DIR).is_dir() else ""))
    return 0
