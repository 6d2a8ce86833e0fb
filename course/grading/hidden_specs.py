"""Hidden-case specs, one per check id: the same kinds of input as the visible cases, other sizes
and values, plus edge cases (size-1 axes, masks, positive and negative attn_dim, ...).

To add a check: write `@hidden("<check id>") def _(d): return [d.call(...), d.module(...), ...]`
with the exercise's own signature (see course.grading.hidden.Draw). Modules with parameters get a
gradient case (grad=True) and an init case (d.init: parameters a solution initialises to fixed
values, such as AlphaFold's open gate, must match; random ones only in name and shape).
`tests/test_grading.py` checks that every check id has a spec, that the solutions are confirmed
and that every mutant of the mutation suite is caught.
"""
from __future__ import annotations

import torch

from course.grading.hidden import hidden


# ----------------------------------------------------------------------------- lessons 00-01

@hidden("00.batched_dot")
def _batched_dot(d):
    n = d.int(2, 7)
    b1, b2 = d.int(2, 4), d.int(2, 3)
    return [
        d.call("vectors", d.randn(n), d.randn(n)),
        d.call("batch", d.randn(b1, b2, n), d.randn(b1, b2, n)),
        d.call("broadcast", d.randn(b1, 1, n), d.randn(b2, n)),
        d.call("length-1 vectors", d.randn(b1, 1), d.randn(b1, 1)),
        d.call("a batch of one pair", d.randn(1, n), d.randn(1, n)),
    ]


@hidden("01.stable_softmax")
def _stable_softmax(d):
    a, b, c = d.int(2, 5), d.int(2, 5), d.int(2, 4)
    return [
        d.call("default dim", d.randn(a, b)),
        d.call("middle dim", d.randn(a, b, c), dim=1),
        d.call("dim=0", d.randn(a, b, scale=20.0), dim=0),
        d.call("dim=-2", d.randn(c, a, b), dim=-2),
        d.call("huge values", d.randn(a, b, scale=5.0) + 1000.0, dim=-1),
        d.call("rows on different scales",
               torch.stack([d.randn(b) - 1000.0, d.randn(b) + 1000.0]), dim=-1),
        d.call("size-1 axis along dim", d.randn(a, 1), dim=-1),
        # every row spans 1800: exp overflows after any shift but the row max
        d.call("rows spanning a wide range",
               d.randn(a, b + 1) + torch.linspace(-900.0, 900.0, b + 1, dtype=torch.float64), dim=-1),
        d.call("one row", d.randn(1, b), dim=-1),
    ]


@hidden("01.scaled_scores")
def _scaled_scores(d):
    n_q, n_k = d.int(2, 5), d.int(2, 6)
    c = n_q + n_k + d.int(0, 3)  # never equal to a sequence length
    batch = d.batch(2, low=2, min_axes=1)
    return [
        d.call("queries and keys", d.randn(n_q, c), d.randn(n_k, c)),
        d.call("batch", d.randn(*batch, n_q, c), d.randn(*batch, n_k, c)),
        d.call("c=1, one query", d.randn(1, 1), d.randn(n_k, 1)),
    ]


# --------------------------------------------------------------------------------- lesson 02

def _rows_see_something(d, *shape):
    return d.mask(*shape, keep_one=True)


@hidden("02.causal_mask")
def _causal_mask(d):
    return [d.call("n=1", 1), d.call("n random", d.int(2, 9)), d.call("n random 2", d.int(10, 16))]


@hidden("02.padding_mask")
def _padding_mask(d):
    max_len = d.int(2, 8)
    B = d.int(1, 5)
    lengths = torch.randint(1, max_len + 1, (B,), generator=d.generator)
    lengths[d.int(0, B - 1)] = d.int(1, max_len - 1)  # at least one padded sequence
    return [
        d.call("random lengths", lengths, max_len),
        d.call("all full", torch.full((B,), max_len), max_len),
        d.call("max_len 1", torch.ones(B, dtype=torch.int64), 1),
    ]


def _qk(d, batch, n_q, n_k, c):
    return d.randn(*batch, n_q, c), d.randn(*batch, n_k, c)


