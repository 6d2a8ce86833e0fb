"""What a grading run knows about each student, as plain records, and how they live in OUT.

One `CheckRecord` per graded check and one `StudentRecord` per student, written to
`OUT/students/<report name>.json` as soon as that student is graded (atomically: a temporary file,
then a rename), with the run's `ClassInfo` in `OUT/class.json`. Everything else in OUT (the
gradebook, reports, LMS files, feedback) is rendered from these records, so a stopped run keeps
every finished student, a regrade replaces only its students' records, and shards of one class
merge by taking the union of their records.

Each record (and class.json) carries a MAC: an HMAC-SHA256 keyed by the class's secret seed over
the record's canonical JSON, so a merge can tell a record the grader wrote from an edited one
(`verify`). Names that are no UTF-8 stay as they are (names.py): their stray bytes are written as
JSON escapes, so every file in OUT is UTF-8 and reads back the same.

A record belongs to one class: class.json holds a random class id, made at the class's first run,
and every record carries it (`save_student` writes OUT's), with its checks' lessons and points,
under its MAC. A record signed with the same seed for another class (another OUT, another term
or assignment graded with the same seed file) is told apart by its class id (`why_refused`).
class.json also holds the digest of the roster OUT keeps (roster.py checks the roster against
it before each use) and the class's student folders; it is verified before anything in it is
used (`load_class`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import sys
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

STUDENTS_DIR = "students"
CLASS_FILE = "class.json"
SEED_FILE = ".seed"          # the run's secret seed, owner-only: regrades and shards reuse it
MAC_FIELD = "mac"            # the record's HMAC, keyed by the seed (see `mac`)
MAX_RECORD_BYTES = 16 * 1024 * 1024  # a record file read from disk: no more
SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass
class CheckRecord:
    """One graded check of one student."""
    id: str
    lesson: str
    points: float
    earned: float
    passed: bool                 # earned its points: PASS in the notebook, confirmed on hidden inputs
    message: str                 # what the check said (the visible message), or why it was not run
    confirmed: bool | None = None  # on hidden inputs: True, False, or None when not tried
    hidden_failure: str | None = None  # the name (kind) of the hidden case that failed; never values
    blocked_by: list[str] = field(default_factory=list)  # failing checks whose exercises this one calls
    # why it failed, for the class report: kind, the hint's catalog id, the case, the root checks
    # (course/grading/causes.py); None when it passed, and in records written before it was kept
    cause: dict | None = None
    # checks of lessons this run does not grade whose exercises this one calls: confirmed with
    # the reference's code in their place (a lesson left out is no suspicion)
    stand_ins: list[str] = field(default_factory=list)


@dataclass
class StudentRecord:
    """One student's grade: the row of the gradebook and the content of the report."""
    student: str                 # the submission folder's name, as given (may be hostile text)
    report_name: str             # a safe, unique file name for reports/, raw/, students/
    status: str
    total: float
    maximum: float
    checks: list[CheckRecord]
    problems: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    other_failed_cells: list[str] = field(default_factory=list)
    seconds: float = 0.0
    unsafe: bool = False
    submission_digest: str = ""  # a hash of the files graded: tells a changed submission
    lms: str = ""                # "canvas", "moodle" (the download make collect read), or ""
    late: bool | None = None     # late by the LMS's flag and the roster's extension; None: unknown
    lms_late: bool | None = None  # the LMS's own late flag (Canvas's download), as delivered
    downloaded: str = ""         # when the download that holds these files was made (ISO time)
    extension: str = ""          # the student's own deadline, from the roster
    # files the LMS renamed, [as delivered, as graded] (Canvas's `softmax-1.py` for `softmax.py`)
    delivered: list[list[str]] = field(default_factory=list)
    class_id: str = ""           # the class it belongs to (class.json's; set by save_student)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "StudentRecord":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["checks"] = [CheckRecord(**{k: v for k, v in c.items()
                                           if k in {f.name for f in fields(CheckRecord)}})
                            for c in data.get("checks", [])]
        return cls(**values)


@dataclass
class ClassInfo:
    """What every student of one run shares: the plan, the points, the settings."""
    lessons: list[str]
    checks: list[str]            # graded check ids, in gradebook column order
    points: dict[str, float]
    settings: dict
    sandbox: str                 # "bubblewrap" or "none (UNSAFE)"
    seed_digest: str = ""        # a hash of the secret seed: shards and regrades must share it
    assignment: str = ""         # the LMS column's title ("" in classes graded before it was kept)
    class_id: str = ""           # random, made at the class's first run ("": an earlier grader's)
    roster_digest: str = ""      # sha256 of OUT/roster.csv as the grader stored it ("": none)
    folders: list[str] = field(default_factory=list)  # the class's student folders, every run

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ClassInfo":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def dumps(data) -> str:
    """JSON text that is UTF-8 whatever the names in it hold: a stray byte of a name (a lone
    surrogate) is written as its \\udcXX escape, which json.loads reads back as the same."""
    return SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}",
                         json.dumps(data, indent=1, ensure_ascii=False))


def canonical(data: dict) -> bytes:
    """The bytes a MAC covers: the record without its MAC, keys sorted, ASCII only."""
    return json.dumps({k: v for k, v in data.items() if k != MAC_FIELD}, sort_keys=True,
                      ensure_ascii=True, separators=(",", ":")).encode("ascii")


