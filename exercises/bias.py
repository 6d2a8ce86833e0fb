# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 04: attention bias, a prior added to the scores before the softmax, and how it broadcasts.

Every member of the family below returns a tensor that ends in (N_head, q, k) (or size-1 axes in
their place), so it adds to scores of shape (*, N_head, q, k) once its leading axes line up:
`broadcastable_bias` makes them line up.

- `padding_bias`: 0 for real keys, a huge negative number for padding keys;
- `alibi_bias`: a fixed penalty growing linearly with the distance |i - j|, one slope per head;
- `relative_position_bucket` + `RelativePositionBias`: T5's learned scalar per head and per
  bucket of relative distance (exact buckets near 0, logarithmic ones further out);
- `PairBias`: AlphaFold2's bias computed from the pair representation z.
"""
import math

import torch
from torch import nn


def broadcastable_bias(bias: torch.Tensor, scores_ndim: int) -> torch.Tensor:
    """A view of `bias` that broadcasts against scores with `scores_ndim` axes.

    bias: (*batch, N_head, q, k), where *batch are the leading axes of the scores that the bias
        also has (possibly none); the scores are (*batch, *extra, N_head, q, k).
    returns (*batch, 1, ..., 1, N_head, q, k) with one size-1 axis per axis of *extra, inserted
    between the bias's batch axes and its last three axes.

    Example: scores (B, S, N_head, R, R) of row attention and a pair bias (B, N_head, R, R):
    the result is (B, 1, N_head, R, R), the same bias for each of the S sequences.
    """
    # Hint: n = scores_ndim - bias.ndim axes are missing; put them after bias.shape[:-3].
    raise NotImplementedError("lesson 04: write broadcastable_bias in exercises/bias.py")


def add_bias(scores: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """scores (*batch, *extra, N_head, q, k) + bias (*batch, N_head, q, k), broadcast over *extra."""
    return scores + broadcastable_bias(bias, scores.ndim)


def padding_bias(mask: torch.Tensor, big: float = 1e9) -> torch.Tensor:
    """Additive form of a key padding mask.

    mask: (*, k) bool, True for real keys. returns (*, 1, 1, k) float: 0 for real keys and -big
    for padding (AF2 uses 1e9), broadcasting over heads and queries.
    """
    bias = (mask.to(torch.get_default_dtype()) - 1.0) * big
    return bias[..., None, None, :]


def alibi_slopes(N_head: int) -> torch.Tensor:
    """ALiBi's fixed per-head slopes (Press et al. 2022): a geometric sequence.

    For a power of two, head h (0-based) gets 2^(-8 (h+1) / N_head). For other head counts the
    paper takes the slopes of the nearest power of two below and fills up with every other slope
    of twice that count.
    """
    def power_of_two_slopes(n: int) -> list[float]:
        start = 2.0 ** (-8.0 / n)
        return [start ** (h + 1) for h in range(n)]

    if math.log2(N_head).is_integer():
        slopes = power_of_two_slopes(N_head)
    else:
        below = 2 ** math.floor(math.log2(N_head))
        slopes = power_of_two_slopes(below) + power_of_two_slopes(2 * below)[0::2][:N_head - below]
    return torch.tensor(slopes, dtype=torch.float64)


def alibi_bias(N_head: int, L: int) -> torch.Tensor:
    """(N_head, L, L): -slope_h * |i - j|. Near keys cost little, far keys a lot; no parameters.

    ALiBi was made for causal language models, where a query only sees j <= i and the distance is
    i - j; |i - j| is the usual extension to attention in both directions.
    """
    positions = torch.arange(L)
    # negated as integers, so the diagonal is 0 rather than -0.0
    minus_distance = -(positions[:, None] - positions[None, :]).abs()  # (L, L)
    return alibi_slopes(N_head)[:, None, None] * minus_distance.to(torch.float64)


def relative_position_bucket(relative_position: torch.Tensor, bidirectional: bool = True,
                             num_buckets: int = 32, max_distance: int = 128) -> torch.Tensor:
    """T5's bucket index for each relative position j - i (key minus query), an int64 tensor.

    bidirectional: half of the buckets for keys after the query (j > i), half for the rest;
        otherwise (causal) only keys at or before the query get distinct buckets.
    Within each half, the first half of the buckets are exact distances 0, 1, 2, ...; the others
    grow logarithmically in width, so that the scale would reach `max_distance` one bucket past
    the last: the last bucket starts below `max_distance` and takes every distance beyond.
    """
    buckets = torch.zeros_like(relative_position)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (relative_position > 0).long() * num_buckets
        distance = relative_position.abs()
    else:
        distance = (-relative_position).clamp_min(0)  # keys after the query all land in bucket 0
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    # log-spaced buckets between max_exact and max_distance (clamp_min only avoids log(0))
    log_ratio = torch.log(distance.double().clamp_min(1.0) / max_exact) / math.log(max_distance / max_exact)
    if_large = max_exact + (log_ratio * (num_buckets - max_exact)).long()
    if_large = if_large.clamp_max(num_buckets - 1)
    return buckets + torch.where(is_small, distance, if_large)


class RelativePositionBias(nn.Module):
    """T5's relative position bias: one learned scalar per head and per distance bucket."""

    def __init__(self, N_head: int, num_buckets: int = 32, max_distance: int = 128,
                 bidirectional: bool = True):
        super().__init__()
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional
        self.embedding = nn.Embedding(num_buckets, N_head)

    def forward(self, L_q: int, L_k: int) -> torch.Tensor:
        """returns (N_head, L_q, L_k): bias[h, i, j] = embedding[bucket(j - i), h]."""
        relative = torch.arange(L_k)[None, :] - torch.arange(L_q)[:, None]  # (L_q, L_k)
        buckets = relative_position_bucket(relative, self.bidirectional, self.num_buckets,
                                           self.max_distance)
        return self.embedding(buckets).movedim(-1, -3)  # (L_q, L_k, N_head) -> (N_head, L_q, L_k)


class PairBias(nn.Module):
    """AlphaFold2's pair bias: each head's prior for residue pair (i, j), read off z[i, j].

    LayerNorm(z), then a bias-free Linear from c_z channels to one number per head, then the head
    axis moved in front of the two residue axes (AF2 algorithm 7, lines 3 and 5).
    """

    def __init__(self, c_z: int, N_head: int):
        super().__init__()
        # Hint: nn.LayerNorm(c_z), and nn.Linear(c_z, N_head) without a bias (as in AF2).
        raise NotImplementedError("lesson 04: write PairBias.__init__ in exercises/bias.py")

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """z: (*, R, R, c_z) -> (*, N_head, R, R): entry [..., h, i, j] from z[..., i, j, :]."""
        # Hint: the heads come out last, (*, R, R, N_head); movedim puts them before i and j.
        raise NotImplementedError("lesson 04: write PairBias.forward in exercises/bias.py")
