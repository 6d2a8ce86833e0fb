"""The converter: a Chinese lesson source of the older format into prose only (course/zh_source.py).

    python -m course.zh_convert --convert 09   # turn notebooks/src/zh/09_*.py into prose only

The converter turns a Chinese source of the old format (every cell, code included, the code
cells' comments translated in place) into the new one: it checks that every code cell is the
English code, takes each translated comment into the catalog (matched to its English comment by
position: the same code tokens before it), and writes the markdown cells alone. It works on any
lesson; it reports each comment it could not match, which then stays English until translated
in the catalog (`make messages` lists it).
"""
from __future__ import annotations

import argparse
import difflib
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import jupytext

from course import ROOT
from course.stub_text import CJK, Piece
from course.zh_source import ZH, comment_pieces, english_of, is_prose_only



@dataclass
class Conversion:
    source: str                        # the prose-only Chinese source
    translations: dict[str, str]       # English comment -> its Chinese, from the old source
    unmatched: list[str]               # what could not be matched, one line each


def _token_positions(code: str) -> list[tuple[int, int]]:
    """Where each token of `code` that is code (not a comment, not a line break) starts."""
    tokens = tokenize.generate_tokens(io.StringIO(code).readline)
    return [t.start for t in tokens
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER)]


def _slot(piece: Piece, positions: list[tuple[int, int]], lines: list[str]) -> tuple[int, bool]:
    """(how many code tokens come before the piece, whether it ends a line of code)."""
    before = sum(1 for position in positions if position < piece.start)
    return before, bool(lines[piece.start[0] - 1][:piece.start[1]].strip())


def _chinese_text(piece: Piece, lines: list[str]) -> str:
    """A Chinese comment paragraph as one line: its lines joined without a space between two
    Chinese characters (a space where Latin text meets Latin text)."""
    if piece.kind == "noqa":
        return piece.message
    (first, col), (last, _end) = piece.start, piece.end
    joined = _joined([lines[n - 1][col if n == first else 0:].strip().lstrip("#").strip()
                      for n in range(first, last + 1)])
    return joined.removeprefix("提示：").removeprefix("提示:").strip() if piece.hint else joined


def _joined(texts: list[str]) -> str:
    """Lines of one text joined: no space where a Chinese character or mark meets the next line."""
    joined = ""
    for text in texts:
        if joined and text and not (CJK.match(joined[-1]) or CJK.match(text[0])):
            joined += " "
        joined += text
    return joined


def _comment_translations(en_code: str, zh_code: str, where: str) -> tuple[dict[str, str], list[str]]:
    """English comment -> Chinese comment for one pair of code cells with the same code."""
    en_lines, zh_lines = en_code.splitlines(), zh_code.splitlines()
    en_slots: dict[tuple[int, bool], list[Piece]] = {}
    zh_slots: dict[tuple[int, bool], list[Piece]] = {}
    for code, lines, slots in ((en_code, en_lines, en_slots), (zh_code, zh_lines, zh_slots)):
        positions = _token_positions(code)
        for piece in comment_pieces(code):
            slots.setdefault(_slot(piece, positions, lines), []).append(piece)
    found, unmatched = {}, []
    for slot, english in en_slots.items():
        chinese = zh_slots.get(slot, [])
        if len(chinese) == len(english):
            pairs = [(en, _chinese_text(zh, zh_lines)) for en, zh in zip(english, chinese)]
        elif len(english) == 1 and chinese:  # one English paragraph, written as several
            pairs = [(english[0], _joined([_chinese_text(zh, zh_lines) for zh in chinese]))]
        else:
            unmatched += [f"{where}: no Chinese comment matches {p.message[:60]!r}" for p in english]
            continue
        for en, text in pairs:
            if not CJK.search(text):
                continue  # not translated (a comment that is code, or English left as it was)
            if found.get(en.message, text) != text:
                unmatched.append(f"{where}: {en.message[:60]!r} has two translations; kept the first")
                continue
            found[en.message] = text
    return found, unmatched


