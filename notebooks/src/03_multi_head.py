# %% [markdown]
# # Lesson 03: multi-head attention
#
# **Prerequisites:** lesson 02's `scaled_dot_product_attention` (`exercises/attention.py`, and
# lesson 01's functions it calls): your `MultiHeadAttention` calls it for every head.
#
# **In this lesson you will**
# - split one wide projection into `N_head` heads and merge them back (`split_heads`,
#   `merge_heads`), and see why the order of `view` and `transpose` matters;
# - write `MultiHeadAttention`, the module that lessons 05 and 06 extend;
# - prove in code that one joint projection equals N separate heads;
# - count parameters of real modules: with c = c_in / N_head, more heads cost nothing extra;
# - match `torch.nn.MultiheadAttention` exactly after copying weights;
# - see which terms a bias on Q and K adds to the scores, and which of them the softmax cancels;
# - draw the module's graph, play with heads in a widget, and run the same module through
#   PyTorch's fused `scaled_dot_product_attention`.

# %%
import course_setup  # noqa: F401

import math

import torch
import torch.nn.functional as F
from torch import nn

from course.checks.inputs import fill_parameters
from course.i18n import _  # printed text and figure labels in the notebook's language
from course.measure import best_time, n_parameters

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## One head, one question
#
# A single head (lesson 02) scores every pair of positions with one set of weights W_q, W_k:
# one notion of "relevant". A protein or a sentence has many relations at once: which residues
# are close in space, which sit on the same strand, which word is the subject of which verb. One
# head has to squeeze all of them into one score per pair, so it learns a blurred compromise.
#
# **Multi-head attention** runs N_head attentions side by side, each in its own subspace of
# width c, each with its own queries, keys and values, and then mixes their results:
#
# | step | shape |
# |---|---|
# | input x | `(*, L, c_in)` |
# | q, k, v = linear_q(x), linear_k(x), linear_v(x): **one** Linear each, c_in → N_head·c | `(*, L, N_head·c)` |
# | split into heads | `(*, N_head, L, c)` |
# | per-head scores q kᵀ / √c (+ bias), softmax over keys | `(*, N_head, L, L)`: N_head score matrices |
# | weights @ v | `(*, N_head, L, c)` |
# | merge: concatenate the heads | `(*, L, N_head·c)` |
# | linear_o: N_head·c → c_in, with a bias | `(*, L, c_in)` |
#
# The head axis sits right before (L, c), so lesson 02's `scaled_dot_product_attention`, which
# treats all leading axes as batch axes, runs every head at once without a loop.

# %% [markdown]
# ## Exercise 1: splitting and merging heads
#
# `split_heads(x, N_head)` turns `(*, L, N_head·c)` into `(*, N_head, L, c)`, with **head h
# owning the channel block h·c … (h+1)·c − 1**. `merge_heads` is its inverse.
#
# The tempting one-liner `x.view(*batch, N_head, L, c)` has the right shape and the wrong
# content. `view` never moves numbers; it only re-reads the same memory in a new shape. Memory
# holds position 0's channels, then position 1's channels, and so on. Reading it as
# (N_head, L, c) makes "head 0" the first L·c numbers: whole positions, not a channel block.
# The right way reads the last axis as (N_head, c), which `view` can do because those channels
# are adjacent, and then swaps the head axis in front of L with `transpose`.
#
# A tensor that counts its own entries makes this visible: L = 4 positions, 2 heads of width 3.
# The entry with value 10 is position 1, channel 4, so it belongs to head 1.

# %%
L, N_head, c = 4, 2, 3
counting = torch.arange(L * N_head * c).view(L, N_head * c)
print("x (L, N_head*c):\n", counting)
print(_("\nwrong: view(N_head, L, c), head 0 =\n"), counting.view(N_head, L, c)[0])
print(_("\nright: view(L, N_head, c).transpose(0, 1), head 0 =\n"),
      counting.view(L, N_head, c).transpose(0, 1)[0])

# %% [markdown]
# In the wrong version "head 0" holds all six channels of positions 0 and 1, chopped into four
# fake positions of 3 numbers, and never sees positions 2 and 3. In the right version head 0
# holds channels 0–2 of all 4 positions.
#
# Write `split_heads` and `merge_heads` in `exercises/mha.py` (keep any leading batch axes `*`).
# `merge_heads` transposes back and then needs `reshape`, not `view`: after a transpose the
# channels of one position are no longer adjacent in memory.

