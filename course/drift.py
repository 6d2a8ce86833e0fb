"""The drift check: is the Chinese edition in step with the English one?

    python -m course.drift                  # what is out of date: cells, READMEs, messages (exit 1 if so)
    python -m course.drift --old            # ... with the English each stale cell or section translated
    python -m course.drift --skeleton 08    # start notebooks/src/zh/08_*.py from the English source
    python -m course.drift --count          # the edition's size: Han characters per part

A Chinese source (notebooks/src/zh/NN_topic.py) holds prose only: one markdown cell for each
markdown cell of the English source, in the same order, each naming the English cell it
translates by a hash of that cell's text in its jupytext header: `# %% [markdown]
en="3f2a9c1b0d4e"`. Its code is the English code, taken at build time (course/zh_source.py), so
the two editions' code cannot differ; what a code cell says (strings through `_()`, comments) is
in the catalog. The check aligns the two hash sequences and reports every English cell that
changed since it was translated (the Chinese cell still carries the old hash), every English
cell with no translation and every Chinese cell left over from a removed English cell. The
messages of the catalog (code comments included) are checked by course/messages.py the same
way (missing, untranslated, stale).

A source of the old format (every cell, code included, comments translated in place) is still
read, its code compared with the English token by token, while its lesson is listed in
OLD_FORMAT; `python -m course.zh_convert --convert NN` turns it into prose only.

The READMEs (README.md and the student release's course/release/README.md, each with its
README.zh-CN.md) are checked the same way by section: a section is a heading and the text under
it up to the next heading (headings inside fenced code do not count), and the line right under
each Chinese heading names the English section it translates: `<!-- en="3f2a9c1b0d4e" -->`
(an HTML comment: GitHub does not show it). A Chinese section may add notes for Chinese readers;
the hash only says which English text it was last brought in step with.
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import re
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import jupytext

from course import ROOT
from course.zh_numbers import problems as number_problems

# English lessons not translated yet (their two-digit numbers, e.g. {"09"} while a new lesson waits
# for its Chinese source); empty: every lesson is translated
PENDING: set[str] = set()
# Chinese sources still in the old format (code cells of their own, comments translated in
# place), by lesson number, until `python -m course.zh_convert --convert NN` turns them into prose
# only; a source of the old format not listed here, or a listed one in the new format, is a problem
OLD_FORMAT: set[str] = set()
ZH = Path("notebooks") / "src" / "zh"
# (English, Chinese) READMEs, relative to the course
READMES = [(Path("README.md"), Path("README.zh-CN.md")),
           (Path("course/release/README.md"), Path("course/release/README.zh-CN.md"))]
HEADING = re.compile(r"#{1,6} \S")
FENCE = re.compile(r"\s*(```|~~~)")
EN_LINE = re.compile(r'<!-- en="([0-9a-f]{12})" -->')


def cell_hash(cell) -> str:
    """12 hex digits of the English cell's type and text (surrounding blank lines ignored)."""
    return hashlib.sha256(f"{cell.cell_type}\n{cell.source.strip()}".encode()).hexdigest()[:12]


