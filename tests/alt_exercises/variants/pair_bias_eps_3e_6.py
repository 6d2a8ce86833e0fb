# check: 04.pair_bias


class PairBias(nn.Module):
    """The pair bias with a LayerNorm eps of 3e-6, not a power of ten."""

    def __init__(self, c_z: int, N_head: int):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z, eps=3e-6)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)

    def forward(self, z):
        return self.linear_z(self.layer_norm_z(z)).movedim(-1, -3)