# %% tags=["check"]
from course.checks.lesson03 import check_split_heads
from exercises.mha import split_heads

check_split_heads(split_heads)

# %% tags=["check"]
from course.checks.lesson03 import check_merge_heads
from exercises.mha import merge_heads

check_merge_heads(merge_heads)

# %% [markdown]
# ## Exercise 2: `MultiHeadAttention`
#
# In `exercises/mha.py`, fill in the lesson-03 parts of
# `MultiHeadAttention(c_in, c, N_head, attn_dim=-2, gated=False, is_global=False,
# use_bias_for_embeddings=False)`:
#
# - in `__init__`: `linear_q`, `linear_k`, `linear_v` = `nn.Linear(c_in, N_head * c,
#   bias=use_bias_for_embeddings)` and `linear_o = nn.Linear(N_head * c, c_in)` (with a bias).
#   The names matter: the check, lessons 05–06 and the weight copying below use them;
# - `_attention(x, bias, attention_mask)`: x is already `(*, L, c_in)` with the attention axis
#   at −2. Project, split the heads, call your lesson-02 `scaled_dot_product_attention` with the
#   bias and a **key** mask `attention_mask[..., None, None, :]` (shape `(*, 1, 1, L)`: the same
#   for every head and every query), and merge the heads. Return `(*, L, N_head·c)`; `forward`
#   applies `linear_o`.
#
# `forward` is written for you. It moves the axis `attn_dim` to position −2 and back, so the same
# module attends along the rows or the columns of an MSA (lesson 04). The gate and the global
# variant are lessons 06 and 05; leave their blocks alone.
#
# **A new mask convention.** Lesson 02's masks have the shape of the scores; from here on the
# module takes one flag per position of x, and builds the score-shaped key mask itself:
#
# | | lesson 02: `mask` of `scaled_dot_product_attention` | lesson 03 on: `attention_mask` of `MultiHeadAttention` |
# |---|---|---|
# | shape | broadcastable to the scores `(*, q, k)`; `padding_mask` gives `(B, 1, L)` | `x.shape[:-1]`, e.g. `(B, L)`: one flag per position |
# | True means | query i may see key j | position is real (not padding) |
# | can express | any pattern: causal, padding, both | padding only (the same for every query) |
#
# `key_mask_to_flags` (in `exercises/mha.py`, written for you) turns a lesson-02 padding mask
# `(B, 1, L)` into the flags `(B, L)`, and `flags_to_key_mask` goes back. A causal mask has no
# flag form: whether key j is visible depends on the query, so the helper refuses it.

# %%
from exercises.attention import padding_mask
from exercises.mha import flags_to_key_mask, key_mask_to_flags

lengths = torch.tensor([3, 5])
try:
    lesson02_mask = padding_mask(lengths, 5)  # your lesson-02 function: (B, 1, L)
except NotImplementedError:  # not written yet: the same mask, built here
    lesson02_mask = (torch.arange(5) < lengths[:, None])[:, None, :]
flags = key_mask_to_flags(lesson02_mask)
print(_("lesson 02 mask"), tuple(lesson02_mask.shape), "-> attention_mask", tuple(flags.shape))
print(flags)
print(_("and back, equal:"), torch.equal(flags_to_key_mask(flags), lesson02_mask))
try:
    key_mask_to_flags(torch.ones(5, 5, dtype=torch.bool).tril())
except ValueError as error:  # the error as the learner's stub words it (the catalog has it)
    print(_("causal mask:"), _(str(error)))

# %% tags=["check"]
from course.checks.lesson03 import check_multi_head_attention
from exercises.mha import MultiHeadAttention

check_multi_head_attention(MultiHeadAttention)

# %% [markdown]
# ## The shapes, step by step
#
# The same steps as `_attention`, written out on a batch of 2 sequences of 5 tokens, c_in = 16,
# 4 heads of width 4:

# %%
mha = fill_parameters(MultiHeadAttention(c_in=16, c=4, N_head=4), seed=3)
x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

