"""The student release ships no script that needs what it leaves out.

course/handout.py's EXCLUDE is the one list of what the release leaves out (solutions/, tests/,
the grader in course/grading/, ...). Every script the release ships (scripts/*.py, *.sh), and
every course module those import, is read here as text: none may import, run or read a path
that the release does not have.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from course import ROOT
from course.handout import EXCLUDE, build

LEFT_OUT = ("solutions", "tests", "course.grading")
NAMED = ("course.grading", "course/grading", "solutions/", "solutions.", "tests/", "tests.")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return build(tmp_path_factory.mktemp("release") / "attention-course")


def _needs(name: str) -> bool:
    return any(name == left or name.startswith(left + ".") for left in LEFT_OUT)


def imports_of(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def module_file(release: Path, name: str) -> Path | None:
    """The release's file for a module of the course (None for torch, numpy, ...)."""
    parts = name.split(".")
    if parts[0] not in ("course", "exercises", "solutions", "tests"):
        return None
    for candidate in (release.joinpath(*parts).with_suffix(".py"),
                      release.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


def what_it_needs(release: Path, script: Path) -> list[str]:
    """What `script` needs, directly or through the course's modules, that the release lacks."""
    missing, seen, todo = [], set(), [script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in sorted(imports_of(path)):
            if _needs(name):
                missing.append(f"{path.relative_to(release)} imports {name}")
            found = module_file(release, name)
            if found is not None:
                todo.append(found)
    return missing


def strings_of(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_the_benchmark_of_the_grader_stays_out(release):
    assert "scripts/bench_grade.py" in EXCLUDE and (ROOT / "scripts" / "bench_grade.py").is_file()
    assert not (release / "scripts" / "bench_grade.py").exists()
    assert not (release / "Dockerfile").exists() and not (release / "course" / "grading").exists()


def python_script_problems(release: Path, script: Path) -> list[str]:
    found = what_it_needs(release, script)
    for text in strings_of(script):  # `python -m course.grading`, ROOT / "solutions"
        if text == "solutions" or text.startswith(NAMED):
            found.append(f"{script.relative_to(release)} names {text!r}")
    return found


def test_no_shipped_script_needs_what_the_release_leaves_out(release):
    scripts = sorted((release / "scripts").glob("*.py"))
    assert scripts, "the release ships no scripts/"
    found = []
    for script in scripts:
        found += python_script_problems(release, script)
    for script in sorted((release / "scripts").glob("*.sh")):
        code = [line for line in script.read_text(encoding="utf-8").splitlines()
                if not line.lstrip().startswith("#")]
        found += [f"{script.relative_to(release)} runs {line.strip()!r}" for line in code
                  if any(name in line for name in NAMED)]
    assert found == [], "\n".join(found)


def test_the_checker_sees_a_script_that_needs_the_grader(release, tmp_path):
    """The test above can fail: a script importing the grader, or reaching it through a module."""
    import shutil

    shutil.copy(ROOT / "scripts" / "bench_grade.py", release / "scripts" / "bench_grade.py")
    assert "scripts/bench_grade.py names 'course.grading'" in \
        python_script_problems(release, release / "scripts" / "bench_grade.py")
    (release / "scripts" / "uses_grader.py").write_text("from course.grading import cli\n")
    (release / "course" / "helper_x.py").write_text("import solutions.softmax\n")
    (release / "scripts" / "indirect.py").write_text("import course.helper_x\n")
    try:
        assert what_it_needs(release, release / "scripts" / "uses_grader.py") == \
            ["scripts/uses_grader.py imports course.grading",
             "scripts/uses_grader.py imports course.grading.cli"]
        assert what_it_needs(release, release / "scripts" / "indirect.py") == \
            ["course/helper_x.py imports solutions.softmax"]
    finally:
        for path in ("scripts/uses_grader.py", "course/helper_x.py", "scripts/indirect.py",
                     "scripts/bench_grade.py"):
            (release / path).unlink()


def test_the_release_makefile_has_no_grader_target(release):
    text = (release / "Makefile").read_text()
    assert "course.grading" not in text and "grade-merge" not in text
