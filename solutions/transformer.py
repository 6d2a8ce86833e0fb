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
    # BEGIN SOLUTION lesson 07
    # Hint: pair i (channels 2i and 2i+1) has the angle pos / base**(2i / d_model): build the
    # Hint: angles as an (L, d_model/2) table, then fill the even channels with sin, the odd with cos.
    positions = torch.arange(L, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d_model/2,): 0, 2, 4, ...
    angle = positions / base ** (two_i / d_model)  # (L, d_model/2)
    pe = torch.empty(L, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle)
    return pe.to(dtype)
    # END SOLUTION


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
    # BEGIN SOLUTION lesson 07
    # Hint: angles (L, c/2) = positions[:, None] * base**(-2i/c); repeat them for both halves
    # Hint: (cat([angle, angle], -1)), then x * cos + rotate_half(x) * sin, in x's dtype.
    L, c = x.shape[-2], x.shape[-1]
    half = c // 2
    if positions is None:
        positions = torch.arange(L)
    # the angles in float64 on the CPU (exact, and some devices lack float64), then moved to x
    inv_freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / c)  # (c/2,)
    angle = positions.detach().cpu().to(torch.float64)[:, None] * inv_freq  # (L, c/2)
    angle = torch.cat([angle, angle], dim=-1)  # (L, c): channel i and i + c/2 share an angle
    cos = angle.cos().to(device=x.device, dtype=x.dtype)
    sin = angle.sin().to(device=x.device, dtype=x.dtype)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # rotate_half(x)
    return x * cos + rotated * sin
    # END SOLUTION


class RMSNorm(nn.Module):
    """Root-mean-square norm (Zhang & Sennrich 2019), the norm of Llama and Qwen3.

    x / sqrt(mean(x**2 over the last axis) + eps) * weight. Unlike LayerNorm it subtracts no mean
    and has no bias. weight: (d_model,), initialised to ones.
    """

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        # BEGIN SOLUTION lesson 07
        # Hint: one learnable scale per channel, starting at 1 (nn.Parameter(torch.ones(...))).
        self.weight = nn.Parameter(torch.ones(d_model))
        # END SOLUTION

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (*, d_model) -> (*, d_model), each row divided by its root mean square."""
        # BEGIN SOLUTION lesson 07
        # Hint: mean over the last axis with keepdim=True; eps goes inside the square root.
        rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)
        return x / rms * self.weight
        # END SOLUTION


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
        # BEGIN SOLUTION lesson 07
        # Hint: four submodules, with exactly these names: norm_attn, attn, norm_ffn, ffn.
        self.norm_attn = RMSNorm(d_model)
        self.attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads)
        self.norm_ffn = RMSNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        # END SOLUTION

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """h: (*, L, d_model) -> (*, L, d_model).

        Self-attention: x = norm_attn(h); q, k, v = split_heads(attn.linear_q/k/v(x)); with
        rope=True q and k (not v) go through apply_rope (positions 0..L-1); then
        scaled_dot_product_attention(q, k, v, mask=causal_mask(L)), merge_heads, attn.linear_o,
        added to h. Then the feed-forward branch: h + ffn(norm_ffn(h)).
        """
        # BEGIN SOLUTION lesson 07
        # Hint: pre-norm means the norm sits INSIDE each branch: h + branch(norm(h)), never
        # Hint: norm(h + branch(h)). The residual stream h itself is never normalised.
        L = h.shape[-2]
        x = self.norm_attn(h)
        q = split_heads(self.attn.linear_q(x), self.n_heads)  # (*, n_heads, L, c)
        k = split_heads(self.attn.linear_k(x), self.n_heads)
        v = split_heads(self.attn.linear_v(x), self.n_heads)
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)  # positions along axis -2: 0 .. L-1
        o = scaled_dot_product_attention(q, k, v, mask=causal_mask(L).to(h.device))
        h = h + self.attn.linear_o(merge_heads(o))  # (*, L, d_model)
        return h + self.ffn(self.norm_ffn(h))
        # END SOLUTION


class CrossAttention(nn.Module):
    """Decoder queries attend to encoder keys/values (Vaswani et al.'s encoder-decoder attention).

    linear_q, linear_k, linear_v: nn.Linear(d_model, d_model, bias=False); linear_o:
    nn.Linear(d_model, d_model) with bias. n_heads heads of width d_model // n_heads.
    """

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        # BEGIN SOLUTION lesson 07
        # Hint: the same four projections as MultiHeadAttention, each d_model -> d_model.
        self.linear_q = nn.Linear(d_model, d_model, bias=False)
        self.linear_k = nn.Linear(d_model, d_model, bias=False)
        self.linear_v = nn.Linear(d_model, d_model, bias=False)
        self.linear_o = nn.Linear(d_model, d_model)
        # END SOLUTION

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        """x: (*, L_q, d_model) decoder states; memory: (*, L_k, d_model) encoder outputs;
        memory_mask: (*, L_k) bool, False = encoder padding that no query may attend to.
        Returns (*, L_q, d_model). Heads via split_heads/merge_heads, weights via your
        scaled_dot_product_attention with mask memory_mask[..., None, None, :]; no causal mask
        (the whole source sentence is known before decoding starts).
        """
        # BEGIN SOLUTION lesson 07
        # Hint: q from x, k and v from memory; the mask marks keys, so it gets size-1 axes for
        # Hint: the heads and the queries: memory_mask[..., None, None, :] is (*, 1, 1, L_k).
        q = split_heads(self.linear_q(x), self.n_heads)  # (*, n_heads, L_q, c)
        k = split_heads(self.linear_k(memory), self.n_heads)  # (*, n_heads, L_k, c)
        v = split_heads(self.linear_v(memory), self.n_heads)
        key_mask = None if memory_mask is None else memory_mask[..., None, None, :]
        o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, n_heads, L_q, c)
        return self.linear_o(merge_heads(o))
        # END SOLUTION
