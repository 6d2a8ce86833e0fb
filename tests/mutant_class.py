"""A class made of the course's own mutants: each student the solutions with one known bug
(tests/mutants/lessonNN.py), so the class page's causes can be checked against the cause each
mutant names.

    students = write_mutant_class(subs, ["00", "01", "02"])     # folder name -> Mutant
    verdict = attribution(mutant, rows, message)                 # "right", "wrong", ...

A mutant names its cause by a fragment of the message its check must print (`Mutant.hint`) or
by whole lines of it (`Mutant.exact`, whose `hint:` line is the hint). The class page attributes a
student to a cause: the hint's catalog id, and under a crash's hint the id of what the failing
case tests (the note the check prints under it). The attribution is right when the text the
mutant names is in the part of the student's graded message that the page's cause stands for:
a line holding the fragment (its label taken off) is an instance of the cause's template, or of
the failing case's; an exact `hint:` line is an instance of the cause's template. It is wrong when
the page names a cause for the mutant's check whose text does not hold it.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from course import ROOT
from course.grading.causes import CAUSE_IDS, PLACEHOLDER, UNKNOWN
from tests.mutation import Mutant, all_mutants, visible_only_mutants

PERFECT = "perfect"


def mutants_of(lessons) -> list[Mutant]:
    return [m for m in all_mutants() + visible_only_mutants() if m.check[:2] in set(lessons)]


def write_mutant_class(subs: Path, lessons) -> dict[str, Mutant]:
    """One folder per mutant of `lessons` (and one perfect student): folder name -> mutant."""
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    students, counts = {}, {}
    for mutant in mutants_of(lessons):
        counts[mutant.check] = counts.get(mutant.check, 0) + 1
        name = f"{mutant.check.replace('.', '_')}_{counts[mutant.check]:02d}"
        source = perfect[mutant.file]
        assert source.count(mutant.find) == 1, mutant.id
        files = {**perfect, mutant.file: source.replace(mutant.find, mutant.replace)}
        folder = subs / name / "exercises"
        folder.mkdir(parents=True)
        for file, text in files.items():
            (folder / file).write_text(text)
        students[name] = mutant
    folder = subs / PERFECT / "exercises"
    folder.mkdir(parents=True)
    for file, text in perfect.items():
        (folder / file).write_text(text)
    return students


def cause_rows(out: Path) -> list[dict]:
    """OUT/class/causes.csv as dicts keyed by the English column names (its first columns)."""
    text = (out / "class" / "causes.csv").read_text(encoding="utf-8")
    keys = ["lesson", "check", "rank", "n", "where", "cause", "cause_text", "tests", "tests_text",
            "taught", "blocks", "students"]
    rows = list(csv.reader(io.StringIO(text)))[1:]
    found = []
    for row in rows:
        data = dict(zip(keys, row))
        for key in ("cause", "tests", "students"):
            data[key] = data[key][1:] if data[key].startswith("'") else data[key]
        data["students"] = data["students"].split()
        found.append(data)
    return found


def _instance(template: str, text: str) -> bool:
    """Whether `text` is `template` with its placeholders filled."""
    pieces, last = [], 0
    for match in PLACEHOLDER.finditer(template):
        pieces.append(re.escape(template[last:match.start()]))
        pieces.append(re.escape(match.group(0)[0]) if match.group(0) in ("{{", "}}") else "(.*?)")
        last = match.end()
    pieces.append(re.escape(template[last:]))
    return re.fullmatch("".join(pieces), text.strip(), re.DOTALL) is not None


def _labelled(line: str) -> list[str]:
    """A message line and the same without its label ("hint: ", "this case tests: ")."""
    line = line.strip()
    return [line] + ([line.split(": ", 1)[1]] if ": " in line else [])


def attribution(mutant: Mutant, rows: list[dict], message: str) -> str:
    """'right', 'wrong', 'unnamed' (no named cause for its check), 'elsewhere' (a named cause
    whose text the fragment is not in, but the fragment is in the problem the check found: the
    evidence, not the hint) or 'missing' (no root failure on its check)."""
    mine = [r for r in rows if r["check"] == mutant.check]
    if not mine:
        return "missing"
    named = [r for r in mine if r["cause"] and r["cause"] not in (UNKNOWN, *CAUSE_IDS)]
    if not named:
        return "unnamed"
    row = named[0]
    templates = [t for t in (row["cause"], row["tests"]) if t]
    exact = [line.split("hint: ", 1)[1] for line in mutant.exact if line.startswith("hint: ")]
    if exact:
        return "right" if all(_instance(row["cause"], line) for line in exact) else "wrong"
    if not mutant.hint:
        return "right"      # the mutant names no hint, only what its check found
    lines = [line for line in message.splitlines() if mutant.hint in line]
    if any(_instance(t, text) for line in lines for text in _labelled(line) for t in templates):
        return "right"
    if any(mutant.hint in t for t in templates):
        return "right"
    first = [line for line in message.splitlines()[1:2] if mutant.hint in line]
    return "elsewhere" if first else "wrong"