def code_without_comments(source: str) -> list[tuple[int, str]]:
    """The tokens of a code cell without comments and blank lines: what must match across editions."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source.strip() + "\n").readline)
        return [(t.type, t.string) for t in tokens
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError, IndentationError):  # magics: compare lines
        lines = (line.split("#", 1)[0].rstrip() for line in source.splitlines())
        return [(0, line) for line in lines if line]


def tags(cell) -> list[str]:
    return sorted(cell.metadata.get("tags", []))


def first_line(cell, width: int = 60) -> str:
    text = next((line.strip(" #") for line in cell.source.splitlines() if line.strip(" #")), "")
    return repr(text if len(text) <= width else text[:width - 3] + "...")


@dataclass(frozen=True)
class Pair:
    english: Path
    chinese: Path


def pairs(root: Path = ROOT) -> tuple[list[Pair], list[str]]:
    """(English source, Chinese source) of every lesson and the playground; and the problems of
    English sources without a Chinese one (lessons in PENDING excepted)."""
    found, missing = [], []
    english = sorted((root / "notebooks" / "src").glob("[0-9][0-9]_*.py"))
    english.append(root / "notebooks" / "src" / "playground.py")
    for path in english:
        chinese = root / ZH / path.name
        if chinese.exists():
            found.append(Pair(path, chinese))
        elif path.name[:2] not in PENDING:
            missing.append(f"{path.relative_to(root)} has no Chinese source {ZH / path.name}: "
                           f"start one with `python -m course.drift --skeleton {path.stem}`")
    return found, missing


def pair_problems(pair: Pair, root: Path = ROOT) -> list[str]:
    """Every way the Chinese source of `pair` is out of step with its English source."""
    en_cells, zh_cells = jupytext.read(pair.english).cells, jupytext.read(pair.chinese).cells
    zh_name = pair.chinese.relative_to(root).as_posix()
    en_name = pair.english.relative_to(root).as_posix()
    found = [f"{zh_name} cell {j}: no en=\"...\" hash naming the English cell it translates"
             for j, cell in enumerate(zh_cells) if not cell.metadata.get("en")]
    if found:
        return found
    lesson = pair.chinese.name[:2]
    old = any(cell.cell_type != "markdown" for cell in zh_cells)
    if old and lesson not in OLD_FORMAT:
        return [f"{zh_name} holds code cells: a Chinese source holds prose only (its code is the "
                f"English code): `python -m course.zh_convert --convert {lesson}`"]
    if not old and lesson in OLD_FORMAT:
        found.append(f"{zh_name} holds prose only: remove {lesson!r} from OLD_FORMAT in course/drift.py")
    numbers = [i for i, c in enumerate(en_cells) if old or c.cell_type == "markdown"]
    english = Side(en_name, [cell_hash(en_cells[i]) for i in numbers],
                   [f"{en_cells[i].cell_type} {first_line(en_cells[i])}" for i in numbers], numbers)
    chinese = Side(zh_name, [c.metadata["en"] for c in zh_cells], [first_line(c) for c in zh_cells])
    stale, equal = alignment_problems("cell", english, chinese)
    found += stale
    for i, j in equal:
        en, zh = en_cells[numbers[i]], zh_cells[j]
        same_code = code_without_comments(en.source) == code_without_comments(zh.source)
        if en.cell_type == "code" and not (same_code and tags(en) == tags(zh)):
            found.append(f"{zh_name} cell {j}: its code or tags differ from {en_name} cell "
                         f"{numbers[i]} (only comments may differ): copy the English code")
        elif en.cell_type == "markdown":
            found += number_problems(zh.source, en.source, f"{zh_name} cell {j}",
                                     f"English cell {numbers[i]}", root)
    return found


@dataclass(frozen=True)
class Side:
    """The items (cells, sections) of one file of a pair, as the drift check compares them."""
    name: str          # the file, relative to the course
    hashes: list[str]  # English: the hash of each item; Chinese: the hash each item names
    labels: list[str]  # how a message names each item
    numbers: list[int] | None = None  # each item's number in its file (default: its place here)

    def number(self, index: int) -> int:
        return self.numbers[index] if self.numbers is not None else index


def alignment_problems(noun: str, english: Side,
                       chinese: Side) -> tuple[list[str], list[tuple[int, int]]]:
    """Align the Chinese items with the English ones by hash: the problems (a stale, a missing
    and a leftover translation), and the (English, Chinese) indices of the items in step."""
    found, equal = [], []
    matcher = difflib.SequenceMatcher(a=english.hashes, b=chinese.hashes, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            equal += zip(range(i1, i2), range(j1, j2))
            continue
        for i, j in zip(range(i1, i2), range(j1, j2 + (i2 - i1))):
            if op == "replace" and j < j2:
                found.append(f"{chinese.name} {noun} {j} is stale: English {noun} {english.number(i)} "
                             f"of {english.name} changed ({english.labels[i]}, now "
                             f"en=\"{english.hashes[i]}\")")
            else:
                found.append(f"{english.name} {noun} {english.number(i)} ({english.labels[i]}) has no "
                             f"translation in {chinese.name} (en=\"{english.hashes[i]}\")")
        for j in range(j1 + (i2 - i1), j2):
            found.append(f"{chinese.name} {noun} {j} ({chinese.labels[j]}) translates no current "
                         f"English {noun} (en=\"{chinese.hashes[j]}\"): remove it or update its hash")
    return found, equal


def notebook_problems(root: Path = ROOT) -> list[str]:
    found, missing = pairs(root)
    problems = list(missing)
    for pair in found:
        problems += pair_problems(pair, root)
    return problems


@dataclass(frozen=True)
class Section:
    """One section of a README: its heading line ("" before the first heading) and its text,
    the heading included, up to the next heading."""
    heading: str
    text: str

    @property
    def hash(self) -> str:
        """12 hex digits of the section's text (surrounding blank lines ignored)."""
        return hashlib.sha256(self.text.strip().encode()).hexdigest()[:12]

    @property
    def en(self) -> str | None:
        """The English section a Chinese section translates: the hash on the line under its heading."""
        lines = self.text.splitlines()
        found = EN_LINE.fullmatch(lines[1].strip()) if self.heading and len(lines) > 1 else None
        return found[1] if found else None


