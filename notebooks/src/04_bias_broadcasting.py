# %% [markdown]
# # Lesson 04: attention bias and broadcasting
#
# **Prerequisites:** lesson 02's `scaled_dot_product_attention` and lesson 03's
# `MultiHeadAttention` (`exercises/mha.py`): this lesson adds biases to them.
#
# **Without AlphaFold2 background?** This lesson's AlphaFold2 parts are optional: *AlphaFold2's
# pair bias* (exercise `PairBias`), *Row and column attention* and *A toy MSA*. Lessons 05 and 06
# build on them; lessons 07 and 08 do not. The rest (biases, masks, ALiBi, T5, broadcasting and its
# exercise) is for everyone.
#
# **In this lesson you will**
# - see what an additive bias on the scores does, and move one with a slider;
# - build the bias family in code: padding mask, ALiBi, T5's bucketed relative positions and
#   AlphaFold2's pair bias from the pair representation z (an exercise);
# - add a bias of shape (B, N_head, R, R) to scores of shape (B, S, N_head, R, R), and more
#   generally to scores of any higher rank (an exercise), and see why the size-1 axis must go in
#   the middle, not at the front;
# - turn the same `MultiHeadAttention` into row or column attention with `attn_dim`;
# - find, in a toy MSA, a coupling between two positions that no single sequence can reveal.

# %%
import course_setup  # noqa: F401

import matplotlib.pyplot as plt
import torch

from course.checks.inputs import fill_parameters
from course.i18n import _  # figure titles and labels in the notebook's language

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Where a bias enters
#
# Lesson 02 already accepted a `bias`: a tensor added to the scaled scores, before the softmax.
#
# weights = softmax(q kᵀ / √c **+ bias**) over the keys
#
# The content match q·k says how well query i and key j fit; the bias adds a **prior** for the
# pair (i, j) that does not come from their content: "nearby tokens matter more", "this key is
# padding", "AlphaFold thinks residues i and j touch". Content sets the baseline, the prior adds
# or subtracts points, and the softmax turns the sum into weights.
#
# Do not confuse it with the other way position enters a Transformer: the 2017 paper's sinusoidal
# position encodings (and GPT's learned position embeddings) are added to the **input** x, and
# attention only sees position through the content. The bias family acts on the **scores**.
#
# One query, four keys: a bias of +2 on key 3 moves weight towards it, and the other keys pay
# for it, since the weights still sum to 1.

# %%
scores = torch.tensor([1.0, 0.5, 0.2, -0.3], dtype=torch.float64)
bias = torch.tensor([0.0, 0.0, 0.0, 2.0], dtype=torch.float64)
print(_("without bias:"), torch.softmax(scores, dim=-1))
print(_("with bias:   "), torch.softmax(scores + bias, dim=-1))

# %% [markdown]
# The widget does the same on a 5 × 5 score matrix: pick a query i, a key j and the bias b on that
# one pair. Only row i changes. Push b far below zero and key j disappears from row i: a mask is
# just a very negative bias.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson04 import pair_bias_explorer

pair_bias_explorer()

# %% [markdown]
# ## The bias family
#
# Every member below produces a tensor ending in `(N_head, q, k)` (or size-1 axes there), ready to
# be added to scores `(*, N_head, q, k)`. They live in `exercises/bias.py`; all but the pair
# bias and the broadcasting helper are written for you.
#
# ### Padding mask as a bias
#
# Lesson 02 masked with booleans. The additive form is 0 for real keys and a huge negative number
# for padding (AlphaFold2 uses −1e9): e^(−1e9) is exactly 0 in floating point, so a padded key gets
# no weight. The shape `(B, 1, 1, L)` broadcasts over the heads and the queries.

# %%
from exercises.attention import scaled_dot_product_attention
from exercises.bias import padding_bias

real = torch.tensor([[True, True, True, True, True],
                     [True, True, True, False, False]])  # sequence 1: 3 tokens + 2 padding
pad_bias = padding_bias(real).double()
print(_("padding bias"), tuple(pad_bias.shape), "\n", pad_bias[:, 0, 0])

generator = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 4, 5, 8, generator=generator, dtype=torch.float64) for _ in range(3))
by_bias = scaled_dot_product_attention(q, k, v, bias=pad_bias)
by_mask = scaled_dot_product_attention(q, k, v, mask=real[:, None, None, :])
print(_("bias form == boolean mask:"), torch.allclose(by_bias, by_mask, rtol=0, atol=1e-12))

