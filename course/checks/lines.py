"""The lines a check prints or raises, written and read in one place.

Checks print a PASS line and raise messages that start with FAIL, BLOCKED or NOT IMPLEMENTED YET;
`make check` turns them into PASS / FAIL / BLOCKED / TODO rows; the grader reads them from a check
cell's output. All three use these functions, so the format can change here and only here. The
words and check ids are never translated: instructors and the grader read them in every language.

    PASS 01.stable_softmax (11 cases)
    FAIL 01.scaled_scores, case 'seed example q=[1,0], keys [1,0], [0,1]':
    BLOCKED 02.attention_weights by 01.scaled_scores:
    NOT IMPLEMENTED YET: 02.causal_mask calls ...

A BLOCKED line names the checks that block this one (the root causes, comma-separated): the
exercise fails because an exercise it calls fails its own check.
"""
from __future__ import annotations

import re

from course.i18n import ENGLISH, N_, _, language, translations

PASS, FAIL, BLOCKED, TODO = "PASS", "FAIL", "BLOCKED", "TODO"
NOT_IMPLEMENTED = "NOT IMPLEMENTED YET"
_BLOCKED = re.compile(rf"^{BLOCKED} (?P<id>\S+) by (?P<roots>\S+(?:, \S+)*):")


def pass_line(check_id: str, n_cases: int) -> str:
    """The one line a passing check prints (the grader looks for exactly this line)."""
    return f"{PASS} {check_id} ({n_cases} cases)"


def visible_only(n_cases: int) -> str:
    """Printed under a PASS line, in the learner's language: what a PASS covers (the PASS line
    itself stays as the grader reads it)."""
    return _("  ({n} visible cases: the grader also tries hidden ones, as `make check HIDDEN=1` "
             "does)").format(n=n_cases)


def fail_header(check_id: str, name: str) -> str:
    """The first line of a failure: which check, which case (its name in the learner's
    language; the grader reads only the word and the id)."""
    return f"{FAIL} {check_id}, case '{case_name(name)}':"


CASE_NAME = "case name"  # the catalog's context for the names of cases
# what course/checks/kinds.py appends to the name of a case it derives (", in float32", ...)
_SUFFIXES = [(re.compile(r"(?P<base>.+), in (?P<dtype>float32|bfloat16|float16)"), N_("in {dtype}")),
             (re.compile(r"(?P<base>.+), on the meta device"), N_("on the meta device")),
             (re.compile(r"(?P<base>.+), called twice"), N_("called twice"))]


def case_name(name: str) -> str:
    """A case's name in the learner's language: the catalog's entry with the context CASE_NAME;
    a derived case's name is its base case's, then its translated suffix."""
    if language() == ENGLISH:
        return name
    for pattern, suffix in _SUFFIXES:
        match = pattern.fullmatch(name)
        if match:
            return _("{base}, {suffix}").format(
                base=case_name(match["base"]), suffix=_(suffix).format(**{
                    k: v for k, v in match.groupdict().items() if k != "base"}))
    return translations(language()).pgettext(CASE_NAME, name)


def blocked_header(check_id: str, roots: list[str]) -> str:
    """The first line of a check blocked by others: which check, blocked by which."""
    return f"{BLOCKED} {check_id} by {', '.join(roots)}:"


def not_implemented_prefix(check_id: str) -> str:
    """How the message of a check whose exercise is still a stub begins."""
    return f"{NOT_IMPLEMENTED}: {check_id} "


def names_check(message: str, check_id: str) -> bool:
    """Whether an exception message is this check's own (FAIL, BLOCKED or NOT IMPLEMENTED YET)."""
    message = message.lstrip()
    return (message.startswith(f"{FAIL} {check_id},")
            or message.startswith(f"{BLOCKED} {check_id} by ")
            or message.startswith(not_implemented_prefix(check_id)))


def status_of(message: str) -> str | None:
    """FAIL, BLOCKED or TODO for a check's message; None for anything else."""
    message = message.lstrip()
    if message.startswith(f"{FAIL} "):
        return FAIL
    if _BLOCKED.match(message):
        return BLOCKED
    if message.startswith(f"{NOT_IMPLEMENTED}: "):
        return TODO
    return None


def blocked_by(message: str) -> list[str]:
    """The ids a BLOCKED message names as blocking its check ([] for any other message)."""
    match = _BLOCKED.match(message.lstrip())
    return match["roots"].split(", ") if match else []


def printed_pass(stdout: str, check_id: str, n_cases: int) -> bool:
    """Whether a cell's printed output holds this check's PASS line."""
    return pass_line(check_id, n_cases) in stdout.splitlines()


def summary(message: str) -> str:
    """A failure message in one line: the problem, then which case in brackets."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0]
    # "FAIL 01.x, case 'name':" says only which case; the problem is on the next line
    if first.startswith(f"{FAIL} ") and len(lines) > 1:
        first = lines[1] + " [" + first.split(", ", 1)[-1].rstrip(":") + "]"
    return first
