"""What the grader writes: per-student results, the gradebook (one row per student, one column
per check) and one Markdown report per student."""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

STATUSES = {
    "no-submission": "no exercises/*.py found in the student's folder; every check scores 0",
    "grader-error": "the grader itself failed on this submission (a bug to report); see raw/",
    "syntax-error": "an exercise file the graded checks use does not compile; the checks that "
                    "need it score 0, the others are graded",
    "import-error": "an exercise file raises when imported (an exception at module level, an "
                    "import of something the course does not have, such as `solutions`); the "
                    "checks that need it score 0, the others are graded",
    "timeout": "a check ran past the per-cell limit (it scores 0 and grading goes on), or the "
               "student's total time ran out (the checks not reached score 0)",
    "memory-limit": "the student's code hit the memory limit (MemoryError, or torch could not "
                    "allocate); the check that did scores 0",
    "crashed": "the process running the student's code died (os._exit, a segfault, ...); the "
               "check it was running scores 0, the others are graded in a fresh process",
    "ok": "every graded check ran within the limits; points are what the checks gave, which "
          "may be 0",
}
UNCONFIRMED = "PASS in the notebook, not confirmed on hidden inputs"


@dataclass
class CheckResult:
    id: str
    lesson: str
    points: float
    earned: float
    passed: bool          # earned its points: PASS in the notebook and confirmed on hidden inputs
    message: str
    confirmed: bool | None = None   # None: not tried (the notebook check failed)


@dataclass
class StudentResult:
    student: str
    report_name: str
    status: str
    total: float
    maximum: float
    checks: list[CheckResult]
    problems: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    other_failed_cells: list[str] = field(default_factory=list)
    seconds: float = 0.0
    unsafe: bool = False


def fmt(points: float) -> str:
    return f"{points:g}"


def write_gradebook(out: Path, columns: list[str], results: list[StudentResult]) -> Path:
    path = out / "gradebook.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["student", "status", "total", "max", *columns, "flags"])
        for r in sorted(results, key=lambda r: r.student):
            earned = {c.id: c.earned for c in r.checks}
            writer.writerow([r.student, r.status, fmt(r.total), fmt(r.maximum),
                             *[fmt(earned[c]) for c in columns], " ".join(r.flags)])
    return path


def report_text(r: StudentResult, limits_line: str) -> str:
    lines = [f"# {r.student}: {fmt(r.total)} / {fmt(r.maximum)} points, status {r.status}", ""]
    if r.unsafe:
        lines += ["**UNSAFE: graded without a sandbox (--unsafe-no-sandbox); the student's code "
                  "could read and change anything the grader can.**", ""]
    lines += [f"Status `{r.status}`: {STATUSES[r.status]}.", "",
              f"Graded in {r.seconds:g} s ({limits_line}). A check earns its points when it "
              "prints its PASS line in the notebook and the same code agrees with the reference "
              "on hidden inputs.", "Files graded: " + (", ".join(r.taken) or "none")]
    if r.ignored:
        lines.append("Ignored or worth a look: " + ", ".join(r.ignored))
    if r.flags:
        lines.append("Flags (worth a look): " + ", ".join(r.flags))
    if r.problems:
        lines += ["", "## Problems", ""] + [f"- {p}" for p in r.problems]
    lesson = None
    for c in r.checks:
        if c.lesson != lesson:
            lesson = c.lesson
            lines += ["", f"## Lesson {lesson}", ""]
        if c.passed:
            lines.append(f"- {c.message} (confirmed on hidden inputs): {fmt(c.earned)} / {fmt(c.points)}")
        else:
            lines.append(f"- FAIL {c.id}: 0 / {fmt(c.points)}")
            lines += ["", "  ```", *[f"  {line}" for line in c.message.splitlines()], "  ```", ""]
    if r.other_failed_cells:
        lines += ["", "## Other cells that failed (not graded; often a consequence of the above)", ""]
        lines += [f"- {cell}" for cell in r.other_failed_cells]
    return "\n".join(lines).rstrip() + "\n"
