"""The check engine's vocabulary: a `Check` is a list of `Case`s on one exercise.

Each case builds its inputs deterministically (float64, fixed seeds), calls the implementation
under test and returns a tensor, a tuple of tensors or a dict of tensors. The expected result comes
from a `Reference`: recorded results shipped with the course (so checks work where `solutions/`
is absent: the student handout, the grading kernel), or the live solutions. A case can instead
carry its own `expect` function: a probe of behaviour that needs no reference (rows sum to one, no
NaN for huge inputs, ...).

Calling a check runs every case (course/checks/running.py), picks the hint from all of them
(hints.py), and when the exercise fails because an exercise it uses fails, says that first
(depends.py). It prints one PASS line, or raises CheckFailed (FAIL), Blocked (BLOCKED) or
NotImplementedYet, with a traceback trimmed to the notebook cell: the student's own line is in
the message; `course.checks.show_traceback()` prints every frame.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from course.checks import depends, lines
from course.checks.expected import Reference, default_reference
from course.checks.failures import Blocked, CheckFailed, NotImplementedYet
from course.checks.outputs import Outputs
from course.checks.targets import resolve
from course.checks.where import full_traceback

__all__ = ["Case", "Check", "CheckFailed", "NotImplementedYet", "Blocked", "show_traceback"]

_last: list[CheckFailed] = []  # the last failure raised in this process, for show_traceback()


@dataclass(frozen=True)
class Case:
    """One deterministic input set.

    run: calls the implementation and returns its outputs.
    hint: the likely bug when this case fails and nothing more specific is known.
    shape_hint: the likely bug when the output has the wrong shape (defaults to `hint`).
    expect: optional probe; receives the outputs and returns None when fine, or what is wrong.
        A case with `expect` is not compared with the reference.
    diagnose: optional; receives (expected, got) when they differ and returns the hint that fits
        this difference (e.g. which wrong scale the scores match), or None for the default hints.
    tags: features of this case ("mask", "bias", ...): when the failing cases are exactly those
        with one feature, the check's `tag_hints` for it is the hint.
    facts: numbers a check's diagnosis needs about this case (eps, c, ...).
    atol, rtol: the comparison's tolerance (at least the dtype's own: float32 is not float64).
    accept: optional; receives (case, got) when the outputs differ and returns None (not
        explained), or (True, why) when the difference is an admissible variant of the same
        formula (the case passes: e.g. another LayerNorm eps within a documented range), or
        (False, hint) when it is the same formula with a value outside that range.
    variant: set by course/checks/kinds.py on derived cases (another dtype, the meta device).
    A gradient case is an ordinary case whose run returns `inputs.with_gradients(...)`: its
    "grad <name>" outputs are recorded and compared like any other, and a "grad" output that
    differs while "output" agrees gets a hint about a cut or wrong gradient path.
    """

    name: str
    run: Callable[[Any], Any]
    hint: str
    expect: Callable[[Outputs], str | None] | None = None
    shape_hint: str | None = None
    diagnose: Callable[[Outputs, Outputs], str | None] | None = None
    atol: float = 1e-9
    rtol: float = 1e-7
    tags: tuple[str, ...] = ()
    facts: dict | None = None
    accept: Callable[[Any, Outputs], tuple[bool, str] | None] | None = None
    variant: Any = None


@dataclass
class Check:
    """A named check of one exercise.

    id: printed name, "<lesson>.<what>", e.g. "01.stable_softmax".
    target: "<module>:<attribute>" inside `exercises/` and `solutions/`, e.g. "softmax:stable_softmax".
    lesson: the notebook that hosts the check, for messages.
    uses: the checks of the exercises this one calls (a test traces the reference to prove it).
    provides: what a stand-in can take the place of for exercises that use this one:
        "module:function" or "module:Class.method"; default the target itself for a function,
        Class.forward for a class.
    diagnose: optional; receives every case's Outcome when some fail and returns the hint the
        evidence points to, or None.
    error_hints: (exception type name, regex on its message, hint) tried before the general ones.
    tag_hints: {tag: hint} for the cases' tags.
    transposed_hint: what a transposed result means here (e.g. "i and j swapped").
    squeeze_hint: whether missing size-1 axes suggest a .squeeze() (not where adding them is
        the exercise itself).
    """

    id: str
    target: str
    lesson: str
    cases: list[Case] = field(default_factory=list)
    uses: tuple["Check", ...] = ()
    provides: tuple[str, ...] | None = None
    diagnose: Callable[[list], str | None] | None = None
    error_hints: tuple[tuple[str, str, str], ...] = ()
    tag_hints: dict[str, str] = field(default_factory=dict)
    transposed_hint: str | None = None
    squeeze_hint: bool = True

    def __post_init__(self):
        if self.provides is None:
            self.provides = (self.target,) if not self.is_class else (f"{self.target}.forward",)
        self.provides = tuple(self.provides)
        self.uses = tuple(self.uses)

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def attribute(self) -> str:
        return self.target.split(":")[1]

    @property
    def is_class(self) -> bool:
        """The exercise is a class (by the course's naming: classes are CamelCase)."""
        return self.attribute.lstrip("_")[:1].isupper()

    def own_targets(self) -> tuple[str, ...]:
        """The exercise itself as calls can be watched: its function, or its class's forward
        and provided methods."""
        own = (self.target,) if not self.is_class else (f"{self.target}.forward",)
        return tuple(dict.fromkeys(own + self.provides))

    def stand_in_targets(self) -> tuple[str, ...]:
        """What judging this exercise on its own replaces: what every check it uses provides
        (never its own parts, where two checks share a class)."""
        own = set(self.own_targets())
        return tuple(dict.fromkeys(t for used in depends.closure(self) for t in used.provides
                                   if t not in own))

    def observed_targets(self) -> tuple[str, ...]:
        """Every call recorded for this check's cases (and watched in the student's code): what
        its stand-ins may replace, and for a class what it provides (so that a stand-in can be
        tried on the class's own check)."""
        own = self.provides if self.is_class else ()
        return tuple(dict.fromkeys(self.stand_in_targets() + own))

    def resolve(self, package: str = "exercises") -> Any:
        """The function or class this check judges, from `package` (exercises or solutions)."""
        return resolve(self.target, package)

    def judge(self, impl: Any, reference: Reference | None = None,
              session: depends.Session | None = None) -> CheckFailed | None:
        """What a run of this check on `impl` finds: None (PASS) or the failure, not raised."""
        session = session or depends.Session(reference or default_reference())
        return depends.judge(self, impl, session)

    def __call__(self, impl: Any, reference: Reference | None = None, quiet: bool = False) -> None:
        """Run every case against `impl`; print one PASS line or raise what failed."""
        __tracebackhide__ = True  # noqa: F841 - IPython hides this frame's caller-side noise
        failure = self.judge(impl, reference)
        if failure is None:
            if not quiet:
                print(lines.pass_line(self.id, len(self.cases)))
                print(lines.visible_only(len(self.cases)))
            return
        _last[:] = [failure]
        raise failure.with_traceback(None)


def show_traceback() -> None:
    """Print the full traceback of every crash behind the last failed check (course frames too)."""
    if not _last or not _last[0].errors:
        print("no crash behind the last failed check")
        return
    for name, error in _last[0].errors.items():
        print(f"--- case '{name}' ---")
        print(full_traceback(error))
