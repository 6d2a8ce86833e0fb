"""Running a check's cases on an implementation: one Outcome per case, whatever happens.

Every case runs, also after one has failed, so that the hint can be chosen from all the evidence
(course/checks/hints.py). While a case runs, the calls the exercise makes to other exercises are
watched (and, for an exercise judged on its own, answered by stand-ins: course/confirm/standins.py)
so that a message can say where the student's computation first leaves the reference's.

Two probes run on every case without being asked for:
- inputs unmodified: every tensor passed to the implementation under test (a function's
  arguments, a module's forward arguments) is compared before and after the call, so an in-place
  `x -= ...` on the caller's tensor fails even when the result is right;
- a crash is an outcome like any other: the exception, and the student's line that raised it.
"""
from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

import torch

from course.checks.outputs import Outputs, as_outputs, first_difference, missing
from course.checks.where import Where, student_frames
from course.confirm.standins import Patch, Replay
from course.i18n import _


@dataclass
class Outcome:
    """What one case gave.

    status: "pass", "differs" (compared with the reference), "probe" (a probe of behaviour
        found a problem), "raised", "todo" (NotImplementedError), "inplace", "none", "type".
    """

    case: Any
    status: str
    problem: str = ""
    expected: Outputs | None = None
    got: Outputs | None = None
    key: str | None = None
    error: BaseException | None = None
    where: list[Where] = field(default_factory=list)  # the student's frames of a crash
    seen: list = field(default_factory=list)      # the calls the student's code made
    misses: list = field(default_factory=list)    # stand-ins that found no recorded call
    replaced: list = field(default_factory=list)  # stand-ins that answered

    recorded: Any = None  # the reference's recorded calls in this case, or what loads them
    verdict: str | None = None  # what the case's `accept` found (a hint when it still fails)

    @property
    def failed(self) -> bool:
        return self.status != "pass"

    @property
    def calls(self) -> list:
        """The reference's recorded calls in this case (loaded when a diagnosis asks)."""
        if callable(self.recorded):
            self.recorded = self.recorded()
        return self.recorded or []


def namespaces_of(impl: Any) -> tuple[str, list[dict]]:
    """The package an implementation lives in, and the globals its code reads names from."""
    module = getattr(impl, "__module__", "") or ""
    namespaces = []
    functions = [impl] if inspect.isfunction(impl) else [
        v for v in vars(impl).values() if inspect.isfunction(v)] if isinstance(impl, type) else []
    for function in functions:
        if all(function.__globals__ is not ns for ns in namespaces):
            namespaces.append(function.__globals__)
    if module in sys.modules:
        namespaces.append(vars(sys.modules[module]))
    return module.split(".")[0], namespaces


def run_all(check, impl: Any, reference, replace=()) -> list[Outcome]:
    """Every case of `check` on `impl`; the targets in `replace` answered by stand-ins."""
    package, namespaces = namespaces_of(impl)
    targets = check.observed_targets()
    outcomes = []
    for case in check.cases:
        def load(case=case):
            return reference.calls(check, case) if targets and hasattr(reference, "calls") else []

        calls = load() if replace else load  # a run as written needs them only to explain
        classes = [impl] if isinstance(impl, type) else []
        with Patch(package, targets, Replay(calls if replace else [], replace), namespaces,
                   classes) as patch:
            outcome = run_case(check, case, impl, reference)
        outcome.recorded, outcome.seen = calls, patch.seen
        outcome.misses, outcome.replaced = patch.misses, patch.replaced
        outcomes.append(outcome)
    return outcomes


def run_case(check, case, impl: Any, reference) -> Outcome:
    """One case. Modules are built with autograd on, as wherever they are used (an in-place
    change of a parameter raises there); forward runs under no_grad, except in the gradient
    cases, which turn autograd on (inputs.with_gradients)."""
    guard = InputGuard()
    try:
        with torch.no_grad():
            result = case.run(guard.wrap(impl))
    except NotImplementedError as err:
        return Outcome(case, "todo", problem=str(err), error=err)
    except Exception as err:  # the student's code crashed: an outcome like any other
        return Outcome(case, "raised", problem=f"raised {type(err).__name__}: {err}", error=err,
                       where=student_frames(err))
    if guard.modified:
        return Outcome(case, "inplace", problem=guard.modified[0])
    if result is None:
        return Outcome(case, "none", problem=_("returned None: is a `return` statement missing?"))
    part = _none_inside(result)
    if part is not None:
        return Outcome(case, "none", problem=_("returned None (in the case's output '{part}'): "
                                               "is a `return` missing, or a variable still None "
                                               "on this path?").format(part=part))
    try:
        got = as_outputs(result)
    except (TypeError, ValueError, RuntimeError) as err:
        return Outcome(case, "type", problem=_("returned {kind}, which is not a tensor ({error})")
                       .format(kind=type(result).__name__, error=err))
    if case.expect is not None:
        return _probe(case, got)
    expected = reference.outputs(check, case)
    key, problem = first_difference(expected, got, case.atol, case.rtol)
    if key in missing(got) and key in expected and not bool(torch.isnan(expected[key]).all()):
        problem = _("{key}: no gradient arrived (autograd gave None: nothing in your code "
                    "connects it to the output), where the reference's has numbers").format(
            key=key)
    outcome = Outcome(case, "differs" if problem else "pass", problem=problem or "",
                      expected=expected, got=got, key=key)
    if problem and case.accept is not None:
        _accept(outcome)
    return outcome


def _none_inside(result) -> str | None:
    """Where a tuple, list or dict result holds None ("output[1]", "lse"), or None."""
    if isinstance(result, (tuple, list)):
        return next((f"output[{i}]" for i, v in enumerate(result) if v is None), None)
    if isinstance(result, dict):
        return next((str(k) for k, v in result.items() if v is None), None)
    return None


def _accept(outcome: Outcome) -> None:
    """A difference the case explains as the same formula with another admissible constant
    passes; the same formula with a constant outside the documented range keeps failing, with
    the case's own words for it (Outcome.verdict)."""
    try:
        found = outcome.case.accept(outcome.case, outcome.got)
    except Exception:  # noqa: BLE001 - an explanation that cannot read this result explains nothing
        found = None
    if found is None:
        return
    accepted, words = found
    if accepted:
        outcome.status, outcome.problem = "pass", ""
    outcome.verdict = words


def _probe(case, got: Outputs) -> Outcome:
    try:
        problem = case.expect(got)
    except Exception as err:  # noqa: BLE001 - an output the probe cannot read is a finding too
        dtypes = sorted({str(t.dtype) for t in got.values()})
        problem = _("the check could not read your result ({error}); its dtype: {dtypes}").format(
            error=f"{type(err).__name__}: {err}", dtypes=", ".join(dtypes))
    return Outcome(case, "probe" if problem else "pass", problem=problem or "", got=got)


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
                with torch.enable_grad():  # as a user builds it: outside no_grad
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
    if a.device.type == "meta" or b.device.type == "meta":
        return True  # no values to compare
    if a.dtype.is_floating_point or a.dtype.is_complex:
        return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())
    return torch.equal(a, b)
