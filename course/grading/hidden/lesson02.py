"""Hidden cases of lesson 02 (single head): see course/grading/hidden/spec.py."""
from __future__ import annotations

import torch

from course.grading.hidden.spec import hidden, qk, row_bias, rows_see_something


@hidden("02.causal_mask")
def _causal_mask(d):
    return [d.call("n=1", 1), d.call("n random", d.int(2, 9)), d.call("n random 2", d.int(10, 16)),
            d.call("n long", d.int(30, 60))]


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
        d.call("long", torch.randint(1, 61, (B,), generator=d.generator), 60),
        d.meta(d.call("random lengths", lengths, max_len)),
    ]


def _blind_row(d, n_k: int) -> torch.Tensor:
    """(3, n_k): the middle query sees no key."""
    return torch.stack([d.mask(n_k), torch.zeros(n_k, dtype=torch.bool), d.mask(n_k)])


def _largest_masked(d, batch, n_q: int, n_k: int, c: int) -> dict:
    """Large scores whose largest key in every row is masked: a shift by the max over all keys
    (masked ones included) turns every visible key's exp into 0."""
    q, k = d.randn(*batch, n_q, c, scale=30.0), d.randn(*batch, n_k, c, scale=30.0)
    largest = (q @ k.transpose(-2, -1)).argmax(dim=-1, keepdim=True)
    mask = torch.ones(*batch, n_q, n_k, dtype=torch.bool).scatter(-1, largest, False)
    return d.call("large scores, the largest of each row masked", q, k, mask=mask)


@hidden("02.attention_weights")
def _attention_weights(d):
    batch, n_q, n_k, c = d.batch(2, low=2, min_axes=1), d.int(2, 5), d.int(2, 6), d.int(2, 6)
    long_q, long_k = d.int(6, 12), d.int(25, 40)
    return [
        d.call("plain", *qk(d, batch, n_q, n_k, c)),
        d.call("bias", *qk(d, batch, n_q, n_k, c), bias=d.randn(n_q, n_k, scale=2.0)),
        d.call("mask", *qk(d, batch, n_q, n_k, c), mask=rows_see_something(d, *batch, n_q, n_k)),
        d.call("causal mask and bias", *qk(d, batch, n_k, n_k, c),
               bias=d.randn(*batch, n_k, n_k), mask=torch.ones(n_k, n_k, dtype=torch.bool).tril()),
        d.call("fully masked row", *qk(d, (2,), 3, n_k, c), mask=_blind_row(d, n_k)),
        d.call("one key", *qk(d, batch, n_q, 1, c)),
        # scores near 900 * sqrt(c): a textbook exp overflows
        d.call("large scores", d.randn(n_q, c) + 30.0, d.randn(n_k, c) + 30.0),
        # scores of about ±1000 with padding: the masked path needs the shift too
        d.call("large scores with a mask", d.randn(*batch, n_q, c, scale=30.0),
               d.randn(*batch, n_k, c, scale=30.0), mask=rows_see_something(d, *batch, n_q, n_k)),
        _largest_masked(d, batch, n_q, n_k, c),
        d.call("a batch of one, one query", *qk(d, (1,), 1, n_k, c)),
        d.call("a batch of one, one query, a mask", *qk(d, (1,), 1, n_k, c),
               mask=rows_see_something(d, 1, 1, n_k)),
        d.call("many queries and keys, a mask", *qk(d, (2,), long_q, long_k, c),
               mask=rows_see_something(d, 2, 1, long_k)),
        d.grad(d.call("fully masked row", *qk(d, (2,), 3, n_k, c), bias=d.randn(3, n_k),
                      mask=_blind_row(d, n_k))),
        d.float32(d.call("mask", *qk(d, batch, n_q, n_k, c),
                         mask=rows_see_something(d, *batch, n_q, n_k))),
        d.bfloat16(d.call("mask", *qk(d, batch, n_q, n_k, c),
                          mask=rows_see_something(d, *batch, n_q, n_k))),
        d.meta(d.call("mask", *qk(d, batch, n_q, n_k, c),
                      mask=rows_see_something(d, *batch, n_q, n_k))),
        # about ±1000 (exp overflows) and a row far below 0 (exp underflows without the shift)
        d.call("rows of large positive and large negative scores",
               d.randn(2, n_q, c, scale=20.0), d.randn(2, n_k, c, scale=20.0),
               bias=row_bias(n_q, n_k), mask=rows_see_something(d, 2, 1, n_k)),
    ]