# %% [markdown]
# ### ALiBi: a fixed penalty for distance
#
# ALiBi (Press et al., 2022) adds −m_h·|i − j|: the further the key, the lower its score, with a
# different slope m_h per head, so some heads look far and others only nearby. No parameters at
# all; for a power-of-two head count the slopes form a geometric sequence 2^(−8/N_head),
# 2^(−16/N_head), … (for 8 heads: 1/2, 1/4, …, 1/256). For other head counts `alibi_slopes`
# follows the authors' code: the slopes of the power of two below, then every other slope of
# twice that count (the cell prints 6 heads). It was made for causal language models, where only
# j ≤ i counts.

# %%
from exercises.bias import alibi_bias, alibi_slopes

print(_("slopes for 8 heads:"), alibi_slopes(8))
print(_("slopes for 6 heads:"), alibi_slopes(6))
alibi = alibi_bias(8, 8)  # (N_head, L, L)
print(_("ALiBi bias"), tuple(alibi.shape), "head 0, query 0:", alibi[0, 0])

fig, axes = plt.subplots(1, 3, figsize=(9, 2.8), layout="constrained")
for ax, head in zip(axes, (0, 3, 7)):  # one colour scale for all: steep heads look far less
    image = ax.imshow(alibi[head].numpy(), cmap="magma", vmin=alibi.min().item(), vmax=0.0)
    ax.set_title(_("head {head}: slope {slope:.4f}").format(head=head, slope=alibi_slopes(8)[head]),
                 fontsize=9)
    ax.set_xlabel(_("key j"))
    ax.set_ylabel(_("query i"))
fig.colorbar(image, ax=axes, shrink=0.8, label=_("bias"))
plt.show()

# %% [markdown]
# ### T5: a learned scalar per head and per distance bucket
#
# T5 (Raffel et al., 2020, building on Shaw et al., 2018) learns one number per head for each
# **bucket** of relative position j − i. Small distances get their own bucket; larger ones share
# buckets whose width grows logarithmically, and the last bucket takes every distance from some
# point on (91 with the default `max_distance=128`), however far. With the default 32 buckets in
# both directions, 16 are for keys after the query and 16 for the rest. In the "before" half
# (j ≤ i) buckets 0 to 7 are the exact distances 0 to 7; in the "after" half distances 1 to 7
# map to buckets 17 to 23, and bucket 16 (distance 0 after the query) is never used, because
# j − i = 0 already falls in the first half:

# %%
from exercises.bias import RelativePositionBias, relative_position_bucket

relative = torch.tensor([-300, -128, -100, -50, -20, -12, -8, -7, -1, 0, 1, 2, 7, 8, 20, 50, 128, 300])
buckets = relative_position_bucket(relative)
print(" j - i :", " ".join(f"{d:>4}" for d in relative.tolist()))
print(_("bucket :"), " ".join(f"{b:>4}" for b in buckets.tolist()))
distances = torch.arange(-150, 151)
all_buckets = relative_position_bucket(distances)
print(_("last bucket after the query starts at j - i ="), distances[all_buckets == 31].min().item(),
      "; before it at j - i =", distances[all_buckets == 15].max().item())
print(_("after the query, j - i = 1..7 -> buckets"), relative_position_bucket(torch.arange(1, 8)).tolist(),
      "; bucket 16 used for some j - i in -300..300:",
      bool((relative_position_bucket(torch.arange(-300, 301)) == 16).any()))

plt.figure(figsize=(7, 2.6))
plt.step(distances.numpy(), all_buckets.numpy(), where="mid")
plt.xlabel(_("relative position j − i"))
plt.ylabel(_("bucket"))
plt.title(_("T5 buckets: exact near 0, logarithmic further out, one last bucket from ±91 on"),
          fontsize=9)
plt.show()

# %% [markdown]
# The module is an `nn.Embedding(num_buckets, N_head)`: look up every pair's bucket, then move
# the head axis in front. Its size does not depend on the sequence length:

# %%
t5_bias = fill_parameters(RelativePositionBias(N_head=4), seed=1)
print(_("parameters:"), sum(p.numel() for p in t5_bias.parameters()), "= 32 buckets x 4 heads")
print(_("bias for L=6:"), tuple(t5_bias(6, 6).shape), "  for L=500:", tuple(t5_bias(500, 500).shape))
print(_("head 0, query 2, keys 0..5:"), t5_bias(6, 6)[0, 2].detach())

