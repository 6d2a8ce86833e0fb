"""What a learner reads in a stub, in the learner's language: docstrings, comments, `# Hint:` lines.

The stubs (course/stubs.py) are generated from solutions/ in English. The Chinese handout
(`make handout LANG=zh`) translates what a stub says, never what it does: every docstring, every
comment and the message of every error its code raises (an f-string's {expressions} kept as
they are) of the English stub goes through the catalog (course/locale/zh_CN/...), whose
msgids `texts()` lists for `make messages` under the location `exercises/*.py`. The code, the
strings of the code and the line structure around them are untouched, so a Chinese stub and an
English one compile to the same program (tests/test_zh_handout.py checks it, and grades a class
from both).

Texts are taken from the English *stub*, never from a solution, so no reference code can reach
the catalog. A comment paragraph (consecutive comment lines at one indent, or consecutive
`# Hint:` lines) is one message; a docstring is one message (cleaned as `inspect.cleandoc` does).
"""
from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from dataclasses import dataclass

from course.i18n import N_

LOCATION = "exercises/*.py"  # where the catalog says these texts are read
HINT = "Hint: "
NO_LINE_START = "，。、；：？！）」』”"  # Chinese typesetting: a line never starts with these
HINT_LABEL = N_("hint")  # what a translated stub writes before a hint: "# 提示：..."
SKIP_COMMENT = re.compile(r"#\s*(noqa|type:|pragma)|#\s*$")
CJK = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]")


@dataclass(frozen=True)
class Piece:
    """One text of a stub: a docstring or a comment paragraph, where it is, and its message."""
    kind: str        # "docstring" or "comment"
    start: tuple[int, int]  # (line, column) of its first character, 1-based lines
    end: tuple[int, int]    # (line, column) just after its last character
    message: str     # the msgid (a hint without its "Hint: " prefix)
    hint: bool = False
    prefix: str = ""  # a docstring's string prefix (r, u) and quotes


def docstrings(source: str) -> list[Piece]:
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            literal = body[0].value
            found.append(Piece("docstring", (literal.lineno, literal.col_offset),
                               (literal.end_lineno, literal.end_col_offset),
                               inspect.cleandoc(literal.value)))
    return found


def errors(source: str) -> list[Piece]:
    """The message of each error the stub's code raises (`raise ValueError("...")`; an f-string
    as its template, each {expression} as written), NotImplementedError's stub messages apart:
    a Chinese stub raises them in Chinese, the expressions unchanged."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args):
            continue
        function = node.exc.func
        name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", "")
        if not name.endswith(("Error", "Exception")) or name == "NotImplementedError":
            continue
        argument = node.exc.args[0]
        template = _template(argument, source)
        if template:
            found.append(Piece("error", (argument.lineno, argument.col_offset),
                               (argument.end_lineno, argument.end_col_offset), template,
                               prefix="f" if isinstance(argument, ast.JoinedStr) else ""))
    return found


def _template(node, source: str) -> str | None:
    """A string literal's text, or an f-string's template: its text with each {expression!r:spec}
    as written (literal braces doubled, as in the f-string)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not isinstance(node, ast.JoinedStr):
        return None
    parts = []
    for value in node.values:
        if isinstance(value, ast.Constant):
            parts.append(value.value.replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, ast.FormattedValue):
            conversion = {-1: "", 115: "!s", 114: "!r", 97: "!a"}[value.conversion]
            spec = f":{_template(value.format_spec, source)}" if value.format_spec else ""
            parts.append("{" + ast.get_source_segment(source, value.value) + conversion + spec + "}")
    return "".join(parts)