@hidden("02.attention_weights")
def _attention_weights(d):
    batch, n_q, n_k, c = d.batch(2, low=2, min_axes=1), d.int(2, 5), d.int(2, 6), d.int(2, 6)
    return [
        d.call("plain", *_qk(d, batch, n_q, n_k, c)),
        d.call("bias", *_qk(d, batch, n_q, n_k, c), bias=d.randn(n_q, n_k, scale=2.0)),
        d.call("mask", *_qk(d, batch, n_q, n_k, c), mask=_rows_see_something(d, *batch, n_q, n_k)),
        d.call("causal mask and bias", *_qk(d, batch, n_k, n_k, c),
               bias=d.randn(*batch, n_k, n_k), mask=torch.ones(n_k, n_k, dtype=torch.bool).tril()),
        d.call("fully masked row", *_qk(d, (2,), 3, n_k, c),
               mask=torch.stack([d.mask(n_k), torch.zeros(n_k, dtype=torch.bool), d.mask(n_k)])),
        d.call("one key", *_qk(d, batch, n_q, 1, c)),
        # scores near 900 * sqrt(c): a textbook exp overflows
        d.call("large scores", d.randn(n_q, c) + 30.0, d.randn(n_k, c) + 30.0),
        d.call("a batch of one, one query", *_qk(d, (1,), 1, n_k, c)),
        d.call("a batch of one, one query, a mask", *_qk(d, (1,), 1, n_k, c),
               mask=_rows_see_something(d, 1, 1, n_k)),
    ]


@hidden("02.attention_forward")
def _attention_forward(d):
    batch, n_q, n_k, c, c_v = d.batch(2, low=2, min_axes=1), d.int(2, 5), d.int(2, 6), d.int(2, 6), d.int(2, 5)
    return [
        d.call("plain", *_qk(d, batch, n_q, n_k, c), d.randn(*batch, n_k, c_v)),
        d.call("bias and mask", *_qk(d, batch, n_q, n_k, c), d.randn(*batch, n_k, c_v),
               bias=d.randn(*batch, n_q, n_k), mask=_rows_see_something(d, *batch, 1, n_k)),
        d.call("fully masked row", *_qk(d, (), 2, n_k, c), d.randn(n_k, c_v),
               mask=torch.stack([d.mask(n_k), torch.zeros(n_k, dtype=torch.bool)])),
        d.call("a batch of one, one query, one key", *_qk(d, (1,), 1, 1, c), d.randn(1, 1, c_v)),
    ]


@hidden("02.single_head")
def _single_head(d):
    c_in, c, L = d.int(2, 7), d.int(2, 5), d.int(2, 6)
    batch = d.batch()
    return [
        d.init("initialisation", (c_in, c)),
        d.module("forward", (c_in, c), args=[d.randn(*batch, L, c_in)]),
        d.module("mask", (c_in, c), args=[d.randn(2, L, c_in)],
                 kwargs={"mask": torch.ones(L, L, dtype=torch.bool).tril()}),
        d.module("bias", (c_in, c), args=[d.randn(L, c_in)], kwargs={"bias": d.randn(L, L)}),
        d.module("gradients", (c_in, c), args=[d.randn(2, L, c_in)], grad=True),
        d.module("a batch of one, one token", (c_in, c), args=[d.randn(1, 1, c_in)]),
    ]


# --------------------------------------------------------------------------------- lesson 03

@hidden("03.split_heads")
def _split_heads(d):
    N, c, L = d.int(2, 4), d.int(2, 4), d.int(2, 5)
    return [
        d.call("split", d.randn(L, N * c), N),
        d.call("batch", d.randn(*d.batch(2, low=2, min_axes=1), L, N * c), N),
        d.call("one head", d.randn(L, c), 1),
        d.call("heads of width 1", d.randn(2, L, N), N),
    ]


@hidden("03.merge_heads")
def _merge_heads(d):
    N, c, L = d.int(2, 4), d.int(2, 4), d.int(2, 5)
    return [
        d.call("merge", d.randn(N, L, c)),
        d.call("batch", d.randn(*d.batch(2, low=2, min_axes=1), N, L, c)),
        d.call("one head, length 1", d.randn(2, 1, 1, c)),
        d.call("transposed input", d.randn(2, L, N, c).transpose(-3, -2)),
    ]


def _mha_cases(d, extra: dict, allow_bias: bool = True):
    """MultiHeadAttention(c_in, c, N_head, attn_dim=..., **extra): forward, masks, attn_dim."""
    c_in, c, N, L, S = d.int(2, 7), d.int(2, 4), d.int(2, 3), d.int(2, 5), d.int(3, 5)
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
                 kwargs={"attention_mask": _columns_mask(d, S, L)}),
        d.module("positive attn_dim=1", (c_in, c, N), {**kw, "attn_dim": 1},
                 args=[d.randn(2, S, L, c_in)]),
        d.module("positive attn_dim=1 with a mask, S != L", (c_in, c, N), {**kw, "attn_dim": 1},
                 args=[d.randn(2, S, S + 1, c_in)], kwargs={"attention_mask": d.mask(2, S, S + 1)}),
        d.module("padding mask", (c_in, c, N), kw, args=[d.randn(2, L + 1, c_in)],
                 kwargs={"attention_mask": d.mask(2, L + 1)}),
        d.module("gradients", (c_in, c, N), kw, args=[d.randn(2, L, c_in)],
                 kwargs={"attention_mask": d.mask(2, L)}, grad=True),
    ]
    if allow_bias:
        cases.append(d.module("bias", (c_in, c, N), kw, args=[d.randn(S, L, c_in)],
                              kwargs={"bias": d.randn(N, L, L, scale=2.0)}))
    return cases


