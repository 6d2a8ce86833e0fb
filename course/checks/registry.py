"""Every check of the course, found once: by id, by the name a notebook calls it by, and the
student's (or the solutions') function or class each one judges.

Checks live in `course/checks/lessonNN.py` as module-level `check_<what>` objects with ids
"NN.<what>". An id that changes keeps its old spelling in `ALIASES`, so points files and earlier
gradebooks that name it still work.
"""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from course.checks.core import Check

PACKAGE = "course.checks"  # the lessonNN.py modules beside this file

# old id -> current id (lesson 08's checks were numbered 07 before the course had lesson 07)
ALIASES = {
    "07.gate_elementwise": "08.gate_elementwise",
    "07.gate_headwise": "08.gate_headwise",
}


def canonical(check_id: str) -> str:
    """The current id of a check, whether `check_id` is current or an alias."""
    return ALIASES.get(check_id, check_id)


def _walk() -> tuple[tuple[str, str, "Check"], ...]:
    """(module name, attribute name, Check) for every Check in course/checks/lesson*.py."""
    from course.checks.core import Check

    found = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not info.name.startswith("lesson"):
            continue
        module = importlib.import_module(f"{PACKAGE}.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Check):
                found.append((info.name, name, value))
    return tuple(found)


def all_checks() -> dict[str, "Check"]:
    """Every check, by id, in lesson order (within a lesson, the order its module defines them)."""
    found: dict[str, Check] = {}
    for _, _, check in _walk():
        if check.id in found and found[check.id] is not check:
            raise ValueError(f"two checks share the id {check.id}")
        found[check.id] = check
    return dict(sorted(found.items(), key=lambda item: item[1].lesson))


def get_check(check_id: str) -> "Check":
    """The check with this id (or alias)."""
    return all_checks()[canonical(check_id)]


def by_function_name() -> dict[str, dict[str, "Check"]]:
    """`check_<what>` (the name a notebook's check cell calls) -> {lesson number: Check}."""
    names: dict[str, dict[str, Check]] = {}
    for _, name, check in _walk():
        if name.startswith("check_"):
            names.setdefault(name, {})[check.lesson] = check
    return names


def learner_texts() -> list[str]:
    """Every hint a check can show that its lesson module writes as a plain string (the cases'
    hints and shape hints, tag hints, transposed hints), each once: what a catalog of the
    learner's language needs beside the N_() strings of the engine. The engine translates them
    with `_()` when it builds a message."""
    found: dict[str, None] = {}
    for check in all_checks().values():
        for case in check.cases:
            for text in (case.hint, case.shape_hint):
                if text:
                    found[text] = None
        for text in list(check.tag_hints.values()) + [check.transposed_hint] + [
                hint for _, _, hint in check.error_hints]:
            if text:
                found[text] = None
    return list(found)


def case_names() -> list[str]:
    """The name of every case a lesson module writes (not those derived by course/checks/kinds.py,
    whose names are a case's name and a marked suffix), each once: the catalog holds them with
    the context CASE_NAME, and `lines.case_name` translates them where a learner reads them."""
    found: dict[str, None] = {}
    for check in all_checks().values():
        for case in check.cases:
            if case.variant is None:
                found[case.name] = None
    return list(found)