def sections(text: str) -> list[Section]:
    """The sections of a Markdown text, in order; a heading inside fenced code starts none."""
    found, heading, lines, fenced = [], "", [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and HEADING.match(line):
            if heading or "".join(lines).strip():
                found.append(Section(heading, "\n".join(lines)))
            heading, lines = line.strip(), []
        lines.append(line)
    if heading or "".join(lines).strip():
        found.append(Section(heading, "\n".join(lines)))
    return found


def readme_problems(root: Path = ROOT) -> list[str]:
    """Every way a Chinese README is out of step with its English one, section by section."""
    found = []
    for english, chinese in READMES:
        if not (root / english).exists():
            continue
        if not (root / chinese).exists():
            found.append(f"{english} has no Chinese translation {chinese}")
            continue
        en_sections = sections((root / english).read_text())
        zh_sections = sections((root / chinese).read_text())
        unmarked = [f"{chinese} section {j} {s.heading!r}: no <!-- en=\"...\" --> line under its "
                    f"heading naming the English section it translates"
                    for j, s in enumerate(zh_sections) if s.en is None]
        if unmarked:
            found += unmarked
            continue
        stale, equal = alignment_problems(
            "section",
            Side(english.as_posix(), [s.hash for s in en_sections], [repr(s.heading) for s in en_sections]),
            Side(chinese.as_posix(), [s.en for s in zh_sections], [repr(s.heading) for s in zh_sections]),
        )
        found += stale
        for i, j in equal:
            found += number_problems(zh_sections[j].text, en_sections[i].text,
                                     f"{chinese} section {j} {zh_sections[j].heading!r}",
                                     f"English section {i} of {english}", root)
    return found


def problems(root: Path = ROOT) -> list[str]:
    """Everything out of date: lesson cells first, then the READMEs, then catalog messages."""
    from course.messages import problems as message_problems

    return notebook_problems(root) + readme_problems(root) + message_problems(root)


def history(path: Path, root: Path = ROOT):
    """The text of `path` in every commit that changed it, newest first (nothing outside git)."""
    relative = path.relative_to(root).as_posix()
    try:
        commits = subprocess.run(["git", "log", "--format=%H", "--", relative], cwd=root,
                                 capture_output=True, text=True, check=True).stdout.split()
        for commit in commits:
            yield subprocess.run(["git", "show", f"{commit}:{relative}"], cwd=root,
                                 capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return


def old_english(pair: Pair, wanted: str, root: Path = ROOT) -> str | None:
    """The English cell whose hash is `wanted`, from the git history of the English source."""
    for text in history(pair.english, root):
        for cell in jupytext.reads(text, fmt="py:percent").cells:
            if cell_hash(cell) == wanted:
                return cell.source
    return None


def old_section(english: Path, wanted: str, root: Path = ROOT) -> str | None:
    """The English README section whose hash is `wanted`, from the git history of `english`."""
    for text in history(english, root):
        for section in sections(text):
            if section.hash == wanted:
                return section.text
    return None


def print_diff(title: str, old: str | None, new: str) -> None:
    print(title)
    if old is None:
        print("(the old English text is not in this repository's history)")
        return
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                               "then", "now"))
    print()


def show_old(root: Path = ROOT) -> None:
    """For each stale Chinese cell, a diff from the English it translated to the English now."""
    found, _missing = pairs(root)
    for pair in found:
        en_cells, zh_cells = jupytext.read(pair.english).cells, jupytext.read(pair.chinese).cells
        current = {cell_hash(c): c for c in en_cells}
        if all(c.cell_type == "markdown" for c in zh_cells):  # prose only: place among the prose
            places = [i for i, c in enumerate(en_cells) if c.cell_type == "markdown"]
        else:
            places = list(range(len(en_cells)))
        for j, cell in enumerate(zh_cells):
            wanted = cell.metadata.get("en")
            if not wanted or wanted in current:
                continue
            index = places[min(j, len(places) - 1)]
            print_diff(f"--- {pair.chinese.relative_to(root)} cell {j}: English then (en=\"{wanted}\") "
                       f"and now (English cell {index}, en=\"{cell_hash(en_cells[index])}\")",
                       old_english(pair, wanted, root), en_cells[index].source)
    show_old_readmes(root)


