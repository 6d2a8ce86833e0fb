"""The lesson notebooks: strict nbval against the solutions, check cells failing on the stubs.

Speed is measured, not asserted here (a busy machine would fail a timed test): each lesson's goal
is under 15 s on 2 CPU cores, 30 s at most; `scripts/bench_notebooks.py` prints the figures.

The Chinese notebooks (notebooks/zh/) run strict nbval too. Their
code cells are the English ones (tests/test_zh_notebooks.py), so the stubs test, the check-cell
rules and the check-coverage test run on the English notebooks only.
"""
import re

import jupytext
import pytest

from course import ROOT
from course.build import read_source, sources
from course.checks import all_checks
from course.workspace import solutions_workspace, stubs_workspace
from tests.notebook_runs import NOTEBOOKS, cells_tagged, execute_allowing_errors, run_nbval

NAMES = [p.name for p in NOTEBOOKS]
ZH_NAMES = [f"zh/{p.name}" for p in sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))]


@pytest.fixture(scope="module")
def solutions_copy(tmp_path_factory):
    return solutions_workspace(tmp_path_factory.mktemp("with_solutions") / "course")


@pytest.fixture(scope="module")
def stubs_copy(tmp_path_factory):
    return stubs_workspace(tmp_path_factory.mktemp("with_stubs") / "course")


def test_every_source_has_its_notebook():
    built = {p.stem for p in NOTEBOOKS}
    assert {p.stem for p in sources()} == built, "run `make notebooks` after adding a lesson"


@pytest.mark.parametrize("source", sources(), ids=lambda p: p.stem)
def test_committed_notebook_matches_its_source(source):
    """The .ipynb was built from the current jupytext source (cells and tags)."""
    committed = jupytext.read(ROOT / "notebooks" / f"{source.stem}.ipynb")
    fresh = read_source(source)
    def cells(nb):
        return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]
    assert cells(committed) == cells(fresh), f"notebooks/{source.stem}.ipynb is stale: run `make notebooks`"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NAMES + ZH_NAMES)
def test_strict_nbval_against_solutions(solutions_copy, notebook):
    done, seconds = run_nbval(solutions_copy, notebook)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    print(f"{notebook}: strict nbval passed in {seconds:.1f} s")


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NAMES)
def test_check_cells_fail_on_untouched_stubs(stubs_copy, notebook):
    executed = execute_allowing_errors(stubs_copy / "notebooks" / notebook)
    check_cells = cells_tagged(executed, "check")
    for cell in check_cells:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"check cell passed on the stubs:\n{cell.source}"
        assert "NOT IMPLEMENTED YET" in errors[0].evalue, errors[0].evalue
        assert "exercises/" in errors[0].evalue


def test_one_check_per_check_cell():
    """The grader gives points per check cell; a first failing check would hide a second one."""
    for path in NOTEBOOKS:
        for cell in cells_tagged(jupytext.read(path), "check"):
            calls = re.findall(r"\b(check_\w+)\(", cell.source)
            assert len(calls) == 1, f"{path.name}: a check cell calls {calls}"


def test_every_check_runs_in_a_check_cell():
    called = set()
    for path in NOTEBOOKS:
        notebook = jupytext.read(path)
        for cell in cells_tagged(notebook, "check"):
            called |= set(re.findall(r"\b(check_\w+)\(", cell.source))
    names = {name for name in _check_names()}
    missing = names - called
    assert not missing, f"checks no notebook runs in a cell tagged 'check': {sorted(missing)}"


def _check_names():
    import importlib
    import pkgutil

    import course.checks as package
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("lesson"):
            module = importlib.import_module(f"course.checks.{info.name}")
            for name, value in vars(module).items():
                if value in all_checks().values() and name.startswith("check_"):
                    yield name
