# %% [markdown]
# # Lesson 09: attention that never holds the score matrix
#
# **Prerequisites:** lesson 01's `stable_softmax` and `scaled_scores` (`exercises/softmax.py`:
# your tiled attention calls `scaled_scores` on every tile), lesson 02's
# `scaled_dot_product_attention` (`exercises/attention.py`: the reference your tiles must equal,
# and its rule for a query that may see no key), lesson 04's pair bias and lesson 05's memory
# measurements.
#
# Lesson 05 ran into a wall: attention scores one number per query-key pair, so the score
# tensor grows with the square of the sequence length, and at AlphaFold's depths no card holds
# it. The course's source notes name two ways out. **Route one** (FlashAttention): compute the
# same attention in tiles, with an *online* softmax, so that the L × L matrix is never written
# whole; memory falls from O(L²) to O(L), the compute stays O(L²). **Route two**: change the
# mathematics (sliding windows, sparse or linear attention); lesson 05's global attention is an
# early example. Lesson 05 built route two and met route one only as a library call (`sdpa`).
# Here you build route one yourself.
#
# **In this lesson you will**
# - write an online softmax: a running maximum and a running sum over blocks, and the rescaling
#   identity that keeps them exact; check it against your `stable_softmax` on lesson 01's wide
#   rows, in float64 and float32;
# - write a tiled attention forward pass that returns the output and the logsumexp of each
#   query, with masks and an additive (pair) bias applied tile by tile, and a query that sees no
#   key handled as in lesson 02;
# - write its backward pass by recomputation, a `torch.autograd.Function` that keeps only the
#   output and the logsumexp (FlashAttention-2's Algorithm 2), and check it with `gradcheck`;
# - measure peak memory against L as lesson 05 does (predicted from shapes, confirmed by the
#   profiler) for naive, chunked, tiled and PyTorch's SDPA, in inference and in training, and
#   the time, honestly;
# - size AlphaFold's row attention with pair bias at S = 5,120 for 24/40/80 GB cards, and see
#   how OpenFold's low-memory attention chunks differently;
# - combine the two routes: a sliding window whose tiles outside the band are skipped.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %%
import math

import matplotlib.pyplot as plt
import torch

from course.i18n import _  # figure titles and labels in the notebook's language

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. The wall, and where it comes from
#
# Three score tensors the course has met, in float32 (GB = 10⁹ bytes): lesson 05's column
# attention at S = 5,120 sequences (R = 300 columns, 8 heads), AlphaFold's row attention with
# pair bias at the same depth (each of the 5,120 sequences scores its 300 residues against each
# other, 8 heads), and the row attention of one protein of 2,000 residues at S = 512.

# %%
def score_tensor_gb(*shape):
    return math.prod(shape) * 4 / 1e9


print(f"column attention, S = 5,120, R = 300, 8 heads: (R, H, S, S) = "
      f"{score_tensor_gb(300, 8, 5120, 5120):7.1f} GB")
print(f"row attention,    S = 5,120, R = 300, 8 heads: (S, H, R, R) = "
      f"{score_tensor_gb(5120, 8, 300, 300):7.1f} GB")
print(f"row attention,    S = 512, R = 2,000, 8 heads: (S, H, R, R) = "
      f"{score_tensor_gb(512, 8, 2000, 2000):7.1f} GB")

# %% [markdown]
# Softmax seems to need the whole row of scores at once: its maximum (for stability, lesson 01)
# and its sum (to normalise). Training seems to need them again: the backward pass of softmax
# uses the weights. Both turn out to be false. The next three sections remove them one at a
# time.
#
# ## 2. Online softmax: a running maximum and a running sum
#
# softmax(x)ᵢ = exp(xᵢ − m) / l, with m = maxⱼ xⱼ and l = Σⱼ exp(xⱼ − m). Read x a block at a
# time and keep two numbers: m, the largest entry seen so far, and l, the sum of exp(xⱼ − m)
# over the entries seen so far. When a new block raises the maximum from m to m′, every term
# already in l was computed against the old m. The **rescaling identity**
#
# exp(xⱼ − m′) = exp(xⱼ − m) · exp(m − m′)
#
# says how to fix all of them at once: multiply l by exp(m − m′), then add the new block's own
# exp(xⱼ − m′). After the last block, m and l are exactly the maximum and the sum of the whole
# row, and a second pass writes exp(xᵢ − m) / l. The row [1, 3, 2, 6] in blocks of 2, by hand:

# %%
row = torch.tensor([1.0, 3.0, 2.0, 6.0], dtype=torch.float64)
m, l = -math.inf, 0.0
for start in (0, 2):
    block = row[start:start + 2]
    m_new = max(m, block.max().item())
    rescale = math.exp(m - m_new)  # exp(-inf) = 0 before the first block: nothing to rescale
    l = l * rescale + torch.exp(block - m_new).sum().item()
    print(f"after block {block.tolist()}: m = {m_new}, l = {l:.4f}   (the old sum was "
          f"multiplied by {rescale:.4f})")
    m = m_new
print("online:", torch.exp(row - m) / l)
print("whole row at once:", torch.softmax(row, dim=-1))

