"""Lesson 09's precision comparison: tiled attention in bfloat16 with float32 accumulators (the
lesson's, as FlashAttention accumulates on the chip) against tiles that accumulate in bfloat16,
naive attention and SDPA in bfloat16, each against float64.

    errors(tiled_forward)   max |result - float64 attention| on the lesson's case, for each way,
                            and two references: the exact attention of the bfloat16-rounded
                            inputs (what no bfloat16 computation can beat: the inputs are already
                            rounded), and that result rounded to bfloat16
"""
from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from course.i18n import N_

SHAPE, BLOCK, SEED = (1, 4, 1024, 64), 64, 9  # the lesson's case


def tiles_in_input_dtype(q, k, v, block: int):
    """The lesson's tile loop with the running max, sum and accumulator in q's own dtype (what
    the lesson's accumulators avoid): q, k, v (*, L, c)."""
    out = torch.empty(*q.shape[:-1], v.shape[-1], dtype=q.dtype)
    for start in range(0, q.shape[-2], block):
        rows = slice(start, start + block)
        m = l = acc = None
        for key in range(0, k.shape[-2], block):
            cols = slice(key, key + block)
            s = q[..., rows, :] @ k[..., cols, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
            m_new = s.amax(-1, keepdim=True) if m is None else torch.maximum(m, s.amax(-1, keepdim=True))
            p = torch.exp(s - m_new)
            if m is None:
                l, acc = p.sum(-1, keepdim=True), p @ v[..., cols, :]
            else:
                factor = torch.exp(m - m_new)
                l, acc = l * factor + p.sum(-1, keepdim=True), acc * factor + p @ v[..., cols, :]
            m = m_new
        out[..., rows, :] = acc / l
    return out


def errors(tiled_forward: Callable, shape=SHAPE, block: int = BLOCK, seed: int = SEED) -> dict:
    generator = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(*shape, generator=generator, dtype=torch.float64) for _ in range(3))
    truth = F.scaled_dot_product_attention(q, k, v)
    low = [t.bfloat16() for t in (q, k, v)]
    rounded_inputs = F.scaled_dot_product_attention(*(t.double() for t in low))

    def gap(x):
        return float((x.double() - truth).abs().max())
    with torch.no_grad():
        mine = tiled_forward(*low, block_q=block, block_k=block)[0]
        naive = torch.softmax(low[0] @ low[1].transpose(-2, -1) / math.sqrt(shape[-1]), -1) @ low[2]
        return {N_("tiles, float32 accumulators"): gap(mine),
                N_("tiles, bfloat16 accumulators"): gap(tiles_in_input_dtype(*low, block)),
                N_("naive"): gap(naive), N_("SDPA"): gap(F.scaled_dot_product_attention(*low)),
                N_("exact, of the rounded inputs"): gap(rounded_inputs),
                N_("exact, of the rounded inputs, rounded"): gap(rounded_inputs.bfloat16()),
                "output dtype": str(mine.dtype).removeprefix("torch.")}
