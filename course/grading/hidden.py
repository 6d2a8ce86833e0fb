"""Hidden cases: every check's exercise run on inputs drawn at grading time, compared with solutions/.

A PASS line printed in a student's kernel is necessary, not sufficient: the grader then runs each
exercise that passed on hidden cases, drawn from a secret seed (the student's code never sees the
seed, only the inputs), in a fresh sandboxed process that can import the student's `exercises/`
and torch and nothing else (`course.grading.harness`). The outputs come back as plain tensors and
are compared here, in the grader's process, with the outputs of `solutions/` on the same cases.

Specs live in `course.grading.hidden_specs`, one function per check id, registered with
`@hidden("<check id>")`. A spec receives a `Draw` (random sizes and tensors from the secret
generator) and returns cases built with `Draw.call`, `Draw.module` and `Draw.init`. Modules get
their parameters from the solutions' own class: `Draw.module` builds the solution module, fills
every parameter with random values and passes its state_dict, which the harness loads by name
into the student's module (so a change to a solution's parameters propagates by itself).
"""
from __future__ import annotations

import importlib
import math
import zlib
from dataclasses import dataclass
from typing import Callable

import torch

from course.checks.core import compare
from course.grading.harness import resolve, run_case

ATOL, RTOL = 1e-8, 1e-6


@dataclass(frozen=True)
class HiddenSpec:
    check: str
    make: Callable[["Draw"], list[dict]]
    atol: float = ATOL
    rtol: float = RTOL


REGISTRY: dict[str, HiddenSpec] = {}


def hidden(check_id: str, atol: float = ATOL, rtol: float = RTOL):
    """Register the function below as the hidden-case spec of `check_id`."""
    def register(make):
        REGISTRY[check_id] = HiddenSpec(check_id, make, atol, rtol)
        return make
    return register


