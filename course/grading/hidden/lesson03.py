"""Hidden cases of lesson 03 (multi-head): see course/grading/hidden/spec.py."""
from __future__ import annotations

import torch

from course.grading.hidden.spec import columns_mask, hidden, row_bias


@hidden("03.split_heads")
def _split_heads(d):
    N, c, L = d.int(2, 4), d.int(2, 4), d.int(2, 5)
    return [
        d.call("split", d.randn(L, N * c), N),
        d.call("batch", d.randn(*d.batch(2, low=2, min_axes=1), L, N * c), N),
        d.call("one head", d.randn(L, c), 1),
        d.call("heads of width 1", d.randn(2, L, N), N),
        d.call("long", d.randn(2, d.int(30, 50), N * c), N),
        d.grad(d.call("batch", d.randn(2, L, N * c), N)),
        d.float32(d.call("split", d.randn(L, N * c), N)),
        d.bfloat16(d.call("batch", d.randn(2, L, N * c), N)),
        d.meta(d.call("batch", d.randn(2, L, N * c), N)),
    ]


@hidden("03.merge_heads")
def _merge_heads(d):
    N, c, L = d.int(2, 4), d.int(2, 4), d.int(2, 5)
    return [
        d.call("merge", d.randn(N, L, c)),
        d.call("batch", d.randn(*d.batch(2, low=2, min_axes=1), N, L, c)),
        d.call("one head, length 1", d.randn(2, 1, 1, c)),
        d.call("transposed input", d.randn(2, L, N, c).transpose(-3, -2)),
        d.call("long", d.randn(2, N, d.int(30, 50), c)),
        d.grad(d.call("batch", d.randn(2, N, L, c))),
        d.float32(d.call("merge", d.randn(N, L, c))),
        d.bfloat16(d.call("batch", d.randn(2, N, L, c))),
        d.meta(d.call("batch", d.randn(2, N, L, c))),
    ]


def mha_cases(d, extra: dict, allow_bias: bool = True):
    """MultiHeadAttention(c_in, c, N_head, attn_dim=..., **extra): forward, masks, attn_dim."""
    c_in, c, N, L, S = d.int(2, 7), d.int(2, 4), d.int(2, 3), d.int(2, 5), d.int(3, 5)
    long = d.int(20, 40)
    kw = {**extra, "use_bias_for_embeddings": False}
    with_bias = {**extra, "use_bias_for_embeddings": True}
    cases = [
        d.init("initialisation", (c_in, c, N), kw),
        d.init("initialisation with embedding biases", (c_in, c, N), with_bias),
        d.module("embedding biases", (c_in, c, N), with_bias, args=[d.randn(2, L, c_in)]),
        d.module("one head, length 1", (c_in, 1, 1), kw, args=[d.randn(S, 1, c_in)]),
        d.module("rows, attn_dim=-2", (c_in, c, N), {**kw, "attn_dim": -2},
                 args=[d.randn(*d.batch(1), L, c_in)]),
        d.module("columns, attn_dim=-3, mask", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(S, L, c_in)],
                 kwargs={"attention_mask": columns_mask(d, S, L)}),
        d.module("positive attn_dim=1", (c_in, c, N), {**kw, "attn_dim": 1},
                 args=[d.randn(2, S, L, c_in)]),
        d.module("positive attn_dim=1 with a mask, S != L", (c_in, c, N), {**kw, "attn_dim": 1},
                 args=[d.randn(2, S, S + 1, c_in)], kwargs={"attention_mask": d.mask(2, S, S + 1)}),
        d.module("padding mask", (c_in, c, N), kw, args=[d.randn(2, L + 1, c_in)],
                 kwargs={"attention_mask": d.mask(2, L + 1)}),
        d.module("gradients", (c_in, c, N), kw, args=[d.randn(2, L, c_in)],
                 kwargs={"attention_mask": d.mask(2, L)}, grad=True),
        d.module("gradients, a sequence of padding only", (c_in, c, N), kw,
                 args=[d.randn(2, L, c_in)], grad=True,
                 kwargs={"attention_mask": torch.stack([d.mask(L), torch.zeros(L, dtype=torch.bool)])}),
        d.module("long, padding mask", (c_in, c, N), kw, args=[d.randn(2, long, c_in)],
                 kwargs={"attention_mask": d.mask(2, long)}),
        d.float32(d.module("padding mask", (c_in, c, N), kw, args=[d.randn(2, L + 1, c_in)],
                           kwargs={"attention_mask": d.mask(2, L + 1)})),
        d.meta(d.module("padding mask", (c_in, c, N), kw, args=[d.randn(2, L + 1, c_in)],
                        kwargs={"attention_mask": d.mask(2, L + 1)})),
        d.meta(d.module("rows, attn_dim=-2", (c_in, c, N), {**kw, "attn_dim": -2},
                        args=[d.randn(2, L, c_in)])),
        d.bfloat16(d.module("padding mask", (c_in, c, N), kw, args=[d.randn(2, L + 1, c_in)],
                            kwargs={"attention_mask": d.mask(2, L + 1)})),
        d.repeat(d.module("padding mask", (c_in, c, N), kw, args=[d.randn(2, L + 1, c_in)],
                          kwargs={"attention_mask": d.mask(2, L + 1)})),
    ]
    if allow_bias:
        cases.append(d.module("bias", (c_in, c, N), kw, args=[d.randn(S, L, c_in)],
                              kwargs={"bias": d.randn(N, L, L, scale=2.0)}))
        # about ±1000 (exp overflows) and a row far below 0 (exp underflows without the shift)
        cases.append(d.module("rows of large positive and large negative scores", (c_in, c, N),
                              kw, args=[d.randn(2, L, c_in, scale=30.0)],
                              kwargs={"bias": row_bias(N, L, L),
                                      "attention_mask": d.mask(2, L)}))
    return cases


@hidden("03.multi_head_attention")
def _multi_head_attention(d):
    return mha_cases(d, {})
