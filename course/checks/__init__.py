"""Checks for every exercise, one module per lesson (`lessonNN.py`), found by `registry`.

    from course.checks import all_checks, get_check
    from course.checks.lesson01 import check_stable_softmax   # what a notebook's check cell does

The engine is `core` (Case, Check), `running` (every case on an implementation), `hints` (the hint
from all the evidence), `depends` (BLOCKED: a failing exercise it uses; COURSE_ISOLATE),
`messages` and `failures` (what a failed check says and raises), `outputs` compares results,
`expected` says where the reference results come from, `lines` owns the PASS/FAIL/BLOCKED lines,
`kinds` derives the cases every exercise gets (float32, the meta device, gradients), `families`
fits a formula's free constant (another LayerNorm eps) instead of widening a tolerance.
"""
from __future__ import annotations

from course.checks.core import Case, Check, show_traceback
from course.checks.failures import Blocked, CheckFailed, NotImplementedYet
from course.checks.registry import all_checks, get_check

__all__ = ["Blocked", "Case", "Check", "CheckFailed", "NotImplementedYet", "all_checks",
           "get_check", "show_traceback"]
