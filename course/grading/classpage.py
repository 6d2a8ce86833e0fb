"""OUT/class/: the class at a glance, for the instructor, written by every grading run and merge.

    write_class_page(out, info, records, roster)

- `index.html`: one page that opens offline (no network, no server: the figure is embedded, the
  style inline, and its Content-Security-Policy forbids every request);
- `checks.csv`: its table, per lesson and check (and per section, where the roster has them);
- `causes.csv`: the causes ranked per check, with the students (report names) who have each;
- `causes.png`: the figure of checks against causes;
- `history.json`: the states of every student's checks at each run, to say what changed since.
All in the instructor's language (course.i18n: COURSE_LANG), from the records alone
(course/grading/classview.py). What a student may not see is never in them: no hidden input,
output or difference (a hidden failure is named by its kind only), no seed, no timing, no flag.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

from course import ROOT
from course.grading import causes as cz
from course.grading.classview import ClassView, CauseRow, CheckRow, class_view, updated_history
from course.grading.names import csv_cell
from course.grading.records import atomic_write, read_json
from course.i18n import CHINESE, N_, _, language

CLASS_DIR = "class"
HISTORY = "history.json"
LABEL_CHARS = 34
CHECK_CALL = re.compile(r"\bcheck_(\w+)\s*\(")

CAUSE_TEXT = {
    cz.IMPORT_ERROR: N_("the exercise's file does not import (a syntax error, or an exception "
                        "when imported)"),
    cz.CRASHED: N_("the process running the check died"),
    cz.CELL_ERROR: N_("the check cell raised outside the check (an import the notebook does "
                      "not find, ...)"),
    cz.NOT_RUN: N_("not run (the notebook stopped before this cell)"),
    cz.GRADER_ERROR: N_("the grader failed on this submission"),
    cz.TIMEOUT: N_("ran past a time or CPU-time limit"),
    "": N_("no named cause (see the failures without a named cause)"),
    cz.UNKNOWN: N_("unknown: graded before the grader kept causes"),
}
KIND_TEXT = {"fail": N_("in the notebook"), "hidden": N_("hidden inputs only"),
             "error": N_("error"), "timeout": N_("timeout")}


# ---------------------------------------------------------------------------------- words

def cause_text(row: CauseRow) -> str:
    """A cause in the instructor's language: a hint with its values left out ("…")."""
    if row.kind == "hidden" and row.case:
        return _("passes the notebook's cases, fails hidden inputs of this kind: {case}").format(
            case=row.case)
    if row.kind == "hidden":
        return _("passes the notebook's cases; its result on hidden inputs was refused")
    if row.kind == "fail" and row.id not in CAUSE_TEXT:
        return template_text(row.id)
    return _(CAUSE_TEXT.get(row.id, CAUSE_TEXT[""]))


def tests_text(row: CauseRow) -> str:
    """Under a crash's hint, what the failing case tests (the case's own hint), or ""."""
    return _("the failing case tests: {hint}").format(hint=template_text(row.tests)) \
        if row.tests else ""


def template_text(msgid: str) -> str:
    return cz.PLACEHOLDER.sub(lambda m: m.group(0)[0] if m.group(0) in ("{{", "}}") else "…",
                              _(msgid))


def short(text: str, limit: int = LABEL_CHARS) -> str:
    """`text` in at most `limit` Latin letters' width (a CJK character counts as two)."""
    text = " ".join(text.split())
    if cz.width(text) <= limit:
        return text
    kept, used = [], 0
    for char in text:
        used += cz.width(char)
        if used > limit - 1:
            break
        kept.append(char)
    return "".join(kept).rstrip() + "…"


def percent(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.0f} %"


def number(value: float | None) -> str:
    return "" if value is None else f"{value:+.2f}"


# -------------------------------------------------------------------- where a check is taught

