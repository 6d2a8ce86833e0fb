"""The message catalog: extract every `_()`, `_n()` and `N_()` string, update the Chinese .po.

    python -m course.messages            # `make messages`: extract, update the .po, list what to translate
    python -m course.messages --check    # only list what is missing or stale (exit 1 if anything)

Babel extracts from course/ and the English lesson sources (notebooks/src/*.py: a figure title
written `_("...")` in a code cell; the Chinese sources hold the same code). Updating keeps every
translation whose English is unchanged, marks one whose English changed a little as fuzzy (its
old translation kept as a starting point, not shown to learners until the mark is removed), adds
new messages untranslated and drops messages the code no longer has. Line numbers are left out of
the .po so that moving code does not touch it.

The checks' lesson modules (course/checks/lessonNN.py) write their hints as plain strings (a
case's `hint=`, tag hints, error hints), which the engine translates with `_()` when it builds a
message: `course.checks.registry.learner_texts()` lists them, and they join the catalog with the
location `course/checks/lesson*.py` (read in a fresh process for a copy of the code whose checks
differ from these). Babel misses a `_("...")` inside an f-string; `in_f_strings` finds it.

What the exercise stubs say (their docstrings, comments and `# Hint:` lines, read from the
English stubs generated from solutions/) joins the catalog under the location `exercises/*.py`,
so that `make handout LANG=zh` can write Chinese stubs (course/stub_text.py); so do the `_()`
messages of the stubs' own code (an error a given helper raises).

The comments of the lessons' code cells (and of the Colab cell, notebooks/src/_header.py) join
the catalog under their English source's location: a Chinese source holds prose only and its
notebook takes the English code, its comments translated here (course/zh_source.py). A lesson
whose Chinese source is still in the old format (course/drift.py, OLD_FORMAT) keeps its comments
in that source instead.

Messages used only in PENDING sources stay out of the catalog (and out of the check) until they
are translated: `python -m course.messages` says how many are waiting. No source is pending now
(every one is translated); a new lesson finished on a branch before its translation can be
listed there for a while.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from course import ROOT
from course.i18n import CHINESE, catalog_path

KEYWORDS = {"_": None, "N_": None, "_n": (1, 2)}
HEADER = ("# Simplified Chinese messages of the attention course.\n"
          "# `make messages` updates this file from the code; translate each empty msgstr and each\n"
          "# entry marked fuzzy (then remove the mark). Terms: docs/zh/TERMINOLOGY.md.")
PLACEHOLDER = re.compile(r"\{[^{}]*\}")
# Sources whose messages wait for their translation (paths or prefixes, relative to the course),
# e.g. a new lesson's widgets and notebook; a message also used elsewhere is translated at once.
# Empty: every source is translated. To take one on: remove it here, then `make messages`.
PENDING: tuple[str, ...] = ()
LESSON_HINTS = "course/checks/lesson*.py"  # the location of the checks' plain-string hints
STUB_TEXTS = "exercises/*.py"  # the location of what the stubs say (course/stub_text.py)
CASE_NAME = "case name"  # the context of a case's name in the catalog (course/checks/lines.py)
LESSON_COMMENT = ("a comment of a lesson's code cell (course/zh_source.py); keep code names, "
                  "shapes and formulas")


def source_files(root: Path = ROOT) -> list[Path]:
    """The files messages are extracted from."""
    course = [p for p in sorted((root / "course").rglob("*.py")) if "locale" not in p.parts]
    lessons = sorted((root / "notebooks" / "src").glob("*.py"))  # English only, not zh/
    return course + lessons


def is_pending(where: str) -> bool:
    return where.startswith(PENDING)


def extract(root: Path = ROOT, pending: bool = False):
    """A Babel catalog (template) of every message in the code, with where each is used, PENDING
    sources left out; or (pending=True) the messages that only PENDING sources use."""
    from babel.messages.catalog import Catalog

    template = Catalog(project="attention-course", domain="course", fuzzy=False)
    files = source_files(root)
    for path in (p for p in files if not is_pending(p.relative_to(root).as_posix())):
        _add_messages(template, path, root)
    for text in lesson_hints(root):
        template.add(text, None, [(LESSON_HINTS, None)],
                     auto_comments=["a check's hint (course.checks.registry.learner_texts)"])
    for name in lesson_hints(root, "case_names"):
        template.add(name, None, [(LESSON_HINTS, None)], context=CASE_NAME,
                     auto_comments=["the name of a check's case (course.checks.lines.case_name)"])
    for where, text in lesson_comments(root):
        template.add(text, None, [(where, None)], auto_comments=[LESSON_COMMENT])
    # last: where a copy has no solutions/, update() appends the catalog's own stub texts here
    for text in stub_messages(root) or []:
        template.add(text, None, [(STUB_TEXTS, None)],
                     auto_comments=["an error the code of an exercise stub raises"])
    for text in stub_texts(root) or []:
        template.add(text, None, [(STUB_TEXTS, None)],
                     auto_comments=["what an exercise stub says: a docstring, comment or hint "
                                    "(course/stub_text.py); keep code names, shapes and formulas"])
    if not pending:
        return template
    waiting = Catalog(project="attention-course", domain="course", fuzzy=False)
    for path in (p for p in files if is_pending(p.relative_to(root).as_posix())):
        _add_messages(waiting, path, root)
    for message in list(waiting):
        if message.id and template.get(message.id, context=message.context) is not None:
            waiting.delete(message.id, context=message.context)  # translated already, for the others
    return waiting


def _add_messages(template, path: Path, root: Path) -> None:
    from babel.messages.extract import extract_from_file

    where = path.relative_to(root).as_posix()
    for _line, message, comments, context in extract_from_file(
            "python", str(path), keywords=KEYWORDS, comment_tags=("TRANSLATORS:",)):
        if isinstance(message, tuple) and None in message or not message:
            continue  # `_(variable)`: nothing literal to translate
        template.add(message, None, [(where, None)], auto_comments=comments, context=context)
    for message in in_f_strings(path.read_text(encoding="utf-8")):
        template.add(message, None, [(where, None)])


def in_f_strings(source: str) -> list[str]:
    """The literal messages of `_("...")` calls inside f-strings (`f"{_('hint')}: ..."`), which
    Babel's extractor does not see."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.JoinedStr):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and \
                    call.func.id in ("_", "N_") and call.args and \
                    isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                found.append(call.args[0].value)
    return found


