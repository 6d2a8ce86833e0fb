"""The pieces every lesson's hidden-case specs use: the `@hidden` registry and `Draw`.

A spec is a function of a `Draw` (random sizes and tensors from the grading run's secret
generator) that returns the hidden cases of one check, built with `Draw.call`, `Draw.module` and
`Draw.init`; `@hidden("<check id>")` registers it. Modules get their parameters from the
solutions' own class: `Draw.module` builds the solution module, fills every parameter with random
values and passes its state_dict, which the harness loads by name into the student's module (so a
change to a solution's parameters propagates by itself). The specs themselves live in
`lessonNN.py` beside this file; helpers that several lessons share are at the end.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from course.confirm.harness import resolve
from course.confirm.judge import ATOL, RTOL


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

    # ---------------------------------------------- the same case, of another kind (see kinds.py)
    def grad(self, case: dict) -> dict:
        """`case` (a call or a module) with the gradients of a fixed loss as outputs too."""
        return {**case, "name": f"{case['name']}, gradients", "grad": True,
                "loss_seed": self.seed()}

    def float32(self, case: dict) -> dict:
        """`case` with its floating inputs (and the module's parameters) in float32: the
        outputs must be float32 too, within float32's tolerance."""
        return {**case, "name": f"{case['name']}, in float32", "dtype": "float32"}

    def bfloat16(self, case: dict) -> dict:
        """`case` in bfloat16, within bfloat16's tolerance (the outputs' dtype too)."""
        return {**case, "name": f"{case['name']}, in bfloat16", "dtype": "bfloat16"}

    def meta(self, case: dict) -> dict:
        """`case` on the meta device: every output must stay on the inputs' device."""
        return {**case, "name": f"{case['name']}, on the meta device", "device": "meta"}

    def repeat(self, case: dict) -> dict:
        """`case` twice, from other random states: the same output each time (no dropout left
        on; course/checks/kinds.py deterministic_of)."""
        return {**case, "name": f"{case['name']}, twice", "repeat": True}

    def init(self, name: str, init_args=(), init_kwargs=None) -> dict:
        return {"name": name, "kind": "init", "init_args": list(init_args),
                "init_kwargs": init_kwargs or {}, "torch_seed": self.seed()}


# ------------------------------------------------------------------ helpers shared by lessons

def qk(d: Draw, batch, n_q: int, n_k: int, c: int):
    """Queries (*batch, n_q, c) and keys (*batch, n_k, c)."""
    return d.randn(*batch, n_q, c), d.randn(*batch, n_k, c)


def rows_see_something(d: Draw, *shape: int) -> torch.Tensor:
    """A random key mask in which every query sees at least one key."""
    return d.mask(*shape, keep_one=True)


def columns_mask(d: Draw, S: int, L: int) -> torch.Tensor:
    """A mask (S, L) for column attention along S: every column has a real sequence, and
    column 0 has exactly one padded sequence (with S >= 3, at least two real ones), so both
    the masked mean and the key mask matter."""
    mask = d.mask(L, S).T.contiguous()
    mask[:, 0] = True
    mask[d.int(0, S - 1), 0] = False
    return mask


def row_bias(*shape: int, value: float = -3000.0) -> torch.Tensor:
    """A bias of `shape` (*, q, k): 0, but `value` on query 0's row, so that every score of
    that row lies far below 0 (exp underflows to 0 without the shift by the row's own max)."""
    bias = torch.zeros(*shape, dtype=torch.float64)
    bias[..., 0, :] = value
    return bias


def keys_against_queries(module, name_q: str, name_k: str) -> None:
    """Set a module's key projection to minus its query projection (an `edit` of Draw.module):
    q_i . k_j = -q_i . q_j, so a query scores far below 0 against keys like itself, and far above
    against opposite ones, once the inputs are large."""
    module.get_parameter(name_k).copy_(-module.get_parameter(name_q))
