"""Every widget of the course, used the way a person uses it: in JupyterLab, in a real browser.

    python -m tests.browser                                   # every lesson with widgets
    python -m tests.browser --screenshots docs/screenshots    # and save one PNG per widget
    python -m tests.browser 01 06                             # only lessons starting with these
    python -m tests.browser --playground --screenshots docs/screenshots   # the Voilà playground

What it does, per lesson notebook that shows widgets:
  1. copies the course to a scratch folder with the solutions laid over exercises/ (as nbval does);
  2. starts JupyterLab 4 on 127.0.0.1 (a free port, no token) with its own settings folder, where
     `windowingMode` is "none": otherwise JupyterLab only renders the cells in view;
  3. drives Debian's chromium (/usr/bin/chromium) headless through pip playwright, opens the
     notebook, clears its stored outputs and runs all cells (reporting any cell that errors);
  4. finds every widget output and every control in it (sliders, checkboxes, dropdowns, toggle
     and radio buttons, number boxes), moves each one like a user would (a slider is dragged with
     the mouse; its track must be long enough for a person to use), and asserts that the output
     it drives changed: the bytes of the widget's images, or the text of its Output/HTML parts
     (the control's own readout does not count);
  5. saves a screenshot of each widget as first rendered (small PNG), if asked.

The browser is never downloaded (`playwright install` cannot work on a closed network): without
/usr/bin/chromium this fails with a message saying how to install it.
"""
from __future__ import annotations

import ast
import builtins
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course import ROOT

CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
# the network here is closed: without the background-networking flags chromium keeps trying
# (and failing) to reach Google's services, at start and in the background
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--disable-default-apps", "--disable-extensions",
    "--metrics-recording-only", "--no-default-browser-check",
]
INSTALL_HINT = (
    "The browser test drives Debian's chromium at /usr/bin/chromium with pip's playwright "
    "(never `playwright install`, which downloads a browser).\n"
    "Install it with:  sudo apt-get update && sudo apt-get install -y chromium\n"
    "(.ci/run does this on CI; set COURSE_CHROMIUM=/path/to/chromium to use another binary.)"
)
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
MIN_TRACK_PX = 80  # a slider shorter than this (controls squeezed into one row) is unusable
WIDGET_IMPORT = re.compile(r"^\s*(from|import)\s+ipywidgets\b", re.MULTILINE)

# user settings for the test's JupyterLab: render every cell, never fetch news or updates
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/extensionmanager-extension/plugin.jupyterlab-settings": {"enabled": False},
}

# how each kind of control is found inside a widget (ipywidgets 8 class names)
CONTROL_SELECTORS = {
    "slider": ".widget-slider",
    "checkbox": ".widget-checkbox",
    "dropdown": ".widget-dropdown",
    "toggle-buttons": ".widget-toggle-buttons",
    "toggle-button": ".widget-toggle-button:not(.widget-toggle-buttons .widget-toggle-button)",
    "radio-buttons": ".widget-radio",
    "number": ".widget-text:not(.widget-textarea)",
    "select": ".widget-select",
}


class BrowserUnavailable(RuntimeError):
    """Chromium or playwright could not be started: the test cannot run, which is a failure."""


# --------------------------------------------------------------------------------------- reports

@dataclass
class ControlResult:
    kind: str
    label: str
    moved: bool = False
    changed: bool = False
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.moved and self.changed


@dataclass
class WidgetResult:
    index: int
    cell: int
    controls: list[ControlResult] = field(default_factory=list)
    screenshot: str | None = None


@dataclass
class NotebookResult:
    notebook: str
    seconds: float = 0.0
    run_all_ok: bool = False
    cell_errors: list[str] = field(default_factory=list)
    widgets: list[WidgetResult] = field(default_factory=list)
    expected_widgets: int = 0

    def failures(self) -> list[str]:
        found = []
        if not self.run_all_ok:
            found.append(f"{self.notebook}: 'run all cells' did not complete")
        found += [f"{self.notebook}: {e}" for e in self.cell_errors]
        if len(self.widgets) < self.expected_widgets:
            found.append(f"{self.notebook}: {self.expected_widgets} widget outputs expected, "
                         f"{len(self.widgets)} rendered in the page")
        for widget in self.widgets:
            for control in widget.controls:
                if not control.ok:
                    found.append(f"{self.notebook} widget {widget.index} (cell {widget.cell}) "
                                 f"{control.kind} '{control.label}': {control.detail}")
        return found

    def summary(self) -> str:
        controls = sum(len(w.controls) for w in self.widgets)
        good = sum(c.ok for w in self.widgets for c in w.controls)
        return (f"{self.notebook}: {len(self.widgets)} widgets, {good}/{controls} controls drive "
                f"their output, {len(self.cell_errors)} cell errors, {self.seconds:.1f} s")


