"""Realistic bugs for the checks of lesson 08 (the gated-attention paper)."""
from tests.mutation import Mutant

FILE = "gated_attention.py"
_GATE_FROM_OUTPUT = ("y = y * self.gate_scores(x)", "y = y * self.gate_scores(y.flatten(-2))")
_GATE_AFTER_W_O = (
    "            y = y * self.gate_scores(x)\n            # END SOLUTION\n",
    "            return self.out(y.flatten(-2)) * self.gate_scores(x).flatten(-2)\n"
    "            # END SOLUTION\n")
_STATIC_PER_HEAD = ("logits = self.gate_proj(x)  #",
                    "logits = self.gate_proj.weight.sum(-1).expand(*x.shape[:-1], -1)  #")
_NO_SIGMOID = ("return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1))",
               "return logits.unflatten(-1, (self.n_heads, -1))")
_SHARED_ACROSS_HEADS = ("self.gate_proj = nn.Linear(d_model, n_heads * gate_width, bias=False)",
                        "self.gate_proj = nn.Linear(d_model, gate_width, bias=False)")
_WITH_BIAS = ("self.gate_proj = nn.Linear(d_model, n_heads * gate_width, bias=False)",
              "self.gate_proj = nn.Linear(d_model, n_heads * gate_width)")
_SHARED_BY_MEAN = (
    "return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1))",
    "return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1)).mean(-2, keepdim=True)")
_SQUEEZED = ("return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1))",
             "return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1)).squeeze(0)")
_X_NORMALISED_IN_PLACE = ("logits = self.gate_proj(x)  #",
                          "x /= x.norm(dim=-1, keepdim=True)\n        logits = self.gate_proj(x)  #")
_GATE_DETACHED = ("y = y * self.gate_scores(x)", "y = y * self.gate_scores(x).detach()")

MUTANTS = []
for _check in ("08.gate_elementwise", "08.gate_headwise"):
    MUTANTS += [
        Mutant(_check, FILE, *_GATE_FROM_OUTPUT, "not from the attention output",
               "gate computed from the attention output instead of x"),
        Mutant(_check, FILE, *_GATE_AFTER_W_O, "before the output projection",
               "gate after W_O (position G5)"),
        Mutant(_check, FILE, *_STATIC_PER_HEAD, "not a learned constant",
               "a static learned gate per head instead of one computed from x"),
        Mutant(_check, FILE, *_NO_SIGMOID, "(0, 1)", "sigmoid missing"),
        Mutant(_check, FILE, *_SHARED_ACROSS_HEADS, "each head has its own gate",
               "one gate projection shared by all heads"),
        Mutant(_check, FILE, *_WITH_BIAS, "no bias of its own",
               "a gate projection with its own bias (not the paper's gate)"),
        Mutant(_check, FILE, *_SHARED_BY_MEAN, "gate_scores returns (*, L, n_heads",
               "heads' gates averaged into one shared gate"),
        Mutant(_check, FILE, *_SQUEEZED, "axes of size 1 are real axes",
               "gate scores squeezed: a batch of one loses its axis"),
        Mutant(_check, FILE, *_X_NORMALISED_IN_PLACE, "must not change it",
               "x normalised in place before the gate"),
        Mutant(_check, FILE, *_GATE_DETACHED, "no gradient reaches gate_proj",
               "gate detached from the graph: gate_proj never learns"),
    ]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('08.gate_headwise', 'gated_attention.py', 'y = y * self.gate_scores(x)',
           "g = self.gate_scores(x)\n            if self.gate == 'headwise':\n                g = g.squeeze(-1).repeat(*([1] * (g.ndim - 2)), self.head_dim).unflatten(-1, (self.n_heads, -1))\n            y = y * g", "", 'headwise gate expanded with repeat',
           exact=(
               'output shape (5, 8) as expected; max |expected - got| = 0.208 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your gate_scores is right (its cases pass), so the bug is in how forward applies it: y = y * gate_scores(x), with y the SDPA output per head (*, L, n_heads, head_dim), before the output projection W_O (self.out(y.flatten(-2))); gating after W_O is position G5. The scores broadcast over each head's channels by themselves: repeating or reshaping them mixes up the heads",
           )),
    Mutant('08.gate_elementwise', 'gated_attention.py', 'return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1))',
           'return torch.sigmoid(logits).unflatten(-1, (-1, self.n_heads))', "", 'gate split as (width, heads)',
           exact=(
               'output shape: expected (2, 6, 2, 4), got (2, 6, 4, 2)',
               'hint: gate_scores returns (*, L, n_heads, head_dim)',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('08.gate_elementwise', 'gated_attention.py', 'y = y * self.gate_scores(x)',
           'y = y * torch.nn.functional.dropout(self.gate_scores(x), 0.1)', "", 'dropout on the gate scores, left on in eval', kind='randomness',
           exact=(
               'the same input, run twice in training mode, gave outputs that differ by up to 0.84: something in your code draws random numbers',
               "hint: your code draws random numbers: the same input gives another output each time. A dropout left on (nn.Dropout in training mode, or F.dropout(x, p), whose training=True is the default even in eval mode), or torch.rand/randn/bernoulli in forward: the course's modules have no dropout, so remove it (every other difference of this check may come from it too)",
           )),
]
