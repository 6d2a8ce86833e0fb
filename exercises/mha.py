# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lessons 03, 05, 06: multi-head attention, its global variant, and the output gate.

One module with AlphaFold2's knobs (as in alphafold-decoded's mha.py, written anew here):
`N_head` heads of width `c`, attention along the axis `attn_dim` (rows or columns of an MSA),
`is_global` for AF2's global column attention, `gated` for the sigmoid output gate.
"""
import torch
from torch import nn

from .attention import scaled_dot_product_attention


def split_heads(x: torch.Tensor, N_head: int) -> torch.Tensor:
    """(*, L, N_head*c) -> (*, N_head, L, c): channel block h becomes head h."""
    # Hint: view the last axis as (N_head, c), then move the head axis in front of L.
    raise NotImplementedError("lesson 03: write split_heads in exercises/mha.py")


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(*, N_head, L, c) -> (*, L, N_head*c): the inverse of split_heads (heads concatenated)."""
    # Hint: transpose back to (*, L, N_head, c), then reshape (view fails after a transpose).
    raise NotImplementedError("lesson 03: write merge_heads in exercises/mha.py")


def key_mask_to_flags(mask: torch.Tensor) -> torch.Tensor:
    """Lesson 02's key mask (*, 1, L) (e.g. from `padding_mask`) as lesson 03's flags (*, L).

    Lesson 02's masks have the shape of the scores (*, q, k); `MultiHeadAttention` takes one
    flag per position instead (True = a real position), which only a mask that is the same for
    every query can be written as. A causal mask, which differs per query, raises ValueError.
    """
    if mask.ndim < 2:
        raise ValueError(f"a lesson-02 mask has a query and a key axis, got shape {tuple(mask.shape)}")
    if not bool((mask == mask[..., :1, :]).all()):
        raise ValueError("this mask differs between queries (a causal mask?): it has no "
                         "one-flag-per-position form; pass it to scaled_dot_product_attention")
    return mask[..., 0, :]


def flags_to_key_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Lesson 03's flags (*, L) as a lesson-02 key mask (*, 1, L), broadcastable to (*, q, L)."""
    return attention_mask[..., None, :]


def masked_mean(x: torch.Tensor, mask: torch.Tensor | None, dim: int) -> torch.Tensor:
    """Mean of x over `dim`, counting only positions where mask is True.

    x: (*, L, *, c) with L at `dim`; mask: x.shape[:-1] (one flag per position) or None.
    returns x with `dim` removed. A slice with no True position gives 0, not NaN.
    """
    # Hint: sum(x * mask) / count(mask) along dim; the mask needs a trailing size-1 axis.
    raise NotImplementedError("lesson 05: write masked_mean in exercises/mha.py")


class MultiHeadAttention(nn.Module):
    """Multi-head attention along one axis of x, with AlphaFold2's options.

    c_in: channels of x; c: channels per head; N_head: number of heads.
    attn_dim: the axis of x that attention runs along (-2: along rows of an MSA x of shape
        (*, S, R, c_in); -3: along columns).
    gated: multiply the attention output by sigmoid(linear_g(x)) per channel (lesson 06).
    is_global: one query per slice, the masked mean over attn_dim, and one key/value head shared
        by all query heads (AF2's global column attention, lesson 05).
    use_bias_for_embeddings: whether linear_q/k/v carry a bias (AF2: no). linear_o, and
        linear_g when gated, always have one.
    """

    def __init__(self, c_in: int, c: int, N_head: int, attn_dim: int = -2, gated: bool = False,
                 is_global: bool = False, use_bias_for_embeddings: bool = False):
        super().__init__()
        self.c = c
        self.N_head = N_head
        self.attn_dim = attn_dim
        self.gated = gated
        self.is_global = is_global
        # Hint: one Linear each for q, k, v to N_head*c channels (the joint projection).
        raise NotImplementedError("lesson 03: write MultiHeadAttention.__init__ in exercises/mha.py")
        if is_global:
            # Hint: a single key head and a single value head, shared by all query heads.
            raise NotImplementedError("lesson 05: write MultiHeadAttention.__init__ in exercises/mha.py")
        if gated:
            # Hint: AF2 starts the gate open: weight 0, bias 1, so sigmoid(1) = 0.73 everywhere.
            raise NotImplementedError("lesson 06: write MultiHeadAttention.__init__ in exercises/mha.py")

    def forward(self, x, bias=None, attention_mask=None):
        """x: (*, L, *, c_in) with L at attn_dim.

        bias: optional, broadcastable to the scores (*', N_head, L, L), where *' are the axes of
            x other than attn_dim and the channels (lesson 04 shows how to make it so).
        attention_mask: optional bool of shape x.shape[:-1]; False marks padding positions,
            which no query may attend to.
        returns (*, L, *, c_in), like x.
        """
        x = x.movedim(self.attn_dim, -2)
        if attention_mask is not None:
            mask_dim = self.attn_dim if self.attn_dim >= 0 else self.attn_dim + 1
            attention_mask = attention_mask.movedim(mask_dim, -1)
        if self.is_global:
            if bias is not None:
                raise ValueError("global attention takes no bias (AF2 gives it none)")
            o = self._global_attention(x, attention_mask)
        else:
            o = self._attention(x, bias, attention_mask)
        if self.gated:
            # Hint: the gate is computed from the input x, not from the attention output o.
            raise NotImplementedError("lesson 06: write MultiHeadAttention.forward in exercises/mha.py")
        return self.linear_o(o).movedim(-2, self.attn_dim)

    def _attention(self, x, bias, attention_mask):
        """x: (*, L, c_in); attention_mask: (*, L) or None. returns (*, L, N_head*c)."""
        # Hint: project, split_heads, your scaled_dot_product_attention with the bias and the key
        # Hint: mask attention_mask[..., None, None, :] (shape (*, 1, 1, L)), then merge_heads.
        raise NotImplementedError("lesson 03: write MultiHeadAttention._attention in exercises/mha.py")

    def _global_attention(self, x, attention_mask):
        """x: (*, L, c_in); attention_mask: (*, L) or None. returns (*, L, N_head*c)."""
        # Hint: average x over L (masked), then q has one row per head; k, v one shared head.
        raise NotImplementedError("lesson 05: write MultiHeadAttention._global_attention in exercises/mha.py")
