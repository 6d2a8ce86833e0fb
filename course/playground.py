"""`make playground`: every widget of the course on one page, served by Voilà.

    python -m course.playground             # write notebooks/playground.ipynb, then serve it
    python -m course.playground --write     # only write the notebook (from notebooks/src/playground.py)
    python -m course.playground --port 8870 --no-browser

The page is notebooks/playground.ipynb, written without outputs from its jupytext source (Voilà
runs it when the page opens). Which widgets it shows: course/widgets/playground.py.
"""
from __future__ import annotations

import argparse
import os
import sys

import jupytext
import nbformat

from course import ROOT

SOURCE = ROOT / "notebooks" / "src" / "playground.py"
NOTEBOOK = ROOT / "notebooks" / "playground.ipynb"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def render() -> str:
    """The notebook's text, as written from the source (no outputs)."""
    notebook = jupytext.read(SOURCE)
    notebook.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    for index, cell in enumerate(notebook.cells):
        cell.metadata = {}
        cell["id"] = f"playground-{index}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.writes(notebook) + "\n"


def write() -> bool:
    """Write the notebook if it differs; True if it changed."""
    text = render()
    if NOTEBOOK.exists() and NOTEBOOK.read_text() == text:
        return False
    NOTEBOOK.write_text(text)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="every widget of the course on one page (Voilà)")
    parser.add_argument("--write", action="store_true", help="only write the notebook")
    parser.add_argument("--port", type=int, default=8866)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    write()
    if args.write:
        print(f"wrote {NOTEBOOK.relative_to(ROOT)}")
        return 0
    command = [sys.executable, "-m", "voila", str(NOTEBOOK), f"--port={args.port}",
               "--Voila.ip=127.0.0.1"] + (["--no-browser"] if args.no_browser else [])
    print("serving the playground; stop with Ctrl-C")
    os.execv(sys.executable, command)  # Voilà takes over this process: Ctrl-C stops it


if __name__ == "__main__":
    sys.exit(main())