def _columns_mask(d, S, L):
    """A mask (S, L) for column attention along S: every column has a real sequence, and
    column 0 has exactly one padded sequence (with S >= 3, at least two real ones), so both
    the masked mean and the key mask matter."""
    mask = d.mask(L, S).T.contiguous()
    mask[:, 0] = True
    mask[d.int(0, S - 1), 0] = False
    return mask


@hidden("03.multi_head_attention")
def _multi_head_attention(d):
    return _mha_cases(d, {})


# --------------------------------------------------------------------------------- lesson 04

@hidden("04.broadcastable_bias")
def _broadcastable_bias(d):
    N, q, k = d.int(1, 4), d.int(1, 4), d.int(1, 4)
    bias = d.randn(*d.batch(2, 1, 3), N, q, k)
    two = d.randn(d.int(2, 3), d.int(2, 3), d.int(2, 4), d.int(2, 4), d.int(2, 4))
    return [
        d.call("same rank", bias, bias.ndim),
        d.call("extra axes", bias, bias.ndim + d.int(1, 3)),
        d.call("two batch axes, extra axes", two, two.ndim + d.int(1, 2)),
        d.call("one batch axis, extra axes", two[0], 4 + d.int(1, 2)),
        d.call("no batch axes", d.randn(N, q, k), 3 + d.int(1, 3)),
    ]


@hidden("04.pair_bias")
def _pair_bias(d):
    c_z, N, R = d.int(2, 8), d.int(2, 4), d.int(2, 5)
    return [
        d.init("initialisation", (c_z, N)),
        d.module("pair", (c_z, N), args=[d.randn(R, R, c_z)]),
        d.module("batch", (c_z, N), args=[d.randn(*d.batch(2), R, R, c_z, scale=3.0)]),
        d.module("gradients", (c_z, N), args=[d.randn(2, R, R, c_z)], grad=True),
        d.module("one head, one residue, a batch of one", (c_z, 1), args=[d.randn(1, 1, 1, c_z)]),
    ]


# --------------------------------------------------------------------------------- lesson 05

@hidden("05.masked_mean")
def _masked_mean(d):
    S, L, c = d.int(2, 5), d.int(2, 5), d.int(2, 4)
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
    ]


