"""Where a student stands: every check of the course run on `exercises/`, one row each.

    python -m course.progress                       # or: make check
    python -m course.progress --only 01.scaled_scores   # make check ONLY=01.scaled_scores
    make check ONLY=01               # a lesson; ONLY=stable_softmax: an exercise
    python -m course.progress --hidden              # make check HIDDEN=1

Each exercise gets PASS, FAIL, BLOCKED (it fails because an exercise it calls fails: the row
names that one) or TODO (its code still raises NotImplementedError). Below the table comes the
whole message of each failing exercise (of every chosen one with --only), wrapped to 80 columns.
The checks are discovered with `course.checks.all_checks()` and compare with the recorded
reference results in `course/reference_data/`, so this works without the reference solutions.
With --hidden, every written exercise also runs on hidden-input kinds of cases drawn from a
public seed, as the grader does on its secret one (course/confirm/public.py). It always exits 0:
a table of work in progress is not an error.

A check whose exercise files (and those it calls), the course's checks and the run are what they
were at the last `make check` is not run again: its row comes from course/check_cache.py, which
says what its key holds (COURSE_CHECK_CACHE=0: run everything). `scripts/bench_check.py`
measures what that saves. Nothing here imports PyTorch or the checks until a check must run.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import re
import sys
import textwrap
from dataclasses import dataclass

from course.check_cache import Cache, Entry, catalog_of_checks
from course.columns import width as display_width
from course.commands import make_check
from course.i18n import _, listed

WIDTH = 80
# the four words of course/checks/lines.py (importing the checks would import PyTorch, which a
# table made of remembered rows never needs; tests/test_progress.py holds them equal)
PASS, FAIL, BLOCKED, TODO = "PASS", "FAIL", "BLOCKED", "TODO"


@dataclass
class Row:
    lesson: str
    check: str
    exercise: str  # "file.py: name", where the student writes it
    status: str    # PASS, FAIL, BLOCKED or TODO
    reason: str = ""   # one line: the problem (FAIL), what blocks it (BLOCKED)
    message: str = ""  # the whole message of a check that did not pass
    hidden: str | None = None  # with --hidden: "" when confirmed, else why not


def run_check(check, package: str = "exercises", session=None) -> Row:
    """Run one check on the student's code; never raises (a crash is a FAIL with its reason)."""
    return _run(check, package, session)[0]


def _run(check, package: str, session) -> tuple[Row, dict | None]:
    """(the row, what to remember of it: None for a result of the moment, not of the files)."""
    from course.checks import Blocked, CheckFailed, NotImplementedYet, lines
    from course.checks.depends import Session
    from course.checks.expected import RecordedReference

    session = session or Session(RecordedReference())
    row = Row(check.lesson, check.id, f"{check.module}.py: {check.attribute}", lines.PASS)
    printed = io.StringIO()  # the student's prints would break the table
    try:
        with contextlib.redirect_stdout(printed):
            failure = check.judge(check.resolve(package), session=session)
    except Exception as error:  # import error, syntax error, missing name, missing reference
        failure = error
        session.statuses.pop(check.id, None)
    if failure is not None:
        row.message = str(failure) if not isinstance(failure, Exception) or \
            isinstance(failure, AssertionError) else f"{type(failure).__name__}: {failure}"
        if isinstance(failure, NotImplementedYet):
            row.status = lines.TODO
        elif isinstance(failure, Blocked):
            row.status, row.reason = lines.BLOCKED, _blocked_reason(failure)
        else:
            row.status, row.reason = lines.FAIL, lines.summary(row.message)
    # a result the files decide (not a machine's trouble, e.g. out of memory)
    if failure is not None and not isinstance(failure, (CheckFailed, SyntaxError, ImportError)):
        return row, None
    status = session.statuses.get(check.id)  # none for a file that does not import: itself
    roots = list(status.roots) if status else ([] if row.status == lines.PASS else [check.id])
    return row, {"status": row.status, "reason": row.reason, "message": row.message,
                 "roots": roots,
                 "via": status.via.id if status is not None and status.via is not None else None}


