"""Lesson 09's tiled attention equals OpenFold's low-memory attention on AlphaFold's row
attention with pair bias (float64, copied weights).

OpenFold cannot be installed from a package index (its `openfold` 0.0.1 on PyPI fails to build;
`openfold3` is the AlphaFold 3 successor with a large dependency tree), so this file re-states,
in its own code, the algorithm of `_lma` in `openfold/model/primitives.py` of
aqlaboratory/openfold (read at commit ce0029e1199b65fd834fe822be50d936cfe57fd4, 2025-09-15),
and the path around it in `Attention.forward(use_lma=True)` and `MSAAttention._prep_inputs`
(openfold/model/msa.py): queries divided by sqrt(c) before the scores, the MSA mask as an additive
bias 1e9 * (mask - 1), the pair bias LayerNorm(z) -> Linear(c_z, H, no bias) shared by every
sequence, gate sigmoid(linear_g(m)), output linear_o.
"""
import math

import pytest
import torch

from course.lessons.lesson09.memory import measure_call
from solutions.bias import PairBias
from solutions.mha import MultiHeadAttention, merge_heads, split_heads
from solutions.tiled import tiled_attention

OPENFOLD_INF = 1e9  # MSAAttention's default `inf`


def lma_restated(q, k, v, biases, q_chunk_size, kv_chunk_size, detach_before_exp=False):
    """The algorithm of OpenFold's `_lma`: q, k, v (*, H, Q or K, c), q already scaled; biases
    broadcast to (*, H, Q, K). For each chunk of queries, each chunk of keys gives its own max,
    its sum of exp(scores - max) and its exp-weighted values; all of them are kept (stacked) and
    merged once, after the last key chunk, against the largest of the maxes.

    detach_before_exp: the max detached where it enters the exponentials too (Rabe & Staats's
    `stop_gradient` placement), not only where the chunks are merged (OpenFold's)."""
    out = q.new_zeros(q.shape[:-1] + v.shape[-1:])
    for q_start in range(0, q.shape[-2], q_chunk_size):
        rows = slice(q_start, q_start + q_chunk_size)
        maxes, sums, values = [], [], []
        for kv_start in range(0, k.shape[-2], kv_chunk_size):
            cols = slice(kv_start, kv_start + kv_chunk_size)
            scores = torch.einsum("...hqd,...hkd->...hqk", q[..., rows, :], k[..., cols, :])
            for bias in biases:
                scores = scores + bias[..., rows, cols]
            chunk_max = scores.amax(dim=-1, keepdim=True)
            if detach_before_exp:
                chunk_max = chunk_max.detach()
            weights = torch.exp(scores - chunk_max)
            maxes.append(chunk_max.detach().squeeze(-1))  # a constant shift: no gradient needed
            sums.append(weights.sum(dim=-1))
            values.append(torch.einsum("...hvf,...hqv->...hqf", v[..., cols, :], weights))
        maxes, sums, values = torch.stack(maxes, -3), torch.stack(sums, -3), torch.stack(values, -4)
        largest = maxes.amax(dim=-3, keepdim=True)
        rescale = torch.exp(maxes - largest)
        total = (values * rescale.unsqueeze(-1)).sum(dim=-4)
        norm = (sums * rescale).sum(dim=-3).unsqueeze(-1)
        out[..., rows, :] = total / norm
    return out


