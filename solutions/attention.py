"""Lesson 02: scaled dot-product attention with bias and masks, and a single-head module."""
import torch
from torch import nn

from .softmax import scaled_scores, stable_softmax


def causal_mask(n: int) -> torch.Tensor:
    """Boolean (n, n) mask, True where query i may attend to key j, i.e. j <= i."""
    # BEGIN SOLUTION lesson 02
    return torch.ones(n, n, dtype=torch.bool).tril()
    # END SOLUTION


def padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """Boolean key mask for a batch of sequences padded to `max_len`.

    lengths: (B,) number of real tokens in each sequence.
    returns (B, 1, max_len): True for real keys. The size-1 axis stands for the queries, so the
    mask broadcasts against scores of shape (B, q, k).
    """
    # BEGIN SOLUTION lesson 02
    positions = torch.arange(max_len, device=lengths.device)
    return (positions < lengths[:, None])[:, None, :]
    # END SOLUTION


def attention_weights(q, k, bias=None, mask=None):
    """Softmax attention weights.

    q: (*, q, c), k: (*, k, c)
    bias: optional, broadcastable to (*, q, k); added to the scaled scores before the softmax.
    mask: optional bool, broadcastable to (*, q, k); False marks keys a query must not see.
    returns (*, q, k): each row sums to 1 over the keys it may see. A query that may see no key
    at all gets a row of zeros (a choice: no NaN, and nothing from padding leaks into it).
    """
    # BEGIN SOLUTION lesson 02
    # Hint: scores from lesson 01, plus the bias; masked scores become -inf before the softmax.
    scores = scaled_scores(q, k)
    if bias is not None:
        scores = scores + bias
    if mask is None:
        return stable_softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    # a row that is all -inf would give (-inf) - (-inf) = NaN; zero it instead
    sees_something = mask.expand_as(scores).any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~sees_something, 0.0)
    return stable_softmax(scores, dim=-1) * sees_something
    # END SOLUTION


def scaled_dot_product_attention(q, k, v, bias=None, mask=None):
    """softmax(q kᵀ / sqrt(c) + bias, masked) v over any leading axes.

    q: (*, q, c), k: (*, k, c), v: (*, k, c_v); bias and mask as in `attention_weights`.
    returns (*, q, c_v).
    """
    # BEGIN SOLUTION lesson 02
    return attention_weights(q, k, bias=bias, mask=mask) @ v
    # END SOLUTION


class SingleHeadAttention(nn.Module):
    """Self-attention with one head: project x to q, k, v, attend, project back to c_in.

    Q, K and V have no bias (as in AlphaFold; lesson 03 shows why a bias there adds little);
    the output projection has one, since its result is added back to the input.
    """

    def __init__(self, c_in: int, c: int):
        super().__init__()
        # BEGIN SOLUTION lesson 02
        self.linear_q = nn.Linear(c_in, c, bias=False)
        self.linear_k = nn.Linear(c_in, c, bias=False)
        self.linear_v = nn.Linear(c_in, c, bias=False)
        self.linear_o = nn.Linear(c, c_in)
        # END SOLUTION

    def forward(self, x, bias=None, mask=None):
        """x: (*, L, c_in); bias, mask: broadcastable to (*, L, L). returns (*, L, c_in)."""
        # BEGIN SOLUTION lesson 02
        q, k, v = self.linear_q(x), self.linear_k(x), self.linear_v(x)
        return self.linear_o(scaled_dot_product_attention(q, k, v, bias=bias, mask=mask))
        # END SOLUTION