# %% [markdown]
# The first block gives m = 3 and l = e⁻² + e⁰ = 1.1353. The second raises the maximum to 6: the
# old sum shrinks by e⁻³ (its terms were "relative to 3", now they are relative to 6), and the
# block adds e⁻⁴ + e⁰. Nothing of the first block had to be kept but two numbers per row.
#
# A masked entry is −inf. While a row has seen only −inf, its running maximum is −inf too, and
# exp(−inf − (−inf)) is NaN: subtract 0 instead of m′ in that case (every term is then
# exp(−inf) = 0, as it should be).
#
# ## Exercise 1: `online_softmax`
#
# In `exercises/tiled.py`, write `online_softmax(x, block_size)`: the softmax of x along its
# last axis, computed with a running maximum and sum over blocks of `block_size` entries (the
# last block may be shorter), then a second pass over the blocks. x may have any leading axes,
# and may hold −inf entries as long as every row has a finite one. Create the running maximum
# and sum with x's dtype and device (`torch.full_like`, `torch.zeros_like`): the check runs your
# code on float32 inputs and on PyTorch's `meta` device too. The helper `key_blocks(n, block)`
# (given) lists the slices.

# %% tags=["check"]
from course.checks.lesson09 import check_online_softmax
from exercises.tiled import online_softmax

check_online_softmax(online_softmax)

# %% [markdown]
# Lesson 01's wide rows, whose entries span ±1000 (a plain exp overflows on them), against your
# `stable_softmax`, in float64 and in float32, with blocks of 2:

# %%
from exercises.softmax import stable_softmax

wide_rows = [[-800.0, 0.0, 800.0], [-30.0, 0.0, 10.0], [1000.0, 1001.0, 1002.0],
             [-1000.0, -999.0, 1000.0]]
for dtype, tolerance in [(torch.float64, 1e-12), (torch.float32, 1e-6)]:
    x = torch.tensor(wide_rows, dtype=dtype)
    gap = (online_softmax(x, 2) - stable_softmax(x, dim=-1)).abs().max().item()
    print(f"{str(dtype):14}: max |online - stable| below {tolerance:g}: {gap < tolerance}, "
          f"result dtype {online_softmax(x, 2).dtype}")

# %% [markdown]
# ## 3. Tiles: the forward pass
#
# Attention applies the same idea to every query row at once. Cut the queries into blocks of
# `block_q` rows and the keys (and values) into blocks of `block_k`: each (query block, key
# block) pair is a **tile** of the score matrix, (block_q, block_k) numbers. For each query block,
# walk through the key blocks and keep, per query,
#
# - m and l, as in the online softmax;
# - an output accumulator acc = Σⱼ exp(sᵢⱼ − m) vⱼ over the keys seen so far.
#
# For a tile with scores s (your lesson-01 `scaled_scores(q_tile, k_tile)`, plus the bias of
# that tile, masked to −inf where the mask is False):
#
# m′ = max(m, rowmax(s)),  p = exp(s − m′),  l ← l · exp(m − m′) + rowsum(p),  acc ← acc · exp(m − m′) + p v_tile
#
# Both l and acc are sums "relative to m", so both are rescaled when m rises. After the last key
# block, out = acc / l and **lse = m + log l**, the logsumexp of the query's scores: the log of
# the softmax denominator, one number per query, which the backward pass will need. A query that
# may see no key keeps l = 0: give it out = 0 (lesson 02's rule) and lse = log 0 = −inf.
#
# A bias or a mask that broadcasts against the scores (*, q, k), such as lesson 04's pair bias
# (H, R, R) against row-attention scores (S, H, R, R), or a padding mask (B, 1, k), is cut into the
# same tiles: the given helper `tile(t, rows, cols)` returns the (rows, cols) tile of t as a view,
# keeping a size-1 query or key axis whole so that it still broadcasts. Nothing of size q × k is
# created.
#
# ## Exercise 2: `tiled_attention_forward`
#
# Write `tiled_attention_forward(q, k, v, bias=None, mask=None, block_q=64, block_k=64)` in
# `exercises/tiled.py`: q (*, q, c), k (*, k, c), v (*, k, c_v) with leading axes that broadcast;
# it returns `(out, lse)`, out (*, q, c_v) equal to lesson 02's attention and lse (*, q). Call your
# lesson-01 `scaled_scores` on each tile. q and k may have different lengths, and neither need be
# a multiple of its block. Write each query block's result into its rows of one output tensor
# (create it from the first block's result with `new_empty`, which keeps dtype and device). The
# check also measures your forward pass with the profiler: it must hold far less than one q × k
# score tensor.

# %% tags=["check"]
from course.checks.lesson09 import check_tiled_forward
from exercises.tiled import tiled_attention_forward

check_tiled_forward(tiled_attention_forward)

# %% [markdown]
# Your tiles against your lesson-02 attention, in float64, on row attention with lesson 04's
# pair bias: an MSA of 3 sequences, 4 heads, R = 50 residues (not a multiple of the blocks of 16
# and 12), a bias (4, 50, 50) shared by the sequences, and a padding mask in which the last 5
# residues are padding and query 0 of sequence 0 may see no key at all.

# %%
from exercises.attention import scaled_dot_product_attention

