"""Mutation testing of the checks: apply a realistic bug to a solution, run its check, expect FAIL.

A `Mutant` names the check, the solution file, one exact snippet of that file and what the bug
turns it into, and a fragment of the hint the check must give (or, with `exact`, whole lines the
message must hold: the hint line as the student reads it, the problem line, where it crashed).
The snippet must occur exactly once, so a mutant cannot silently stop applying after a refactor.

A `Cascade` puts bugs into a scratch copy of the solutions (as a student's exercises/) and runs a
check of another exercise that calls the buggy one: its message must start with BLOCKED and the
root cause, and say whether the exercise is right on its own.
"""
from __future__ import annotations

import linecache
import shutil
import types
from dataclasses import dataclass
from pathlib import Path

from course import ROOT

# fragments of the hints the check engine picks by what differs (course/checks/core.py)
SQUEEZED = "size-1 axes were dropped"
IN_PLACE = "the caller's tensors must stay as they were"
CUT = "no gradient reaches"
WRONG_GRADIENT = "the output is right but the gradient"


# classes of bug with mutants across exercises, each caught by a derived case or a hint of its
# own (course/checks/kinds.py, course/checks/hints.py): at least 3 mutants each
KINDS = ("dtype", "device", "no_grad", "gradients", "sizes", "large scores", ".T", "evidence",
         "bfloat16", "randomness", "none return", "missing gradient", "mask polarity",
         "nan evidence", "diagnosis")


@dataclass(frozen=True)
class Mutant:
    check: str       # check id, e.g. "01.stable_softmax"
    file: str        # file in solutions/, e.g. "softmax.py"
    find: str        # exact snippet of the solution
    replace: str     # the bug
    hint: str        # fragment the failure message must contain
    why: str         # the realistic mistake this stands for
    exact: tuple[str, ...] = ()  # whole lines (stripped) the failure message must contain
    kind: str = ""   # the class of bug (KINDS), for the classes every exercise is tested for

    @property
    def id(self) -> str:
        return f"{self.check}: {self.why}"


def mutated_module(mutant: Mutant) -> types.ModuleType:
    """Load solutions/<file> with the bug applied, as a module inside the `solutions` package."""
    source = (ROOT / "solutions" / mutant.file).read_text()
    count = source.count(mutant.find)
    if count != 1:
        raise AssertionError(f"{mutant.id}: snippet found {count} times in solutions/{mutant.file}")
    stem = mutant.file.removesuffix(".py")
    module = types.ModuleType(f"solutions._mutant_{stem}")
    module.__package__ = "solutions"  # relative imports still reach the other solutions
    # its own file name, with its lines known, so a crash shows the mutated line
    module.__file__ = str(ROOT / "solutions" / f"{stem}.mutant.py")
    mutated = source.replace(mutant.find, mutant.replace)
    linecache.cache[module.__file__] = (len(mutated), None, mutated.splitlines(True),
                                        module.__file__)
    code = compile(mutated, module.__file__, "exec")
    exec(code, module.__dict__)
    return module


def message_lines(message: str) -> list[str]:
    return [line.strip() for line in message.splitlines()]


@dataclass(frozen=True)
class Cascade:
    check: str                               # the check run (of an exercise that calls the bug)
    edits: tuple[tuple[str, str, str], ...]  # (file, snippet, bug) in the scratch solutions
    exact: tuple[str, ...]                   # whole lines its message must contain
    why: str
    status: str = "BLOCKED"                  # what the check must say: BLOCKED, FAIL or PASS
    isolate: bool = False                    # under COURSE_ISOLATE=1

    @property
    def id(self) -> str:
        return f"{self.check}: {self.why}" + (" (isolated)" if self.isolate else "")


def cascade_package(cascade: Cascade, root: Path, name: str) -> str:
    """Write the solutions with the cascade's bugs to root/name, a package; return its name."""
    package = Path(root) / name
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    for file, find, replace in cascade.edits:
        path = package / file
        text = path.read_text()
        if text.count(find) != 1:
            raise AssertionError(f"{cascade.id}: snippet found {text.count(find)} times in {file}")
        path.write_text(text.replace(find, replace))
    return name


def all_mutants() -> list[Mutant]:
    """Every mutant of the suite, from tests/mutants/lessonNN.py, in lesson order."""
    import importlib
    import pkgutil

    import tests.mutants as package

    found: list[Mutant] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("lesson"):
            found += importlib.import_module(f"{package.__name__}.{info.name}").MUTANTS
    return found


def visible_only_mutants() -> list[Mutant]:
    """Mutants the visible checks catch but hidden confirmation cannot: differences at float32's
    rounding (1e-7), below the hidden judge's tolerance. tests/mutants/lessonNN.py: VISIBLE_ONLY."""
    import importlib
    import pkgutil

    import tests.mutants as package

    found: list[Mutant] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("lesson"):
            found += getattr(importlib.import_module(f"{package.__name__}.{info.name}"),
                             "VISIBLE_ONLY", [])
    return found


def all_cascades() -> list[Cascade]:
    from tests.mutants.cascades import CASCADES

    return CASCADES