def openfold_row_attention(weights: dict, m, z, mask, H: int, c: int, q_chunk, kv_chunk):
    """MSA row attention with pair bias as OpenFold computes it with use_lma=True.
    m: (S, R, c_m) after its LayerNorm; z: (R, R, c_z); mask: (S, R) 1 = real."""
    def heads(x):  # (S, R, H*c) -> (S, H, R, c)
        return x.view(*x.shape[:-1], H, c).transpose(-2, -3)

    q = heads(m @ weights["linear_q.weight"].T) / math.sqrt(c)
    k = heads(m @ weights["linear_k.weight"].T)
    v = heads(m @ weights["linear_v.weight"].T)
    z = torch.nn.functional.layer_norm(z, z.shape[-1:], weights["layer_norm_z.weight"],
                                       weights["layer_norm_z.bias"], eps=1e-5)
    pair = (z @ weights["linear_z.weight"].T).permute(2, 0, 1)[None]  # (1, H, R, R)
    mask_bias = (OPENFOLD_INF * (mask.to(m.dtype) - 1))[:, None, None, :]  # (S, 1, 1, R)
    full = q.shape[:-1] + (k.shape[-2],)
    o = lma_restated(q, k, v, [mask_bias.expand(full), pair.expand(full)], q_chunk, kv_chunk)
    o = o.transpose(-2, -3)  # (S, R, H, c)
    gate = torch.sigmoid(m @ weights["linear_g.weight"].T + weights["linear_g.bias"])
    o = o * gate.view(*gate.shape[:-1], H, c)
    return o.flatten(-2) @ weights["linear_o.weight"].T + weights["linear_o.bias"]


def tiled_row_attention(module: MultiHeadAttention, pair_bias: PairBias, m, z, mask, blocks):
    """The same row attention with the lesson's tiled attention as its core."""
    q, k, v = (split_heads(linear(m), module.N_head)
               for linear in (module.linear_q, module.linear_k, module.linear_v))
    o = tiled_attention(q, k, v, pair_bias(z), mask[:, None, None, :], *blocks)
    o = torch.sigmoid(module.linear_g(m)) * merge_heads(o)
    return module.linear_o(o)


def _modules(c_m=12, c=4, H=3, c_z=5, seed=0):
    torch.manual_seed(seed)
    module = MultiHeadAttention(c_m, c, H, attn_dim=-2, gated=True).double()
    pair_bias = PairBias(c_z, H).double()
    with torch.no_grad():
        for p in list(module.parameters()) + list(pair_bias.parameters()):
            p.copy_(torch.randn_like(p) / math.sqrt(p.shape[-1]))
    copied = {name: p.detach().clone() for name, p in
              list(module.named_parameters()) + list(pair_bias.named_parameters())}
    return module, pair_bias, copied


def _msa(S=6, R=11, c_m=12, c_z=5, seed=1):
    generator = torch.Generator().manual_seed(seed)
    m = torch.randn(S, R, c_m, generator=generator, dtype=torch.float64)
    z = torch.randn(R, R, c_z, generator=generator, dtype=torch.float64)
    mask = torch.rand(S, R, generator=generator) < 0.75
    mask[:, 0] = True  # every sequence has a real residue: no row that sees nothing
    return m, z, mask


@pytest.mark.parametrize("q_chunk, kv_chunk, blocks", [(3, 4, (4, 3)), (1024, 4096, (64, 64)),
                                                       (5, 2, (2, 5))])
def test_tiled_row_attention_equals_openfold_lma(q_chunk, kv_chunk, blocks):
    module, pair_bias, copied = _modules()
    m, z, mask = _msa()
    with torch.no_grad():
        openfold = openfold_row_attention(copied, m, z, mask.double(), 3, 4, q_chunk, kv_chunk)
        tiled = tiled_row_attention(module, pair_bias, m, z, mask, blocks)
        lesson = module(m, bias=pair_bias(z), attention_mask=mask)  # lessons 02-06's attention
    assert (tiled - openfold).abs().max() < 1e-12
    assert (tiled - lesson).abs().max() < 1e-12


def test_the_gradients_agree_with_one_key_chunk():
    module, pair_bias, copied = _modules()
    m, z, mask = _msa(S=3, R=7)
    m1, z1 = m.clone().requires_grad_(), z.clone().requires_grad_()
    m2, z2 = m.clone().requires_grad_(), z.clone().requires_grad_()
    openfold = openfold_row_attention(copied, m1, z1, mask.double(), 3, 4, 2, 7)  # one key chunk
    tiled = tiled_row_attention(module, pair_bias, m2, z2, mask, (3, 2))
    w = torch.randn_like(tiled)
    grads_openfold = torch.autograd.grad((openfold * w).sum(), [m1, z1])
    grads_tiled = torch.autograd.grad((tiled * w).sum(), [m2, z2])
    for a, b in zip(grads_openfold, grads_tiled):
        assert (a - b).abs().max() < 1e-12