generator = torch.Generator().manual_seed(9)
q, k, v = (torch.randn(3, 4, 50, 8, generator=generator, dtype=torch.float64) for _ in range(3))
pair_bias = torch.randn(4, 50, 50, generator=generator, dtype=torch.float64)
mask = torch.ones(3, 1, 50, 50, dtype=torch.bool)
mask[..., 45:] = False  # padding residues
mask[0, :, 0] = False   # sequence 0, query 0: sees nothing

out, lse = tiled_attention_forward(q, k, v, pair_bias, mask, block_q=16, block_k=12)
reference = scaled_dot_product_attention(q, k, v, bias=pair_bias, mask=mask)
scores = (q @ k.transpose(-2, -1) / math.sqrt(8) + pair_bias).masked_fill(~mask, -math.inf)
print("max |tiled - lesson 02| below 1e-12:", (out - reference).abs().max().item() < 1e-12)
print("lse equals torch.logsumexp of the scores:",
      torch.allclose(lse, torch.logsumexp(scores, dim=-1), rtol=0, atol=1e-12))
print("the blind query: output", out[0, 0, 0, :3].tolist(), " lse", lse[0, :, 0].tolist())

# %% [markdown]
# The widget below walks a 24 × 24 score matrix tile by tile. Left, the tiles visited so far
# (dark tiles come later, the red one is in hand; the whole matrix is drawn only for the
# picture). Right, one query row's running maximum and running sum after each of its tiles:
# whenever the maximum jumps, the sum is rescaled down and grows again, and the last tile lands
# on the values of the whole row (dashed).

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson09 import tiles_explorer

tiles_explorer()

# %% [markdown]
# ## 4. The backward pass, by recomputation
#
# PyTorch's autograd would differentiate your tiled forward as written, but to do so it keeps
# every intermediate: each tile's p, which together are the whole weight matrix. The memory we
# saved would come back in training. FlashAttention instead writes the backward pass by hand
# and **recomputes** each tile's weights from q, k and the saved lse:
# P = exp(s − lse), exactly the softmax weights, one tile at a time.
#
# With dO the gradient of the loss with respect to the output (what autograd hands to
# `backward`), the gradients of O = P V, P = softmax(S), S = Q Kᵀ / √c + bias are
# (FlashAttention-2, Dao 2023, Algorithm 2):
#
# - dV = Pᵀ dO, and dP = dO Vᵀ;
# - dS = P ∘ (dP − D), with **D = rowsum(dO ∘ O)**, one number per query. (The softmax
#   Jacobian gives dSᵢⱼ = Pᵢⱼ (dPᵢⱼ − Σₖ Pᵢₖ dPᵢₖ), and Σₖ Pᵢₖ dPᵢₖ = Σₖ Pᵢₖ (dOᵢ · vₖ) = dOᵢ · Oᵢ:
#   computed once from O and dO, no row of P needed);
# - dQ = dS K / √c, dK = dSᵀ Q / √c, and dbias = dS, summed over the axes the bias was broadcast
#   along (a pair bias shared by S sequences collects the sum over the sequences).
#
# Each is a sum over tiles: loop over key blocks, and inside over query blocks, recompute the
# tile's P, and add its share to dV, dK (of this key block) and dQ, dbias (of this query block).
# Nothing of size q × k is ever stored, in the forward pass or the backward pass.
#
# ## Exercise 3: `TiledAttention`
#
# In `exercises/tiled.py`, write both static methods of `TiledAttention(torch.autograd.Function)`:
#
# - `forward(ctx, q, k, v, bias, mask, block_q, block_k)`: out and lse from your
#   `tiled_attention_forward`; save q, k, v, bias, mask, out and lse (`ctx.save_for_backward`
#   accepts None for a missing bias or mask) and the block sizes on ctx; return out;
# - `backward(ctx, grad_out)`: the gradients of q, k, v and bias, in that order, each of its
#   input's shape (`sum_to_size` undoes a broadcast), then None for mask, block_q and block_k.
#   A query that sees no key has lse = −inf: shift by 0 there, so its weights, and every
#   gradient through them, are 0.
#
# `tiled_attention(q, k, v, bias, mask, block_q, block_k)` (given) calls `TiledAttention.apply`.
# The check compares your gradients with the reference's, runs `torch.autograd.gradcheck`, and
# measures what your forward pass keeps for the backward pass and the backward pass's own peak.

# %% tags=["check"]
from course.checks.lesson09 import check_tiled_backward
from exercises.tiled import tiled_attention

check_tiled_backward(tiled_attention)

# %% [markdown]
# Your gradients against autograd of your lesson-02 attention, in float64, on the same row
# attention (pair bias, padding, the blind query), and `gradcheck` on a small case:

# %%
def gradients(attention, q, k, v, bias, weights):
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    out = attention(*leaves)
    return torch.autograd.grad((out * weights).sum(), leaves)


loss_weights = torch.randn(3, 4, 50, 8, generator=generator, dtype=torch.float64)
tiled_grads = gradients(lambda *t: tiled_attention(*t, mask, 16, 12), q, k, v, pair_bias,
                        loss_weights)
naive_grads = gradients(lambda *t: scaled_dot_product_attention(*t[:3], bias=t[3], mask=mask),
                        q, k, v, pair_bias, loss_weights)
