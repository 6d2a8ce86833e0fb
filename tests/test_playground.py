"""The playground (`make playground`): which widgets it shows, and that none needs exercises/.

The real-browser test of the page is in tests/test_browser.py."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

from course import ROOT
from course.playground import NOTEBOOK, render
from course.widgets import playground


def test_every_widget_module_of_a_lesson_is_on_the_page():
    shown = {e.target.split(":")[0] for e in playground.entries()}
    modules = {p.stem for p in (ROOT / "course" / "widgets").glob("lesson[0-9][0-9].py")}
    assert modules <= shown, f"widget modules missing from the playground: {modules - shown}"


def test_every_lesson_from_01_to_08_has_a_widget_on_the_page():
    lessons = {e.lesson for e in playground.entries()}
    assert {f"{n:02d}" for n in range(1, 9)} <= lessons


def test_every_lesson_with_a_widget_shows_it_in_its_notebook():
    """So the browser test (tests/test_browser.py, one run per such notebook) moves its controls
    in the lesson too, not only on the playground page."""
    from tests.browser import widget_notebooks

    shown = {path.name[:2] for path in widget_notebooks()}
    for entry in playground.entries():
        assert entry.lesson in shown, f"{entry.notebook} shows no widget"
        function = entry.target.split(":")[1]
        source = next((ROOT / "notebooks" / "src").glob(f"{entry.lesson}_*.py")).read_text()
        assert f"{function}(" in source, f"{entry.notebook} never calls {function}"


def test_every_widget_on_the_page_has_a_title_written_for_it():
    """A registry title (says what a self-learner sees), not one made from a docstring."""
    registered = {e.target for e in playground.REGISTRY}
    for entry in playground.entries():
        assert entry.target in registered, f"{entry.target}: add a REGISTRY line with its title"
        assert len(entry.title.split()) >= 8, f"{entry.target}: title too short: {entry.title!r}"


def test_titles_captions_and_control_labels_go_through_the_translation(monkeypatch):
    """With `_` replaced by a marker, every title and caption on the page comes out marked."""
    import importlib

    def marked(message):
        return f"«{message}»"

    monkeypatch.setattr(playground, "_", marked)
    for entry in playground.entries():
        module = importlib.import_module(f"course.widgets.{entry.target.split(':')[0]}")
        assert "«" in playground.header(entry).value, entry.target
        monkeypatch.setattr(module, "_", marked)
        box = entry.build()
        caption = box.children[-1].value
        assert caption.startswith("<i>«") and "Try" in caption, (entry.target, caption)
        labels = [c.description for c in box.children[0].children]
        assert any("«" in label for label in labels), (entry.target, labels)


def test_every_registered_widget_exists_and_names_its_lesson_notebook():
    for entry in playground.entries():
        module, function = entry.target.split(":")
        assert callable(getattr(__import__(f"course.widgets.{module}", fromlist=[function]), function))
        assert entry.notebook is not None, f"{entry.target}: no notebooks/{entry.lesson}_*.ipynb"
        assert f"notebooks/{entry.notebook}" in playground.lesson_link(entry)


def test_a_new_lessons_explorer_is_discovered_by_convention(tmp_path, monkeypatch):
    """A lessonNN.py with a `*_explorer()` (no required argument) appears with no registry line."""
    import course.widgets

    (tmp_path / "lesson97.py").write_text(textwrap.dedent('''
        import ipywidgets as widgets

        def toy_explorer(n: int = 3):
            """A toy widget for the test."""
            return widgets.IntSlider(value=n)

        def needs_data_explorer(data):
            return widgets.Label(str(data))
    '''))
    monkeypatch.setattr(course.widgets, "__path__", [*course.widgets.__path__, str(tmp_path)])
    found = {e.target: e for e in playground.entries()}
    assert found["lesson97:toy_explorer"].title == "A toy widget for the test"
    assert "lesson97:needs_data_explorer" not in found  # only a registry entry can pass `data`
    assert found["lesson97:toy_explorer"].build().value == 3
    sys.modules.pop("course.widgets.lesson97", None)


def test_the_widgets_build_without_exercises_or_solutions():
    """Import of `exercises` or `solutions` is forbidden while every widget builds and redraws."""
    script = textwrap.dedent('''
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("exercises", "solutions"):
                    raise ImportError(f"the playground imported {name}")
        sys.meta_path.insert(0, Block())
        from course.widgets.playground import entries, header
        for entry in entries():
            widget = entry.build()
            header(entry)
            if hasattr(widget, "redraw"):
                widget.redraw()
            print("built", entry.target)
    ''')
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("built") == len(playground.entries())


def test_the_committed_page_is_written_from_its_source():
    assert json.loads(NOTEBOOK.read_text()) == json.loads(render()), (
        "notebooks/playground.ipynb is stale: run `python -m course.playground --write`")


def test_the_repository_setting_agrees_everywhere():
    from course.repository import current, disagreements

    assert "/" in current()
    assert disagreements() == []


FAKE_VOILA = """
class Voila:
    @classmethod
    def launch_instance(cls, argv=None, config=None):
        print("VOILA", *argv)
        print("CONFIG", config.VoilaConfiguration.prelaunch_hook.__name__,
              config.VoilaConfiguration.multi_kernel_manager_class.__name__)
