"""Every widget of the course on one page (`make playground`): the registry and the page.

A widget joins the playground by convention: any function named `*_explorer` in a
`course/widgets/lessonNN.py` module whose parameters all have defaults is picked up, titled by
the first line of its docstring. `REGISTRY` gives a nicer title, or the arguments a widget needs
(lesson 08's loads the shipped metrics). A new lesson's widget therefore appears with no change
here; add a registry line only to name it better or to pass it arguments.

Widgets never import `exercises/`: the playground works before any exercise is written
(tests/test_playground.py blocks `exercises` and `solutions` while it builds every widget).
"""
from __future__ import annotations

import html
import importlib
import inspect
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import ipywidgets as widgets

from course import ROOT

NOTEBOOKS = ROOT / "notebooks"


@dataclass(frozen=True)
class Entry:
    """One widget of the playground.

    target: "lessonNN:function", the function in course/widgets/ that builds the widget.
    title: one line above the widget (the widget's own caption stays under its figure).
    arguments: called with no argument, returns the function's keyword arguments.
    """

    target: str
    title: str
    arguments: Callable[[], dict] | None = None

    @property
    def lesson(self) -> str:
        return re.search(r"lesson(\d\d)", self.target)[1]

    @property
    def notebook(self) -> str | None:
        """The lesson's notebook file name, or None if there is none (yet)."""
        found = sorted(NOTEBOOKS.glob(f"{self.lesson}_*.ipynb"))
        return found[0].name if found else None

    def build(self) -> widgets.Widget:
        module, function = self.target.split(":")
        make = getattr(importlib.import_module(f"course.widgets.{module}"), function)
        return make(**(self.arguments() if self.arguments else {}))


def _shipped_metrics() -> dict:
    from course.lm_training import load_metrics

    return {"runs": load_metrics()}


REGISTRY = [
    Entry("lesson01:softmax_explorer", "Softmax: the dimension c, the 1/√c scale and a temperature"),
    Entry("lesson03:heads_explorer", "Heads against parameters, and what each head attends to"),
    Entry("lesson04:pair_bias_explorer", "A bias on one (query, key) pair"),
    Entry("lesson06:gate_explorer", "The output gate: one logit per channel, the attention map unchanged"),
    Entry("lesson08:sink_explorer", "First-token attention per layer: baseline against gated tiny LMs",
          arguments=_shipped_metrics),
]


def _lesson_modules() -> list[str]:
    import course.widgets

    return sorted(m.name for m in pkgutil.iter_modules(course.widgets.__path__)
                  if re.fullmatch(r"lesson\d\d", m.name))


def discovered() -> list[Entry]:
    """`*_explorer` functions with no required argument, titled by their docstring."""
    found = []
    for name in _lesson_modules():
        module = importlib.import_module(f"course.widgets.{name}")
        for attribute, value in vars(module).items():
            if not (attribute.endswith("_explorer") and inspect.isfunction(value)
                    and value.__module__ == module.__name__):
                continue
            required = [p for p in inspect.signature(value).parameters.values()
                        if p.default is inspect.Parameter.empty
                        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
            if required:
                continue  # needs arguments: only a REGISTRY entry can show it
            doc = (inspect.getdoc(value) or "").strip().splitlines()
            title = doc[0].rstrip(".") if doc else attribute.replace("_", " ")
            found.append(Entry(f"{name}:{attribute}", title))
    return found


def entries() -> list[Entry]:
    """Every widget of the playground, in lesson order (registry entries win)."""
    registered = {e.target: e for e in REGISTRY}
    merged = dict(registered)
    for entry in discovered():
        merged.setdefault(entry.target, entry)
    return sorted(merged.values(), key=lambda e: (e.lesson, e.target))


def lesson_link(entry: Entry) -> str:
    """HTML naming the lesson, linking to its notebook on the course's repository."""
    from course.repository import blob_url

    if entry.notebook is None:
        return f"lesson {entry.lesson}"
    url = blob_url(f"notebooks/{entry.notebook}")
    return (f'lesson {entry.lesson}: <a href="{html.escape(url)}" target="_blank">'
            f"notebooks/{entry.notebook}</a>")


def header(entry: Entry) -> widgets.HTML:
    return widgets.HTML(f"<h3 style='margin-bottom:0'>{html.escape(entry.title)}</h3>"
                        f"<div>from {lesson_link(entry)}</div>")


def show_all() -> None:
    """Display every widget, each under its title and lesson link, one output per widget (a
    widget that fails to build is reported in its place, so the others still show)."""
    from IPython.display import display

    for entry in entries():
        try:
            shown = entry.build()
        except Exception as error:  # one broken widget must not hide the others
            shown = widgets.HTML(f"<pre>{html.escape(entry.target)} failed: "
                                 f"{html.escape(repr(error))}</pre>")
        display(widgets.VBox([header(entry), shown]))
