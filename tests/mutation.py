"""Mutation testing of the checks: apply a realistic bug to a solution, run its check, expect FAIL.

A `Mutant` names the check, the solution file, one exact snippet of that file and what the bug
turns it into, and a fragment of the hint the check must give. The snippet must occur exactly
once, so a mutant cannot silently stop applying after a refactor.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from course import ROOT

# fragments of the hints the check engine picks by what differs (course/checks/core.py)
SQUEEZED = "size-1 axes were dropped"
IN_PLACE = "the caller's tensors must stay as they were"
CUT = "no gradient reaches"
WRONG_GRADIENT = "the output is right but the gradient"


@dataclass(frozen=True)
class Mutant:
    check: str       # check id, e.g. "01.stable_softmax"
    file: str        # file in solutions/, e.g. "softmax.py"
    find: str        # exact snippet of the solution
    replace: str     # the bug
    hint: str        # fragment the failure message must contain
    why: str         # the realistic mistake this stands for

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
    module.__file__ = str(ROOT / "solutions" / mutant.file)
    code = compile(source.replace(mutant.find, mutant.replace), module.__file__, "exec")
    exec(code, module.__dict__)
    return module


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