for name, mine, theirs in zip(["dq", "dk", "dv", "dbias"], tiled_grads, naive_grads):
    print(f"{name:6} shape {str(tuple(mine.shape)):15} max |tiled - autograd| below 1e-12: "
          f"{(mine - theirs).abs().max().item() < 1e-12}")
small = [t[:1, :1, :6, :3].clone().requires_grad_(True) for t in (q, k, v)]
small_bias = pair_bias[:1, :6, :6].clone().requires_grad_(True)
print("gradcheck:", torch.autograd.gradcheck(
    lambda *t: tiled_attention(*t, mask[:1, :, :6, :6], 4, 4), (*small, small_bias)))

# %% [markdown]
# ## 5. Memory, measured as lesson 05 measures it
#
# Four ways to compute attention on q, k, v of shape (R, H, L, c): R = 8 independent slices (say
# columns), H = 4 heads, L queries and keys, c = 16, float32. `naive` holds every slice's L × L
# scores at once; `chunked` does 4 slices at a time (lesson 05); `tiled` is your tiled attention
# (tiles of 128 × 128); `sdpa` is `torch.nn.functional.scaled_dot_product_attention`. For each,
# in inference (forward under `no_grad`) and in training (forward, then backward):
#
# - **predicted** from shapes: run on the `meta` device and add up the bytes of the tensors alive
#   at each moment (`course/tiled_memory.py`, built on lesson 05's tracker; in training it also
#   sees what autograd saves for the backward pass);
# - **measured** on the CPU by the profiler's allocation events.
#
# "peak" is the most the call holds above its inputs; "kept" is what the forward pass leaves
# allocated for the backward pass (and the output).

# %%
from course.memory import chunked_column_attention, naive_column_attention
from course.tiled_memory import measure_call, predict_call

methods = {
    "naive": naive_column_attention,
    "chunked": chunked_column_attention,
    "tiled": lambda q, k, v: tiled_attention(q, k, v, None, None, 128, 128),
    "sdpa": torch.nn.functional.scaled_dot_product_attention,
}
lengths = [128, 256, 512]
memory = {}
for name, fn in methods.items():
    for train in (False, True):
        for L in lengths:
            shapes = [(8, 4, L, 16)] * 3
            memory[name, train, L] = (predict_call(fn, shapes, train=train),
                                      measure_call(fn, shapes, train=train))

# %% tags=["nbval-ignore-output"]
print(f"{'method':8} {'mode':9} {'L':>5} {'predicted peak':>15} {'measured peak':>14} "
      f"{'predicted kept':>15} {'measured kept':>14}   (MB)")
for (name, train, L), (predicted, measured) in memory.items():
    print(f"{name:8} {'training' if train else 'inference':9} {L:>5} "
          f"{predicted.peak / 1e6:>15.2f} {measured.peak / 1e6:>14.2f} "
          f"{predicted.held_after / 1e6:>15.2f} {measured.held_after / 1e6:>14.2f}")

# %%
def agree(name, train):
    """Predicted and measured peak and kept bytes within 0.1 % at every L."""
    return all(abs(predicted.peak - measured.peak) <= 1e-3 * measured.peak and
               abs(predicted.held_after - measured.held_after) <= 1e-3 * measured.held_after
               for predicted, measured in (memory[name, train, L] for L in lengths))


for name in ["naive", "chunked", "tiled"]:
    print(f"{name:8} predicted = measured within 0.1 %: inference {agree(name, False)}, "
          f"training {agree(name, True)}")
sdpa_ratio = memory["sdpa", False, 512][1].peak / memory["sdpa", False, 512][0].peak
print(f"sdpa     measured / predicted peak at L = 512, inference: below 0.1: {sdpa_ratio < 0.1}")

# %% [markdown]
# For naive, chunked and tiled the bytes predicted from shapes are the bytes the CPU allocates,
# in inference and in training. SDPA, as in lesson 05, runs PyTorch's fused CPU kernel, which
# works in blocks and keeps far less than `meta`'s unfused prediction (and what it allocates
# depends on the machine, its threads among them). Now the growth: by what factor each peak, and
# what each keeps for training, grows when L doubles (predicted, which the profiler confirmed
# above, so the figures are the same on every machine). Naive and
# chunked: about 4, the L² of the scores. Tiled: under 2 at the peak, since its tiles
# have a fixed size and only the output and the logsumexp grow with L; those, what it keeps for
# training, exactly double.

# %% tags=["nbval-ignore-output"]
print(f"{'method':8} {'mode':9} {'peak x, L 128->256':>19} {'256->512':>9} {'kept x, 256->512':>17}")
for name in ["naive", "chunked", "tiled"]:  # predicted: the same bytes on every machine
    for train in (False, True):
        peaks = [memory[name, train, L][0].peak for L in lengths]
        kept = [memory[name, train, L][0].held_after for L in lengths]
        print(f"{name:8} {'training' if train else 'inference':9} {peaks[1] / peaks[0]:>19.2f} "
              f"{peaks[2] / peaks[1]:>9.2f} {kept[2] / kept[1]:>17.2f}")

