def causal_mask(n: int) -> torch.Tensor:
    """Compare positions instead of taking a triangle."""
    return torch.arange(n)[:, None] >= torch.arange(n)[None, :]


def padding_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    return (torch.arange(max_len, device=lengths.device) < lengths.unsqueeze(-1)).unsqueeze(-2)


def attention_weights(q, k, bias=None, mask=None):
    """torch.softmax; masked scores filled with the dtype's lowest number, blind rows zeroed by where."""
    scores = scaled_scores(q, k)
    if bias is not None:
        scores = scores + bias
    if mask is None:
        return torch.softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return torch.where(mask.any(dim=-1, keepdim=True), weights, 0.0)


def scaled_dot_product_attention(q, k, v, bias=None, mask=None):
    return torch.einsum("...qk,...kc->...qc", attention_weights(q, k, bias=bias, mask=mask), v)


class SingleHeadAttention(nn.Module):
    """Same parameters; forward through torch.nn.functional.linear."""

    def __init__(self, c_in: int, c: int):
        super().__init__()
        self.linear_q = nn.Linear(c_in, c, bias=False)
        self.linear_k = nn.Linear(c_in, c, bias=False)
        self.linear_v = nn.Linear(c_in, c, bias=False)
        self.linear_o = nn.Linear(c, c_in)

    def forward(self, x, bias=None, mask=None):
        linear = torch.nn.functional.linear
        q, k, v = (linear(x, layer.weight) for layer in (self.linear_q, self.linear_k, self.linear_v))
        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=mask)
        return linear(o, self.linear_o.weight, self.linear_o.bias)