# ------------------------------------------------------------------------------------ notebooks

def stored_widgets(path) -> int:
    """How many widget outputs the committed notebook holds (it was run against the solutions);
    `path` may be a notebook already read."""
    notebook = path if isinstance(path, dict) else json.loads(Path(path).read_text())
    return sum(WIDGET_MIME in output.get("data", {})
               for cell in notebook.get("cells", []) if cell.get("cell_type") == "code"
               for output in cell.get("outputs", []))


def uses_widgets(path: Path) -> bool:
    """True if the notebook shows widgets: it holds widget outputs, or imports ipywidgets.

    Importing course.widgets is not enough: a lesson may only use a module's compute functions."""
    if stored_widgets(path):
        return True
    notebook = json.loads(Path(path).read_text())
    return any(cell.get("cell_type") == "code" and WIDGET_IMPORT.search("".join(cell.get("source", [])))
               and "colab" not in cell.get("metadata", {}).get("tags", [])
               for cell in notebook.get("cells", []))


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell's code reads before or without binding them, names it binds)."""
    tree = ast.parse("\n".join(line for line in source.splitlines()
                                if not line.lstrip().startswith(("%", "!"))))
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read - bound - set(dir(builtins)), bound


def widget_slice(path: Path) -> nbformat.NotebookNode:
    """The lesson's first two code cells (Colab's, the set-up), each cell that shows one of the lesson's widgets
    (course.widgets, stored with a widget output), and the earlier cells those cells read names
    from, transitively, in the notebook's order: what a learner's widgets need, without the rest
    of the lesson (whose every cell nbval runs anyway). A widget cell that needs more than this
    fails here, as it would for a learner who runs it alone."""
    notebook = nbformat.read(path, as_version=4)
    code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    # the Colab cell and the set-up cell (import course_setup ...), as the lesson opens
    wanted = set(code[:2])
    for i in code:
        cell = notebook.cells[i]
        if "course.widgets" in cell.source and any(WIDGET_MIME in o.get("data", {})
                                                   for o in cell.get("outputs", [])):
            wanted.add(i)
    queue = sorted(wanted)
    while queue:
        index = queue.pop()
        needed, _ = _names(notebook.cells[index].source)
        for earlier in reversed([i for i in code if i < index]):
            if not needed:
                break
            _, binds = _names(notebook.cells[earlier].source)
            if needed & binds:
                needed -= binds
                if earlier not in wanted:
                    wanted.add(earlier)
                    queue.append(earlier)
    sliced = nbformat.v4.new_notebook(metadata=notebook.metadata)
    sliced.cells = [notebook.cells[i] for i in sorted(wanted)]
    return sliced


def widget_slices(paths: list[Path]) -> nbformat.NotebookNode:
    """Every lesson's widget slice (widget_slice) in one notebook, lesson after lesson: the first
    lesson's Colab cell once, then each lesson's set-up cell, its widget cells and what they read.
    One kernel and one page for all of them: each slice stands alone, so what one lesson's cells
    leave behind never helps another's."""
    combined = None
    for path in paths:
        sliced = widget_slice(path)
        if combined is None:
            combined = sliced
        else:
            combined.cells += sliced.cells[1:]
    return combined


def widget_notebooks(folder: Path = ROOT / "notebooks", prefixes=()) -> list[Path]:
    """The lesson notebooks (NN_*.ipynb) that show widgets, optionally only some lessons."""
    found = sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))
    return [p for p in found if uses_widgets(p) and (not prefixes or p.name.startswith(tuple(prefixes)))]


