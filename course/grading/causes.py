"""Why a check failed, as the class report counts it: the kind of failure, the cause its hint
names, the case that failed and, for a failure that comes from another check's, that root.

    annotate(record)    # a CheckRecord with its verdict: sets record.cause (what records keep)
    why(record)         # that cause as a `Why`; for a record written before, read from its verdict

A check's message names its likely bug with a hint (course/checks/hints.py and the lessons'
checks), chosen from a fixed set of catalog entries: "divide by sqrt(c) ...", "the softmax runs
along the wrong axis ...". The cause is the hint's identity, its untranslated catalog msgid (the
English template, placeholders and all), found by matching the message's `hint:` line against
every hint of the catalog in English and in Chinese: a student graded in either language counts
under one cause, and a hint added later is known as soon as it is in the catalog (`make
messages`). The values a hint fills in (a shape, a size) are no part of the cause.

The kinds (`FAILURES`):
- "fail": the check failed in the notebook on its own (FAIL), cause = the hint's msgid, or ""
  when the hint is none of the catalog's or says only that the code raised (its message then
  goes to the report's list of unnamed failures);
- "hidden": PASS in the notebook, failed on hidden inputs; `case` is the kind of hidden case;
- "blocked": it failed because another check failed (BLOCKED, or not run because an earlier
  check of the same cell failed); `roots` names them: the failure is counted once, at its root;
- "todo": the exercise is still the stub (or no submission): not attempted;
- "error": the code could not be imported, the process died, the cell raised outside the
  check, the grader failed;
- "timeout": a time or CPU-time limit.
Everything here is read from the record (the verdict the grader reached and the message the
check printed), never from the student's code or the hidden values.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from course.i18n import CHINESE, catalog_path

FAILURES = ("fail", "hidden", "blocked", "todo", "error", "timeout")
# the ids of causes that are no hint (a hint's cause is its msgid, an English sentence)
NOT_IMPLEMENTED = "not-implemented"
IMPORT_ERROR = "import-error"
CRASHED = "crashed"
CELL_ERROR = "cell-error"
NOT_RUN = "not-run"
GRADER_ERROR = "grader-error"
TIMEOUT = "timeout"
HIDDEN = "hidden-case"
BLOCKED = "blocked"
CAUSE_IDS = (NOT_IMPLEMENTED, IMPORT_ERROR, CRASHED, CELL_ERROR, NOT_RUN, GRADER_ERROR, TIMEOUT,
             HIDDEN, BLOCKED)

HINT_SOURCES = ("course/checks/",)   # where hints live (catalog locations)
MIN_LITERAL = 12     # fixed characters a template needs to name anything (a CJK one counts two)
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{[^{}]*\}")
FAIL_HEADER = re.compile(r"^FAIL (?P<id>\S+), case '(?P<case>.*)':\s*$")
NOT_RUN_AFTER = re.compile(r"^not run: (?P<id>\S+) failed first in the same cell")
BLOCKED_HEADER = re.compile(r"^BLOCKED (?P<id>\S+) by (?P<roots>\S+(?:, \S+)*):")
HINT_WORDS = ("hint", "提示")        # `_('hint')` in English and in the catalog's Chinese
UNCONFIRMED = "PASS in the notebook, not confirmed on hidden inputs"


@dataclass(frozen=True)
class Template:
    msgid: str
    pattern: re.Pattern
    anchor: str        # its longest fixed piece: a cheap test before the regular expression
    literal: int       # how many fixed characters: the more, the more specific


def width(text: str) -> int:
    """Fixed text's weight: a CJK character says about as much as two Latin letters."""
    return sum(2 if ord(c) >= 0x2E80 else 1 for c in text)


def _template(msgid: str, text: str) -> Template | None:
    pieces, fixed, last = [], [], 0
    for match in PLACEHOLDER.finditer(text):
        fixed.append(text[last:match.start()])
        pieces.append(re.escape(text[last:match.start()]))
        token = match.group(0)
        if token in ("{{", "}}"):
            fixed.append(token[0])
            pieces.append(re.escape(token[0]))
        else:
            pieces.append("(.*?)")
        last = match.end()
    fixed.append(text[last:])
    pieces.append(re.escape(text[last:]))
    literal = sum(width(f.strip()) for f in fixed)
    if literal < MIN_LITERAL:
        return None
    return Template(msgid, re.compile("".join(pieces), re.DOTALL), max(fixed, key=len), literal)