def convert(chinese: Path, english: Path | None = None) -> Conversion:
    """The prose-only form of an old-format Chinese source, and its comments' translations."""
    from course.drift import code_without_comments, without_header

    english = english or english_of(chinese)
    en_cells, zh_cells = jupytext.read(english).cells, jupytext.read(chinese).cells
    name = chinese.name
    if [c.cell_type for c in en_cells] != [c.cell_type for c in zh_cells]:
        matcher = difflib.SequenceMatcher(a=[c.cell_type for c in en_cells],
                                          b=[c.cell_type for c in zh_cells], autojunk=False)
        raise ValueError(f"{name}: its cells do not follow {english.name} one for one "
                         f"({len(zh_cells)} cells against {len(en_cells)}; first difference near "
                         f"cell {matcher.get_matching_blocks()[0].size}): bring it in step first "
                         f"(`python -m course.drift`)")
    translations: dict[str, str] = {}
    unmatched: list[str] = []
    for index, (en, zh) in enumerate(zip(en_cells, zh_cells)):
        if en.cell_type != "code":
            continue
        if code_without_comments(en.source) != code_without_comments(zh.source):
            raise ValueError(f"{name} cell {index}: its code differs from {english.name} cell "
                             f"{index} (only comments may): copy the English code first")
        found, missing = _comment_translations(en.source, zh.source, f"{name} cell {index}")
        for message, text in found.items():
            if translations.get(message, text) != text:
                unmatched.append(f"{name} cell {index}: {message[:60]!r} has two translations; kept the first")
                continue
            translations[message] = text
        unmatched += missing
    notebook = jupytext.read(chinese)
    notebook.cells = [cell for cell in notebook.cells if cell.cell_type == "markdown"]
    notebook.metadata = {}
    return Conversion(without_header(jupytext.writes(notebook, fmt="py:percent")), translations,
                      unmatched)


def take_into_catalog(translations: dict[str, str], root: Path = ROOT) -> tuple[int, list[str]]:
    """Bring the catalog in step with the code (`make messages`), then fill each empty entry
    whose English is a key of `translations`: (entries filled, entries that already held another
    translation)."""
    from course.i18n import CHINESE, catalog_path
    from course.messages import read_catalog, update, write_catalog

    update(root)
    path = catalog_path(CHINESE, root / "course" / "locale")
    catalog = read_catalog(path)
    filled, kept = 0, []
    for message, text in translations.items():
        entry = catalog.get(message)
        if entry is None:
            kept.append(f"{message[:60]!r}: not in the catalog (not a comment of the English code?)")
        elif not entry.string or entry.fuzzy:
            entry.string, filled = text, filled + 1
            entry.flags.discard("fuzzy")
        elif entry.string != text:
            kept.append(f"{message[:60]!r}: the catalog's {entry.string[:40]!r} kept")
    write_catalog(catalog, path)
    return filled, kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Chinese sources that hold prose only")
    parser.add_argument("--convert", metavar="LESSON", nargs="+",
                        help="turn notebooks/src/zh/LESSON*.py (old format) into prose only")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course (default: this one)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not args.convert:
        parser.print_help()
        return 2
    conversions = []
    for lesson in args.convert:
        found = sorted((root / ZH).glob(f"{lesson}*.py"))
        if len(found) != 1:
            parser.error(f"no single Chinese source starts with {lesson!r}")
        if is_prose_only(found[0]):
            print(f"{found[0].relative_to(root)} holds prose only already")
            continue
        conversions.append((found[0], convert(found[0])))  # every one checked before any is written
    translations: dict[str, str] = {}
    for path, conversion in conversions:
        path.write_text(conversion.source)
        for message, text in conversion.translations.items():
            translations.setdefault(message, text)
        print(f"wrote {path.relative_to(root)}: markdown cells only; "
              f"{len(conversion.translations)} comment translation(s) found")
        for line in conversion.unmatched:
            print(f"  {line}")
    if conversions:
        filled, kept = take_into_catalog(translations, root)
        print(f"catalog: {filled} comment translation(s) added")
        for line in kept:
            print(f"  {line}")
        print("then: `make messages` lists what is left to translate, and "
              "`make notebooks LANG=zh NB=...` rebuilds the notebooks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
