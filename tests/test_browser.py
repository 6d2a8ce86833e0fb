"""The widgets in a real browser: JupyterLab 4 + Debian's chromium driven by pip playwright.

One JupyterLab serves two scratch copies of the course (solutions laid over exercises/):
  good/    as committed, plus a small demo notebook, so the machinery is tested even while no
           lesson shows widgets yet;
  broken/  the same, with one callback of course/widgets/base.py broken on purpose: the first
           control of every widget raises instead of redrawing. The browser test must notice.

Needs /usr/bin/chromium (Debian package `chromium`; .ci/run installs it). Without it these tests
FAIL with the install command: they never skip.
"""
from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

from course.workspace import solutions_workspace
from tests import browser

pytestmark = pytest.mark.slow

DEMO_NAME = "98_browser_test_demo.ipynb"
LESSON_WIDGETS = "lessons.widgets.ipynb"  # every lesson's widget cells (browser.widget_slices)
CYCLES = 10  # open-and-leave cycles of the playground page, each way of leaving five times
DEMO_SOURCE = '''\
import ipywidgets as widgets
import numpy as np
from course.widgets.base import live_figure


def draw_wave(fig, frequency, phase, shape):
    ax = fig.subplots()
    x = np.linspace(0, 2 * np.pi, 200)
    y = np.sin(frequency * x + phase)
    ax.plot(x, np.sign(y) if shape == "square" else y)
    ax.set_xlabel("x")
    ax.set_ylabel("y")


live_figure(draw_wave, {
    "frequency": widgets.IntSlider(value=2, min=1, max=8, description="frequency"),
    "phase": widgets.FloatSlider(value=0.0, min=0.0, max=3.0, step=0.1, description="phase"),
    "shape": widgets.Dropdown(options=["sine", "square"], description="shape"),
}, "A demo of the browser test: every control redraws the figure.")
'''
DEMO_SOURCE_2 = '''\
def draw_bars(fig, grid, colour, n):
    ax = fig.subplots()
    ax.bar(range(n), np.arange(1, n + 1), color=colour)
    ax.grid(grid)
    ax.set_xlabel("bar")
    ax.set_ylabel("height")


live_figure(draw_bars, {
    "grid": widgets.Checkbox(value=False, description="grid"),
    "colour": widgets.ToggleButtons(options=["tab:blue", "tab:red"], description="colour"),
    "n": widgets.SelectionSlider(options=[2, 4, 8, 16], value=4, description="bars"),
}, "A second demo widget: a checkbox, toggle buttons and a selection slider.")
'''
# controls and their output displayed apart (ipywidgets.interactive_output), not via live_figure
DEMO_SOURCE_3 = '''\
from IPython.display import display

count = widgets.IntSlider(value=3, min=1, max=9, description="count")
squares = widgets.interactive_output(lambda count: print("squares:", [i * i for i in range(count)]),
                                     {"count": count})
display(count, squares)
'''

BASE_CALLBACK = '''    for control in controls.values():
        control.observe(redraw, names="value")
'''
BROKEN_CALLBACK = '''    def broken(_change):  # deliberately broken (tests/test_browser.py): never redraws
        raise RuntimeError("callback broken on purpose")

    for index, control in enumerate(controls.values()):
        control.observe(broken if index == 0 else redraw, names="value")
'''


def demo_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# Browser test demo"),
                      nbformat.v4.new_code_cell("import course_setup  # noqa: F401"),
                      nbformat.v4.new_code_cell(DEMO_SOURCE),
                      nbformat.v4.new_code_cell(DEMO_SOURCE_2),
                      nbformat.v4.new_code_cell(DEMO_SOURCE_3)]
    notebook.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)",
                                        "language": "python", "name": "python3"}}
    return notebook


