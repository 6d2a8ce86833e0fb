"""Generate the student stubs in `exercises/` from the reference code in `solutions/`.

In a solution, the code a student writes sits between two marker comments:

        # BEGIN SOLUTION lesson 02
        ...reference code...
        # END SOLUTION

The stub keeps everything else (imports, signatures, docstrings, helper code) and replaces each
block with a `raise NotImplementedError(...)` naming the function and the lesson. Comment lines in
a block that start with `# Hint:` are kept above the raise, so hints are written once.

    python -m course.stubs            # rewrite exercises/ from solutions/
    python -m course.stubs --check    # exit 1 if exercises/ differs from what would be generated

`generate(lang="zh_CN")` writes the same stubs with what they say in Chinese (the handout's
`LANG=zh`): docstrings, comments and hints through the catalog (course/stub_text.py), and the
stub's message in its translated form, which the checks recognise in either language
(course/stub_message.py).
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

from course import ROOT
from course.i18n import ENGLISH, normalise
from course.stub_message import stub_message

BEGIN = re.compile(r"^(?P<indent>\s*)# BEGIN SOLUTION lesson (?P<lesson>\d\d)\s*$")
END = re.compile(r"^\s*# END SOLUTION\s*$")
HINT = re.compile(r"^\s*# Hint:")
HEADER = ("# Your code for the course's exercises: replace each `raise NotImplementedError` below "
          "with your code.\n")
# exercises/__init__.py: the student's package says what it is, not what solutions/ is
EXERCISES_INIT = '''"""Your code: one file per topic, each exercise a function or class whose body raises
NotImplementedError until you write it. The lessons import these files (with autoreload), their
check cells test them, and `make check` shows where you stand on every exercise.
"""
'''


def enclosing_function(tree: ast.AST, line: int) -> str:
    """Qualified name (Class.method) of the innermost def that contains `line` (1-based)."""
    best: list[str] = []

    def visit(node: ast.AST, trail: list[str]) -> None:
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if child.lineno <= line <= (child.end_lineno or child.lineno):
                    path = trail + [child.name]
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        best = path
                    visit(child, path)

    visit(tree, [])
    if not best:
        raise ValueError(f"line {line}: a solution block must sit inside a function")
    return ".".join(best)


def make_stub(source: str, filename: str, lang: str = ENGLISH) -> str:
    """The stub of one solution module; in `lang`, what it says is translated (its code is not)."""
    stub = _english_stub(source, filename)
    if normalise(lang) == ENGLISH:
        return stub
    from course.stub_text import localize

    return localize(stub, normalise(lang))


def _english_stub(source: str, filename: str) -> str:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    out: list[str] = [HEADER.format(name=filename)]
    i = 0
    while i < len(lines):
        match = BEGIN.match(lines[i])
        if not match:
            if END.match(lines[i]):
                raise ValueError(f"{filename}:{i + 1}: END SOLUTION without BEGIN")
            out.append(lines[i])
            i += 1
            continue
        indent, lesson = match["indent"], match["lesson"]
        function = enclosing_function(tree, i + 1)
        j = i + 1
        while j < len(lines) and not END.match(lines[j]):
            if BEGIN.match(lines[j]):
                raise ValueError(f"{filename}:{j + 1}: nested BEGIN SOLUTION")
            if HINT.match(lines[j]):
                out.append(indent + lines[j].strip() + "\n")
            j += 1
        if j == len(lines):
            raise ValueError(f"{filename}:{i + 1}: BEGIN SOLUTION without END")
        message = stub_message(lesson, function, filename)
        out.append(f'{indent}raise NotImplementedError("{message}")\n')
        i = j + 1
    stub = "".join(out)
    ast.parse(stub)  # a stub must at least be valid Python
    return stub


def solution_files(solutions: Path = ROOT / "solutions") -> list[Path]:
    return sorted(p for p in solutions.glob("*.py"))


def generate(solutions: Path = ROOT / "solutions", lang: str = ENGLISH) -> dict[str, str]:
    """File name -> stub text for every module in solutions/ (__init__ gets its own docstring)."""
    stubs = {}
    for path in solution_files(solutions):
        if path.name == "__init__.py":
            text = EXERCISES_INIT
            if normalise(lang) != ENGLISH:
                from course.stub_text import localize

                text = localize(text, normalise(lang))
            stubs[path.name] = text
        else:
            stubs[path.name] = make_stub(path.read_text(), path.name, lang)
    return stubs


def write(exercises: Path = ROOT / "exercises", solutions: Path = ROOT / "solutions",
          lang: str = ENGLISH) -> list[str]:
    exercises.mkdir(exist_ok=True)
    stubs = generate(solutions, lang)
    for name, text in stubs.items():
        (exercises / name).write_text(text)
    return sorted(stubs)


def differences(exercises: Path = ROOT / "exercises") -> list[str]:
    stubs = generate()
    present = {p.name for p in exercises.glob("*.py")}
    problems = [f"exercises/{n} is missing" for n in sorted(set(stubs) - present)]
    problems += [f"exercises/{n} has no solution" for n in sorted(present - set(stubs))]
    problems += [f"exercises/{n} differs from the generated stub"
                 for n in sorted(set(stubs) & present) if (exercises / n).read_text() != stubs[n]]
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="generate exercises/ from solutions/")
    parser.add_argument("--check", action="store_true", help="only report differences")
    args = parser.parse_args(argv)
    if args.check:
        problems = differences()
        print("\n".join(problems) or "exercises/ matches the generated stubs")
        return 1 if problems else 0
    for name in write():
        print(f"wrote exercises/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