def mac_key(seed: int) -> bytes:
    return f"attention-course record mac, seed {seed}".encode()


def mac(data: dict, key: bytes) -> str:
    return hmac.new(key, canonical(data), hashlib.sha256).hexdigest()


def new_class_id() -> str:
    return secrets.token_hex(16)


def file_digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def out_key(out: Path) -> bytes | None:
    """The MAC key of the class in OUT (from OUT/.seed), or None where OUT keeps no seed."""
    try:
        return mac_key(int((Path(out) / SEED_FILE).read_text(encoding="ascii").strip()))
    except (OSError, ValueError):
        return None


def signed(data: dict, key: bytes | None) -> dict:
    data = {k: v for k, v in data.items() if k != MAC_FIELD}
    if key is not None:
        data[MAC_FIELD] = mac(data, key)
    return data


def verify(data: dict, key: bytes) -> bool:
    """Whether `data` (a record or class.json as read) carries the MAC the grader wrote."""
    told = data.get(MAC_FIELD)
    return isinstance(told, str) and hmac.compare_digest(told, mac(data, key))


def read_json(path: Path, limit: int = MAX_RECORD_BYTES):
    """A JSON file of OUT (or of a shard's OUT), read with a bound: never a link, at most `limit`."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise ValueError(f"{path} has more than {limit} bytes")
        return json.loads(handle.read(limit + 1)[:limit].decode("utf-8"))


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader (or a crash) sees the old file or the new one,
    never half of one. A stray surrogate (a name's byte that was no UTF-8) is escaped, never
    a reason to fail."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def private_tree(path: Path) -> None:
    """Every folder and file under `path` (and `path`) readable and writable by its owner only:
    what a class holds (grades, LMS ids, emails, submissions) is nobody else's. Links are left."""
    path = Path(path)
    for item in [path, *path.rglob("*")]:
        try:
            if not item.is_symlink():
                item.chmod(0o700 if item.is_dir() else 0o600)
        except OSError:  # gone meanwhile, or not ours: the owner-only parent still closes it
            continue


def save_student(out: Path, record: StudentRecord) -> Path:
    """OUT/students/<report name>.json, as a record of OUT's class (its class id set from
    class.json), with its MAC (keyed by OUT's seed)."""
    info = load_class(out)
    record.class_id = info.class_id if info is not None else ""
    path = out / STUDENTS_DIR / f"{record.report_name}.json"
    atomic_write(path, dumps(signed(record.to_json(), out_key(out))))
    return path


def student_files(out: Path) -> list[Path]:
    return sorted((out / STUDENTS_DIR).glob("*.json"))


def why_refused(data: dict, record: StudentRecord, info: ClassInfo | None, key: bytes | None,
                stem: str) -> str | None:
    """Why a record read from OUT (or a shard's OUT) is not one of its class's, or None: a MAC
    that fails (edited, or signed with another seed), another class's id, checks or points
    other than the class's, another report's name."""
    if key is not None and not verify(data, key):
        return "its MAC does not verify (edited, or signed with another seed)"
    if info is not None and record.class_id != info.class_id:
        return "it belongs to another class (its class id is not class.json's)"
    if info is not None and {c.id: c.points for c in record.checks} != {
            c: info.points.get(c) for c in info.checks}:
        return "it was graded with other checks or points than the class's"
    if record.report_name != stem:
        return "it names another report"
    return None


def load_students(out: Path) -> dict[str, StudentRecord]:
    """Every student record in OUT that the grader wrote for OUT's class, by report name. A
    record refused by `why_refused`, or that cannot be read, is left out with a warning: a
    resumed run grades that student again, and the gradebook never shows it."""
    found, key = {}, out_key(out)
    try:
        info = load_class(out)
    except ClassFileError:
        info = ClassInfo([], [], {}, {}, "", class_id="(unverified)")  # no record is its
    for path in student_files(out):
        try:
            data = read_json(path)
            record = StudentRecord.from_json(data)
            why = why_refused(data, record, info, key, path.stem)
        except Exception as err:  # noqa: BLE001 - a damaged file is that student's, not the class's
            why = f"it cannot be read ({type(err).__name__})"
        if why:
            print(f"warning: {path} left out: {why}; that student is graded again",
                  file=sys.stderr)
            continue
        found[record.report_name] = record
    return found


class ClassFileError(ValueError):
    """OUT's class.json is not what the grader wrote (the message says why)."""


def save_class(out: Path, info: ClassInfo) -> Path:
    path = out / CLASS_FILE
    atomic_write(path, dumps(signed(info.to_json(), out_key(out))))
    return path


def load_class(out: Path) -> ClassInfo | None:
    """OUT's class.json, verified (its MAC, keyed by OUT's seed); None when OUT has none.
    ClassFileError when it cannot be read or fails its MAC: nothing in it may be used."""
    path = Path(out) / CLASS_FILE
    if not path.exists():
        return None
    try:
        data = read_json(path)
        info = ClassInfo.from_json(data)
    except (OSError, ValueError, TypeError) as err:
        raise ClassFileError(f"{path} cannot be read ({type(err).__name__})") from None
    key = out_key(out)
    if key is None or not verify(data, key):
        raise ClassFileError(f"{path} fails its MAC (edited, or not written with OUT's seed)")
    return info
