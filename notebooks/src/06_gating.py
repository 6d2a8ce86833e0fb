# %% [markdown]
# # Lesson 06: gating, and the full AlphaFold2 attention module
#
# **Prerequisites:** lessons 03–05: your `MultiHeadAttention` from lesson 03, with lesson 05's
# `masked_mean` and `is_global` (the full-module check runs global attention too).
#
# **Without AlphaFold2 background?** Read sections 1, 2 and 6 (the gate, gate vs. attention
# weights, other gates): lesson 08's paper builds on them, and Exercise 1 needs only your
# lesson-03 module. Exercise 2 (the full AlphaFold2 module) and sections 3–5 build on lessons
# 04–05 and are optional.
#
# Every attention module of AlphaFold2's Evoformer ends the same way: before the output
# projection, the attention output is multiplied, channel by channel, by a sigmoid "gate"
# computed from the module's input. This lesson adds that gate to your `MultiHeadAttention`,
# which then has all of AF2's knobs (`attn_dim`, `gated`, `is_global`, an attention bias and a
# padding mask) and one more, `use_bias_for_embeddings`, for models that do put biases on Q, K, V.
#
# **In this lesson you will**
# - compute the gate `sigmoid(linear_g(x)) * o` by hand, and see why it is computed from x, not
#   from o;
# - learn how AF2 initialises it (weights 0, bias 1: every gate starts at sigmoid(1) = 0.73);
# - tell the gate (channel axis, no normalisation) from the attention weights (key axis, softmax),
#   with a widget;
# - add the gate to your module and check the whole module, global attention included;
# - count parameters again (20,608 vs. 13,440, now from gated modules) and draw the module with a
#   pair bias as a graph.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %%

import torch
from torch import nn

from course.i18n import _  # printed text in the notebook's language

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. The gate
#
# After the heads are merged, the attention output o has shape (*, L, N_head · c). The gate is one
# more projection of the **input** x, squashed by a sigmoid, multiplied into o element by element:
#
# ```python
# # __init__ (only when gated=True)
# self.linear_g = nn.Linear(c_in, N_head * c)          # with a bias
# # forward, after attention and merging the heads, before linear_o
# g = torch.sigmoid(self.linear_g(x))                  # (*, L, N_head*c), each in (0, 1)
# o = g * o
# out = self.linear_o(o)
# ```
#
# The gate is a branch parallel to the attention: both read x, and they meet at the
# multiplication. (In AF2, x is the layer-normalised input of the attention block.) A gate
# computed from o would only see what attention already gathered; a gate computed from x lets each
# token decide, from its own features, how much of what attention brought it keeps, per channel.
#
# A hand example with three channels: o = [1.2, −0.5, 2.0] and gate logits [−8, 0, 3].

# %%
o = torch.tensor([1.2, -0.5, 2.0], dtype=torch.float64)
logits = torch.tensor([-8.0, 0.0, 3.0], dtype=torch.float64)
g = torch.sigmoid(logits)
print(_("sigmoid(logits) ="), [f"{value:.6f}" for value in g.tolist()])
print("g * o           =", [f"{value:.6f}" for value in (g * o).tolist()])

# %% [markdown]
# Channel 1 is shut (0.000335 × 1.2 ≈ 0.0004), channel 2 passes half (−0.25), channel 3 almost all
# (1.905). Nothing forces the three gates to add up to anything: each channel has its own valve.
#
# ### How AlphaFold2 starts the gate
#
# AF2 initialises `linear_g` with **weight 0 and bias 1**. At the start of training every gate is
# then sigmoid(1) = 0.73, for every token and channel, whatever x is: the attention output passes
# mostly open, and the gradient reaches both branches (∂(g·o)/∂o = g = 0.73; ∂(g·o)/∂logit =
# g(1 − g)·o = 0.197·o). You may read elsewhere that gates "start at 0.5": that is what PyTorch's
# default initialisation gives on average (small random weights, bias near 0), not AF2's choice.

# %%
x = torch.randn(6, 16, generator=torch.Generator().manual_seed(0))
af2_gate = nn.Linear(16, 8)
with torch.no_grad():
    af2_gate.weight.zero_()
    af2_gate.bias.fill_(1.0)