@hidden("02.attention_forward")
def _attention_forward(d):
    batch, n_q, n_k, c, c_v = d.batch(2, low=2, min_axes=1), d.int(2, 5), d.int(2, 6), d.int(2, 6), d.int(2, 5)
    long_q, long_k = d.int(6, 12), d.int(25, 40)
    return [
        d.call("plain", *qk(d, batch, n_q, n_k, c), d.randn(*batch, n_k, c_v)),
        d.call("bias and mask", *qk(d, batch, n_q, n_k, c), d.randn(*batch, n_k, c_v),
               bias=d.randn(*batch, n_q, n_k), mask=rows_see_something(d, *batch, 1, n_k)),
        d.call("fully masked row", *qk(d, (), 2, n_k, c), d.randn(n_k, c_v),
               mask=torch.stack([d.mask(n_k), torch.zeros(n_k, dtype=torch.bool)])),
        d.call("a batch of one, one query, one key", *qk(d, (1,), 1, 1, c), d.randn(1, 1, c_v)),
        d.call("many queries and keys", *qk(d, (2,), long_q, long_k, c), d.randn(2, long_k, c_v),
               mask=rows_see_something(d, 2, 1, long_k)),
        d.grad(d.call("fully masked row", *qk(d, (2,), 3, n_k, c), d.randn(2, n_k, c_v),
                      mask=_blind_row(d, n_k))),
        d.float32(d.call("bias and mask", *qk(d, batch, n_q, n_k, c), d.randn(*batch, n_k, c_v),
                         bias=d.randn(*batch, n_q, n_k),
                         mask=rows_see_something(d, *batch, 1, n_k))),
        d.bfloat16(d.call("bias and mask", *qk(d, batch, n_q, n_k, c),
                          d.randn(*batch, n_k, c_v), bias=d.randn(*batch, n_q, n_k),
                          mask=rows_see_something(d, *batch, 1, n_k))),
        d.meta(d.call("bias and mask", *qk(d, batch, n_q, n_k, c), d.randn(*batch, n_k, c_v),
                      bias=d.randn(*batch, n_q, n_k), mask=rows_see_something(d, *batch, 1, n_k))),
        d.call("rows of large positive and large negative scores",
               d.randn(2, n_q, c, scale=20.0), d.randn(2, n_k, c, scale=20.0),
               d.randn(2, n_k, c_v), bias=row_bias(n_q, n_k),
               mask=rows_see_something(d, 2, 1, n_k)),
    ]


@hidden("02.single_head")
def _single_head(d):
    c_in, c, L = d.int(2, 7), d.int(2, 5), d.int(2, 6)
    batch = d.batch()
    long = d.int(20, 40)
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    blind = causal.clone()
    blind[d.int(0, L - 1)] = False  # a query that sees no key
    return [
        d.init("initialisation", (c_in, c)),
        d.module("forward", (c_in, c), args=[d.randn(*batch, L, c_in)]),
        d.module("mask", (c_in, c), args=[d.randn(2, L, c_in)], kwargs={"mask": causal}),
        d.module("bias", (c_in, c), args=[d.randn(L, c_in)], kwargs={"bias": d.randn(L, L)}),
        d.module("gradients", (c_in, c), args=[d.randn(2, L, c_in)], grad=True),
        d.module("a batch of one, one token", (c_in, c), args=[d.randn(1, 1, c_in)]),
        d.module("long, causal", (c_in, c), args=[d.randn(2, long, c_in)],
                 kwargs={"mask": torch.ones(long, long, dtype=torch.bool).tril()}),
        d.module("gradients, a query that sees no key", (c_in, c), args=[d.randn(2, L, c_in)],
                 kwargs={"mask": blind}, grad=True),
        d.module("rows of large positive and large negative scores", (c_in, c),
                 args=[d.randn(2, L, c_in, scale=30.0)],
                 kwargs={"mask": causal, "bias": row_bias(L, L)}),
        d.float32(d.module("mask", (c_in, c), args=[d.randn(2, L, c_in)], kwargs={"mask": causal})),
        d.bfloat16(d.module("mask", (c_in, c), args=[d.randn(2, L, c_in)],
                            kwargs={"mask": causal})),
        d.meta(d.module("mask", (c_in, c), args=[d.randn(2, L, c_in)], kwargs={"mask": causal})),
        d.repeat(d.module("mask", (c_in, c), args=[d.randn(2, L, c_in)], kwargs={"mask": causal})),
    ]