def show_old_readmes(root: Path = ROOT) -> None:
    """For each stale section of a Chinese README, a diff from the English it translated to now."""
    for english, chinese in READMES:
        if not ((root / english).exists() and (root / chinese).exists()):
            continue
        en_sections = sections((root / english).read_text())
        current = {s.hash for s in en_sections}
        for j, section in enumerate(sections((root / chinese).read_text())):
            if section.en is None or section.en in current:
                continue
            index = min(j, len(en_sections) - 1)
            print_diff(f"--- {chinese} section {j} {section.heading!r}: English then "
                       f"(en=\"{section.en}\") and now (English section {index}, "
                       f"en=\"{en_sections[index].hash}\")",
                       old_section(root / english, section.en, root), en_sections[index].text)


def skeleton(english: Path) -> str:
    """A Chinese source to translate: every markdown cell with its en= hash, the English prose
    kept (its code is the English code: the comments are translated in the catalog)."""
    notebook = jupytext.read(english)
    notebook.cells = [cell for cell in notebook.cells if cell.cell_type == "markdown"]
    for cell in notebook.cells:
        cell.metadata = {**({"tags": cell.metadata["tags"]} if cell.metadata.get("tags") else {}),
                         "en": cell_hash(cell)}
    notebook.metadata = {}
    return without_header(jupytext.writes(notebook, fmt="py:percent"))


def without_header(text: str) -> str:
    """A percent-format source without jupytext's YAML header (the course's sources have none)."""
    if text.startswith("# ---\n"):
        end = text.index("\n# ---\n", 1) + len("\n# ---\n")
        text = text[end:].lstrip("\n")
    return text


HAN = re.compile(r"[\u4e00-\u9fff]")  # CJK unified ideographs: what "Chinese characters" counts


def edition_size(root: Path = ROOT) -> list[tuple[str, int]]:
    """(part, Han characters) of the Chinese edition: each lesson's markdown, the lessons' code
    comments, the READMEs, docs/zh/ and the catalog's translations; the total last."""
    from course.glossary import catalog_texts

    rows, comments = [], 0
    for path in sorted((root / ZH).glob("*.py")):
        cells = jupytext.read(path).cells
        rows.append((f"{ZH.as_posix()}/{path.name} (markdown)",
                     sum(len(HAN.findall(c.source)) for c in cells if c.cell_type == "markdown")))
        comments += sum(len(HAN.findall(c.source)) for c in cells if c.cell_type == "code")
    # sources of the old format only: the others' comments are in the catalog, counted below
    rows.append((f"{ZH.as_posix()}/*.py (code comments)", comments))
    for _english, chinese in READMES:
        if (root / chinese).exists():
            rows.append((chinese.as_posix(), len(HAN.findall((root / chinese).read_text()))))
    rows.append(("docs/zh/*.md", sum(len(HAN.findall(p.read_text()))
                                      for p in sorted((root / "docs" / "zh").glob("*.md")))))
    rows.append(("course/locale/zh_CN/LC_MESSAGES/course.po (msgstr)",
                 sum(len(HAN.findall(t.text)) for t in catalog_texts(root))))
    return rows + [("total", sum(n for _part, n in rows))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="what of the Chinese edition is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course to check (default: this one)")
    parser.add_argument("--old", action="store_true", help="show what each stale cell's English was")
    parser.add_argument("--skeleton", metavar="LESSON", help="write notebooks/src/zh/LESSON*.py to translate")
    parser.add_argument("--count", action="store_true", help="the edition's size: Han characters per part")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.count:
        for part, n in edition_size(root):
            print(f"{n:>8,}  {part}")
        return 0
    if args.skeleton:
        english = sorted((root / "notebooks" / "src").glob(f"{args.skeleton}*.py"))
        if len(english) != 1:
            parser.error(f"no single English source starts with {args.skeleton!r}")
        target = root / ZH / english[0].name
        if target.exists():
            parser.error(f"{target.relative_to(root)} exists; edit it instead")
        target.write_text(skeleton(english[0]))
        print(f"wrote {target.relative_to(root)}: translate its prose, then `make messages` and "
              f"translate the lesson's messages (its code comments among them), then remove "
              f"{english[0].name[:2]!r} from PENDING in course/drift.py")
        return 0
    found = problems(root)
    for line in found:
        print(line)
    if args.old:
        show_old(root)
    print(f"{len(found)} thing(s) out of date" if found else "the Chinese edition is in step")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
