"""Deterministic inputs and parameters for checks: the same numbers on every machine."""
from __future__ import annotations

import math
import zlib

import torch


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
