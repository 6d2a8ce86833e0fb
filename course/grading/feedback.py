"""Feedback to hand back: one Markdown file per student, OUT/feedback/<report name>.md.

    write_feedback(out, info, records)

Built from the records only (records.py), like the gradebook, so a one-machine run, a regrade and
a merge of shards write the same files. Each file is safe to give to its student as it is. It
holds each check's points; the files of the submission that were not graded and why (a
`softmax (1).py`, as a browser or an LMS download renames a second copy, is not `softmax.py`:
the student reads it here, beside the NOT IMPLEMENTED YET it causes); for a check that failed on
the notebook's visible cases, the message
the student's own notebook prints for it; for a check that passed the visible cases and lost its
points on hidden inputs, only the KIND of hidden case that failed (the case's name, such as "a
batch of one, one query": the kinds are no secret, the release's README names them). Never in
it: the hidden inputs or outputs, what differed on them, the seed or its digest, what the
student's code printed in the sandbox (raw/), timings, the grader's flags (`unconfirmed`,
`mentions-solutions`, ...) or the grader's own errors. Nothing in it tells a student more about
the next run's hidden inputs than the release does: they are drawn afresh from a new secret seed.

The text a student reads goes through course.i18n; check ids and PASS/FAIL/BLOCKED stay as
they are.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

from course.grading.records import CheckRecord, ClassInfo, StudentRecord, atomic_write
from course.i18n import N_, _

FEEDBACK_DIR = "feedback"
MAX_MESSAGE = 4000     # characters of one visible message
MAX_KIND = 200         # characters of one hidden case's name
STATUS_TEXT = {
    "no-submission": N_("No exercise file was found in what you handed in, so every check "
                        "scores 0. Hand in your `exercises/` folder (the `.py` files)."),
    "grader-error": N_("The grader failed on your submission; this is not your fault. Your "
                       "instructor will look at it."),
    "syntax-error": N_("One of your files does not compile (see Problems). The checks that need "
                       "it score 0; the others were graded."),
    "import-error": N_("One of your files raises an error when it is imported (see Problems). "
                       "The checks that need it score 0; the others were graded."),
    "timeout": N_("Your code ran past a time limit. The check that was running scores 0; the "
                  "others were graded."),
    "memory-limit": N_("Your code used more memory than it may. The check that was running "
                       "scores 0; the others were graded."),
    "crashed": N_("The process running your code died (a crash, or a call such as os._exit). "
                  "The check that was running scores 0; the others were graded."),
}


def _inline(text: str) -> str:
    """Text the student controls (a folder name), safe inside a line of Markdown."""
    text = " ".join(str(text).split())
    return html.escape(text, quote=False).replace("`", "'").replace("*", "\\*").replace("_", "\\_")


def _block(text: str) -> list[str]:
    """`text` as a fenced code block (indented under a list item) that it cannot close."""
    text = str(text)[:MAX_MESSAGE]
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return ["", f"  {fence}", *[f"  {line}" for line in text.splitlines()], f"  {fence}", ""]


def _points(check: CheckRecord) -> str:
    return f"{check.earned:g} / {check.points:g}"


def check_lines(check: CheckRecord) -> list[str]:
    """What the student reads about one check."""
    head = f"- `{check.id}`: {_points(check)}"
    if check.passed and check.stand_ins and not check.blocked_by:
        used = ", ".join(f"`{b}`" for b in check.stand_ins)
        return [f"{head}: PASS " + _("(the notebook's cases and the hidden inputs, with the "
                                     "reference's {checks} in place of yours: this assignment "
                                     "does not grade that lesson)").format(checks=used)]
    if check.passed and check.blocked_by:
        blockers = ", ".join(f"`{b}`" for b in check.blocked_by)
        return [f"{head}: PASS " + _("(right on its own: the notebook's cases and the hidden "
                                     "inputs, with the reference's {checks} in place of yours, "
                                     "which fails)").format(checks=blockers)]
    if check.passed:
        return [f"{head}: PASS " + _("(the notebook's cases and the hidden inputs)")]
    if check.blocked_by:
        blockers = ", ".join(f"`{b}`" for b in check.blocked_by)
        return [f"{head}: BLOCKED: " + _("it calls {checks}, which did not pass; fix that "
                                         "first").format(checks=blockers)]
    if check.confirmed is False:
        kind = " ".join(str(check.hidden_failure or "").split())[:MAX_KIND]
        if kind:
            what = _("it failed on a hidden case of this kind: {kind}").format(kind=f"`{kind}`")
        else:
            what = _("it did not complete on the hidden inputs")
        return [f"{head}: " + _("PASS on the notebook's cases, but {what}. Your code is right on "
                                "the cases the notebook shows, not on every input of this kind: "
                                "try such inputs yourself.").format(what=what)]
    return [f"{head}: FAIL"] + _block(check.message)


def _problems(record: StudentRecord) -> list[str]:
    """The problems found in the student's own files (not the grader's own errors)."""
    if record.status == "grader-error":
        return []
    return [p for p in record.problems if not p.lower().startswith("grader error")]


RENAME_ADVICE = {
    "canvas": N_("**Rename each file on your computer to the exercise's name it resembles (for "
                 "example `softmax.py`, not `softmax (1).py`) and submit again.** Canvas may list "
                 "the new file as `softmax-1.py` or `softmax-2.py` (its numbering of a name you "
                 "handed in before): that is fine, it is graded as `softmax.py`. Until then its "
                 "checks count the exercise as not written."),
    "moodle": N_("**Rename each file on your computer to the exercise's name it resembles (for "
                 "example `softmax.py`, not `softmax (1).py`), then edit your Moodle submission: "
                 "delete the misnamed file and upload the renamed one.** Until then its checks "
                 "count the exercise as not written."),
    "": N_("**Rename each file to the exercise's name it resembles (for example `softmax.py`, not "
           "`softmax (1).py`) and hand it in again**: until then its checks count the exercise "
           "as not written."),
}


def ignored_lines(record: StudentRecord) -> list[str]:
    """The files of the submission the grader did not take as exercises, and why (the grader's
    words about the student's own files: never anything of the hidden run), and what to do on
    the LMS the class uses."""
    if not record.ignored:
        return []
    lines = [_("These files were not graded as exercises (only `exercises/*.py` with an "
               "exercise's name count):"), ""]
    lines += [f"- {_inline(item)}" for item in record.ignored]
    if any("did you mean" in item for item in record.ignored):
        lines += ["", _(RENAME_ADVICE.get(record.lms, RENAME_ADVICE[""]))]
    return lines


def delivered_lines(record: StudentRecord) -> list[str]:
    """How the LMS delivered the files, where it renamed one (and the grader read it back)."""
    return ["- " + _("`{graded}`: Canvas delivered it as `{delivered}` (its numbering of a file "
                      "name you handed in before); graded as `{graded}`.").format(
        graded=_inline(b), delivered=_inline(a)) for a, b in record.delivered]


def _heading(lines: list[str], title: str) -> None:
    while lines and not lines[-1]:
        lines.pop()
    lines += ["", f"## {title}", ""]


def feedback_text(info: ClassInfo, record: StudentRecord) -> str:
    lines = [f"# {_inline(record.student)}: " + _("{total} / {maximum} points").format(
        total=f"{record.total:g}", maximum=f"{record.maximum:g}"), "",
        _("Each check ran first on the cases of its notebook cell (the PASS or FAIL line you see "
          "when you run it), then, if it passed, on hidden inputs of the same kinds, drawn afresh "
          "for every grading run. A check earns its points when your code agrees with the "
          "reference on both.")]
    if record.status != "ok":
        text = STATUS_TEXT.get(record.status)
        lines += ["", f"**{record.status}**: " + (_(text) if text else _("see your instructor."))]
    delivered = delivered_lines(record)
    if delivered:
        _heading(lines, _("How your files arrived"))
        lines += delivered
    ignored = ignored_lines(record)
    if ignored:
        _heading(lines, _("Files not graded"))
        lines += ignored
    problems = _problems(record)
    if problems:
        _heading(lines, _("Problems"))
        for problem in problems:
            first, *rest = str(problem)[:MAX_MESSAGE].splitlines() or [""]
            lines.append(f"- {_inline(first)}")
            if rest:
                lines += _block("\n".join(rest))
    lesson = None
    for check in record.checks:
        if check.lesson != lesson:
            lesson = check.lesson
            _heading(lines, _("Lesson {lesson}").format(lesson=lesson))
        lines += check_lines(check)
    return "\n".join(lines).rstrip() + "\n"


def write_feedback(out: Path, info: ClassInfo, records) -> list[Path]:
    """Write OUT/feedback/<report name>.md for every record; remove feedback no record backs.

    `records`: the StudentRecords of the class (a list, or records.load_students' dict)."""
    records = list(records.values()) if isinstance(records, dict) else list(records)
    folder = Path(out) / FEEDBACK_DIR
    written = []
    for record in sorted(records, key=lambda r: r.report_name):
        path = folder / f"{record.report_name}.md"
        atomic_write(path, feedback_text(info, record))
        written.append(path)
    if folder.is_dir():
        for stale in set(folder.glob("*.md")) - set(written):
            stale.unlink()
    return written
