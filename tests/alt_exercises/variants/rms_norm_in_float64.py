# check: 07.rms_norm


class RMSNorm(nn.Module):
    """Computed in float64 whatever x's dtype, returned in x's dtype."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x):
        x64 = x.double()
        normed = x64 * torch.rsqrt(x64.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (normed * self.weight.double()).to(x.dtype)
