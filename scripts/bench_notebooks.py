"""How long each lesson notebook takes, against the course's goal (under 15 s on 2 CPU cores, 30 s
at most), and which cells take the time.

    .venv/bin/python scripts/bench_notebooks.py                 # every lesson, English
    .venv/bin/python scripts/bench_notebooks.py 05 08 --zh      # some, Chinese
    .venv/bin/python scripts/bench_notebooks.py --cells 5       # the 5 slowest cells of each

Each notebook runs once in a scratch copy whose exercises are the solutions (as `make notebooks`
runs it), cell by cell, in a fresh kernel; kernel start-up is counted apart. It prints the load
average before and after: figures from a busy machine are larger, so compare runs made under the
same load. A benchmark, not a test: nothing here fails because a machine is slow.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOAL_S, LIMIT_S = 15, 30


def time_cells(path: Path) -> tuple[float, list[tuple[float, int, str]]]:
    """(kernel start-up seconds, [(seconds, cell index, first line)] per code cell)."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel():
        startup = time.perf_counter() - start
        cells = []
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "code":
                continue
            begun = time.perf_counter()
            client.execute_cell(cell, index)
            first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            cells.append((time.perf_counter() - begun, index, first[:60]))
    return startup, cells


def main() -> int:
    from course.workspace import solutions_workspace

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="lesson numbers (default: all)")
    parser.add_argument("--zh", action="store_true", help="the Chinese notebooks")
    parser.add_argument("--cells", type=int, default=3, help="slowest cells shown per notebook")
    args = parser.parse_args()
    workspace = solutions_workspace(Path(tempfile.mkdtemp(prefix="bench-nb-")) / "course")
    folder = workspace / "notebooks" / ("zh" if args.zh else "")
    paths = [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))
             if not args.lessons or p.name[:2] in {n.zfill(2) for n in args.lessons}]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for path in paths:
        startup, cells = time_cells(path)
        total = sum(t for t, *_ in cells)
        mark = "ok" if total < GOAL_S else ("over the goal" if total < LIMIT_S else "OVER THE LIMIT")
        print(f"{path.name:<36} {total:6.1f} s in cells (+{startup:.1f} s kernel start)  {mark}")
        for seconds, index, first in sorted(cells, reverse=True)[:args.cells]:
            print(f"    {seconds:5.2f} s  cell {index:>3}  {first}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
