"""Hidden cases of lesson 07 (the Transformer around attention): see course/grading/hidden/spec.py."""
from __future__ import annotations

import torch

from course.grading.hidden.spec import hidden, keys_against_queries


@hidden("07.sinusoidal_encoding")
def _sinusoidal_encoding(d):
    FLOAT32 = {"atol": 1e-5, "rtol": 1e-5}
    return [
        d.call("L and d_model", d.int(2, 12), 2 * d.int(2, 6)),
        d.call("one position", 1, 2 * d.int(1, 4)),
        d.call("d_model 2", d.int(2, 9), 2),
        d.call("another base", d.int(2, 9), 2 * d.int(2, 5), base=float(d.pick([100, 500, 3000]))),
        {**d.call("float32", d.int(2, 9), 2 * d.int(1, 5), dtype=torch.float32), **FLOAT32},
        d.call("long", d.int(200, 400), 2 * d.int(2, 6)),  # no table of fixed length
        d.call("bfloat16", d.int(2, 9), 2 * d.int(1, 5), dtype=torch.bfloat16),
        # an angle computed in float32 is off by about 1e-4 at these positions
        {**d.call("float32, long", d.int(3000, 5000), 2 * d.int(2, 5), dtype=torch.float32),
         **FLOAT32},
    ]


@hidden("07.rope")
def _rope(d):
    L, half = d.int(2, 6), d.int(2, 4)
    c = 2 * half
    return [
        d.call("default positions", d.randn(L, c)),
        d.call("batch and heads", d.randn(*d.batch(2), L, c)),
        d.call("integer positions", d.randn(2, L, c),
               torch.randint(0, 50, (L,), generator=d.generator)),
        d.call("float positions, other base", d.randn(L, c), d.randn(L).abs() * 10, base=500.0),
        d.call("c=2", d.randn(3, L, 2)),
        {**d.call("float32", d.randn(2, L, c).float()), "atol": 1e-5, "rtol": 1e-5},
        d.call("long", d.randn(d.int(200, 400), c)),
        d.grad(d.call("batch and heads", d.randn(2, 3, L, c))),
        d.bfloat16(d.call("batch and heads", d.randn(2, 3, L, c))),
        d.meta(d.call("batch and heads", d.randn(2, 3, L, c))),
    ]


@hidden("07.rms_norm")
def _rms_norm(d):
    D = d.int(2, 8)
    return [
        d.init("initialisation", (D,)),
        d.module("forward", (D,), args=[d.randn(*d.batch(2), 3, D)]),
        d.module("tiny values, eps matters", (D,), {"eps": 1e-4}, args=[d.randn(2, D, scale=1e-3)]),
        d.module("another eps", (D,), {"eps": 0.5}, args=[d.randn(4, D)]),
        d.module("gradients", (D,), args=[d.randn(3, D)], grad=True),
        _wide(d),
        d.float32(d.module("forward", (D,), args=[d.randn(2, 3, D)])),
        d.bfloat16(d.module("forward", (D,), args=[d.randn(2, 3, D)])),
        d.meta(d.module("forward", (D,), args=[d.randn(2, 3, D)])),
        d.repeat(d.module("forward", (D,), args=[d.randn(2, 3, D)])),
    ]


def _wide(d) -> dict:
    """More channels and positions than the lesson's: nothing may depend on a fixed d_model."""
    wide = d.int(30, 60)
    return d.module("wide and long", (wide,), args=[d.randn(2, d.int(20, 40), wide)])


