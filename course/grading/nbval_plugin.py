"""pytest plugin the grader loads next to nbval with FULL=1 (`-p nbval_plugin`, from a read-only
copy bound into the sandbox).

It appends one JSON line per notebook cell to the file named by the environment variable
COURSE_GRADE_CELL_LOG: the cell's number, tags and source, nbval's outcome, and the outputs the
cell really produced (strict nbval only says whether they equal the stored ones). Lines are
written as each cell finishes, so a run killed at the student's time limit still leaves the
cells it got through. The variable is removed from the environment before any kernel starts.
"""
from __future__ import annotations

import json
import os
import re

import pytest

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
SECTION = re.compile(r"^([A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)")
_log = None


def pytest_configure(config):
    global _log
    path = os.environ.pop("COURSE_GRADE_CELL_LOG", None)
    if path:
        _log = open(path, "a", encoding="utf-8")


def pytest_unconfigure(config):
    if _log is not None:
        _log.close()


def _clip(text: str, limit: int = 4000) -> str:
    text = ANSI.sub("", text)
    return text if len(text) <= limit else text[: limit // 2] + "\n...\n" + text[-limit // 2:]


def raised(traceback: list[str]) -> list[list[str]]:
    """[[type name, first line of its message]] of every exception in an error output's
    traceback (IPython prints a chain as sections that each start "Name  Traceback ...")."""
    lines = ANSI.sub("", "\n".join(traceback)).splitlines()
    found = []
    for number, line in enumerate(lines):
        section = SECTION.match(line)
        if section:
            name = section[1]
            message = next((rest[len(name) + 1:].strip() for rest in lines[number + 1:]
                            if rest.startswith(f"{name}:") or SECTION.match(rest)), "")
            found.append([name.rsplit(".", 1)[-1], message[:300]])
    return found[-8:]


def _outputs(item) -> list[dict]:
    found = []
    for out in getattr(item, "test_outputs", None) or []:
        kind = out.get("output_type")
        if kind == "stream":
            found.append({"type": "stream", "name": out.get("name"), "text": _clip(out.get("text", ""))})
        elif kind == "error":
            found.append({"type": "error", "ename": out.get("ename", ""),
                          "evalue": _clip(str(out.get("evalue", ""))),
                          "traceback": _clip("\n".join(out.get("traceback", [])[-3:])),
                          "raised": raised(out.get("traceback", []))})
        elif kind in ("display_data", "execute_result"):
            text = out.get("data", {}).get("text/plain", "")
            found.append({"type": kind, "text": _clip(text if isinstance(text, str) else "".join(text))})
    return found


def _message(report, call) -> str:
    if report.failed:
        return _clip(report.longreprtext)
    if call.excinfo is not None:  # e.g. xfailed after an earlier cell timed out
        return _clip(call.excinfo.exconly())
    return ""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Keep hold of the kernel's process: nbval drops its manager when it stops a kernel."""
    try:
        item._grade_kernel = item.parent.kernel.km.provisioner.process
    except AttributeError:
        item._grade_kernel = None
    yield


def _kernel_exit(item):
    """The kernel's exit code if it is gone after this cell (-9: nbval killed it), else None."""
    process = getattr(item, "_grade_kernel", None)
    try:
        return None if process is None else process.poll()
    except Exception:  # noqa: BLE001
        return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _log is None or not hasattr(item, "cell_num"):
        return
    if call.when != "call" and report.passed:
        return
    record = {
        "notebook": os.path.basename(str(item.fspath)),
        "cell": item.cell_num,
        "when": call.when,
        "tags": list(item.cell.get("metadata", {}).get("tags", [])),
        "source": item.cell.source,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
        "message": _message(report, call),
        "outputs": _outputs(item) if call.when == "call" else [],
        "seconds": round(call.duration, 3),
        "kernel_exit": _kernel_exit(item) if call.when == "call" else None,
    }
    _log.write(json.dumps(record) + "\n")
    _log.flush()
