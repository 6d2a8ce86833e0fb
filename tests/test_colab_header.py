"""Opening the course anywhere: the Colab set-up cell (notebooks/src/_header.py) and Binder's
environment.yml.

The Colab cell sits under the title of every lesson. Outside Colab it must do nothing and print
nothing (nbval runs it in every notebook, too); in Colab it clones the course, installs what
Colab lacks and moves into the course's notebooks/ folder. Colab itself cannot be reached from
here, so its branch runs with a fake `google.colab` module and a stubbed `subprocess.run`.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import types
import uuid

import jupytext
import nbformat
import pytest
import yaml

from course import ROOT
from course.drift import code_without_comments
from course.build import (COLAB_TITLE, HEADER, WIDGET_STATE, WIDGET_TEXT, WIDGET_VIEW, clean,
                          header_cells)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))


def colab_cell() -> str:
    cells = [c for c in jupytext.read(HEADER).cells if "colab" in c.metadata.get("tags", [])]
    assert len(cells) == 1, "_header.py should hold exactly one cell tagged 'colab'"
    assert cells[0].cell_type == "code"
    return cells[0].source


@pytest.fixture
def calls(monkeypatch):
    """Record subprocess.run and os.chdir instead of running them; keep sys.path intact."""
    made = []
    monkeypatch.setattr(subprocess, "run",
                        lambda args, **kw: made.append(("run", list(args), kw)) or
                        subprocess.CompletedProcess(args, 0))
    monkeypatch.setattr(os, "chdir", lambda path: made.append(("chdir", str(path))))
    monkeypatch.setattr(sys, "path", list(sys.path))
    return made


def run_cell(namespace=None) -> dict:
    namespace = {} if namespace is None else namespace
    exec(compile(colab_cell(), "<colab cell>", "exec"), namespace)
    return namespace


def test_outside_colab_the_cell_does_nothing_and_prints_nothing(calls, monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    cwd, path = os.getcwd(), list(sys.path)
    namespace = run_cell()
    assert calls == []
    assert capsys.readouterr() == ("", "")
    assert os.getcwd() == cwd and sys.path == path
    # nothing left in the learner's namespace but the `sys` it imported
    assert set(namespace) - {"__builtins__"} == {"sys"}


def fake_colab(monkeypatch):
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)


def test_in_colab_the_cell_clones_installs_and_moves_into_the_course(calls, monkeypatch, capsys):
    fake_colab(monkeypatch)
    import importlib.util
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # a Colab without torchview
                        lambda name, *a: None if name == "torchview" else real_find_spec(name, *a))
    monkeypatch.setattr(os.path, "isdir", lambda p: False if "attention-course" in str(p) else True)
    namespace = run_cell()
    course = namespace["COURSE_DIR"]
    (_, clone, clone_kw), (_, pip, pip_kw), chdir = calls
    assert clone[:2] == ["git", "clone"] and clone[-2:] == [namespace["COURSE_REPO_URL"], course]
    assert namespace["COURSE_REPO_URL"].startswith("https://")
    assert clone_kw.get("check") is True
    assert pip[:4] == [sys.executable, "-m", "pip", "install"] and pip[-1] == "torchview"
    assert "torch" not in pip, "Colab has torch: reinstalling it would download GBs"
    assert "ipywidgets" not in pip, "ipywidgets 8 needs Colab's custom widget manager; keep Colab's"
    assert pip_kw.get("check") is True
    assert chdir == ("chdir", f"{course}/notebooks")
    assert sys.path[0] == f"{course}/notebooks"
    assert capsys.readouterr().out == ""


def test_in_colab_the_chinese_cell_moves_into_the_chinese_notebooks(calls, monkeypatch):
    """So that the Chinese lesson's `import course_setup` finds notebooks/zh/course_setup.py and
    the kernel speaks Chinese on Colab too."""
    fake_colab(monkeypatch)
    monkeypatch.setattr(os.path, "isdir", lambda p: True)
    (cell,) = header_cells("zh")
    namespace = {}
    exec(compile(cell.source, "<colab cell>", "exec"), namespace)
    course = namespace["COURSE_DIR"]
    assert calls == [("chdir", f"{course}/notebooks/zh")]
    assert sys.path[0] == f"{course}/notebooks/zh"


def test_in_colab_a_rerun_reuses_the_clone_and_skips_what_is_installed(calls, monkeypatch):
    fake_colab(monkeypatch)
    import importlib.util
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    monkeypatch.setattr(os.path, "isdir", lambda p: True)
    namespace = run_cell()
    run_cell(namespace)  # a second run (the learner reruns the cell)
    course = namespace["COURSE_DIR"]
    assert [c for c in calls if c[0] == "run"] == []
    assert calls == [("chdir", f"{course}/notebooks")] * 2
    assert sys.path.count(f"{course}/notebooks") == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_lesson_has_the_colab_cell_under_its_title_with_no_output(path):
    notebook = nbformat.read(path, as_version=4)
    tagged = [i for i, c in enumerate(notebook.cells) if "colab" in c.metadata.get("tags", [])]
    assert tagged == [1], f"{path.name}: the colab cell should come right after the title"
    assert notebook.cells[1].outputs == [], f"{path.name}: the colab cell printed something"


def test_the_colab_cell_is_one_short_line_on_screen():
    """Colab shows a form cell's title (cellView "form"), JupyterLab a hidden cell's first line
    (source_hidden): that line says what the cell does, in the edition's language."""
    (cell,) = jupytext.read(HEADER).cells
    assert cell.metadata["cellView"] == "form" and cell.metadata["jupyter"] == {"source_hidden": True}
    first = cell.source.splitlines()[0]
    assert first == f"# @title {COLAB_TITLE}" and len(first) <= 100
    (english,), (chinese,) = header_cells("en"), header_cells("zh")
    assert english.source == cell.source
    title = chinese.source.splitlines()[0]
    assert title.startswith("# @title ") and re.search(r"[\u4e00-\u9fff]", title), title
    # the same code; the comments in Chinese; Colab works in the edition's folder, so that
    # `import course_setup` finds notebooks/zh/course_setup.py (the Chinese set-up)
    assert code_without_comments(chinese.source.replace("/notebooks/zh", "/notebooks")) == \
        code_without_comments(cell.source)
    assert chinese.source.count('f"{COURSE_DIR}/notebooks/zh"') == 3
    assert "# Colab 自带 torch" in chinese.source and "Colab has torch" not in chinese.source