@dataclass
class Catalog:
    """Every hint of the course's catalog, as templates in English and Chinese, and the English
    name of every case (a Chinese message names its case in Chinese)."""
    templates: list[Template]
    case_names: dict[str, str] = field(default_factory=dict)   # translated case name -> English
    suffixes: dict = field(default_factory=dict)   # a derived suffix (a pattern) -> its English
    joiner: str = "，"                                          # "{base}, {suffix}" translated

    def match(self, text: str) -> tuple[Template, re.Match] | None:
        """The most specific template (the most fixed text) that matches the whole of `text`,
        in either language, with its match."""
        text = text.strip()
        best = None
        for template in self.templates:
            if template.anchor in text and (best is None or template.literal > best[0].literal):
                found = template.pattern.fullmatch(text)
                if found:
                    best = (template, found)
        return best

    def cause(self, hint: str) -> str | None:
        """The msgid of the hint `hint` (in either language), or None."""
        found = self.match(hint)
        return found[0].msgid if found else None

    def english_case(self, name: str) -> str:
        """A case's English name (its identity) from its name in either language; a derived
        case (", in float32", ", on the meta device") is its base's name and its suffix."""
        if name in self.case_names:
            return self.case_names[name]
        base, joiner, suffix = name.rpartition(self.joiner)
        if joiner:
            for translated, english in self.suffixes.items():
                match = translated.fullmatch(suffix)
                if match:
                    return f"{self.english_case(base)}, {english.format(*match.groups())}"
        return name


# what course/checks/kinds.py appends to a derived case's name (course/checks/lines.py: _SUFFIXES)
DERIVED_SUFFIXES = ("in {dtype}", "on the meta device", "called twice")


@functools.lru_cache(maxsize=4)
def catalog(path: Path | None = None) -> Catalog:
    """The hints of the catalog at `path` (the course's Chinese .po: its msgids are the English
    texts, its msgstrs the Chinese ones)."""
    from babel.messages.pofile import read_po

    path = Path(path) if path is not None else catalog_path(CHINESE)
    with open(path, "rb") as handle:
        po = read_po(handle)
    found = Catalog([])
    for message in po:
        if not message.id or isinstance(message.id, tuple):
            continue
        string = message.string if message.string and not message.fuzzy else ""
        if message.context == "case name":
            if string:
                found.case_names[string] = message.id
            continue
        if message.id in DERIVED_SUFFIXES and string:
            found.suffixes[re.compile(re.sub(r"\\{\w*\\}", "(.+)", re.escape(string)))] = \
                PLACEHOLDER.sub("{}", message.id)
        if message.id == "{base}, {suffix}" and string:
            found.joiner = string.replace("{base}", "").replace("{suffix}", "") or found.joiner
        if message.context or not any(where.startswith(HINT_SOURCES)
                                      for where, _ in message.locations):
            continue
        for text in (message.id, string):
            template = _template(message.id, text) if text else None
            if template is not None:
                found.templates.append(template)
    return found


# ------------------------------------------------------------------------- reading a message

def _hint_at(lines: list[str]) -> int | None:
    """The index of a FAIL message's hint line (its last `  hint: ` line: the lines under it are
    notes, the tally, never the hint; a student's exception text comes before it)."""
    found = None
    for index, line in enumerate(lines):
        if any(line.startswith(f"  {word}{colon}") for word in HINT_WORDS for colon in (": ", "：")):
            found = index
    return found


def _label_off(line: str) -> str:
    for word in HINT_WORDS:
        for colon in (": ", "："):
            if line.startswith(f"  {word}{colon}"):
                return line[len(word) + len(colon) + 2:]
    return line


def hint_line(message: str) -> str | None:
    """The hint of a FAIL message, without its label; None when it has none."""
    lines = str(message).splitlines()
    index = _hint_at(lines)
    return None if index is None else _label_off(lines[index])


def problem_line(message: str) -> str:
    """The line under a FAIL header: what differed or what was raised (for unnamed failures)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("FAIL "):
        return lines[1]
    return lines[0] if lines else ""


@dataclass
class Why:
    """Why one check failed (None for a check that passed): what a record keeps (`to_json`)."""
    kind: str                        # one of FAILURES
    id: str = ""                     # the hint's msgid, a cause id (CAUSE_IDS), "" or UNKNOWN
    case: str | None = None          # the case that failed (English name), or the hidden kind
    tests: str | None = None         # under a crash's hint: the msgid of what the case tests
    roots: tuple[str, ...] = ()      # "blocked": the checks it failed because of

    def to_json(self) -> dict:
        data = {"kind": self.kind, "id": self.id, "case": self.case, "roots": list(self.roots)}
        if self.tests:
            data["tests"] = self.tests
        return data

    @classmethod
    def from_json(cls, data: dict) -> "Why":
        return cls(str(data.get("kind", "fail")), str(data.get("id") or ""), data.get("case"),
                   data.get("tests"), tuple(data.get("roots") or ()))

    @property
    def named(self) -> bool:
        """The failure's hint names a cause the catalog knows."""
        return self.kind == "fail" and self.id not in ("", UNKNOWN)


