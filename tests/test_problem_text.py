"""course/checks/problem_text.py: every finding the comparisons, the input guards and the hidden
judge write has a form, comes back unchanged in English, and is translated whole elsewhere."""
from __future__ import annotations

import pytest
import torch

from course.checks import problem_text
from course.checks.inputs import inputs_unchanged, no_input_modified
from course.checks.outputs import difference
from course.checks.running import InputGuard
from course.confirm.judge import judge


def findings() -> list[str]:
    """One finding of every kind, written by the code that writes them."""
    a = torch.zeros(2, 3, dtype=torch.float64)
    found = [
        difference("output", a, torch.zeros(3, 2, dtype=torch.float64), 1e-8, 1e-6),
        difference("output", a, a.float(), 1e-8, 1e-6),
        difference("grad q", a, (a + 1).float(), 1e-8, 1e-6),
        difference("output", a, a.masked_fill(torch.eye(2, 3, dtype=torch.bool), float("nan")),
                   1e-8, 1e-6),
        difference("param weight", a, a + 0.5, 1e-8, 1e-6),
        difference("output", torch.tensor([1, 2]), torch.tensor([1, 3]), 0, 0),
        difference("output", torch.tensor([1, 2]), torch.tensor([1.0, 2.0]), 0, 0),
        "raised NameError: name 'reslt' is not defined",
    ]

    def subtract(x):
        x -= 1
        return x

    found.append(no_input_modified(inputs_unchanged(subtract, torch.ones(3))))
    guard = InputGuard()
    guard.wrap(subtract)(torch.ones(3))

    def grow(x):
        x.resize_(4)
        return x

    guard.wrap(grow)(torch.ones(3))
    found += guard.modified
    case = {"name": "a batch of one", "kind": "call"}
    found += [judge([case], [{"output": a}], [{"outputs": {"output": a + 1}}]),
              judge([case], [{"output": a}], [{"outputs": {"output": "x"}}]),
              judge([case], [{"output": a}], [None]),
              judge([case], [{"output": a}], [{"outputs": {"output": a,
                                                            "inputs modified": torch.tensor([True])}}])]
    assert all(isinstance(f, str) and f for f in found), found
    return found


def test_every_finding_has_a_form_and_english_is_unchanged(monkeypatch):
    for finding in findings():
        assert problem_text.localised(finding) == finding
    monkeypatch.setattr(problem_text, "_", lambda template: "«" + template + "»")
    for finding in findings():
        shown = problem_text.localised(finding)
        assert shown.startswith("«") and shown.replace("«", "").replace("»", "") == finding, finding


def test_text_of_no_form_is_left_alone():
    assert problem_text.localised("something else: entirely") == "something else: entirely"


@pytest.mark.parametrize("finding", [
    "output shape (2, 3) as expected; max |expected - got| = 0.5 (tolerance 1e-08 + 1e-06*|expected|)",
    "hidden case 'x': output shape: expected (2,), got (3,)"])
def test_a_chinese_finding_keeps_shapes_and_numbers(finding):
    from course.i18n import CHINESE, language, set_language

    before = language()
    set_language(CHINESE)
    try:
        shown = problem_text.localised(finding)
    finally:
        set_language(before)
    for kept in ("(2, 3)", "0.5", "1e-08", "(2,)", "(3,)"):
        assert (kept in finding) <= (kept in shown), (kept, shown)