# %% [markdown]
# AlphaFold2 uses the same idea for residues: the difference of residue indices i − j, clipped to
# ±32, one-hot over 65 bins, goes through a Linear into the initial pair representation z
# (supplement, algorithm 4, "relpos"). It does not stop there, which leads to the last member.
#
# ### AlphaFold2's pair bias
#
# AlphaFold2 keeps a learned feature vector z[i, j] of c_z channels for every residue pair
# (the pair representation). Row attention over the MSA reads its bias from z, computed afresh
# in every block (supplement, algorithm 7):
#
# 1. LayerNorm over the c_z channels of z;
# 2. a Linear c_z → N_head **without** a bias: one number per head for each pair;
# 3. the head axis comes out last, `(*, R, R, N_head)`, and must move in front of the two residue
#    axes: `(*, N_head, R, R)`, with i (query) still before j (key).
#
# So the prior is not a fixed table (ALiBi) or a lookup by distance (T5): it is computed from a
# representation that the network refines as it goes, and gradients flow back into z through it.
#
# **Exercise.** Write `PairBias(c_z, N_head)` in `exercises/bias.py` with the parameter names
# `layer_norm_z` and `linear_z`.
#
# Hint for step 3: `transpose(-1, -3)` gives the right shape but swaps i and j as well (head h
# gets its bias transposed); `movedim(-1, -3)` moves the head axis and keeps the others in order.

# %% tags=["check"]
from course.checks.lesson04 import check_pair_bias
from exercises.bias import PairBias

check_pair_bias(PairBias)

# %%
B, S, R, c_m, c_z, N_head = 2, 4, 5, 16, 8, 8
generator = torch.Generator().manual_seed(2)
z = torch.randn(B, R, R, c_z, generator=generator, dtype=torch.float64)
pair_bias = fill_parameters(PairBias(c_z, N_head), seed=3)(z)
print("z", tuple(z.shape), "-> pair bias", tuple(pair_bias.shape), "  (B, N_head, R, R)")

# %% [markdown]
# ## Broadcasting: a bias with fewer axes than the scores
#
# Row attention runs over every sequence of the MSA m of shape `(B, S, R, c_m)` (B proteins, S
# sequences each, R residues). Its scores have shape `(B, S, N_head, R, R)`. The pair bias has
# shape `(B, N_head, R, R)`: there is **no S axis**, because the same pair prior applies to
# every sequence of the alignment.
#
# PyTorch broadcasts by aligning shapes **from the right** and stretching size-1 axes; missing
# axes are added as size 1 **at the front**. Line the two shapes up:
#
# ```
# scores     (B=2, S=4, N_head=8, R=5, R=5)
# bias as is       (2,        8,   5,   5)   -> read as (1, 2, 8, 5, 5): B lines up with S!
# bias fixed       (2,   1,   8,   5,   5)   -> the 1 stretches over S: one bias per protein
# ```
#
# The fix inserts a size-1 axis **between the bias's batch axes and its last three axes**. What
# if we insert it at the front instead, `bias.unsqueeze(0)` of shape (1, 2, 8, 5, 5)? That is
# exactly what broadcasting does anyway, so it aligns B with S again. With B = 2 and S = 4 it
# fails loudly:

# %%
scores = torch.randn(B, S, N_head, R, R, generator=generator, dtype=torch.float64)
try:
    scores + pair_bias.unsqueeze(0)
except RuntimeError as error:
    print(_("RuntimeError:"), error)

# %% [markdown]
# Worse: when the sizes happen to agree, nothing fails. With 3 proteins of 3 sequences each, the
# front insertion runs, and sequence s of every protein silently receives the pair bias of
# **protein s**, a different protein:

# %%
z3 = torch.randn(3, R, R, c_z, generator=generator, dtype=torch.float64)
bias3 = fill_parameters(PairBias(c_z, N_head), seed=3)(z3)  # (3, N_head, R, R)
scores3 = torch.randn(3, 3, N_head, R, R, generator=generator, dtype=torch.float64)
wrong = scores3 + bias3.unsqueeze(0)   # (1, 3, ...): no error
right = scores3 + bias3.unsqueeze(1)   # (3, 1, ...)
print(_("shapes:"), tuple(wrong.shape), tuple(right.shape))
print(_("same result:"), torch.equal(wrong, right))
print(_("protein 0, sequence 1 got the bias of protein 1:"),
      torch.allclose(wrong[0, 1] - scores3[0, 1], bias3[1], rtol=0, atol=1e-12))

