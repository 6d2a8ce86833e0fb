# check: 07.decoder_block


class DecoderBlock(nn.Module):
    """A block that keeps a dropout of probability 0 (a configuration switch): it draws no
    random numbers, so it is the same function."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, rope: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.rope = rope
        self.norm_attn = RMSNorm(d_model)
        self.attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads)
        self.norm_ffn = RMSNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(0.0)

    def forward(self, h):
        L = h.shape[-2]
        x = self.norm_attn(h)
        q = split_heads(self.attn.linear_q(x), self.n_heads)
        k = split_heads(self.attn.linear_k(x), self.n_heads)
        v = split_heads(self.attn.linear_v(x), self.n_heads)
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        o = scaled_dot_product_attention(q, k, v, mask=causal_mask(L).to(h.device))
        h = h + self.dropout(self.attn.linear_o(merge_heads(o)))
        return h + self.dropout(self.ffn(self.norm_ffn(h)))
