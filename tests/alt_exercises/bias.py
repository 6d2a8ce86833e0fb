def broadcastable_bias(bias: torch.Tensor, scores_ndim: int) -> torch.Tensor:
    """One unsqueeze per missing axis, each in front of (N_head, q, k)."""
    for _ in range(scores_ndim - bias.ndim):
        bias = bias.unsqueeze(-4)
    return bias


class PairBias(nn.Module):
    """Same parameters; the head axis moved with permute."""

    def __init__(self, c_z: int, N_head: int):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        bias = self.linear_z(self.layer_norm_z(z))
        return bias.permute(*range(bias.ndim - 3), -1, -3, -2)
