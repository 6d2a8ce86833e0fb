# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 02: scaled dot-product attention with bias and masks, and a single-head module."""
import torch
from torch import nn

from .softmax import scaled_scores, stable_softmax


def causal_mask(n: int) -> torch.Tensor:
    """Boolean (n, n) mask, True where query i may attend to key j, i.e. j <= i."""
    raise NotImplementedError("lesson 02: write causal_mask in exercises/attention.py")


def padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """Boolean key mask for a batch of sequences padded to `max_len`.

    lengths: (B,) number of real tokens in each sequence.
    returns (B, 1, max_len): True for real keys. The size-1 axis stands for the queries, so the
    mask broadcasts against scores of shape (B, q, k).
    """
    raise NotImplementedError("lesson 02: write padding_mask in exercises/attention.py")


def attention_weights(q, k, bias=None, mask=None):
    """Softmax attention weights.

    q: (*, q, c), k: (*, k, c)
    bias: optional, broadcastable to (*, q, k); added to the scaled scores before the softmax.
    mask: optional bool, broadcastable to (*, q, k); False marks keys a query must not see.
    returns (*, q, k): each row sums to 1 over the keys it may see. A query that may see no key
    at all gets a row of zeros (a choice: no NaN, and nothing from padding leaks into it).
    """
    # Hint: scores from lesson 01, plus the bias; masked scores become -inf before the softmax.
    raise NotImplementedError("lesson 02: write attention_weights in exercises/attention.py")


def scaled_dot_product_attention(q, k, v, bias=None, mask=None):
    """softmax(q kᵀ / sqrt(c) + bias, masked) v over any leading axes.

    q: (*, q, c), k: (*, k, c), v: (*, k, c_v); bias and mask as in `attention_weights`.
    returns (*, q, c_v).
    """
    raise NotImplementedError("lesson 02: write scaled_dot_product_attention in exercises/attention.py")


class SingleHeadAttention(nn.Module):
    """Self-attention with one head: project x to q, k, v, attend, project back to c_in.

    Q, K and V have no bias (as in AlphaFold; lesson 03 shows why a bias there adds little);
    the output projection has one, since its result is added back to the input.
    """

    def __init__(self, c_in: int, c: int):
        super().__init__()
        raise NotImplementedError("lesson 02: write SingleHeadAttention.__init__ in exercises/attention.py")

    def forward(self, x, bias=None, mask=None):
        """x: (*, L, c_in); bias, mask: broadcastable to (*, L, L). returns (*, L, c_in)."""
        raise NotImplementedError("lesson 02: write SingleHeadAttention.forward in exercises/attention.py")