def _blocked_reason(failure) -> str:
    alone = {"pass": _("right on its own"), "fail": _("also wrong on its own"),
             "untried": _("not tried on its own")}[failure.alone]
    return _("by {roots}; {alone}").format(roots=listed(failure.roots), alone=alone)


def progress(package: str = "exercises", only: list[str] | None = None,
             cache: Cache | None = None, remembered: bool = False) -> list[Row] | None:
    """One row per check (or per chosen check: see `choose`), in lesson order. With a `cache`
    (`make check`: the package `exercises`), a check whose key is unchanged is not run again.
    remembered: the rows only if every one is in the cache (None if a check must run); this
    imports neither the checks nor PyTorch."""
    cache = cache if package == "exercises" else None  # its keys are the files of exercises/
    catalog = cache.catalog() if cache is not None else None
    if catalog is None and remembered:
        return None
    if catalog is None:
        catalog = catalog_of_checks()
        if cache is not None:
            cache.keep_catalog(catalog)
    by_id = {entry.id: entry for entry in catalog}
    chosen = set(choose(only, catalog)[0]) if only else None
    keys = {entry.id: cache.key(entry, by_id) if cache is not None else None
            for entry in catalog}
    stored = {entry.id: cache.get(entry.id, keys[entry.id]) for entry in catalog} \
        if cache is not None else {}
    wanted = [entry for entry in catalog if chosen is None or entry.id in chosen]
    if remembered and any(stored.get(entry.id) is None for entry in wanted):
        return None
    # what the checks that run read of those that do not: their remembered statuses
    needed = {used for entry in wanted if stored.get(entry.id) is None for used in entry.uses}
    session, rows = None, []
    for entry in wanted:
        hit = stored.get(entry.id)
        if hit is not None:
            rows.append(Row(entry.lesson, entry.id, f"{entry.module}.py: {entry.attribute}",
                            hit["status"], hit["reason"], hit["message"]))
            continue
        if session is None:
            session = _session({i: stored.get(i) for i in needed}, by_id)
        row, result = _run(entry.check(), package, session)
        rows.append(row)
        if cache is not None and result is not None:
            cache.put(entry.id, keys[entry.id], result)
    return rows


def _session(stored: dict[str, dict | None], by_id: dict[str, Entry]):
    """The session of a run, holding the remembered status of every check not run again: what a
    check that calls its exercise reads (BLOCKED or not), as if it had run just before."""
    from course.checks.depends import Session, Status
    from course.checks.expected import RecordedReference

    session = Session(RecordedReference())
    for check_id, hit in stored.items():
        if hit is not None:
            via = by_id[hit["via"]].check() if hit.get("via") in by_id else None
            session.statuses[check_id] = Status(by_id[check_id].check(), hit["status"],
                                                tuple(hit["roots"]), via)
    return session


def choose(words: list[str], catalog: list[Entry] | None = None) -> tuple[list[str], list[str]]:
    """(the check ids that `words` name, the words that name none). A word is a check id or an
    alias ("01.stable_softmax"), a lesson ("01", "1", "01."), an exercise's name
    ("stable_softmax", "MultiHeadAttention", "softmax:stable_softmax"), a file of exercises/
    ("softmax", "mha.py") or what follows the dot of an id; case does not matter."""
    from course.checks.registry import canonical

    checks = catalog_of_checks() if catalog is None else catalog
    found: dict[str, None] = {}
    unknown = []
    for word in words:
        key = canonical(word.strip())
        lesson = key.rstrip(".")
        lesson = lesson.zfill(2) if lesson.isdigit() else None
        matches = [c.id for c in checks if key.lower() in _names(c) or c.lesson == lesson]
        if matches:
            found.update(dict.fromkeys(matches))
        else:
            unknown.append(word)
    return list(found), unknown