q = mha.linear_q(x)
print("linear_q(x)         ", tuple(q.shape), "   (B, L, N_head*c)")
q, k, v = (split_heads(layer(x), mha.N_head) for layer in (mha.linear_q, mha.linear_k, mha.linear_v))
print("split_heads         ", tuple(q.shape), "(B, N_head, L, c)")
scores = q @ k.transpose(-2, -1) / math.sqrt(mha.c)
print(_("scores              "), tuple(scores.shape), _("(B, N_head, L, L): one matrix per head"))
heads_out = torch.softmax(scores, dim=-1) @ v
print(_("weights @ v         "), tuple(heads_out.shape), "(B, N_head, L, c)")
merged = merge_heads(heads_out)
print("merge_heads         ", tuple(merged.shape), "   (B, L, N_head*c)")
out = mha.linear_o(merged)
print("linear_o            ", tuple(out.shape), "   (B, L, c_in)")
print(_("same as mha(x):"), torch.allclose(out, mha(x), rtol=0, atol=1e-12))

# %% [markdown]
# ## One joint projection = N separate heads
#
# On paper each head has its own W_q^h, W_k^h, W_v^h (c_in → c). In code there is one
# `linear_q` with N_head·c outputs. They are the same thing: row block h of the joint weight
# **is** W_q^h, and `split_heads` hands exactly that block's outputs to head h. One big matrix
# product does the work of N small ones in a single call.
#
# To check, build N_head separate single-head projections, copy the row blocks of the joint
# weights into them, run the heads one by one in a Python loop, concatenate, and compare:

# %%
c_in, c, N_head = mha.linear_q.in_features, mha.c, mha.N_head
separate_heads = []
for h in range(N_head):
    rows = slice(h * c, (h + 1) * c)  # head h's row block of the joint weights
    head = {name: nn.Linear(c_in, c, bias=False).double() for name in ("q", "k", "v")}
    with torch.no_grad():
        head["q"].weight.copy_(mha.linear_q.weight[rows])
        head["k"].weight.copy_(mha.linear_k.weight[rows])
        head["v"].weight.copy_(mha.linear_v.weight[rows])
    separate_heads.append(head)

outputs = []
for head in separate_heads:  # one small attention per head, no view, no transpose
    q_h, k_h, v_h = head["q"](x), head["k"](x), head["v"](x)  # (B, L, c) each
    weights_h = torch.softmax(q_h @ k_h.transpose(-2, -1) / math.sqrt(c), dim=-1)
    outputs.append(weights_h @ v_h)
loop_result = mha.linear_o(torch.cat(outputs, dim=-1))  # concatenate heads 0, 1, ... in order

print(_("N separate heads == joint projection:"),
      torch.allclose(loop_result, mha(x), rtol=0, atol=1e-12))

# %% [markdown]
# ## Does multi-head cost more parameters?
#
# Count the parameters of real modules with c_in = 256 (AlphaFold's MSA width):
#
# - **single head**: one head of width c = c_in;
# - **multi-head, width conserved**: 8 heads of width c = c_in / 8 = 32 (N_head·c = c_in);
# - **multi-head, widened**: 8 heads of full width c = c_in.
#
# Each projection is a c_in × (N_head·c) matrix, so the estimate is 4·c_in² when N_head·c = c_in,
# and 4·N_head·c_in² when every head is full width; only `linear_o`'s bias (c_in numbers) comes on
# top. `n_parameters(module)` (from `course/measure.py`) is the usual one-liner
# `sum(p.numel() for p in module.parameters())`.