def lesson_hints(root: Path = ROOT, what: str = "learner_texts") -> list[str]:
    """The hints the checks' lesson modules write as plain strings (with what="case_names": the
    names of their cases), of the code under `root` (read here when its course/checks/ is this
    one's, else in a fresh process)."""
    def files(base: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((base / "course" / "checks").glob("*.py"))}

    mine = files(root)
    if root.resolve() == ROOT.resolve() or mine == files(ROOT):
        from course.checks import registry

        return getattr(registry, what)()
    key = (str(root.resolve()), hash(tuple(mine.items())), what)
    if key not in _HINTS_OF:
        _HINTS_OF[key] = _lesson_hints_elsewhere(root, what)
    return _HINTS_OF[key]


_HINTS_OF: dict[tuple, list[str]] = {}  # a scratch copy's hints, while its checks are unchanged


def _lesson_hints_elsewhere(root: Path, what: str = "learner_texts") -> list[str]:
    """learner_texts() (or another function of the registry) of another copy of the code, in a
    fresh process (its own imports)."""
    import json
    import os
    import subprocess

    code = "import json; from course.checks import registry; " \
           f"print(json.dumps(getattr(registry, {what!r}, lambda: [])()))"
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(root), "COURSE_LANG": "en"},
                          timeout=300, check=True)
    return json.loads(done.stdout)


def lesson_comments(root: Path = ROOT) -> list[tuple[str, str]]:
    """(English source, comment) of every code cell of the Colab cell and of each lesson whose
    Chinese source holds prose only (course/zh_source.py)."""
    from course.zh_source import comment_texts, is_prose_only

    sources = [root / "notebooks" / "src" / "_header.py"]
    for english in sorted((root / "notebooks" / "src").glob("*.py")):
        chinese = root / "notebooks" / "src" / "zh" / english.name
        if chinese.exists() and is_prose_only(chinese):
            sources.append(english)
    return [(path.relative_to(root).as_posix(), text) for path in sources if path.exists()
            for text in comment_texts(path) if not is_pending(path.relative_to(root).as_posix())]


def stub_messages(root: Path = ROOT) -> list[str] | None:
    """The `_()` messages of the English stubs' code (a given helper's error), None where there
    are no solutions (a student's copy keeps its catalog as it is)."""
    if not (root / "solutions").is_dir():
        return None
    import io

    from babel.messages.extract import extract_python

    from course.stubs import generate

    found = []
    for stub in generate(root / "solutions").values():
        for _line, _function, message, _comments in extract_python(
                io.BytesIO(stub.encode()), list(KEYWORDS), [], {}):
            if isinstance(message, str) and message:
                found.append(message)
        found += in_f_strings(stub)
    return found