def _names(check: Entry) -> set[str]:
    """Every spelling that names `check` (lower case)."""
    return {n.lower() for n in (check.id, check.id.split(".", 1)[1], check.attribute,
                                check.target, check.module, f"{check.module}.py")}


def suggestions(word: str, n: int = 5, catalog: list[Entry] | None = None) -> list[str]:
    """Check ids whose spellings come close to `word`."""
    import difflib

    checks = catalog_of_checks() if catalog is None else catalog
    spellings = {name: check.id for check in checks for name in _names(check)}
    close = difflib.get_close_matches(word.lower(), list(spellings), n=n * 3, cutoff=0.5)
    inside = [name for name in spellings if len(word) >= 3 and word.lower() in name]
    return list(dict.fromkeys(spellings[name] for name in inside + close))[:n]


def unknown_words(words: list[str], catalog: list[Entry] | None = None) -> str:
    """What to say about words of ONLY= that name no check: the closest ids, and what it takes."""
    out = []
    for word in words:
        close = suggestions(word, catalog=catalog)
        out.append(_("no check matches '{word}'; did you mean {ids}?").format(
            word=word, ids=", ".join(close)) if close else
            _("no check matches '{word}'").format(word=word))
    out.append(_("ONLY= takes a check id (01.stable_softmax), a lesson (01) or an exercise "
                 "(stable_softmax), several separated by commas; `{command}` lists every "
                 "id.").format(command=make_check()))
    return "\n".join(wrap(line) for line in out)


def table(rows: list[Row], full: bool = False) -> str:
    """The one-line-per-exercise table, then the whole message of each failing exercise."""
    width = max(len(r.check) for r in rows) if rows else 10
    hidden = any(r.hidden is not None for r in rows)
    status, check = _("status"), _("check")
    width = max(width, display_width(check))
    out = [_pad(status, 8) + " " + _pad(check, width) + "  "
           + _("exercise (in exercises/), or what blocks it") + (_("  [hidden]") if hidden else ""),
           f"{'-' * 7:<8} {'-' * width}  {'-' * 43}"]
    for r in rows:
        note = r.reason if r.status == BLOCKED else r.exercise
        mark = "" if r.hidden is None else ("  [" + (_("hidden: confirmed") if not r.hidden
                                                      else _("hidden: differs")) + "]")
        out.append(f"{r.status:<8} {r.check:<{width}}  {note}{mark}".rstrip())
    also_wrong = _("also wrong on its own")  # in the reason of a BLOCKED row, in its language
    for r in rows:
        if r.message and (full or r.status == FAIL or
                          (r.status == BLOCKED and r.reason.endswith(also_wrong))):
            out += ["", wrap(r.message)]
        if r.hidden:
            from course.checks.problem_text import localised

            out += ["", wrap(_("hidden {id}: {why}").format(id=r.check,
                                                             why=localised(r.hidden)))]
    counts = {s: sum(r.status == s for r in rows)
              for s in (PASS, FAIL, BLOCKED, TODO)}
    out += ["", wrap(_("The whole message of one check: {only}. Your code on the kinds of hidden "
                       "cases the grader uses: {hidden}.").format(
                           only=make_check("ONLY=<check>"), hidden=make_check("HIDDEN=1"))),
            _("{passed} of {total} exercises pass, {failed} fail, {blocked} blocked, {todo} to "
              "do.").format(passed=counts[PASS], total=len(rows), failed=counts[FAIL],
                            blocked=counts[BLOCKED], todo=counts[TODO])]
    return "\n".join(out)


def _pad(text: str, columns: int) -> str:
    """`text` padded with spaces to `columns` display columns (a Chinese character takes two)."""
    return text + " " * max(columns - display_width(text), 0)