# %%
for name in ["naive", "chunked", "tiled"]:
    for train in (False, True):
        peaks = [memory[name, train, L][0].peak for L in lengths]
        kept = [memory[name, train, L][0].held_after for L in lengths]
        bound, holds = ("< 2", lambda x: x < 2) if name == "tiled" else ("> 3.5", lambda x: x > 3.5)
        print(f"{name:8} {'training' if train else 'inference':9} peak x {bound} at each doubling: "
              f"{all(holds(b / a) for a, b in zip(peaks, peaks[1:]))}, kept x {kept[2] / kept[1]:.2f}")

# %% tags=["nbval-ignore-output"]
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
colours = {"naive": "tab:red", "chunked": "tab:orange", "tiled": "tab:purple", "sdpa": "tab:green"}
for ax, train in zip(axes, (False, True)):
    for name in methods:
        ax.loglog(lengths, [memory[name, train, L][1].peak / 1e6 for L in lengths], "o-",
                  color=colours[name], label=name)
    ax.set(xlabel=_("L (queries = keys)"), ylabel=_("peak MB above the inputs (profiler)"),
           title=_("training: forward and backward") if train else _("inference: forward"))
    ax.legend()
plt.show()

# %% [markdown]
# Naive attention grows as L² in both modes, and chunking only divides it (it holds 4 slices'
# scores instead of 8). In training, chunking gives nothing back: autograd keeps every chunk's
# weights, the "kept" column, exactly as for naive. Your tiled attention grows linearly: what it
# keeps for training is the output and one number per query.
#
# ### Lesson 05's wall, again
#
# Lesson 05 predicted where column attention (R = 300 columns, 8 heads, c = 8, float32) runs out
# of memory on 24/40/80 GB cards. The same predictions with your tiles: naive and chunked needs
# are quadratic in S (lesson 05 solved them exactly), the tiled need is linear once a row spans
# three blocks (so two predictions on `meta`, at S = 384 and 512, give the line). In training, a
# layer keeps its weights for the backward pass: naive and chunked (R, H, S, S) of them, tiled the
# output and the logsumexp.

# %% tags=["nbval-ignore-output"]
from course.memory import GB, predicted_need, predicted_wall
from course.tiled_memory import fit_line, solve_need


def tiled_columns(q, k, v):
    return tiled_attention(q, k, v, None, None, 128, 128)


def tiled_need(S):  # inputs + predicted peak, as lesson 05 counts a card's need
    return 3 * 300 * 8 * S * 8 * 4 + predict_call(tiled_columns, [(300, 8, S, 8)] * 3).peak


line = fit_line(tiled_need, (384, 512))
print(f"check of the line at S = 640: predicted on meta {tiled_need(640) / 1e9:.4f} GB, "
      f"from the line {(line[1] * 640 + line[2]) / 1e9:.4f} GB")
print(f"{'card':>7} {'naive':>9} {'chunked':>9} {'tiled':>11}")
for capacity in (24, 40, 80):
    print(f"{capacity:>4} GB {predicted_wall('naive', capacity * GB, 300, 8, 8):>9,} "
          f"{predicted_wall('chunked', capacity * GB, 300, 8, 8):>9,} "
          f"{solve_need(line, capacity * GB):>11,}")
S = 5120
print(f"\nat S = 5,120, one layer: naive needs {predicted_need('naive', 300, 8, S, 8) / GB:.0f} GB, "
      f"chunked {predicted_need('chunked', 300, 8, S, 8) / GB:.1f} GB, "
      f"tiled {(line[1] * S + line[2]) / GB:.2f} GB (inference)")
kept_tiled = 300 * 8 * S * (8 + 1) * 4
print(f"kept for training, per layer: naive and chunked {300 * 8 * S * S * 4 / GB:.0f} GB of "
      f"weights, tiled {kept_tiled / GB:.3f} GB (output and logsumexp)")
check_S = 256
kept = predict_call(tiled_columns, [(300, 8, check_S, 8)] * 3, train=True).held_after
print(f"(at S = {check_S}, meta's kept bytes for tiled = output + logsumexp: "
      f"{kept == 300 * 8 * check_S * (8 + 1) * 4})")

# %% [markdown]
# Tiles move lesson 05's wall from one or two thousand sequences to tens of thousands on a 24 GB
# card and hundreds of thousands on an 80 GB one: what is left is the inputs, the output and a
# few tiles, and only the tiles' fixed size is not linear in S. Chunking the columns did
# almost as well for inference (lesson 05), and nothing for training; tiles do both, because the
# backward pass recomputes instead of keeping.
#
# ## 6. Time, honestly
#
# Memory fell; did time? One call on this CPU after an untimed one, L = 256, the shapes above:

# %% tags=["nbval-ignore-output"]
from course.measure import best_time
from course.tiled_memory import make_tensors

inputs = make_tensors([(8, 4, 256, 16)] * 3)
grad_inputs = make_tensors([(8, 4, 256, 16)] * 3, requires_grad=True)


def train_step(fn):
    return lambda: fn(*grad_inputs).sum().backward()


seconds = {}
for name in ("naive", "tiled", "sdpa"):
    with torch.no_grad():
        forward = best_time(lambda: methods[name](*inputs), repeats=1)
    seconds[name] = (forward, best_time(train_step(methods[name]), repeats=1))
    print(f"{name:6} forward {seconds[name][0] * 1e3:8.1f} ms   training step "
          f"{seconds[name][1] * 1e3:8.1f} ms")
