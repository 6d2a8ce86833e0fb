"""Reading a check cell's outputs: which checks printed their PASS line, and why the others failed."""
from __future__ import annotations

from course.checks import lines as check_lines
from course.grading.plan import CheckCell

MEMORY_WORDS = ("MemoryError", "can't allocate memory", "DefaultCPUAllocator", "std::bad_alloc",
                "Cannot allocate memory")


def kernel_died(record: dict) -> bool:
    """The process running the cell exited by itself, or was killed from inside its sandbox
    (`signalled`); a bare -9 is the grader killing it."""
    code = record.get("kernel_exit")
    return code is not None and (code != -9 or record.get("signalled") is True)


def judge_cell(cell: CheckCell, record: dict | None, n_cases: dict[str, int],
               junit: tuple[str, str] | None = None) -> dict[str, tuple[bool, str]]:
    """Check id -> (PASS line printed?, message) for one check cell, from its real outputs."""
    if record is None:
        return {c: (False, "") for c in cell.checks}  # reason filled in by the caller
    stdout = "".join(o.get("text", "") for o in record["outputs"] if o["type"] == "stream")
    errors = [o for o in record["outputs"] if o["type"] == "error"]
    died = kernel_died(record)
    timed_out = not died and ("Timeout of" in record.get("message", "") or (
        junit is not None and "Timeout of" in junit[1]))
    results: dict[str, tuple[bool, str]] = {}
    failed_before = None
    for check_id in cell.checks:
        mine = [e for e in errors if check_lines.names_check(e["evalue"], check_id)]
        passed = (check_lines.printed_pass(stdout, check_id, n_cases[check_id]) and not mine
                  and failed_before is None and not died and not timed_out
                  and (not errors or any(check_lines.names_check(e["evalue"], c) for e in errors
                                         for c in cell.checks if c != check_id)))
        if passed:
            results[check_id] = (True, check_lines.pass_line(check_id, n_cases[check_id]))
            continue
        if mine:
            message = mine[0]["evalue"].strip()
        elif died and record.get("signalled") is True:
            message = f"CRASHED: {record.get('message')}, while this check cell ran; the kernel died"
        elif died:
            message = (f"CRASHED: the process died (exit code {record['kernel_exit']}) while "
                       "this check cell ran (os._exit, a segfault, an abort in native code?); "
                       "the kernel died")
        elif timed_out:
            message = "TIMEOUT: the check cell ran past the per-cell time limit (an endless loop?)"
        elif failed_before is not None:
            message = f"not run: {failed_before} failed first in the same cell"
        elif errors:
            error = errors[0]
            message = f"the check cell raised {error['ename']}: {error['evalue'].strip()}"
        elif record.get("message"):
            message = "the check cell did not finish: " + record["message"].strip().splitlines()[-1]
        else:
            message = "no PASS line and no error (did the code print instead of return?)"
        results[check_id] = (False, message)
        failed_before = failed_before or check_id
    return results


def why_failed(record: dict) -> str:
    """One line on why a (non-check) cell failed (FULL=1 runs every cell)."""
    message = record.get("message") or ""
    errors = [o for o in record.get("outputs", []) if o["type"] == "error"]
    if kernel_died(record):
        return f"the kernel died (exit code {record['kernel_exit']})"
    if "Timeout of" in message:
        return "ran past the per-cell time limit"
    if errors:
        first = errors[0]["evalue"].strip().splitlines()
        return f"{errors[0]['ename']}: {first[0] if first else ''}"
    if "Cell outputs differ" in message:
        return "its outputs differ from the committed notebook's (strict nbval)"
    lines = message.strip().splitlines()
    return lines[-1] if lines else record.get("outcome", "failed")
