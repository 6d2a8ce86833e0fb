"""The grader's child-side helpers; they run inside a student's working copy, never in the grader.

    python -m course.grade_sandbox limit --memory-mib 4096 --fsize-mib 1024 -- CMD ARGS...
        set resource limits on this process, then exec CMD (the limits pass to its children:
        pytest and the Jupyter kernel it starts)
    python -m course.grade_sandbox probe warmup softmax ...
        compile, then import, each `exercises.<module>`; one JSON line per step on stdout

Both are started by `course.grade` with the working copy as the current folder and as the only
PYTHONPATH entry, so whatever the student's code imports comes from that copy (which has no
`solutions/`).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import traceback
from pathlib import Path

MIB = 1024 * 1024


def set_limits(memory_mib: int, fsize_mib: int) -> None:
    """Address-space and file-size limits, no core dumps; inherited across fork and exec."""
    if memory_mib > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mib * MIB, memory_mib * MIB))
    if fsize_mib > 0:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_mib * MIB, fsize_mib * MIB))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def short_traceback(err: BaseException, folder: str = "exercises") -> str:
    """The last frame of the traceback that lies in the student's files, as 'file:line'."""
    where = ""
    for frame in traceback.extract_tb(err.__traceback__):
        if f"{os.sep}{folder}{os.sep}" in frame.filename:
            where = f"{folder}/{Path(frame.filename).name}:{frame.lineno}"
    return where


def probe(modules: list[str]) -> int:
    """Compile and import each student module; report syntax errors and exceptions at import."""
    import importlib

    sys.path[:0] = [os.getcwd()]
    for name in modules:
        path = Path("exercises") / f"{name}.py"
        try:
            source = path.read_bytes()
            compile(source, str(path), "exec")
        except SyntaxError as err:  # IndentationError and TabError are SyntaxErrors too
            emit(module=name, step="compile", ok=False, kind="syntax-error",
                 error=f"{type(err).__name__}: {err.msg} (exercises/{name}.py, line {err.lineno})")
            continue
        except BaseException as err:  # e.g. a parser stack overflow on absurd input
            emit(module=name, step="compile", ok=False, kind="syntax-error",
                 error=f"{type(err).__name__}: {err}")
            continue
        emit(module=name, step="import", ok=None)  # started; a hang leaves this as the last line
        try:
            importlib.import_module(f"exercises.{name}")
        except BaseException as err:  # noqa: BLE001 - SystemExit and friends count too
            kind = "syntax-error" if isinstance(err, SyntaxError) else "import-error"
            if isinstance(err, MemoryError):
                kind = "memory-limit"
            where = short_traceback(err)
            emit(module=name, step="import", ok=False, kind=kind,
                 error=f"{type(err).__name__}: {err}" + (f" (at {where})" if where else ""))
            continue
        emit(module=name, step="import", ok=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    limit = sub.add_parser("limit")
    limit.add_argument("--memory-mib", type=int, default=0)
    limit.add_argument("--fsize-mib", type=int, default=0)
    limit.add_argument("cmd", nargs=argparse.REMAINDER)
    prober = sub.add_parser("probe")
    prober.add_argument("modules", nargs="*")
    args = parser.parse_args(argv)
    if args.command == "limit":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        set_limits(args.memory_mib, args.fsize_mib)
        os.execvp(cmd[0], cmd)
    return probe(args.modules)


if __name__ == "__main__":
    sys.exit(main())