print(f"tiled / sdpa: forward x{seconds['tiled'][0] / seconds['sdpa'][0]:.1f}, "
      f"training x{seconds['tiled'][1] / seconds['sdpa'][1]:.1f};  tiled / naive: forward "
      f"x{seconds['tiled'][0] / seconds['naive'][0]:.1f}, training "
      f"x{seconds['tiled'][1] / seconds['naive'][1]:.1f}")

# %% [markdown]
# Your tiles do the same arithmetic as naive attention, and a little more (the rescaling, and in
# training the scores computed twice). The cell above prints what each costs here, one timing
# each: on a machine shared with other work single timings vary from run to run, so read the
# ratios as rough (the course repository's `scripts/bench_lesson09.py` takes the best of
# several). What pure PyTorch
# cannot give your tiles is what makes a fused kernel fast:
#
# - **No fusion.** Each line of the tile loop is a separate PyTorch operation: the scores are
#   written to memory, read back by `exp`, written again, read by the matmul with v. A fused
#   kernel (PyTorch's SDPA on the CPU, FlashAttention on a GPU) keeps a tile in registers or
#   on-chip memory from scores to output, and reads q, k, v and writes the output once per tile.
# - **A Python loop over tiles.** Each tile costs a dozen operator calls, each with Python and
#   dispatch overhead of microseconds, whatever the tile's size: small tiles are dominated by it.
# - **Memory traffic, not arithmetic, is what FlashAttention saves** (its title: "IO-awareness").
#   On a GPU, naive attention reads and writes the L × L matrix in slow high-bandwidth memory
#   several times; FlashAttention's CUDA kernels (and Triton versions of it) never let it leave
#   the fast on-chip memory, which is why they are *faster* than naive attention there, despite
#   recomputing in the backward pass.
#
# The algorithm you wrote is the real one; its speed needs a compiler or a hand-written kernel.
#
# ## 7. AlphaFold's row attention with pair bias at S = 5,120
#
# In AlphaFold2's MSA stack, row attention lets the residues of each sequence attend to each
# other, with the pair bias from z (lesson 04), shape (H, R, R), shared by all S sequences:
# q, k, v (S, H, R, c) and scores (S, H, R, R). At the extra MSA's deepest setting, S = 5,120
# (AlphaFold2's default is 1,024; 5,120 is used by some of its released models, lesson 05),
# with 8 heads of c = 8: how long a protein (R residues) fits on a card, for one layer's
# attention core, inputs included? The naive need is quadratic in R (three predictions), the
# tiled one (tiles of 64) linear (two).

# %% tags=["nbval-ignore-output"]
from course.tiled_memory import fit_need

S, H, c = 5120, 8, 8


def row_shapes(R):
    return [(S, H, R, c)] * 3 + [(H, R, R)]


def naive_rows(q, k, v, bias):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c) + bias, dim=-1) @ v


def tiled_rows(q, k, v, bias):
    return tiled_attention(q, k, v, bias, None, 64, 64)


def row_need(fn, R):
    return (3 * S * H * R * c + H * R * R) * 4 + predict_call(fn, row_shapes(R)).peak


naive_curve = fit_need(lambda R: row_need(naive_rows, R), (128, 256, 384))
tiled_curve = fit_line(lambda R: row_need(tiled_rows, R), (192, 256))
print(f"R = 300: naive needs {row_need(naive_rows, 300) / GB:.1f} GB, "
      f"tiled {row_need(tiled_rows, 300) / GB:.2f} GB (inference, one layer)")
print(f"kept for training at R = 300, per layer: naive {S * H * 300 * 300 * 4 / GB:.1f} GB of "
      f"weights, tiled {S * H * 300 * (c + 1) * 4 / GB:.3f} GB")
print(f"{'card':>7} {'naive: largest R':>17} {'tiled: largest R':>17}")
for capacity in (24, 40, 80):
    print(f"{capacity:>4} GB {solve_need(naive_curve, capacity * GB):>17,} "
          f"{solve_need(tiled_curve, capacity * GB):>17,}")

# %% [markdown]
# For inference at R = 300, naive row attention needs about 31 GB for one layer (two score
# tensors of 14.7 GB exist together for a moment, lesson 05 showed why): it does not fit on a
# 24 GB card, and it fits on 40 and 80 GB. In training it keeps 14.7 GB of weights per layer, and
# the extra-MSA stack has 4 blocks, before the 48 blocks of the main stack. Tiled, the same layer
# keeps under half a GB, and the longest protein a card can take grows from a few hundred
# residues to thousands.
#
# The time does not fall. Both do S · H · R² · c multiply-adds twice; measured here on a few
# sequences (the work is proportional to S, so the cell scales it to S = 5,120):

# %% tags=["nbval-ignore-output"]
few = 4
row_inputs = make_tensors([(few, H, 300, c)] * 3 + [(H, 300, 300)])
with torch.no_grad():
    for name, fn in [("naive", naive_rows), ("tiled", tiled_rows)]:
        per_call = best_time(lambda: fn(*row_inputs), repeats=1)
        print(f"{name:6}: {per_call * 1e3:7.1f} ms for S = {few}, about "
              f"{per_call * S / few:6.1f} s per layer at S = 5,120 on this CPU")

