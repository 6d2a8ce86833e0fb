"""The check engine: run a student's function or module on fixed cases and compare with the reference.

A `Check` is a list of `Case`s. Each case builds its inputs deterministically (float64, fixed
seeds), calls the implementation under test and returns a tensor, a tuple of tensors or a dict of
tensors. The expected result comes from a `Reference`: recorded results shipped with the course
(so checks work where `solutions/` is absent: the student handout, the grading kernel), or the
live solutions. A case can instead carry its own `expect` function: a probe of behaviour that
needs no reference (rows sum to one, no NaN for huge inputs, ...).

Two probes run on every case without being asked for:
- inputs unmodified: every tensor passed to the implementation under test (a function's
  arguments, a module's forward arguments) is compared before and after the call, so an in-place
  `x -= ...` on the caller's tensor fails even when the result is right;
- hints chosen by what differs: when outputs differ, the hint is picked from the difference itself
  (a case's `diagnose`, then a gradient that is cut or wrong while the output agrees, then size-1
  axes that were squeezed away) before the case's fixed `hint` / `shape_hint`.
"""
from __future__ import annotations

import functools
import inspect
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
    diagnose: optional; receives (expected, got) when they differ and returns the hint that fits
        this difference (e.g. which wrong scale the scores match), or None for the default hints.
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
                expected = reference.outputs(self, case)
                key, problem = first_difference(expected, got, case.atol, case.rtol)
                if problem:
                    hint = choose_hint(case, expected, got, key, problem)
                    raise CheckFailed(self._message(case, problem, hint))
        if not quiet:
            print(f"PASS {self.id} ({len(self.cases)} cases)")

    def _run_case(self, case: Case, impl: Any) -> dict[str, torch.Tensor]:
        guard = InputGuard()
        try:
            with torch.no_grad():
                result = case.run(guard.wrap(impl))
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
        if guard.modified:
            raise CheckFailed(self._message(case, guard.modified[0], INPLACE_HINT))
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


INPLACE_HINT = ("compute into a new tensor (`x = x - m`, `x.masked_fill(...)`), not in place "
                "(`x -= m`, `x[...] = 0`, `x.sub_(m)`, `unsqueeze_`): the caller's tensors must "
                "stay as they were")
SQUEEZE_HINT = ("size-1 axes were dropped (a `.squeeze()` without a dim, or indexing with 0?): "
                "keep every axis, also a batch, head or sequence of length 1")
CUT_GRADIENT_HINT = ("the output is right but no gradient reaches {name}: something on its path "
                     "to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new "
                     "torch.tensor(...)), so it would never learn")
WRONG_GRADIENT_HINT = ("the output is right but the gradient with respect to {name} differs: part "
                       "of its path to the output is cut (e.g. a .detach() in one of the branches "
                       "it feeds, or a branch computed under torch.no_grad())")


def choose_hint(case: Case, expected: Outputs, got: Outputs, key: str | None,
                problem: str) -> str | None:
    """The hint for a failed comparison, picked by what actually differs (None: the case's hint)."""
    if case.diagnose is not None:
        hint = case.diagnose(expected, got)
        if hint:
            return hint
    if key is not None and key.startswith("grad ") and "output" in expected \
            and _difference("output", expected["output"], got["output"], case.atol,
                            case.rtol) is None:
        return _gradient_hint(case, expected, got)
    if key is not None and " shape: expected" in problem:
        want, have = tuple(expected[key].shape), tuple(got[key].shape)
        if have != want and have == tuple(d for d in want if d != 1):
            return SQUEEZE_HINT
        return case.shape_hint
    return None


def _gradient_hint(case: Case, expected: Outputs, got: Outputs) -> str:
    """The output agrees but gradients differ: name the cut ones if any, else the wrong ones."""
    grads = [k for k in expected if k.startswith("grad ")]
    wrong = [k for k in grads
             if _difference(k, expected[k], got[k], case.atol, case.rtol) is not None]
    cut = [k for k in wrong
           if torch.isnan(got[k]).any() and not torch.isnan(expected[k]).any()]
    names = ", ".join(k.removeprefix("grad ") for k in (cut or wrong))
    return (CUT_GRADIENT_HINT if cut else WRONG_GRADIENT_HINT).format(name=names)


class InputGuard:
    """Wraps the implementation under test so every call checks that its tensor arguments survive.

    Functions: each call's tensor arguments are cloned before and compared after. Classes: each
    instance built gets forward hooks doing the same for forward's arguments. Any change is
    recorded in `modified` (a description per change) and the check fails the case.
    """

    def __init__(self):
        self.modified: list[str] = []

    def wrap(self, impl: Any) -> Any:
        if isinstance(impl, type) and issubclass(impl, torch.nn.Module):
            @functools.wraps(impl, updated=())
            def build(*args, **kwargs):
                module = impl(*args, **kwargs)
                self._hook(module, impl.__name__)
                return module
            return build
        if callable(impl) and not isinstance(impl, torch.nn.Module):
            @functools.wraps(impl)
            def call(*args, **kwargs):
                saved = self._save(args, kwargs)
                result = impl(*args, **kwargs)
                self._compare(getattr(impl, "__name__", "the function"), saved, impl)
                return result
            return call
        return impl

    def _hook(self, module: torch.nn.Module, name: str) -> None:
        pending = []

        def before(_module, args, kwargs):
            pending.append(self._save(args, kwargs))

        def after(_module, args, kwargs, output):
            if pending:
                self._compare(f"{name}.forward", pending.pop(), module.forward)

        module.register_forward_pre_hook(before, with_kwargs=True)
        module.register_forward_hook(after, with_kwargs=True)

    @staticmethod
    def _save(args, kwargs) -> list[tuple[str | int, torch.Tensor, torch.Tensor]]:
        named = list(enumerate(args)) + list(kwargs.items())
        return [(key, value, value.detach().clone()) for key, value in named
                if isinstance(value, torch.Tensor)]

    def _compare(self, name: str, saved, function) -> None:
        for key, tensor, before in saved:
            if not _same(before, tensor.detach()):
                label = key if isinstance(key, str) else _parameter_name(function, key)
                what = (f"now has shape {tuple(tensor.shape)}" if tensor.shape != before.shape
                        else "holds different values")
                self.modified.append(f"{name} changed its input `{label}` in place: the "
                                     f"caller's tensor {what} after the call")


def _parameter_name(function, position: int) -> str:
    try:
        names = [p.name for p in inspect.signature(function).parameters.values()]
        return names[position]
    except (TypeError, ValueError, IndexError):
        return f"argument {position}"


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return torch.equal(a, b)


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
    return first_difference(expected, got, atol, rtol)[1]


def first_difference(expected: Outputs, got: Outputs, atol: float,
                     rtol: float) -> tuple[str | None, str | None]:
    """(key, description) of the first difference between two output dicts; (None, None) if none."""
    if set(expected) != set(got):
        return None, f"outputs: expected {sorted(expected)}, got {sorted(got)}"
    for key in expected:
        problem = _difference(key, expected[key], got[key], atol, rtol)
        if problem:
            return key, problem
    return None, None


def _difference(key: str, want: torch.Tensor, have: torch.Tensor, atol: float,
                rtol: float) -> str | None:
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
