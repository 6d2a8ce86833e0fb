"""What a student's record looks like to a person: the gradebook (one row per student, one column
per check) and one Markdown report per student. Both are rendered from records only
(course/grading/records.py), so a regrade, a resumed run and a merge of shards give the same
files. Folder names, file names and messages are hostile text: CSV cells are neutralised against
formulas, and reports write them as inert Markdown (course/grading/names.py: escaped text, or
code spans and fences no backtick in them can close), so no student's text becomes a heading,
a link or HTML in the instructor's reports."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from course.grading.names import csv_cell, md_code, md_fence, md_text
from course.grading.records import StudentRecord, atomic_write

STATUSES = {
    "no-submission": "no exercises/*.py found in the student's folder; every check scores 0",
    "grader-error": "the grader itself failed on this submission (a bug to report); see raw/",
    "syntax-error": "an exercise file the graded checks use does not compile; the checks that "
                    "need it score 0, the others are graded",
    "import-error": "an exercise file raises when imported (an exception at module level, an "
                    "import of something the course does not have, such as `solutions`); the "
                    "checks that need it score 0, the others are graded",
    "timeout": "a check ran past the per-cell time limit or its CPU-time limit, in the notebook "
               "or on hidden inputs (it scores 0 and grading goes on), or the student's total "
               "time ran out (the checks not reached score 0)",
    "memory-limit": "the student's code ran out of memory (it raised MemoryError, or torch "
                    "could not allocate); the check that did scores 0",
    "crashed": "the process running the student's code died (os._exit, a segfault, ...); the "
               "check it was running scores 0, the others are graded in a fresh process",
    "ok": "every graded check ran within the limits; points are what the checks gave, which "
          "may be 0",
}
UNCONFIRMED = "PASS in the notebook, not confirmed on hidden inputs"
GRADEBOOK = "gradebook.csv"


def fmt(points: float) -> str:
    return f"{points:g}"


def gradebook_text(columns: list[str], records) -> str:
    """The gradebook: a header, then one row per student sorted by folder name."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)  # RFC 4180 line ends, as spreadsheets expect
    writer.writerow(["student", "status", "total", "max", *columns, "flags"])
    for r in sorted(records, key=lambda r: r.student):
        earned = {c.id: c.earned for c in r.checks}
        writer.writerow([csv_cell(r.student), r.status, fmt(r.total), fmt(r.maximum),
                         *[fmt(earned.get(c, 0.0)) for c in columns], csv_cell(" ".join(r.flags))])
    return buffer.getvalue()


def write_gradebook(out: Path, columns: list[str], records) -> Path:
    """OUT/gradebook.csv, written atomically (a reader or a crash sees a whole gradebook)."""
    path = Path(out) / GRADEBOOK
    atomic_write(path, gradebook_text(columns, records))
    return path


def _check_lines(c) -> list[str]:
    if c.passed:
        alone = (f", with the reference's {md_text(', '.join(c.blocked_by))} in place of the "
                 "student's, which fails" if c.blocked_by else "")
        if getattr(c, "stand_ins", None):
            alone += (f", with the reference's {md_text(', '.join(c.stand_ins))} in place of the "
                      "student's (a lesson this assignment does not grade)")
        return [f"- {md_text(c.message)} (confirmed on hidden inputs{alone}): "
                f"{fmt(c.earned)} / {fmt(c.points)}"]
    return [f"- FAIL {md_text(c.id)}: 0 / {fmt(c.points)}", "",
            *md_fence(c.message.splitlines(), "  "), ""]


def report_text(r: StudentRecord, limits_line: str) -> str:
    lines = [f"# {md_text(r.student)}: {fmt(r.total)} / {fmt(r.maximum)} points, status {r.status}",
             ""]
    if r.unsafe:
        lines += ["**UNSAFE: graded without a sandbox (--unsafe-no-sandbox); the student's code "
                  "could read and change anything the grader can.**", ""]
    lines += [f"Status `{r.status}`: {STATUSES[r.status]}.", "",
              f"Graded in {r.seconds:g} s ({limits_line}). A check earns its points when it "
              "prints its PASS line in the notebook and the same code agrees with the reference "
              "on hidden inputs.", "Files graded: " + (", ".join(map(md_code, r.taken)) or "none")]
    if r.delivered:
        lines.append("Renamed by the LMS, graded under the exercise's name: " + "; ".join(
            f"{md_code(a)} as {md_code(b)}" for a, b in r.delivered))
    if r.late is not None or r.extension:
        late = {True: "late", False: "on time", None: "not known"}[r.late]
        lines.append(f"Late ({md_text(r.lms or 'LMS')}): {late}" +
                     (f"; extension to {md_text(r.extension)} (roster)" if r.extension else ""))
    if r.ignored:
        lines.append("Ignored or worth a look: " + ", ".join(map(md_code, r.ignored)))
    if r.flags:
        lines.append("Flags (worth a look): " + md_text(", ".join(r.flags)))
    if r.problems:
        lines += ["", "## Problems", ""] + [f"- {md_code(p)}" for p in r.problems]
    lesson = None
    for c in r.checks:
        if c.lesson != lesson:
            lesson = c.lesson
            lines += ["", f"## Lesson {md_text(lesson)}", ""]
        lines += _check_lines(c)
    if r.other_failed_cells:
        lines += ["", "## Other cells that failed (not graded; often a consequence of the above)", ""]
        lines += [f"- {md_code(cell)}" for cell in r.other_failed_cells]
    return "\n".join(lines).rstrip() + "\n"
