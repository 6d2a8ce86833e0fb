"""Lesson 09's arithmetic: the scores an attention call computes (counted, not assumed), the
FLOPs of attention forward and backward, and the bytes that pass through slow memory.

    count_scores(fn, channels)     run fn() and count the query-key scores it computes: every
                                   matrix product that contracts over `channels` (q kᵀ), and every
                                   exp of a (.., rows, keys) tile (the softmax of those scores);
                                   the larger of the two counts (a score computed without a
                                   matmul is still exp'd once). Independent of the code counted.
    attention_flops(L, d, ...)     4·L²·d per head for the forward (q kᵀ and P v, 2 FLOPs per
                                   multiply-add); the backward with recomputation 5 matmuls
                                   (2.5 × the forward), without it 4 (2 ×): FlashAttention-2 §4.1
    hbm_traffic(N, d, M, ...)      elements read and written in slow memory by standard attention,
                                   Θ(N·d + N²), and by FlashAttention, Θ(N²·d²/M) (FlashAttention,
                                   Theorem 2), with the constants of their Algorithms 0 and 1
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_MATMULS = {"mm", "bmm", "addmm", "baddbmm"}


class _ScoreCounter(TorchDispatchMode):
    """Counts, op by op, the outputs of matrix products that contract over `channels` and the
    entries of every exp whose last axis is longer than 1 (a tile of weights, not a per-row
    rescale factor)."""

    def __init__(self, channels: int):
        super().__init__()
        self.channels = channels
        self.products = 0
        self.exps = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in _MATMULS:
            a, b = args[-2], args[-1]  # addmm/baddbmm: (bias, a, b)
            if a.shape[-1] == self.channels and b.shape[-2] == self.channels:
                self.products += out.numel()
        elif name in ("exp", "exp_") and out.dim() >= 2 and out.shape[-1] > 1:
            self.exps += out.numel()
        return out


def count_scores(fn: Callable[[], object], channels: int) -> int:
    """The number of query-key scores fn() computes (every leading axis counted), under no_grad:
    choose `channels` (c of q and k) unlike any other axis of the call."""
    counter = _ScoreCounter(channels)
    with torch.no_grad(), counter:
        fn()
    return max(counter.products, counter.exps)


def attention_flops(L_q: int, L_k: int, d: int, heads: int = 1, causal: bool = False) -> dict:
    """FLOPs of one attention call (2 per multiply-add), as FlashAttention-2 counts them (§4.1):
    forward 4·L_q·L_k·d per head (q kᵀ and P v); backward 5 matmuls with recomputation (the
    scores again, dV, dP, dQ, dK), 4 without (a naive backward reads P back). Causal: half."""
    forward = 4 * L_q * L_k * d * heads / (2 if causal else 1)
    return {"forward": forward, "backward naive": 2.0 * forward,
            "backward recompute": 2.5 * forward,
            "training naive": 3.0 * forward, "training recompute": 3.5 * forward}


def hbm_traffic(N: int, d: int, sram_elements: int) -> dict:
    """Elements moved between slow memory and the chip by one head's forward pass.

    standard (FlashAttention's Algorithm 0): read Q, K (2Nd), write S (N²), read S and write P
    (2N²), read P and V (N² + Nd), write O (Nd): 4Nd + 4N².
    tiled (Algorithm 1, blocks B_c = ceil(M / 4d), B_r = min(B_c, d)): K and V read once (2Nd);
    for each of the T_c = ceil(N / B_c) key blocks, Q, O, l, m read and O, l, m written
    (T_c · (3Nd + 4N)): Θ(N²d²/M), since T_c·Nd = N²d·4d/M.
    """
    block_c = math.ceil(sram_elements / (4 * d))
    passes = math.ceil(N / block_c)
    return {"standard": 4 * N * d + 4 * N * N, "tiled": 2 * N * d + passes * (3 * N * d + 4 * N),
            "block_c": block_c, "block_r": min(block_c, d), "passes over Q": passes}
