"""Hidden cases of lesson 09 (tiled attention): see course/grading/hidden/spec.py.

The same kinds as the visible cases (wide and falling rows, rows far below and far above zero,
-inf entries, lengths that are not a multiple of the block, per-tile bias and masks, a query that
sees no key, a bias row of -inf, float32, bfloat16, the meta device, sizes past the lesson's), at
other sizes. Of the visible checks' memory probes, one has a hidden counterpart: the backward's
peak with a bias shared across a leading axis (the harness's "backward_peak_below"), where a bias
gradient built at the scores' size shows. The rest (what the forward keeps, the scores the causal
tiles compute) are the visible checks' alone.
"""
from __future__ import annotations

import torch

from course.grading.hidden.spec import hidden

INF = float("-inf")


def _ragged(d, block: int, low: int = 2, high: int = 3) -> int:
    """A length that is not a multiple of `block` (at least `low` blocks' worth)."""
    return block * d.int(low, high) + d.int(1, block - 1)


def _wide_rows(d, n: int) -> torch.Tensor:
    rising = torch.linspace(-900.0, 900.0, n, dtype=torch.float64) + d.randn(n)
    return torch.stack([rising, rising.flip(0), d.randn(n, scale=300.0)])


def _blind_mask(d, L_q: int, L_k: int) -> torch.Tensor:
    """Random mask; query 0 sees only the last key, query 1 sees none."""
    mask = d.mask(L_q, L_k, keep_one=True)
    mask[0] = False
    mask[0, -1] = True
    mask[1] = False
    return mask


def _falling(d, B: int, L_q: int, block_k: int, L_k: int, c: int):
    """q, k with scores near +800 in the first key tile and near -800 after it."""
    q = 20.0 + d.randn(B, L_q, c, scale=0.1)
    sign = torch.tensor([20.0] * block_k + [-20.0] * (L_k - block_k), dtype=torch.float64)
    return q, d.randn(B, L_k, c, scale=0.1) + sign[:, None]


@hidden("09.online_softmax")
def _online_softmax(d):
    block = d.int(2, 4)
    n = _ragged(d, block)
    masked = d.randn(3, n, scale=20.0)
    masked[0, :block + 1] = INF  # row 0: its whole first block, and one more
    masked[1, ::2] = INF
    return [
        d.call("one block", d.randn(3, n), n + d.int(0, 3)),
        d.call("wide rows, rising and falling", _wide_rows(d, n), block),
        d.call("wide rows, blocks of 1", _wide_rows(d, n), 1),
        d.call("batch axes, the last block shorter", d.randn(2, 3, n, scale=5.0), block),
        d.call("-inf entries", masked, block),
        d.call("float32", d.randn(3, n, scale=5.0).float(), block),
        {**d.call("bfloat16", d.randn(3, n, scale=5.0), block), "dtype": "bfloat16"},
        d.call("one row", d.randn(1, n), block),
        d.call("rows far below zero", d.randn(3, n, scale=3.0) - 1000.0, block),
        d.call("rows far above zero", d.randn(3, n, scale=3.0) + 1000.0, block),
        d.call("longer than the lesson's rows", d.randn(2, 300 + n, scale=4.0), 32 + block),
        d.meta(d.call("batch axes", d.randn(2, 3, n, scale=5.0), block)),
    ]


@hidden("09.tiled_forward")
def _tiled_forward(d):
    B, c, c_v = d.int(1, 3), d.int(2, 6), d.int(2, 5)
    block_q, block_k = d.int(2, 4), d.int(2, 4)
    L_q, L_k = _ragged(d, block_q), _ragged(d, block_k)
    blocks = {"block_q": block_q, "block_k": block_k}

    def qkv(L_q=L_q, L_k=L_k, scale=1.0, batch=(B,)):
        return (d.randn(*batch, L_q, c, scale=scale), d.randn(*batch, L_k, c),
                d.randn(*batch, L_k, c_v))

    lengths = torch.tensor([L_k - d.int(1, 2)] + [L_k] * (B - 1))
    padding = (torch.arange(L_k)[None, :] < lengths[:, None])[:, None, :]
    H, S = d.int(1, 3), d.int(2, 3)
    blind_bias = d.randn(L_q, L_k)
    blind_bias[d.int(0, L_q - 1)] = INF
    bias_case = d.call("bias", *qkv(), d.randn(L_q, L_k, scale=2.0), None, **blocks)
    return [
        d.call("tiles", *qkv(), None, None, **blocks),
        d.call("one tile", *qkv(), None, None, block_q=L_q + d.int(0, 2), block_k=L_k + 1),
        d.call("wide scores", *qkv(scale=30.0), None, None, **blocks),
        d.call("falling scores", *_falling(d, B, L_q, block_k, L_k, c), d.randn(B, L_k, c_v),
               None, None, **blocks),
        bias_case,
        d.call("scores far below zero", *qkv(), d.randn(L_q, L_k) - 1000.0, None, **blocks),
        d.call("scores far above zero", *qkv(), d.randn(L_q, L_k) + 1000.0, None, **blocks),
        d.call("a bias row of -inf", *qkv(), blind_bias, None, **blocks),
        d.call("pair bias broadcast over sequences", *qkv(batch=(B, S, H)),
               d.randn(B, 1, H, L_q, L_k), None, **blocks),
        d.call("padding mask", *qkv(), None, padding, **blocks),
        d.call("causal mask", *qkv(L_q=L_k), None, torch.ones(L_k, L_k, dtype=torch.bool).tril(),
               **blocks),
        d.call("a query that sees no key, with a bias", *qkv(), d.randn(B, L_q, L_k),
               _blind_mask(d, L_q, L_k), **blocks),
        d.call("float32", *(t.float() for t in qkv()), None, padding, **blocks),
        d.float32(bias_case),
        {**bias_case, "name": "bias, in bfloat16", "dtype": "bfloat16"},
        d.meta(bias_case),
        d.call("a batch of one, one query", *qkv(L_q=1, batch=(1,)), None, None, **blocks),
        d.call("longer than the lesson's", *qkv(L_q=60 + L_q, L_k=90 + L_k, batch=(1,)), None,
               None, block_q=16 + block_q, block_k=16 + block_k),
    ]