class Draw:
    """Random draws for one check's hidden cases: sizes, tensors, masks, module states."""

    def __init__(self, seed: int, target: str, solutions: str = "solutions"):
        self.generator = torch.Generator().manual_seed(seed)
        self.target = target
        self.solutions = solutions

    # ----------------------------------------------------------------------- numbers and tensors
    def int(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        return int(torch.randint(low, high + 1, (), generator=self.generator))

    def pick(self, options):
        return options[self.int(0, len(options) - 1)]

    def randn(self, *shape: int, scale: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=self.generator, dtype=torch.float64) * scale

    def mask(self, *shape: int, p: float = 0.7, keep_one: bool = True) -> torch.Tensor:
        """Random bool mask with at least one False (when it has two or more entries); with
        keep_one, one random position of the last axis is True everywhere, so every row sees
        at least one key."""
        mask = torch.rand(*shape, generator=self.generator) < p
        kept = self.int(0, shape[-1] - 1) if shape else 0
        if shape and shape[-1] > 1:  # one False, away from the kept column
            row = mask.view(-1, shape[-1])[self.int(0, mask.numel() // shape[-1] - 1)]
            row[(kept + self.int(1, shape[-1] - 1)) % shape[-1]] = False
        if keep_one and shape:
            mask[..., kept] = True
        return mask

    def batch(self, max_axes: int = 2, low: int = 1, high: int = 3,
              min_axes: int = 0) -> tuple[int, ...]:
        return tuple(self.int(low, high) for _ in range(self.int(min_axes, max_axes)))

    def seed(self) -> int:
        return self.int(0, 2**31 - 1)

    # ------------------------------------------------------------------------------------ cases
    def call(self, name: str, *args, **kwargs) -> dict:
        return {"name": name, "kind": "call", "args": list(args), "kwargs": kwargs}

    def state(self, init_args=(), init_kwargs=None, edit: Callable | None = None) -> dict:
        """The state_dict of the solutions' module, every parameter random (1/sqrt(fan_in))."""
        cls = resolve(self.target, self.solutions)
        module = cls(*init_args, **(init_kwargs or {})).double()
        with torch.no_grad():
            for _, parameter in sorted(module.named_parameters()):
                fan_in = parameter.shape[-1] if parameter.dim() > 1 else max(parameter.numel(), 1)
                parameter.copy_(self.randn(*parameter.shape) / math.sqrt(fan_in))
            if edit is not None:
                edit(module)
        return {k: v.detach().clone() for k, v in module.state_dict().items()}

    def module(self, name: str, init_args=(), init_kwargs=None, args=(), kwargs=None,
               grad: bool = False, method: str | None = None, edit: Callable | None = None) -> dict:
        init_kwargs = init_kwargs or {}
        return {"name": name, "kind": "module", "init_args": list(init_args),
                "init_kwargs": init_kwargs, "state": self.state(init_args, init_kwargs, edit),
                "args": list(args), "kwargs": kwargs or {}, "method": method, "grad": grad,
                "loss_seed": self.seed()}

    def init(self, name: str, init_args=(), init_kwargs=None) -> dict:
        return {"name": name, "kind": "init", "init_args": list(init_args),
                "init_kwargs": init_kwargs or {}, "torch_seed": self.seed()}


def specs() -> dict[str, HiddenSpec]:
    importlib.import_module("course.grading.hidden_specs")
    return REGISTRY


def draw_cases(check, seed: int, solutions: str = "solutions") -> list[dict]:
    """The hidden cases of one check (a course.checks Check) for this grading run's seed."""
    spec = specs().get(check.id)
    if spec is None:
        raise KeyError(f"no hidden cases for {check.id}: add a spec to course/grading/hidden_specs.py")
    own_seed = (seed * 1_000_003 + zlib.crc32(check.id.encode())) % 2**63
    cases = spec.make(Draw(own_seed, check.target, solutions))
    names = [c["name"] for c in cases]
    assert len(set(names)) == len(names), f"{check.id}: hidden case names repeat"
    return cases


def expected_outputs(check, cases: list[dict], solutions: str = "solutions") -> list[dict]:
    """The solutions' outputs on the cases; an "init" case also gets the state of a second
    construction under another seed, so `judge` can tell deterministic parameters from random."""
    impl = resolve(check.target, solutions)
    found = []
    for case in cases:
        outputs = run_case(impl, case)
        if case["kind"] == "init":
            other = run_case(impl, {**case, "torch_seed": case["torch_seed"] + 1})
            outputs = {"deterministic": {k for k in outputs if torch.equal(outputs[k], other[k])},
                       "outputs": outputs}
        found.append(outputs)
    return found


def judge(check_id: str, cases: list[dict], expected: list, got: list) -> str | None:
    """None when the student's results agree with the solutions' on every case, else why not."""
    spec = specs()[check_id]
    if not isinstance(got, list) or len(got) != len(cases):
        return "the hidden run returned no results"
    for case, want, mine in zip(cases, expected, got):
        label = f"hidden case '{case['name']}'"
        if not isinstance(mine, dict):
            return f"{label}: no result"
        if "error" in mine:
            return f"{label}: {mine['error']}"
        outputs = mine.get("outputs")
        if not isinstance(outputs, dict) or not all(
                isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in outputs.items()):
            return f"{label}: the outputs are not plain tensors"
        if case["kind"] == "init":
            reference = want["outputs"]
            if set(outputs) != set(reference):
                return (f"{label}: the module's state holds {sorted(outputs)}, the reference's "
                        f"{sorted(reference)}")
            for key, value in reference.items():
                if tuple(value.shape) != tuple(outputs[key].shape):
                    return f"{label}: {key} has shape {tuple(outputs[key].shape)}, expected {tuple(value.shape)}"
            deterministic = {k: reference[k] for k in want["deterministic"]}
            problem = compare(deterministic, {k: outputs[k] for k in deterministic}, spec.atol, spec.rtol)
        else:
            if "inputs modified" in outputs and bool(outputs["inputs modified"].any()):
                return f"{label}: the call changed its input tensors in place"
            problem = compare(want, outputs, case.get("atol", spec.atol), case.get("rtol", spec.rtol))
            problem = problem or _dtypes_differ(want, outputs)
        if problem:
            return f"{label}: {problem}"
    return None


def _dtypes_differ(want: dict, got: dict) -> str | None:
    """compare() lets float32 pass for float64; here the dtype is part of the answer."""
    for key, value in want.items():
        if got[key].dtype != value.dtype:
            return f"{key} dtype: expected {value.dtype}, got {got[key].dtype}"
    return None
