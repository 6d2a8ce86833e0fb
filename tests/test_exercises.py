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