def break_one_callback(workspace: Path) -> None:
    base = workspace / "course" / "widgets" / "base.py"
    source = base.read_text()
    assert BASE_CALLBACK in source, ("course/widgets/base.py no longer wires controls as this "
                                     "test expects: update BASE_CALLBACK in tests/test_browser.py")
    base.write_text(source.replace(BASE_CALLBACK, BROKEN_CALLBACK))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(browser, url): one chromium and one JupyterLab for every test of this file."""
    root = tmp_path_factory.mktemp("browser")
    good = solutions_workspace(root / "good")
    broken = solutions_workspace(root / "broken")
    break_one_callback(broken)
    for workspace in (good, broken):
        nbformat.write(demo_notebook(), workspace / "notebooks" / DEMO_NAME)
    nbformat.write(browser.widget_slices(browser.widget_notebooks()),
                   good / "notebooks" / LESSON_WIDGETS)
    try:
        opened = browser.chromium()
        chromium = opened.__enter__()
    except browser.BrowserUnavailable as error:
        message = str(error)
    else:
        try:
            with browser.jupyterlab(root) as url:
                yield chromium, url
        finally:
            opened.__exit__(None, None, None)
        return
    pytest.fail(f"the browser could not start (a failure, not a skip): {message}", pytrace=False)


def exercise(served, relative, **options):
    chromium, url = served
    result = browser.exercise_notebook(chromium, url, relative, **options)
    print(result.summary())
    return result


def test_demo_widgets_redraw_when_every_control_moves(served):
    start = time.perf_counter()
    result = exercise(served, f"good/notebooks/{DEMO_NAME}")
    assert result.failures() == []
    kinds = sorted(c.kind for w in result.widgets for c in w.controls)
    assert kinds == ["checkbox", "dropdown", "slider", "slider", "slider", "slider", "toggle-buttons"]
    assert len(result.widgets) == 4  # two live figures, a slider and the Output it drives
    print(f"demo notebook in {time.perf_counter() - start:.1f} s")


def test_lesson_widgets_redraw_when_their_controls_move(served, tmp_path):
    """Every lesson notebook that shows widgets: its widget cells, with its set-up cell and the
    cells they read from (browser.widget_slice; every other cell runs under nbval), all lessons
    in one JupyterLab page and kernel; every control moved, its output changes."""
    result = exercise(served, f"good/notebooks/{LESSON_WIDGETS}", screenshots=tmp_path)
    stored = browser.stored_widgets(browser.widget_slices(browser.widget_notebooks()))
    assert len(result.widgets) >= max(stored, 1), (
        f"{stored} widget outputs committed, {len(result.widgets)} rendered in the browser")
    interactive = [w for w in result.widgets if w.controls]  # not a progress bar
    assert len(interactive) >= len(browser.widget_notebooks())  # one explorer per lesson at least
    for widget in interactive:
        assert Path(widget.screenshot).stat().st_size > 2000, "empty screenshot"
    failures = result.failures()
    assert not failures, "\n".join(failures)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A fresh handout: untouched stubs, no solutions/, as a self-learner gets it."""
    from course.handout import build

    return build(tmp_path_factory.mktemp("handout") / "release")


def test_the_playground_page_every_control_redraws(served, release, tmp_path):
    """`make playground` as a self-learner meets it: Voilà serving a fresh handout (untouched
    stubs, no solutions/), every widget of the course on the page, every control moved."""
    from course.widgets.playground import entries

    chromium, _lab = served  # one playwright per process: reuse this file's chromium
    expected = len(entries())
    with browser.voila(release / "notebooks" / "playground.ipynb") as url:
        result = browser.exercise_page(chromium, url, expected, screenshots=tmp_path / "shots")
    print(result.summary())
    assert len(result.widgets) == expected
    assert all(w.controls for w in result.widgets), "a playground widget without controls"
    for widget in result.widgets:
        assert Path(widget.screenshot).stat().st_size > 2000, "empty screenshot"
    failures = result.failures()
    assert not failures, "\n".join(failures)


def test_the_playground_frees_the_kernel_of_every_page_it_served(served, release):
    """Ten times: the playground page opened, drawn, then left, by closing the tab (whose
    shutdown request may never leave) or by navigating away (a reload: the page's own shutdown
    request). Each kernel holds torch (about 0.5 GB): at most one may be left, counted among
    the server's processes once a closed page's grace period has passed."""
    from course.playground_server import DISCONNECT_GRACE
    from course.widgets.playground import entries

    chromium, _lab = served
    expected, counts, seconds = len(entries()), [], []
    with browser.voila_server(release / "notebooks" / "playground.ipynb") as server:
        for cycle in range(CYCLES):
            seconds.append(browser.open_and_leave(chromium, server.url, expected,
                                                  leave="navigate" if cycle % 2 else "close"))
            counts.append(len(server.kernels()))
        deadline = time.monotonic() + DISCONNECT_GRACE + 30
        while server.kernels() and time.monotonic() < deadline:
            time.sleep(1)
        left = server.kernels()
        log = server.log.read_text()
    refused = [line for line in log.splitlines() if "403 POST" in line and "shutdown" in line]
    after_grace = log.count("no page connected for")
    print(f"kernels after each of the {CYCLES} cycles: {counts}; left after "
          f"{DISCONNECT_GRACE:.0f} s: {len(left)}; freed by the page's shutdown request: "
          f"{log.count('Kernel shutdown:') - after_grace}, by the grace period: {after_grace}; "
          f"a cycle took {min(seconds):.1f}-{max(seconds):.1f} s")
    assert not refused, refused  # the page's own shutdown request is accepted
    assert len(left) <= 1, left


def test_a_broken_callback_fails_the_browser_test(served):
    """base.py's first control of every widget raises instead of redrawing: each is reported."""
    result = exercise(served, f"broken/notebooks/{DEMO_NAME}", change_timeout=6)
    failures = result.failures()
    assert len(result.widgets) == 4
    for widget in result.widgets[:2]:  # the live figures; the interactive_output one still works
        first, *others = widget.controls
        assert first.moved and not first.changed, first
        assert "output it drives did not change" in first.detail
        assert all(c.ok for c in others), others
    assert all(c.ok for w in result.widgets[2:] for c in w.controls)
    assert len(failures) == 2, failures
    assert "'frequency'" in failures[0] and "'grid'" in failures[1]


def test_a_missing_browser_fails_with_the_install_command(monkeypatch):
    monkeypatch.setattr(browser, "CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(browser.BrowserUnavailable, match="apt-get install -y chromium"):
        with browser.chromium():
            pass