def comments(source: str) -> list[Piece]:
    """Comment paragraphs: full-line comments at one indent (hints apart), and trailing comments."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type == tokenize.COMMENT and not SKIP_COMMENT.match(t.string)]
    lines = source.splitlines()
    found, group = [], []

    def close():
        if group:
            texts = [_comment_text(t.string) for t in group]
            hint = texts[0].startswith(HINT)
            message = " ".join(t.removeprefix(HINT) if hint else t for t in texts)
            found.append(Piece("comment", group[0].start, group[-1].end, message, hint))
            group.clear()

    for token in tokens:
        full_line = lines[token.start[0] - 1][:token.start[1]].strip() == ""
        text = _comment_text(token.string)
        joins = (group and full_line and token.start[0] == group[-1].start[0] + 1
                 and token.start[1] == group[-1].start[1]
                 and text.startswith(HINT) == _comment_text(group[0].string).startswith(HINT)
                 and _is_full_line(lines, group[-1]))
        if not joins:
            close()
        group.append(token)
        if not full_line:
            close()
    close()
    return found


def _is_full_line(lines: list[str], token) -> bool:
    return lines[token.start[0] - 1][:token.start[1]].strip() == ""


def _comment_text(comment: str) -> str:
    return comment.lstrip("#").strip()


def pieces(source: str) -> list[Piece]:
    return sorted(docstrings(source) + comments(source) + errors(source), key=lambda p: p.start)


def texts(stub: str) -> list[str]:
    """The msgids of one English stub, in order."""
    return [p.message for p in pieces(stub) if p.message]


def width(text: str) -> int:
    """Display width: a CJK character takes two columns."""
    return sum(2 if CJK.match(c) else 1 for c in text)


def wrap(text: str, columns: int) -> list[str]:
    """`text` in lines of at most `columns` display columns, broken after a space or a CJK
    character (never inside a run of Latin letters or digits), after a full-width punctuation
    mark where one is near the end of the line; a line never starts with a closing mark (，。：),
    which stays at the end of the line before, a column over if need be."""
    lines, line = [], ""
    for token in re.findall(r"[A-Za-z0-9_`'.,:;/()\[\]{}*+\-=<>|!?\"]+ ?|.", text):
        if line and width(line + token.rstrip()) > columns and token[0] not in NO_LINE_START:
            cut = max(line.rfind(mark) for mark in "，。；：、）")
            if cut >= len(line) - 12 and cut > 0:
                line, rest = line[:cut + 1], line[cut + 1:]
            else:
                rest = ""
            lines.append(line.rstrip())
            line = (rest + token).lstrip()
        else:
            line += token
    if line.strip():
        lines.append(line.rstrip())
    return lines or [""]


def localize(stub: str, lang: str) -> str:
    """The English stub `stub` with its messages, docstrings and comments in `lang` (a text
    without a translation stays English); its code unchanged."""
    from course.i18n import translations
    from course.stub_message import parse_stub_message, stub_message

    catalog = translations(lang)

    def message(match: re.Match) -> str:
        found = parse_stub_message(match[1])
        if not found:
            return match[0]
        lesson, function, module = found
        return f'NotImplementedError("{stub_message(lesson, function, module + ".py", lang)}")'

    stub = re.sub(r'NotImplementedError\("([^"]*)"\)', message, stub)
    lines = stub.split("\n")
    for piece in reversed(pieces(stub)):
        translated = catalog.gettext(piece.message)
        if piece.message and translated != piece.message:
            _replace(lines, piece, translated, catalog.gettext(HINT_LABEL))
    return "\n".join(lines)


def _replace(lines: list[str], piece: Piece, text: str, hint: str) -> None:
    """Put `text` where `piece` is in `lines` (1-based positions, columns in characters)."""
    (first, col), (last, end) = piece.start, piece.end
    if piece.kind == "error":  # one string literal on one line, in place of the English one
        col = len(lines[first - 1].encode()[:col].decode())  # ast's columns count bytes
        end = len(lines[last - 1].encode()[:end].decode())
        literal = piece.prefix + '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        lines[first - 1:last] = [lines[first - 1][:col] + literal + lines[last - 1][end:]]
        return
    if piece.kind == "comment" and lines[first - 1][:col].strip():  # a trailing comment
        lines[first - 1] = lines[first - 1][:col] + "# " + text.replace("\n", " ")
        return
    indent = " " * col
    if piece.kind == "comment":
        label = f"{hint}：" if piece.hint else ""
        body = wrap(label + text, max(40, 96 - col))
        lines[first - 1:last] = [f"{indent}# {line}" for line in body]
        return
    end = len(lines[last - 1].encode()[:end].decode())  # ast's end column counts bytes
    opening = re.match(r"([rRuU]?)(\"\"\"|\'\'\'|\"|\')", lines[first - 1][col:])
    prefix, quote = opening[1], opening[2]
    if len(quote) == 1 and "\n" in text:
        quote = '"""'
    own_line = last > first and not lines[last - 1][:end - len(opening[2])].strip()
    body = text if "r" in prefix.lower() else text.replace("\\", "\\\\")
    new = [lines[first - 1][:col] + prefix + quote + line if n == 0 else (indent + line if line else "")
           for n, line in enumerate(body.split("\n"))]
    tail = quote + lines[last - 1][end:]
    if own_line:
        new.append(indent + tail)
    else:
        new[-1] += tail
    lines[first - 1:last] = new
