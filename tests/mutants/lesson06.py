"""Realistic bugs for the checks of lesson 06 (gating)."""
from tests.mutants.lesson03 import MASK_DIM, POSITIVE
from tests.mutation import CUT, IN_PLACE, Mutant, WRONG_GRADIENT

GATE = "o = torch.sigmoid(self.linear_g(x)) * o"
GATE_AND_OUTPUT = ("            " + GATE + "\n            # END SOLUTION\n"
                   "        return self.linear_o(o).movedim(-2, self.attn_dim)")
GATE_IF = "        if self.gated:\n            # BEGIN SOLUTION lesson 06"

MUTANTS = [
    # 06.gate
    Mutant("06.gate", "mha.py", GATE, "o = o", "the gate is not applied",
           "gate ignored entirely"),
    Mutant("06.gate", "mha.py", GATE, "o = self.linear_g(x) * o", "without the sigmoid",
           "sigmoid missing"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(o)) * o",
           "not from the attention output o", "gate computed from o instead of x"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(x)) + o",
           "the gate multiplies o", "gate added instead of multiplied"),
    Mutant("06.gate", "mha.py", GATE_AND_OUTPUT,
           "            pass\n            # END SOLUTION\n"
           "        out = self.linear_o(o)\n"
           "        if self.gated:\n"
           "            out = torch.sigmoid(self.linear_g(x)) * out\n"
           "        return out.movedim(-2, self.attn_dim)",
           "BEFORE linear_o", "gate applied after linear_o"),
    Mutant("06.gate", "mha.py", "self.linear_g.bias.fill_(1.0)", "self.linear_g.bias.fill_(0.0)",
           "weight = 0 and linear_g.bias = 1", "gate starts at sigmoid(0) = 0.5 (the seed's claim)"),
    Mutant("06.gate", "mha.py", "                self.linear_g.weight.zero_()\n", "",
           "weight = 0 and linear_g.bias = 1", "gate weights left at PyTorch's random init"),
    Mutant("06.gate", "mha.py",
           "            with torch.no_grad():\n"
           "                self.linear_g.weight.zero_()\n"
           "                self.linear_g.bias.fill_(1.0)\n", "",
           "sigmoid(1) = 0.73", "no AF2 initialisation at all"),
    Mutant("06.gate", "mha.py", "self.linear_g = nn.Linear(c_in, N_head * c)",
           "self.linear_g = nn.Linear(c_in, N_head * c, bias=False)\n"
           "            self.linear_g.bias = torch.zeros(N_head * c)",
           "WITH a bias", "gate without a learnable bias"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(x.detach())) * o",
           WRONG_GRADIENT, "gate computed from x.detach(): x gets no gradient through the gate"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(x)).detach() * o",
           CUT + " linear_g.weight, linear_g.bias", "gate detached: linear_g never learns"),
    # 06.full_module
    Mutant("06.full_module", "mha.py", MASK_DIM, "mask_dim = self.attn_dim + 1",
           POSITIVE, "mask axis attn_dim + 1 for every sign: wrong for a positive attn_dim"),
    Mutant("06.full_module", "mha.py", GATE,
           "o = torch.sigmoid(self.linear_g(x.masked_fill_(~attention_mask[..., None], 0.0) "
           "if attention_mask is not None else x)) * o", IN_PLACE,
           "zeroes the padding of the caller's x in place before computing the gate"),
    Mutant("06.full_module", "mha.py", "k = self.linear_k(x).unsqueeze(-3)",
           "k = self.linear_k(x.detach()).unsqueeze(-3)", WRONG_GRADIENT,
           "global keys from x.detach(): x's gradient misses the key path"),
    Mutant("06.full_module", "mha.py", GATE_IF,
           "        if self.gated and not self.is_global:\n            # BEGIN SOLUTION lesson 06",
           "gate the global output too", "no gate on global attention ('same output for all')"),
    Mutant("06.full_module", "mha.py", GATE,
           "o = torch.sigmoid(self.linear_g(x.mean(-2, keepdim=True) if self.is_global "
           "else x)) * o", "comes from each sequence's own x",
           "one gate per column for global attention, from the averaged x"),
    Mutant("06.full_module", "mha.py",
           "self.linear_k = nn.Linear(c_in, c, bias=use_bias_for_embeddings)",
           "self.linear_k = nn.Linear(c_in, c, bias=False)", "global single-head linear_k",
           "use_bias_for_embeddings ignored by the global key projection"),
    Mutant("06.full_module", "mha.py", "o = self._attention(x, bias, attention_mask)",
           "o = self._attention(x, None, attention_mask)", "the bias (N_head, R, R) is added",
           "pair bias dropped"),
    Mutant("06.full_module", "mha.py", "            attention_mask = attention_mask.movedim(mask_dim, -1)\n",
           "", "moves the sequence axis to -2 (x and mask)", "mask left on its own axis"),
    Mutant("06.full_module", "mha.py", "mask_dim = self.attn_dim if self.attn_dim >= 0 else self.attn_dim + 1",
           "mask_dim = self.attn_dim", "the mask hides padded keys",
           "negative attn_dim used on the mask unshifted (the mask has no channel axis)"),
]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('06.gate', 'mha.py', 'self.linear_g = nn.Linear(c_in, N_head * c)',
           'self.linear_g = nn.Linear(N_head * c, N_head * c)', "", 'gate input width N_head*c',
           exact=(
               'param linear_g.weight: expected [8, 6], got [8, 8]',
               'hint: gated=True adds linear_g = nn.Linear(c_in, N_head*c) WITH a bias: one gate per channel of o',
           )),
    Mutant('06.gate', 'mha.py', 'o = torch.sigmoid(self.linear_g(x)) * o',
           'o = torch.sigmoid(self.linear_g(x)) + o', "", 'gate added, not multiplied',
           exact=(
               'output shape (2, 5, 8) as expected; max |expected - got| = 1.64 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your gate is added to o: the gate multiplies o, channel by channel, o = sigmoid(linear_g(x)) * o, before linear_o",
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('06.gate', 'mha.py', 'o = torch.sigmoid(self.linear_g(x)) * o',
           'o = torch.sigmoid(self.linear_g(x).double()) * o', "", 'the gate computed in double inside the model', kind='dtype',
           exact=(
               'raised RuntimeError: mat1 and mat2 must have the same dtype, but got Double and Float',
               "hint: your code works in float64 but not in the lower precision of this case (its name says which): the output's dtype must follow the input's, so nothing in it may fix a dtype (dtype=torch.float64, .double(), .float(), or torch.zeros/ones/tensor/arange without dtype=, which gives float32): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and compute every part in the input's dtype",
           )),
    Mutant('06.gate', 'mha.py', '            with torch.no_grad():\n                self.linear_g.weight.zero_()\n                self.linear_g.bias.fill_(1.0)',
           '            self.linear_g.weight.zero_()\n            self.linear_g.bias.fill_(1.0)', "", 'the gate initialised in place without no_grad', kind='no_grad',
           exact=(
               'raised RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.',
               'hint: an in-place change of a parameter in __init__ (.zero_(), .fill_(), .mul_(), +=) raises when autograd is on, as it is wherever the module is used: set starting values inside `with torch.no_grad():`, or with nn.init.zeros_, nn.init.ones_ or nn.init.constant_ (which do so)',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('06.gate', 'mha.py', '            o = torch.sigmoid(self.linear_g(x)) * o\n            # END SOLUTION\n        return self.linear_o(o).movedim(-2, self.attn_dim)',
           '            pass\n            # END SOLUTION\n        out = self.linear_o(o)\n        if self.gated:\n            out = torch.sigmoid(self.linear_g(x)) * out\n        return out.movedim(-2, self.attn_dim)', "", 'the gate applied after linear_o', kind='diagnosis',
           exact=(
               'output shape (2, 5, 8) as expected; max |expected - got| = 0.626 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your gate multiplies linear_o's result: the gate acts on o (N_head*c channels) BEFORE linear_o, o = sigmoid(linear_g(x)) * o, then linear_o(o)",
           )),
]
