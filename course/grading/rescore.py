"""Change a graded class's points, roster or assignment title from its records: no student code runs.

    python -m course.grading rescore --out OUT [--points points.toml] [--roster roster.csv]
        [--assignment TITLE] [--per-lesson | --no-per-lesson]
    make grade OUT=../class/grades POINTS=../class/points.toml     # no SUBMISSIONS: a rescore

A point is earned by a check that passed in the notebook and was confirmed on hidden inputs; which
checks did is in each student's record (records.py), so new points are arithmetic on the records:
every record's points, earned points and totals are computed again, the class's record (class.json)
takes the new points, and the gradebook, the reports, the feedback and the LMS files are written
again from the records (render.py). A roster given here replaces OUT's (new students' ids, a late
extension: the late flags are judged again, delivery.py); a title renames the LMS columns. Every
record is signed again with the class's key.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course.grading import delivery
from course.grading import records as rec
from course.grading.classdir import check_class_paths
from course.grading.outdir import OutError, open_out
from course.grading.plan import PointsError, load_points
from course.grading.render import render_class, write_student
from course.grading.roster import RosterError, folder_key, read_roster, store_roster, stored_roster


def rescore_record(record: rec.StudentRecord, points: dict[str, float]) -> bool:
    """New points into one record; whether its total changed."""
    before = record.total
    for check in record.checks:
        check.points = points.get(check.id, check.points)
        check.earned = check.points if check.passed else 0.0
    record.total = sum(c.earned for c in record.checks)
    record.maximum = sum(c.points for c in record.checks)
    return record.total != before


def rescore(out: Path, points_file: Path | None = None, roster: Path | None = None,
            assignment: str | None = None, per_lesson: bool | None = None) -> dict:
    """Apply the changes to OUT's records and render OUT again; returns what changed."""
    out = Path(out).resolve()
    check_class_paths({"OUT": out, "POINTS": points_file, "ROSTER": roster})
    if not (out / rec.CLASS_FILE).is_file():
        raise OutError(f"{out} holds no graded class (run make grade with SUBMISSIONS first)")
    state = open_out(out)
    try:
        info = state.info
        if info is None:  # its class.json failed its MAC (open_out said so): nothing to vouch for
            raise OutError(f"{out} holds no class.json the grader wrote: grade the class again "
                           "(make grade with SUBMISSIONS)")
        records = state.records
        changed = {"points": 0, "late": 0}
        if points_file is not None:
            info.points = load_points(info.checks, points_file)
            changed["points"] = sum(rescore_record(r, info.points) for r in records.values())
        if roster is not None:  # class.json, written below, records the new roster's digest
            info.roster_digest = rec.file_digest(store_roster(out, roster))
        if assignment is not None:
            info.assignment = assignment
        if per_lesson is not None:
            info.settings = {**(info.settings or {}), "per_lesson": per_lesson}
        path = roster or stored_roster(out)
        entries = {} if path is None else {folder_key(e.folder): e for e in read_roster(path)}
        for record in records.values():
            before = (record.late, record.flags)
            delivery.apply(record, delivery.handle_of(record), entries.get(folder_key(record.student)))
            changed["late"] += (record.late, record.flags) != before
        rec.save_class(out, info)
        limits = _limits_line(info)
        for record in records.values():
            write_student(out, record, limits)
        render_class(out, info, list(records.values()), {"rescored": True}, None,
                     (info.settings or {}).get("per_lesson"))
        return {**changed, "students": len(records)}
    finally:
        state.close()


def _limits_line(info: rec.ClassInfo) -> str:
    from course.grading.settings import Settings

    known = {k: v for k, v in (info.settings or {}).items() if k in Settings.__dataclass_fields__}
    return Settings(**known).line()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.grading rescore", description=(
        "new points, roster or title for a graded OUT, from its records (no student code runs)"))
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--points", type=Path, help="points per check (TOML, as points.toml)")
    parser.add_argument("--roster", type=Path, help="a new roster for the LMS files")
    parser.add_argument("--assignment", help="a new title for the LMS columns")
    parser.add_argument("--per-lesson", action=argparse.BooleanOptionalAction, default=None)
    args = parser.parse_args(argv)
    try:
        done = rescore(args.out, args.points, args.roster, args.assignment, args.per_lesson)
    except (RosterError, PointsError) as err:
        print(f"make grade: {err}", file=sys.stderr)
        return 2
    except SystemExit as err:
        if isinstance(err.code, int) or err.code is None:
            raise
        print(err.code, file=sys.stderr)
        return 2
    print(f"rescored {done['students']} student(s) in {args.out.resolve()} from their records "
          f"(no student code ran): {done['points']} total(s) changed, {done['late']} late "
          "flag(s) changed; gradebook, reports, feedback and LMS files written again")
    return 0
