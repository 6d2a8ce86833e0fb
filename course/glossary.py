"""The Chinese edition's glossary as data, and where a Chinese text breaks it.

    python -m course.glossary          # every use of a never-word and every ASCII quote in Chinese prose

docs/zh/TERMINOLOGY.md holds the terms in one Markdown table: English | 中文 | 不用 (never) | why.
The never column lists the renderings a Chinese text must not use (in backticks, separated by
`、`; `re:` starts a regular expression, `\\|` is a `|` inside one). This module reads that table
and scans every Chinese source a learner or instructor reads: the lesson sources
(notebooks/src/zh/), both Chinese READMEs, docs/zh/ and every msgstr of the catalog.

A never-word may be allowed in some places after all: `re:打分 unless re:给[^，。]{1,24}打分`
finds 打分 everywhere except inside a match of the second pattern (the verb, where the noun is
banned). A never-word may still be *mentioned*: right before a full-width bracket with the English of the
other thing it names (`注意力汇聚（attention pooling）`: d2l-zh's word, not the sink), or, on the
glossary page itself, inside backticks. Chinese prose uses full-width quotation marks (“”): an
ASCII `"` next to a Han character outside code is reported too (a quoted ASCII value such as
`"paper"` in a docstring is code, and stays).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from course import ROOT

GLOSSARY = Path("docs/zh/TERMINOLOGY.md")
CATALOG = Path("course/locale/zh_CN/LC_MESSAGES/course.po")
READMES = (Path("README.zh-CN.md"), Path("course/release/README.zh-CN.md"))
HAN = r"\u4e00-\u9fff\u3000-\u303f\uff00-\uffef"
ASCII_QUOTE = re.compile(rf'(?<=[{HAN}])"|"(?=[{HAN}])')
CODE_SPAN = re.compile(r"`[^`\n]*`")
CODE_LITERAL = re.compile(r'"[\x20-\x7e]*?"')  # "paper", "gpt2": a value of the code, not a quotation
GLOSS = re.compile(r"（([A-Za-z][^）]*)）")


@dataclass(frozen=True)
class Never:
    """One never-word: a pattern, and where its matches are allowed after all (`unless`: a match
    inside a match of that pattern, e.g. the verb 给每个键打分 where 打分 the noun is banned)."""
    pattern: re.Pattern
    unless: re.Pattern | None = None

    @classmethod
    def parse(cls, word: str) -> Never:
        """`word`, `re:<pattern>` or `re:<pattern> unless re:<pattern>`."""
        main, _, allowed = word.partition(" unless ")
        return cls(_compile(main), _compile(allowed) if allowed else None)

    def finditer(self, text: str):
        allowed = [m.span() for m in self.unless.finditer(text)] if self.unless else []
        for match in self.pattern.finditer(text):
            if not any(start <= match.start() and match.end() <= end for start, end in allowed):
                yield match

    def search(self, text: str) -> re.Match | None:
        return next(self.finditer(text), None)


def _compile(word: str) -> re.Pattern:
    return re.compile(word[3:]) if word.startswith("re:") else re.compile(re.escape(word))


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    never: tuple[str, ...]  # literal words, "re:<pattern>", or "re:<pattern> unless re:<pattern>"
    why: str

    def patterns(self) -> list[Never]:
        return [Never.parse(word) for word in self.never]


def _cells(row: str) -> list[str]:
    """The cells of one Markdown table row (`\\|` is a `|` inside a cell)."""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [part.strip().replace("\\|", "|") for part in parts]


def terms(root: Path = ROOT) -> list[Term]:
    """The rows of the glossary's table (the one whose header names the never column)."""
    found, inside = [], False
    for line in (root / GLOSSARY).read_text(encoding="utf-8").splitlines():
        if line.startswith("|") and "不用" in line:
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("|"):
            break
        cells = _cells(line)
        if set("".join(cells)) <= set("-: "):
            continue  # the |---| line
        if len(cells) != 4:
            raise ValueError(f"{GLOSSARY}: a row needs 4 cells: {line}")
        never = tuple(re.findall(r"`([^`]+)`", cells[2]))
        found.append(Term(cells[0], cells[1], never, cells[3]))
    if not found:
        raise ValueError(f"{GLOSSARY} has no table with a 不用 (never) column")
    return found


