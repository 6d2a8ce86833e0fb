"""Checks for every exercise, one module per lesson (`lessonNN.py`), found by `registry`.

    from course.checks import all_checks, get_check
    from course.checks.lesson01 import check_stable_softmax   # what a notebook's check cell does

The engine is `core` (cases, hints, the in-place guard), `outputs` compares results, `expected`
says where the reference results come from, `lines` owns the PASS/FAIL lines.
"""
from __future__ import annotations

from course.checks.core import Case, Check, CheckFailed, NotImplementedYet
from course.checks.registry import all_checks, get_check

__all__ = ["Case", "Check", "CheckFailed", "NotImplementedYet", "all_checks", "get_check"]
