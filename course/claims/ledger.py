"""docs/claims/NN.toml: one lesson's claims and its reviews, read and checked for form.

    lesson = "04"

    [[claims]]
    id = "04.07"          # lesson-prefixed, stable
    en = "words exactly as they stand in one English markdown cell (whitespace may differ)"
    zh = "the same claim's words in the Chinese cell that translates it"
    kind = "sourced"      # sourced | computed | arithmetic | judgement
    source = "paper + section, or repo@commit path:line, or manual + section"   # sourced
    cell = "a unique fragment of the code cell, or of its printed output"       # computed
    test = "tests/test_lesson04.py::test_name"      # computed (or any kind): re-checks it
    formula = "4·256² + 256 = 262,400"              # arithmetic (evaluated when it can be)
    evidence = "what the judgement rests on"        # judgement
    verified = "how it was verified and against what"
    corrects = "optional: the ERRATA item or seed statement this row corrects"

    [[reviews]]
    reader = "who checked (not the lesson's author)"
    commit = "the commit read"
    sources = ["papers, repositories at commits"]
    checked = 63
    wrong = 4
    imprecise = 11
    fixed = 15
    notes = "what was found and how each was fixed"

Words match after links become their text, `*` emphasis marks go and whitespace collapses
(prose.normalise): copy them from the lesson source.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from course import ROOT
from course.claims import CLAIMS

KINDS = {"sourced": "source", "computed": "cell", "arithmetic": "formula", "judgement": "evidence"}
ROW_FIELDS = {"id", "en", "zh", "kind", "source", "cell", "test", "formula", "evidence", "verified",
              "corrects"}
REVIEW_FIELDS = {"reader", "commit", "sources", "checked", "wrong", "imprecise", "fixed", "notes"}
COUNTS = ("checked", "wrong", "imprecise", "fixed")


@dataclass(frozen=True)
class Row:
    id: str
    en: str
    zh: str
    kind: str
    verified: str
    source: str = ""
    cell: str = ""
    test: str = ""
    formula: str = ""
    evidence: str = ""
    corrects: str = ""


@dataclass(frozen=True)
class Review:
    reader: str
    commit: str
    sources: tuple[str, ...]
    checked: int
    wrong: int
    imprecise: int
    fixed: int
    notes: str


@dataclass
class Ledger:
    lesson: str
    path: Path
    rows: list[Row] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # of form: a field missing, a bad kind...

    def by_kind(self) -> dict[str, int]:
        return {kind: sum(row.kind == kind for row in self.rows) for kind in KINDS}


def shown(path: Path) -> str:
    """A path as messages show it: relative to the course when it lies inside."""
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def ledger_path(lesson: str, folder: Path = CLAIMS) -> Path:
    return folder / f"{lesson}.toml"


def load(lesson: str, folder: Path = CLAIMS) -> Ledger | None:
    """The lesson's ledger, with what is wrong in its form; None when it has none."""
    path = ledger_path(lesson, folder)
    if not path.exists():
        return None
    ledger = Ledger(lesson, path)
    where = shown(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        ledger.problems.append(f"{where}: not valid TOML: {error}")
        return ledger
    if data.get("lesson") != lesson:
        ledger.problems.append(f"{where}: lesson = {data.get('lesson')!r}, expected {lesson!r}")
    seen = set()
    for index, raw in enumerate(data.get("claims", [])):
        name = raw.get("id", f"claim #{index + 1}")
        unknown = set(raw) - ROW_FIELDS
        missing = [f for f in ("id", "en", "zh", "kind", "verified") if not str(raw.get(f, "")).strip()]
        kind = raw.get("kind")
        if unknown:
            ledger.problems.append(f"{where} {name}: unknown field(s) {', '.join(sorted(unknown))}")
        if missing:
            ledger.problems.append(f"{where} {name}: {', '.join(missing)} missing")
        if kind not in KINDS:
            ledger.problems.append(f"{where} {name}: kind {kind!r} is none of {', '.join(KINDS)}")
        elif not str(raw.get(KINDS[kind], "")).strip():
            ledger.problems.append(f"{where} {name}: a {kind} claim needs `{KINDS[kind]}`")
        if not str(name).startswith(f"{lesson}."):
            ledger.problems.append(f"{where} {name}: ids start with the lesson, {lesson}.")
        if name in seen:
            ledger.problems.append(f"{where} {name}: the id is used twice")
        seen.add(name)
        if not (unknown or missing) and kind in KINDS:
            ledger.rows.append(Row(**{k: str(v) for k, v in raw.items()}))
    for index, raw in enumerate(data.get("reviews", [])):
        missing = sorted(REVIEW_FIELDS - set(raw))
        if missing or set(raw) - REVIEW_FIELDS:
            ledger.problems.append(f"{where} review #{index + 1}: fields missing {missing} or unknown "
                                   f"{sorted(set(raw) - REVIEW_FIELDS)}")
            continue
        bad = [c for c in COUNTS if not isinstance(raw[c], int) or raw[c] < 0]
        if bad:
            ledger.problems.append(f"{where} review #{index + 1}: {', '.join(bad)} must be counts")
            continue
        ledger.reviews.append(Review(raw["reader"], raw["commit"], tuple(raw["sources"]),
                                     *(raw[c] for c in COUNTS), raw["notes"]))
    unknown_tables = set(data) - {"lesson", "claims", "reviews"}
    if unknown_tables:
        ledger.problems.append(f"{where}: unknown key(s) {', '.join(sorted(unknown_tables))}")
    return ledger