@dataclass(frozen=True)
class Text:
    """One line of Chinese text and where it is (file and line, or a catalog entry)."""
    where: str
    text: str
    prose: bool = True  # False: a line of code (its strings are code, not typography)


def _lines(root: Path, path: Path) -> list[Text]:
    relative = path.relative_to(root).as_posix()
    code = path.suffix == ".py"  # a jupytext source: prose lines are comment lines
    return [Text(f"{relative}:{n}", line, not code or line.lstrip().startswith("#"))
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)]


def catalog_texts(root: Path = ROOT) -> list[Text]:
    from babel.messages.pofile import read_po

    with open(root / CATALOG, "rb") as handle:
        catalog = read_po(handle)
    found = []
    for message in catalog:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, (tuple, list)) else (message.string,)
        label = message.id[0] if isinstance(message.id, tuple) else message.id
        for string in strings:
            found.append(Text(f"{CATALOG} msgid {label[:50]!r}", string or ""))
    return found


def sources(root: Path = ROOT) -> list[Text]:
    """Every line of Chinese a learner or instructor reads, with where it is."""
    texts = []
    for path in sorted((root / "notebooks" / "src" / "zh").glob("*.py")):
        texts += _lines(root, path)
    for readme in READMES:
        if (root / readme).exists():
            texts += _lines(root, root / readme)
    for path in sorted((root / "docs" / "zh").glob("*.md")):
        quoted = path.name == GLOSSARY.name  # the glossary mentions never-words in backticks
        texts += [Text(t.where, CODE_SPAN.sub("``", t.text)) if quoted else t for t in _lines(root, path)]
    return texts + catalog_texts(root)


def _glossed_as_other(term: Term, text: str, end: int) -> bool:
    """Is the match ending at `end` followed by an English gloss naming something else (a closing
    quotation mark between them allowed: “注意力汇聚”（attention pooling）)?"""
    gloss = GLOSS.match(text, end + (text[end:end + 1] in "”」"))
    if not gloss:
        return False
    other, english = gloss[1].strip().lower(), term.english.lower()
    return other not in english and english not in other


def clashes(root: Path = ROOT) -> list[str]:
    """Every use of a never-word of the glossary in a Chinese source."""
    found = []
    rules = [(term, pattern) for term in terms(root) for pattern in term.patterns()]
    for text in sources(root):
        seen = set()  # a word two rows forbid (结论: claim and verdict) is reported once
        for term, pattern in rules:
            for match in pattern.finditer(text.text):
                if match.start() in seen or _glossed_as_other(term, text.text, match.end()):
                    continue
                seen.add(match.start())
                found.append(f"{text.where}: {match[0]!r} for {term.english!r}: write "
                             f"{term.chinese} ({term.why or 'docs/zh/TERMINOLOGY.md'})")
    return found


def ascii_quotes(root: Path = ROOT) -> list[str]:
    """ASCII double quotes beside Chinese prose (code spans and fenced code excepted)."""
    found, fenced, last_file = [], False, None
    for text in sources(root):
        path = text.where.split(":")[0]
        if path != last_file:
            fenced, last_file = False, path
        if re.match(r"\s*(#\s*)?(```|~~~)", text.text):
            fenced = not fenced
            continue
        if fenced or not text.prose:
            continue
        prose = CODE_LITERAL.sub("", CODE_SPAN.sub("``", text.text))
        if ASCII_QUOTE.search(prose):
            found.append(f"{text.where}: ASCII quotation marks in Chinese prose, write “…”: "
                         f"{text.text.strip()[:80]}")
    return found


def problems(root: Path = ROOT) -> list[str]:
    return clashes(root) + ascii_quotes(root)


def main(argv=None) -> int:
    found = problems()
    for line in found:
        print(line)
    print(f"{len(found)} problem(s) with the glossary" if found else
          "every Chinese text follows docs/zh/TERMINOLOGY.md")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
