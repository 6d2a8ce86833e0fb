from functools import partial


def split_heads(x: torch.Tensor, N_head: int) -> torch.Tensor:
    """unflatten + movedim in place of view + transpose."""
    return x.unflatten(-1, (N_head, -1)).movedim(-2, -3)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    return x.movedim(-3, -2).flatten(-2)


def masked_mean(x: torch.Tensor, mask: torch.Tensor | None, dim: int) -> torch.Tensor:
    """sum / count in both cases; torch.where leaves the padding out."""
    if mask is None:
        return x.sum(dim=dim) / x.shape[dim]
    keep = mask.unsqueeze(-1)
    total = torch.where(keep, x, 0.0).sum(dim=dim)
    return total / keep.sum(dim=dim).clamp(min=1)


class MultiHeadAttention(nn.Module):
    """The same module with the heads handled by reshape/permute and global attention by einsum."""

    def __init__(self, c_in: int, c: int, N_head: int, attn_dim: int = -2, gated: bool = False,
                 is_global: bool = False, use_bias_for_embeddings: bool = False):
        super().__init__()
        self.c = c
        self.N_head = N_head
        self.attn_dim = attn_dim
        self.gated = gated
        self.is_global = is_global
        # built in the order the exercise's blocks impose (lesson 03's four layers, then lesson
        # 05's shared k and v): the lessons' cells that use PyTorch's random initialisation
        # depend on the order the layers draw their weights in
        projection = partial(nn.Linear, c_in, bias=use_bias_for_embeddings)
        self.linear_q, self.linear_k, self.linear_v = (projection(N_head * c) for _ in "qkv")
        self.linear_o = nn.Linear(N_head * c, c_in)
        if is_global:
            self.linear_k, self.linear_v = projection(c), projection(c)
        if gated:
            self.linear_g = nn.Linear(c_in, N_head * c)
            nn.init.zeros_(self.linear_g.weight)
            nn.init.ones_(self.linear_g.bias)

    def forward(self, x, bias=None, attention_mask=None):
        # a negative attn_dim counts from x's channel axis, which the mask does not have
        mask_dim = self.attn_dim % x.ndim
        x = x.movedim(self.attn_dim, -2)
        if attention_mask is not None:
            attention_mask = attention_mask.movedim(mask_dim, -1)
        if self.is_global:
            if bias is not None:
                raise ValueError("global attention takes no bias (AF2 gives it none)")
            o = self._global_attention(x, attention_mask)
        else:
            o = self._attention(x, bias, attention_mask)
        if self.gated:
            o = o * torch.sigmoid(self.linear_g(x))
        return self.linear_o(o).movedim(-2, self.attn_dim)

    def _heads(self, t):
        """(*, L, N_head*c) -> (*, N_head, L, c) by reshape and permute."""
        *batch, L, _ = t.shape
        t = t.reshape(*batch, L, self.N_head, self.c)
        n = len(batch)
        return t.permute(*range(n), n + 1, n, n + 2)

    def _attention(self, x, bias, attention_mask):
        q, k, v = (self._heads(layer(x)) for layer in (self.linear_q, self.linear_k, self.linear_v))
        key_mask = None if attention_mask is None else attention_mask.unsqueeze(-2).unsqueeze(-2)
        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)
        *batch, N_head, L, c = o.shape
        return o.transpose(-3, -2).reshape(*batch, L, N_head * c)

    def _global_attention(self, x, attention_mask):
        q = self.linear_q(masked_mean(x, attention_mask, dim=-2))  # (*, N_head*c)
        q = q.unflatten(-1, (self.N_head, self.c))  # (*, N_head, c)
        k, v = self.linear_k(x), self.linear_v(x)  # (*, L, c), one head shared by all
        scores = torch.einsum("...hc,...lc->...hl", q, k) / self.c ** 0.5
        if attention_mask is not None:
            scores = scores.masked_fill(~attention_mask.unsqueeze(-2), float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # an all-padding slice: 0
        o = torch.einsum("...hl,...lc->...hc", weights, v).flatten(-2)  # (*, N_head*c)
        return o.unsqueeze(-2).expand(*x.shape[:-1], -1)
