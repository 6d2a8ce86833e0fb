"""Numbers in the Chinese edition: each one is in the English it translates, or in the code.

The claims ledger (course/claims) holds each claim in both languages; `row_problems` checks that
the two state the same numbers.

A Chinese cell (or README section) states no number its English cell lacks: the drift check
(course/drift.py) compares them after reading a few ways of writing the same number alike
(thousands separators, 1e-09 and 1e-9, English number words such as "ones" or "two", the 1 of a
fraction 1/N that Chinese prefers to "N times lower").

Text that exists only in the Chinese edition (a note for Chinese readers) is marked, and names
where its numbers come from:

    <!-- zh-only: README.md --> （中文版的检查信息……容差 1e-09 + 1e-07*|expected|……）

The marked text runs from the marker to `<!-- /zh-only -->`, or else to the end of its paragraph.
Its numbers must be in the English cell or section, or in one of the named files (paths relative
to the course, separated by commas): the English README that quotes the same output, the module
that sets a tolerance. Markers are HTML comments, which neither Jupyter nor GitHub shows.
"""
from __future__ import annotations

import re
from pathlib import Path

NUMBER = re.compile(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
FRACTION_ONE = re.compile(r"(?<![\w.])1/(?=[\d{])")  # the 1 of 1/11 ("降为 1/11")
ZH_ONLY = re.compile(r"<!--\s*zh-only(?::\s*(?P<sources>[^>]*?))?\s*-->(?P<text>.*?)"
                     r"(?:<!--\s*/zh-only\s*-->|(?=\n\s*\n)|\Z)", re.S)
EN_COMMENT = re.compile(r'<!-- en="[0-9a-f]{12}" -->')
WORDS = {"zero": 0, "no": 0, "one": 1, "ones": 1, "once": 1, "first": 1, "single": 1, "a": 1,
         "two": 2, "twice": 2, "second": 2, "both": 2, "pair": 2, "three": 3, "third": 3,
         "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
         "half": 0.5, "hundred": 100, "thousand": 1000}


def numbers(text: str) -> set[float]:
    """The values of the numbers written in `text` (20,608 and 20608 alike; 1e-09 and 1e-9 alike)."""
    return {float(match[0].replace(",", "")) for match in NUMBER.finditer(EN_COMMENT.sub("", text))}


def english_numbers(text: str) -> set[float]:
    """The numbers of an English text, with those it writes as words."""
    words = {WORDS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in WORDS}
    return numbers(text) | {float(w) for w in words}


def zh_only(text: str) -> list[tuple[list[str], str]]:
    """The marked Chinese-only passages of `text`: (the files named as their sources, the text)."""
    return [([s.strip() for s in (m["sources"] or "").split(",") if s.strip()], m["text"])
            for m in ZH_ONLY.finditer(text)]


def problems(chinese: str, english: str, where: str, english_where: str, root: Path) -> list[str]:
    """Every number of `chinese` that neither its English nor, for marked text, a named file has."""
    allowed = english_numbers(english)
    found = []
    for sources, passage in zh_only(chinese):
        named = set(allowed)
        for source in sources:
            path = root / source
            if not path.is_file():
                found.append(f"{where}: a zh-only passage names {source}, which does not exist")
                continue
            named |= english_numbers(path.read_text(encoding="utf-8"))
        for value in sorted(numbers(FRACTION_ONE.sub("", passage)) - named):
            found.append(f"{where}: {_show(value)} in a zh-only passage is neither in {english_where}"
                         + (f" nor in {', '.join(sources)}" if sources else "")
                         + f": {_excerpt(passage, value)}")
    rest = FRACTION_ONE.sub("", ZH_ONLY.sub("", chinese))
    for value in sorted(numbers(rest) - allowed):
        found.append(f"{where}: {_show(value)} is not in {english_where}: translate the number as the "
                     f"English writes it, or mark a note for Chinese readers <!-- zh-only: FILE --> "
                     f"(course/zh_numbers.py): {_excerpt(rest, value)}")
    return found


CHINESE_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
                  "八": 8, "九": 9, "十": 10}


def chinese_numerals(text: str) -> set[float]:
    """The numbers a Chinese text writes in Chinese numerals up to 99 (第四部分, 三个, 十二)."""
    found = set()
    for match in re.finditer(r"[零一二两三四五六七八九十]+", text):
        token = match[0]
        if "十" in token:
            tens, _, units = token.partition("十")
            value = CHINESE_DIGITS.get(tens, 1) * 10 + CHINESE_DIGITS.get(units, 0)
        elif len(token) == 1:
            value = CHINESE_DIGITS[token]
        else:
            continue
        found.add(float(value))
    return found


def row_problems(english: str, chinese: str) -> list[str]:
    """A claims-ledger row (docs/claims/NN.toml): its zh words state the numbers its en words
    state, no fewer (every number the English writes in digits; Chinese may write a small one in
    Chinese numerals, 第四部分 for chapter 4) and no other."""
    found = []
    written = numbers(english)
    translated = numbers(FRACTION_ONE.sub("", chinese))
    for value in sorted(written - numbers(chinese) - chinese_numerals(chinese)):
        found.append(f"{_show(value)} is in en but not in zh: {_excerpt(english, value)}")
    for value in sorted(translated - english_numbers(english)):
        found.append(f"{_show(value)} is in zh but not in en: {_excerpt(chinese, value)}")
    return found


def _show(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


def _excerpt(text: str, value: float) -> str:
    for match in NUMBER.finditer(text):
        token = match[0].replace(",", "")
        try:
            if float(token) == value:
                start = max(0, match.start() - 30)
                return repr(text[start:match.end() + 30].replace("\n", " "))
        except ValueError:
            continue
    return ""