@hidden("09.tiled_backward")
def _tiled_backward(d):
    B, c, c_v = d.int(1, 3), d.int(2, 6), d.int(2, 5)
    block_q, block_k = d.int(2, 4), d.int(2, 4)
    L_q, L_k = _ragged(d, block_q), _ragged(d, block_k)

    def qkv(L_q=L_q, L_k=L_k, scale=1.0, batch=(B,)):
        return (d.randn(*batch, L_q, c, scale=scale), d.randn(*batch, L_k, c),
                d.randn(*batch, L_k, c_v))

    lengths = torch.tensor([L_k - d.int(1, 2)] + [L_k] * (B - 1))
    padding = (torch.arange(L_k)[None, :] < lengths[:, None])[:, None, :]
    H, S = d.int(1, 3), d.int(2, 3)

    def grads(name, q, k, v, bias, mask, blocks=(block_q, block_k)):
        case = d.call(name, q, k, v, bias, mask, *blocks)
        return {**case, "grad": True, "loss_seed": d.seed()}

    blind_bias = d.randn(B, L_q, L_k)
    blind_bias[0, d.int(0, L_q - 1)] = INF
    S_shared, q_shared, k_shared = 16 + d.int(0, 8), 48 + d.int(0, 16), 96 + d.int(0, 32)
    shared = grads("gradients, a bias shared by many sequences: its gradient at its own size",
                   *qkv(L_q=q_shared, L_k=k_shared, batch=(S_shared,)),
                   d.randn(q_shared, k_shared), None, blocks=(16, 16))
    # one (S, q, k) float32 score tensor: a bias gradient built at the scores' size holds one
    # and more; the tiles' forward and backward together stay near half of it
    shared = {**shared, "dtype": "float32",
              "backward_peak_below": S_shared * q_shared * k_shared * 4}
    return [
        grads("gradients", *qkv(), None, None),
        grads("gradients, a bias shared by the batch", *qkv(), d.randn(L_q, L_k), None),
        grads("gradients, a pair bias broadcast over sequences", *qkv(batch=(B, S, H)),
              d.randn(B, 1, H, L_q, L_k), None),
        grads("gradients, causal mask", *qkv(L_q=L_k), None,
              torch.ones(L_k, L_k, dtype=torch.bool).tril()),
        grads("gradients, a query that sees no key, a bias", *qkv(), d.randn(B, L_q, L_k),
              _blind_mask(d, L_q, L_k)),
        grads("gradients, wide scores and padding", *qkv(scale=20.0), None, padding),
        grads("gradients in float32", *(t.float() for t in qkv()), None, padding),
        {**grads("gradients in bfloat16, a bias", *qkv(), d.randn(L_q, L_k), None),
         "dtype": "bfloat16"},
        grads("gradients, scores far below zero", *qkv(), d.randn(L_q, L_k) - 1000.0, None),
        grads("gradients, a bias row of -inf", *qkv(), blind_bias, None),
        grads("gradients, longer than the lesson's", *qkv(L_q=40 + L_q, L_k=70 + L_k, batch=(1,)),
              None, None, blocks=(16, 32)),
        shared,
    ]


@hidden("09.causal_tiles")
def _causal_tiles(d):
    B, c, c_v, block = d.int(1, 3), d.int(2, 6), d.int(2, 5), d.int(2, 5)
    L = _ragged(d, block)

    def qkv(L=L, batch=(B,), scale=1.0):
        return d.randn(*batch, L, c, scale=scale), d.randn(*batch, L, c), d.randn(*batch, L, c_v)

    ragged = d.call("causal, the last block shorter", *qkv(), block)
    return [
        ragged,
        d.call("causal, L a multiple of the block", *qkv(L=block * d.int(2, 4)), block),
        d.call("causal, batch axes, wide scores", *qkv(batch=(B, 2), scale=20.0), block),
        d.call("causal, one token", *qkv(L=1), block),
        d.call("causal, the block longer than L", *qkv(L=block - 1 if block > 2 else 1), block + 3),
        d.call("causal, longer than the lesson's", *qkv(L=100 + L, batch=(1,)), 16 + block),
        {**ragged, "name": "causal, gradients", "grad": True, "loss_seed": d.seed()},
        d.float32(ragged),
        {**ragged, "name": "causal, in bfloat16", "dtype": "bfloat16"},
        d.meta(ragged),
    ]
