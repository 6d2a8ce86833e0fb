"""Build the lesson notebooks: jupytext sources in notebooks/src/ -> executed notebooks/*.ipynb.

    python -m course.build notebooks            # every lesson, in English and in Chinese
    python -m course.build notebooks 01 02      # lessons whose file name starts with these
    python -m course.build notebooks --lang zh  # one edition only (en or zh)

English: notebooks/src/NN_topic.py -> notebooks/NN_topic.ipynb. Chinese:
notebooks/src/zh/NN_topic.py -> notebooks/zh/NN_topic.ipynb, run from notebooks/zh/ so that its
`import course_setup` finds notebooks/zh/course_setup.py, which switches the kernel to Chinese
(course/drift.py says how each Chinese cell stays in step with its English one).

Each notebook runs in a scratch copy of the course whose exercises are the solutions, so the
committed outputs are those of a correct implementation. Timing metadata is dropped so a rebuild
without changes leaves the files as they were.

The widgets' state is kept (nbclient records it), so JupyterLab draws each widget, controls and
figure, as soon as a trusted notebook opens (`make lab` trusts the lessons); its controls answer
once the cell has run. Untrusted, or where widgets cannot show, the output reads WIDGET_TEXT. The state's
random model ids are renumbered, so a rebuild changes the state only where a widget shows
something else (a progress bar's timing, say).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from course import ROOT
from course.i18n import N_, normalise, translations
from course.workspace import solutions_workspace

SOURCES = ROOT / "notebooks" / "src"
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGES = ("en", "zh")
FOLDER = {"en": "", "zh": "zh"}  # where each edition's sources and notebooks live, under src/ and notebooks/


def sources(prefixes=(), lang: str = "en") -> list[Path]:
    found = sorted((SOURCES / FOLDER[lang]).glob("[0-9][0-9]_*.py"))
    return [p for p in found if not prefixes or p.name.startswith(tuple(prefixes))]


def language_of(path: Path) -> str:
    """'zh' for a source or notebook of the Chinese edition, else 'en'."""
    return "zh" if Path(path).parent.name == FOLDER["zh"] else "en"


def target_of(source: Path) -> Path:
    """The notebook a source builds."""
    return ROOT / "notebooks" / FOLDER[language_of(source)] / f"{source.stem}.ipynb"


def notebook_metadata(lang: str = "en") -> dict:
    metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    if lang != "en":  # the edition's language, for tools (the kernel learns it from course_setup)
        metadata["course"] = {"language": "zh_CN"}
    return metadata


HEADER = SOURCES / "_header.py"  # cells put at the top of every lesson (the Colab set-up)
# The one line of the Colab cell a learner sees (its `# @title`: Colab shows a form cell's title,
# JupyterLab a hidden cell's first line), in the edition's language
COLAB_TITLE = N_("On Google Colab, this cell fetches the course. Elsewhere it does nothing.")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# what a front end without widgets (a plain-text view) shows instead of `VBox(children=...)`
WIDGET_TEXT = N_("[an interactive widget: run this cell to show it]")


def translate(message: str, lang: str) -> str:
    return translations(normalise(lang)).gettext(message)


def header_cells(lang: str = "en") -> list[nbformat.NotebookNode]:
    """The cells of _header.py, their title line in `lang` (both editions share the code: it is
    machinery, and course.repository rewrites its URL in one place)."""
    cells = jupytext.read(HEADER).cells
    for cell in cells:
        cell.source = cell.source.replace(f"# @title {COLAB_TITLE}",
                                          f"# @title {translate(COLAB_TITLE, lang)}", 1)
    return cells


def read_source(path: Path) -> nbformat.NotebookNode:
    notebook = jupytext.read(path)
    # right under the title, so the lesson still opens with its heading
    title = 1 if notebook.cells and notebook.cells[0].cell_type == "markdown" else 0
    notebook.cells[title:title] = header_cells(language_of(path))
    notebook.metadata = notebook_metadata(language_of(path))
    for cell in notebook.cells:
        cell.metadata.pop("lines_to_next_cell", None)
        cell.metadata.pop("en", None)  # a Chinese cell's link to its English cell: sources only
    return notebook


def clean(notebook: nbformat.NotebookNode, lang: str = "en") -> nbformat.NotebookNode:
    """Drop what changes from run to run without meaning anything (timings, random widget ids)."""
    widgets = notebook.metadata.get("widgets")
    notebook.metadata = notebook_metadata(lang)
    if widgets:
        notebook.metadata["widgets"] = widgets
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index:03d}"
        cell.metadata.pop("execution", None)
        if "outputs" in cell:
            cell.outputs = merged_streams(cell.outputs)
        for output in cell.get("outputs", []):
            if WIDGET_VIEW in output.get("data", {}):
                output.data["text/plain"] = translate(WIDGET_TEXT, lang)
    notebook = renumber_widgets(notebook)
    nbformat.validate(notebook)
    return notebook


def merged_streams(outputs: list) -> list:
    """Consecutive stdout (or stderr) outputs as one: a busy machine hands a cell's printing to
    the notebook in more pieces than an idle one, which Jupyter shows as one text anyway."""
    merged = []
    for output in outputs:
        previous = merged[-1] if merged else None
        if output.get("output_type") == "stream" and previous is not None and \
                previous.get("output_type") == "stream" and previous.name == output.name:
            previous.text = "".join(_text(previous.text)) + "".join(_text(output.text))
            continue
        merged.append(output)
    return merged


def _text(text) -> list[str]:
    return [text] if isinstance(text, str) else list(text)


def renumber_widgets(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The kernel's random widget model ids (uuid4 hex) replaced by ids made from the notebook's
    title and each model's place in the stored state, everywhere they occur (outputs, state)."""
    state = notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return notebook
    title = notebook.cells[0].source if notebook.cells else ""
    text = json.dumps(notebook)
    for index, model_id in enumerate(list(state)):
        stable = hashlib.sha256(f"{title}\n{index}".encode()).hexdigest()[:32]
        text = text.replace(model_id, stable)
    return nbformat.from_dict(json.loads(text))


def execute(notebook: nbformat.NotebookNode, workdir: Path, timeout: int = 300):
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return notebook


def build(prefixes=(), scratch: Path | None = None, languages=LANGUAGES) -> list[tuple[str, float]]:
    if scratch is None:  # a fresh folder per build, so two builds never share a workspace
        (ROOT / "build").mkdir(exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="notebooks-", dir=ROOT / "build")) / "course"
    workspace = solutions_workspace(scratch)
    timings = []
    for lang in languages:
        for path in sources(prefixes, lang):
            start = time.perf_counter()
            notebook = execute(read_source(path), workspace / "notebooks" / FOLDER[lang])
            seconds = time.perf_counter() - start
            target = target_of(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(clean(notebook, lang), target)
            timings.append((target.relative_to(ROOT / "notebooks").as_posix(), seconds))
            print(f"built {target.relative_to(ROOT)} in {seconds:.1f} s", flush=True)
    return timings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="execute the lesson notebooks against the solutions")
    parser.add_argument("what", choices=["notebooks"])
    parser.add_argument("prefixes", nargs="*", help="only lessons whose file starts with these")
    parser.add_argument("--lang", choices=[*LANGUAGES, "all"], default="all",
                        help="one edition only (default: both)")
    args = parser.parse_args(argv)
    build(args.prefixes, languages=LANGUAGES if args.lang == "all" else (args.lang,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