def wrap(message: str, width: int = WIDTH) -> str:
    """A check's message with every long line wrapped at `width`, continuations indented."""
    out = []
    for line in message.splitlines():
        indent = line[:len(line) - len(line.lstrip())]
        if _WIDE.search(line):
            first, *rest = _fill_wide(line.strip(), width - len(indent), width - len(indent) - 4)
            out += [indent + first] + [indent + "    " + piece for piece in rest]
            continue
        first, *rest = textwrap.wrap(line.strip(), width - len(indent), break_long_words=False,
                                     break_on_hyphens=False) or [""]
        out.append(indent + first)
        out += [indent + "    " + piece for piece in
                textwrap.wrap(" ".join(rest), width - len(indent) - 4, break_long_words=False,
                              break_on_hyphens=False)]
    return "\n".join(out)


# Chinese (and other East Asian) text: a character takes two columns, and a line may break
# between any two characters, but not before a closing mark nor after an opening one.
_WIDE = re.compile("[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f"
                   "\uff00-\uff60\uffe0-\uffe6]")
_OPEN, _CLOSE = "（【《「『“‘", "，。、；：！？）】》」』”’"
_PIECE = re.compile(rf"\s+|[{_OPEN}]*(?:{_WIDE.pattern}|[^\s{_WIDE.pattern[1:-1]}]+)[{_CLOSE}]*")


def _fill_wide(text: str, first: int, rest: int) -> list[str]:
    """`text` in lines of at most `first` columns, then `rest` (a longer piece gets its own)."""
    lines, current, limit = [], "", first
    for piece in _PIECE.findall(text):
        if piece.isspace():
            current += " " if current else ""
            continue
        if current.strip() and display_width(current + piece) > limit:
            lines.append(current.rstrip())
            current, limit = "", rest
        current += piece
    return lines + [current.rstrip()]


def add_hidden(rows: list[Row]) -> None:
    """Run the public hidden cases of every written exercise (make check HIDDEN=1)."""
    from course.confirm.public import rehearse

    written = [r.check for r in rows if r.status != TODO]
    if not written:
        return
    verdicts = rehearse(written)
    for row in rows:
        if row.check in verdicts:
            row.hidden = verdicts[row.check] or ""


def main(argv=None, served: bool = False) -> int:
    parser = argparse.ArgumentParser(description="a table of every exercise: PASS, FAIL, "
                                                 "BLOCKED or TODO")
    parser.add_argument("--only", nargs="*", default=None,
                        help="check ids, lessons (01) or exercises (stable_softmax): their whole "
                             "messages")
    parser.add_argument("--hidden", action="store_true",
                        help="also run the hidden-input kinds of cases (public seed)")
    parser.add_argument("--warm", action="store_true",
                        help="run in a warm process that keeps PyTorch imported (make check; "
                             "course/check_server.py), started in the background if none runs")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    importlib.invalidate_caches()
    only = [i for value in args.only or [] for i in value.replace(",", " ").split()] or None
    cache = Cache()
    rows, start_server = None, False
    if args.warm and not served:
        from course import check_client as check_server

        if check_server.available():
            rows = progress(only=only, cache=cache, remembered=True)
            if rows is None:  # a check must run: in the warm process, if one answers
                code = check_server.request(argv, cache.server_key())
                if code is not None:
                    return code
                start_server = True
    if rows is None:
        rows = progress(only=only, cache=cache)
    cache.save()
    catalog = cache.catalog()
    unknown = choose(only, catalog)[1] if only else []
    if only and not rows:
        print(unknown_words(unknown, catalog))
    else:
        if unknown:
            print(unknown_words(unknown, catalog) + "\n")
        if args.hidden:
            add_hidden(rows)
        print(table(rows, full=bool(only)))
    if start_server:  # after the table: its warm-up does not slow this run down
        sys.stdout.flush()
        check_server.start(cache.server_key())
    return 0


if __name__ == "__main__":
    sys.exit(main())
