"""The student release: the course without `solutions/`.

    python -m course.handout --out DIR        # or: make handout OUT=DIR
    python -m course.handout --out DIR --lang zh   # or: make handout OUT=DIR LANG=zh
    python -m course.handout --grader-context DIR    # what `docker build DIR` makes the image of

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

Every copy is made from an ALLOW-LIST, never from whatever lies in the folder: the files git
tracks where the course is a git checkout, else the MANIFEST shipped with the copy (every copy
made here writes one: the handout, the grader's pristine copy, the image's build context). A
class collected into the course folder (submissions, roster, seed, logs, OUT) is untracked, so
it reaches no handout, no sandbox and no image. A folder with neither is refused.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from course import ROOT
from course.workspace import SKIP

# the one list of what the release leaves out (paths relative to the course root): what stays
# with the instructor, the grader (course/grading/, with its points file and hidden-case specs)
# and what only the grader uses (its benchmark, its container image)
EXCLUDE = {"solutions", "tests", "docs", ".ci", "course/grading", "course/claims",  # reads docs/
           "course/release/README.md", "course/release/README.zh-CN.md", "scripts/bench_grade.py",
           "scripts/bench_class_page.py",
           "scripts/measure_first_messages.py", "scripts/bug_sets",  # its bugs: the answers
           "scripts/suite_time.py", "scripts/bench_notebooks.py",
           "scripts/bench_check.py",
           "scripts/bench_lesson09.py", "scripts/record_gpu_run09.py",  # they time the solutions'
           "scripts/record_flex09.py",
           "Dockerfile", ".dockerignore"}
RELEASE = ROOT / "course" / "release"  # the release's README.md and its tests (tests/)
RELEASE_TESTS = "course/release/tests"  # what the release's `make test` (pytest) runs
# Makefile targets that need solutions/ or serve the course's developers: not in the release
DEVELOPER_TARGETS = {"notebooks", "stubs", "reference", "grade", "grade-merge", "collect",
                     "handback", "handout", "screenshots", "lock", "messages"}
MARKER = ".handout"  # lets a later run replace a folder it made itself
MANIFEST = "MANIFEST"  # the copy's own files, one relative path a line: its allow-list
# the course's own layout: what may lie at the top of the course (a new top-level file or folder
# of the course belongs here); a tracked file anywhere else is refused, as is a shipped file
# named as a class's own (a class folder committed into the course would otherwise ship its
# seed, roster and submissions in every handout, sandbox and image)
LAYOUT = {".ci", ".dockerignore", ".gitignore", ".github", "Dockerfile", "Makefile", "README.md",
          "README.zh-CN.md", "README.en.md", "LICENSE", "course", "data", "docs",
          "environment.yml", "exercises", "notebooks", "pytest.ini", "requirements-excludes.txt",
          "requirements.in", "requirements.txt", "ruff.toml", "scripts", "solutions", "tests",
          MARKER}
CLASS_NAMES = {"seed", ".seed", "roster.csv", "gradebook.csv", "class.json", ".lms.json",
               "results.json"}


class ReleaseError(SystemExit):
    """The course's files cannot be listed (no git checkout, no MANIFEST), or a list is bad."""