def stub_texts(root: Path = ROOT) -> list[str] | None:
    """The docstrings, comments and hints of the English stubs generated from `root`'s solutions
    (None where there are no solutions: a student's copy keeps its catalog as it is)."""
    if not (root / "solutions").is_dir():
        return None
    from course.stub_text import texts
    from course.stubs import generate

    return [text for stub in generate(root / "solutions").values() for text in texts(stub)]


def read_catalog(path: Path):
    from babel.messages.pofile import read_po

    with open(path, "rb") as handle:
        return read_po(handle)


def write_catalog(catalog, path: Path) -> bool:
    """Write the .po if its text changes; True if it did."""
    import io

    from babel.messages.pofile import write_po

    buffer = io.BytesIO()
    write_po(buffer, catalog, width=100, ignore_obsolete=True, include_lineno=False,
             sort_output=False)
    text = buffer.getvalue()
    if path.exists() and path.read_bytes() == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return True


def update(root: Path = ROOT, lang: str = CHINESE) -> bool:
    """Bring the .po of `lang` in step with the code; True if the file changed."""
    from babel.messages.catalog import Catalog

    template = extract(root)
    path = catalog_path(lang, root / "course" / "locale")
    if path.exists():
        catalog = read_catalog(path)
        template.creation_date = catalog.creation_date  # no churn from a timestamp
    else:
        catalog = Catalog(locale=lang, project="attention-course", domain="course",
                          creation_date=template.creation_date)
    if stub_texts(root) is None:  # no solutions/ here: keep what the stubs say as it is
        for entry in catalog:
            if entry.id and {file for file, _ in entry.locations} == {STUB_TEXTS}:
                template.add(entry.id, None, list(entry.locations), auto_comments=entry.auto_comments)
    catalog.update(template)
    catalog.obsolete.clear()
    catalog.fuzzy = False  # the header is no translation to review
    catalog.header_comment = HEADER
    catalog.last_translator = catalog.language_team = "attention-course translators"
    return write_catalog(catalog, path)


def _label(message) -> str:
    text = message.id[0] if isinstance(message.id, tuple) else message.id
    return repr(text if len(text) <= 70 else text[:67] + "...")


def _placeholders(text) -> list[str]:
    texts = text if isinstance(text, (tuple, list)) else (text,)
    return sorted({p for t in texts if t for p in PLACEHOLDER.findall(t)})


def problems(root: Path = ROOT, lang: str = CHINESE) -> list[str]:
    """Every message of the code without a current translation, and every stale entry."""
    template = extract(root)
    path = catalog_path(lang, root / "course" / "locale")
    if not path.exists():
        return [f"{path.relative_to(root)} is missing: run `make messages`"]
    catalog = read_catalog(path)
    found = []
    for message in template:
        if not message.id:
            continue
        where = ", ".join(sorted({file for file, _ in message.locations}))
        entry = catalog.get(message.id, context=message.context)
        if entry is None:
            found.append(f"message not in the catalog yet ({where}): {_label(message)}: run `make messages`")
        elif entry.fuzzy:
            found.append(f"stale translation, its English changed ({where}): {_label(message)}")
        elif not (all(entry.string) if isinstance(entry.string, tuple) else entry.string):
            found.append(f"untranslated ({where}): {_label(message)}")
        elif _placeholders(entry.string) != _placeholders(message.id):
            found.append(f"placeholders differ ({where}): {_label(message)}")
    no_solutions = not (root / "solutions").is_dir()
    for entry in catalog:
        if no_solutions and {file for file, _ in entry.locations} == {STUB_TEXTS}:
            continue  # what the stubs say is read from solutions/, which this copy lacks
        if entry.id and template.get(entry.id, context=entry.context) is None:
            found.append(f"stale entry, no longer in the code: {_label(entry)}: run `make messages`")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="extract the course's messages, update the catalog")
    parser.add_argument("--check", action="store_true", help="only report, change nothing")
    args = parser.parse_args(argv)
    if not args.check:
        changed = update()
        path = catalog_path(CHINESE).relative_to(ROOT)
        print(f"{'updated' if changed else 'unchanged'}: {path}")
    found = problems()
    for line in found:
        print(line)
    print(f"{len(found)} message(s) to translate or review" if found else "every message is translated")
    waiting = sum(1 for message in extract(pending=True) if message.id)
    if waiting:
        print(f"(and {waiting} message(s) of sources still PENDING in course/messages.py, left out)")
    return 1 if args.check and found else 0


if __name__ == "__main__":
    sys.exit(main())
