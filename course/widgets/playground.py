"""Every widget of the course on one page (`make playground`): the registry and the page.

A widget joins the playground by convention: any function named `*_explorer` in a
`course/widgets/lessonNN.py` module whose parameters all have defaults is picked up, titled by
the first line of its docstring, so a new lesson's widget appears at once while it is written.
Before it ships, give it a `REGISTRY` line: a title that says what a self-learner sees, for
someone who has not read the lesson, marked for translation (tests/test_playground.py insists),
and the arguments it needs, if any (lesson 08's loads the shipped metrics).

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
from typing import Callable

import ipywidgets as widgets

from course import ROOT
from course.i18n import ENGLISH, N_, _, language

NOTEBOOKS = ROOT / "notebooks"


@dataclass(frozen=True)
class Entry:
    """One widget of the playground.

    target: "lessonNN:function", the function in course/widgets/ that builds the widget.
    title: one line above the widget (the widget's own caption stays under its figure), in
      English, marked with N_: `header` translates it when the page is shown.
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


# Titles say what a self-learner sees, for someone who has not read the lesson; each widget's
# caption under its figure says what to try. Marked with N_ and translated where shown (header).
REGISTRY = [
    Entry("lesson01:softmax_explorer",
          N_("Softmax, the step that turns scores into attention weights: how the vector size, "
             "the 1/√c scale and a temperature make it flat or peaked")),
    Entry("lesson02:mask_explorer",
          N_("Masks: which words each word may look at (causal, padding), and what happens to a "
             "word that may look at none")),
    Entry("lesson03:heads_explorer",
          N_("Attention heads: more heads cost no extra parameters at the same width, and each "
             "head has its own attention map")),
    Entry("lesson04:pair_bias_explorer",
          N_("An attention bias: push one (query, key) pair up or down and watch that query's "
             "weights shift")),
    Entry("lesson05:memory_explorer",
          N_("Memory of column attention against the number of sequences: where 24, 40 and "
             "80 GB graphics cards run out")),
    Entry("lesson06:gate_explorer",
          N_("The output gate: a sigmoid per channel that scales the attention output, leaving "
             "the attention weights unchanged")),
    Entry("lesson07:similarity_explorer",
          N_("Position encodings (sinusoidal or RoPE): how similar positions i and j look, and why "
             "it depends on the distance i − j only")),
    Entry("lesson08:sink_explorer",
          N_("The attention sink: how much attention lands on the first token, layer by layer, in "
             "tiny language models with and without the gate"),
          arguments=_shipped_metrics),
    Entry("lesson09:tiles_explorer",
          N_("Attention one tile at a time: the tiles of the score matrix as they are read, and "
             "one row's running maximum and sum (the online softmax)")),
    Entry("lesson10:routes_explorer",
          N_("Linear attention and its relatives: how much each form keeps as the text grows, "
             "and the weights one word gives the others under softmax, linear and Nyström "
             "attention")),
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


def notebook_path(entry: Entry) -> str | None:
    """The lesson's notebook in the page's language: notebooks/zh/NN_topic.ipynb on a Chinese
    page where the lesson is translated, else the English notebooks/NN_topic.ipynb (or None)."""
    if entry.notebook is None:
        return None
    if language() != ENGLISH and (NOTEBOOKS / "zh" / entry.notebook).exists():
        return f"notebooks/zh/{entry.notebook}"
    return f"notebooks/{entry.notebook}"


def lesson_link(entry: Entry) -> str:
    """HTML naming the lesson, linking to its notebook on the course's repository."""
    from course.repository import blob_url

    lesson = _("lesson {number}").format(number=entry.lesson)
    path = notebook_path(entry)
    if path is None:
        return lesson
    anchor = f'<a href="{html.escape(blob_url(path))}" target="_blank">{html.escape(path)}</a>'
    link = _("{lesson}: {link}").format(lesson=lesson, link=anchor)
    if language() != ENGLISH and not path.startswith("notebooks/zh/"):
        link += html.escape(_(" (in English only for now)"))
    return link


def header(entry: Entry) -> widgets.HTML:
    """The widget's title (translated now) and the lesson it comes from."""
    source = _("from {lesson}").format(lesson=lesson_link(entry))
    return widgets.HTML(f"<h3 style='margin-bottom:0'>{html.escape(_(entry.title))}</h3>"
                        f"<div>{source}</div>")


def show_all() -> None:
    """Display every widget, each under its title and lesson link, one output per widget (a
    widget that fails to build is reported in its place, so the others still show)."""
    from IPython.display import display

    for entry in entries():
        try:
            shown = entry.build()
        except Exception as error:  # one broken widget must not hide the others
            message = _("{target} failed: {error}").format(target=entry.target, error=repr(error))
            shown = widgets.HTML(f"<pre>{html.escape(message)}</pre>")
        display(widgets.VBox([header(entry), shown]))
