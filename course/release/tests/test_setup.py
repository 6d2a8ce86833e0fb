"""`make test` in your copy of the course: is the set-up complete, do the checks and widgets work?

None of this tests your exercises (that is `make check` and each lesson's check cells): it must
pass before you have written anything, and after.
"""
from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys

import pytest

from course import ROOT


@pytest.mark.parametrize("package", ["torch", "matplotlib", "ipywidgets", "jupyterlab",
                                     "torchview", "tqdm", "voila", "nbformat"])
def test_the_course_packages_import(package):
    importlib.import_module(package)


def test_graphviz_dot_is_found():
    assert shutil.which("dot"), "Graphviz's `dot` is missing: run `make venv` (or `make lab`)"


def test_every_check_has_its_recorded_reference():
    from course.handout import problems

    assert problems(ROOT) == []


def test_make_check_lists_every_exercise_and_exits_0():
    from course.checks import all_checks

    done = subprocess.run([sys.executable, "-m", "course.progress"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    for check_id in all_checks():
        assert f" {check_id} " in done.stdout, f"{check_id} missing from make check:\n{done.stdout}"
    assert "reference" not in done.stdout.lower(), done.stdout  # every recorded result was found


def test_every_lesson_notebook_is_valid():
    import nbformat

    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks, "no lesson notebooks"
    for path in notebooks:
        nbformat.validate(nbformat.read(path, as_version=4))


def test_every_playground_widget_builds_and_redraws():
    from course.widgets.playground import entries

    shown = entries()
    assert shown, "the playground shows no widget"
    for entry in shown:
        widget = entry.build()
        if hasattr(widget, "redraw"):  # a live figure: draw it again, as a moved control does
            widget.redraw()


def test_the_playground_page_is_current():
    from course.playground import NOTEBOOK, render

    assert json.loads(NOTEBOOK.read_text()) == json.loads(render())
