"""Build the lesson notebooks: jupytext sources in notebooks/src/ -> executed notebooks/*.ipynb.

    python -m course.build notebooks            # every lesson, in English and in Chinese
    python -m course.build notebooks 01 02      # lessons whose file name starts with these
    python -m course.build notebooks --lang zh  # one edition only (en or zh)

English: notebooks/src/NN_topic.py -> notebooks/NN_topic.ipynb. Chinese: the English source with
the prose of notebooks/src/zh/NN_topic.py and its code comments translated by the catalog
(course/zh_source.py: the Chinese source holds prose only, so the code cannot differ) ->
notebooks/zh/NN_topic.ipynb, run from notebooks/zh/ so that its `import course_setup` finds
notebooks/zh/course_setup.py, which switches the kernel to Chinese (course/drift.py says how each
Chinese cell stays in step with its English one).

A Chinese build needs a CJK font for its figures: without one it stops at once and says how to
install one, and in its kernel a missing glyph is an error (course/fonts.py); every image it
stores is then searched for missing-glyph boxes (course/tofu.py) before the notebook is written.

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
import os
import sys
import tempfile
import time
from contextlib import contextmanager, nullcontext
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


class GlyphError(RuntimeError):
    """A built Chinese notebook would show Chinese as boxes."""


def translate(message: str, lang: str) -> str:
    return translations(normalise(lang)).gettext(message)


def header_cells(lang: str = "en") -> list[nbformat.NotebookNode]:
    """The cells of _header.py, their title line and comments in `lang` (both editions share the
    code: it is machinery, and course.repository rewrites its URL in one place), except the
    folder Colab works in: the edition's own, so that `import course_setup` finds the Chinese
    set-up in notebooks/zh/."""
    from course.zh_source import localize_code

    cells = jupytext.read(HEADER).cells
    for cell in cells:
        cell.source = cell.source.replace(f"# @title {COLAB_TITLE}",
                                          f"# @title {translate(COLAB_TITLE, lang)}", 1)
        if lang != "en":
            cell.source = localize_code(cell.source, lang)
            cell.source = cell.source.replace('f"{COURSE_DIR}/notebooks"',
                                              f'f"{{COURSE_DIR}}/notebooks/{FOLDER[lang]}"')
    return cells


def read_source(path: Path) -> nbformat.NotebookNode:
    """The notebook a source builds, before it runs: the Colab cell under the title; a Chinese
    lesson composed from the English code and its own prose (course/zh_source.py)."""
    from course.zh_source import compose, is_prose_only

    chinese = language_of(path) == "zh"
    notebook = compose(path) if chinese and is_prose_only(path) else jupytext.read(path)
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


def glyph_problems(notebook: nbformat.NotebookNode, name: str) -> list[str]:
    """What a built Chinese notebook shows that no CJK font drew: an error output (a figure drawn
    after its cell ran, by the inline backend, fails there: a missing glyph is an error in the
    build's kernels), and every stored image with missing-glyph boxes (course/tofu.py)."""
    from course.tofu import notebook_problems

    found = [f"{name} cell {index}: {output.get('ename')}: {output.get('evalue', '')[:120]}"
             for index, cell in enumerate(notebook.cells) for output in cell.get("outputs", [])
             if output.get("output_type") == "error"]
    return found + notebook_problems(notebook, name)


@contextmanager
def strict_glyphs():
    """For the kernels started inside: no CJK font, or a missing glyph, is an error."""
    from course.fonts import STRICT, require_cjk_font

    require_cjk_font()  # before any kernel starts: NoCJKFont says how to install one
    before = os.environ.get(STRICT)
    os.environ[STRICT] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STRICT, None)
        else:
            os.environ[STRICT] = before


def build(prefixes=(), scratch: Path | None = None, languages=LANGUAGES) -> list[tuple[str, float]]:
    if "zh" in languages and sources(prefixes, "zh"):
        from course.fonts import require_cjk_font

        require_cjk_font()  # at once, before the English notebooks take their minutes
    if scratch is None:  # a fresh folder per build, so two builds never share a workspace
        (ROOT / "build").mkdir(exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="notebooks-", dir=ROOT / "build")) / "course"
    workspace = solutions_workspace(scratch)
    timings = []
    for lang in languages:
        for path in sources(prefixes, lang):
            start = time.perf_counter()
            with strict_glyphs() if lang == "zh" else nullcontext():
                notebook = execute(read_source(path), workspace / "notebooks" / FOLDER[lang])
            seconds = time.perf_counter() - start
            target = target_of(path)
            notebook = clean(notebook, lang)
            if lang == "zh":
                problems = glyph_problems(notebook, target.name)
                if problems:
                    raise GlyphError(f"{target.relative_to(ROOT)} not written: "
                                     + "; ".join(problems[:5]))
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)
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
    from course.fonts import NoCJKFont

    try:
        build(args.prefixes, languages=LANGUAGES if args.lang == "all" else (args.lang,))
    except (NoCJKFont, GlyphError) as error:
        print(f"course.build: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
