"""The check engine: run a student's function or module on fixed cases and compare with the reference.

A `Check` is a list of `Case`s. Each case builds its inputs deterministically (float64, fixed
seeds), calls the implementation under test and returns a tensor, a tuple of tensors or a dict of
tensors. The expected result comes from a `Reference`: recorded results shipped with the course
(so checks work where `solutions/` is absent: the student handout, the grading kernel), or the
live solutions. A case can instead carry its own `expect` function: a probe of behaviour that
needs no reference (rows sum to one, no NaN for huge inputs, ...).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

Outputs = Mapping[str, torch.Tensor]


class CheckFailed(AssertionError):
    """A check found a difference; the message names the case and hints at the likely bug."""


class NotImplementedYet(CheckFailed):
    """The implementation under test still raises NotImplementedError (an untouched stub)."""


@dataclass(frozen=True)
class Case:
    """One deterministic input set.

    run: calls the implementation and returns its outputs.
    hint: the likely bug when this case (and the ones before it passed) fails.
    shape_hint: the likely bug when the output has the wrong shape (defaults to `hint`).
    expect: optional probe; receives the outputs and returns None when fine, or what is wrong.
        A case with `expect` is not compared with the reference.
    """

    name: str
    run: Callable[[Any], Any]
    hint: str
    expect: Callable[[Outputs], str | None] | None = None
    shape_hint: str | None = None
    atol: float = 1e-9
    rtol: float = 1e-7


@dataclass
class Check:
    """A named check of one exercise.

    id: printed name, "<lesson>.<what>", e.g. "01.stable_softmax".
    target: "<module>:<attribute>" inside `exercises/` and `solutions/`, e.g. "softmax:stable_softmax".
    lesson: the notebook that hosts the check, for messages.
    """

    id: str
    target: str
    lesson: str
    cases: list[Case] = field(default_factory=list)

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def attribute(self) -> str:
        return self.target.split(":")[1]

    def __call__(self, impl: Any, reference: "Reference | None" = None, quiet: bool = False) -> None:
        """Run every case against `impl`; print one PASS line or raise CheckFailed."""
        reference = reference or default_reference()
        for case in self.cases:
            got = self._run_case(case, impl)
            if case.expect is not None:
                problem = case.expect(got)
                if problem:
                    raise CheckFailed(self._message(case, problem))
            else:
                problem = compare(reference.outputs(self, case), got, case.atol, case.rtol)
                if problem:
                    hint = case.shape_hint if " shape: expected" in problem else None
                    raise CheckFailed(self._message(case, problem, hint))
        if not quiet:
            print(f"PASS {self.id} ({len(self.cases)} cases)")

    def _run_case(self, case: Case, impl: Any) -> dict[str, torch.Tensor]:
        try:
            with torch.no_grad():
                result = case.run(impl)
        except NotImplementedError as err:
            raise NotImplementedYet(
                f"NOT IMPLEMENTED YET: {self.id} calls `{self.attribute}` in "
                f"exercises/{self.module}.py, which still raises NotImplementedError "
                f"({err}). Write that part, then rerun this cell."
            ) from None
        except CheckFailed:
            raise
        except Exception as err:  # the student's code crashed: report it as a failed case
            raise CheckFailed(
                self._message(case, f"raised {type(err).__name__}: {err}")
            ) from err
        if result is None:
            raise CheckFailed(self._message(
                case, "returned None: is a `return` statement missing?"))
        try:
            return as_outputs(result)
        except (TypeError, ValueError, RuntimeError) as err:
            raise CheckFailed(self._message(
                case, f"returned {type(result).__name__}, which is not a tensor ({err})")) from err

    def _message(self, case: Case, problem: str, hint: str | None = None) -> str:
        return (
            f"FAIL {self.id}, case '{case.name}':\n  {problem}\n  hint: {hint or case.hint}"
        )


def as_outputs(result: Any) -> dict[str, torch.Tensor]:
    """Normalise what a case returns to a dict of tensors."""
    if isinstance(result, torch.Tensor):
        return {"output": result.detach()}
    if isinstance(result, Mapping):
        return {str(k): _tensor(v) for k, v in result.items()}
    if isinstance(result, (tuple, list)):
        return {f"output[{i}]": _tensor(v) for i, v in enumerate(result)}
    return {"output": _tensor(result)}


def _tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    return torch.as_tensor(value)


def compare(expected: Outputs, got: Outputs, atol: float, rtol: float) -> str | None:
    """Describe the first difference between two output dicts, or return None if they agree."""
    if set(expected) != set(got):
        return f"outputs: expected {sorted(expected)}, got {sorted(got)}"
    for key in expected:
        want, have = expected[key], got[key]
        label = "output" if key == "output" else key
        if tuple(want.shape) != tuple(have.shape):
            return f"{label} shape: expected {tuple(want.shape)}, got {tuple(have.shape)}"
        if not want.dtype.is_floating_point and want.dtype != have.dtype:
            return f"{label} dtype: expected {want.dtype}, got {have.dtype}"
        if want.dtype.is_floating_point or have.dtype.is_floating_point:
            want64, have64 = want.double(), have.double()
            nan_got = torch.isnan(have64) & ~torch.isnan(want64)
            if nan_got.any():
                return (f"{label} shape {tuple(have.shape)} as expected, but it holds "
                        f"{int(nan_got.sum())} NaN where the reference has numbers")
            same_nan = torch.isnan(want64) & torch.isnan(have64)
            diff = (want64 - have64).abs().masked_fill(same_nan, 0.0)
            diff = torch.where(torch.isinf(want64) & (want64 == have64), 0.0, diff)
            limit = atol + rtol * want64.abs().nan_to_num(0.0)
            if (diff > limit).any():
                return (f"{label} shape {tuple(have.shape)} as expected; "
                        f"max |expected - got| = {diff.max().item():.3g} "
                        f"(tolerance {atol:g} + {rtol:g}*|expected|)")
        elif not torch.equal(want, have):
            return f"{label}: expected {want.tolist()}, got {have.tolist()}"
    return None


class Reference:
    """Where expected outputs come from."""

    def outputs(self, check: Check, case: Case) -> Outputs:  # pragma: no cover - interface
        raise NotImplementedError


class LiveReference(Reference):
    """Run the case on the reference implementation in `solutions/`."""

    def outputs(self, check: Check, case: Case) -> Outputs:
        import importlib

        module = importlib.import_module(f"solutions.{check.module}")
        impl = getattr(module, check.attribute)
        with torch.no_grad():
            return as_outputs(case.run(impl))


class RecordedReference(Reference):
    """Expected outputs recorded from the solutions (`make reference`), one file per check."""

    def __init__(self, folder=None):
        from course.reference import REFERENCE_DIR

        self.folder = folder or REFERENCE_DIR
        self._cache: dict[str, dict] = {}

    def outputs(self, check: Check, case: Case) -> Outputs:
        if check.id not in self._cache:
            path = self.folder / f"{check.id}.pt"
            if not path.exists():
                raise FileNotFoundError(
                    f"no recorded reference for {check.id} at {path}; run `make reference`"
                )
            self._cache[check.id] = torch.load(path, weights_only=True)
        recorded = self._cache[check.id]
        if case.name not in recorded:
            raise KeyError(f"{check.id}: case '{case.name}' not recorded; run `make reference`")
        return recorded[case.name]


def default_reference() -> Reference:
    """Recorded results unless COURSE_REFERENCE=live asks for the solutions themselves."""
    if os.environ.get("COURSE_REFERENCE", "recorded") == "live":
        return LiveReference()
    return RecordedReference()
