import math


def sinusoidal_encoding(L: int, d_model: int, base: float = 10000.0,
                        dtype=torch.float64) -> torch.Tensor:
    """exp/log frequencies and an interleaving stack in place of strided assignment."""
    positions = torch.arange(L, dtype=torch.float64).unsqueeze(-1)
    frequencies = torch.exp(-math.log(base) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angle = positions * frequencies
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2).to(dtype)


def apply_rope(x: torch.Tensor, positions: torch.Tensor | None = None,
               base: float = 10000.0) -> torch.Tensor:
    """The rotation written out on the two halves, as complex-free 2x2 rotations."""
    half = x.shape[-1] // 2
    if positions is None:
        positions = torch.arange(x.shape[-2], device=x.device)
    i = torch.arange(half, dtype=torch.float64, device=x.device)
    theta = torch.outer(positions.to(device=x.device, dtype=torch.float64),
                        torch.pow(base, -2.0 * i / x.shape[-1]))
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    first, second = x[..., :half], x[..., half:]
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


class RMSNorm(nn.Module):
    """rsqrt of the mean square, computed with torch.mean over an explicit square."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps))


class DecoderBlock(nn.Module):
    """The block with the causal mask as a bool tril and the heads by unflatten/transpose."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, rope: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.rope = rope
        self.norm_attn = RMSNorm(d_model)
        self.attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads)
        self.norm_ffn = RMSNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        L = h.shape[-2]
        x = self.norm_attn(h)
        heads = [lin(x).unflatten(-1, (self.n_heads, -1)).transpose(-3, -2)
                 for lin in (self.attn.linear_q, self.attn.linear_k, self.attn.linear_v)]
        q, k, v = heads
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        allowed = torch.ones(L, L, dtype=torch.bool, device=h.device).tril()
        o = scaled_dot_product_attention(q, k, v, mask=allowed)
        attended = self.attn.linear_o(o.transpose(-3, -2).flatten(-2))
        h = h + attended
        return h + self.ffn(self.norm_ffn(h))


class CrossAttention(nn.Module):
    """Cross-attention with the weights by einsum and the padding as a -inf additive bias."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.linear_q = nn.Linear(d_model, d_model, bias=False)
        self.linear_k = nn.Linear(d_model, d_model, bias=False)
        self.linear_v = nn.Linear(d_model, d_model, bias=False)
        self.linear_o = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, memory: torch.Tensor,
                memory_mask: torch.Tensor | None = None) -> torch.Tensor:
        q = self.linear_q(x).unflatten(-1, (self.n_heads, -1))  # (*, L_q, H, c)
        k = self.linear_k(memory).unflatten(-1, (self.n_heads, -1))  # (*, L_k, H, c)
        v = self.linear_v(memory).unflatten(-1, (self.n_heads, -1))
        scores = torch.einsum("...qhc,...khc->...hqk", q, k) / math.sqrt(q.shape[-1])
        if memory_mask is not None:
            scores = scores.masked_fill(~memory_mask[..., None, None, :], float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # a source of padding only: 0
        o = torch.einsum("...hqk,...khc->...qhc", weights, v)
        return self.linear_o(o.flatten(-2))