@hidden("07.decoder_block")
def _decoder_block(d):
    heads, L, d_ff = d.int(2, 3), d.int(2, 5), d.int(2, 8)
    head_dim = d.pick([w for w in (2, 4) if w != heads])  # even (RoPE); never the head count
    D = heads * head_dim
    return [
        d.init("initialisation", (D, heads, d_ff)),
        d.module("forward with RoPE", (D, heads, d_ff), args=[d.randn(L, D)]),
        d.module("batch, no RoPE", (D, heads, d_ff), {"rope": False}, args=[d.randn(2, L, D)]),
        d.module("batch with RoPE", (D, heads, d_ff), {"rope": True},
                 args=[d.randn(*d.batch(2), L + 1, D)]),
        d.module("gradients", (D, heads, d_ff), args=[d.randn(2, L, D)], grad=True),
        d.module("long", (D, heads, d_ff), args=[d.randn(2, d.int(20, 40), D)]),
        d.float32(d.module("forward with RoPE", (D, heads, d_ff), args=[d.randn(2, L, D)])),
        d.bfloat16(d.module("forward with RoPE", (D, heads, d_ff), args=[d.randn(2, L, D)])),
        d.meta(d.module("forward with RoPE", (D, heads, d_ff), args=[d.randn(2, L, D)])),
        d.repeat(d.module("forward with RoPE", (D, heads, d_ff), args=[d.randn(2, L, D)])),
        d.module("rows of large positive and large negative scores", (D, heads, d_ff),
                 {"rope": False}, args=[d.randn(2, L + 1, D)], edit=_large_block),
    ]


def _large_block(module):
    """norm_attn's weight 30 and linear_k = -linear_q: scores of about ±1000, and query 0 (which
    sees key 0 only) far below 0."""
    module.norm_attn.weight.fill_(30.0)
    keys_against_queries(module, "attn.linear_q.weight", "attn.linear_k.weight")


@hidden("07.cross_attention")
def _cross_attention(d):
    heads, L_q, L_k = d.int(2, 3), d.int(2, 5), d.int(2, 6)
    head_dim = d.pick([w for w in (2, 3, 4) if w != heads])  # a head width never the head count
    long = d.int(20, 40)
    D = heads * head_dim
    return [
        d.init("initialisation", (D, heads)),
        d.module("no mask", (D, heads), args=[d.randn(L_q, D), d.randn(L_k, D)]),
        d.module("memory mask", (D, heads), args=[d.randn(2, L_q, D), d.randn(2, L_k, D)],
                 kwargs={"memory_mask": d.mask(2, L_k)}),
        d.module("batch", (D, heads), args=[d.randn(3, 2, L_q, D), d.randn(3, 2, L_k, D)],
                 kwargs={"memory_mask": d.mask(3, 2, L_k)}),
        d.module("gradients", (D, heads), args=[d.randn(2, L_q, D), d.randn(2, L_k, D)],
                 kwargs={"memory_mask": d.mask(2, L_k)}, grad=True),
        d.module("gradients, a source of padding only", (D, heads),
                 args=[d.randn(2, L_q, D), d.randn(2, L_k, D)], grad=True,
                 kwargs={"memory_mask": torch.stack([d.mask(L_k),
                                                     torch.zeros(L_k, dtype=torch.bool)])}),
        d.module("a long source", (D, heads), args=[d.randn(2, L_q, D), d.randn(2, long, D)],
                 kwargs={"memory_mask": d.mask(2, long)}),
        d.float32(d.module("memory mask", (D, heads),
                           args=[d.randn(2, L_q, D), d.randn(2, L_k, D)],
                           kwargs={"memory_mask": d.mask(2, L_k)})),
        d.meta(d.module("memory mask", (D, heads), args=[d.randn(2, L_q, D), d.randn(2, L_k, D)],
                        kwargs={"memory_mask": d.mask(2, L_k)})),
        d.bfloat16(d.module("memory mask", (D, heads),
                            args=[d.randn(2, L_q, D), d.randn(2, L_k, D)],
                            kwargs={"memory_mask": d.mask(2, L_k)})),
        d.repeat(d.module("memory mask", (D, heads), args=[d.randn(2, L_q, D), d.randn(2, L_k, D)],
                          kwargs={"memory_mask": d.mask(2, L_k)})),
        _large_cross(d, D, heads, L_k),
    ]


def _large_cross(d, D: int, heads: int, L_k: int) -> dict:
    """linear_k = -linear_q, x = (80 u, -80 u) and every memory position near 80 u: query 0
    scores far below 0 on every key, query 1 far above."""
    u = d.randn(D)
    u = u / u.norm()
    x = 80.0 * torch.stack([u, -u])[None] + d.randn(1, 2, D, scale=0.1)
    memory = 80.0 * u.expand(1, L_k, D) + d.randn(1, L_k, D, scale=0.1)
    return d.module("rows of large positive and large negative scores", (D, heads),
                    args=[x, memory], edit=lambda m: keys_against_queries(
                        m, "linear_q.weight", "linear_k.weight"))
