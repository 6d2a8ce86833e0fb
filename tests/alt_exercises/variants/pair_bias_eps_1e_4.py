# check: 04.pair_bias


class PairBias(nn.Module):
    """The pair bias with a LayerNorm eps of 1e-4, the top of the accepted range."""

    def __init__(self, c_z: int, N_head: int):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z, eps=1e-4)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)

    def forward(self, z):
        return self.linear_z(self.layer_norm_z(z)).movedim(-1, -3)
