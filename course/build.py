"""Build the lesson notebooks: jupytext sources in notebooks/src/ -> executed notebooks/*.ipynb.

    python -m course.build notebooks            # every lesson
    python -m course.build notebooks 01 02      # lessons whose file name starts with these

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


def sources(prefixes=()) -> list[Path]:
    found = sorted(SOURCES.glob("[0-9][0-9]_*.py"))
    return [p for p in found if not prefixes or p.name.startswith(tuple(prefixes))]


HEADER = SOURCES / "_header.py"  # cells put at the top of every lesson (the Colab set-up)


def read_source(path: Path) -> nbformat.NotebookNode:
    notebook = jupytext.read(path)
    # right under the title, so the lesson still opens with its heading
    title = 1 if notebook.cells and notebook.cells[0].cell_type == "markdown" else 0
    notebook.cells[title:title] = jupytext.read(HEADER).cells
    notebook.metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    for cell in notebook.cells:
        cell.metadata.pop("lines_to_next_cell", None)
    return notebook


def clean(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Drop what changes from run to run without meaning anything (timings, ids of widgets' views)."""
    notebook.metadata = {"kernelspec": KERNEL, "language_info": {"name": "python"}}
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


def build(prefixes=(), scratch: Path | None = None) -> list[tuple[str, float]]:
    if scratch is None:  # a fresh folder per build, so two builds never share a workspace
        (ROOT / "build").mkdir(exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix="notebooks-", dir=ROOT / "build")) / "course"
    workspace = solutions_workspace(scratch)
    timings = []
    for path in sources(prefixes):
        start = time.perf_counter()
        notebook = execute(read_source(path), workspace / "notebooks")
        seconds = time.perf_counter() - start
        target = ROOT / "notebooks" / f"{path.stem}.ipynb"
        nbformat.write(clean(notebook), target)
        timings.append((target.name, seconds))
        print(f"built {target.relative_to(ROOT)} in {seconds:.1f} s", flush=True)
    return timings


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="execute the lesson notebooks against the solutions")
    parser.add_argument("what", choices=["notebooks"])
    parser.add_argument("prefixes", nargs="*", help="only lessons whose file starts with these")
    args = parser.parse_args(argv)
    build(args.prefixes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
