"""The lines a check prints or raises, written and read in one place.

Checks print a PASS line and raise messages that start with FAIL or NOT IMPLEMENTED YET; `make
check` turns them into PASS / FAIL / TODO rows; the grader reads them from a check cell's output.
All three use these functions, so the format can change here and only here. The words and check
ids are never translated: instructors and the grader read them in every language.
"""
from __future__ import annotations

PASS, FAIL, TODO = "PASS", "FAIL", "TODO"
NOT_IMPLEMENTED = "NOT IMPLEMENTED YET"


def pass_line(check_id: str, n_cases: int) -> str:
    """The one line a passing check prints."""
    return f"{PASS} {check_id} ({n_cases} cases)"


def fail_header(check_id: str, case_name: str) -> str:
    """The first line of a failure: which check, which case."""
    return f"{FAIL} {check_id}, case '{case_name}':"


def not_implemented_prefix(check_id: str) -> str:
    """How the message of a check whose exercise is still a stub begins."""
    return f"{NOT_IMPLEMENTED}: {check_id} "


def names_check(message: str, check_id: str) -> bool:
    """Whether an exception message is this check's own failure (FAIL or NOT IMPLEMENTED YET)."""
    message = message.lstrip()
    return (message.startswith(f"{FAIL} {check_id},")
            or message.startswith(not_implemented_prefix(check_id)))


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
