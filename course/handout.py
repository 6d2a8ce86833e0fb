"""The student release: the course without `solutions/`.

    python -m course.handout --out DIR        # or: make handout OUT=DIR
    python -m course.handout --out DIR --lang zh   # or: make handout OUT=DIR LANG=zh

`--lang zh` gives a Chinese handout: the same code, with exercises/ whose docstrings, comments,
hints and stub messages are Chinese (course/stub_text.py) and the Chinese release README as
README.md (the English one beside it as README.en.md).

The handout holds the notebooks (with their committed outputs), the machinery in `course/`
(checks, widgets, plots), the recorded reference results in `course/reference_data/` (so every
check works without the solutions), the shipped `data/`, and `exercises/` freshly generated from
`solutions/` (stubs that raise NotImplementedError). Left out: `solutions/`, `tests/` (the
mutation and notebook tests need the solutions), `docs/` (the instructors' and contributors'
guides), CI, and the usual build output. The release gets its own README, in English and
Chinese (`course/release/README.md`, `README.zh-CN.md`), its own tests
(`course/release/tests/`, which its `make test` runs) and the course's Makefile without the
developers' targets (they need `solutions/`). The grader builds its pristine working copy with
the same function, so a grading kernel never has the reference code on its path.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

from course import ROOT
from course.workspace import SKIP

# the one list of what the release leaves out (paths relative to the course root): what stays
# with the instructor, the grader (course/grading/, with its points file and hidden-case specs)
# and what only the grader uses (its benchmark, its container image)
EXCLUDE = {"solutions", "tests", "docs", ".ci", "course/grading", "course/release/README.md",
           "course/release/README.zh-CN.md", "scripts/bench_grade.py",
           "scripts/measure_first_messages.py", "scripts/suite_time.py", "scripts/bench_notebooks.py",
           "Dockerfile", ".dockerignore"}
RELEASE = ROOT / "course" / "release"  # the release's README.md and its tests (tests/)
RELEASE_TESTS = "course/release/tests"  # what the release's `make test` (pytest) runs
# Makefile targets that need solutions/ or serve the course's developers: not in the release
DEVELOPER_TARGETS = {"notebooks", "stubs", "reference", "grade", "grade-merge", "collect",
                     "handback", "handout", "screenshots", "lock", "messages"}
MARKER = ".handout"  # lets a later run replace a folder it made itself


def _ignore(source: Path, dest: Path):
    source, dest = source.resolve(), dest.resolve()

    def ignore(folder: str, names: list[str]) -> list[str]:
        here = Path(folder).resolve()
        skipped = []
        for name in names:
            path = here / name
            relative = path.relative_to(source).as_posix()
            if name in SKIP or relative in EXCLUDE or name.endswith(".pyc") or path == dest:
                skipped.append(name)
        return skipped

    return ignore


def build(dest: Path, source: Path = ROOT, lang: str = "en") -> Path:
    """Write the handout to `dest` (replaced if it is an earlier handout or empty); return it.
    `lang` "zh": exercises/ and README.md in Chinese."""
    dest, source = Path(dest), Path(source)
    if dest.exists():
        if not dest.is_dir() or (any(dest.iterdir()) and not (dest / MARKER).exists()):
            raise FileExistsError(f"{dest} exists and is not an earlier handout; choose another --out")
        shutil.rmtree(dest)
    shutil.copytree(source, dest, ignore=_ignore(source, dest), symlinks=False)
    solutions = source / "solutions"
    if solutions.is_dir():  # fresh stubs, whatever the instructor's exercises/ holds now
        from course.stubs import write

        for old in (dest / "exercises").glob("*.py"):
            old.unlink()
        write(exercises=dest / "exercises", solutions=solutions, lang=lang)
    for readme in ("README.md", "README.zh-CN.md"):  # English and Chinese
        shutil.copy2(RELEASE / readme, dest / readme)
    if lang.startswith("zh"):
        chinese_readme(dest)
    config = dest / "pytest.ini"
    if config.exists():  # the release has no tests/: its pytest runs the release's own tests
        config.write_text(re.sub(r"(?m)^testpaths\s*=.*$", f"testpaths = {RELEASE_TESTS}",
                                 config.read_text()))
    makefile = source / "Makefile"
    if makefile.exists():
        (dest / "Makefile").write_text(student_makefile(makefile.read_text()))
    (dest / MARKER).write_text("made by `python -m course.handout`; safe to delete\n")
    return dest


def chinese_readme(dest: Path) -> None:
    """The Chinese release README as the README.md a student opens first; the English one as
    README.en.md, each linking to the other."""
    english = (dest / "README.md").read_text().replace("(README.zh-CN.md)", "(README.md)")
    (dest / "README.en.md").write_text(english)
    chinese = (dest / "README.zh-CN.md").read_text().replace("[English](README.md)", "[English](README.en.md)")
    (dest / "README.md").write_text(chinese)
    (dest / "README.zh-CN.md").unlink()


def student_makefile(text: str, drop=DEVELOPER_TARGETS) -> str:
    """The Makefile without the rules of `drop` (and the comment lines just above each)."""
    rule = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)")
    kept: list[str] = []
    pending: list[str] = []  # comment lines waiting for the line they describe
    skipping = False
    for line in text.splitlines(keepends=True):
        if skipping and (line.startswith("\t") or (line.strip() and not rule.match(line)
                                                     and line.startswith(" "))):
            continue  # a recipe line of a dropped rule
        skipping = False
        if line.startswith("#"):
            pending.append(line)
            continue
        match = rule.match(line)
        if match and match[1] in drop:
            skipping, pending = True, []
            continue
        if line.startswith(".PHONY:"):
            names = [n for n in line.split(":", 1)[1].split() if n not in drop]
            line = ".PHONY: " + " ".join(names) + "\n"
        if not line.strip() and kept and not kept[-1].strip() and not pending:
            continue  # one blank line where a rule was
        kept += pending + [line]
        pending = []
    kept += pending
    return "".join(kept)


def problems(handout: Path) -> list[str]:
    """What is wrong with a handout: leaked solutions, missing stubs or reference results."""
    handout = Path(handout)
    found = []
    if (handout / "solutions").exists():
        found.append("solutions/ is present")
    for path in (handout / "exercises").glob("*.py"):
        if "# BEGIN SOLUTION" in path.read_text():
            found.append(f"exercises/{path.name} holds a solution block")
    if not list((handout / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        found.append("no lesson notebooks")
    reference = handout / "course" / "reference_data"
    from course.checks import all_checks

    for check_id in all_checks():
        if not (reference / f"{check_id}.pt").exists():
            found.append(f"no recorded reference for {check_id}: run `make reference`")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write the student release (no solutions/)")
    parser.add_argument("--out", required=True, type=Path, help="folder to write the handout to")
    parser.add_argument("--lang", default="en", help="zh: Chinese exercises/ and README (default: en)")
    args = parser.parse_args(argv)
    if not str(args.out).strip():
        parser.error("give a folder: make handout OUT=<dir>")
    try:
        dest = build(args.out, lang=args.lang)
    except FileExistsError as err:
        parser.error(str(err))
    issues = problems(dest)
    files = sum(1 for p in dest.rglob("*") if p.is_file())
    print(f"handout written to {dest} ({files} files, no solutions/)")
    for issue in issues:
        print(f"problem: {issue}")
    return 1 if issues else 0


if __name__ == "__main__":
    sys.exit(main())