# %% [markdown]
# ### Exercise: any number of missing axes
#
# The same module serves scores of different ranks: row attention (B, S, N_head, R, R) with a
# bias (B, N_head, R, R) needs one size-1 axis; a language model's scores (B, N_head, L, L) with
# a bias of the same rank need none; ALiBi's (N_head, L, L) has no batch axes at all, so the
# size-1 axes go in front (there is nothing to go between). The general rule, with
# n = scores_ndim − bias.ndim:
#
# `(*batch, N_head, q, k)` → `(*batch, 1, …, 1 (n times), N_head, q, k)`, where batch = `bias.shape[:-3]`.
#
# Write `broadcastable_bias(bias, scores_ndim)` in `exercises/bias.py` (return a view; `add_bias`
# in the same file uses it).

# %% tags=["check"]
from course.checks.lesson04 import check_broadcastable_bias
from exercises.bias import add_bias, broadcastable_bias

check_broadcastable_bias(broadcastable_bias)

# %%
for bias_shape, scores_shape in [((2, 8, 5, 5), (2, 4, 8, 5, 5)),   # row attention + pair bias
                                 ((2, 8, 5, 5), (2, 8, 5, 5)),      # same rank: nothing to do
                                 ((8, 5, 5), (2, 4, 8, 5, 5)),      # no batch axes (ALiBi-like)
                                 ((2, 3, 8, 5, 5), (2, 3, 4, 6, 8, 5, 5))]:
    aligned = broadcastable_bias(torch.zeros(bias_shape), len(scores_shape))
    print(f"bias {str(bias_shape):<17} scores {str(scores_shape):<23} -> {tuple(aligned.shape)}")
print(_("add_bias == the explicit unsqueeze:"), torch.equal(add_bias(scores3, bias3), right))

# %% [markdown]
# ## Row and column attention: one module, `attn_dim`
#
# An MSA is a table: S rows (sequences of related proteins, one per species, say) by R columns
# (aligned residue positions). Attention can run along either direction:
#
# - **row attention** (`attn_dim=-2`, along R): within one sequence, position i attends to
#   positions j. Scores R × R, computed for each of the S rows: `(B, S, N_head, R, R)`.
# - **column attention** (`attn_dim=-3`, along S): at one position, sequence s attends to the
#   other sequences. Scores S × S, computed for each of the R columns: `(B, R, N_head, S, S)`.
#
# The scores always pair up things of one kind: residues with residues, or sequences with
# sequences. `MultiHeadAttention.forward` starts with `x.movedim(attn_dim, -2)`: it moves the
# axis to attend along into the "sequence" slot, runs the same code as before, and moves it
# back. So column attention is row attention on the transposed table, with the same weights:

# %%
from exercises.mha import MultiHeadAttention

