# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 07: the Transformer around attention.

Positions (sinusoidal encoding, rotary embedding), RMSNorm, a pre-norm decoder block built from
your own lesson-02/03 pieces, and cross-attention from a decoder to an encoder. The module and
parameter names of `DecoderBlock` are those of lesson 08's tiny language model, so a block trained
there loads into yours.
"""
import torch
from torch import nn

from .attention import causal_mask, scaled_dot_product_attention  # lesson 02 (your own)
from .mha import MultiHeadAttention, merge_heads, split_heads  # lesson 03 (your own)


def sinusoidal_encoding(L: int, d_model: int, base: float = 10000.0,
                        dtype=torch.float64) -> torch.Tensor:
    """Sinusoidal positional encoding of Vaswani et al. (2017), shape (L, d_model).

    PE[pos, 2i] = sin(pos / base**(2i/d_model)), PE[pos, 2i+1] = cos(pos / base**(2i/d_model)):
    sin on the even channels, cos on the odd ones, channels 2i and 2i+1 sharing one frequency.
    Positions count from 0; d_model must be even. Returned in `dtype`.
    """
    # Hint: pair i (channels 2i and 2i+1) has the angle pos / base**(2i / d_model): build the
    # Hint: angles as an (L, d_model/2) table, then fill the even channels with sin, the odd with cos.
    raise NotImplementedError("lesson 07: write sinusoidal_encoding in exercises/transformer.py")


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None,
               base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding (RoPE) of x: (*, L, c), c even, positions along axis -2.

    positions: (L,) integer or float, default arange(L).
    The "rotate-half" convention of Hugging Face Llama/Qwen3 (the gated-attention paper's code):
    channel i pairs with channel i + c/2 and the pair turns by the angle pos * base**(-2i/c),
    for i < c/2:
        out = x * cos + rotate_half(x) * sin,  rotate_half(x) = cat(-x[..., c/2:], x[..., :c/2]).
    Returns a new tensor of x's shape and dtype; x is not modified.
    """
    # Hint: angles (L, c/2) = positions[:, None] * base**(-2i/c); repeat them for both halves
    # Hint: (cat([angle, angle], -1)), then x * cos + rotate_half(x) * sin, in x's dtype.
    raise NotImplementedError("lesson 07: write apply_rope in exercises/transformer.py")


class RMSNorm(nn.Module):
    """Root-mean-square norm (Zhang & Sennrich 2019), the norm of Llama and Qwen3.

    x / sqrt(mean(x**2 over the last axis) + eps) * weight. Unlike LayerNorm it subtracts no mean
    and has no bias. weight: (d_model,), initialised to ones.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        # Hint: one learnable scale per channel, starting at 1 (nn.Parameter(torch.ones(...))).
        raise NotImplementedError("lesson 07: write RMSNorm.__init__ in exercises/transformer.py")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (*, d_model) -> (*, d_model), each row divided by its root mean square."""
        # Hint: mean over the last axis with keepdim=True; eps goes inside the square root.
        raise NotImplementedError("lesson 07: write RMSNorm.forward in exercises/transformer.py")


class DecoderBlock(nn.Module):
    """Pre-norm decoder block: h = h + SelfAttention(RMSNorm(h)); h = h + FFN(RMSNorm(h)).

    Causal self-attention built from your own lesson-03 pieces. Module and parameter names are
    binding (lesson 08's tiny language model uses the same ones):
    norm_attn (RMSNorm), attn (MultiHeadAttention(d_model, d_model // n_heads, n_heads):
    linear_q/k/v without bias, linear_o with bias), norm_ffn (RMSNorm),
    ffn = Sequential(Linear(d_model, d_ff), GELU(), Linear(d_ff, d_model)).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, rope: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.rope = rope
        # Hint: four submodules, with exactly these names: norm_attn, attn, norm_ffn, ffn.
        raise NotImplementedError("lesson 07: write DecoderBlock.__init__ in exercises/transformer.py")

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h: (*, L, d_model) -> (*, L, d_model).

        Self-attention: x = norm_attn(h); q, k, v = split_heads(attn.linear_q/k/v(x)); with
        rope=True q and k (not v) go through apply_rope (positions 0..L-1); then
        scaled_dot_product_attention(q, k, v, mask=causal_mask(L)), merge_heads, attn.linear_o,
        added to h. Then the feed-forward branch: h + ffn(norm_ffn(h)).
        """
        # Hint: pre-norm means the norm sits INSIDE each branch: h + branch(norm(h)), never
        # Hint: norm(h + branch(h)). The residual stream h itself is never normalised.
        raise NotImplementedError("lesson 07: write DecoderBlock.forward in exercises/transformer.py")


class CrossAttention(nn.Module):
    """Decoder queries attend to encoder keys/values (Vaswani et al.'s encoder-decoder attention).

    linear_q, linear_k, linear_v: nn.Linear(d_model, d_model, bias=False); linear_o:
    nn.Linear(d_model, d_model) with bias. n_heads heads of width d_model // n_heads.
    """

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        # Hint: the same four projections as MultiHeadAttention, each d_model -> d_model.
        raise NotImplementedError("lesson 07: write CrossAttention.__init__ in exercises/transformer.py")

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x: (*, L_q, d_model) decoder states; memory: (*, L_k, d_model) encoder outputs;
        memory_mask: (*, L_k) bool, False = encoder padding that no query may attend to.
        Returns (*, L_q, d_model). Heads via split_heads/merge_heads, weights via your
        scaled_dot_product_attention with mask memory_mask[..., None, None, :]; no causal mask
        (the whole source sentence is known before decoding starts).
        """
        # Hint: q from x, k and v from memory; the mask marks keys, so it gets size-1 axes for
        # Hint: the heads and the queries: memory_mask[..., None, None, :] is (*, 1, 1, L_k).
        raise NotImplementedError("lesson 07: write CrossAttention.forward in exercises/transformer.py")
