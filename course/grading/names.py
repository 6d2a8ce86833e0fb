"""Students' folder names, which are hostile text: as file names, CSV cells and terminal lines.

A folder name is whatever the instructor's collection tool (or the student) wrote; it may hold
spaces, any script, quotes, a leading `=`, or escape sequences. Three uses, three guards:

- `report_name`: the file name of the student's report, record and raw folder. A name is kept
  as it is when it is already a plain, lower-case file name (`ada`, `lee_ann`, `学生`); any other
  name becomes a cleaned form plus `~` and a hash of the whole name. A kept name never holds a
  `~`, so no hashed name can equal a kept one, and a hashed name carries the hash of its own
  folder name: two folders cannot share a file, even on a case-insensitive disk.
  `check_distinct` proves it for the whole class before grading starts.
- `csv_cell`: a text cell no spreadsheet runs as a formula (OWASP, "CSV Injection": a leading
  `=`, `+`, `-`, `@`, tab or carriage return gets a `'` before it), control characters escaped.
- `shown`: a name for a terminal, with every control character escaped, so a name cannot move
  the cursor, recolour or erase what the grader printed;
- `md_text`, `md_code`, `md_fence`: student text in Markdown (reports/, lms/summary.md, the
  hand-back README) as inert text: every character Markdown or HTML could read as markup
  escaped, or inside a code span or fence longer than any run of backticks in it, so a name or
  an exception message cannot close a fence, start a heading or a link, or carry raw HTML.

Names are bytes until shown. A folder or file name that is not UTF-8 (`caf\xe9`, Latin-1, as an
old zip tool writes it) reaches Python as text with one "surrogate escape" per stray byte
(os.fsdecode); it stays so in the grader and in the records (JSON escapes it, so it comes back
the same), its report name hashes the original bytes, and `shown` writes each stray byte as
`\xe9`. `valid_report_name` tells a report name the grader could have made from any other
text (a merge refuses a record whose report name would write outside OUT).
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

KEPT = re.compile(r"[\w][\w.-]*")        # letters of any script, digits, _ . -
CLEAN = re.compile(r"[^\w.-]")
MAX_STEM = 80
HASH_HEX = 12
# OWASP CSV Injection: cells starting with these are formulas in Excel, LibreOffice, Sheets
# OWASP "CSV injection": what a spreadsheet may run as a formula (full-width forms too)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def valid_report_name(name: object, folder: object) -> bool:
    """Whether `name` is the report name of `folder`: what a record read from disk must say."""
    return isinstance(name, str) and isinstance(folder, str) and name == report_name(folder)


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:HASH_HEX]


def report_name(folder: str) -> str:
    """The file name (without suffix) for the student whose folder is called `folder`."""
    if (len(folder) <= MAX_STEM and KEPT.fullmatch(folder) and folder == folder.casefold()
            and unicodedata.normalize("NFC", folder) == folder):
        return folder
    text = unicodedata.normalize("NFC", folder)
    stem = CLEAN.sub("_", text).strip(".").lstrip("-")[:MAX_STEM] or "_"  # never an option
    return f"{stem}~{_digest(folder)}"


def check_distinct(folders: list[str]) -> dict[str, str]:
    """folder -> report name for a whole class; raises ValueError if two would share a file
    (only a hash collision could do that)."""
    names = {folder: report_name(folder) for folder in folders}
    seen: dict[str, str] = {}
    for folder, name in names.items():
        key = name.casefold()
        if key in seen:
            raise ValueError(f"the folders {shown(seen[key])!r} and {shown(folder)!r} would share "
                             f"the report name {name!r}; rename one of them")
        seen[key] = folder
    return names


def csv_cell(text) -> str:
    """`text` as a CSV cell that a spreadsheet shows as text, never runs as a formula, and that
    `cat gradebook.csv` prints without running escape sequences."""
    text = shown(text)
    return "'" + text if text.startswith(FORMULA_START) else text


def shown(text) -> str:
    """`text` for a terminal or a report: control and format characters (escape sequences,
    carriage returns, bidirectional overrides) written as \\x.. / \\u.. escapes."""
    out = []
    for char in str(text):
        if 0xDC80 <= ord(char) <= 0xDCFF:  # a byte that was no UTF-8 (surrogate escape)
            out.append(f"\\x{ord(char) - 0xDC00:02x}")
        elif unicodedata.category(char)[0] == "C" or char in "\u2028\u2029":
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(char)
    return "".join(out)


# what CommonMark may read as markup in a line of text (a backslash makes each literal), and
# what HTML may (written as entities)
MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:\"'=])")
HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def md_text(text) -> str:
    """`text` (shown: control characters escaped) as inert Markdown inline text."""
    escaped = MARKDOWN_PUNCTUATION.sub(r"\\\1", shown(text))
    return "".join(HTML.get(char, char) for char in escaped)


def _fence_for(text: str, least: int) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(least, longest + 1)


def md_code(text) -> str:
    """`text` (shown) as a Markdown code span no backtick in it can close (HTML inert inside)."""
    text = shown(text)
    fence = _fence_for(text, 1)
    pad = " " if "`" in text or text.startswith(" ") or text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_fence(lines: list[str], indent: str = "") -> list[str]:
    """Lines (each shown) as a fenced code block, indented by `indent`, that no line can close."""
    lines = [shown(line) for line in lines]
    fence = _fence_for("\n".join(lines), 3)
    return [f"{indent}{fence}", *[f"{indent}{line}" for line in lines], f"{indent}{fence}"]
