"""OUT across runs: one run at a time, the class's secret seed, its plan, the students graded so far.

A run into an OUT that already holds a class grades with that class's seed (OUT/.seed, readable
by its owner only) and refuses another plan (lessons, checks, points, grading limits): the rows
of one gradebook must be comparable. The students already graded are kept; the gradebook is
rendered from every record in OUT, so grading one late student adds a row and changes no other.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

from course.grading import records as rec
from course.grading.records import ClassInfo, StudentRecord

LOCK_FILE = ".lock"
PER_RUN = {"keep", "jobs", "shard", "students", "workdir", "roster", "per_lesson"}
# what class.json says of the class itself, not of how it is graded
IDENTITY = {"class_id", "roster_digest", "folders"}
# what a refusal says to do about each difference (an option of make grade)
OPTION = {"lessons": "LESSONS=", "checks": "LESSONS=", "points": "POINTS=",
          "sandbox": "UNSAFE=1", "seed_digest": "SEED_FILE=", "assignment": "ASSIGNMENT="}


class OutError(SystemExit):
    def __init__(self, message: str):
        super().__init__(f"make grade: {message}")


def seed_digest(seed: int) -> str:
    """What records say about the seed: equal for equal seeds, and no way back to the seed."""
    return hashlib.sha256(f"attention-course grading seed {seed}".encode()).hexdigest()


def check_seed(seed: int) -> None:
    """Refuse a seed that is no secret: the public seed of `make check HIDDEN=1`, and any seed
    whose hidden cases would be drawn by a generator the public cases were drawn by."""
    from course.grading.hidden.confirm import public_collisions  # imports torch: once OUT is settled

    if not 0 <= seed < 2**63:
        raise OutError(f"the seed must be an integer from 0 to 2**63 - 1, not {seed}")
    public = public_collisions(seed)
    if public:
        named = ", ".join(public[:3]) + (f" and {len(public) - 3} more" if len(public) > 3 else "")
        raise OutError(f"the seed {seed} is no secret: it draws the hidden cases of {named} with "
                       "a generator that drew the public cases of `make check HIDDEN=1` (they ship "
                       "with the course); choose another, or let the grader draw one")


def read_seed_file(path: Path) -> int:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError) as err:
        raise OutError(f"--seed-file {path}: no integer seed in it ({err})") from None


@dataclass
class OutState:
    out: Path
    seed: int
    info: ClassInfo | None                 # what the runs before this one stored
    records: dict[str, StudentRecord] = field(default_factory=dict)  # by report name
    lock: int = -1
    class_id: str = ""                     # the class's (info's, or a new one)

    def close(self) -> None:
        if self.lock >= 0:
            os.close(self.lock)
            self.lock = -1


def _lock(out: Path) -> int:
    fd = os.open(out / LOCK_FILE, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OutError(f"another grading run is writing into {out}; wait for it or choose "
                       "another OUT") from None
    return fd


def _stored_seed(out: Path) -> int | None:
    path = out / rec.SEED_FILE
    if not path.exists():
        return None
    if path.stat().st_mode & 0o077:
        os.chmod(path, 0o600)
    return read_seed_file(path)


def _store_seed(out: Path, seed: int) -> None:
    fd = os.open(out / rec.SEED_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"{seed}\n")


def open_out(out: Path, seed: int | None = None, seed_file: Path | None = None) -> OutState:
    """Lock OUT, and settle the seed: OUT's own, else the one given, else a fresh secret one."""
    if out.exists() and not out.is_dir():
        raise OutError(f"OUT={out} is a file; give a folder")
    if out.exists() and (out / "gradebook.csv").exists() and not (out / rec.CLASS_FILE).exists():
        raise OutError(f"{out} holds a gradebook from an earlier version of the grader; grade "
                       "into a fresh OUT")
    out.mkdir(mode=0o700, parents=True, exist_ok=True)
    out.chmod(0o700)  # the class's grades are the instructor's alone (render.py closes the rest)
    lock = _lock(out)
    try:
        given = read_seed_file(seed_file) if seed_file is not None else seed
        stored = _stored_seed(out)
        if stored is not None and given is not None and stored != given:
            raise OutError(f"{out} was graded with another seed; leave out --seed (OUT keeps its "
                           "own) or grade into a fresh OUT")
        if stored is None and (out / rec.CLASS_FILE).exists():
            raise OutError(f"{out} holds a graded class but not its seed ({rec.SEED_FILE}); "
                           "restore it, or grade the whole class into a fresh OUT")
        chosen = stored if stored is not None else given if given is not None else secrets.randbits(62)
        check_seed(chosen)
        if stored is None:
            _store_seed(out, chosen)
        info = _verified_class(out)
        records = rec.load_students(out) if info is not None else _no_class(out)
        class_id = info.class_id if info is not None and info.class_id else rec.new_class_id()
        return OutState(out, chosen, info, records, lock, class_id)
    except BaseException:
        os.close(lock)
        raise