@pytest.mark.parametrize("path", NOTEBOOKS + ZH_NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / "notebooks").as_posix())
def test_every_widget_output_has_its_state_stored(path):
    """So JupyterLab draws each widget (controls and figure) before its cell runs, and a viewer
    without widgets shows a sentence instead of `VBox(children=...)`."""
    notebook = nbformat.read(path, as_version=4)
    state = notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                assert output.data[WIDGET_VIEW]["model_id"] in state, f"{path.name}: `make notebooks`"
                assert output.data["text/plain"].startswith("["), output.data["text/plain"]


def executed(ids: list[str]) -> nbformat.NotebookNode:
    """A notebook as nbclient leaves it: a VBox (ids[0]) holding an Image (ids[1]), shown once."""
    def model(name, **state):
        return {"model_name": name, "model_module": "@jupyter-widgets/controls",
                "model_module_version": "2.0.0", "state": state}

    notebook = nbformat.v4.new_notebook(metadata={"widgets": {WIDGET_STATE: {
        "state": {ids[0]: model("VBoxModel", children=[f"IPY_MODEL_{ids[1]}"]),
                  ids[1]: model("ImageModel")},
        "version_major": 2, "version_minor": 0}}})
    notebook.cells = [nbformat.v4.new_markdown_cell("# Lesson"), nbformat.v4.new_code_cell(
        "box", outputs=[nbformat.v4.new_output("display_data", data={
            WIDGET_VIEW: {"model_id": ids[0], "version_major": 2, "version_minor": 0},
            "text/plain": "VBox(children=(Image(value=b'...'),))"})])]
    return notebook


def test_a_build_keeps_the_widget_state_under_ids_that_do_not_change():
    first = clean(executed([uuid.uuid4().hex, uuid.uuid4().hex]))
    again = clean(executed([uuid.uuid4().hex, uuid.uuid4().hex]))
    assert first == again  # a rebuild without changes leaves the file as it was
    state = first.metadata.widgets[WIDGET_STATE]["state"]
    box, image = state
    assert state[box]["state"]["children"] == [f"IPY_MODEL_{image}"]
    output = first.cells[1].outputs[0]
    assert output.data[WIDGET_VIEW]["model_id"] == box
    assert output.data["text/plain"] == WIDGET_TEXT
    chinese = clean(executed([uuid.uuid4().hex, uuid.uuid4().hex]), "zh")
    assert re.search(r"[\u4e00-\u9fff]", chinese.cells[1].outputs[0].data["text/plain"])


