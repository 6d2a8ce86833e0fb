# %% [markdown]
# # Lesson 05: global attention, and why column attention runs out of memory
#
# **Prerequisites:** lesson 03's `MultiHeadAttention` (lesson 05 extends it; its lesson-03
# parts must work first) and lesson 04's toy MSA.
#
# **Without AlphaFold2 background** this lesson is optional: it is about AlphaFold2's MSA, and
# lessons 07 and 08 do not build on it (lesson 06's full-module exercise does). Its general part,
# section 7 (memory predicted from shapes, where 24/40/80 GB cards run out, why chunking helps
# only at inference), runs on the course's own code, not on your exercises: run the code cells
# above section 1, then section 7.
#
# AlphaFold2 reads a multiple sequence alignment (MSA): S related sequences, R positions each.
# Row attention lets the positions of one sequence talk; column attention lets the sequences of
# one position talk. Column attention is where the evolutionary evidence comes from, and it is
# also the part whose cost grows with S²: for the deep "extra MSA" AlphaFold2 replaces it with a
# cheaper variant, **global column attention** (Algorithm 19 of the AF2 supplement).
#
# **In this lesson you will**
# - see on lesson 04's toy MSA why column attention cannot simply be dropped;
# - compute the cost table (number of scores and bytes for S = 512, 5120, and global) and
#   correct a common framing of it;
# - write `masked_mean` and the `is_global` option of your `MultiHeadAttention`: one averaged
#   query per column, one key/value head shared by all query heads, the 1/√c scale;
# - count parameters from real modules: 20,608 (plain, gated) vs. 13,440 (global, gated);
# - measure time and peak memory against S (log-log slopes of 2 and 1 for memory; time's come out
#   near them, depending on the machine);
# - predict the memory of column attention from shapes alone, check the prediction against the
#   profiler, find where 24/40/80 GB cards run out (and move the sizes in a widget), compare
#   with a run on a real card (an H200), and see why chunking the columns helps at inference but
#   not in training.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %%
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from course.i18n import _  # figure titles and labels in the notebook's language

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. Rows, columns, and why the columns matter
#
# The MSA representation m has shape (S, R, c) (plus a batch axis in code): S sequences (human,
# mouse, fish... versions of the same protein), R residue positions, c channels. Lesson 04 built
# both directions from one module:
#
# | | attends along | scores per slice | your module |
# |---|---|---|---|
# | row attention | the R positions of one sequence | R × R, for each of the S sequences | `MultiHeadAttention(..., attn_dim=-2)` |
# | column attention | the S sequences at one position | S × S, for each of the R positions | `MultiHeadAttention(..., attn_dim=-3)` |
#
# Lesson 04's toy MSA has 48 made-up sequences of 60 positions in which positions 37 and 54
# co-vary: L at 37 always comes with V at 54, S with T. Positions 12 and 20 carry the same
# letters in the same proportions, shuffled independently (decoys).

# %%
from course.widgets.lesson04 import TOY_MSA, column_mutual_information, one_hot_msa, read_fasta

names, sequences = read_fasta(TOY_MSA)
msa = one_hot_msa(sequences)  # (S, R, 20)
print(_("MSA one-hot:"), tuple(msa.shape), " (S sequences, R positions, 20 amino acids)")
for name, row in list(zip(names, sequences))[:4]:
    print(f"{name}  ...{row[8:22]}...{row[33:56]}...   pos 12, 20: {row[11]}{row[19]}"
          f"   pos 37, 54: {row[36]}{row[53]}")

# %% [markdown]
# A single sequence says "L at 37, V at 54", one sample of each position. That these two
# positions change *together* is a statistic across sequences, taken down the columns. The mutual
# information between two columns measures it (lesson 04): from one sequence it is 0 for every
# pair, since a column with one entry cannot vary; from all 48 sequences the coupled pair stands
# out and the decoys do not.

