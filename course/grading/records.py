"""What a grading run knows about each student, as plain records, and how they live in OUT.

One `CheckRecord` per graded check and one `StudentRecord` per student, written to
`OUT/students/<report name>.json` as soon as that student is graded (atomically: a temporary file,
then a rename), with the run's `ClassInfo` in `OUT/class.json`. Everything else in OUT (the
gradebook, reports, LMS files, feedback) is rendered from these records, so a stopped run keeps
every finished student, a regrade replaces only its students' records, and shards of one class
merge by taking the union of their records.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

STUDENTS_DIR = "students"
CLASS_FILE = "class.json"
SEED_FILE = ".seed"          # the run's secret seed, owner-only: regrades and shards reuse it


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

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ClassInfo":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that a reader (or a crash) sees the old file or the new one,
    never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def save_student(out: Path, record: StudentRecord) -> Path:
    path = out / STUDENTS_DIR / f"{record.report_name}.json"
    atomic_write(path, json.dumps(record.to_json(), indent=1, ensure_ascii=False))
    return path


def load_students(out: Path) -> dict[str, StudentRecord]:
    """Every student record in OUT, by report name."""
    found = {}
    for path in sorted((out / STUDENTS_DIR).glob("*.json")):
        record = StudentRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
        found[record.report_name] = record
    return found


def save_class(out: Path, info: ClassInfo) -> Path:
    path = out / CLASS_FILE
    atomic_write(path, json.dumps(info.to_json(), indent=1, ensure_ascii=False))
    return path


def load_class(out: Path) -> ClassInfo | None:
    path = out / CLASS_FILE
    if not path.exists():
        return None
    return ClassInfo.from_json(json.loads(path.read_text(encoding="utf-8")))
