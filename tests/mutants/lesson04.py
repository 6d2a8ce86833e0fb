"""Realistic bugs for the checks of lesson 04 (bias and broadcasting)."""
from tests.mutation import CUT, IN_PLACE, Mutant, SQUEEZED

ALIGN = "return bias.view(*batch, *(1,) * n, *bias.shape[-3:])"

MUTANTS = [
    # 04.broadcastable_bias
    Mutant("04.broadcastable_bias", "bias.py", ALIGN, "return bias.view(*(1,) * n, *bias.shape)",
           "not (1, B, N_head, q, k)", "size-1 axes inserted at the front"),
    Mutant("04.broadcastable_bias", "bias.py", ALIGN, "return bias.unsqueeze(-4)",
           "n = 0", "always inserts exactly one axis (fine for row attention only)"),
    Mutant("04.broadcastable_bias", "bias.py", "    n = scores_ndim - bias.ndim\n", "    n = scores_ndim - 3\n",
           "n = 0", "forgets that the bias's batch axes are already there"),
    Mutant("04.broadcastable_bias", "bias.py", ALIGN,
           "return bias.view(*bias.shape[:-2], *(1,) * n, *bias.shape[-2:])",
           "between the bias's batch axes", "size-1 axes inserted after the head axis"),
    Mutant("04.broadcastable_bias", "bias.py", ALIGN,
           "return bias.view(*batch[:1], *(1,) * n, *bias.shape[-3:])",
           "insert the missing size-1 axes", "keeps only the first batch axis"),
    Mutant("04.broadcastable_bias", "bias.py", ALIGN,
           "for _ in range(n):\n        bias.unsqueeze_(-4)\n    return bias", IN_PLACE,
           "unsqueeze_ adds the axes to the caller's bias in place"),
    # 04.pair_bias
    Mutant("04.pair_bias", "bias.py", "bias = self.linear_z(self.layer_norm_z(z))",
           "bias = self.linear_z(self.layer_norm_z(z).detach())", CUT,
           "LayerNorm output detached: z and the LayerNorm get no gradient"),
    Mutant("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)",
           "return bias.movedim(-1, -3).squeeze()", SQUEEZED,
           "squeeze() drops the head axis of one head (and size-1 batch axes)"),
    Mutant("04.pair_bias", "bias.py", "self.linear_z = nn.Linear(c_z, N_head, bias=False)",
           "self.linear_z = nn.Linear(c_z, N_head)", "bias=False", "projection with a bias"),
    Mutant("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)",
           "return bias.transpose(-1, -3)", "keeping i before j",
           "transpose swaps the heads with j, so each head gets its bias transposed"),
    Mutant("04.pair_bias", "bias.py", "bias = self.linear_z(self.layer_norm_z(z))",
           "bias = self.linear_z(z)", "without the LayerNorm", "LayerNorm skipped"),
    Mutant("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)", "return bias.movedim(-1, 0)",
           "keep the batch axes in front", "head axis moved to the very front"),
    Mutant("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)", "return bias",
           "(*, N_head, R, R)", "head axis left last"),
]