# ----------------------------------------------------------------------------------- JupyterLab

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyterlab(root: Path, timeout: float = 180):
    """JupyterLab on 127.0.0.1 serving `root`, isolated from the user's settings; yields its URL."""
    state = Path(tempfile.mkdtemp(prefix="course-lab-"))
    settings = state / "settings"
    for name, values in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    for sub in ("config", "data", "runtime", "workspaces", "ipython"):
        (state / sub).mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # notebooks set their own path
    env.update(JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
               JUPYTER_CONFIG_DIR=str(state / "config"), JUPYTER_DATA_DIR=str(state / "data"),
               JUPYTER_RUNTIME_DIR=str(state / "runtime"), IPYTHONDIR=str(state / "ipython"),
               PYTHONUNBUFFERED="1")
    port = free_port()
    config = {
        "ServerApp": {"ip": "127.0.0.1", "port": port, "port_retries": 0, "open_browser": False,
                      "root_dir": str(root), "terminals_enabled": False,
                      "allow_root": True},  # CI runs as root
        "IdentityProvider": {"token": ""},
        "LabApp": {"expose_app_in_browser": True, "news_url": None, "extension_manager": "readonly",
                   "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate"},
    }
    (state / "config" / "jupyter_lab_config.json").write_text(json.dumps(config))
    argv = [sys.executable, "-m", "jupyterlab", "--no-browser"]
    with _server(argv, root, env, state, "JupyterLab", port, "/api/status", timeout) as server:
        yield server.url


@dataclass
class Server:
    """A server the test started: its address and its process."""

    url: str
    pid: int
    log: Path

    def kernels(self) -> list[str]:
        """The kernels it runs now: its descendant processes that are IPython kernels."""
        import psutil

        found = []
        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return found
        for child in children:
            try:
                command = child.cmdline()
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            if "ipykernel_launcher" in command and child.status() != psutil.STATUS_ZOMBIE:
                found.append(" ".join(command))
        return found


@contextmanager
def _server(argv, cwd, env, state: Path, name: str, port: int, probe: str | None,
            timeout: float):
    """Start a server in its own process group, wait until it answers on 127.0.0.1:port (HTTP
    200 at `probe`, or any connection when probe is None), yield it (a Server); stop it and
    remove `state` afterwards. Its log is state/server.log, quoted when it fails to start."""
    log = open(state / "server.log", "w")
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            if probe is None:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    return True
            with urllib.request.urlopen(f"{url}{probe}", timeout=5) as reply:
                return reply.status == 200
        except OSError:
            return False

    try:
        deadline = time.monotonic() + timeout
        while not answers():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n"
                                   + (state / "server.log").read_text()[-4000:])
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not answer on {url} within {timeout:.0f} s:\n"
                                   + (state / "server.log").read_text()[-4000:])
            time.sleep(0.3)
        yield Server(url, process.pid, state / "server.log")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # the group we started: server and kernels
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()
        shutil.rmtree(state, ignore_errors=True)


@contextmanager
def voila(notebook: Path, timeout: float = 180):
    """Voilà on 127.0.0.1 serving one notebook, as `make playground` does; yields its URL."""
    with voila_server(notebook, timeout) as server:
        yield server.url


@contextmanager
def voila_server(notebook: Path, timeout: float = 180):
    """Voilà serving one notebook with the command `make playground` runs
    (course.playground.voila_command); yields the Server, which counts its kernels."""
    from course.playground import voila_command

    notebook = Path(notebook).resolve()
    course = next(p for p in notebook.parents if (p / "course" / "playground_server.py").exists())
    state = Path(tempfile.mkdtemp(prefix="course-voila-"))
    for sub in ("config", "data", "runtime", "ipython"):
        (state / sub).mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # the served copy's own course (as its Makefile sets it), never the one running the test
    env.update(PYTHONPATH=str(course), JUPYTER_CONFIG_DIR=str(state / "config"),
               JUPYTER_DATA_DIR=str(state / "data"), JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               IPYTHONDIR=str(state / "ipython"), PYTHONUNBUFFERED="1")
    port = free_port()
    argv = voila_command(notebook, port, browser=False) + ["--VoilaConfiguration.show_tracebacks=True"]
    with _server(argv, notebook.parent, env, state, "Voilà", port, None, timeout) as server:
        yield server


# -------------------------------------------------------------------------------------- browser

@contextmanager
def chromium():
    """Debian's chromium, headless, driven by pip playwright; BrowserUnavailable if it cannot start."""
    if not Path(CHROMIUM).exists():
        raise BrowserUnavailable(f"no chromium at {CHROMIUM}.\n{INSTALL_HINT}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        raise BrowserUnavailable(f"pip playwright is missing ({error}): run `make venv`.\n{INSTALL_HINT}")
    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=CHROMIUM_ARGS, timeout=60_000)
        except Exception as error:  # playwright's Error: the message says why
            raise BrowserUnavailable(f"chromium at {CHROMIUM} did not start: {error}\n{INSTALL_HINT}")
        try:
            yield browser
        finally:
            browser.close()