m = torch.randn(B, S, R, c_m, generator=generator, dtype=torch.float64)
row_attention = fill_parameters(MultiHeadAttention(c_m, c_m // N_head, N_head, attn_dim=-2), seed=4)
column_attention = fill_parameters(MultiHeadAttention(c_m, c_m // N_head, N_head, attn_dim=-3),
                                 seed=4)

by_columns = column_attention(m)
by_rows_of_transpose = row_attention(m.transpose(-3, -2)).transpose(-3, -2)
print(_("shapes:"), tuple(row_attention(m).shape), tuple(by_columns.shape))
print(_("column attention == row attention on the transposed MSA:"),
      torch.allclose(by_columns, by_rows_of_transpose, rtol=0, atol=1e-12))

# %% [markdown]
# Row attention is where the pair bias goes: its scores are `(B, S, N_head, R, R)`, and the bias
# `(B, N_head, R, R)` needs one size-1 axis for S. Passing the aligned bias gives the same result
# as running each sequence on its own with the plain bias:

# %%
with_pair_bias = row_attention(m, bias=broadcastable_bias(pair_bias, 5))
one_by_one = torch.stack([row_attention(m[:, s], bias=pair_bias) for s in range(S)], dim=1)
print(_("pair bias broadcast over S == sequence by sequence:"),
      torch.allclose(with_pair_bias, one_by_one, rtol=0, atol=1e-12))

# %% [markdown]
# Why not fold S into the batch axis B and be done? Because batch elements never exchange
# information: that is what makes them a batch. The sequences of an MSA must exchange information,
# and column attention is where they do so directly. Changing B never changes a protein's
# prediction; changing S (how many related sequences we feed) does.
#
# ## A toy MSA: a coupling that only the rows together reveal
#
# `data/toy_msa.fasta` is a made-up alignment of 48 sequences × 60 positions (generated by
# `scripts/make_toy_msa.py`). Two positions are coupled, as in the source notes' example:
# whenever position 37 has L (leucine), position 54 has V (valine), and whenever 37 has S
# (serine), 54 has T (threonine). In a real protein that pattern means the two residues probably
# touch in 3D: a mutation at one is compensated by a mutation at the other. Positions 12 and 20
# are decoys with the same letters in the same proportions, shuffled independently.

# %%
from course.widgets.lesson04 import column_mutual_information, one_hot_msa, read_fasta

names, sequences = read_fasta()
print(f"{len(sequences)} sequences x {len(sequences[0])} positions")
print(_("          pos 12  pos 20  pos 37  pos 54"))
for name, row in list(zip(names, sequences))[:6]:
    print(f"{name:<8}" + "".join(f"{row[p - 1]:>8}" for p in (12, 20, 37, 54)))

# %% [markdown]
# **One sequence** shows one letter per position: seq01 has S at 12, V at 20, L at 37, V at 54.
# Nothing in it says that 37 and 54 belong together and 12 and 20 do not; both are just pairs
# of letters. A statistic needs samples, and one sequence is one sample: measured on a single
# row, the mutual information between every pair of positions is zero.
#
# **One column at a time** does not help either: positions 12 and 37 have identical letter
# counts, and so do 20 and 54.

# %%
from collections import Counter

msa = one_hot_msa(sequences)  # (S, R, 20)
print(_("max mutual information from seq01 alone:"), column_mutual_information(msa[:1]).max().item())
for position in (12, 37, 20, 54):
    print(f"position {position}: {dict(sorted(Counter(row[position - 1] for row in sequences).items()))}")

# %% [markdown]
# **Across the rows**, pairs of positions reveal it: count, over all 48 sequences, which letters
# occur together. At (37, 54) only L+V and S+T occur; at (12, 20) every combination does.
# Mutual information condenses such a table into one number per pair of positions: log 2 ≈ 0.693
# nats for a perfect two-letter coupling, near 0 for independent columns.

# %%
for first, second in ((37, 54), (12, 20)):
    pairs = Counter((row[first - 1], row[second - 1]) for row in sequences)
    print(f"positions ({first}, {second}):", dict(sorted(pairs.items())))

mi = column_mutual_information(msa)  # (R, R), computed along the sequence axis
order = mi.triu().flatten().argsort(descending=True)[:3]
for index in order.tolist():
    i, j = divmod(index, mi.shape[0])
    print(f"MI(position {i + 1}, position {j + 1}) = {mi[i, j].item():.3f} nats")
print(f"MI(position 12, position 20) = {mi[11, 19].item():.3f} nats   (log 2 = {torch.tensor(2.0).log().item():.3f})")

plt.figure(figsize=(4.2, 3.6))
R_msa = mi.shape[0]
plt.imshow(mi.numpy(), cmap="viridis", extent=(0.5, R_msa + 0.5, R_msa + 0.5, 0.5))
plt.colorbar(label=_("mutual information (nats)"))
plt.xlabel(_("position j"))
plt.ylabel(_("position i"))
plt.title(_("one bright pair: (37, 54)"), fontsize=9)
plt.show()

# %% [markdown]
# The next pairs score much lower: they are random mutations that happened to land in the same
# few sequences. With more sequences that noise shrinks, which is one reason AlphaFold does
# better on proteins with deep alignments.
#
# Think of the MSA as a questionnaire: each sequence is one filled-in answer sheet, each position
# one question. We are not looking for two answer sheets that look alike; we are looking for two
# questions whose answers move together across all the sheets. The answer is about positions,
# the evidence comes from the sequences.
#
# Note what the statistic is: `pair_frequencies` in `course/widgets/lesson04.py` averages, **over
# the sequence axis**, the outer product of two positions' one-hot columns. The result is a
# feature for every pair of positions (i, j) of shape (R, R, 20, 20). AlphaFold2's "outer product
# mean" computes the same kind of thing from learned features, writes it into z, and z comes back
# as the pair bias of row attention.
#
# Which attention can gather such statistics? Row attention of sequence 1 never sees any other
# sequence: change sequence 2 and sequence 1's row-attention output stays identical. Column
# attention mixes the sequences at each position, so sequence 1's output moves:

# %%
embed = fill_parameters(torch.nn.Linear(20, c_m), seed=5)
rows = embed(msa)[None]  # (1, S, R, c_m): the toy MSA as one batch element
edited = msa.clone()
edited[1, 36] = 0.0
edited[1, 36, "ACDEFGHIKLMNPQRSTVWY".index("S")] = 1.0  # sequence 2, position 37: L -> S
edited_rows = embed(edited)[None]
for name, attention in (("row", row_attention), ("column", column_attention)):
    change = (attention(edited_rows) - attention(rows))[0, 0].abs().max().item()
    print(f"{name:>6} attention: sequence 1's output changed by {change:.3g}")

# %% [markdown]
# So the names describe the axis attention runs along, not what is discovered. The coupling
# between two **positions** (columns 37 and 54) is found by statistics **along the sequences**,
# the column direction; row attention is the consumer, reading the result through the pair bias
# ("when you read position 54, look at position 37").
#
# ## Self-check
#
# 1. Scores (B, S, N_head, R, R) = (2, 4, 8, 5, 5), pair bias (2, 8, 5, 5). What does
#    `broadcastable_bias` return, and what goes wrong with `bias.unsqueeze(0)`?
# 2. Triangle attention in AlphaFold2 has scores (B, R, N_head, R, R) and a bias (B, N_head, R, R)
#    from z. How many size-1 axes, and where?
# 3. Why must a padding bias be 0 (not 1) for real keys?
# 4. T5 with 32 buckets (both directions) and max_distance 128: which bucket do j − i = 200 and
#    j − i = 1000 fall into, and why is that useful?
# 5. Why can no single sequence of the toy MSA show that positions 37 and 54 are coupled?
#
# <details><summary>Answer</summary>
#
# 1. A view of shape (2, 1, 8, 5, 5). `unsqueeze(0)` gives (1, 2, 8, 5, 5), which lines B = 2
#    up with S = 4 and raises; when B = S it runs and hands each sequence the bias of another
#    protein.
# 2. One, after B: (B, 1, N_head, R, R). It is the same rank pattern as row attention; the
#    module does not care which representation the rows come from.
# 3. The bias is *added* to the scores: 0 leaves a real key's score unchanged. (A multiplicative
#    mask would use 1.)
# 4. Both fall into the last bucket of the "after" half, bucket 31 (it starts at 91): every
#    distance from there on shares it, so the model handles any length with a fixed table and
#    treats all far keys alike.
# 5. One sequence gives one letter per position, one sample; coupling is a property of how
#    letters co-occur across many sequences. The mutual information from one row is 0 for every
#    pair; across the 48 rows it is log 2 for (37, 54) and near 0 for the decoys.
#
# </details>

# %%
print(_("answer 4:"), relative_position_bucket(torch.tensor([200, 1000])).tolist())

# %% [markdown]
# ## Summary
#
# - A bias is a prior added to the scores before the softmax: padding masks, ALiBi's linear
#   distance penalty, T5's learned per-bucket scalars, AlphaFold2's pair bias computed from z by
#   LayerNorm → bias-free Linear to N_head → `movedim(-1, -3)`.
# - Broadcasting aligns shapes from the right and pads missing axes at the front. A bias with
#   batch axes must get its size-1 axes **between** its batch axes and (N_head, q, k):
#   (B, N_head, R, R) → (B, 1, N_head, R, R) against (B, S, N_head, R, R). Inserting at the front
#   either fails or silently mixes up proteins.
# - Row and column attention are the same module; `attn_dim` picks the axis (`movedim` to −2 and
#   back). Row scores are R × R per sequence, column scores S × S per position.
# - Co-variation between positions is a statistic across sequences: invisible in any one row,
#   obvious in the columns taken together. That is why AlphaFold needs column attention, and
#   lesson 05 shows what it costs and how global attention makes it cheap.
# - Next: [lesson 05, global attention](05_global_attention.ipynb).
