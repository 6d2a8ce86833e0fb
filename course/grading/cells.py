"""Run a lesson's check cells (with the imports they need) in a plain Python process, inside the
sandbox, in the student's scratch copy of the handout:

    python -m course.grading.cells ITEMS.json i,j,...

ITEMS.json lists items: {"kind": "probe", "module": m} compiles and imports exercises/<m>.py
(syntax errors and exceptions at import become the student's status), {"kind": "cell", ...} runs
one check cell in its lesson's namespace, after that lesson's imports (the top-level import
statements of its other code cells; plotting and widget imports left out). One process runs
every lesson; the grader starts a fresh one after a crash (see course.grading.supervise).
Protocol on the original stdout: {"start": i}, then {"done": i, "record": ...} with the cell's
captured output and error in the format the report reads, and what the student's code raised
(the exception and the ones it was raised from or during: the grader's statuses come from
those, never from printed text). Everything else the process prints goes to its stderr, which
the grader reads and caps.
"""
from __future__ import annotations

import ast
import contextlib
import importlib
import io
import json
import os
import sys
import time
import traceback

SKIP_IMPORTS = ("matplotlib", "ipywidgets", "IPython", "course_setup", "course.widgets",
                "course.plots", "course.env_report", "google")
LIMIT = 4000


def clip(text: str, limit: int = LIMIT) -> str:
    return text if len(text) <= limit else text[: limit // 2] + "\n...\n" + text[-limit // 2:]


def setup_source(sources: list[str]) -> str:
    """The top-level imports of some cells (the setup a check cell may rely on)."""
    lines = []
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            if not any(n == s or n.startswith(s + ".") for n in names for s in SKIP_IMPORTS):
                lines.append(ast.unparse(node))
    return "\n".join(lines)


def raised(err: BaseException | None) -> list[list[str]]:
    """[[type name, first line of the message]] of `err`, of the exceptions it was raised from or
    while handling, and of those a check failure carries (`CheckFailed.errors`: a check turns the
    student's MemoryError into its own failure)."""
    found, seen, pending = [], set(), [err]
    while pending and len(found) < 8:
        err = pending.pop(0)
        if err is None or not isinstance(err, BaseException) or id(err) in seen:
            continue
        seen.add(id(err))
        lines = str(err).strip().splitlines()
        found.append([type(err).__name__, (lines[0] if lines else "")[:300]])
        carried = getattr(err, "errors", None)
        pending += [err.__cause__ or err.__context__]
        pending += list(carried.values())[:8] if isinstance(carried, dict) else []
    return found


def probe(module: str) -> dict:
    path = os.path.join("exercises", f"{module}.py")
    try:
        with open(path, "rb") as handle:
            compile(handle.read(), path, "exec")
    except SyntaxError as err:
        return {"ok": False, "kind": "syntax-error",
                "error": f"{type(err).__name__}: {err.msg} (exercises/{module}.py, line {err.lineno})"}
    except BaseException as err:  # noqa: BLE001
        return {"ok": False, "kind": "syntax-error", "error": f"{type(err).__name__}: {err}"}
    try:
        importlib.import_module(f"exercises.{module}")
    except BaseException as err:  # noqa: BLE001 - SystemExit too
        kind = "syntax-error" if isinstance(err, SyntaxError) else \
            "memory-limit" if isinstance(err, MemoryError) else "import-error"
        where = ""
        for frame in traceback.extract_tb(err.__traceback__):
            if f"{os.sep}exercises{os.sep}" in frame.filename:
                where = f" (at exercises/{os.path.basename(frame.filename)}:{frame.lineno})"
        return {"ok": False, "kind": kind, "error": f"{type(err).__name__}: {err}{where}",
                "raised": raised(err)}
    return {"ok": True}


def run_cell(source: str, namespace: dict) -> dict:
    buffer = io.StringIO()
    outputs, started, chain = [], time.monotonic(), []
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
        try:
            exec(compile(source, "<check cell>", "exec"), namespace)
            error = None
        except BaseException as err:  # noqa: BLE001 - the cell's exception is its result
            error = {"type": "error", "ename": type(err).__name__, "evalue": clip(str(err))}
            chain = raised(err)
    outputs.append({"type": "stream", "name": "stdout", "text": clip(buffer.getvalue())})
    if error:
        outputs.append(error)
    return {"outputs": outputs, "message": "", "kernel_exit": None,
            "raised": chain, "seconds": round(time.monotonic() - started, 3)}


def main(argv: list[str]) -> int:
    items_path, wanted = argv[0], [int(i) for i in argv[1].split(",") if i]
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the student's own printing: to stderr, which the grader caps
    sys.stdout = sys.stderr = open(2, "w", buffering=1, closefd=False)
    sys.path[:0] = [os.getcwd()]
    with open(items_path) as handle:
        items = json.load(handle)
    import torch

    torch.set_num_threads(1)
    namespaces: dict[str, dict] = {}
    for index in wanted:
        item = items[index]
        protocol.write(json.dumps({"start": index}) + "\n")
        if item["kind"] == "probe":
            record = probe(item["module"])
        else:
            namespace = namespaces.get(item["lesson"])
            if namespace is None:
                namespace = namespaces[item["lesson"]] = {"__name__": "__main__"}
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    for line in item["setup"].splitlines():
                        try:
                            exec(line, namespace)
                        except BaseException:  # noqa: BLE001 - the check cell will say what is missing
                            pass
            record = run_cell(item["source"], namespace)
        protocol.write(json.dumps({"done": index, "record": record}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
