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
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from course.checks import lines
from course.checks.expected import Reference, default_reference
from course.checks.outputs import Outputs, as_outputs, difference, first_difference
from course.checks.targets import resolve


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

    def resolve(self, package: str = "exercises") -> Any:
        """The function or class this check judges, from `package` (exercises or solutions)."""
        return resolve(self.target, package)

    def __call__(self, impl: Any, reference: Reference | None = None, quiet: bool = False) -> None:
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
            print(lines.pass_line(self.id, len(self.cases)))

    def _run_case(self, case: Case, impl: Any) -> dict[str, torch.Tensor]:
        guard = InputGuard()
        try:
            with torch.no_grad():
                result = case.run(guard.wrap(impl))
        except NotImplementedError as err:
            raise NotImplementedYet(
                f"{lines.not_implemented_prefix(self.id)}calls `{self.attribute}` in "
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
        return f"{lines.fail_header(self.id, case.name)}\n  {problem}\n  hint: {hint or case.hint}"


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
            and difference("output", expected["output"], got["output"], case.atol,
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
             if difference(k, expected[k], got[k], case.atol, case.rtol) is not None]
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