def teaching(lessons: list[str], root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """Check id -> (notebook, the heading of the section its check cell closes): the part of the
    lesson that teaches the exercise, in the instructor's language where that edition exists."""
    folder = root / "notebooks"
    if language() == CHINESE and (folder / "zh").is_dir():
        folder = folder / "zh"
    found = {}
    for lesson in lessons:
        for path in sorted(folder.glob(f"{lesson}_*.ipynb")):
            try:
                cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            except (OSError, ValueError):
                continue
            heading = ""
            for cell in cells:
                source = cell.get("source", "")
                source = "".join(source) if isinstance(source, list) else source
                if cell.get("cell_type") == "markdown":
                    for line in source.splitlines():
                        if line.startswith("#"):
                            heading = line.lstrip("#").strip()
                elif "check" in cell.get("metadata", {}).get("tags", []):
                    for name in CHECK_CALL.findall(source):
                        found.setdefault(f"{lesson}.{name}",
                                         (str(path.relative_to(root)), heading))
    return found


def taught_text(place: tuple[str, str] | None, check: str) -> str:
    if place is None:
        return _("lesson {lesson}").format(lesson=check.split(".", 1)[0])
    notebook, heading = place
    return _("{notebook}, section “{heading}”").format(notebook=notebook, heading=heading)


# ------------------------------------------------------------------------------------- figure

KIND_COLOURS = {"named": ("#08306b", "#2171b5", "#6baed6", "#9ecae1", "#c6dbef"),
                "unnamed": "#bdbdbd", "hidden": "#fd8d3c", "error": "#737373"}
FIGURE_CHECKS = 40            # checks shown, most failures first past this


def _colour(row: CauseRow, rank: int) -> str:
    if row.kind == "hidden":
        return KIND_COLOURS["hidden"]
    if row.kind in ("error", "timeout"):
        return KIND_COLOURS["error"]
    if not row.named:
        return KIND_COLOURS["unnamed"]
    shades = KIND_COLOURS["named"]
    return shades[min(rank, len(shades) - 1)]


def figure_png(view: ClassView) -> bytes | None:
    """Checks against their causes: one bar per check, one segment per cause (root failures),
    in the order of the page's tables, each with its rank there and as much of its text as fits."""
    rows = [c for c, found in view.causes.items() if found]
    if not rows:
        return None
    if len(rows) > FIGURE_CHECKS:
        keep = set(sorted(rows, key=lambda c: -sum(len(r.students) for r in view.causes[c]))
                   [:FIGURE_CHECKS])
        rows = [c for c in rows if c in keep]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    from course.fonts import use_cjk_font

    use_cjk_font()
    longest = max(sum(len(r.students) for r in view.causes[c]) for c in rows)
    left, width = 0.2 + 0.07 * max(len(c) for c in rows), 11.0     # inches
    axes_width = width - left - 0.3
    height = 1.5 + 0.3 * len(rows)
    fig = Figure(figsize=(width, height), dpi=96)
    FigureCanvasAgg(fig)
    fig.subplots_adjust(left=left / width, right=1 - 0.3 / width, bottom=0.9 / height,
                        top=1 - 0.45 / height)
    ax = fig.add_subplot()
    # students per Latin letter's width at fontsize 7 (about 0.06 inch; CJK: two of them)
    per_char = 0.062 * longest / axes_width
    for y, check in enumerate(rows):
        start = 0
        for rank, row in enumerate(view.causes[check]):
            n = len(row.students)
            colour = _colour(row, rank)
            ax.barh(y, n, left=start, color=colour, edgecolor="white", linewidth=0.8, height=0.78)
            room = int(n / per_char) - 1
            label = f"{rank + 1}" if room < 8 else f"{rank + 1} " + short(cause_text(row), room - 2)
            if room >= 1:
                dark = colour in KIND_COLOURS["named"][:2] or colour == KIND_COLOURS["error"]
                ax.text(start + n / 2, y, label, ha="center", va="center", fontsize=7,
                        color="white" if dark else "black", clip_on=True)
            start += n
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, longest * 1.01)
    ax.set_xlabel(_("students (each failure once, at its root)"), fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(_("Students per check and cause (root failures)"), fontsize=10)
    fig.legend(handles=[Patch(color=KIND_COLOURS["named"][1], label=_("a named cause")),
                        Patch(color=KIND_COLOURS["unnamed"], label=_("no named cause")),
                        Patch(color=KIND_COLOURS["hidden"], label=_("hidden inputs only")),
                        Patch(color=KIND_COLOURS["error"], label=_("error or timeout"))],
               fontsize=7, loc="lower center", ncol=4, frameon=False)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------- CSV

def _header(with_section: bool) -> list[str]:
    return ([_("section")] if with_section else []) + [
        _("lesson"), _("check"), _("graded"), _("attempted"), _("passed"),
        _("failed in the notebook"), _("failed on hidden inputs only"), _("blocked"),
        _("errors"), _("timeouts"), _("not attempted"), _("share passing"),
        _("discrimination")] + [_("pass rate, quintile {q}").format(q=q + 1) for q in range(5)]


def _cells(row: CheckRow) -> list[str]:
    return [row.lesson, row.id, row.graded, row.attempted, row.passed, row.failed, row.hidden,
            row.blocked, row.errors, row.timeouts, row.todo,
            "" if row.share is None else f"{row.share:.3f}",
            "" if row.discrimination is None else f"{row.discrimination:.3f}"] + [
        "" if q is None else f"{q:.3f}" for q in (row.quintiles or [None] * 5)]


def checks_csv(view: ClassView) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    sections = bool(view.sections)
    writer.writerow(_header(sections))
    for row in view.checks:
        writer.writerow(([_("all")] if sections else []) + _cells(row))
    for section, rows in view.sections.items():
        for row in rows:
            writer.writerow([csv_cell(section or _("no section"))] + _cells(row))
    return buffer.getvalue()


def causes_csv(view: ClassView, places: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow([_("lesson"), _("check"), _("rank"), _("students"), _("where it failed"),
                     _("cause id"), _("cause"), _("failing case tests id"),
                     _("failing case tests"), _("taught in"), _("also blocks"),
                     _("student names")])
    for check, rows in view.causes.items():
        for rank, row in enumerate(rows, start=1):
            writer.writerow([check.split(".", 1)[0], check, rank, len(row.students),
                             _(KIND_TEXT[row.kind]), csv_cell(row.id or ""),
                             csv_cell(cause_text(row)), csv_cell(row.tests or ""),
                             csv_cell(template_text(row.tests) if row.tests else ""),
                             csv_cell(taught_text(places.get(check), check)),
                             " ".join(f"{c}:{n}" for c, n in sorted(row.blocks.items())),
                             csv_cell(" ".join(row.students))])
    return buffer.getvalue()


# --------------------------------------------------------------------------------------- HTML

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","Noto Sans",sans-serif;
margin:1.5em auto;max-width:78em;padding:0 1em;color:#1b1b1b;line-height:1.4}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #d0d0d0;padding:.25em .45em;vertical-align:top}
th{background:#f2f2f2;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.flag td{background:#fff3cd}.bad{color:#a40000;font-weight:600}.note{color:#555}
details summary{cursor:pointer}code{font-size:.95em}img{max-width:100%;height:auto}
"""
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "form-action 'none'; base-uri 'none'")


def e(text) -> str:
    return html.escape(str(text), quote=True)


def _table(header: list[str], rows: list[list[str]], flags: list[bool] | None = None,
           table_id: str = "") -> list[str]:
    out = [f'<table{f" id={chr(34)}{table_id}{chr(34)}" if table_id else ""}>',
           "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        flag = ' class="flag"' if flags and flags[i] else ""
        out.append(f"<tr{flag}>" + "".join(
            f'<td class="n">{cell[1:]}</td>' if cell.startswith("\x00") else f"<td>{cell}</td>"
            for cell in row) + "</tr>")
    return out + ["</tbody></table>"]


def _paragraph(text: str) -> list[str]:
    return [f"<p>{e(text)}</p>"]


def num(value) -> str:
    """A table cell aligned as a number (already escaped)."""
    return "\x00" + e(value)


def _check_table(rows: list[CheckRow], table_id: str = "") -> list[str]:
    header = [_("check"), _("graded"), _("attempted"), _("passed"), _("failed in the notebook"),
              _("failed on hidden inputs only"), _("blocked"), _("errors"), _("timeouts"),
              _("not attempted"), _("share passing"), _("discrimination"),
              _("pass rate by quintile of the total (lowest first)")]
    body, flags = [], []
    for row in rows:
        quintiles = " · ".join("–" if q is None else f"{100 * q:.0f}" for q in row.quintiles)
        body.append([f"<code>{e(row.id)}</code>", num(row.graded), num(row.attempted),
                     num(row.passed), num(row.failed), num(row.hidden), num(row.blocked),
                     num(row.errors), num(row.timeouts), num(row.todo), num(percent(row.share)),
                     num(number(row.discrimination)), e(quintiles)])
        flags.append(_flagged(row))
    return _table(header, body, flags, table_id)


def _flagged(row: CheckRow) -> bool:
    """A check that the strong students fail as often as the others, or whose visible cases are
    weak: worth a look."""
    return (row.discrimination is not None and row.discrimination <= 0.0 and
            row.share is not None and row.share < 1.0) or row.weak_visible


INLINE_NAMES = 4              # a list of more students folds away


def _names(students: list[str], view: ClassView) -> str:
    shown = []
    for name in students:
        section = view.section_of.get(name, "")
        shown.append(e(name) + (f' <span class="note">({e(section)})</span>' if section else ""))
    if len(students) <= INLINE_NAMES:
        return ", ".join(shown)
    summary = _("{n} students").format(n=len(students))
    return f"<details><summary>{e(summary)}</summary>{', '.join(shown)}</details>"


def _cause_tables(view: ClassView, places: dict) -> list[str]:
    out = []
    for check, rows in view.causes.items():
        if not rows:
            continue
        out.append(f"<h3><code>{e(check)}</code> <span class=\"note\">"
                   f"{e(taught_text(places.get(check), check))}</span></h3>")
        body = []
        for rank, row in enumerate(rows, start=1):
            text = e(cause_text(row))
            if row.tests:
                text += f'<br><span class="note">{e(tests_text(row))}</span>'
            if row.example and row.named and row.example.strip() != _(row.id).strip():
                example = _("for example:")
                text += f'<br><span class="note">{e(example)} {e(row.example)}</span>'
            blocks = ", ".join(f"<code>{e(c)}</code> ({n})" for c, n in sorted(row.blocks.items()))
            body.append([num(rank), num(len(row.students)), e(_(KIND_TEXT[row.kind])), text,
                         blocks, _names(row.students, view)])
        out += _table([_("rank"), _("students"), _("where it failed"), _("cause"),
                       _("also blocks"), _("who")], body)
    return out or _paragraph(_("No check failed."))


def _unnamed(view: ClassView) -> list[str]:
    if not view.unnamed:
        return _paragraph(_("Every failure in the notebook has a named cause."))
    body = [[num(len(u.students)), f"<code>{e(u.text)}</code>",
             ", ".join(f"<code>{e(c)}</code> ({n})" for c, n in u.checks.most_common()),
             _names(u.students, view)] for u in view.unnamed]
    return _table([_("students"), _("what the check found"), _("checks"), _("who")], body)


def _hidden(view: ClassView) -> list[str]:
    rows = [r for r in view.checks if r.hidden]
    if not rows:
        return _paragraph(_("No check passed the notebook and failed on hidden inputs."))
    kinds = {c: [r for r in found if r.kind == "hidden"] for c, found in view.causes.items()}
    body, flags = [], []
    for row in sorted(rows, key=lambda r: -r.hidden):
        notebook = row.passed + row.hidden
        body.append([f"<code>{e(row.id)}</code>", num(row.hidden), num(notebook),
                     num(percent(row.hidden / notebook if notebook else None)),
                     "<br>".join(f"{e(k.case or '?')} ({len(k.students)})" for k in kinds[row.id])])
        flags.append(row.weak_visible)
    return _table([_("check"), _("failed on hidden inputs only"), _("passed the notebook"),
                   _("share"), _("kinds of hidden case")], body, flags)


def _sections(view: ClassView) -> list[str]:
    if not view.sections:
        return _paragraph(_("The roster gives no sections."))
    names = list(view.sections)
    header = [_("check")] + [s or _("no section") for s in names]
    body = []
    for index, row in enumerate(view.checks):
        cells = [f"<code>{e(row.id)}</code>"]
        for section in names:
            mine = view.sections[section][index]
            cells.append(num(f"{mine.passed}/{mine.graded}" + (
                f" ({percent(mine.share)})" if mine.share is not None else "")))
        body.append(cells)
    return _table(header, body)


def _changes(view: ClassView) -> list[str]:
    changes = view.changes
    if changes.since is None:
        return _paragraph(_("No earlier run into this OUT to compare with."))
    out = _paragraph(_("Compared with the run of {when}.").format(when=changes.since))
    if changes.new:
        out += _paragraph(_("Graded since: {n} students.").format(n=len(changes.new)))
        out.append(_names(changes.new, view))
    if changes.gone:
        out += _paragraph(_("No longer in OUT: {n} students.").format(n=len(changes.gone)))
    checks = [c for c in view.snapshot["checks"] if c in changes.to_pass or c in changes.to_fail]
    if checks:
        body = [[f"<code>{e(c)}</code>", num(len(changes.to_pass.get(c, []))),
                 _names(changes.to_pass.get(c, []), view), num(len(changes.to_fail.get(c, []))),
                 _names(changes.to_fail.get(c, []), view)] for c in checks]
        out += _table([_("check"), _("failing, now passing"), _("who"),
                       _("passing, now failing"), _("who")], body)
    elif not changes.new and not changes.gone:
        out += _paragraph(_("No check changed."))
    return out


def page(view: ClassView, info, places: dict, png: bytes | None) -> str:
    lessons = ", ".join(info.lessons)
    title = _("The class at a glance: lessons {lessons}").format(lessons=lessons)
    share = view.named_share
    named = (_("{named} of {total} failures in the notebook ({share}) have a named cause "
               "(the goal is 90 %).").format(named=view.named,
                                                total=view.notebook_failures - view.unknown,
                                                share=percent(share))
             if share is not None else _("No failure in the notebook."))
    if view.unknown:
        named += " " + _("{n} more come from records graded before the grader kept causes."
                         ).format(n=view.unknown)
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    about = _("{n} students ({m} with a submission), written {when}, from the records in this "
              "folder only.").format(n=view.students, m=view.with_submission, when=when)
    reading = _("A failure BLOCKED by another check counts once, at the cause of the check that "
                "blocks it. Rows in yellow: a check the stronger students fail as often as the "
                "others (discrimination ≤ 0), or whose notebook cases pass code that fails its "
                "hidden inputs.")
    out = ["<!DOCTYPE html>", f'<html lang="{"zh-CN" if language() == CHINESE else "en"}">',
           "<head>", '<meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
           f"<h1>{e(title)}</h1>", f'<p class="note">{e(about)}</p>',
           f"<p><strong>{e(named)}</strong></p>", f'<p class="note">{e(reading)}</p>']
    figure = _("Students per check and cause (root failures)")
    if png:
        data = base64.b64encode(png).decode("ascii")
        out.append(f'<p><img alt="{e(figure)}" src="data:image/png;base64,{data}"></p>')
    sections = [
        (_("Per check"), None, _check_table(view.checks, "checks")),
        (_("Causes, check by check"), None, _cause_tables(view, places)),
        (_("Failures without a named cause"),
         _("Grouped by what the check found, numbers and quoted values masked: the hints to "
           "write next."), _unnamed(view)),
        (_("Passing the notebook, failing hidden inputs"),
         _("Many here: the notebook cases of that check are too weak."), _hidden(view)),
        (_("By section"), None, _sections(view)),
        (_("Since the last run"), None, _changes(view)),
    ]
    for heading, note, body in sections:
        out.append(f"<h2>{e(heading)}</h2>")
        if note:
            out.append(f'<p class="note">{e(note)}</p>')
        out += body
    out += ["</body>", "</html>"]
    return "\n".join(out) + "\n"


# -------------------------------------------------------------------------------------- write

def _sections_of(roster: Path | None) -> dict[str, str]:
    """Folder name -> section, from the roster (none: {})."""
    if roster is None:
        return {}
    from course.grading.roster import RosterError, folder_key, read_roster

    try:
        entries = read_roster(roster)
    except RosterError:
        return {}
    return {folder_key(e.folder): e.section for e in entries if e.section}


def _history(folder: Path) -> list[dict]:
    try:
        data = read_json(folder / HISTORY)
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def write_class_page(out: Path, info, records, roster: Path | None = None) -> list[Path]:
    """OUT/class/: the page, its tables as CSV, the figure and the history of runs."""
    from course.grading.roster import folder_key

    folder = Path(out) / CLASS_DIR
    records = list(records.values()) if isinstance(records, dict) else list(records)
    sections = _sections_of(roster)
    history = _history(folder)
    view = class_view(info, records, {r.student: sections.get(folder_key(r.student), "")
                                      for r in records}, history)
    places = teaching(info.lessons)
    png = figure_png(view)
    written = []
    for name, text in (("index.html", page(view, info, places, png)),
                       ("checks.csv", checks_csv(view)), ("causes.csv", causes_csv(view, places)),
                       (HISTORY, json.dumps(updated_history(history, view.snapshot),
                                            ensure_ascii=False))):
        atomic_write(folder / name, text)
        written.append(folder / name)
    if png:
        _write_bytes(folder / "causes.png", png)
        written.append(folder / "causes.png")
    else:
        (folder / "causes.png").unlink(missing_ok=True)
    return written


def _write_bytes(path: Path, data: bytes) -> None:
    """Like records.atomic_write, for bytes: a reader sees the old file or the new one."""
    import os
    import tempfile

    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_safely(out: Path, info, records, roster: Path | None = None) -> bool:
    """write_class_page, whose failure costs the run nothing else (it is written last)."""
    try:
        write_class_page(out, info, records, roster)
        return True
    except Exception as err:  # noqa: BLE001 - the grades are written; say so and go on
        print(f"warning: the class page ({Path(out) / CLASS_DIR}) was not written: "
              f"{type(err).__name__}: {err}", file=sys.stderr)
        return False