# --------------------------------------------------------------------------- JS run in the page

# the notebook panel under test is found by its path and kept as window.__coursePanel
JS_FIND = """(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) return false;
  for (const widget of app.shell.widgets('main')) {
    if (widget.context && widget.context.path === path && widget.sessionContext) {
      window.__coursePanel = widget;
      app.shell.activateById(widget.id);
      return true;
    }
  }
  return false;
}"""

JS_OPEN = """async () => {
  const panel = window.__coursePanel;
  await panel.context.ready;
  await panel.sessionContext.ready;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return kernel ? kernel.status : 'no kernel';
}"""

JS_RUN_ALL = """async (timeoutMs) => {
  const app = window.jupyterapp;
  app.shell.activateById(window.__coursePanel.id);
  await app.commands.execute('notebook:clear-all-cell-outputs');
  const run = app.commands.execute('notebook:run-all-cells');
  const late = new Promise(resolve => setTimeout(() => resolve('timeout'), timeoutMs));
  const result = await Promise.race([run, late]);
  return result === 'timeout' ? 'timeout' : (result === false ? 'stopped' : 'done');
}"""

JS_SHUTDOWN = """async () => {
  const panel = window.__coursePanel;
  if (panel && panel.sessionContext.session) await panel.sessionContext.shutdown();
}"""

JS_KIND = """(el, selectors) => {
  for (const [kind, selector] of Object.entries(selectors)) if (el.matches(selector)) return kind;
  return 'unknown';
}"""

JS_KERNEL_STATUS = """() => {
  const panel = window.__coursePanel;
  if (panel === undefined) return 'idle';  // a Voilà page: no notebook panel to ask
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return kernel ? kernel.status : 'no kernel';
}"""

JS_CELLS = """() => {
  const panel = window.__coursePanel;
  const cells = panel.content.widgets;
  return cells.map((cell, index) => {
    const model = cell.model;
    if (model.type !== 'code') return {index, type: model.type};
    const outputs = model.outputs.toJSON();
    return {
      index, type: 'code', count: model.executionCount,
      tags: model.getMetadata('tags') || [],
      errors: outputs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue),
      widgets: outputs.filter(o => o.data && o.data['%s']).length,
      source: model.sharedModel.getSource().slice(0, 80),
    };
  });
}""" % WIDGET_MIME

# A fingerprint of what a widget shows, its controls left out: the bytes of each image (hashed)
# and the text of its Output and HTML parts. Blob URLs change on every update even when the bytes
# do not, so the bytes are hashed, not the src.
JS_FINGERPRINT = """async ([root, controlSelector]) => {
  const controls = Array.from(root.querySelectorAll(controlSelector));
  const inControl = el => controls.some(c => c.contains(el));
  const parts = [];
  const digest = async (buffer) => {
    const bytes = new Uint8Array(await crypto.subtle.digest('SHA-256', buffer));
    return Array.from(bytes.slice(0, 12)).map(b => b.toString(16).padStart(2, '0')).join('');
  };
  for (const img of root.querySelectorAll('img')) {
    if (inControl(img)) continue;
    if (!img.getAttribute('src')) { parts.push('img:empty'); continue; }
    try {
      const reply = await fetch(img.src);
      parts.push('img:' + await digest(await reply.arrayBuffer()));
    } catch (e) { return null; }  // a revoked blob: the image is being replaced, ask again
  }
  for (const el of root.querySelectorAll('.widget-output, .widget-html-content, svg, canvas')) {
    // controls' readouts do not count; text inside an Output is counted once, with the Output
    if (inControl(el) || (el.parentElement && el.parentElement.closest('.widget-output'))) continue;
    if (el.tagName.toLowerCase() === 'canvas') { parts.push('canvas:' + el.toDataURL().length); continue; }
    parts.push(el.tagName.toLowerCase() + ':' + (el.innerText || el.textContent || '').trim());
  }
  return parts.join('|');
}"""


# ------------------------------------------------------------------------------------- driving

def _control_label(control) -> str:
    label = control.locator(".widget-label").first
    try:
        text = label.inner_text(timeout=500).replace("\u200b", "").strip() if label.count() else ""
    except Exception:
        text = ""
    if not text:
        try:
            text = control.inner_text(timeout=500).replace("\u200b", "").strip().splitlines()[0]
        except Exception:
            text = ""
    return text or "(no label)"