# %%
c_in = 256
estimate = 4 * c_in ** 2
designs = {
    "single head (c = c_in)": MultiHeadAttention(c_in, c_in, 1),
    "8 heads, c = c_in/8 = 32": MultiHeadAttention(c_in, c_in // 8, 8),
    "8 heads, widened (c = c_in)": MultiHeadAttention(c_in, c_in, 8),
}
print(f"{'design':<30}{'parameters':>12}{'/ 4*c_in^2':>12}")
for name, module in designs.items():
    count = n_parameters(module)
    print(f"{name:<30}{count:>12,}{count / estimate:>12.4f}")
print(f"{'estimate 4*c_in^2':<30}{estimate:>12,}")

# %% [markdown]
# Width conserved, 8 heads cost exactly what one head costs: 262,400 = 4·256² + 256. The heads
# are not extra weights; they are the same weights cut into 8 independent slices. Widening every
# head to full width multiplies the count by N_head (2,097,408 ≈ 8 × 4·256²). Some notes on
# Transformers claim that "more heads add parameters because each head has its own W": that is
# only true for the widened design, which almost nobody uses. The original Transformer (512 = 8
# × 64) conserves the width, and so do AlphaFold2's Evoformer and extra-MSA attentions; two of
# its attention modules do not (template pointwise attention and the scalar part of invariant
# point attention):

# %%
for where, width, c_head, heads in [("MSA row/column attention", 256, 32, 8),
                                    ("triangle attention (pair)", 128, 32, 4),
                                    ("extra-MSA global column attention", 64, 8, 8),
                                    ("template pointwise attention", 128, 16, 4),
                                    ("invariant point attention (scalar)", 384, 16, 12)]:
    print(f"{where:<36} c_in={width:<4} {heads:>2} heads x c={c_head:<3} = {heads * c_head:<4}"
          f" conserved: {heads * c_head == width}")

# %% [markdown]
# ## Matching `torch.nn.MultiheadAttention`
#
# PyTorch's `nn.MultiheadAttention(embed_dim, num_heads)` is the same computation with other
# parameter names. It always conserves the width (each head has embed_dim / num_heads channels)
# and keeps the three input projections in one stacked tensor:
#
# | ours | `nn.MultiheadAttention` |
# |---|---|
# | `linear_q.weight`, `linear_k.weight`, `linear_v.weight` (N_head·c, c_in) each | `in_proj_weight` (3·embed_dim, embed_dim), stacked q, k, v |
# | their biases (only with `use_bias_for_embeddings=True`) | `in_proj_bias` (3·embed_dim), present when `bias=True` |
# | `linear_o` | `out_proj` |
# | x of shape (B, L, c) | `batch_first=True` (the default is (L, B, c)!) |
# | `attention_mask`: True = real key | `key_padding_mask`: True = **ignore** this key |
#
# `bias=True` (its default) gives it biases on q, k, v *and* on the output, so it matches our
# module with `use_bias_for_embeddings=True`:

# %%
c_in, N_head = 16, 4
ours = fill_parameters(MultiHeadAttention(c_in, c_in // N_head, N_head,
                                          use_bias_for_embeddings=True), seed=5)
theirs = nn.MultiheadAttention(c_in, N_head, bias=True, batch_first=True).double()
with torch.no_grad():
    theirs.in_proj_weight.copy_(torch.cat([ours.linear_q.weight, ours.linear_k.weight,
                                           ours.linear_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.linear_q.bias, ours.linear_k.bias,
                                         ours.linear_v.bias]))
    theirs.out_proj.weight.copy_(ours.linear_o.weight)
    theirs.out_proj.bias.copy_(ours.linear_o.bias)

x = torch.randn(2, 6, c_in, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # sequence 1 has 2 padding tokens
theirs_out = theirs(x, x, x, need_weights=False)[0]
theirs_masked = theirs(x, x, x, key_padding_mask=~real, need_weights=False)[0]
print(_("no mask, equal:     "), torch.allclose(ours(x), theirs_out, rtol=0, atol=1e-12))
print(_("padding mask, equal:"), torch.allclose(ours(x, attention_mask=real), theirs_masked,
                                             rtol=0, atol=1e-12))

# %% [markdown]
# An AlphaFold-style module (`use_bias_for_embeddings=False`: no bias on q, k, v, but a bias on
# the output) has no exact twin there: `bias=False` drops the output bias too. Two ways to line
# them up: keep `bias=True` and zero `in_proj_bias`, or use `bias=False` and zero our
# `linear_o.bias`:

# %%
af2_style = fill_parameters(MultiHeadAttention(c_in, c_in // N_head, N_head), seed=6)
with_bias = nn.MultiheadAttention(c_in, N_head, bias=True, batch_first=True).double()
no_bias = nn.MultiheadAttention(c_in, N_head, bias=False, batch_first=True).double()
stacked = torch.cat([af2_style.linear_q.weight, af2_style.linear_k.weight,
                     af2_style.linear_v.weight])
with torch.no_grad():
    for twin in (with_bias, no_bias):
        twin.in_proj_weight.copy_(stacked)
        twin.out_proj.weight.copy_(af2_style.linear_o.weight)
    with_bias.in_proj_bias.zero_()
    with_bias.out_proj.bias.copy_(af2_style.linear_o.bias)
print(_("bias=True, in_proj_bias zeroed, equal:"),
      torch.allclose(af2_style(x), with_bias(x, x, x, need_weights=False)[0], rtol=0, atol=1e-12))
with torch.no_grad():
    af2_style.linear_o.bias.zero_()
print(_("bias=False vs ours with linear_o.bias zeroed, equal:"),
      torch.allclose(af2_style(x), no_bias(x, x, x, need_weights=False)[0], rtol=0, atol=1e-12))

# %% [markdown]
# ## Why AlphaFold gives Q, K and V no bias
#
# With biases, the score of query i and key j (leaving out the 1/√c, which scales every term
# alike) expands into four terms:
#
# (W_q x_i + b_q) · (W_k x_j + b_k) = **(W_q x_i)·(W_k x_j)** + **(W_q x_i)·b_k** + **b_q·(W_k x_j)** + **b_q·b_k**
#
# | term | depends on | along the key axis j |
# |---|---|---|
# | (W_q x_i)·(W_k x_j) | i and j | the content match |
# | (W_q x_i)·b_k | i only | constant in each row: **the softmax over keys cancels it** |
# | b_q·(W_k x_j) | j only | differs between keys: **survives**, a per-key bonus the same for every query |
# | b_q·b_k | nothing | constant: **cancelled** |
#
# The softmax over keys ignores anything constant along a row: softmax(s + a) = softmax(s). So
# b_k vanishes completely, and b_q survives only as a "some keys are generally worth more"
# prior that does not depend on the query. Let us check every claim in code:

# %%
generator = torch.Generator().manual_seed(7)
L, c_in, c = 5, 8, 4
x = torch.randn(L, c_in, generator=generator, dtype=torch.float64)
W_q, W_k = (torch.randn(c, c_in, generator=generator, dtype=torch.float64) for _ in range(2))
b_q, b_k = (torch.randn(c, generator=generator, dtype=torch.float64) for _ in range(2))

full = (x @ W_q.T + b_q) @ (x @ W_k.T + b_k).T / math.sqrt(c)   # (L, L): query i, key j
content = (x @ W_q.T) @ (x @ W_k.T).T / math.sqrt(c)
query_only = ((x @ W_q.T) @ b_k / math.sqrt(c))[:, None]         # (L, 1): one value per row
key_only = ((x @ W_k.T) @ b_q / math.sqrt(c))[None, :]           # (1, L): one value per column
constant = b_q @ b_k / math.sqrt(c)


def same(a, b):
    return torch.allclose(a, b, rtol=0, atol=1e-12)


print(_("four terms add up to the biased score:"), same(full, content + query_only + key_only + constant))
print(_("softmax(full) == softmax(content + key_only):  "),
      same(full.softmax(-1), (content + key_only).softmax(-1)))
print(_("softmax(full) == softmax(content):             "),
      same(full.softmax(-1), content.softmax(-1)))
print(_("dropping b_k changes nothing:                  "),
      same(full.softmax(-1), ((x @ W_q.T + b_q) @ (x @ W_k.T).T / math.sqrt(c)).softmax(-1)))

# %% [markdown]
# The value bias fares no better. Each row of weights sums to 1, so Σ_j w_ij (v_j + b_v) =
# Σ_j w_ij v_j + b_v: every position's output just shifts by b_v, and `linear_o` turns that
# into the constant W_o b_v, which `linear_o`'s own bias can hold. So a module with all three
# biases computes exactly what one with only b_q computes, after moving W_o b_v into the
# output bias (the one exception: a fully masked query has zero weights and gets no b_v). This
# holds for a module without a gate: AF2's gate multiplies o channel by channel *before*
# `linear_o`, so the shift b_v becomes gate ⊙ b_v, which varies with x and no longer folds into
# a constant:

# %%
biased = fill_parameters(MultiHeadAttention(8, 4, 2, use_bias_for_embeddings=True), seed=8)
x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
reference_out = biased(x)
with torch.no_grad():
    biased.linear_o.bias += biased.linear_o.weight @ biased.linear_v.bias  # absorb W_o b_v
    biased.linear_v.bias.zero_()
    biased.linear_k.bias.zero_()
print(_("b_k and b_v removed, output unchanged:"), same(biased(x), reference_out))
with torch.no_grad():
    biased.linear_q.bias.zero_()
print(_("b_q removed as well, output unchanged:"), same(biased(x), reference_out))

# %% [markdown]
# So, without a gate, of the 3·N_head·c bias numbers only b_q does anything, and what it does
# (a per-key prior) AlphaFold2 supplies through a dedicated channel instead: the attention **bias** added to the
# scores, such as the pair bias of lesson 04. (AF2's papers do not give a reason for bias-free
# Q/K/V; this argument is the course's own.) Keeping Q/K/V as pure content projections and
# putting every prior into that explicit bias is a clean split; many modern language models
# (LLaMA, for instance) drop these biases too. `linear_o` keeps its bias: its output is added
# back into the residual stream, where a free offset is useful. Other well-known models (BERT,
# for one) do put a bias on every Linear, and `nn.MultiheadAttention` defaults to `bias=True`:
# that is why `use_bias_for_embeddings` exists, so that you can build both.

# %% [markdown]
# ## The module as a graph
#
# [torchview](https://github.com/mert-kurttutan/torchview) traces a forward pass and draws every
# module and tensor operation. It renders through Graphviz's `dot`; where there is none, the
# cell prints the graph's DOT source instead (paste it into any Graphviz viewer).

# %% tags=["nbval-ignore-output"]
from course.plots import show_model_graph

# c_in=16, 4 heads of width 3: N_head*c = 12, so every axis has its own size in the graph
graph = show_model_graph(MultiHeadAttention(16, 3, 4), torch.randn(2, 5, 16), "MultiHeadAttention")

# %% [markdown]
# Read it top to bottom (x is (2, 5, 16), 4 heads of width 3): `movedim` puts the attention axis
# at −2 (a no-op for rows); three `Linear` nodes are the joint projections to 12 channels; `view`
# (2, 5, 4, 3) and `transpose` (2, 4, 5, 3) split the heads (the keys get one more `transpose`
# for kᵀ); `matmul` and `div` give the scaled scores (2, 4, 5, 5); `amax`, `sub`, `exp`, `sum`,
# `div` are your stable softmax from lesson 01; the second `matmul` mixes the values; `transpose`
# and `reshape` merge the heads back to (2, 5, 12); the last `Linear` is `linear_o`.
#
# ## Widget: heads, parameters, attention maps
#
# Pick the width c_in and the number of heads. Left: the parameter count against N_head, width
# conserved and widened, with 4·c_in² for reference. Right: each head's attention weights on the
# same 8 tokens (random, seeded, weights drawn independently of your code). Notice how, with the
# width conserved, more heads give more (and narrower) maps for the same parameter count.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson03 import heads_explorer

heads_explorer()

# %% [markdown]
# ## The production path: PyTorch's fused attention
#
# Your `_attention` builds the (*, N_head, L, L) score tensor explicitly: perfect for learning,
# and for inspecting weights. `torch.nn.functional.scaled_dot_product_attention` computes the
# same function with fused kernels that, on a GPU, never store the whole score tensor
# (FlashAttention and memory-efficient attention). Here is the module's forward with only the
# attention step swapped, using the module's own weights:

# %%
def forward_with_fused_attention(module, x, attention_mask=None):
    """module(x, attention_mask=...) for a non-global, ungated MultiHeadAttention, via F.sdpa."""
    x = x.movedim(module.attn_dim, -2)
    q, k, v = (split_heads(layer(x), module.N_head)
               for layer in (module.linear_q, module.linear_k, module.linear_v))
    key_mask = None
    if attention_mask is not None:
        mask_dim = module.attn_dim if module.attn_dim >= 0 else module.attn_dim + 1
        key_mask = attention_mask.movedim(mask_dim, -1)[..., None, None, :]
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)  # (*, N_head, L, c)
    return module.linear_o(merge_heads(o)).movedim(-2, module.attn_dim)


x = torch.randn(2, 3, 7, 16, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
real = torch.ones(2, 3, 7, dtype=torch.bool)  # one flag per position: x.shape[:-1]
real[0, :, 5:] = False  # example 0: the last two positions of every row are padding
real[1, 2, :] = False   # example 1: the third row is padding
for attn_dim in (-2, -3):
    module = fill_parameters(MultiHeadAttention(16, 4, 4, attn_dim=attn_dim), seed=12)
    print(f"attn_dim={attn_dim}: fused == teaching path:",
          same(forward_with_fused_attention(module, x, real), module(x, attention_mask=real)))

# %% [markdown]
# How much faster is it on this machine? The cell times both paths (float32, one CPU thread,
# best of 5 runs) at three sizes and prints only the ratio: absolute times depend on your CPU,
# and a GPU gives other ratios again. The teaching path materialises the whole
# (B, N_head, L, L) score tensor and makes several passes over it (scale, mask, max, exp, sum,
# divide); the fused kernel does not. On a CPU, at these small sizes, the ratio depends on the
# shapes, the threads and what else the machine runs, and need not grow steadily with L: the
# cell prints whether it did in this run.
#
# `best_time` (from `course/measure.py`) makes one untimed warm-up call (the first may allocate
# memory or pick a kernel), then keeps the fastest of 5: other programs only ever add time.

# %% tags=["nbval-ignore-output"]
threads = torch.get_num_threads()
torch.set_num_threads(1)  # one thread: fairer to both paths, and steadier on a busy machine
ratios = []
with torch.inference_mode():
    for batch, length in [(8, 64), (2, 256), (1, 512)]:
        module = MultiHeadAttention(64, 16, 4)
        x = torch.randn(batch, length, 64, generator=torch.Generator().manual_seed(0))
        teaching = best_time(lambda: module(x))
        fused = best_time(lambda: forward_with_fused_attention(module, x))
        ratios.append(teaching / fused)
        print(f"B={batch}, L={length:>4}: teaching path / fused = {teaching / fused:5.1f}x")
torch.set_num_threads(threads)
grows = all(a < b for a, b in zip(ratios, ratios[1:]))
print(_("in this run the gap"), "grew with L at every step" if grows else "did not grow steadily with L")

# %% [markdown]
# ## Self-check
#
# 1. c_in = 128 with 4 heads, width conserved: what is c, and how many parameters do the four
#    projections have (Q/K/V without bias)?
# 2. `x.view(*batch, N_head, L, c)` gives the right shape. What goes wrong?
# 3. Which of b_q, b_k, b_v changes the attention weights, and how?
# 4. You copy our AlphaFold-style module's weights into `nn.MultiheadAttention(bias=False)`;
#    the outputs differ by the same vector at every position. Why?
# 5. Our `attention_mask` and PyTorch's `key_padding_mask` both have shape (B, L). How do you
#    turn one into the other?
#
# <details><summary>Answer</summary>
#
# 1. c = 128 / 4 = 32; 4·128² + 128 = 65,664 parameters (the cell below prints it), the same as
#    a single head of width 128.
# 2. `view` re-reads memory in order, so "head 0" would be the first L·c numbers: whole
#    positions, not channels 0…c−1 of every position. Split the last axis into (N_head, c), then
#    transpose the head axis in front of L.
# 3. Only b_q: it adds b_q·(W_k x_j), a bonus per key, the same for every query. b_k adds terms
#    constant along each row, which the softmax over keys cancels; b_v only shifts the output
#    by a constant that `linear_o`'s bias can absorb.
# 4. `bias=False` removes PyTorch's output bias too; ours keeps `linear_o.bias`. That vector is
#    the difference.
# 5. Negate it: `key_padding_mask = ~attention_mask` (PyTorch's True means "ignore this key").
#
# </details>

# %%
print("c =", 128 // 4, " parameters:", n_parameters(MultiHeadAttention(128, 128 // 4, 4)))

# %% [markdown]
# ## Summary
#
# - Multi-head attention = one joint projection to N_head·c channels, `split_heads` (view the
#   last axis as (N_head, c), then transpose), lesson 02's attention on every head at once,
#   `merge_heads`, and `linear_o`.
# - It is exactly N independent heads whose weights are row blocks of the joint matrices.
# - With c = c_in / N_head the parameter count stays 4·c_in² (+ c_in for the output bias):
#   heads buy diversity, not size. Only widening every head multiplies it by N_head.
# - After copying weights it equals `torch.nn.MultiheadAttention` (`batch_first=True`, matching
#   bias settings, `key_padding_mask = ~attention_mask`).
# - Biases on Q/K/V barely matter: b_k and b_v cancel or fold away; b_q survives only as a
#   per-key prior, which AlphaFold2 provides through the explicit attention bias instead.
# - `F.scaled_dot_product_attention` computes the same module in one fused call (the timing cell
#   shows what that is worth on your machine); next lesson puts priors into the scores with the
#   bias, and turns the module by 90° with `attn_dim`.
# - Next: [lesson 04, bias and broadcasting](04_bias_broadcasting.ipynb).
