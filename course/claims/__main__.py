"""python -m course.claims: claims per lesson by kind, and the factual sentences no row covers."""
from __future__ import annotations

import argparse
import re
import sys

from course.claims import CLAIMS, NOT_YET_LEDGERED
from course.claims.checks import check, covering, drift, locate
from course.claims.ledger import KINDS, load
from course.claims.prose import lesson_numbers, numbers, read_lesson
from course.claims.render import render


def _pair(english: str, position: float, chinese: list[str]) -> str:
    """The Chinese sentence most like an English one: the same numbers and Latin words, then the
    same place in the cell (position: where the English sentence sits, from 0 to 1)."""
    def marks(text: str) -> set[str]:
        return set(numbers(text)) | set(re.findall(r"[A-Za-z][\w-]*\d[\w-]*|[A-Z][A-Za-z]{2,}|`[^`]+`", text))
    wanted = marks(english)
    ranked = [(len(wanted & marks(text)), -abs(index / max(len(chinese) - 1, 1) - position), text)
              for index, text in enumerate(chinese)]
    return max(ranked)[2] if ranked else ""


def _draft(lesson_number: str) -> str:
    """TOML rows for the English sentences no row covers, each with its likeliest Chinese sentence."""
    en, zh = read_lesson(lesson_number, "en"), read_lesson(lesson_number, "zh")
    ledger = load(lesson_number)
    rows = ledger.rows if ledger else []
    places = {row.id: locate(row.en, en) for row in rows}
    out, count = [], len(rows)
    for sentence, why in en.factual():
        if covering(sentence, rows, places):
            continue
        count += 1
        chinese = [s.text for s in (zh.sentences if zh else []) if s.cell == sentence.cell]
        english = [s for s in en.sentences if s.cell == sentence.cell]
        position = english.index(sentence) / max(len(english) - 1, 1)
        out += ["[[claims]]", f'id = "{lesson_number}.{count:02d}"', f"en = {_toml(sentence.text)}",
                f"zh = {_toml(_pair(sentence.text, position, chinese))}",
                f'kind = ""  # cell {sentence.cell}: {", ".join(why)}', 'verified = ""', ""]
    return "\n".join(out)


def _toml(text: str) -> str:
    return '"""' + text.replace("\\", "\\\\") + '"""'


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m course.claims", description=__doc__)
    parser.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
    parser.add_argument("--problems", action="store_true", help="list every problem")
    parser.add_argument("--sentences", action="store_true", help="each factual sentence and its rows")
    parser.add_argument("--draft", action="store_true", help="TOML rows for the uncovered sentences")
    parser.add_argument("--render", action="store_true", help="write docs/claims/NN.md")
    parser.add_argument("--strict", action="store_true", help="judge NOT_YET_LEDGERED lessons too")
    args = parser.parse_args(argv)
    lessons = args.lesson or lesson_numbers()

    if args.draft:
        for lesson in lessons:
            print(_draft(lesson))
        return 0
    if args.render:
        for lesson in lessons:
            ledger = load(lesson)
            if ledger is not None:
                ledger.path.with_suffix(".md").write_text(render(ledger), encoding="utf-8")
                print(f"wrote {ledger.path.with_suffix('.md').relative_to(CLAIMS.parent.parent)}")
        return 0

    failing = 0
    print(f"{'lesson':6} {'claims':>6} " + " ".join(f"{k:>10}" for k in KINDS)
          + f" {'uncovered en':>12} {'uncovered zh':>12} {'problems':>8}  review")
    for lesson in lessons:
        ledger = load(lesson)
        found = check(lesson)
        uncovered = {lang: sum(p.check == "uncovered" and f"/src/{'zh/' if lang == 'zh' else ''}{lesson}_"
                               in p.message for p in found) for lang in ("en", "zh")}
        counts = ledger.by_kind() if ledger else dict.fromkeys(KINDS, 0)
        review = ("; ".join(f"{r.checked} checked, {r.wrong} wrong, {r.imprecise} imprecise, "
                            f"{r.fixed} fixed" for r in ledger.reviews) if ledger else "none")
        allowed = lesson in NOT_YET_LEDGERED and not args.strict
        note = f"  (not yet ledgered, allowed for now: {NOT_YET_LEDGERED[lesson]})" if allowed else ""
        print(f"{lesson:6} {len(ledger.rows) if ledger else 0:>6} "
              + " ".join(f"{counts[k]:>10}" for k in KINDS)
              + f" {uncovered['en']:>12} {uncovered['zh']:>12} {len(found):>8}  {review}{note}")
        failing += bool(found) and not allowed
        if args.sentences:
            en = read_lesson(lesson, "en")
            rows = ledger.rows if ledger else []
            _, places, _ = drift(ledger, en, None) if ledger else ([], {}, {})
            for sentence, why in en.factual():
                ids = [row.id for row in covering(sentence, rows, places)] or ["UNCOVERED"]
                print(f"  cell {sentence.cell:>2} {','.join(ids):>14}  {sentence.text[:110]}")
        if args.problems or (found and not allowed):
            for item in found:
                print(f"  {item}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
