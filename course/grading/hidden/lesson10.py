"""Hidden cases of lesson 10 (route two): see course/grading/hidden/spec.py.

The same kinds as the visible cases, at other sizes: batches, q ≠ k for non-causal linear
attention, lengths that are not a multiple of the chunk, negative values, a state carried between
two calls, decays from strong to none, long constant decays (the ratio of cumulative products
underflows), padding in the middle and at the end of a sequence, float32, half precision where the
lesson discusses it, the meta device, and gradients. The chunked form's memory probe has no hidden
counterpart: the hidden harness compares outputs and gradients on the CPU.
"""
from __future__ import annotations

import torch

from course.grading.hidden.spec import hidden


def _qkv(d, batch, L, c, e, L_k=None, scale=1.0):
    L_k = L if L_k is None else L_k
    return d.randn(*batch, L, c, scale=scale), d.randn(*batch, L_k, c, scale=scale), \
        d.randn(*batch, L_k, e)


def _half(d, dtype, L=1024, c=64):
    return tuple(t.to(dtype) for t in _qkv(d, (1,), L, c, c))


def _log_a(d, batch, L, low=0.5):
    u = torch.rand(*batch, L, generator=d.generator, dtype=torch.float64)
    return torch.log(low + (1 - low) * u)


def _padding(d, B, L, real_low):
    """(B, L): each sequence has between real_low and L real tokens, a few padded in the middle."""
    lengths = torch.tensor([d.int(real_low, L) for _ in range(B)])
    mask = torch.arange(L)[None, :] < lengths[:, None]
    mask[0, d.int(1, real_low - 1)] = False  # one padded token inside the first sequence
    return mask


@hidden("10.linear_attention")
def _linear_attention(d):
    B, c, e = d.int(1, 3), d.int(2, 6), d.int(2, 5)
    L, L_k = d.int(5, 12), d.int(5, 12)
    batched = d.call("causal, batch axes", *_qkv(d, (B, d.int(1, 3)), L, c, e))
    q, k, _ = _qkv(d, (B,), L, c, e, L_k=L_k)
    return [
        d.call("causal", *_qkv(d, (B,), L, c, e)),
        batched,
        d.call("non-causal, q ≠ k", *_qkv(d, (B,), L, c, e, L_k=L_k), causal=False),
        d.call("non-causal, v = the identity", q, k, torch.eye(L_k, dtype=torch.float64)
               .expand(B, L_k, L_k), causal=False),
        d.call("negative values", *_qkv(d, (B,), L, c, e)[:2],
               -1.0 - d.randn(B, L, e).abs()),
        d.call("large entries", *_qkv(d, (B,), L, c, e, scale=30.0)),
        d.call("one token", *_qkv(d, (1,), 1, c, e)),
        d.call("longer", *_qkv(d, (1,), d.int(200, 320), 8, 4)),
        d.grad(d.call("causal", *_qkv(d, (B,), L, c, e))),
        d.call("float16, the normaliser overflows in float16", *_half(d, torch.float16)),
        d.call("bfloat16", *_half(d, torch.bfloat16)),
        d.float32(batched),
        d.meta(batched),
    ]


@hidden("10.linear_recurrent")
def _linear_recurrent(d):
    B, c, e, L = d.int(1, 3), d.int(2, 6), d.int(2, 5), d.int(5, 12)
    batch = (B, d.int(1, 3))
    batched = d.call("batch axes", *_qkv(d, batch, L, c, e))
    state = (d.randn(B, c, e), d.randn(B, c).abs() + 1.0)  # a state from an earlier call
    return [
        d.call("one sequence", *_qkv(d, (1,), L, c, e)),
        batched,
        # the cases run one after another: a state kept from the last call would show here
        d.call("another call of the same shapes", *_qkv(d, batch, L, c, e)),
        d.call("a state carried in", *_qkv(d, (B,), L, c, e), state=state),
        d.call("negative values", *_qkv(d, (B,), L, c, e)[:2], -1.0 - d.randn(B, L, e).abs()),
        d.call("large entries", *_qkv(d, (B,), L, c, e, scale=30.0)),
        d.call("longer", *_qkv(d, (1,), d.int(200, 320), 8, 4)),
        d.call("float16, the normaliser overflows in float16", *_half(d, torch.float16)),
        d.call("bfloat16", *_half(d, torch.bfloat16)),
        d.float32(batched),
        d.meta(batched),
    ]


@hidden("10.linear_chunked")
def _linear_chunked(d):
    B, c, e = d.int(1, 3), d.int(2, 6), d.int(2, 5)
    chunk = d.int(2, 5)
    L = chunk * d.int(2, 4) + d.int(1, chunk - 1)  # not a multiple of the chunk
    batched = d.call("batch axes", *_qkv(d, (B, d.int(1, 3)), L, c, e), chunk=chunk)
    q, k, _ = _qkv(d, (B,), L, c, e)
    return [
        d.call("one chunk", *_qkv(d, (B,), chunk - 1, c, e), chunk=chunk),
        batched,
        d.call("v = the identity: the weights", q, k, torch.eye(L, dtype=torch.float64)
               .expand(B, L, L), chunk=chunk),
        d.call("chunks of 1", *_qkv(d, (B,), L, c, e), chunk=1),
        d.call("negative values", *_qkv(d, (B,), L, c, e)[:2], -1.0 - d.randn(B, L, e).abs(),
               chunk=chunk),
        d.call("large entries", *_qkv(d, (B,), L, c, e, scale=30.0), chunk=chunk),
        d.call("longer", *_qkv(d, (1,), d.int(200, 320), 8, 4), chunk=d.int(16, 64)),
        d.grad(d.call("chunks", *_qkv(d, (B,), L, c, e), chunk=chunk)),
        d.call("float16, the normaliser overflows in float16", *_half(d, torch.float16),
               chunk=64),
        d.call("bfloat16", *_half(d, torch.bfloat16), chunk=64),
        d.float32(batched),
        d.meta(batched),
    ]


