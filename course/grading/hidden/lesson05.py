"""Hidden cases of lesson 05 (global attention): see course/grading/hidden/spec.py."""
from __future__ import annotations

import torch

from course.grading.hidden.spec import columns_mask, hidden


@hidden("05.masked_mean")
def _masked_mean(d):
    S, L, c = d.int(2, 5), d.int(2, 5), d.int(2, 4)
    long = d.int(30, 60)
    x = d.randn(S, L, c)
    empty = d.mask(S, L, keep_one=False)
    empty[:, 0] = False
    return [
        d.call("no mask", d.randn(S, L, c), None, -2),
        d.call("mask over dim=-2", x, d.mask(S, L), -2),
        d.call("mask over dim=-3", d.randn(S, L, c), d.mask(L, S).T.contiguous(), -3),
        d.call("an empty slice", d.randn(L, S, c), torch.cat(
            [torch.zeros(1, S, dtype=torch.bool), d.mask(L - 1, S)]), -2),
        d.call("batch", d.randn(2, S, L, c), d.mask(2, S, L), -2),
        d.call("no mask, dim=0", d.randn(S, L, c), None, 0),
        d.call("no mask, dim=-3", d.randn(2, S, L, c), None, -3),
        d.call("size-1 axes", d.randn(1, 1, c), torch.ones(1, 1, dtype=torch.bool), -2),
        d.call("long", d.randn(2, long, c), d.mask(2, long), -2),
        d.grad(d.call("an empty slice", d.randn(L, S, c), torch.cat(
            [torch.zeros(1, S, dtype=torch.bool), d.mask(L - 1, S)]), -2)),
        d.float32(d.call("batch", d.randn(2, S, L, c), d.mask(2, S, L), -2)),
        d.bfloat16(d.call("batch", d.randn(2, S, L, c), d.mask(2, S, L), -2)),
        d.meta(d.call("batch", d.randn(2, S, L, c), d.mask(2, S, L), -2)),
    ]


@hidden("05.global_attention")
def _global_attention(d):
    c_in, c, N, S, R = d.int(2, 7), d.int(2, 4), d.int(2, 3), d.int(3, 5), d.int(2, 4)
    kw = {"is_global": True, "use_bias_for_embeddings": False}
    with_bias = {"is_global": True, "use_bias_for_embeddings": True}
    all_padding = columns_mask(d, S, R)
    all_padding[:, 0] = False
    return [
        d.init("initialisation", (c_in, c, N), kw),
        d.init("initialisation with embedding biases", (c_in, c, N), with_bias),
        d.module("columns", (c_in, c, N), {**kw, "attn_dim": -3}, args=[d.randn(S, R, c_in)]),
        d.module("embedding biases, padding", (c_in, c, N), {**with_bias, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": columns_mask(d, S, R)}),
        d.module("rows with padding", (c_in, c, N), kw, args=[d.randn(R, S, c_in)],
                 kwargs={"attention_mask": columns_mask(d, R, S)}),
        d.module("columns with padding, batch", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(2, S, R, c_in)], kwargs={"attention_mask": torch.stack(
                     [columns_mask(d, S, R), columns_mask(d, S, R)])}),
        d.module("columns, positive attn_dim=0, padding", (c_in, c, N), {**kw, "attn_dim": 0},
                 args=[d.randn(S, S + 1, c_in)], kwargs={"attention_mask": columns_mask(d, S, S + 1)}),
        d.module("a column of padding only", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": all_padding}),
        d.module("gradients", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": columns_mask(d, S, R)},
                 grad=True),
        d.module("gradients, a column of padding only", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": all_padding}, grad=True),
        d.module("many sequences", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(d.int(25, 40), R, c_in)]),
        d.float32(d.module("embedding biases, padding", (c_in, c, N),
                           {**with_bias, "attn_dim": -3}, args=[d.randn(S, R, c_in)],
                           kwargs={"attention_mask": columns_mask(d, S, R)})),
        d.meta(d.module("embedding biases, padding", (c_in, c, N), {**with_bias, "attn_dim": -3},
                        args=[d.randn(S, R, c_in)],
                        kwargs={"attention_mask": columns_mask(d, S, R)})),
        d.bfloat16(d.module("columns with padding", (c_in, c, N), {**kw, "attn_dim": -3},
                            args=[d.randn(S, R, c_in)],
                            kwargs={"attention_mask": columns_mask(d, S, R)})),
        d.repeat(d.module("columns with padding", (c_in, c, N), {**kw, "attn_dim": -3},
                          args=[d.randn(S, R, c_in)],
                          kwargs={"attention_mask": columns_mask(d, S, R)})),
        _large_global(d, c_in),
    ]


def _large_global(d, c_in: int) -> dict:
    """One head, q = mean(x) and k = -x: one slice of x all near 80 u (every score about
    -3200 c_in / c_in: far below 0) and one whose mean opposes two of its rows (scores far above 0)."""
    def edit(module):
        module.linear_q.weight.copy_(torch.eye(c_in))
        module.linear_k.weight.copy_(-torch.eye(c_in))
    u = d.randn(c_in)
    u = u / u.norm()
    x = 80.0 * torch.stack([torch.stack([u, u, u]), torch.stack([u, -3 * u, u])])
    return d.module("rows of large positive and large negative scores", (c_in, c_in, 1),
                    {"is_global": True}, args=[x + d.randn(2, 3, c_in, scale=0.1)], edit=edit)
