"""exercises/ mirrors solutions/, and the recorded reference results match the solutions."""
import ast

from course import ROOT
from course.reference import verify
from course.stubs import differences


def test_exercises_are_the_generated_stubs():
    assert differences() == [], "run `make stubs` (and commit exercises/)"


def _api(path):
    """Public names with their signatures and docstrings."""
    tree = ast.parse(path.read_text())
    api = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            signature = ast.unparse(node.args) if isinstance(node, ast.FunctionDef) else ""
            api[node.name] = (signature, ast.get_docstring(node))
    return api


def test_same_names_signatures_and_docstrings():
    for solution in sorted((ROOT / "solutions").glob("*.py")):
        exercise = ROOT / "exercises" / solution.name
        assert exercise.exists(), f"exercises/{solution.name} missing"
        assert _api(exercise) == _api(solution), solution.name


def test_recorded_reference_matches_solutions():
    assert verify() == [], "run `make reference`"


def test_check_reports_a_missing_return():
    import pytest

    from course.checks import CheckFailed
    from course.checks.lesson00 import check_batched_dot

    def forgot_return(a, b):
        (a * b).sum(dim=-1)

    with pytest.raises(CheckFailed, match="return"):
        check_batched_dot(forgot_return)


def test_check_reports_a_crash_with_case_and_hint():
    import pytest

    from course.checks import CheckFailed
    from course.checks.lesson00 import check_batched_dot

    with pytest.raises(CheckFailed, match=r"(?s)case 'two vectors.*raised ZeroDivisionError.*hint"):
        check_batched_dot(lambda a, b: 1 / 0)