def test_lma_autograd_is_not_the_gradient_with_several_key_chunks():
    """`_lma` detaches each key chunk's max where the chunks are merged, not inside that chunk's
    exponentials: with one key chunk the two cancel, with several the autograd gradient of q and
    k is not attention's. (OpenFold documents LMA for inference, where no gradient is taken.)"""
    generator = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 3, 7, 4, generator=generator, dtype=torch.float64,
                           requires_grad=True) for _ in range(3))
    w = torch.randn(2, 3, 7, 4, generator=generator, dtype=torch.float64)
    exact = torch.autograd.grad((tiled_attention(q, k, v, None, None, 3, 3) * w).sum(), [q, k, v])
    one_chunk = torch.autograd.grad((lma_restated(q / 2, k, v, [], 3, 7) * w).sum(), [q, k, v])
    chunks = torch.autograd.grad((lma_restated(q / 2, k, v, [], 3, 3) * w).sum(), [q, k, v])
    for a, b in zip(exact, one_chunk):
        assert (a - b).abs().max() < 1e-12
    assert (exact[0] - chunks[0]).abs().max() > 1e-3 and (exact[1] - chunks[1]).abs().max() > 1e-3
    assert (exact[2] - chunks[2]).abs().max() < 1e-12  # v enters linearly: its gradient is right


def test_detaching_the_max_before_exp_gives_the_gradient():
    """With the max detached before the exponentials as well (Rabe & Staats's placement), split
    then merge differentiates exactly with several key chunks: OpenFold's gradient problem is
    where one detach sits, not the algorithm."""
    generator = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 3, 7, 4, generator=generator, dtype=torch.float64,
                           requires_grad=True) for _ in range(3))
    w = torch.randn(2, 3, 7, 4, generator=generator, dtype=torch.float64)
    exact = torch.autograd.grad((tiled_attention(q, k, v, None, None, 3, 3) * w).sum(), [q, k, v])
    fixed = torch.autograd.grad((lma_restated(q / 2, k, v, [], 3, 3, detach_before_exp=True) * w)
                                .sum(), [q, k, v])
    for a, b in zip(exact, fixed):
        assert (a - b).abs().max() < 1e-12


def test_a_fully_padded_sequence_is_where_they_differ():
    """OpenFold's additive -1e9 shifts every score of a query that sees no key by the same
    amount, so that query attends to all keys as if nothing were masked; lesson 02 (and the
    tiled attention with a bool mask) gives it zeros."""
    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(1, 1, 4, 3, generator=generator, dtype=torch.float64) for _ in range(3))
    mask = torch.zeros(1, 1, 1, 4, dtype=torch.bool)
    openfold = lma_restated(q / math.sqrt(3), k, v, [(OPENFOLD_INF * (mask.double() - 1))
                                                     .expand(1, 1, 4, 4)], 2, 2)
    unmasked = tiled_attention(q, k, v, None, None, 2, 2)
    # scores near -1e9 keep only about 7 digits after the point in float64 (spacing 1.2e-7)
    assert (openfold - unmasked).abs().max() < 1e-6
    assert tiled_attention(q, k, v, None, mask, 2, 2).abs().max() == 0


def test_lma_keeps_every_chunks_weights_for_training_and_tiles_do_not():
    """`_lma` is written in differentiable operations: autograd keeps each key chunk's
    exp-scores for the backward pass, a whole score matrix in all. The tiled Function keeps the
    output and the logsumexp."""
    shapes = [(2, 4, 512, 8)] * 3
    lma = measure_call(lambda q, k, v: lma_restated(q, k, v, [], 128, 128), shapes, train=True)
    tiled = measure_call(lambda q, k, v: tiled_attention(q, k, v, None, None, 128, 128), shapes,
                         train=True)
    score_matrix = 2 * 4 * 512 * 512 * 4
    assert lma.held_after >= score_matrix
    assert tiled.held_after < score_matrix / 20
