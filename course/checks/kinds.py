"""Kinds of cases every check can take from one of its own: another dtype, the `meta` device, and
the gradients of a fixed loss. A lesson writes its cases in float64 on the CPU; these turn one of
them into the case a bug of that kind fails:

    from course.checks.kinds import float32_of, bfloat16_of, meta_of, gradients_of

    base = Case("x (5, 6), c=4", _single_head(6, 4, (5, 6), seed=71), hint=...)
    cases = [base, ..., float32_of(base), meta_of(base)]
    Case(..., gradients_of(lambda f, q, k: f(q, k, mask=m), {"q": q, "k": k}), hint=...)

- `float32_of(case)` (and `bfloat16_of`): the same inputs and parameters in float32, compared with
  the reference run in float32, within float32's tolerance (course/checks/outputs.py FLOOR). The
  comparison includes the dtype, so this is also the probe "the output's dtype follows the
  input's": code that fixes float64 (dtype=torch.float64, .double()) or float32 (torch.zeros
  without dtype=) fails it, as does code that computes a part in double inside a float32 model.
- `meta_of(case)`: every tensor the implementation receives (arguments, and a module's parameters
  and buffers at each forward) on PyTorch's `meta` device, which has shapes and dtypes but no
  values. A tensor created inside the exercise on a fixed device (torch.arange(n), torch.ones(...)
  without device=) meets the meta ones and raises, as it would on a GPU; a result that is not on
  meta is reported. Code that reads values (`if mask.any():`, `.item()`, boolean indexing) cannot
  run on meta: then the case cannot judge the code and counts as passed.
- `gradients_of(call, inputs)`: the output and the gradients of (output * w).sum(), w fixed, with
  respect to every floating input (course/checks/inputs.py with_gradients), for a function; a
  module's cases call `with_gradients` themselves.
- `deterministic_of(case)`: the same case run twice in training mode (module.train(), as every
  case runs) from two states of torch's random generator (the learner's own state is restored
  after): the two must agree; when they do not, twice more in eval mode, to say whether the
  randomness stays there too. A module that draws random
  numbers (a dropout left on, torch.rand in forward) fails it with a hint that says so, before
  any other case's difference is read as a broken mask or a wrong formula (hints.py shows it
  first: the randomness explains every other difference).

The derived cases carry the tags "dtype", "device" and "random", so the engine's hints (hints.py) name the
class of bug when exactly those cases fail.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from course.checks.core import Case
from course.checks.hints import DEVICE_HINT, DTYPE_HINT, RANDOM_HINT
from course.checks.inputs import with_gradients
from course.i18n import N_, _

# what code that reads values raises on meta: the case cannot judge it
_DATA_DEPENDENT = ("cannot be called on meta tensors", "Cannot copy out of meta tensor",
                   "data-independent implementation does not exist", "meta device type tensor",
                   "aten::_local_scalar_dense", "is_nonzero")


@dataclass(frozen=True)
class Variant:
    """How the tensors reaching an implementation are changed: floating ones to `dtype`, all of
    them to `device` (None: unchanged)."""

    dtype: torch.dtype | None = None
    device: str | None = None

    def tensor(self, value):
        if isinstance(value, torch.Tensor):
            if self.dtype is not None and value.is_floating_point():
                value = value.to(self.dtype)
            return value.to(self.device) if self.device is not None else value
        if isinstance(value, (list, tuple)):
            return type(value)(self.tensor(v) for v in value)
        if isinstance(value, dict):
            return {k: self.tensor(v) for k, v in value.items()}
        return value

    def module(self, module: torch.nn.Module) -> None:
        if self.dtype is not None:
            module.to(self.dtype)
        if self.device is not None:
            module.to(self.device)

    def wrap(self, impl):
        """`impl` (a function, a class, or the engine's wrapper of either) with every tensor it
        receives changed; a module it builds is changed at each forward (after the case has set
        its parameters)."""
        variant = self

        @functools.wraps(impl, updated=())
        def call(*args, **kwargs):
            result = impl(*variant.tensor(args), **variant.tensor(kwargs))
            if isinstance(result, torch.nn.Module):
                result.register_forward_pre_hook(variant._before_forward, with_kwargs=True)
            return result
        return call

    def _before_forward(self, module, args, kwargs):
        self.module(module)
        return self.tensor(args), self.tensor(kwargs)


def _derived(case: Case, suffix: str, variant: Variant, **changes) -> Case:
    base_run = case.run

    def run(impl):
        return base_run(variant.wrap(impl))
    return dataclasses.replace(case, name=f"{case.name}, {suffix}", run=run, variant=variant,
                               **changes)


def _dtype_of(case: Case, dtype: torch.dtype) -> Case:
    if case.expect is not None:
        raise ValueError(f"'{case.name}' is a probe: derive another dtype from a compared case")
    name = str(dtype).removeprefix("torch.")
    return _derived(case, N_("in {dtype}").format(dtype=name), Variant(dtype=dtype),
                    hint=DTYPE_HINT, shape_hint=None, diagnose=None,
                    tags=case.tags + ("dtype",), facts={**(case.facts or {}), "dtype": name})


def float32_of(case: Case) -> Case:
    """The same case in float32: inputs and parameters, compared with the reference's float32."""
    return _dtype_of(case, torch.float32)


def bfloat16_of(case: Case) -> Case:
    """The same case in bfloat16 (where a lesson's exercise is used in mixed precision)."""
    return _dtype_of(case, torch.bfloat16)


def meta_of(case: Case) -> Case:
    """The same case on the meta device: a probe that every output stays on the inputs' device."""
    base_run = case.run

    def run(impl):
        try:
            result = base_run(Variant(device="meta").wrap(impl))
        except (RuntimeError, NotImplementedError, TypeError) as error:
            if any(text in str(error) for text in _DATA_DEPENDENT):
                return {"not judged": torch.tensor(True)}  # the code reads values: see above
            raise
        if isinstance(result, torch.Tensor):
            result = {"output": result}
        elif isinstance(result, (tuple, list)):
            result = {f"output[{i}]": v for i, v in enumerate(result)}
        return {k: v for k, v in result.items() if not str(k).startswith("param ")}
    return dataclasses.replace(case, name=f"{case.name}, {N_('on the meta device')}", run=run,
                               variant=Variant(device="meta"), expect=on_meta,
                               hint=DEVICE_HINT, shape_hint=None, diagnose=None,
                               tags=case.tags + ("device",))


def on_meta(outputs) -> str | None:
    """Probe of a meta case: every output on meta."""
    elsewhere = sorted({str(t.device) for k, t in outputs.items()
                        if k != "not judged" and t.device.type != "meta"})
    if elsewhere:
        return (f"every input was on the meta device, but your result is on {', '.join(elsewhere)}"
                ": it was created on a fixed device")
    return None


def gradients_of(call, inputs: dict[str, torch.Tensor], seed: int = 0):
    """A case's `run` for a function: call(f, *inputs) with autograd on, returning its output
    and the gradient of a fixed loss with respect to every floating input ("grad <name>")."""
    def run(f):
        return with_gradients(lambda *tensors: call(f, *tensors), inputs, seed=seed)
    return run


def deterministic_of(case: Case) -> Case:
    """The same case twice in training mode (and, when the two differ, twice in eval mode), from
    different random states: a probe that the exercise draws no random numbers (a dropout left
    on)."""
    if case.expect is not None:
        raise ValueError(f"'{case.name}' is a probe: derive the determinism probe from a "
                         "compared case")
    base_run = case.run

    def run(impl):
        found = _twice(base_run, impl, "training")
        if not same_each_time(found):
            found.update(_twice(base_run, impl, "eval"))  # only to say which mode: see above
        return found
    return dataclasses.replace(case, name=f"{case.name}, {N_('called twice')}",
                               run=run, variant=Variant(), expect=same_each_time,
                               hint=RANDOM_HINT, shape_hint=None, diagnose=None, accept=None,
                               tags=case.tags + ("random",))


def _twice(base_run, impl, mode: str) -> dict:
    """The case run twice in one mode, from two random states: {"<mode> <n>: <key>": tensor}."""
    from course.checks.outputs import as_outputs

    found = {}
    for attempt in (1, 2):
        with torch.random.fork_rng(devices=[]):  # the learner's generator untouched
            torch.manual_seed(attempt)
            outputs = as_outputs(base_run(_in_mode(impl, mode == "training")))
        found.update({f"{mode} {attempt}: {k}": v for k, v in outputs.items()
                      if not k.startswith("param ")})
    return found


def _in_mode(impl, training: bool):
    """`impl` whose modules are put in training or eval mode as they are built."""
    if not (isinstance(impl, type) or callable(impl)):
        return impl

    @functools.wraps(impl, updated=())
    def build(*args, **kwargs):
        made = impl(*args, **kwargs)
        if isinstance(made, torch.nn.Module):
            made.train(training)
        return made
    return build


def same_each_time(outputs) -> str | None:
    """Probe of a determinism case: the two runs of each mode agree."""
    for mode in ("training", "eval"):
        for key in [k for k in outputs if k.startswith(f"{mode} 1: ")]:
            first, second = outputs[key], outputs.get(key.replace(f"{mode} 1: ", f"{mode} 2: "))
            if second is None or first.shape != second.shape:
                continue
            a, b = first.double(), second.double()
            same = (a == b) | (torch.isnan(a) & torch.isnan(b))
            if not bool(same.all()):
                gap = float((a - b).abs().nan_to_num(float("inf")).max())
                where = _("in eval mode too") if mode == "eval" else _("in training mode")
                return _("the same input, run twice {where}, gave outputs that differ by up to "
                         "{gap:.3g}: something in your code draws random numbers").format(
                    where=where, gap=gap)
    return None
