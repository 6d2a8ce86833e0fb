"""What is wrong between a lesson and its ledger: every problem the claims test fails on.

problems(lesson) runs each check on both languages and returns Problem(lesson, check, message);
the test fails on any. The checks, in order: form (ledger.py), drift, uncovered, computed,
arithmetic, numbers, verdict, zh numbers, review, rendered.
"""
from __future__ import annotations

import ast
import bisect
import math
import operator
import re
from dataclasses import dataclass
from pathlib import Path

from course import ROOT
from course.claims import CLAIMS
from course.claims.ledger import Ledger, Row, load, shown
from course.claims.prose import (Lesson, Sentence, normalise, numbers, read_lesson, value,
                                 verdicts)
from course.zh_numbers import row_problems as zh_row_problems

# what a lesson's committed outputs print, read generously: 0.6 in "x0.6", 8.65 in "8.65MB"
# (a range 0..996 counts its ends; the digits after a decimal point are no number of their own)
OUTPUT_NUMBER = re.compile(r"(?<!\d)(?<!\d\.)(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\d)")
CHECKS = ("form", "drift", "uncovered", "computed", "arithmetic", "numbers", "verdict",
          "zh numbers", "review", "rendered")


@dataclass(frozen=True)
class Problem:
    lesson: str
    check: str
    message: str

    def __str__(self) -> str:
        return f"[{self.check}] {self.message}"


def locate(fragment: str, lesson: Lesson) -> list[tuple[int, int, int]]:
    """Where a row's words stand in the lesson: (markdown cell, start, end) of every occurrence."""
    words = normalise(fragment)
    found = []
    if not words:
        return found
    for cell, text in lesson.cells.items():
        start = text.find(words)
        while start >= 0:
            found.append((cell, start, start + len(words)))
            start = text.find(words, start + 1)
    return found


def covering(sentence: Sentence, rows: list[Row], places: dict[str, list]) -> list[Row]:
    """The rows whose words overlap the sentence in its cell."""
    return [row for row in rows
            if any(cell == sentence.cell and start < sentence.end and sentence.start < end
                   for cell, start, end in places[row.id])]


def precision(token: str) -> float:
    """Half a unit of the last digit the token writes: 0.67 -> 0.005, 20,608 -> 0.5, 1.8e308 -> 5e306."""
    mantissa, _, exponent = token.replace(",", "").lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


class Shown:
    """The values a notebook shows: its committed outputs and the literals of its code."""

    def __init__(self, lesson: Lesson):
        self.values = sorted({value(m[0]) for text in lesson.outputs for m in OUTPUT_NUMBER.finditer(text)})
        self.literals = lesson.literals

    def has(self, token: str) -> bool:
        quoted, tolerance = value(token), precision(token)
        if quoted in self.literals:
            return True
        for target, tol in ((quoted, tolerance), (quoted / 100, tolerance / 100)):  # 99 % = 0.993
            slack = tol * (1 + 1e-9) + 1e-12
            index = bisect.bisect_left(self.values, target - slack)
            if index < len(self.values) and self.values[index] <= target + slack:
                return True
        return False


# ---------------------------------------------------------------------------------------------
# arithmetic: "4·256² + 256 = 262,400", "√(300/4) ≈ 8.7" are evaluated


OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
             ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg}
FUNCTIONS = {"sqrt": math.sqrt, "log": math.log, "exp": math.exp, "log2": math.log2}


def _evaluate(node):
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) in FUNCTIONS and len(node.args) == 1:
        return FUNCTIONS[node.func.id](_evaluate(node.args[0]))
    raise ValueError("not arithmetic")


def as_python(expression: str) -> str:
    text = expression.strip()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)                  # 20,608
    for old, new in (("·", "*"), ("×", "*"), ("−", "-"), ("–", "-"), ("^", "**"), ("²", "**2"),
                     ("³", "**3"), ("√", "sqrt"), ("ln", "log")):
        text = text.replace(old, new)
    return text