UNKNOWN = "unknown"   # a record written before records kept the cause


def _engine_texts() -> tuple[set[str], set[str]]:
    """(hints that name no cause, notes that carry a case's own hint) of the check engine."""
    try:
        from course.checks.hints import CASE_TESTS, RAISED_UNKNOWN
    except Exception:  # noqa: BLE001 - a course without them: every hint names its cause
        return set(), set()
    return {RAISED_UNKNOWN}, {CASE_TESTS}


def _tests(known: Catalog, lines: list[str], notes: set[str]) -> str | None:
    """The msgid of what the failing case tests, from a note such as "this case tests: ..."."""
    for line in lines:
        if not line.startswith("  ") or line.startswith("   "):
            continue
        found = known.match(line)
        if found and found[0].msgid in notes and found[1].groups():
            return known.cause(found[1].group(1))
    return None


def classify(passed: bool, message: str, confirmed: bool | None, hidden_failure: str | None,
             blocked_by: list[str], known: Catalog | None = None) -> Why | None:
    """Why a check failed, from its verdict (see the module's docstring); None: it passed.
    Without a catalog (`known` empty) the kind and roots are read, the hint is UNKNOWN."""
    if passed:
        return None
    message = str(message or "")
    first = message.lstrip().splitlines()[0] if message.strip() else ""
    if confirmed is False or first.startswith(UNCONFIRMED):
        why = first[len(UNCONFIRMED):].lower()
        if hidden_failure is None and ("ran past" in why or "time limit" in why):
            return Why("timeout", TIMEOUT)
        if hidden_failure is None and "process died" in why:
            return Why("error", CRASHED)
        return Why("hidden", HIDDEN, hidden_failure)   # no case: its result was refused
    blocked = BLOCKED_HEADER.match(first)
    if blocked_by or blocked:
        return Why("blocked", BLOCKED, roots=tuple(blocked_by or blocked["roots"].split(", ")))
    after = NOT_RUN_AFTER.match(first)
    if after:
        return Why("blocked", BLOCKED, roots=(after["id"],))
    if first.startswith("NOT IMPLEMENTED YET") or first == "no submission":
        return Why("todo", NOT_IMPLEMENTED)
    if first.startswith("TIMEOUT") or first.startswith("not run: the student's time limit"):
        return Why("timeout", TIMEOUT)
    if first.startswith("CRASHED"):
        return Why("error", CRASHED)
    if first.startswith("exercises/") and " could not be imported" in first:
        return Why("error", IMPORT_ERROR)
    if first.startswith("grader error"):
        return Why("error", GRADER_ERROR)
    header = FAIL_HEADER.match(first)
    if header is None:
        return Why("error", NOT_RUN if first.startswith("not run") else CELL_ERROR)
    known = known if known is not None else catalog()
    if not known.templates:
        return Why("fail", UNKNOWN, header["case"])
    unnamed, notes = _engine_texts()
    lines = message.splitlines()
    index = _hint_at(lines)
    cause = known.cause(_label_off(lines[index])) if index is not None else None
    tests = _tests(known, lines[index + 1:], notes) if index is not None else None
    if cause in unnamed and tests:   # the code raised where no hint knows the exception: what
        cause, tests = tests, None   # the failing case tests names the likely bug
    return Why("fail", "" if cause is None or cause in unnamed else cause,
               known.english_case(header["case"]), tests if tests != cause else None)


def annotate(record, known: Catalog | None = None) -> None:
    """Set a CheckRecord's `cause` from its verdict (the grader calls it once per check)."""
    why = classify(record.passed, record.message, record.confirmed, record.hidden_failure,
                   record.blocked_by, known)
    record.cause = None if why is None else why.to_json()


def why(record) -> Why | None:
    """Why a record's check failed (None: it passed). A record written before records kept the
    cause is read from its verdict: its kind and roots are known, its hint is UNKNOWN."""
    if record.passed:
        return None
    stored = getattr(record, "cause", None)
    if isinstance(stored, dict):
        return Why.from_json(stored)
    return classify(False, record.message, record.confirmed, record.hidden_failure,
                    record.blocked_by, Catalog([]))
