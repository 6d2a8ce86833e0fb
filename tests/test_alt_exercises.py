"""Correct code written differently passes every check and the lessons' strict nbval.

tests/alt_exercises/<module>.py holds other correct implementations of the exercises (einsum,
torch.softmax, reshape/unflatten for view, torch.where masking). Each is appended to its solution
module, so the lesson's given code stays and these definitions replace the exercise ones, as in a
student's file. Lesson 08's exercise (the G1 gate) is a small variation of lesson 03's and has none.
"""
import importlib
import sys

import pytest

from course import ROOT
from course.checks import all_checks
from course.workspace import solutions_workspace
from tests.notebook_runs import NOTEBOOKS, run_nbval

ALT = ROOT / "tests" / "alt_exercises"
LESSONS = ("00", "01", "02", "03", "04", "05", "06", "07")
PACKAGE = "alt_exercises_under_test"


def alt_modules() -> dict[str, str]:
    """File name -> the solution's source with the alternative definitions appended."""
    return {path.name: (ROOT / "solutions" / path.name).read_text()
            + f"\n\n# ---- correct but different: tests/alt_exercises/{path.name} ----\n\n"
            + path.read_text()
            for path in sorted(ALT.glob("*.py"))}


def write_alt_exercises(folder) -> None:
    for name, source in alt_modules().items():
        (folder / name).write_text(source)


def test_alt_files_replace_exercises():
    """Every alternative module redefines names its solution defines (nothing misspelt)."""
    import ast

    for path in sorted(ALT.glob("*.py")):
        defined = {n.name for n in ast.parse(path.read_text()).body
                   if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        solution = {n.name for n in ast.parse((ROOT / "solutions" / path.name).read_text()).body
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert defined and defined <= solution, f"{path.name}: {sorted(defined - solution)}"


@pytest.fixture(scope="module")
def alt_package(tmp_path_factory):
    root = tmp_path_factory.mktemp("alt")
    package = root / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    write_alt_exercises(package)
    sys.path.insert(0, str(root))
    try:
        yield PACKAGE
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@pytest.mark.parametrize("check_id", [c.id for c in all_checks().values() if c.lesson in LESSONS])
def test_alt_implementation_passes_check(alt_package, check_id):
    check = all_checks()[check_id]
    if not (ALT / f"{check.module}.py").exists():
        pytest.skip(f"no alternative for {check.module}")
    module = importlib.import_module(f"{alt_package}.{check.module}")
    check(getattr(module, check.attribute), quiet=True)


@pytest.fixture(scope="module")
def alt_workspace(tmp_path_factory):
    workspace = solutions_workspace(tmp_path_factory.mktemp("with_alt_exercises") / "course")
    write_alt_exercises(workspace / "exercises")
    return workspace


@pytest.mark.slow
@pytest.mark.parametrize("notebook", [p.name for p in NOTEBOOKS if p.name[:2] in LESSONS])
def test_strict_nbval_with_alt_exercises(alt_workspace, notebook):
    done, seconds = run_nbval(alt_workspace, notebook)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    print(f"{notebook}: strict nbval with the alternative exercises passed in {seconds:.1f} s")
