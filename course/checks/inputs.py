"""Deterministic inputs and parameters for checks: the same numbers on every machine."""
from __future__ import annotations

import math
import zlib

import torch

from course.checks.outputs import Gradients


def randn(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    """Standard-normal float64 tensor from its own generator, so cases never share state."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=torch.float64) * scale


def fill_parameters(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Give every parameter fixed float64 values that depend only on its name, shape and `seed`.

    Two modules with the same parameter names and shapes get identical weights, whatever order
    they were created in, so a student's module and the reference compute the same function.
    Weights are scaled by 1/sqrt(fan_in), the range nn.Linear uses; 1-D parameters (biases,
    LayerNorm) get values around 0 with the same scale so they matter in the output.
    """
    module.double()
    for name, parameter in sorted(module.named_parameters()):
        fan_in = parameter.shape[-1] if parameter.dim() > 1 else max(parameter.numel(), 1)
        values = randn(*parameter.shape, seed=seed * 1_000_003 + zlib.crc32(name.encode()))
        with torch.no_grad():
            parameter.copy_(values / math.sqrt(fan_in))
    return module


def parameter_shapes(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Parameter names and shapes as outputs a check can compare (shape as an int tensor)."""
    return {f"param {name}": torch.tensor(list(p.shape), dtype=torch.int64)
            for name, p in module.named_parameters()}


def loss_weights(shape, seed: int) -> torch.Tensor:
    """Fixed random weights w: the scalar loss of a gradient case is (output * w).sum()."""
    return randn(*shape, seed=seed)


def with_gradients(call, inputs: dict[str, torch.Tensor], module: torch.nn.Module | None = None,
                   seed: int = 0) -> dict[str, torch.Tensor]:
    """Run `call(*inputs.values())` with autograd on; return its output and the gradients.

    The gradients are those of the fixed scalar loss (output * loss_weights).sum() with respect
    to every floating input ("grad <input name>") and every parameter of `module`
    ("grad <parameter name>"). A missing gradient (a path cut by .detach(), no_grad or a
    parameter never used) is returned as NaN of the right shape, so the comparison with the
    reference names it. Checks run cases under no_grad; this turns autograd back on.
    """
    with torch.enable_grad():
        leaves = {name: t.detach().clone().requires_grad_(t.is_floating_point())
                  for name, t in inputs.items()}
        parameters = dict(module.named_parameters()) if module is not None else {}
        for p in parameters.values():
            p.grad = None
        output = call(*leaves.values())
        loss = (output * loss_weights(output.shape, seed=seed).to(output.dtype)).sum()
        targets = [t for t in leaves.values() if t.requires_grad] + list(parameters.values())
        grads = torch.autograd.grad(loss, targets, allow_unused=True) if loss.requires_grad \
            else [None] * len(targets)
    names = [f"grad {n}" for n, t in leaves.items() if t.requires_grad] + \
            [f"grad {n}" for n in parameters]
    return gradient_outputs(output, names, targets, grads)


def gradient_outputs(output: torch.Tensor, names, targets, grads) -> dict[str, torch.Tensor]:
    """{"output": output, name: gradient, ...}: a gradient autograd gave as None (nothing
    reached that input) holds NaN of its input's shape, so the comparison fails, and its name is
    kept as missing (course/checks/outputs.py Gradients), so the message says that no gradient
    arrived rather than that the code computed NaN."""
    result = {"output": output.detach()}
    absent = []
    for name, target, grad in zip(names, targets, grads):
        if grad is None:
            absent.append(name)
        result[name] = (torch.full_like(target, float("nan")) if grad is None else grad).detach()
    return Gradients(result, absent) if absent else result


def inputs_unchanged(call, *tensors: torch.Tensor) -> dict[str, torch.Tensor]:
    """Call `call(*tensors)` and report whether it modified any input in place.

    Returns {"output": ..., "inputs modified": tensor of bools, one per input}; pair it with
    `expect=no_input_modified` in a Case. The engine already guards every call of a function
    under test and every `forward` of a module (course/checks/core.py); this probe is for other
    methods, such as lesson 08's `gate_scores`.
    """
    before = [t.clone() for t in tensors]
    output = call(*tensors)
    modified = [not torch.equal(b, t) for b, t in zip(before, tensors)]
    return {"output": output, "inputs modified": torch.tensor(modified)}


def no_input_modified(outputs) -> str | None:
    """Probe for `inputs_unchanged`: None when every input is as it was."""
    changed = [i for i, flag in enumerate(outputs["inputs modified"].tolist()) if flag]
    if changed:
        return (f"the call changed its input(s) {changed} in place (e.g. `x -= ...` or `x.sub_`): "
                "compute into a new tensor and leave the caller's tensors as they were")
    return None
