"""Every check carries the kinds of case its exercise calls for: what the exercise does is read
from a traced run of the reference on the check's own cases (course/checks/matrix.py), so a new
lesson, or a changed exercise, is held to the same rules without a list to keep by hand."""
import pytest

from course import ROOT
from course.checks import all_checks, matrix

# Lesson 09's checks were written before this test: the kinds they lack, until they carry them.
# Temporary, and held to the truth both ways (an entry its check no longer needs fails too):
# removed when lesson 09's own checks add these kinds.
LESSON_09_ALLOWANCE_UNTIL_MERGE = {
    "09.online_softmax": {"bfloat16", "size"},
    "09.tiled_forward": {"bfloat16", "edge gradients", "gradients", "meta", "size"},
    "09.tiled_backward": {"bfloat16", "large scores", "meta", "size"},
}


@pytest.mark.parametrize("check_id", list(all_checks()))
def test_check_carries_every_kind_its_exercise_calls_for(check_id):
    check = all_checks()[check_id]
    missing = matrix.missing(check) - LESSON_09_ALLOWANCE_UNTIL_MERGE.get(check_id, set())
    assert not missing, (
        f"{check_id} does what calls for {sorted(missing)} (it {sorted(matrix.properties(check))})"
        f" and has no such case: see docs/CONTRIBUTING.md, 'Kinds of case'")


@pytest.mark.parametrize("check_id", sorted(LESSON_09_ALLOWANCE_UNTIL_MERGE))
def test_the_allowance_names_only_what_is_missing(check_id):
    check = all_checks().get(check_id)
    if check is None:
        pytest.skip(f"{check_id} is not in this tree")
    stale = LESSON_09_ALLOWANCE_UNTIL_MERGE[check_id] - matrix.missing(check)
    assert not stale, f"{check_id} carries {sorted(stale)} now: take it out of the allowance"


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