def test_setting_the_repository_rewrites_the_colab_cell_badges_and_clone_lines(tmp_path):
    from course.repository import disagreements, set_repository

    for name in ("notebooks/src/_header.py", "README.md", "README.zh-CN.md",
                 "notebooks/05_global_attention.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text((ROOT / name).read_text())
    assert len(set_repository("ada/attn", root=tmp_path)) == 4
    assert disagreements(tmp_path) == []
    for readme in ("README.md", "README.zh-CN.md"):
        text = (tmp_path / readme).read_text()
        assert "git clone https://github.com/ada/attn.git attention-course && cd attention-course" in text
        assert "mybinder.org/v2/gh/ada/attn/" in text and "colab.research.google.com/github/ada/attn/" in text
        assert "attention-course/attention-course" not in text
    assert "https://github.com/ada/attn.git" in (tmp_path / "notebooks/05_global_attention.ipynb").read_text()


# ------------------------------------------------------------------------------------- Binder

def environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_binder_environment_is_lean_conda_forge_with_cpu_torch():
    env = environment()
    assert env["channels"][0] == "conda-forge" and "defaults" not in env["channels"]
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    names = {d.split("=")[0].split(">")[0].split("<")[0].strip() for d in deps}
    assert "python=3.11" in deps
    assert "pytorch-cpu" in names, "CPU torch: a CUDA build would not fit Binder"
    assert not names & {"pytorch", "pytorch-gpu", "cudatoolkit", "cuda-version"}
    assert not any(isinstance(d, dict) for d in env["dependencies"]), "no pip section: conda only"


# requirements.in name -> conda-forge name (None: not needed on Binder)
CONDA_NAMES = {"torch": "pytorch-cpu", "graphviz": "python-graphviz", "matplotlib": "matplotlib-base",
               "graphviz-pure": "graphviz",  # conda-forge graphviz ships the real `dot`
               "playwright": None, "pytest-xdist": None, "kubernetes-validate": None,
               "uv": None}  # the installer of scripts/setup_venv.sh; conda installs itself


def test_binder_environment_has_every_package_the_course_needs():
    deps = [d for d in environment()["dependencies"] if isinstance(d, str)]
    names = {d.split("=")[0].split(">")[0].split("<")[0].strip() for d in deps}
    wanted = []
    for line in (ROOT / "requirements.in").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name = line.split("=")[0].split(">")[0].split("<")[0].strip().lower()
            wanted.append(CONDA_NAMES.get(name, name))
    missing = sorted({w for w in wanted if w is not None} - names)
    assert not missing, f"environment.yml lacks {missing} (requirements.in has them)"


def pins(lines, separator) -> dict[str, str]:
    found = {}
    for line in lines:
        name, _, version = line.partition(separator)
        if version:
            found[name.strip().lower()] = version.strip()
    return found


def test_environment_yml_pins_what_requirements_txt_pins():
    """Both routes test the same course: every conda package that has a pip twin carries its pin."""
    from tests.test_setup import lock_for, marker_environment

    # the lock's pins for environment.yml's Python 3.11 (a current release of it) on Linux
    required = lock_for(marker_environment("3.11.7", "linux"))
    twins = {conda: pip for pip, conda in CONDA_NAMES.items() if conda} | {"pyyaml": "pyyaml"}
    twins.pop("graphviz")  # conda-forge's real Graphviz stands in for graphviz-pure
    unpinned_ok = {"graphviz", "pip"}
    deps = [d for d in environment()["dependencies"] if isinstance(d, str)]
    exact = [d for d in deps if re.fullmatch(r"[\w.-]+=[\w.]+", d)]
    assert set(deps) - set(exact) <= unpinned_ok, "pin every package to requirements.txt's version"
    conda = pins(exact, "=")
    assert conda.pop("python") == "3.11"
    for name, version in conda.items():
        pip_name = twins.get(name, name)
        assert required.get(pip_name) == version, f"environment.yml {name}={version}, requirements.txt {pip_name}=={required.get(pip_name)}"


def test_the_torch_running_these_tests_is_the_pinned_one():
    """The tests are written against one PyTorch (memory peaks and kernel choices differ between
    releases): another one fails here, by name, instead of somewhere deeper."""
    import torch

    required = pins((ROOT / "requirements.txt").read_text().splitlines(), "==")
    assert torch.__version__.split("+")[0] == required["torch"], (
        f"torch {torch.__version__} is installed; the course is tested on {required['torch']} "
        "(requirements.txt, environment.yml): `make test` builds that environment")