torch.manual_seed(0)
default_gate = nn.Linear(16, 8)
sigmoid_1 = torch.sigmoid(torch.tensor(1.0)).item()
print(f"sigmoid(1) = {sigmoid_1:.4f};  its slope sigmoid(1) * (1 - sigmoid(1)) = "
      f"{sigmoid_1 * (1 - sigmoid_1):.3f}")
with torch.no_grad():
    for label, layer in [("AF2 init (weight 0, bias 1)", af2_gate), ("PyTorch default init", default_gate)]:
        gates = torch.sigmoid(layer(x))
        print(f"{label:<28} gates: mean {gates.mean():.3f}, min {gates.min():.3f}, max {gates.max():.3f}")

# %% [markdown]
# ## 2. Gate vs. attention weights
#
# Both are numbers between 0 and 1 that multiply something, which makes them easy to confuse.
#
# | | attention weights a | gate g |
# |---|---|---|
# | acts along | the **key** axis: which positions to read | the **channel** axis: how much of each feature to keep |
# | normalised by | softmax: each query's row sums to 1 | nothing: sigmoid per channel, independently |
# | shape (one head / merged) | (*, N_head, L, L) | (*, L, N_head · c) |
# | decides | where to fetch from | how much of what was fetched passes |
# | picture | which shelves of the library to take books from | how much of each fetched book to read: a mixing desk's faders |
#
# In numbers, on a seeded toy (5 tokens, 4 channels, every gate at AF2's initial 0.73):

# %%
from course.widgets.lesson06 import gate_demo

toy = gate_demo([1.0, 1.0, 1.0, 1.0])
print(_("attention weights: each row sums to"), toy["weights"].sum(dim=-1))
print(_("gate:"), toy["gate"], _("sums to"), round(toy["gate"].sum().item(), 3))
other = gate_demo([-8.0, 0.0, 3.0, 1.0])
print(_("other gate logits, same attention weights:"), torch.equal(toy["weights"], other["weights"]))

# %% [markdown]
# ### Widget: gate logits per channel
#
# Move a channel's logit. The attention map on the left never changes; the gate bars and the
# gated output do, one whole channel at a time. Push a logit to −8 and that channel disappears
# from the output; at +8 it passes untouched.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson06 import gate_explorer

gate_explorer()

# %% [markdown]
# ## Exercise 1: the gate
#
# In `exercises/mha.py`, `MultiHeadAttention`:
#
# 1. In `__init__`, when `gated`: create `self.linear_g = nn.Linear(c_in, N_head * c)` (with bias)
#    and initialise it as AF2 does: weight 0, bias 1 (inside `torch.no_grad()`).
# 2. In `forward`, when `self.gated`: multiply o by `torch.sigmoid(self.linear_g(x))`, where x is
#    the input after the `movedim` (so its channels sit last), before `linear_o`.
#
# The check gives the gate random weights (so a gated module must compute something else than an
# ungated one), then probes each classic mistake: gate not applied, applied after `linear_o`,
# without the sigmoid, computed from o, wrong initialisation.

# %% tags=["check"]
from course.checks.lesson06 import check_gate
from exercises.mha import MultiHeadAttention

check_gate(MultiHeadAttention)

# %% [markdown]
# ## Exercise 2: the full module
#
# With the gate in place, your module has every AF2 option. Nothing new to write if everything so
# far is right; this check runs the combinations AlphaFold2 uses:
#
# - row attention (`attn_dim=-2`) with a pair bias (N_head, R, R), a padding mask and the gate
#   (AF2 Algorithm 7);
# - column attention (`attn_dim=-3`) with mask and gate (Algorithm 8);
# - gated global column attention with padding (Algorithm 19), where each sequence must get its
#   own gate;
# - `use_bias_for_embeddings=True`, and a positive `attn_dim`.
#
# If it fails, the hint names the combination; the fix is usually in `_global_attention` or in
# how the gate treats it.

# %% tags=["check"]
from course.checks.lesson06 import check_full_module
from exercises.mha import MultiHeadAttention

check_full_module(MultiHeadAttention)