def arithmetic_problem(formula: str) -> str | None:
    """None when the formula checks out or is not plain arithmetic; else what is wrong."""
    parts = re.split(r"\s(?:=|≈)\s", formula)
    if len(parts) < 2:
        return None
    stated = parts[-1].strip().rstrip(".").split()[0] if parts[-1].strip() else ""
    if not re.fullmatch(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?", stated):
        return None
    for left in parts[:-1]:
        try:
            got = _evaluate(ast.parse(as_python(left), mode="eval"))
        except (ValueError, SyntaxError, TypeError, ZeroDivisionError, OverflowError):
            continue
        if abs(got - value(stated)) > precision(stated) * (1 + 1e-9) + 1e-12:
            return f"{left.strip()} = {got:.6g}, not {stated}"
    return None


# ---------------------------------------------------------------------------------------------


def test_exists(node: str, root: Path = ROOT) -> bool:
    """Whether a pytest node id (file::function, file::Class::method, with [params]) exists."""
    path, _, rest = node.partition("::")
    file = root / path
    if not file.is_file() or not rest:
        return file.is_file() and not rest
    name = rest.split("::")[-1].split("[")[0]
    tree = ast.parse(file.read_text(encoding="utf-8"))
    return any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
               for n in ast.walk(tree))


def in_notebook(fragment: str, lesson: Lesson) -> bool:
    words = " ".join(fragment.split())
    return any(words in " ".join(text.split()) for text in lesson.code + lesson.outputs)


def _sentence_candidates(lesson: Lesson, cell: int, like: str) -> list[str]:
    """The sentences of a cell that hold the same numbers as `like` (to say what a row now matches)."""
    wanted = {value(n) for n in numbers(like)}
    found = [s.text for s in lesson.sentences if s.cell == cell]
    if wanted:
        found = [t for t in found if wanted <= {value(n) for n in numbers(t)}] or found
    return found[:3]


def drift(ledger: Ledger, en: Lesson, zh: Lesson | None) -> tuple[list[str], dict, dict]:
    """Rows whose words left the lesson; and where each row's words stand, per language."""
    found, places_en, places_zh = [], {}, {}
    for row in ledger.rows:
        places_en[row.id] = locate(row.en, en)
        if not places_en[row.id]:
            found.append(f"{row.id}: its en words no longer occur in {shown(en.source)}: {row.en!r}")
        if zh is None:
            places_zh[row.id] = []
            continue
        places_zh[row.id] = locate(row.zh, zh)
        en_cells = {cell for cell, _, _ in places_en[row.id]}
        if not places_zh[row.id]:
            hint = ""
            for cell in sorted(en_cells):
                candidates = _sentence_candidates(zh, cell, row.en)
                hint += (f"\n    Chinese cell {cell} (which translates the English cell holding en) "
                         f"now reads: " + " | ".join(repr(c) for c in candidates))
            found.append(f"{row.id}: its zh words no longer occur in {shown(zh.source)} (the Chinese "
                         f"lesson changed: copy the claim's words as they now stand): {row.zh!r}{hint}")
        elif en_cells and not en_cells & {cell for cell, _, _ in places_zh[row.id]}:
            found.append(f"{row.id}: its zh words stand in Chinese cell(s) "
                         f"{sorted({c for c, _, _ in places_zh[row.id]})}, but its en words in "
                         f"English cell(s) {sorted(en_cells)}: a row pairs a claim with its own "
                         f"translation")
    return found, places_en, places_zh


