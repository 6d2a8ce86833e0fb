"""What a failed check raises: FAIL (CheckFailed), TODO (NotImplementedYet), BLOCKED (Blocked).

All three are AssertionErrors, so a notebook shows them as a failed check, and CheckFailed
catches them all. The message is the whole story (see course/checks/lines.py for its first line);
the attributes are for `make check` and the grader.
"""
from __future__ import annotations


class CheckFailed(AssertionError):
    """A check found a difference; the message names the case and hints at the likely bug.

    errors: the exceptions the student's code raised, by case name (for show_traceback()).
    """

    def __init__(self, message: str, errors: dict[str, BaseException] | None = None):
        super().__init__(message)
        self.errors = dict(errors or {})


class NotImplementedYet(CheckFailed):
    """The implementation under test still raises NotImplementedError (an untouched stub)."""


class Blocked(CheckFailed):
    """The exercise fails, and an exercise it calls fails its own check (or is still a stub).

    roots: the ids of the checks that fail on their own (the causes to fix first);
    alone: "pass" (right with the reference in their place), "fail" (wrong on its own too) or
        "untried" (could not be separated from them);
    own: for "fail", the failure on its own.
    """

    def __init__(self, message: str, roots: list[str], alone: str,
                 own: CheckFailed | None = None, errors: dict[str, BaseException] | None = None):
        super().__init__(message, errors)
        self.roots, self.alone, self.own = list(roots), alone, own