def _readout(control) -> str:
    """What the control shows of its own value (to tell 'did not move' from 'output unchanged')."""
    return control.evaluate("""el => {
      const readout = el.querySelector('.widget-readout');
      if (readout) return readout.innerText || readout.value || '';
      const active = el.querySelector('button.mod-active');
      if (el.matches('.widget-toggle-buttons')) return active ? active.innerText : '(none)';
      if (el.matches('.widget-toggle-button')) return String(el.classList.contains('mod-active'));
      const handle = el.querySelector('.noUi-handle');
      if (handle) return handle.getAttribute('aria-valuenow') || handle.getAttribute('aria-valuetext') || '';
      const inputs = Array.from(el.querySelectorAll('input, select, button'));
      return inputs.map(i => i.type === 'checkbox' || i.type === 'radio' ? String(i.checked)
                              : (i.tagName === 'BUTTON' ? i.className : i.value)).join(',');
    }""")


def _drag_slider(page, control) -> None:
    """Drag the slider's (first) handle to the other side of its track, as with a mouse."""
    handle = control.locator(".noUi-handle").first
    track = control.locator(".noUi-target, .slider").first
    handle.scroll_into_view_if_needed()
    hbox, tbox = handle.bounding_box(), track.bounding_box()
    if hbox is None or tbox is None:
        raise RuntimeError("slider has no visible handle")
    length = tbox["height"] if control.locator(".noUi-vertical").count() else tbox["width"]
    if os.environ.get("COURSE_BROWSER_DEBUG"):
        print(f"    slider track {length:.0f} px")
    if length < MIN_TRACK_PX:
        raise RuntimeError(f"its track is {length:.0f} px long, under {MIN_TRACK_PX} px: too short "
                           "for a person to set a value (do the controls overflow their row?)")
    vertical = control.locator(".noUi-vertical").count() > 0
    x, y = hbox["x"] + hbox["width"] / 2, hbox["y"] + hbox["height"] / 2
    if vertical:
        low_half = (y - tbox["y"]) / tbox["height"] > 0.5
        tx, ty = x, tbox["y"] + tbox["height"] * (0.25 if low_half else 0.75)
    else:
        right_half = (x - tbox["x"]) / tbox["width"] > 0.5
        tx, ty = tbox["x"] + tbox["width"] * (0.25 if right_half else 0.75), y
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(tx, ty, steps=8)
    page.mouse.up()


def _move(page, kind: str, control) -> None:
    """Change the control's value the way a user would."""
    control.scroll_into_view_if_needed()
    if kind == "slider":
        _drag_slider(page, control)
    elif kind in ("checkbox", "toggle-button"):
        target = control.locator("input[type=checkbox]") if kind == "checkbox" else control
        target.first.click()
    elif kind in ("dropdown", "select"):
        select = control.locator("select").first
        options = select.evaluate("s => Array.from(s.options).map(o => o.value)")
        current = select.evaluate("s => s.value")
        others = [o for o in options if o != current]
        if not others:
            raise RuntimeError("only one option")
        select.select_option(others[-1])
    elif kind == "toggle-buttons":
        buttons = control.locator("button:not(.mod-active)")
        if not buttons.count():
            raise RuntimeError("no other option")
        buttons.last.click()
    elif kind == "radio-buttons":
        radios = control.locator("input[type=radio]:not(:checked)")
        if not radios.count():
            raise RuntimeError("no other option")
        radios.last.click()
    elif kind == "number":
        box = control.locator("input").first
        value = box.input_value()
        try:
            new = str(float(value) + 1) if "." in value else str(int(value) + 1)
        except ValueError:
            new = "1"
        box.fill(new)
        box.press("Enter")
    else:
        raise RuntimeError(f"no way to move a {kind}")