def _verified_class(out: Path) -> ClassInfo | None:
    """OUT's class.json, or None (with the reason) when it has none the grader wrote: then
    nothing of it is used, and its students are graded again, as a new class."""
    try:
        return rec.load_class(out)
    except rec.ClassFileError as err:
        print(f"warning: {err}: nothing of it is used (lessons, points, limits, roster); OUT's "
              "students are graded again, as a new class", file=sys.stderr)
        return None


def _no_class(out: Path) -> dict[str, StudentRecord]:
    """No record belongs to a class that has no class.json: each is left out, with a line."""
    for path in rec.student_files(out):
        print(f"warning: {path} left out: it belongs to no class OUT holds (its class.json is "
              "missing or not the grader's); that student is graded again", file=sys.stderr)
    return {}


def grading_key(info: ClassInfo) -> dict:
    """What two runs into one OUT must share: the plan, the points, the grading limits."""
    data = {k: v for k, v in info.to_json().items() if k != "settings" and k not in IDENTITY}
    data["settings"] = {k: v for k, v in (info.settings or {}).items() if k not in PER_RUN}
    return data


def check_plan(state: OutState, info: ClassInfo) -> None:
    """Refuse to add students graded differently from the ones already in OUT."""
    if state.info is None:
        return
    old, new = grading_key(state.info), grading_key(info)
    differ = sorted(k for k in set(old) | set(new) if k != "settings" and old.get(k) != new.get(k))
    differ += sorted(f"settings.{k}" for k in set(old["settings"]) | set(new["settings"])
                     if old["settings"].get(k) != new["settings"].get(k))
    if differ:
        fix = ("; to change the points of the graded class, give them without SUBMISSIONS: "
               "make grade OUT=... POINTS=... (from the records, no student code runs)"
               if "points" in differ else "")
        raise OutError(f"{state.out} holds a class graded differently ({', '.join(differ)} "
                       f"differ{_what_differs(old, new, differ)}); leave the option out (a run "
                       f"into OUT grades as OUT was graded) or grade into a fresh OUT{fix}")


def _what_differs(old: dict, new: dict, differ: list[str]) -> str:
    """': OUT has lessons 00, 01, this run 00-08; ...' for the differences a person can read."""
    said = []
    for key in differ:
        if key == "lessons":
            said.append(f"OUT has lessons {', '.join(old['lessons'])}, this run "
                        f"{', '.join(new['lessons'])}")
        elif key == "assignment":
            said.append(f"OUT is the assignment {old['assignment']!r}, this run "
                        f"{new['assignment']!r}: each assignment has an OUT of its own")
        elif key == "sandbox":
            said.append(f"OUT was graded with sandbox {old['sandbox']!r}, this run "
                        f"{new['sandbox']!r} (UNSAFE=1 is never taken from OUT)")
        elif key.startswith("settings."):
            name = key.split(".", 1)[1]
            said.append(f"{name}: OUT {old['settings'].get(name)!r}, this run "
                        f"{new['settings'].get(name)!r}")
    return ": " + "; ".join(said) if said else ""


def check_names(state: OutState, names: dict[str, str]) -> None:
    """A record in OUT is its own folder's: never one another folder's report name points at."""
    for folder, name in names.items():
        record = state.records.get(name)
        if record is not None and record.student != folder:
            raise OutError(f"{state.out}/students/{name}.json is the record of another folder "
                           f"than {folder!r}; grade into a fresh OUT")