# %% [markdown]
# ### OpenFold's low-memory attention
#
# OpenFold, the open reimplementation of AlphaFold2, has route one too: `_lma` in
# `openfold/model/primitives.py` ("low-memory attention", after Rabe & Staats 2021, "Self-attention
# does not need O(n²) memory"), used when `use_lma` is set, which its documentation describes as
# an inference setting. OpenFold cannot be installed from a package index (the `openfold` package
# there fails to build, and `openfold3` is the AlphaFold 3 successor, with a large dependency
# tree), so a test of the course's repository (`test_lesson09_openfold.py`, not part of the
# student handout) re-states the algorithm of `_lma`
# (read at commit ce0029e of aqlaboratory/openfold, September 2025), with the row attention
# around it: queries divided by √c, the MSA mask as an additive bias 10⁹ (mask − 1), the pair bias
# LayerNorm(z) → Linear(c_z, H), the gate and the output projection. On copied weights, in
# float64, your tiled row attention equals it to 1e-12, and so does lesson 06's module. Where its
# chunking differs from FlashAttention's:
#
# - **Split, then merge.** For each chunk of queries, `_lma` computes every key chunk's maximum,
#   sum of exponentials and weighted values, *keeps them all*, and merges them once at the end
#   against the largest maximum. FlashAttention folds each tile into the running (m, l, acc) at
#   once and keeps nothing per tile.
# - **Chunks sized for memory, not for a chip.** The defaults are 1,024 queries × 4,096 keys.
#   At R = 300 one chunk holds the whole row, so row attention is computed unchunked; it bites on
#   long axes, such as the extra MSA's columns at S = 5,120. FlashAttention's tiles (64–128) are
#   sized to fit a GPU's on-chip memory.
# - **No backward of its own.** `_lma` is written in differentiable PyTorch operations, so in
#   training autograd keeps every chunk's exponentials: a whole score matrix (the test measures
#   it). And because it detaches each chunk's maximum where the chunks are merged but not inside
#   that chunk's exponentials, its autograd gradient for q and k is not attention's gradient once
#   there is more than one key chunk (the test shows this too): another reason it is an inference
#   path. Your `TiledAttention` keeps the output and the logsumexp and has its own backward.
# - **Masks as a bias.** A padded key gets −10⁹ added; a query whose keys are *all* padding then
#   has every score shifted by the same amount, and attends to all keys as if nothing were
#   masked. Lesson 02's rule, and your tiles with a boolean mask, give it zeros.
#
# ## 8. Route two beside it: a sliding window
#
# Route two changes the model: query i sees only the keys with |i − j| ≤ w. As a mask this is a
# band along the diagonal, and your tiled attention with that mask computes it exactly, but it
# still visits every tile, most of which the band does not touch. `sliding_window_attention`
# (given in `exercises/tiled.py`, it calls your `tiled_attention_forward`) visits only the key
# blocks that meet each query block's band, with the band's mask for that slice only. L = 512,
# a window of 16, tiles of 64:

# %%
from exercises.tiled import band_mask, key_blocks, sliding_window_attention

L, window, block = 512, 16, 64
generator = torch.Generator().manual_seed(11)
qw, kw, vw = (torch.randn(4, L, 16, generator=generator, dtype=torch.float64) for _ in range(3))
band = band_mask(slice(0, L), slice(0, L), window)

skipping, visited = sliding_window_attention(qw, kw, vw, window, block)
every_tile, _lse = tiled_attention_forward(qw, kw, vw, mask=band, block_q=block, block_k=block)
all_tiles = len(key_blocks(L, block)) ** 2
print(f"max |skipping tiles - every tile with the band mask| below 1e-12: "
      f"{(skipping - every_tile).abs().max().item() < 1e-12}")
print(f"tiles computed: {visited} of {all_tiles} ({visited / all_tiles:.1%}); "
      f"scores computed: {visited * block * block:,} instead of {L * L:,}; "
      f"keys each query sees: at most {2 * window + 1}")

# %% tags=["nbval-ignore-output"]
from course.memory import profile_bytes

window_inputs = [t.float() for t in (qw, kw, vw)]
with torch.no_grad():
    runs = {
        "every tile, band mask": lambda: tiled_attention_forward(
            *window_inputs, mask=band_mask(slice(0, L), slice(0, L), window),
            block_q=block, block_k=block),
        "band tiles only": lambda: sliding_window_attention(*window_inputs, window, block),
    }
    for name, run in runs.items():
        print(f"{name:22}: peak {profile_bytes(run).peak / 1e6:6.2f} MB, "
              f"{best_time(run, repeats=1, warmup=False) * 1e3:7.1f} ms")

