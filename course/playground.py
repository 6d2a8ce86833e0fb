"""`make playground`: every widget of the course on one page, served by Voilà.

    python -m course.playground             # write notebooks/playground.ipynb, then serve it
    python -m course.playground --write     # only write the notebook (from notebooks/src/playground.py)
    python -m course.playground --port 8870 --no-browser
    python -m course.playground --lang zh   # the Chinese page, notebooks/zh/playground.ipynb

The page's address is printed at once: Voilà takes from a few seconds (idle cores) to half a
minute (busy ones) to import itself and start. A port already in use gives way to a free one
before Voilà starts, so the address printed is the one it serves.

The page is notebooks/playground.ipynb, written without outputs from its jupytext source (Voilà
runs it when the page opens). Which widgets it shows: course/widgets/playground.py. Voilà runs
through course/playground_server.py, which frees each page's kernel when the page goes.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys

import jupytext
import nbformat

from course import ROOT
from course.i18n import _, set_language

SOURCE = ROOT / "notebooks" / "src" / "playground.py"
NOTEBOOK = ROOT / "notebooks" / "playground.ipynb"
# the Chinese page: its `import course_setup` finds notebooks/zh/course_setup.py (Voilà runs a
# notebook in its own folder), which switches the kernel to Chinese
SOURCES = {"en": SOURCE, "zh": ROOT / "notebooks" / "src" / "zh" / "playground.py"}
NOTEBOOKS = {"en": NOTEBOOK, "zh": ROOT / "notebooks" / "zh" / "playground.ipynb"}
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def render(lang: str = "en") -> str:
    """The notebook's text, as written from the source (no outputs)."""
    from course.zh_source import compose, is_prose_only

    source = SOURCES[lang]
    notebook = compose(source, SOURCE, lang) if lang != "en" and is_prose_only(source) else jupytext.read(source)
    notebook.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    if lang != "en":
        notebook.metadata["course"] = {"language": "zh_CN"}
    for index, cell in enumerate(notebook.cells):
        cell.metadata = {}
        cell["id"] = f"playground-{index}"
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nbformat.writes(notebook) + "\n"


def write(lang: str = "en") -> bool:
    """Write the notebook if it differs; True if it changed."""
    text, notebook = render(lang), NOTEBOOKS[lang]
    if notebook.exists() and notebook.read_text() == text:
        return False
    notebook.write_text(text)
    return True


def free_port(wanted: int) -> int:
    """`wanted` if it is free on 127.0.0.1, else a free port the system picks."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", wanted))
        except OSError:
            probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def voila_command(notebook, port: int, browser: bool = True) -> list[str]:
    """The command that serves `notebook` on 127.0.0.1:`port` as the playground (Voilà through
    course/playground_server.py); the browser test runs the same one."""
    return [sys.executable, "-m", "course.playground_server", str(notebook), f"--port={port}",
            "--Voila.port_retries=0", "--Voila.ip=127.0.0.1"] + ([] if browser else ["--no-browser"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="every widget of the course on one page (Voilà)")
    parser.add_argument("--write", action="store_true", help="only write the notebook")
    parser.add_argument("--port", type=int, default=8866)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--lang", choices=sorted(NOTEBOOKS), default="en", help="the page's language")
    args = parser.parse_args(argv)
    notebook = NOTEBOOKS[args.lang]
    for lang in NOTEBOOKS:  # both pages, so neither goes stale
        write(lang)
    if args.write:
        print(f"wrote {', '.join(str(n.relative_to(ROOT)) for n in NOTEBOOKS.values())}")
        return 0
    if args.lang != "en":
        os.environ["COURSE_LANG"] = "zh_CN"
        set_language("zh_CN")
    port = free_port(args.port)
    command = voila_command(notebook, port, browser=not args.no_browser)
    print(_("The playground: {url}\n(Voilà is starting: the page answers once it prints "
            "\"Voilà is running at\". Stop it with Ctrl-C.)").format(url=f"http://127.0.0.1:{port}/"),
          flush=True)
    os.execv(sys.executable, command)  # Voilà takes over this process: Ctrl-C stops it


if __name__ == "__main__":
    sys.exit(main())