@hidden("10.decayed_recurrent")
def _decayed_recurrent(d):
    B, c, e, L = d.int(1, 3), d.int(2, 6), d.int(2, 5), d.int(5, 12)
    batch = (B, d.int(1, 3))
    batched = d.call("batch axes", *_qkv(d, batch, L, c, e), _log_a(d, batch, L))
    long = d.int(200, 320)
    return [
        d.call("one token", *_qkv(d, (1,), 1, c, e), _log_a(d, (1,), 1)),
        d.call("one sequence", *_qkv(d, (1,), L, c, e), _log_a(d, (1,), L)),
        batched,
        d.call("another call of the same shapes", *_qkv(d, batch, L, c, e), _log_a(d, batch, L)),
        d.call("a state carried in", *_qkv(d, (B,), L, c, e), _log_a(d, (B,), L),
               state=d.randn(B, c, e)),
        d.call("no decay", *_qkv(d, (B,), L, c, e), torch.zeros(B, L, dtype=torch.float64)),
        d.call("strong decays, large entries", *_qkv(d, (B,), L, c, e, scale=30.0),
               -30.0 * torch.rand(B, L, generator=d.generator, dtype=torch.float64)),
        d.call("longer", *_qkv(d, (1,), long, 8, 4), _log_a(d, (1,), long, 0.9)),
        d.float32(batched),
        d.meta(batched),
    ]


@hidden("10.decayed_attention")
def _decayed_attention(d):
    B, c, e, L = d.int(1, 3), d.int(2, 6), d.int(2, 5), d.int(5, 12)
    batch = (B, d.int(1, 3))
    batched = d.call("batch axes", *_qkv(d, batch, L, c, e), _log_a(d, batch, L))
    long = d.int(180, 240)

    def constant(a, n, dtype):
        q, k, v = _qkv(d, (1,), n, 4, 3)
        log_a = torch.full((1, n), a, dtype=torch.float64).log()
        return tuple(t.to(dtype) for t in (q, k, v, log_a))

    return [
        d.call("one token", *_qkv(d, (1,), 1, c, e), _log_a(d, (1,), 1)),
        batched,
        d.call("no decay", *_qkv(d, (B,), L, c, e), torch.zeros(B, L, dtype=torch.float64)),
        d.call("float32, a = 0.5, long", *constant(0.5, long, torch.float32)),
        d.call("a = 0.5, past 1,075 tokens", *constant(0.5, 1100, torch.float64)),
        d.grad(d.call("strong decays", *_qkv(d, (1,), long, 3, 2),
                      torch.full((1, long), -5.0, dtype=torch.float64))),
        d.grad(d.call("decays in (0.5, 1)", *_qkv(d, (B,), L, c, e), _log_a(d, (B,), L))),
        d.float32(batched),
        d.meta(batched),
    ]


@hidden("10.landmarks")
def _landmarks(d):
    B, c = d.int(1, 3), d.int(2, 5)
    m = d.int(2, 4)
    L = m * d.int(3, 5) + d.int(0, m - 1)
    batched = d.call("batch axes", d.randn(B, d.int(1, 3), L, c), m)
    return [
        d.call("one segment", d.randn(B, L, c), 1),
        batched,
        d.call("padding at the end and inside", d.randn(B, L, c), m, _padding(d, B, L, 2 * m)),
        d.call("every token a landmark", d.randn(B, m, c), m),
        d.call("longer", d.randn(1, d.int(200, 320), 4), d.int(5, 9)),
        d.grad(d.call("padding", d.randn(B, L, c), m, _padding(d, B, L, 2 * m))),
        d.float32(batched),
        d.meta(batched),
    ]


@hidden("10.nystrom")
def _nystrom(d):
    B, c, e = d.int(1, 3), d.int(2, 5), d.int(2, 4)
    m = d.int(2, 4)
    L = m * d.int(3, 5) + d.int(0, m - 1)
    batched = d.call("batch axes", *_qkv(d, (B, d.int(1, 3)), L, c, e), m)
    return [
        d.call("one landmark", *_qkv(d, (B,), L, c, e), 1),
        batched,
        d.call("q ≠ k", *_qkv(d, (B,), L, c, e, L_k=L + d.int(1, 4)), m),
        d.call("padding", *_qkv(d, (B,), L, c, e), m, _padding(d, B, L, 2 * m)),
        d.call("every token a landmark", *_qkv(d, (B,), m + 1, c, e), m + 1),
        d.call("wide scores", *_qkv(d, (B,), L, c, e, scale=5.0), m),
        d.grad(d.call("padding", *_qkv(d, (B,), L, c, e), m, _padding(d, B, L, 2 * m))),
        d.float32(batched),
        d.meta(batched),
    ]