def _git_files(source: Path) -> list[str] | None:
    """The files git tracks in `source`, when `source` is the top of a git checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git = ["git", "-c", f"safe.directory={source}", "-C", str(source)]
    try:
        top = subprocess.run([*git, "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, env=env, timeout=60)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != source:
            return None
        listed = subprocess.run([*git, "ls-files", "-z", "--cached"], capture_output=True,
                                env=env, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return [os.fsdecode(name) for name in listed.stdout.split(b"\0") if name]


def _manifest_files(source: Path) -> list[str] | None:
    path = source / MANIFEST
    if not path.is_file():
        return None
    names = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for name in names:
        parts = Path(name).parts
        if Path(name).is_absolute() or ".." in parts or not parts:
            raise ReleaseError(f"{path}: {name!r} is no path inside the course")
    return names


def release_files(source: Path = ROOT) -> list[str]:
    """The course's own files (relative POSIX paths, sorted): git's tracked files in a checkout,
    else the copy's MANIFEST; plain files only (no link is followed out of the course)."""
    source = Path(source).resolve()
    listed = _git_files(source)
    if listed is None:
        listed = _manifest_files(source)
    if listed is None:
        raise ReleaseError(f"{source} is neither a git checkout of the course nor a copy with a "
                           f"{MANIFEST}: its files cannot be told from whatever else lies there. "
                           "Use a git checkout, or a copy made by `python -m course.handout`")
    found = []
    for name in sorted(set(listed) - {MANIFEST}):
        try:
            if stat.S_ISREG(os.lstat(source / name).st_mode):
                found.append(name)
        except OSError:
            continue  # tracked, but deleted in the working tree
    check_layout(found, source)
    return found


def check_layout(names: list[str], source: Path = ROOT) -> None:
    """Refuse a list of the course's files that holds files outside the course's own layout
    (LAYOUT), or shipped files named as a class's own (CLASS_NAMES): a class folder committed
    into the course."""
    outside = [n for n in names if n.split("/")[0] not in LAYOUT]
    outside += [n for n in names if n.split("/")[-1] in CLASS_NAMES and not left_out(n)
                and n not in outside]
    if outside:
        tops = sorted({n.split("/")[0] if n.split("/")[0] not in LAYOUT else n for n in outside})
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        raise ReleaseError(
            f"{source} lists files outside the course's own layout: {shown}. A class folder (its "
            f"seed, roster, submissions, grades) committed into the course would reach every "
            f"handout, sandbox and image: untrack it (git rm -r --cached {' '.join(tops)}) and "
            "keep the class beside the course (docs/instructors.md); a new file of the course "
            "itself belongs in LAYOUT (course/handout.py)")


def left_out(relative: str, exclude=EXCLUDE) -> bool:
    """Whether the release leaves out the course's file `relative`."""
    parts = relative.split("/")
    return (any(relative == e or relative.startswith(e + "/") for e in exclude)
            or any(part in SKIP for part in parts) or relative.endswith(".pyc"))


def copy_files(source: Path, dest: Path, names: list[str]) -> None:
    """Copy the listed files from `source` to `dest` (made), with their modes."""
    for name in names:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, target)


def write_manifest(dest: Path) -> Path:
    """`dest`'s files, as its MANIFEST: the allow-list a copy of this copy is made from."""
    names = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")
                   if p.is_file() and not p.is_symlink() and p.name != MANIFEST
                   and "__pycache__" not in p.parts)
    (dest / MANIFEST).write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
    return dest / MANIFEST


def _fresh(dest: Path) -> None:
    if dest.exists():
        if not dest.is_dir() or (any(dest.iterdir()) and not (dest / MARKER).exists()):
            raise FileExistsError(f"{dest} exists and is not an earlier handout; choose another --out")
        shutil.rmtree(dest)
    dest.mkdir(parents=True)


def build(dest: Path, source: Path = ROOT, lang: str = "en") -> Path:
    """Write the handout to `dest` (replaced if it is an earlier handout or empty); return it.
    `lang` "zh": exercises/ and README.md in Chinese."""
    dest, source = Path(dest), Path(source)
    names = [n for n in release_files(source) if not left_out(n)]
    _fresh(dest)
    copy_files(source, dest, names)
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
    write_manifest(dest)
    return dest


def chinese_readme(dest: Path) -> None:
    """The Chinese release README as the README.md a student opens first; the English one as
    README.en.md, each linking to the other."""
    english = (dest / "README.md").read_text().replace("(README.zh-CN.md)", "(README.md)")
    (dest / "README.en.md").write_text(english)
    chinese = (dest / "README.zh-CN.md").read_text().replace("[English](README.md)", "[English](README.en.md)")
    (dest / "README.md").write_text(chinese)
    (dest / "README.zh-CN.md").unlink()


