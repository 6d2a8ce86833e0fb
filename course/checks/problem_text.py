"""What a check found, in the learner's language, at the moment it is shown.

The comparisons (outputs.py), the input guards (inputs.py, running.py) and the hidden judge
(course/confirm/judge.py) write what they find in English, because code reads it afterwards: the
diagnoses in hints.py look for " shape: expected", the grader's reports stay English for the
instructor. So the text is translated where a learner reads it (a FAIL message, `make check
HIDDEN=1`), by matching it against the forms those modules write:

    localised("output shape (2, 3) as expected; max |expected - got| = 0.5 (tolerance 1e-08 + 1e-06*|expected|)")
    # in Chinese: "output 形状 (2, 3) 符合预期；max |expected - got| = 0.5（容差 1e-08 + 1e-06*|expected|）"

Labels (`output`, `grad q`, `param weight`), shapes, dtypes and numbers are kept as written. Text
of any other form comes back unchanged; in English every form gives back its own input.
"""
from __future__ import annotations

import re

from course.i18n import N_, _

# (the form, as a regular expression of the whole text; its template, with the same fields).
# Order matters where one form ends another: the dtype note and the hidden-case prefix first.
FORMS = [
    (r"(?P<problem>.+); and its dtype is (?P<have>\S+), not (?P<want>\S+)",
     N_("{problem}; and its dtype is {have}, not {want}")),
    (r"hidden case '(?P<case>[^']*)': (?P<problem>.+)",
     N_("hidden case '{case}': {problem}")),
    (r"(?P<label>.+?) shape: expected (?P<want>\([^)]*\)), got (?P<have>\([^)]*\))",
     N_("{label} shape: expected {want}, got {have}")),
    (r"(?P<label>.+?) dtype: expected (?P<want>\S+), got (?P<have>\S+) \(the values agree\)",
     N_("{label} dtype: expected {want}, got {have} (the values agree)")),
    (r"(?P<label>.+?) dtype: expected (?P<want>\S+), got (?P<have>\S+)",
     N_("{label} dtype: expected {want}, got {have}")),
    (r"(?P<label>.+?) shape (?P<shape>\([^)]*\)) as expected, but it holds (?P<n>\d+) NaN where "
     r"the reference has numbers",
     N_("{label} shape {shape} as expected, but it holds {n} NaN where the reference has "
        "numbers")),
    (r"(?P<label>.+?) shape (?P<shape>\([^)]*\)) as expected; max \|expected - got\| = "
     r"(?P<gap>\S+) \(tolerance (?P<atol>\S+) \+ (?P<rtol>\S+)\*\|expected\|\)",
     N_("{label} shape {shape} as expected; max |expected - got| = {gap} (tolerance {atol} + "
        "{rtol}*|expected|)")),
    (r"(?P<label>[\w .]+?): expected (?P<want>\[.*\]), got (?P<have>\[.*\])",
     N_("{label}: expected {want}, got {have}")),
    (r"raised (?P<name>[\w.]+): (?P<error>.*)", N_("raised {name}: {error}")),
    (r"the call changed its input\(s\) (?P<which>\[[^\]]*\]) in place \(e\.g\. `x -= \.\.\.` or "
     r"`x\.sub_`\): compute into a new tensor and leave the caller's tensors as they were",
     N_("the call changed its input(s) {which} in place (e.g. `x -= ...` or `x.sub_`): compute "
        "into a new tensor and leave the caller's tensors as they were")),
    (r"(?P<name>\S+) changed its input `(?P<label>[^`]+)` in place: the caller's tensor now has "
     r"shape (?P<shape>\([^)]*\)) after the call",
     N_("{name} changed its input `{label}` in place: the caller's tensor now has shape {shape} "
        "after the call")),
    (r"(?P<name>\S+) changed its input `(?P<label>[^`]+)` in place: the caller's tensor holds "
     r"different values after the call",
     N_("{name} changed its input `{label}` in place: the caller's tensor holds different values "
        "after the call")),
    (r"no result", N_("no result")),
    (r"the outputs are not plain tensors", N_("the outputs are not plain tensors")),
    (r"the call changed its input tensors in place",
     N_("the call changed its input tensors in place")),
]
_COMPILED = [(re.compile(pattern, re.S), template) for pattern, template in FORMS]
_NESTED = {"problem"}  # fields that hold a finding of their own


def localised(text: str) -> str:
    """`text` in the learner's language where it has one of FORMS, else unchanged."""
    for pattern, template in _COMPILED:
        match = pattern.fullmatch(text)
        if match:
            fields = {k: localised(v) if k in _NESTED else v for k, v in match.groupdict().items()}
            return _(template).format(**fields)
    return text
