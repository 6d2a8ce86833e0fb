"""The commands a learner is told to run next, in the language they run the course in."""
from __future__ import annotations


def make_check(arguments: str = "") -> str:
    """The `make check` command a learner is told to run next, in the language they run it in:
    with LANG=zh in the Chinese edition (without it, that run would answer in English)."""
    from course.i18n import ENGLISH, language

    chinese = language() != ENGLISH
    return " ".join(["make", "check"] + (["LANG=zh"] if chinese else []) + arguments.split())