# %% [markdown]
# The two routes combine: the window cuts the work from L² to about L · (block + 2w) scores, and
# the tiles keep the memory linear (the full L × L boolean mask of the first line is itself
# quadratic; the second builds each block's slice of the band). The price of route two is paid
# in the model, not the computer: information travels at most w positions per layer, and
# attention between distant positions needs many layers (or a few global tokens, as in Longformer
# and BigBird; lesson 05's global attention is one such summary).
#
# ## 9. On a GPU
#
# On a CUDA card the next cell grows L for naive attention, your tiled attention and PyTorch's
# SDPA (which there runs a FlashAttention kernel), in inference and in training, until the card
# runs out of memory or a time budget of 30 s is spent, and shows the peaks (`course/tiled_gpu.py`).
# Without a GPU it shows the runs recorded on real cards in `data/lesson09/gpu_runs.json`
# (in the course repository, `python scripts/record_gpu_run09.py --source "..."` adds one).

# %% tags=["nbval-ignore-output"]
from course import tiled_gpu

if torch.cuda.is_available():
    tiled_gpu.show(tiled_gpu.measure(tiled_attention, source="this notebook", log=lambda line: None))
elif tiled_gpu.load():
    for record in tiled_gpu.load():
        tiled_gpu.show(record)
else:
    print("No CUDA GPU here, and no GPU run of this lesson is recorded yet "
          "(data/lesson09/gpu_runs.json holds none).")

# %% [markdown]
# What to expect there: naive attention runs out of memory at the L where its L × L scores (times
# heads, twice for a moment) exceed the card; SDPA's FlashAttention kernel and your tiles grow
# linearly and stop on time, not memory; SDPA is much faster than your tiles, for the reasons of
# section 6.
#
# ## Self-check
#
# 1. In the online softmax, a block raises the maximum from 5 to 9. By what factor must the
#    running sum be multiplied, and why?
# 2. Why must the output accumulator be rescaled too, and not only the sum?
# 3. A query's first three key tiles are fully masked. What are its m and l after them, and
#    what goes wrong without the "shift by 0" rule?
# 4. What does the forward pass save for the backward pass, and how large is it for q, k, v of
#    shape (S, H, R, c)?
# 5. Why does D = rowsum(dO ∘ O) replace Σₖ Pᵢₖ dPᵢₖ, and why does that matter for tiles?
# 6. Chunking lesson 05's columns 4 at a time already fits S = 5,120 in a few GB at inference.
#    What do tiles add?
# 7. Your tiled attention, written in PyTorch operations, has none of a fused kernel's advantages.
#    Is FlashAttention slower than naive attention on a GPU? Why or why not?
#
# <details><summary>Answer</summary>
#
# 1. By exp(5 − 9) = e⁻⁴: every term in the sum was exp(xⱼ − 5) and must become exp(xⱼ − 9).
# 2. acc = Σⱼ exp(sⱼ − m) vⱼ is a sum relative to m as well; out = acc / l is right only if both
#    are relative to the same m (the factors cancel in the ratio only when both are applied).
# 3. m = −inf and l = 0. Without the rule, p = exp(−inf − (−inf)) = NaN, and the NaN stays in l
#    and acc for every later tile; with it, p = exp(−inf − 0) = 0.
# 4. q, k, v, the bias and mask (inputs, already in memory), the output (S, H, R, c) and the
#    logsumexp (S, H, R): one extra number per query, instead of the (S, H, R, R) weights.
# 5. Σₖ Pᵢₖ dPᵢₖ = Σₖ Pᵢₖ (dOᵢ · vₖ) = dOᵢ · (Σₖ Pᵢₖ vₖ) = dOᵢ · Oᵢ. It needs a whole row of P;
#    dOᵢ · Oᵢ needs none, so it is computed once per query before the tile loop.
# 6. Training: autograd keeps every chunk's weights for the backward pass, (R, H, S, S) in all,
#    while tiles keep the output and the logsumexp. And one long sequence (a single slice) cannot
#    be chunked by slices at all; tiles cut within it.
# 7. No, it is faster: on a GPU the cost of attention is mostly moving the L × L matrix through
#    slow memory, and a fused kernel never does; the CPU tiles here gain no speed from tiling
#    because every tile is a dozen separate operations called from Python.
#
# </details>
#
# ## Summary
#
# - The online softmax reads a row in blocks with a running maximum m and sum l; when m rises to
#   m′, l (and any accumulator) is multiplied by exp(m − m′). It equals the softmax exactly.
# - Tiled attention applies it to (block_q, block_k) tiles with the bias and mask of each tile,
#   returns the output and lse = m + log l, and never holds a q × k tensor.
# - The backward pass recomputes each tile's weights P = exp(s − lse): dV = Pᵀ dO,
#   dS = P ∘ (dO Vᵀ − D) with D = rowsum(dO ∘ O), dQ = dS K / √c, dK = dSᵀ Q / √c, dbias = dS summed
#   over broadcast axes (FlashAttention-2). Training keeps the output and one number per query.
# - Memory, predicted from shapes and confirmed by the profiler, grows as L² for naive (and
#   chunked) attention and linearly for tiles; lesson 05's wall moves from one or two thousand
#   sequences to tens of thousands (24 GB) or hundreds of thousands (80 GB). The compute stays
#   quadratic, and in pure PyTorch tiles bring no speed: the speed of FlashAttention comes from
#   fusion in a kernel.
# - OpenFold's `_lma` chunks differently (split then merge, large chunks, no backward of its
#   own, masks as a −10⁹ bias) and equals your tiles on AlphaFold's row attention.
# - Route two (a sliding window) combines with route one: skip the tiles outside the band.
