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
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient

from course import ROOT
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


def read_source(path: Path) -> nbformat.NotebookNode:
    notebook = jupytext.read(path)
    # right under the title, so the lesson still opens with its heading (both editions share
    # the Colab cell: it is machinery, and course.repository rewrites its URL in one place)
    title = 1 if notebook.cells and notebook.cells[0].cell_type == "markdown" else 0
    notebook.cells[title:title] = jupytext.read(HEADER).cells
    notebook.metadata = notebook_metadata(language_of(path))
    for cell in notebook.cells:
        cell.metadata.pop("lines_to_next_cell", None)
        cell.metadata.pop("en", None)  # a Chinese cell's link to its English cell: sources only
    return notebook


def clean(notebook: nbformat.NotebookNode, lang: str = "en") -> nbformat.NotebookNode:
    """Drop what changes from run to run without meaning anything (timings, ids of widgets' views)."""
    notebook.metadata = notebook_metadata(lang)
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell-{index:03d}"
        cell.metadata.pop("execution", None)
    nbformat.validate(notebook)
    return notebook


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