"""


def start_with_a_fake_voila(tmp_path, *args: str) -> list[str]:
    """`python -m course.playground ARGS` with a stand-in `voila` that prints its arguments and
    exits: what the learner sees before Voilà starts, then what Voilà was asked to do."""
    fake = tmp_path / "fake" / "voila"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "app.py").write_text(FAKE_VOILA)
    done = subprocess.run([sys.executable, "-m", "course.playground", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": f"{fake.parent}{os.pathsep}{ROOT}"})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_address_is_printed_before_voila_starts_and_is_the_one_it_serves(tmp_path):
    import socket

    with socket.socket() as taken:  # a port in use gives way to a free one, printed and served
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        lines = start_with_a_fake_voila(tmp_path, "--no-browser", "--port", str(busy))
    voila = [i for i, line in enumerate(lines) if line.startswith("VOILA ")]
    shown = [i for i, line in enumerate(lines) if "http://127.0.0.1:" in line]
    assert shown and voila and shown[0] < voila[0], lines
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", lines[shown[0]])[1])
    assert port != busy
    argv = lines[voila[0]].split()
    assert f"--port={port}" in argv and "--Voila.port_retries=0" in argv and "--no-browser" in argv
    assert "--Voila.ip=127.0.0.1" in argv and argv[1].endswith("notebooks/playground.ipynb")
    # through the course's server: the page's kernel is freed when the page goes
    assert "CONFIG set_xsrf_cookie PlaygroundKernelManager" in lines


def test_the_playground_server_culls_idle_kernels_and_sets_the_xsrf_cookie():
    """Voilà's kernel manager, as the playground configures it: idle kernels that no page is
    connected to are culled, connected ones never; the page's response sets the `_xsrf` cookie
    (tornado sets it when its token is first read) that Voilà's shutdown request carries."""
    from course import playground_server as server

    manager = server.PlaygroundKernelManager(config=server.config())
    assert (manager.cull_idle_timeout, manager.cull_interval) == (server.CULL_IDLE,
                                                                  server.CULL_INTERVAL)
    assert manager.cull_connected is False and manager.cull_busy is False
    assert 0 < manager.disconnect_grace < server.CULL_IDLE

    class Page:
        read = 0

        @property
        def xsrf_token(self):
            Page.read += 1
            return b"token"

    assert server.set_xsrf_cookie(Page(), notebook=None, cwd=".") is None
    assert Page.read == 1


def test_the_chinese_page_prints_its_address_in_chinese(tmp_path):
    lines = start_with_a_fake_voila(tmp_path, "--no-browser", "--lang", "zh")
    assert lines[0].startswith("游乐场：http://127.0.0.1:"), lines
    (voila,) = [line for line in lines if line.startswith("VOILA ")]
    assert voila.split()[1].endswith("notebooks/zh/playground.ipynb")
