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

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('04.broadcastable_bias', 'bias.py', '    n = scores_ndim - bias.ndim\n',
           '    n = scores_ndim - bias.ndim - 1\n', "", 'one size-1 axis too few',
           exact=(
               'output shape: expected (2, 1, 8, 5, 5), got (2, 8, 5, 5)',
               "hint: insert the missing size-1 axes between the bias's batch axes and its last three (N_head, q, k): (B, 1, N_head, q, k), not (1, B, N_head, q, k); count n = scores_ndim - bias.ndim",
           )),
    Mutant('04.pair_bias', 'bias.py', 'return bias.movedim(-1, -3)  # (*, N_head, R, R)',
           'return bias.movedim(-1, -3).transpose(-2, -1)  # (*, N_head, R, R)', "", 'i and j swapped',
           exact=(
               'output shape (3, 5, 5) as expected; max |expected - got| = 0.54 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your output is the reference's with its last two axes swapped: i and j swapped: entry [..., h, i, j] must come from z[..., i, j, :], so move only the head axis, from last to in front of (i, j): movedim(-1, -3), keeping i before j",
           )),
    Mutant('04.pair_bias', 'bias.py', 'return bias.movedim(-1, -3)  # (*, N_head, R, R)',
           'return bias.permute(0, 3, 1, 2)  # (*, N_head, R, R)', "", 'a 4-D permute',
           exact=(
               'raised RuntimeError: permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 4',
               'at solutions/bias.mutant.py, line 149, in forward:',
               'return bias.permute(0, 3, 1, 2)  # (*, N_head, R, R)',
               'hint: permute names every axis, so it fits one number of axes only: movedim or transpose with negative axes work for any number of leading batch axes',
           )),
    Mutant('04.pair_bias', 'bias.py', 'self.layer_norm_z = nn.LayerNorm(c_z)',
           'self.layer_norm_z = nn.LayerNorm(N_head)', "", 'LayerNorm over N_head channels',
           exact=(
               'param layer_norm_z.weight: expected [8], got [4]',
               "hint: layer_norm_z: nn.LayerNorm(c_z); linear_z: nn.Linear(c_z, N_head, bias=False) (AF2's pair bias projection has no bias)",
           )),
    Mutant('04.pair_bias', 'bias.py', 'self.layer_norm_z = nn.LayerNorm(c_z)',
           'self.layer_norm_z = nn.LayerNorm(c_z, elementwise_affine=False)', "", 'LayerNorm without its parameters',
           exact=(
               "outputs: expected ['param layer_norm_z.bias', 'param layer_norm_z.weight', 'param linear_z.weight'], got ['param linear_z.weight']",
               "hint: layer_norm_z: nn.LayerNorm(c_z); linear_z: nn.Linear(c_z, N_head, bias=False) (AF2's pair bias projection has no bias)",
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('04.pair_bias', 'bias.py', 'self.linear_z = nn.Linear(c_z, N_head, bias=False)',
           'self.linear_z = nn.Linear(c_z, N_head, bias=False)\n        self.linear_z.weight.mul_(0.1)', "", 'the projection scaled down in place in __init__', kind='no_grad',
           exact=(
               'raised RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.',
               'hint: an in-place change of a parameter in __init__ (.zero_(), .fill_(), .mul_(), +=) raises when autograd is on, as it is wherever the module is used: set starting values inside `with torch.no_grad():`, or with nn.init.zeros_, nn.init.ones_ or nn.init.constant_ (which do so)',
           )),
    Mutant('04.broadcastable_bias', 'bias.py', 'return bias.view(*batch, *(1,) * n, *bias.shape[-3:])',
           'return bias.view(*batch, *(1,) * n, bias.shape[-3], bias.shape[-1], bias.shape[-1])', "", 'the bias taken as square (q = k)', kind='sizes',
           exact=(
               "raised RuntimeError: shape '[2, 1, 3, 7, 7]' is invalid for input of size 168",
               'hint: the last three axes are (N_head, q, k) as they are, also when q != k (cross-attention): take them from bias.shape[-3:], never as (N_head, L, L)',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('04.broadcastable_bias', 'bias.py', 'return bias.view(*batch, *(1,) * n, *bias.shape[-3:])',
           'return bias.detach().view(*batch, *(1,) * n, *bias.shape[-3:])', "", 'the view taken of a detached bias', kind='missing gradient',
           exact=(
               "grad bias: no gradient arrived (autograd gave None: nothing in your code connects it to the output), where the reference's has numbers",
               'hint: the output is right but no gradient reaches bias: something on its path to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new torch.tensor(...)), so it would never learn',
           )),
]