# %% [markdown]
# ## 3. The gate in global attention: per sequence
#
# Lesson 05's global attention gives every sequence of a column the same summary. The gate is
# computed from each sequence's own x, so after it the sequences differ. Without the gate they
# would be identical:

# %%
msa = torch.randn(4, 3, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
torch.manual_seed(3)
for gated in (False, True):
    module = MultiHeadAttention(8, 4, 2, attn_dim=-3, gated=gated, is_global=True).double()
    if gated:  # random gate weights, as after some training (at initialisation they are 0)
        nn.init.normal_(module.linear_g.weight, std=0.5)
    with torch.no_grad():
        out = module(msa)  # (S=4, R=3, 8)
    spread = (out - out[:1]).abs().max().item()
    print(f"gated={gated!s:5}: largest difference between sequences of a column {spread:.3g}")

# %% [markdown]
# ## 4. Parameters, from gated modules
#
# AF2's extra-MSA stack: c_e = 64, 8 heads of width 8, gated; Q/K/V without bias; LayerNorm not
# counted. Lesson 05 added the gate by hand; now it is part of the module.

# %%
from course.measure import n_parameters  # sum(p.numel() for p in module.parameters())

plain = MultiHeadAttention(64, 8, 8, attn_dim=-3, gated=True)
global_ = MultiHeadAttention(64, 8, 8, attn_dim=-3, gated=True, is_global=True)
print(f"plain gated column attention : {n_parameters(plain):,}")
print(f"global gated column attention: {n_parameters(global_):,}")
print(f"linear_g alone: {n_parameters(plain.linear_g):,} "
      f"(64 x 64 weights + 64 biases); ungated: {n_parameters(plain) - n_parameters(plain.linear_g):,}"
      f" and {n_parameters(global_) - n_parameters(global_.linear_g):,}")
wide = MultiHeadAttention(256, 32, 8, gated=True)  # AF2's MSA row attention: c_m = 256, 8 x 32
print(f"c_in = 256, 8 heads of 32, gated: {n_parameters(wide):,} "
      f"(5 c_in² = {5 * 256**2:,}, plus biases)")

# %% [markdown]
# The gate adds about c_in² parameters (one more c_in × N_head·c matrix), taking a width-conserving
# module from about 4·c_in² to about 5·c_in².
#
# ## 5. The module with a pair bias, as a graph
#
# In AF2's row attention (Algorithm 7) the pair representation z (R, R, c_z) biases every
# sequence's R × R scores. A thin wrapper builds that bias and hands it to your module:
# z → LayerNorm → Linear to N_head (no bias) → move the head axis in front: (N_head, R, R) →
# insert a size-1 axis for the sequences: (1, N_head, R, R), which broadcasts against the scores
# (S, N_head, R, R) (lesson 04). `forward` of your module expects exactly such a bias, already
# broadcastable to the scores.

# %%
class RowAttentionWithPairBias(nn.Module):
    """Gated MSA row attention whose scores get a bias from the pair representation z."""

    def __init__(self, c_m: int, c_z: int, c: int, N_head: int):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)
        self.attention = MultiHeadAttention(c_m, c, N_head, attn_dim=-2, gated=True)

    def forward(self, m, z):
        """m: (*, S, R, c_m); z: (*, R, R, c_z). returns (*, S, R, c_m)."""
        b = self.linear_z(self.layer_norm_z(z))  # (*, R, R, N_head)
        b = b.movedim(-1, -3)  # (*, N_head, R, R)
        b = b.unsqueeze(-4)  # (*, 1, N_head, R, R): the same bias for every sequence
        return self.attention(m, bias=b)


torch.manual_seed(4)
row_attention = RowAttentionWithPairBias(c_m=16, c_z=6, c=3, N_head=4)
m_in = torch.randn(5, 7, 16)  # S=5 sequences, R=7 residues, c_m=16
z_in = torch.randn(7, 7, 6)   # pair representation, c_z=6
print(_("output:"), tuple(row_attention(m_in, z_in).shape))

# %% tags=["nbval-ignore-output"]
from course.plots import show_model_graph

graph = show_model_graph(row_attention, [m_in, z_in], "RowAttentionWithPairBias")

