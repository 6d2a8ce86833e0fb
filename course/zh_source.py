"""A Chinese lesson source holds prose only; its code is the English code, taken at build time.

`notebooks/src/zh/NN_topic.py` is a list of markdown cells, each naming the English cell it
translates (`# %% [markdown] en="3f2a9c1b0d4e"`, course/drift.py), in the English order. The
Chinese notebook is the English source with each markdown cell replaced by its Chinese cell
(`compose`), so a code cell of the Chinese edition *is* the English one: the same code, the same
strings, the same tags. What a learner reads in a code cell goes through the catalog like every
other message: strings through `_()` as ever, and each comment paragraph of an English code cell
(consecutive comment lines at one indent, or a comment at the end of a line) as one message,
under the location of its English source (`comment_texts`, read by course/messages.py).
`localize_code` puts the translations in, wrapped at 96 columns; a comment without one stays
English. `# noqa`-style comments and the Colab cell's `# @title` line are code, not text.

The converter from the older format (code cells included) is course/zh_convert.py.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import jupytext
import nbformat

from course.stub_text import CJK, HINT_LABEL, Piece, comments

ZH = Path("notebooks") / "src" / "zh"
CODE_ONLY = re.compile(r"#\s*@(title|param|markdown)\b")  # Colab's form lines: code, not text
LINTER_MARK = re.compile(r"#\s*(noqa|type:|pragma)\S*(:\s*[\w, ]+?)?\s{2,}(?P<text>\S.*)$")
WORD = re.compile(r"(?<![\w.])[A-Za-z]{3,}(?!\w)")  # a word, not part of a name like N_head


def is_prose_only(path: Path) -> bool:
    """A Chinese source of the current format: markdown cells only."""
    return all(cell.cell_type == "markdown" for cell in jupytext.read(path).cells)


def english_of(chinese: Path) -> Path:
    """The English source a Chinese one translates: notebooks/src/zh/X.py -> notebooks/src/X.py."""
    return chinese.parent.parent / chinese.name


def is_text(comment: str) -> bool:
    """Is a comment words to translate, not code or a shape (`(S, R, 20)`, `sum(p.numel() ...)`)?"""
    if CJK.search(comment):
        return True
    if not WORD.search(comment):
        return False
    try:
        ast.parse(comment, mode="eval")
    except SyntaxError:
        return True
    return False


def comment_pieces(code: str) -> list[Piece]:
    """The comment paragraphs of one code cell that are text (Colab's form lines, shapes and
    code left out), and the text after a linter's mark (`# noqa: F401  (why)`: kind "noqa",
    its start the text's own)."""
    try:
        found = comments(code)
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                  if t.type == tokenize.COMMENT]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    lines = code.splitlines()
    found = [p for p in found if is_text(p.message)
             and not CODE_ONLY.match(lines[p.start[0] - 1][p.start[1]:])]
    for token in tokens:
        marked = LINTER_MARK.match(token.string)
        if marked and is_text(marked["text"]):
            column = token.start[1] + marked.start("text")
            found.append(Piece("noqa", (token.start[0], column), token.end, marked["text"]))
    return sorted(found, key=lambda p: p.start)


def comment_texts(english: Path) -> list[str]:
    """The msgids of the comments of every code cell of an English source, in order."""
    return [piece.message for cell in jupytext.read(english).cells if cell.cell_type == "code"
            for piece in comment_pieces(cell.source)]


def localize_code(code: str, lang: str) -> str:
    """`code` (one cell) with its comments in `lang` where the catalog translates them."""
    from course.i18n import normalise, translations
    from course.stub_text import _replace

    catalog = translations(normalise(lang))
    lines = code.split("\n")
    for piece in reversed(comment_pieces(code)):
        translated = catalog.gettext(piece.message)
        if translated == piece.message:
            continue
        if piece.kind == "noqa":  # the mark stays, the text after it is replaced
            (line, column), (_last, end) = piece.start, piece.end
            lines[line - 1] = lines[line - 1][:column] + translated + lines[line - 1][end:]
        else:
            _replace(lines, piece, translated, catalog.gettext(HINT_LABEL))
    return "\n".join(lines)


def compose(chinese: Path, english: Path | None = None, lang: str = "zh") -> nbformat.NotebookNode:
    """The Chinese notebook of a prose-only source: the English cells, each markdown cell
    replaced by the Chinese cell at the same place among the markdown cells, each code cell's
    comments translated. The Chinese cells keep their `en` hashes (the build drops them)."""
    english = english or english_of(chinese)
    notebook = jupytext.read(english)
    prose = [cell for cell in jupytext.read(chinese).cells if cell.cell_type == "markdown"]
    wanted = [cell for cell in notebook.cells if cell.cell_type == "markdown"]
    if len(prose) != len(wanted):
        raise ValueError(f"{chinese.name} has {len(prose)} markdown cells, {english.name} has "
                         f"{len(wanted)}: `python -m course.drift` says which are missing or left over")
    translated = iter(prose)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            notebook.cells[index] = next(translated)
        else:
            cell.source = localize_code(cell.source, lang)
    return notebook