def _fingerprint(page, root, timeout: float = 10.0):
    """What the widget shows, its controls left out. A widget of controls only (its output is
    displayed apart, as with `interactive_output`) is judged by every output of the notebook."""
    selector = ", ".join(CONTROL_SELECTORS.values())
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(JS_FINGERPRINT, [root.element_handle(), selector])
        if value == "":
            value = page.evaluate(JS_FINGERPRINT, [page.locator(".jp-Notebook").element_handle(),
                                                    selector])
            value = None if value is None else "notebook:" + value
        if value is not None or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def _wait_idle(page, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    status = page.evaluate(JS_KERNEL_STATUS)
    while status != "idle" and time.monotonic() < deadline:
        time.sleep(0.2)
        status = page.evaluate(JS_KERNEL_STATUS)
    return status


def _page_settled(page, quiet: float = 1.5, timeout: float = 60.0) -> bool:
    """Wait until nothing on the whole page changes for `quiet` seconds; False on timeout.

    A Voilà page has no notebook panel to ask whether the kernel is idle, and a drag sends a
    value per step: redraws that one widget still owes (each may take seconds) would otherwise
    eat into the next widget's time to respond."""
    body = page.locator("body")
    deadline = time.monotonic() + timeout
    last, since = _fingerprint(page, body), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = _fingerprint(page, body)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
    return False


def _settled_fingerprint(page, root, timeout: float = 15.0):
    """The fingerprint once the kernel is idle and it stays the same for half a second, so that
    late redraws of the previous control are not credited to the next one."""
    deadline = time.monotonic() + timeout
    last = _fingerprint(page, root)
    while time.monotonic() < deadline:
        _wait_idle(page, timeout=max(1.0, deadline - time.monotonic()))
        time.sleep(0.5)
        now = _fingerprint(page, root)
        if now is not None and now == last:
            return now
        last = now
    return last


def _wait_change(page, root, before: str, timeout: float) -> str | None:
    """The new fingerprint once it differs from `before` and has settled, or None on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _fingerprint(page, root)
        if now is not None and now != before:
            # a drag sends several values: let the last redraw land before the next control
            _wait_idle(page, timeout=max(1.0, deadline - time.monotonic()))
            time.sleep(0.3)
            settled = _fingerprint(page, root)
            return settled if settled is not None else now
        time.sleep(0.25)
    return None


def _screenshot(root, path: Path) -> None:
    root.scroll_into_view_if_needed()
    root.screenshot(path=str(path), animations="disabled")
    try:  # palette PNGs are a third of the size and look the same for plots
        from PIL import Image
        with Image.open(path) as image:
            small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
        small.save(path, optimize=True)
    except Exception:
        pass


def _exercise_widgets(page, roots, widget_cells, result, stem, screenshots, change_timeout,
                      log) -> None:
    """Move every control of every widget under `roots`; record what changed in `result`."""
    for k in range(roots.count()):
        root = roots.nth(k)
        widget = WidgetResult(index=k + 1, cell=widget_cells[k] if k < len(widget_cells) else -1)
        result.widgets.append(widget)
        if page.evaluate("() => window.__coursePanel === undefined"):  # Voilà: no idle status
            _page_settled(page)  # the previous widget's owed redraws land before this one moves
        root.scroll_into_view_if_needed()
        page.wait_for_timeout(200)
        controls = root.locator(", ".join(CONTROL_SELECTORS.values()))  # in page order
        if screenshots is not None and controls.count():  # not a progress bar's output
            path = Path(screenshots) / f"{stem}_widget{k + 1}.png"
            _screenshot(root, path)
            widget.screenshot = str(path)
        for j in range(controls.count()):
            control = controls.nth(j)
            kind = control.evaluate(JS_KIND, CONTROL_SELECTORS)
            outcome = ControlResult(kind=kind, label=_control_label(control))
            widget.controls.append(outcome)
            before = _settled_fingerprint(page, root)
            value_before = _readout(control)
            try:
                _move(page, kind, control)
            except Exception as error:
                outcome.detail = f"could not be moved: {error}"
                log(f"  {stem} widget {k + 1} {kind} '{outcome.label}': {outcome.detail}")
                continue
            after = _wait_change(page, root, before, change_timeout)
            value_after = _readout(control)
            outcome.moved = value_after != value_before
            outcome.changed = after is not None
            if not outcome.moved:
                outcome.detail = f"the control did not change value (still {value_before!r})"
            elif not outcome.changed:
                outcome.detail = (f"moved {value_before!r} -> {value_after!r} but the output "
                                  f"it drives did not change within {change_timeout:.0f} s "
                                  "(is the callback broken?)")
            log(f"  {stem} widget {k + 1} {kind} '{outcome.label}': "
                f"{value_before!r} -> {value_after!r}, output "
                f"{'changed' if outcome.changed else 'UNCHANGED'}")
        if not widget.controls:
            log(f"  {stem} widget {k + 1}: no controls (display only)")


def exercise_notebook(browser, url: str, relative: str, screenshots: Path | None = None,
                      run_timeout: float = 300, change_timeout: float = 20,
                      log=print) -> NotebookResult:
    """Open one notebook, run all cells, move every control of every widget; the findings."""
    result = NotebookResult(notebook=relative)
    start = time.perf_counter()
    page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    page.set_default_timeout(30_000)
    try:
        # ?reset: a fresh layout, not the one the previous page left in the server's workspace
        page.goto(f"{url}/lab/tree/{relative}?reset", wait_until="domcontentloaded", timeout=120_000)
        page.wait_for_function(JS_FIND, arg=relative, timeout=120_000)
        status = page.evaluate(JS_OPEN)
        if status.startswith("no "):
            result.cell_errors.append(f"could not start a kernel ({status})")
            return result
        _wait_idle(page, timeout=120)
        outcome = page.evaluate(JS_RUN_ALL, int(run_timeout * 1000))
        _wait_idle(page, timeout=60)
        cells = page.evaluate(JS_CELLS)
        result.run_all_ok = outcome == "done"
        for cell in cells:
            if cell["type"] != "code":
                continue
            if cell["errors"] and "raises-exception" not in cell["tags"]:
                result.cell_errors.append(f"cell {cell['index']} raised {cell['errors'][0][:300]}")
        widget_cells = [c["index"] for c in cells if c["type"] == "code" for _ in range(c["widgets"])]
        result.expected_widgets = len(widget_cells)
        if outcome != "done":
            result.cell_errors.append(f"run all cells: {outcome} ({run_timeout:.0f} s allowed)")
            where = Path(tempfile.gettempdir()) / f"{Path(relative).stem}_FAILED.png"
            page.screenshot(path=str(where))  # never beside the README's screenshots
            result.cell_errors.append(f"the page when it failed: {where}")

        # a widget output: an output area whose view is a jupyter widget
        roots = page.locator(".jp-OutputArea-output:has(> .jupyter-widgets)")
        deadline = time.monotonic() + 60
        while roots.count() < len(widget_cells) and time.monotonic() < deadline:
            time.sleep(0.3)
        # a widget has rendered when its view is in the page (not the 'loading' placeholder)
        for k in range(roots.count()):
            roots.nth(k).locator(".jupyter-widgets").first.wait_for(state="attached", timeout=60_000)

        _exercise_widgets(page, roots, widget_cells, result, Path(relative).stem, screenshots,
                          change_timeout, log)
        # errors raised by callbacks while controls moved
        for cell in page.evaluate(JS_CELLS):
            if cell["type"] == "code" and cell["errors"] and "raises-exception" not in cell["tags"]:
                message = f"cell {cell['index']} raised {cell['errors'][0][:300]}"
                if message not in result.cell_errors:
                    result.cell_errors.append(message + " (after moving controls)")
    finally:
        result.seconds = time.perf_counter() - start
        try:  # each lesson's kernel holds torch: free it before the next lesson
            page.evaluate(JS_SHUTDOWN)
        except Exception:
            pass
        page.close()
    return result


def exercise_page(browser, url: str, expected: int, name: str = "playground",
                  screenshots: Path | None = None, change_timeout: float = 20,
                  load_timeout: float = 300, log=print) -> NotebookResult:
    """A Voilà page (the playground): wait for its `expected` widgets, move every control."""
    result = NotebookResult(notebook=name, expected_widgets=expected)
    start = time.perf_counter()
    page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    page.set_default_timeout(30_000)
    try:
        # Voilà runs the whole notebook before it sends the page
        page.goto(url, wait_until="domcontentloaded", timeout=int(load_timeout * 1000))
        roots = page.locator(".jp-OutputArea-output:has(> .jupyter-widgets)")
        deadline = time.monotonic() + load_timeout
        while roots.count() < expected and time.monotonic() < deadline:
            time.sleep(0.5)
        result.run_all_ok = roots.count() >= expected
        for error in page.locator(".jp-OutputArea-output[data-mime-type*='stderr'], "
                                  ".jp-RenderedText[data-mime-type*='error']").all():
            result.cell_errors.append(f"the page shows an error: {error.inner_text()[:300]}")
        for k in range(roots.count()):
            roots.nth(k).locator(".jupyter-widgets").first.wait_for(state="attached", timeout=60_000)
        _exercise_widgets(page, roots, [1] * roots.count(), result, name, screenshots,
                          change_timeout, log)
        if not result.run_all_ok:
            where = Path(tempfile.gettempdir()) / f"{name}_FAILED.png"
            page.screenshot(path=str(where), full_page=True)
            result.cell_errors.append(f"{roots.count()} of {expected} widgets rendered; the page: {where}")
    finally:
        result.seconds = time.perf_counter() - start
        page.close()
    return result


def open_and_leave(browser, url: str, expected: int, leave: str = "close",
                   load_timeout: float = 300) -> float:
    """Open a Voilà page, wait until its `expected` widgets are drawn, then leave it: "close" the
    tab, or "navigate" away from it (as a reload or a link does). The seconds it took."""
    start = time.perf_counter()
    page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    try:
        page.goto(url, wait_until="domcontentloaded", timeout=int(load_timeout * 1000))
        roots = page.locator(".jp-OutputArea-output:has(> .jupyter-widgets)")
        deadline = time.monotonic() + load_timeout
        while roots.count() < expected and time.monotonic() < deadline:
            time.sleep(0.5)
        if roots.count() < expected:
            raise RuntimeError(f"{roots.count()} of {expected} widgets drawn in {load_timeout:.0f} s")
        if leave == "navigate":
            page.goto("about:blank")
    finally:
        page.close()
    return time.perf_counter() - start


def run(root: Path, notebooks: list[str], screenshots: Path | None = None, log=print,
        **options) -> list[NotebookResult]:
    """Serve `root` with JupyterLab and exercise each notebook (paths relative to `root`)."""
    if screenshots is not None:
        Path(screenshots).mkdir(parents=True, exist_ok=True)
    results = []
    with chromium() as browser, jupyterlab(root) as url:
        for relative in notebooks:
            log(f"{relative}: running all cells in chromium")
            result = exercise_notebook(browser, url, relative, screenshots, log=log, **options)
            log(result.summary())
            results.append(result)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("prefixes", nargs="*", help="only lessons whose notebook starts with these")
    parser.add_argument("--screenshots", type=Path, help="folder for one PNG per widget")
    parser.add_argument("--playground", action="store_true",
                        help="the playground page (Voilà, untouched stubs) instead of the lessons")
    args = parser.parse_args(argv)
    if args.playground:
        return playground_main(args.screenshots)
    from course.workspace import solutions_workspace

    notebooks = widget_notebooks(prefixes=args.prefixes)
    if not notebooks:
        print("no lesson notebook shows widgets yet: nothing to do")
        return 0
    if args.screenshots is not None:  # this run's screenshots replace those of the same lessons
        for path in notebooks:
            for old in Path(args.screenshots).glob(f"{path.stem}_widget*.png"):
                old.unlink()
    (ROOT / "build").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="browser-", dir=ROOT / "build"))
    try:
        workspace = solutions_workspace(scratch / "course")
        start = time.perf_counter()
        try:
            results = run(workspace, [f"notebooks/{p.name}" for p in notebooks], args.screenshots)
        except BrowserUnavailable as error:
            print(f"BROWSER UNAVAILABLE: {error}", file=sys.stderr)
            return 2
        failures = [f for r in results for f in r.failures()]
        print(f"{len(results)} notebooks in {time.perf_counter() - start:.0f} s")
        for failure in failures:
            print("FAIL", failure)
        if args.screenshots is not None:
            for r in results:
                for w in r.widgets:
                    if w.screenshot:
                        print(f"screenshot {w.screenshot} ({Path(w.screenshot).stat().st_size // 1024} KiB)")
        return 1 if failures else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def playground_main(screenshots: Path | None) -> int:
    """Serve the playground of a fresh handout with Voilà and move every control."""
    from course.handout import build
    from course.widgets.playground import entries

    (ROOT / "build").mkdir(exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="playground-", dir=ROOT / "build"))
    try:
        release = build(scratch / "release")
        if screenshots is not None:
            Path(screenshots).mkdir(parents=True, exist_ok=True)
            for old in Path(screenshots).glob("playground_widget*.png"):
                old.unlink()
        try:
            with chromium() as browser, voila(release / "notebooks" / "playground.ipynb") as url:
                result = exercise_page(browser, url, len(entries()), screenshots=screenshots)
        except BrowserUnavailable as error:
            print(f"BROWSER UNAVAILABLE: {error}", file=sys.stderr)
            return 2
        print(result.summary())
        for failure in result.failures():
            print("FAIL", failure)
        return 1 if result.failures() else 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