@hidden("05.global_attention")
def _global_attention(d):
    c_in, c, N, S, R = d.int(2, 7), d.int(2, 4), d.int(2, 3), d.int(3, 5), d.int(2, 4)
    kw = {"is_global": True, "use_bias_for_embeddings": False}
    with_bias = {"is_global": True, "use_bias_for_embeddings": True}
    all_padding = _columns_mask(d, S, R)
    all_padding[:, 0] = False
    return [
        d.init("initialisation", (c_in, c, N), kw),
        d.init("initialisation with embedding biases", (c_in, c, N), with_bias),
        d.module("columns", (c_in, c, N), {**kw, "attn_dim": -3}, args=[d.randn(S, R, c_in)]),
        d.module("embedding biases, padding", (c_in, c, N), {**with_bias, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": _columns_mask(d, S, R)}),
        d.module("rows with padding", (c_in, c, N), kw, args=[d.randn(R, S, c_in)],
                 kwargs={"attention_mask": _columns_mask(d, R, S)}),
        d.module("columns with padding, batch", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(2, S, R, c_in)], kwargs={"attention_mask": torch.stack(
                     [_columns_mask(d, S, R), _columns_mask(d, S, R)])}),
        d.module("columns, positive attn_dim=0, padding", (c_in, c, N), {**kw, "attn_dim": 0},
                 args=[d.randn(S, S + 1, c_in)], kwargs={"attention_mask": _columns_mask(d, S, S + 1)}),
        d.module("a column of padding only", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": all_padding}),
        d.module("gradients", (c_in, c, N), {**kw, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], kwargs={"attention_mask": _columns_mask(d, S, R)},
                 grad=True),
    ]


# --------------------------------------------------------------------------------- lesson 06

@hidden("06.gate")
def _gate(d):
    return _mha_cases(d, {"gated": True})


@hidden("06.full_module")
def _full_module(d):
    c_in, c, N, S, R = d.int(2, 7), d.int(2, 4), d.int(2, 3), d.int(3, 5), d.int(2, 4)
    kw = {"gated": True, "use_bias_for_embeddings": False}
    with_bias = {"gated": True, "use_bias_for_embeddings": True}
    return [
        d.module("global, gated, embedding biases", (c_in, c, N),
                 {**with_bias, "is_global": True, "attn_dim": -3}, args=[d.randn(S, R, c_in)],
                 kwargs={"attention_mask": _columns_mask(d, S, R)}),
        *_mha_cases(d, {"gated": True}),
        d.module("global, gated, columns with padding", (c_in, c, N),
                 {**kw, "is_global": True, "attn_dim": -3}, args=[d.randn(2, S, R, c_in)],
                 kwargs={"attention_mask": d.mask(2, S, R)}),
        d.module("positive attn_dim=1 with a mask", (c_in, c, N), {**kw, "attn_dim": 1},
                 args=[d.randn(2, S, R, c_in)], kwargs={"attention_mask": d.mask(2, S, R)}),
        d.module("global, gated, positive attn_dim", (c_in, c, N),
                 {**kw, "is_global": True, "attn_dim": 0}, args=[d.randn(S, R, c_in)]),
        d.module("row attention, pair bias, mask", (c_in, c, N), kw,
                 args=[d.randn(S, R, c_in)], kwargs={"bias": d.randn(N, R, R),
                                                     "attention_mask": _columns_mask(d, R, S).T}),
        d.module("gradients, global", (c_in, c, N), {**kw, "is_global": True, "attn_dim": -3},
                 args=[d.randn(S, R, c_in)], grad=True),
    ]


# ------------------------------------------------------------------ lesson 08 (ids 07.gate_*)

def _gated_paper(d, gate):
    heads, head_dim, L = d.int(2, 3), d.int(2, 3), d.int(2, 6)
    init = (heads * head_dim, heads, gate)
    D = heads * head_dim
    return [
        d.module("one head", (head_dim, 1, gate), args=[d.randn(L, head_dim)]),
        d.init("initialisation", init),
        d.module("forward", init, args=[d.randn(L, D)]),
        d.module("batch", init, args=[d.randn(*d.batch(2), L, D)]),
        d.module("gate_scores", init, args=[d.randn(2, L, D)], method="gate_scores"),
        d.module("gradients", init, args=[d.randn(2, L, D)], grad=True),
        d.module("one token", init, args=[d.randn(2, 1, D)]),
        d.module("gate_scores, a batch of one", init, args=[d.randn(1, L, D)], method="gate_scores"),
    ]


@hidden("07.gate_elementwise")
def _gate_elementwise(d):
    return _gated_paper(d, "elementwise")


@hidden("07.gate_headwise")
def _gate_headwise(d):
    return _gated_paper(d, "headwise")


# --------------------------------------------------------------- lesson 07 (the Transformer)

@hidden("07.sinusoidal_encoding")
def _sinusoidal_encoding(d):
    FLOAT32 = {"atol": 1e-5, "rtol": 1e-5}
    return [
        d.call("L and d_model", d.int(2, 12), 2 * d.int(2, 6)),
        d.call("one position", 1, 2 * d.int(1, 4)),
        d.call("d_model 2", d.int(2, 9), 2),
        d.call("another base", d.int(2, 9), 2 * d.int(2, 5), base=float(d.pick([100, 500, 3000]))),
        {**d.call("float32", d.int(2, 9), 2 * d.int(1, 5), dtype=torch.float32), **FLOAT32},
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
    ]


@hidden("07.decoder_block")
def _decoder_block(d):
    heads, head_dim, L, d_ff = d.int(2, 3), 2 * d.int(1, 2), d.int(2, 5), d.int(2, 8)
    D = heads * head_dim
    return [
        d.init("initialisation", (D, heads, d_ff)),
        d.module("forward with RoPE", (D, heads, d_ff), args=[d.randn(L, D)]),
        d.module("batch, no RoPE", (D, heads, d_ff), {"rope": False}, args=[d.randn(2, L, D)]),
        d.module("batch with RoPE", (D, heads, d_ff), {"rope": True},
                 args=[d.randn(*d.batch(2), L + 1, D)]),
        d.module("gradients", (D, heads, d_ff), args=[d.randn(2, L, D)], grad=True),
    ]


@hidden("07.cross_attention")
def _cross_attention(d):
    heads, head_dim, L_q, L_k = d.int(2, 3), d.int(2, 3), d.int(2, 5), d.int(2, 6)
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
    ]
