"""Hidden cases of lesson 06 (gating): see course/grading/hidden/spec.py."""
from __future__ import annotations

from course.grading.hidden.lesson03 import mha_cases
from course.grading.hidden.spec import columns_mask, hidden


@hidden("06.gate")
def _gate(d):
    return mha_cases(d, {"gated": True})


@hidden("06.full_module")
def _full_module(d):
    c_in, c, N, S, R = d.int(2, 7), d.int(2, 4), d.int(2, 3), d.int(3, 5), d.int(2, 4)
    kw = {"gated": True, "use_bias_for_embeddings": False}
    with_bias = {"gated": True, "use_bias_for_embeddings": True}
    all_padding = columns_mask(d, S, R)
    all_padding[:, 0] = False
    return [
        d.module("global, gated, embedding biases", (c_in, c, N),
                 {**with_bias, "is_global": True, "attn_dim": -3}, args=[d.randn(S, R, c_in)],
                 kwargs={"attention_mask": columns_mask(d, S, R)}),
        *mha_cases(d, {"gated": True}),
        d.module("global, gated, columns with padding", (c_in, c, N),
                 {**kw, "is_global": True, "attn_dim": -3}, args=[d.randn(2, S, R, c_in)],
                 kwargs={"attention_mask": d.mask(2, S, R)}),
        d.module("positive attn_dim=1 with a mask", (c_in, c, N), {**kw, "attn_dim": 1},
                 args=[d.randn(2, S, R, c_in)], kwargs={"attention_mask": d.mask(2, S, R)}),
        d.module("global, gated, positive attn_dim", (c_in, c, N),
                 {**kw, "is_global": True, "attn_dim": 0}, args=[d.randn(S, R, c_in)]),
        d.module("row attention, pair bias, mask", (c_in, c, N), kw,
                 args=[d.randn(S, R, c_in)], kwargs={"bias": d.randn(N, R, R),
                                                     "attention_mask": columns_mask(d, R, S).T}),
        d.module("gradients, global", (c_in, c, N), {**kw, "is_global": True, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], grad=True),
        d.module("gradients, global, a column of padding only", (c_in, c, N),
                 {**kw, "is_global": True, "attn_dim": -3}, args=[d.randn(S, R, c_in)],
                 kwargs={"attention_mask": all_padding}, grad=True),
        d.float32(d.module("global, gated, columns with padding", (c_in, c, N),
                           {**kw, "is_global": True, "attn_dim": -3},
                           args=[d.randn(2, S, R, c_in)],
                           kwargs={"attention_mask": d.mask(2, S, R)})),
        d.meta(d.module("global, gated, columns with padding", (c_in, c, N),
                        {**kw, "is_global": True, "attn_dim": -3}, args=[d.randn(2, S, R, c_in)],
                        kwargs={"attention_mask": d.mask(2, S, R)})),
    ]