# %%
def top_pairs(mi, n=3):
    values, flat = mi.triu(1).flatten().topk(n)
    R = mi.shape[0]
    return [(int(i) // R + 1, int(i) % R + 1, round(v.item(), 3)) for v, i in zip(values, flat)]


mi_one = column_mutual_information(msa[:1])
mi_all = column_mutual_information(msa)
print(_("largest MI from sequence 1 alone:"), round(mi_one.max().item(), 3))
print(_("top pairs (position, position, MI in nats) from all 48:"), top_pairs(mi_all))
print(_("decoys (12, 20):"), round(mi_all[11, 19].item(), 3),
      "  ln 2 =", round(math.log(2), 3))

# %% [markdown]
# Now the attention itself. We embed the MSA (a fixed random `Linear` from the 20 one-hot
# channels to 16) and run one row-attention and one column-attention module, built from your
# lesson-03 `MultiHeadAttention`. Then we change one residue of sequence 2 (its position 54,
# V↔T) and ask: does the output for sequence 1 change?

# %%
from exercises.mha import MultiHeadAttention

torch.manual_seed(5)
embed = nn.Linear(20, 16).double()
row_attention = MultiHeadAttention(16, 4, 2, attn_dim=-2).double()
column_attention = MultiHeadAttention(16, 4, 2, attn_dim=-3).double()

edited = list(sequences)
swap = {"V": "T", "T": "V"}
edited[1] = edited[1][:53] + swap[edited[1][53]] + edited[1][54:]
m, m_edited = embed(msa), embed(one_hot_msa(edited))

with torch.no_grad():
    for label, module in [("row attention   ", row_attention), ("column attention", column_attention)]:
        change = (module(m_edited)[0] - module(m)[0]).abs().max().item()
        print(f"{label}: output of sequence 1 changed by {change:.3g}")

# %% [markdown]
# Row attention never mixes sequences: whatever the other 47 sequences say, the output for
# sequence 1 is the same. A stack of row attention alone would predict from each sequence on its
# own, and the MSA would be wasted. Column attention is the only place where sequences exchange
# information directly (the outer product mean also reads down the columns, but it writes pair
# features, not an output per sequence).
# So it cannot be dropped; the question is only what it costs.
#
# ## 2. The cost table
#
# Column attention scores every pair of sequences, for every position and every head: H · R · S²
# numbers per layer. AlphaFold2's main MSA stack uses up to 512 sequences (clusters); the extra
# MSA stack reads more. Take R = 300 residues, H = 8 heads, float32 (4 bytes per number). Here
# **GB = 10⁹ bytes**; GiB = 2³⁰ bytes is shown beside it, since tools report both.

# %%
H, R, BYTES = 8, 300, 4


def cost_row(label, n_scores):
    size = n_scores * BYTES
    print(f"{label:<46} {n_scores:>16,} {size / 1e9:>10.3f} GB {size / 2**30:>9.3f} GiB")


print(f"{'':<46} {'scores':>16} {'memory of one score tensor':>27}")
cost_row("plain column attention, S = 512", H * R * 512 * 512)
cost_row("plain column attention, S = 1024", H * R * 1024 * 1024)
cost_row("plain column attention, S = 5120", H * R * 5120 * 5120)
cost_row("  ... S = 5120, 4 columns at a time", H * 4 * 5120 * 5120)
cost_row("global column attention, S = 5120", H * R * 1 * 5120)
print(_("ratio plain / global at S = 5120:"), (H * R * 5120 * 5120) // (H * R * 5120),
      "  ratio S = 5120 / S = 512 (plain):", (5120 * 5120) // (512 * 512))

# %% [markdown]
# Two corrections to how this table is often told (including in this course's source notes):
#
# - **5120 is not the usual extra-MSA depth.** AlphaFold2's default is 1024 extra sequences;
#   5120 is used by some of the released models (models 1, 3 and 4) and in fine-tuning. The 512
#   of the main stack is the usual maximum.
# - **250 GB is not a "hard wall".** The S × S tables of different columns are independent, so
#   nothing forces all 300 of them to exist at once. AlphaFold2 at inference runs column
#   attention a few columns at a time (4 by default): about 3.4 GB at S = 5120, as the table
#   shows. What chunking does not remove is the compute (still H · R · S² scores, 100 times more
#   than at S = 512) and, in training, the memory of everything kept for the backward pass
#   (section 6). That is why AF2 uses global attention where S is large.
#
# ## 3. Global attention: one question per column
#
# Global column attention makes two changes to plain multi-head column attention:
#
# 1. **One query per column.** Average the S queries into one, q̄ (in practice: average x over
#    the sequences with a *masked* mean, then project with `linear_q`). Scores per column and head
#    go from S × S to 1 × S: cost O(S) instead of O(S²).
# 2. **One key head and one value head, shared by all query heads.** `linear_k` and `linear_v`
#    map c_in to c, not to N_head · c; the single k and v get a size-1 head axis and broadcast
#    against the N_head queries. The heads still differ, since each has its own q̄_h: eight
#    different questions put to one shared answer book.
#
# The shapes, with the attended axis at −2 after `movedim` (L = S here):
#
# | tensor | plain multi-head | global |
# |---|---|---|
# | q | (*, N_head, L, c) | (*, N_head, 1, c) from the masked mean of x |
# | k, v | (*, N_head, L, c) | (*, 1, L, c), shared |
# | scores, weights | (*, N_head, L, L) | (*, N_head, 1, L) |
# | attention output | (*, N_head, L, c) | (*, N_head, 1, c), then broadcast to every one of the L positions |
#
# A worked example by hand: one column of 3 sequences, one head, c = 2, q_s = k_s = x_s with
# x = [1, 0], [0, 1], [1, 1], and scalar values v = 2, 4, 6.

# %%
x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
v = torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64)

plain_weights = torch.softmax(x @ x.T / math.sqrt(2), dim=-1)
print(_("plain: 9 scores, one row of weights per sequence\n"), plain_weights)
print(_("plain: 3 personal outputs"), plain_weights @ v)

q_mean = x.mean(dim=0)
scores = x @ q_mean
print(_("\nglobal: q_mean ="), q_mean, " scores q_mean . k =", scores)
for label, scale in [("with 1/sqrt(c)", math.sqrt(2)), ("without the scale", 1.0)]:
    weights = torch.softmax(scores / scale, dim=-1)
    print(f"global, {label:<17}: weights {weights}  summary {(weights @ v).item():.2f}")

# %% [markdown]
# AlphaFold2 divides by √c here as everywhere else (the scale is applied after averaging and
# projecting the query), so the summary is **4.33**. You may meet 4.48 elsewhere: that is the
# same example computed without the scale.
#
# Every sequence of the column receives this one summary. In AlphaFold2 it is *not* the end:
# the gated version multiplies it by a gate computed from each sequence's own x (lesson 06), so
# the final outputs of the sequences differ after all (section 4 shows it).
#
# ## Exercise 1: the masked mean
#
# Real MSAs are padded: a batch holds proteins with different numbers of sequences, and the
# missing rows are filled with zeros and marked False in a mask. A plain `x.mean(dim)` counts
# those rows, which drags q̄ towards zero by a factor (real rows)/(all rows), more for the
# proteins with fewest sequences. AlphaFold2 and OpenFold average only over real rows.
#
# Write `masked_mean(x, mask, dim)` in `exercises/mha.py`:
# - x: (*, L, *, c) with L at `dim`; mask: one flag per position, shape `x.shape[:-1]`, or None;
# - return the mean over `dim` of the positions where mask is True (x without `dim`);
# - mask None: the plain mean; a slice with no True position: 0, not NaN (0/0).
#
# Hint: give the mask a trailing size-1 axis so it multiplies every channel; divide the masked sum
# by the count, clamped to at least 1.

# %% tags=["check"]
from course.checks.lesson05 import check_masked_mean
from exercises.mha import masked_mean

check_masked_mean(masked_mean)

# %%
# one column of 4 sequences, the last two padding (zeros): plain vs masked mean of the queries
column = torch.tensor([[2.0, 1.0], [4.0, -1.0], [0.0, 0.0], [0.0, 0.0]])
real = torch.tensor([True, True, False, False])
print(_("plain mean :"), column.mean(dim=0))
print(_("masked mean:"), masked_mean(column, real, dim=0))

# %% [markdown]
# ## Exercise 2: the `is_global` option
#
# In `exercises/mha.py`, `MultiHeadAttention(c_in, c, N_head, attn_dim, gated, is_global,
# use_bias_for_embeddings)` already does plain multi-head attention (lesson 03). Add the global
# variant:
#
# 1. In `__init__`, when `is_global`: replace `linear_k` and `linear_v` by single-head projections,
#    `nn.Linear(c_in, c, bias=use_bias_for_embeddings)` (keep `linear_q` at N_head · c).
# 2. Write `_global_attention(x, attention_mask)` (x: (*, L, c_in) with the attended axis already
#    at −2; mask (*, L) or None), returning (*, L, N_head · c):
#    - q: `linear_q` of the masked mean of x over L, viewed as (*, N_head, 1, c);
#    - k, v: `linear_k(x)`, `linear_v(x)` with a size-1 head axis: (*, 1, L, c);
#    - your lesson-02 `scaled_dot_product_attention` (it divides by √c, c = q.shape[−1]), with the
#      mask as a key mask (*, 1, 1, L) so padding rows get no weight;
#    - (*, N_head, 1, c) → (*, N_head · c), then the same vector for each of the L positions
#      (`expand`).
#
# `forward` already calls `_global_attention` when `is_global` is set (and rejects a bias: AF2
# gives global attention none). The check uses ungated modules; the gate is lesson 06.

# %% tags=["check"]
from course.checks.lesson05 import check_global_attention
from exercises.mha import MultiHeadAttention

check_global_attention(MultiHeadAttention)

# %% [markdown]
# ## 4. The module at work
#
# The worked example again, now through your module (weights set by hand: q = k = x, v = 2x₁ +
# 4x₂ in channel 0, `linear_o` the identity). Then a column of an MSA with a padded row: without
# a gate, every real sequence gets the same output.

# %%
from course.checks.lesson05 import worked_example

print(_("worked example through the module:\n"), worked_example(MultiHeadAttention).detach())

torch.manual_seed(0)
global_attention = MultiHeadAttention(8, 4, 2, attn_dim=-3, is_global=True).double()
msa_x = torch.randn(4, 3, 8, dtype=torch.float64)  # (S=4, R=3, c_in=8)
msa_mask = torch.ones(4, 3, dtype=torch.bool)
msa_mask[3] = False  # sequence 4 is padding
with torch.no_grad():
    out = global_attention(msa_x, attention_mask=msa_mask)
    print(_("output"), tuple(out.shape), "; column 1, sequences 1-3 identical:",
          torch.allclose(out[0, 0], out[1, 0]) and torch.allclose(out[0, 0], out[2, 0]))

# %% [markdown]
# Here is the gate of lesson 06 applied by hand to this output: g = sigmoid(linear_g(x)) per
# sequence and channel, multiplied into the attention output before `linear_o`. The shared
# summary stays shared; the gated results differ per sequence.

# %%
torch.manual_seed(1)
linear_g = nn.Linear(8, 2 * 4).double()
with torch.no_grad():
    summary = global_attention._global_attention(msa_x.movedim(-3, -2), msa_mask.movedim(-2, -1))
    gated = torch.sigmoid(linear_g(msa_x.movedim(-3, -2))) * summary  # (R, S, N_head*c)
    print(_("column 1, largest difference between sequences 1 and 2:"),
          f"before the gate {(summary[0, 0] - summary[0, 1]).abs().max().item():.3g},",
          f"after {(gated[0, 0] - gated[0, 1]).abs().max().item():.3g}")

# %% [markdown]
# ## 5. Parameters: 20,608 vs. 13,440
#
# AlphaFold2's extra-MSA stack: c_e = 64 channels, 8 heads of width c = 8, gated. Counted from
# the modules, with Q/K/V bias-free (as in AF2) and the LayerNorm before the attention not
# counted. The gate's `linear_g` (c_in → N_head · c, with bias) is lesson 06's; here it is an
# `nn.Linear(64, 64)` added by hand.

# %%
from course.measure import n_parameters  # sum(p.numel() for p in module.parameters())

plain_column = MultiHeadAttention(64, 8, 8, attn_dim=-3)
global_column = MultiHeadAttention(64, 8, 8, attn_dim=-3, is_global=True)
gate = nn.Linear(64, 8 * 8)  # linear_g of lesson 06
print(f"{'':10} {'plain':>8} {'global':>8}")
for name in ["linear_q", "linear_k", "linear_v", "linear_o"]:
    print(f"{name:10} {n_parameters(getattr(plain_column, name)):>8,} "
          f"{n_parameters(getattr(global_column, name)):>8,}")
print(f"{'linear_g':10} {n_parameters(gate):>8,} {n_parameters(gate):>8,}")
plain_total = n_parameters(plain_column) + n_parameters(gate)
global_total = n_parameters(global_column) + n_parameters(gate)
print(f"{'total':10} {plain_total:>8,} {global_total:>8,}   (saved: {plain_total - global_total:,})")
layer_norm = n_parameters(nn.LayerNorm(64))
print(f"with the LayerNorm(64) ({layer_norm} parameters): {plain_total + layer_norm:,} and "
      f"{global_total + layer_norm:,}")

# %% [markdown]
# The saving is all in K and V: 64 × 64 = 4,096 weights each become 64 × 8 = 512. Global
# attention is cheaper in parameters as well as in memory; what it gives up is that sequences no
# longer exchange information pairwise, each only receives the column's summary.
#
# ## 6. Time and memory against S
#
# Plain column attention against global column attention, both your modules (c_in = 64, 8
# heads of width 8, ungated, float32), on a single column (R = 1, so the lesson runs fast). Time
# is the best of 3 runs on one CPU thread (it depends on this machine and on whatever else runs
# on it, so those outputs are not compared); memory is the peak the torch profiler sees during
# the call. On log-log axes a power law S^k is a straight line of slope k: read k off a fit.

# %% tags=["nbval-ignore-output"]
from tqdm.auto import tqdm

from course.memory import best_seconds, fit_slope, profile_bytes

torch.manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)  # one thread: steadier timings when other programs share the cores
modules = {"plain": MultiHeadAttention(64, 8, 8, attn_dim=-3),
           "global": MultiHeadAttention(64, 8, 8, attn_dim=-3, is_global=True)}
sizes = {"plain": [128, 256, 512, 1024], "global": [1024, 4096, 16384, 65536]}
seconds = {name: [] for name in modules}
peaks = {name: [] for name in modules}
steps = [(name, S) for name in modules for S in sizes[name]]
with torch.no_grad():
    for name, S in tqdm(steps, desc="timing and profiling"):
        module = modules[name]
        x_S = torch.randn(S, 1, 64, generator=torch.Generator().manual_seed(S))
        seconds[name].append(best_seconds(lambda: module(x_S)))
        peaks[name].append(profile_bytes(lambda: module(x_S)).peak)
torch.set_num_threads(threads)

# %% tags=["nbval-ignore-output"]
fig, (ax_time, ax_memory) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
for name, colour in [("plain", "tab:red"), ("global", "tab:blue")]:
    time_slope = fit_slope(sizes[name], seconds[name])
    memory_slope = fit_slope(sizes[name], peaks[name])
    ax_time.loglog(sizes[name], seconds[name], "o-", color=colour,
                   label=_("{name}: slope {slope:.2f}").format(name=name, slope=time_slope))
    ax_memory.loglog(sizes[name], [p / 1e6 for p in peaks[name]], "o-", color=colour,
                     label=_("{name}: slope {slope:.2f}").format(name=name, slope=memory_slope))
    print(f"{name:6}  time slope {time_slope:.2f}   memory slope {memory_slope:.2f}   "
          f"(least-squares fits of log value against log S)")
ax_time.set(xlabel=_("S (sequences)"), ylabel=_("seconds (best of 3)"), title=_("time per call"))
ax_memory.set(xlabel=_("S (sequences)"), ylabel=_("peak MB (profiler)"), title=_("peak memory per call"))
for ax in (ax_time, ax_memory):
    ax.legend()
plt.show()

# %%
print(_("memory slopes, rounded:"),
      {name: round(fit_slope(sizes[name], peaks[name]), 1) for name in sizes})

# %% [markdown]
# The memory slopes come out at 2 and 1 (the allocations are the same on every machine). The time
# slopes are rougher. On a quiet machine they land near 2 and 1; they come out higher when the
# S × S tensors outgrow the CPU's caches and other programs compete for memory bandwidth (the
# cell above prints the slopes this machine measured), and fixed
# overheads pull the smallest sizes the other way. Memory is the cleaner witness of the S² vs. S
# law; time follows the same law, less tidily.
#
# ## 7. The memory blow-up
#
# How much memory does column attention need, and where does a card run out? Three ways of
# knowing, all in `course/memory.py`, on the attention core alone (q, k, v already projected,
# shape (R, H, S, c)):
#
# - **predicted from shapes**: run the code on PyTorch's `meta` device, where tensors have shapes
#   but no data, and add up the bytes of the tensors alive at each moment;
# - **measured on the CPU**: run it for real under `torch.profiler` with `profile_memory=True` and
#   replay the allocation and free events;
# - **measured on a GPU** (only where there is one): grow S until `torch.cuda.OutOfMemoryError`.
#
# Four ways of computing it: `naive` (all columns at once), `chunked` (4 columns at a time, as
# AlphaFold2 at inference), `global`, and `sdpa` (`torch.nn.functional.scaled_dot_product_attention`).
#
# ### Prediction vs. measurement at small S (CPU)

# %% tags=["nbval-ignore-output"]
from course.memory import METHODS, measure_peak_cpu, predict_peak_bytes

agreement = {}
print(f"{'method':8} {'S':>4} {'predicted kB':>13} {'measured kB':>12} {'measured/predicted':>19}")
for method in METHODS:
    for S in [64, 128, 256]:
        predicted = predict_peak_bytes(method, R=8, H=8, S=S, c=8)
        measured = measure_peak_cpu(method, R=8, H=8, S=S, c=8).peak
        agreement[method, S] = measured / predicted
        print(f"{method:8} {S:>4} {predicted / 1e3:>13.1f} {measured / 1e3:>12.1f} "
              f"{measured / predicted:>19.3f}")

# %%
for method in ["naive", "chunked", "global"]:
    ratios = [agreement[method, S] for S in [64, 128, 256]]
    print(f"{method:8} prediction and measurement agree within 5 %:",
          all(abs(r - 1) <= 0.05 for r in ratios))
print(_("sdpa     measured below a tenth of the prediction at S = 256:"), agreement["sdpa", 256] < 0.1)

# %% [markdown]
# For `naive`, `chunked` and `global` the bytes predicted from shapes are the bytes the CPU
# allocates. The naive peak is **two** score tensors plus the output, not one: the raw scores
# q kᵀ and the scaled scores exist together for a moment, then the scaled scores and the softmax
# weights. For `sdpa` the prediction is far too high, and that is instructive: on `meta`,
# PyTorch runs its reference ("math") implementation, which materialises the scores; the real
# CPU call picks a fused kernel that works through the keys in blocks (the FlashAttention idea)
# and never holds a whole S × S table. Shapes alone cannot know which kernel will run.
#
# ### Where 24, 40 and 80 GB cards run out (extrapolated)
#
# The prediction needs no memory, so it runs at any S. At R = 300 columns, 8 heads, c = 8,
# float32, the inputs plus the predicted peak of one call must fit on the card (nothing else
# counted: no weights, no rest of the network, no CUDA context, so real walls come earlier).

# %%
from course.memory import GB, predicted_need, predicted_wall

print(f"{'card':>7} " + " ".join(f"{m:>9}" for m in ["naive", "chunked", "global"]))
walls = {}
for capacity in [24, 40, 80]:
    walls[capacity] = {m: predicted_wall(m, capacity * GB, R=300, H=8, c=8)
                       for m in ["naive", "chunked", "global"]}
    print(f"{capacity:>4} GB " + " ".join(f"{walls[capacity][m]:>9,}" for m in walls[capacity]))
print(f"naive at S = 1024 needs {predicted_need('naive', 300, 8, 1024, 8) / GB:.1f} GB; at S = 5120 "
      f"{predicted_need('naive', 300, 8, 5120, 8) / GB:.0f} GB (two score tensors of "
      f"{300 * 8 * 5120**2 * 4 / GB:.1f} GB, plus inputs and output)")
print(f"chunked wall / naive wall at 80 GB: {walls[80]['chunked'] / walls[80]['naive']:.1f};"
      f"  sqrt(300 / 4) = {math.sqrt(300 / 4):.1f}")

# %%
S_range = [256, 1024, 4096, 16384]
fig, ax = plt.subplots(figsize=(6.5, 3.8), layout="constrained")
for method, colour in [("naive", "tab:red"), ("chunked", "tab:orange"), ("global", "tab:blue")]:
    ax.loglog(S_range, [predicted_need(method, 300, 8, S, 8) / GB for S in S_range], "o-",
              color=colour, label=method)
for capacity in [24, 40, 80]:
    ax.axhline(capacity, color="grey", lw=0.8, ls="--")
    ax.text(S_range[0], capacity * 1.08, f"{capacity} GB", fontsize=8, color="grey")
ax.axvline(5120, color="black", lw=0.6, ls=":")
ax.set(xlabel=_("S (sequences)"), ylabel=_("GB needed (inputs + predicted peak)"),
       title=_("column attention, R = 300, 8 heads, c = 8, float32 (predicted on meta)"))
ax.legend()
plt.show()

# %% [markdown]
# With everything at once, even S = 1024, AlphaFold2's default extra-MSA depth, needs about
# 20 GB for the attention core of one layer; S = 5120 needs half a terabyte. Four columns at a
# time push the wall out by a factor of about 8 in S (√(300/4) ≈ 8.7 if only the scores
# counted; the inputs take their share); global attention's need is linear in S: its
# inputs, and as much again for copies of the shared key and value head (the H200 run below shows
# why).
#
# The widget below draws the same predictions for other sizes: drag S, change the number of
# columns R, the heads and the precision, and read off where each card runs out (right). At
# R = 300, 8 heads, float32 it shows the walls of the table above.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson05 import memory_explorer

memory_explorer()

# %% [markdown]
# ### On a real card: grow S until it breaks
#
# On a GPU, `blow_up_cuda` grows S by √2 for each method until `torch.cuda.OutOfMemoryError`
# (caught), recording `torch.cuda.max_memory_allocated` above the inputs at each size. Quadratic
# compute outlasts any demo before linear memory runs out, so a method also stops growing on
# time. Here is such a run on an NVIDIA H200, recorded as data (`data/lesson05/gpu_runs.json`,
# with what was run, where and when): in that run a method stopped once one size took more than
# 5 s, with no limit on the total. Next to it is what the shapes predict: dots are measured,
# dashes predicted on `meta`, a cross marks the size that ran out of memory; the y-axis is
# everything the call needs on the card, inputs included, against the card's memory.

# %%
from course import gpu_runs

for record in gpu_runs.load():
    gpu_runs.show(record)

# %%
h200 = {run["method"]: run for run in gpu_runs.load()[0]["methods"].values()}
naive_S, naive_oom = h200["naive"]["sizes"][-1], h200["naive"]["out_of_memory_at"]
print(f"naive at S = {naive_S:,}: predicted {predict_peak_bytes('naive', 300, 8, naive_S, 8) / GB:.2f} GB,"
      f" measured {h200['naive']['peaks'][-1] / GB:.3f} GB")
print(f"global: peak / size of k = {predict_peak_bytes('global', 300, 8, 1000, 8) / (300 * 1000 * 8 * 4):.2f}"
      f" with 8 heads, {predict_peak_bytes('global', 300, 1, 1000, 8) / (300 * 1000 * 8 * 4):.2f} with 1")
sdpa_S = h200["sdpa"]["sizes"][-1]
print(f"sdpa at S = {sdpa_S:,}: measured {h200['sdpa']['peaks'][-1] / GB:.2f} GB, its output alone "
      f"{300 * 8 * sdpa_S * 8 * 4 / GB:.2f} GB")

# %% [markdown]
# The card confirms the method to three digits: at S = 2,048 the naive call took 80.688 GB,
# exactly the two score tensors plus the output that the shapes predict, and at S = 2,896 it
# needed twice that and ran out. Chunked (4 columns) and global agree with their predictions as
# well; chunked stopped on time, not memory, at S = 16,386. Two surprises, both seen on `meta`
# first:
#
# - **Global attention's peak is ten times the size of k**, not two score tensors: the batched
#   matmul broadcasts the single key (and value) head to all 8 query heads by copying it. With
#   one head the copy disappears. At S = 741,563 the prediction (142.4 GB) still fitted the card
#   on paper, yet the card ran out: a card holds more than the call's tensors (the CUDA context
#   and libraries, the allocator's rounding), so the real wall comes somewhat before the
#   predicted one.
# - **SDPA measured 1.78 GB where `meta` predicts over 10 TB**: on CUDA its fused kernel never
#   holds the S × S scores (the output alone is 1.78 GB), while `meta` runs the math path. It
#   stopped on time: the S² compute remains.
#
# Where a CUDA GPU is present, the next cell runs the same blow-up on it and shows it the same
# way, within about 20 s: there the four methods share a budget of 20 s, and a method stops
# growing when its next size would overrun its share. `python scripts/record_gpu_run.py --source
# "..."` adds such a run to the recorded ones.

# %% tags=["nbval-ignore-output"]
if torch.cuda.is_available():
    gpu_runs.show(gpu_runs.measure(R=300, H=8, c=8, source="this notebook", log=lambda line: None))
else:
    print(_("No CUDA GPU here: the run above, recorded on a real card, is what this cell measures."))

# %% [markdown]
# ### Chunking rescues inference, not training
#
# Under `torch.no_grad()` a chunk's scores and weights are freed before the next chunk starts,
# so the peak holds 4 columns' worth. In training, autograd must keep each chunk's softmax weights
# until the backward pass, so after the forward pass all R columns' weights are held anyway. The
# profiler shows it (R = 8 columns, S = 128; "held" = still allocated when the forward returns):

# %%
print(f"{'':8} {'peak, inference':>16} {'held after forward, training':>30}")
for method in ["naive", "chunked"]:
    inference = measure_peak_cpu(method, R=8, H=8, S=128, c=8)
    training = measure_peak_cpu(method, R=8, H=8, S=128, c=8, train=True)
    print(f"{method:8} {inference.peak / 1e6:>13.2f} MB {training.held_after / 1e6:>27.2f} MB")
print(f"one set of softmax weights for all 8 columns: {8 * 8 * 128 * 128 * 4 / 1e6:.2f} MB")

# %% [markdown]
# And a network holds this for every layer at once: AlphaFold2 has 4 extra-MSA blocks and 48
# Evoformer blocks. Training therefore samples fewer sequences (AF2: 128 MSA clusters and 1024
# extra sequences before fine-tuning), can recompute activations instead of storing them
# (activation checkpointing: AlphaFold2's `use_remat`, OpenFold's `blocks_per_ckpt`), and uses
# global attention where S is large. Today's other
# escape, fused kernels such as FlashAttention (the `sdpa` row above), removes the S × S memory
# but not the S² compute.
#
# ## Self-check
#
# 1. A batch holds one protein with 100 real sequences and one with 20, both padded to 100. By
#    what factor does a plain mean shrink the second protein's averaged query?
# 2. In global attention, why do the 8 heads still compute different scores, although k is
#    shared?
# 3. Without a gate, do two sequences of the same column get the same output from global
#    attention? With AlphaFold2's gate?
# 4. Where do the 7,168 parameters saved by global attention (20,608 − 13,440) come from?
# 5. Your colleague says "S = 5120 needs 250 GB, so the extra MSA stack cannot use column
#    attention on any GPU". What is right and what is wrong in that?
# 6. Why does the `meta` device predict the memory of `naive` exactly but not that of `sdpa`?
#
# <details><summary>Answer</summary>
#
# 1. By 20/100 = 0.2: the 80 padding rows count as zeros in the sum and in the denominator. The
#    masked mean divides by 20 and gives the right average.
# 2. Each head has its own rows of `linear_q`, so q̄_h differs per head; the scores q̄_h · k_s
#    differ although every head reads the same k (and v).
# 3. Without a gate, yes: there is one summary per column and `linear_o` maps it identically for
#    every sequence. With the gate, no: sigmoid(linear_g(x)) depends on each sequence's own x.
# 4. From `linear_k` and `linear_v`: 64 × 64 = 4,096 weights each become 64 × 8 = 512, saving
#    2 × 3,584 = 7,168.
# 5. Right: one score tensor for all 300 columns at once is 252 GB (234 GiB) in float32. Wrong:
#    the columns are independent, so they can be processed a few at a time (about 3.4 GB for 4
#    columns); the real obstacles are the S² compute and, in training, the activations kept for
#    backward. Also 5120 is not the default depth (1024 is).
# 6. On `meta` every op runs its reference implementation with the same intermediate tensors as
#    the CPU's naive code. For `sdpa` the real call dispatches to a fused kernel whose working
#    memory is invisible from shapes; meta runs the unfused math path instead.
#
# </details>
#
# ## Summary
#
# - Column attention is the only place where sequences of an MSA exchange information directly,
#   so it stays; its scores grow as H · R · S².
# - Global attention (AF2 Algorithm 19): one query per column, the **masked** mean of x projected
#   by `linear_q`; one key and one value head shared by all query heads; scores scaled by 1/√c;
#   the summary is shared by the column, the gate of lesson 06 makes it per sequence.
# - 20,608 vs. 13,440 parameters (c_e = 64, 8 heads, c = 8, gated, Q/K/V without bias, LayerNorm
#   excluded): the saving is in K and V.
# - Memory grows as S² (plain) vs. S (global); predicted from shapes on `meta`, confirmed by the
#   profiler, the naive core of one layer fills 24/40/80 GB at S ≈ 1,110 / 1,435 / 2,033. On a
#   real card (an NVIDIA H200) it took 80.688 GB at S = 2,048, as predicted, and ran out at 2,896.
# - The 250 GB at S = 5120 is real but not a wall: chunking columns fits inference in a few GB.
#   It does not help training, where every chunk's weights are kept for the backward pass.
# - Next: [lesson 06, gating](06_gating.ipynb).
