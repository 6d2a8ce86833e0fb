"""Checks for every exercise, one module per lesson (`lessonNN.py`), collected in a registry."""
from __future__ import annotations

import importlib
import pkgutil

from course.checks.core import Case, Check, CheckFailed, NotImplementedYet

__all__ = ["Case", "Check", "CheckFailed", "NotImplementedYet", "all_checks", "get_check"]


def all_checks() -> dict[str, Check]:
    """Every Check defined in course/checks/lesson*.py, by id."""
    found: dict[str, Check] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("lesson"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Check):
                if value.id in found and found[value.id] is not value:
                    raise ValueError(f"two checks share the id {value.id}")
                found[value.id] = value
    return found


def get_check(check_id: str) -> Check:
    return all_checks()[check_id]