# %% [markdown]
# Follow the two inputs. z (7, 7, 6) goes through `LayerNorm` and the `Linear` to 4 heads
# (7, 7, 4), `movedim` (4, 7, 7) and `unsqueeze` (1, 4, 7, 7): that is the bias path. m (5, 7, 16)
# goes through the three projections, the head split and the scaled scores (5, 4, 7, 7); the
# bias is added there (`add`), before the softmax. The gate is the extra `Linear` from m (to
# 12 = 4 × 3 channels) followed by `sigmoid` and a `mul` with the merged attention output, just
# before the last `Linear`, `linear_o`.
#
# ## 6. Where this gate sits among other gates
#
# - In AlphaFold2 the gated attention modules are Algorithms 7 and 8 (MSA row and column
#   attention), 13 and 14 (triangle attention) and 19 (global column attention). Algorithm 17
#   (template pointwise attention) is ungated. Invariant point attention (Algorithm 22) has no
#   output gate either: its per-head weights γ^h scale the point-distance term inside the
#   attention logits, a different thing.
# - The same pattern, "sigmoid of a projection times another signal", is in LSTM (3 gates), GRU
#   (2 gates), highway networks and GLU-style feed-forward layers (SwiGLU uses SiLU instead of the
#   plain sigmoid). A mixture-of-experts router is a different kind of gate: it picks experts with
#   a softmax over them (with top-k), so the experts compete, and unchosen experts are not computed
#   at all; an AF2 gate computes everything and only filters it.
# - Lesson 08 takes the 2025 gated-attention paper, which puts the same kind of gate after the
#   attention of a language model, and tests its claims.
#
# ## Self-check
#
# 1. With AF2's initialisation, what is the gate for a token whose x is all zeros? And for any
#    other x?
# 2. A colleague computes the gate as `torch.sigmoid(self.linear_g(o))`. Why does that break when
#    c_in ≠ N_head·c, and what does it lose when the shapes happen to match?
# 3. Can the gate move attention from one key to another?
# 4. Why does the check zero `linear_v`'s weights in one case, and what bug does that catch?
# 5. In gated global attention, which part is shared by all sequences of a column, and which is
#    per sequence?
# 6. How many parameters does the gate add to a module with c_in = 64, 8 heads of width 8?
#
# <details><summary>Answer</summary>
#
# 1. 0.73 for both: with weight 0, linear_g(x) = bias = 1 for every x, so sigmoid(1) = 0.73
#    everywhere. The gate becomes input-dependent only as training moves the weights.
# 2. `linear_g` expects c_in input channels and o has N_head·c, so the shapes clash. When they
#    match it runs, but the gate then only rescales what attention already fetched, from that
#    same content; it no longer lets the token's own features decide what to let through.
# 3. No. The weights are fixed before the gate acts; the gate scales channels of the output,
#    after the mixing over keys.
# 4. With v = 0 the attention output o is 0, so the correct module returns `linear_o`'s bias,
#    whatever the gate. A gate applied after `linear_o` multiplies that bias and shows.
# 5. Shared: the averaged query and the summary (weights over the column's sequences, times the
#    shared values). Per sequence: the gate sigmoid(linear_g(x_s)), hence the final output.
# 6. 64 × 64 + 64 = 4,160 (20,608 − 16,448).
#
# </details>
#
# ## Summary
#
# - AF2's gate: o ← sigmoid(linear_g(x)) ⊙ o, from the input x, per token and channel, after
#   merging the heads and before `linear_o`; sigmoid([−8, 0, 3]) = [0.000335, 0.5, 0.953].
# - AF2 starts it at weight 0, bias 1: every gate 0.73, open from the first step.
# - Attention weights pick keys and sum to 1 per query; gates scale channels and are not
#   normalised. The gate never changes the attention map.
# - Your `MultiHeadAttention` now has every AF2 option; gated, it has 20,608 parameters as plain
#   column attention and 13,440 as global column attention (c_e = 64, 8 × 8).
# - Next: [lesson 07, the Transformer around attention](07_transformer.ipynb): positions, norms,
#   residuals and the decoder block that lesson 08's language model is made of.
