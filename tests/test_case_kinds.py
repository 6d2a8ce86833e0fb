"""Every check carries the kinds of case its exercise calls for: what the exercise does is read
from a traced run of the reference on the check's own cases (course/checks/matrix.py), so a new
lesson, or a changed exercise, is held to the same rules without a list to keep by hand."""
import pytest

from course import ROOT
from course.checks import all_checks, matrix


@pytest.mark.parametrize("check_id", list(all_checks()))
def test_check_carries_every_kind_its_exercise_calls_for(check_id):
    check = all_checks()[check_id]
    missing = matrix.missing(check)
    assert not missing, (
        f"{check_id} does what calls for {sorted(missing)} (it {sorted(matrix.properties(check))})"
        f" and has no such case: see docs/CONTRIBUTING.md, 'Kinds of case'")


def test_every_trace_runs():
    """A case the trace cannot run says nothing about the kinds: none may fail there."""
    failed = {f"{check_id}: {case.name}": trace.failed for check_id in all_checks()
              for case, trace in matrix.traces(check_id) if trace.failed}
    assert not failed, failed


def test_contributing_shows_the_current_matrix():
    text = (ROOT / "docs" / "CONTRIBUTING.md").read_text()
    start, stop = text.index(matrix.BEGIN), text.index(matrix.END) + len(matrix.END)
    assert text[start:stop] == matrix.document(), \
        "the matrix in docs/CONTRIBUTING.md is stale: `python -m course.checks.matrix --write`"