def grader_context(dest: Path, source: Path = ROOT) -> Path:
    """The grader image's build context: every file of the course (solutions/ and the grader
    included), nothing else, and its MANIFEST (the Dockerfile refuses a context without one)."""
    dest, source = Path(dest), Path(source)
    names = release_files(source)
    _fresh(dest)
    copy_files(source, dest, names)
    (dest / MARKER).write_text("made by `python -m course.handout --grader-context`; safe to "
                               "delete\n")
    write_manifest(dest)
    return dest


def unlisted(folder: Path, skip=(".venv", MARKER, MANIFEST)) -> list[str]:
    """Files in `folder` its MANIFEST does not list (bytecode and `skip` apart): what an image
    built from anything but a context made by `grader_context` would hold besides the course."""
    listed = set(_manifest_files(Path(folder)) or [])
    return sorted(r for p in Path(folder).rglob("*") if p.is_file() or p.is_symlink()
                  if (r := p.relative_to(folder).as_posix()) not in listed
                  and r.split("/")[0] not in skip and "__pycache__" not in p.parts)


CONDITIONALS = ("ifeq", "ifneq", "ifdef", "ifndef")


def student_makefile(text: str, drop=DEVELOPER_TARGETS) -> str:
    """The Makefile without the rules of `drop` (and the comment lines just above each)."""
    rule = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)")
    kept: list[str] = []
    pending: list[str] = []  # comment lines waiting for the line they describe
    skipping = False
    depth = 0  # make conditionals (ifeq ... endif) opened inside a dropped rule's recipe
    for line in text.splitlines(keepends=True):
        word = line.split(maxsplit=1)[0] if line.strip() else ""
        if skipping and word in CONDITIONALS:
            depth += 1
            continue
        if skipping and depth and word in ("else", "endif"):
            depth -= word == "endif"
            continue
        if skipping and (depth or line.startswith("\t") or (line.strip() and not rule.match(line)
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


def _context_main(dest: Path | None, check: Path | None) -> int:
    if check is not None:  # the Dockerfile's guard: the image holds the listed files only
        extra = unlisted(check)
        for name in extra[:20]:
            print(f"not in {MANIFEST}: {name}", file=sys.stderr)
        if extra or not (check / MANIFEST).is_file():
            print(f"{check}: build the image from `python -m course.handout --grader-context DIR`"
                  f" (docker build DIR), never from the course folder itself", file=sys.stderr)
            return 1
        return 0
    made = grader_context(dest)
    count = len((made / MANIFEST).read_text(encoding="utf-8").splitlines())
    print(f"grader image context written to {made} ({count} files of the course, "
          f"solutions/ included: keep the image private); build it with: docker build {made}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="write the student release (no solutions/)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--out", type=Path, help="folder to write the handout to")
    which.add_argument("--grader-context", type=Path, metavar="DIR",
                       help="write the grader image's build context (the course's own files, "
                            "solutions/ included) to DIR instead")
    which.add_argument("--check-context", type=Path, metavar="DIR", help=argparse.SUPPRESS)
    parser.add_argument("--lang", default="en", help="zh: Chinese exercises/ and README (default: en)")
    args = parser.parse_args(argv)
    target = args.out or args.grader_context or args.check_context
    if not str(target).strip():
        parser.error("give a folder: make handout OUT=<dir>")
    try:
        if args.out is None:
            return _context_main(args.grader_context, args.check_context)
        dest = build(args.out, lang=args.lang)
    except FileExistsError as err:
        parser.error(str(err))
    except ReleaseError as err:
        print(f"make handout: {err.code}", file=sys.stderr)
        return 2
    issues = problems(dest)
    files = sum(1 for p in dest.rglob("*") if p.is_file())
    print(f"handout written to {dest} ({files} files, no solutions/)")
    for issue in issues:
        print(f"problem: {issue}")
    return 1 if issues else 0


if __name__ == "__main__":
    sys.exit(main())