def prose_problems(lesson: Lesson, rows: list[Row], places: dict, english: Lesson) -> list[tuple]:
    """(check, message) for the factual sentences of one language: uncovered, numbers, verdict."""
    found, shown_values = [], Shown(lesson)
    for sentence, why in lesson.factual():
        rows_here = covering(sentence, rows, places)
        where = f"{shown(lesson.source)} cell {sentence.cell}"
        if not rows_here:
            found.append(("uncovered", f"{where}: no row covers this sentence ({', '.join(why)}): "
                                       f"{sentence.text!r}"))
        sourced = {value(n) for row in rows_here if row.kind in ("sourced", "arithmetic")
                   for n in numbers(row.en if lesson.lang == "en" else row.zh)}
        for token in numbers(sentence.text):
            if value(token) not in sourced and not shown_values.has(token):
                found.append(("numbers", f"{where}: {token} is neither printed by the notebook (to "
                                         f"the precision quoted) nor held by a sourced or arithmetic "
                                         f"row: {sentence.text!r}"))
        typed = verdicts(sentence.text)
        if typed and lesson.times_things and not any(
                (row.kind == "computed" and in_notebook(row.cell, english)) or row.kind == "sourced"
                for row in rows_here):
            lines = " | ".join(lesson.timing_lines()[:4]) or "(no timing line)"
            found.append(("verdict", f"{where}: a machine-dependent verdict ({', '.join(typed)}) is "
                                     f"typed in prose, while the notebook times things and prints: "
                                     f"{lines}. Print the verdict from the measurement (a computed "
                                     f"row names the cell): {sentence.text!r}"))
    return found


def row_problems(rows: list[Row], en: Lesson, zh: Lesson | None, root: Path) -> list[tuple]:
    """(check, message) for the rows themselves: computed cells and tests, arithmetic, zh numbers."""
    found = []
    for row in rows:
        if row.kind == "computed" and not in_notebook(row.cell, en):
            found.append(("computed", f"{row.id}: its cell {row.cell!r} is in no code cell and no "
                                      f"committed output of the English notebook"))
        if row.test and not test_exists(row.test, root):
            found.append(("computed", f"{row.id}: its test {row.test} does not exist"))
        if row.kind == "arithmetic" and (wrong := arithmetic_problem(row.formula)):
            found.append(("arithmetic", f"{row.id}: {wrong} ({row.formula!r})"))
        if zh is not None:
            found += [("zh numbers", f"{row.id}: {p}") for p in zh_row_problems(row.en, row.zh)]
    return found


def record_problems(ledger: Ledger, rendered: bool) -> list[tuple]:
    """(check, message) for the review record and the rendered page."""
    found = []
    if not ledger.reviews:
        found.append(("review", f"{shown(ledger.path)} has no [[reviews]] record: a lesson is read "
                                f"against its sources by someone who did not write it"))
    for review in ledger.reviews:
        if review.wrong > review.fixed:
            found.append(("review", f"{shown(ledger.path)}: the review by {review.reader} found "
                                    f"{review.wrong} wrong and fixed {review.fixed}"))
    if rendered:
        from course.claims.render import render
        page = ledger.path.with_suffix(".md")
        if not page.exists() or page.read_text(encoding="utf-8") != render(ledger):
            found.append(("rendered", f"{shown(page)} is not rendered from {shown(ledger.path)}: "
                                      f"run `python -m course.claims --render`"))
    return found


def check(lesson_number: str, root: Path = ROOT, folder: Path = CLAIMS,
          rendered: bool = True) -> list[Problem]:
    """Every problem of one lesson's ledger, both languages (a lesson without a ledger is judged
    as one with no rows: every factual sentence is uncovered)."""
    en, zh = read_lesson(lesson_number, "en", root), read_lesson(lesson_number, "zh", root)
    if en is None:
        return []
    ledger, found = load(lesson_number, folder), []
    if ledger is None:
        path = folder / f"{lesson_number}.toml"
        found.append(("form", f"lesson {lesson_number} has no ledger: write {shown(path)} (`python "
                              f"-m course.claims --lesson {lesson_number} --draft` starts one)"))
        ledger = Ledger(lesson_number, path)
    else:
        found += record_problems(ledger, rendered)
    found += [("form", p) for p in ledger.problems]
    drifted, places_en, places_zh = drift(ledger, en, zh)
    found += [("drift", m) for m in drifted]
    for lesson, places in ((en, places_en), (zh, places_zh)):
        if lesson is not None:
            found += prose_problems(lesson, ledger.rows, places, en)
    found += row_problems(ledger.rows, en, zh, root)
    order = {name: index for index, name in enumerate(CHECKS)}
    return [Problem(lesson_number, kind, message)
            for kind, message in sorted(found, key=lambda item: order[item[0]])]
