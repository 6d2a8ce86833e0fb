# %% [markdown]
# # Lesson 09: attention that never holds the score matrix
#
# **Prerequisites:** the exercises this lesson calls are lesson 01's `stable_softmax` and
# `scaled_scores` (`exercises/softmax.py`: your tiles call `scaled_scores` on every tile) and
# lesson 02's `scaled_dot_product_attention` and `causal_mask` (`exercises/attention.py`: the
# attention your tiles must equal). Lessons 03–08 are background reading, not code this lesson
# needs: lesson 04's pair bias and lesson 05's memory measurements are recalled where they are
# used.
#
# Lesson 05 ran into a wall: attention scores one number per query-key pair, so the score
# tensor grows with the square of the sequence length, and at AlphaFold's depths no card holds
# it. The course's source notes name two ways out. **Route one**: compute the same attention in
# tiles, with an *online* softmax (Milakov & Gimelshein 2018, arXiv 1805.02867), so that the
# L × L matrix is never written whole; memory falls from O(L²) to O(L), the compute stays O(L²)
# (Rabe & Staats 2021, "Self-attention does not need O(n²) memory", arXiv 2112.05682;
# FlashAttention, Dao et al. 2022, arXiv 2205.14135; FlashAttention-2, Dao 2023, arXiv
# 2307.08691). **Route two**: change the mathematics (sliding windows, sparse or linear
# attention); lesson 05's global attention is an early example. Here you build route one
# yourself.
#
# **In this lesson you will**
# - write an online softmax: a running maximum and a running sum over blocks, and the rescaling
#   identity that keeps them exact;
# - write a tiled attention forward pass that returns the output and the logsumexp of each
#   query, with masks and an additive (pair) bias applied tile by tile, its running maximum, sum
#   and output accumulator in float32 whatever the input's dtype;
# - write its backward pass by recomputation, a `torch.autograd.Function` that keeps only the
#   output and the logsumexp (FlashAttention-2's Algorithm 2, with a bias gradient);
# - write causal attention that never computes a tile above the diagonal, and count the scores
#   it computes;
# - do the arithmetic of FLOPs and memory traffic that explains why recomputing beats storing;
# - measure memory against L (predicted from shapes, confirmed by the profiler), and time:
#   where naive attention's time jumps as its scores leave the CPU's caches;
# - compare bfloat16 tiles with float32 accumulators against float64;
# - size AlphaFold's row attention with pair bias for 24/40/80 GB cards, and see how OpenFold's
#   low-memory attention chunks differently;
# - combine the two routes in a sliding window whose tiles outside the band are skipped, and
#   meet the production tools: FlexAttention and SDPA's backends.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %%
import math

import matplotlib.pyplot as plt
import torch

from course.i18n import N_, _  # printed labels, figure titles and axes in the notebook's language

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


print(_("column attention, S = 5,120, R = 300, 8 heads: (R, H, S, S) = {gb:7.1f} GB").format(
    gb=score_tensor_gb(300, 8, 5120, 5120)))
print(_("row attention,    S = 5,120, R = 300, 8 heads: (S, H, R, R) = {gb:7.1f} GB").format(
    gb=score_tensor_gb(5120, 8, 300, 300)))
print(_("row attention,    S = 512, R = 2,000, 8 heads: (S, H, R, R) = {gb:7.1f} GB").format(
    gb=score_tensor_gb(512, 8, 2000, 2000)))

# %% [markdown]
# Softmax seems to need the whole row of scores at once: its maximum (for stability, lesson 01)
# and its sum (to normalise). Training seems to need them again: the backward pass of softmax
# uses the weights. Both turn out to be false. The next sections remove them one at a time.
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
# row, and a second pass writes exp(xᵢ − m) / l. This is Milakov and Gimelshein's online
# normaliser (2018). The row [1, 3, 2, 6] in blocks of 2, by hand:

# %%
row = torch.tensor([1.0, 3.0, 2.0, 6.0], dtype=torch.float64)
m, l = -math.inf, 0.0
for start in (0, 2):
    block = row[start:start + 2]
    m_new = max(m, block.max().item())
    rescale = math.exp(m - m_new)  # exp(-inf) = 0 before the first block: nothing to rescale
    l = l * rescale + torch.exp(block - m_new).sum().item()
    print(_("after block {block}: m = {m}, l = {l:.4f}   (the old sum was multiplied by "
            "{rescale:.4f})").format(block=block.tolist(), m=m_new, l=l, rescale=rescale))
    m = m_new
print(_("online:"), torch.exp(row - m) / l)
print(_("whole row at once:"), torch.softmax(row, dim=-1))

# %% [markdown]
# The first block gives m = 3 and l = e⁻² + e⁰ = 1.1353. The second raises the maximum to 6: the
# old sum shrinks by e⁻³ (its terms were "relative to 3", now they are relative to 6), and the
# block adds e⁻⁴ + e⁰. Nothing of the first block had to be kept but two numbers per row.
#
# A masked entry is −inf. While a row has seen only −inf, its running maximum is −inf too, and
# exp(−inf − (−inf)) is NaN: subtract 0 instead of m′ in that case (every term is then
# exp(−inf) = 0, as it should be). And m starts at −inf, not at 0: a row whose entries are all
# far below 0 (−1000, say) would otherwise never raise it, and exp(x − 0) underflows to 0.
#
# ## Exercise 1: `online_softmax`
#
# In `exercises/tiled.py`, write `online_softmax(x, block_size)`: the softmax of x along its
# last axis, computed with a running maximum and sum over blocks of `block_size` entries (the
# last block may be shorter), then a second pass over the blocks. x may have any leading axes,
# and may hold −inf entries as long as every row has a finite one. Keep the running maximum and
# sum in `accumulator_dtype(x.dtype)` (given: float32 for bfloat16 and float16 inputs, the
# input's own dtype for float32 and float64) on x's device (`torch.full_like(..., dtype=...)`,
# `torch.zeros_like`), and return the result in x's dtype: the check runs your code in float32,
# in bfloat16 and on PyTorch's `meta` device too. The helper `key_blocks(n, block)` (given)
# lists the slices.

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
    print(_("{dtype:14}: max |online - stable| below {tolerance:g}: {ok}, result dtype "
            "{result}").format(dtype=str(dtype), tolerance=tolerance, ok=gap < tolerance,
                               result=online_softmax(x, 2).dtype))

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
# the softmax denominator, one number per query, which the backward pass will need. This is
# FlashAttention-2's Algorithm 1: query blocks outside, key blocks inside, the division by l
# deferred to the end.
#
# **A query that sees no key** is one whose scores are all −inf after the bias and the mask: a
# mask that hides every key, or a bias of −inf on its whole row. It keeps l = 0: give it out = 0
# and lse = log 0 = −inf. Lesson 02's rule gives zeros too when the *mask* hides every key; a
# bias of −inf on a whole row is where the two differ (lesson 02's softmax of that row is NaN).
# FlashAttention-2's kernels choose lse = +inf for such a row instead, so that the backward's
# exp(s − lse) is 0 there with no special case; the lesson keeps −inf and shifts by 0.
#
# **Precision.** The tiles can take bfloat16 inputs, as GPUs run attention, but bfloat16 keeps 8
# bits of mantissa: a sum over many tiles in bfloat16 drifts. As FlashAttention's kernels do, keep
# m, l and acc in float32 (`accumulator_dtype`), cast each tile of q, k and v to it, and cast only
# the output back to q's dtype; lse stays in float32.
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
# it returns `(out, lse)`, out (*, q, c_v) in q's dtype, equal to lesson 02's attention, and lse
# (*, q) in `accumulator_dtype(q.dtype)`. Call your lesson-01 `scaled_scores` on each tile. q and
# k may have different lengths, and neither need be a multiple of its block. Write each query
# block's result into its rows of one output tensor (create it from the first block's result
# with `new_empty`, which keeps dtype and device). The check also measures your forward pass
# with the profiler: it must hold less than half of one q × k score tensor.

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
print(_("max |tiled - lesson 02| below 1e-12:"), (out - reference).abs().max().item() < 1e-12)
print(_("lse equals torch.logsumexp of the scores:"),
      torch.allclose(lse, torch.logsumexp(scores, dim=-1), rtol=0, atol=1e-12))
print(_("the blind query: output"), out[0, 0, 0, :3].tolist(), _(" lse"), lse[0, :, 0].tolist())

# %% [markdown]
# The widget below walks a 24 × 24 score matrix tile by tile. Left, the tiles visited so far
# (dark tiles come later, the red one is in hand; the whole matrix is drawn only for the
# picture). Right, one query row's running maximum and running sum after each of its tiles:
# whenever the maximum jumps, the sum is rescaled down and grows again, and the last tile lands
# on the values of the whole row (dashed). The slider runs over the tiles the walk visits, so
# it follows the block size and the sliding window.

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
# (FlashAttention-2's Algorithm 2, extended with the bias gradient as DeepSpeed's Evoformer
# kernel computes it; FlashAttention-2 itself has no bias):
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
# Nothing larger than the bias itself is created: dbias is accumulated tile by tile at the
# bias's own size, so a pair bias shared by S sequences has a gradient S times smaller than the
# scores. (Built at the scores' size, autograd would sum it back to the bias's shape and every
# value would be right, but the backward would hold a whole score tensor: the check measures
# the peak with a bias shared across a leading axis.) As in the forward, accumulate in
# `accumulator_dtype(q.dtype)` and return each gradient in its input's dtype.
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
    print(_("{name:6} shape {shape:15} max |tiled - autograd| below 1e-12: {ok}").format(
        name=name, shape=str(tuple(mine.shape)), ok=(mine - theirs).abs().max().item() < 1e-12))
small = [t[:1, :1, :6, :3].clone().requires_grad_(True) for t in (q, k, v)]
small_bias = pair_bias[:1, :6, :6].clone().requires_grad_(True)
print("gradcheck:", torch.autograd.gradcheck(
    lambda *t: tiled_attention(*t, mask[:1, :, :6, :6], 4, 4), (*small, small_bias)))

# %% [markdown]
# ## 5. Causal attention: the tiles above the diagonal are never computed
#
# In a decoder, query i sees only the keys j ≤ i. With a causal mask your tiles give the right
# answer, but they still compute every tile above the diagonal, only to mask it away: half of
# the work. FlashAttention-2 skips those tiles: with square tiles, query block b needs the key
# blocks 0 … b and nothing after, and only the diagonal tile b needs the mask.
#
# ## Exercise 4: `causal_tiled_attention`
#
# Write `causal_tiled_attention(q, k, v, block=64)` in `exercises/tiled.py`: for each query block
# `rows` (from `key_blocks(L, block)`), call your `tiled_attention` on the keys and values up to
# `rows.stop` (never beyond: those tiles lie above the diagonal), with blocks of `block`, and the
# mask "key j ≤ query i" for that slice, in the **global** indices of the sequence: i runs from
# `rows.start` to `rows.stop`, j from 0 to `rows.stop` (create both with `device=q.device`). The
# mask is True in every tile left of the diagonal and False only inside the diagonal tile.
# Concatenate the blocks' outputs. Your `TiledAttention` gives the backward pass. The check
# counts the scores your function computes as it computes them: at most L²/2 + L·block.

# %% tags=["check"]
from course.checks.lesson09 import check_causal_tiles
from exercises.tiled import causal_tiled_attention

check_causal_tiles(causal_tiled_attention)

# %% [markdown]
# Against lesson 02's attention with its causal mask, in float64, forward and backward, and the
# scores computed, counted while your code runs (`course/lessons/lesson09/costs.py` counts every
# matrix product over c, the channels of q and k, and every exp of a tile), L = 512 in blocks
# of 64:

# %%
from course.lessons.lesson09.costs import count_scores
from exercises.attention import causal_mask
from exercises.tiled import key_blocks

L, block = 512, 64
generator = torch.Generator().manual_seed(10)
qc, kc, vc = (torch.randn(1, L, 5, generator=generator, dtype=torch.float64, requires_grad=True)
              for _ in range(3))
weights = torch.randn(1, L, 5, generator=generator, dtype=torch.float64)
mine = causal_tiled_attention(qc, kc, vc, block)
lesson02 = scaled_dot_product_attention(qc, kc, vc, mask=causal_mask(L))
mine_grads = torch.autograd.grad((mine * weights).sum(), (qc, kc, vc))
lesson02_grads = torch.autograd.grad((lesson02 * weights).sum(), (qc, kc, vc))
print(_("max |causal tiles - lesson 02|, forward below 1e-12: {forward}, gradients below "
        "1e-12: {backward}").format(
    forward=(mine - lesson02).abs().max().item() < 1e-12,
    backward=max((a - b).abs().max().item() for a, b in zip(mine_grads, lesson02_grads)) < 1e-12))
with torch.no_grad():
    computed = count_scores(lambda: causal_tiled_attention(qc, kc, vc, block), 5)
    everything = count_scores(lambda: tiled_attention(qc, kc, vc, None, causal_mask(L), block,
                                                      block), 5)
n_blocks = len(key_blocks(L, block))
print(_("tiles computed: {tiles} of {all} (the diagonal and below)").format(
    tiles=n_blocks * (n_blocks + 1) // 2, all=n_blocks ** 2))
print(_("scores computed: {computed:,}; L²/2 = {half:,}; L²/2 + L·block = {bound:,}; every tile "
        "with the causal mask: {everything:,}").format(computed=computed, half=L * L // 2,
                                                     bound=L * L // 2 + L * block,
                                                     everything=everything))

# %% [markdown]
# The tiles on and below the diagonal hold L²/2 + L·block/2 scores when L is a multiple of the
# block: the diagonal tiles are computed whole and half of each is masked. Your tiles keep, for
# the backward pass, each query block's slice of the mask (booleans, shared by every head and
# sequence); FlashAttention-2 builds the diagonal tile's mask from indices inside the kernel and
# keeps none (FlexAttention's `mask_mod`, section 12, does the same).
#
# ## 6. The arithmetic: why recomputing beats storing
#
# FlashAttention-2 counts attention's FLOPs as 4 · L² · d per head for the forward pass (two
# matrix products, q kᵀ and P v, of L² · d multiply-adds each, 2 FLOPs per multiply-add), half
# that with a causal mask, and the backward as 2.5 times the forward: 5 matrix products (the
# scores again, dV, dP, dQ, dK) against the forward's 2 (§4.1). A backward that reads back a
# stored P needs 4. So a training step costs 3.5 forward passes tiled against 3 naive: the extra
# work is one q kᵀ.
#
# What it buys is memory traffic. On a GPU the scores live in high-bandwidth memory (HBM, the
# card's DRAM), the tiles in on-chip SRAM. Standard attention (FlashAttention's Algorithm 0)
# writes S, reads it to write P, and reads P to multiply by V: about 4 · L² numbers through HBM
# per head, plus 4 · L · d for Q, K, V and O. FlashAttention (its Algorithm 1, key blocks outside)
# streams Q and O through the chip once per key block of B_c = ⌈M / 4d⌉ keys, M the SRAM in
# numbers: Θ(L² d² / M) numbers through HBM (Theorem 2), "many times fewer" for d of 64–128 and
# M around 100 KB, as the paper puts it. (FlashAttention-2's order, which your forward follows,
# query blocks outside, streams K and V once per query block instead: the same order of
# traffic.) The cell computes both for one head of L = 4,096, d = 64 and M = 100 KB of bfloat16,
# and the cost of keeping P for the backward pass against recomputing it, on an A100: 1.5 TB/s
# of HBM (the low end of the 1.5–2.0 TB/s that FlashAttention §2.1 gives) and 312 TFLOP/s of
# bfloat16 matrix products (the peak behind FlashAttention-2's "225 TFLOPs/s, 72 % model FLOPs
# utilization").

# %%
from course.lessons.lesson09.costs import attention_flops, hbm_traffic

L, d = 4096, 64
flops = attention_flops(L, L, d)
print(_("forward: {forward:.3g} FLOPs per head (4 · L² · d); training step: naive {naive:.3g}, "
        "recomputing {tiled:.3g} (x{ratio:.3f})").format(
    forward=flops["forward"], naive=flops["training naive"], tiled=flops["training recompute"],
    ratio=flops["training recompute"] / flops["training naive"]))
traffic = hbm_traffic(L, d, sram_elements=100_000 // 2)
print(_("numbers through HBM in the forward, one head: standard {standard:,}, tiled {tiled:,} "
        "(blocks of {block} keys, {passes} passes over Q): x{ratio:.1f} fewer").format(
    standard=traffic["standard"], tiled=traffic["tiled"], block=traffic["block_c"],
    passes=traffic["passes over Q"], ratio=traffic["standard"] / traffic["tiled"]))
store_s = 2 * L * L * 2 / 1.5e12   # P written in bfloat16 and read back once
recompute_s = 2 * L * L * d / 312e12  # one more q kᵀ
print(_("keeping P for the backward pass: {store:.1f} µs of HBM traffic per head; recomputing "
        "it: {recompute:.2f} µs of matrix products (x{ratio:.1f} cheaper)").format(
    store=store_s * 1e6, recompute=recompute_s * 1e6, ratio=store_s / recompute_s))

# %% [markdown]
# Writing L² numbers and reading them back costs several times what one more q kᵀ costs on the
# tensor cores: recomputing wins even before counting the memory it saves. On the CPU the same
# trade runs between the caches (in the role of SRAM) and DRAM (in the role of HBM): section 8
# measures it.
#
# ## 7. Memory, measured as lesson 05 measures it
#
# Four ways to compute attention on q, k, v of shape (R, H, L, c): R = 8 independent slices (say
# columns), H = 4 heads, L queries and keys, c = 16, float32. `naive` holds every slice's L × L
# scores at once; `chunked` does 4 slices at a time (lesson 05's chunking); `tiled` is your tiled
# attention (tiles of 128 × 128); `sdpa` is `torch.nn.functional.scaled_dot_product_attention`.
# For each, in inference (forward under `no_grad`) and in training (forward, then backward):
#
# - **predicted** from shapes: run on the `meta` device and add up the bytes of the tensors alive
#   at each moment (`course/lessons/lesson09/memory.py`, built on lesson 05's tracker; in
#   training it also sees what autograd saves for the backward pass);
# - **measured** on the CPU by the profiler's allocation events, at L = 256.
#
# "peak" is the most the call holds above its inputs; "kept" is what the forward pass leaves
# allocated for the backward pass (and the output).

# %%
from course.lessons.lesson09.memory import measure_call, predict_call
from course.memory import chunked_column_attention, naive_column_attention

methods = {
    "naive": naive_column_attention,
    "chunked": chunked_column_attention,
    "tiled": lambda q, k, v: tiled_attention(q, k, v, None, None, 128, 128),
    "sdpa": torch.nn.functional.scaled_dot_product_attention,
}
lengths, measured_at = [128, 256, 512], 256
predicted, measured = {}, {}
for name, fn in methods.items():
    for train in (False, True):
        for L in lengths:
            predicted[name, train, L] = predict_call(fn, [(8, 4, L, 16)] * 3, train=train)
        measured[name, train] = measure_call(fn, [(8, 4, measured_at, 16)] * 3, train=train)

# %% tags=["nbval-ignore-output"]
print(_("{method:8} {mode:9} {peak:>15} {measured:>14} {kept:>15} {kept_measured:>14}   (MB, L = "
        "{L})").format(method=_("method"), mode=_("mode"), peak=_("predicted peak"),
                       measured=_("measured peak"), kept=_("predicted kept"),
                       kept_measured=_("measured kept"), L=measured_at))
for (name, train), found in measured.items():
    guess = predicted[name, train, measured_at]
    print(f"{name:8} {_('training') if train else _('inference'):9} {guess.peak / 1e6:>15.2f} "
          f"{found.peak / 1e6:>14.2f} {guess.held_after / 1e6:>15.2f} {found.held_after / 1e6:>14.2f}")

# %%
def agree(name, train):
    """Predicted and measured peak and kept bytes within 0.1 % at L = 256."""
    guess, found = predicted[name, train, measured_at], measured[name, train]
    return (abs(guess.peak - found.peak) <= 1e-3 * found.peak and
            abs(guess.held_after - found.held_after) <= 1e-3 * found.held_after)


for name in ["naive", "chunked", "tiled"]:
    print(_("{name:8} predicted = measured within 0.1 %: inference {inference}, training "
            "{training}").format(name=name, inference=agree(name, False), training=agree(name, True)))
sdpa_ratio = measured["sdpa", False].peak / predicted["sdpa", False, measured_at].peak
print(_("sdpa     measured / predicted peak at L = 256, inference: below 0.2: {ok}").format(
    ok=sdpa_ratio < 0.2))

# %% [markdown]
# For naive, chunked and tiled the bytes predicted from shapes are the bytes the CPU allocates,
# in inference and in training. SDPA, as in lesson 05, runs PyTorch's fused CPU kernel, which
# works in blocks and keeps far less than `meta`'s unfused prediction (and what it allocates
# depends on the machine, its threads among them); in training it too keeps only the output and
# a logsumexp. Now the growth, by what factor each peak, and what each keeps for training, grows
# when L doubles (predicted, so the same on every machine). Naive and chunked: about 4, the L²
# of the scores. Tiled: under 2 at the peak, since its tiles have a fixed size and only the
# output and the logsumexp grow with L; those, what it keeps for training, exactly double.

# %%
for name in ["naive", "chunked", "tiled"]:
    for train in (False, True):
        peaks = [predicted[name, train, L].peak for L in lengths]
        kept = [predicted[name, train, L].held_after for L in lengths]
        bound, holds = ("< 2", lambda x: x < 2) if name == "tiled" else ("> 3.5", lambda x: x > 3.5)
        print(_("{name:8} {mode:9} peak x {bound} at each doubling: {ok}, kept x {kept:.2f}").format(
            name=name, mode=_("training") if train else _("inference"), bound=bound,
            ok=all(holds(b / a) for a, b in zip(peaks, peaks[1:])), kept=kept[2] / kept[1]))

# %% tags=["nbval-ignore-output"]
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
colours = {"naive": "tab:red", "chunked": "tab:orange", "tiled": "tab:purple", "sdpa": "tab:green"}
for ax, train in zip(axes, (False, True)):
    for name in ["naive", "chunked", "tiled"]:
        ax.loglog(lengths, [predicted[name, train, L].peak / 1e6 for L in lengths], "o-",
                  color=colours[name], label=name)
    ax.loglog([measured_at], [measured["sdpa", train].peak / 1e6], "s", color=colours["sdpa"],
              label=_("sdpa (measured)"))
    ax.set(xlabel=_("L (queries = keys)"), ylabel=_("peak MB above the inputs"),
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
from course.lessons.lesson09.memory import fit_line, solve_need
from course.memory import GB, predicted_need, predicted_wall


def tiled_columns(q, k, v):
    return tiled_attention(q, k, v, None, None, 128, 128)


def tiled_need(S):  # inputs + predicted peak, as lesson 05 counts a card's need
    return 3 * 300 * 8 * S * 8 * 4 + predict_call(tiled_columns, [(300, 8, S, 8)] * 3).peak


line = fit_line(tiled_need, (384, 512))
print(_("check of the line at S = 640: predicted on meta {meta:.4f} GB, from the line {line:.4f} "
        "GB").format(meta=tiled_need(640) / 1e9, line=(line[1] * 640 + line[2]) / 1e9))
walls = {capacity: (predicted_wall("naive", capacity * GB, 300, 8, 8),
                    predicted_wall("chunked", capacity * GB, 300, 8, 8),
                    solve_need(line, capacity * GB)) for capacity in (24, 40, 80)}
print(f"{_('card'):>7} {_('naive'):>9} {_('chunked'):>9} {_('tiled'):>11}")
for capacity, (naive_wall, chunked_wall, tiled_wall) in walls.items():
    print(f"{capacity:>4} GB {naive_wall:>9,} {chunked_wall:>9,} {tiled_wall:>11,}")
S = 5120
print(_("\nat S = 5,120, one layer: naive needs {naive:.0f} GB, chunked {chunked:.1f} GB, tiled "
        "{tiled:.2f} GB (inference)").format(naive=predicted_need("naive", 300, 8, S, 8) / GB,
                                            chunked=predicted_need("chunked", 300, 8, S, 8) / GB,
                                            tiled=(line[1] * S + line[2]) / GB))
print(_("tiles reach x{low:.0f} to x{high:.0f} the sequences chunking reaches on these cards").format(
    low=min(w[2] / w[1] for w in walls.values()), high=max(w[2] / w[1] for w in walls.values())))
kept_tiled = 300 * 8 * S * (8 + 1) * 4
print(_("kept for training, per layer: naive and chunked {naive:.0f} GB of weights, tiled "
        "{tiled:.3f} GB (output and logsumexp)").format(naive=300 * 8 * S * S * 4 / GB,
                                                        tiled=kept_tiled / GB))
check_S = 256
kept = predict_call(tiled_columns, [(300, 8, check_S, 8)] * 3, train=True).held_after
print(_("(at S = {S}, meta's kept bytes for tiled = output + logsumexp: {ok})").format(
    S=check_S, ok=kept == 300 * 8 * check_S * (8 + 1) * 4))

# %% [markdown]
# Tiles move lesson 05's wall from one or two thousand sequences to tens of thousands on a 24 GB
# card and hundreds of thousands on an 80 GB one: what is left is the inputs, the output and a
# few tiles, and only the tiles' fixed size is not linear in S. Chunking the columns also fits
# S = 5,120 for inference (lesson 05); tiles go several times further (the ratio printed above)
# and do the same for training, because the backward pass recomputes instead of keeping.
#
# ## 8. Time: the cache in the role of the GPU's SRAM
#
# Memory fell; did time? Your tiles do naive attention's arithmetic and a little more (the
# rescaling, and in training one more q kᵀ), and each tile is a dozen separate PyTorch operations
# called from Python, with a fixed overhead each. But naive attention writes its (B, H, L, L)
# scores to memory, reads them back for the softmax, writes the weights, and reads them for the
# product with v. Once those tensors no longer fit in the CPU's caches, every pass goes to DRAM,
# as on a GPU every pass goes to HBM; a tile of scores stays in the cache. Which effect wins
# depends on L, the block size and the machine. First, one size on this machine, the best of 3
# timings each, on one thread (as the sweep below: several threads on a machine busy with other
# work wait for each other at every small operation, and the tiles are many small operations):

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson09.memory import make_tensors
from course.lessons.lesson09.speed import threads
from course.measure import best_time

timed_L = 256
inputs = make_tensors([(8, 4, timed_L, 16)] * 3)
grad_inputs = make_tensors([(8, 4, timed_L, 16)] * 3, requires_grad=True)


def train_step(fn):
    return lambda: fn(*grad_inputs).sum().backward()


seconds = {}
with threads(1):
    for name in ("naive", "tiled", "sdpa"):
        with torch.no_grad():
            forward = best_time(lambda: methods[name](*inputs), repeats=3)
        seconds[name] = (forward, best_time(train_step(methods[name]), repeats=3))
        print(_("{name:6} forward {forward:8.1f} ms   training step {training:8.1f} ms").format(
            name=name, forward=seconds[name][0] * 1e3, training=seconds[name][1] * 1e3))
print(_("L = {L}, 1 thread, best of 3: tiled / naive forward x{forward:.2f}, training "
        "x{training:.2f}; tiled / sdpa forward x{sdpa:.1f}").format(
    L=timed_L, forward=seconds["tiled"][0] / seconds["naive"][0],
    training=seconds["tiled"][1] / seconds["naive"][1],
    sdpa=seconds["tiled"][0] / seconds["sdpa"][0]))
print(_("here, at this size, the tiles are {verdict} than naive attention").format(
    verdict=_("faster") if seconds["tiled"][0] < seconds["naive"][0] else _("slower")))

# %% [markdown]
# One size says little. The sweep below times naive attention against tiles of 16 to 512 for
# L = 256 to 2,048 on (B, H, L, c) = (2, 4, L, 64), the best of several timings each. It takes
# minutes, longer than this lesson's time, so the table shown is the one recorded with the
# course (`scripts/bench_lesson09.py --record-sweep`), with the machine it ran on; set
# `RECORD_SWEEP = True` to measure it here. The lines under the table are computed from it:
# they say what it shows, on whichever machine it was measured.

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson09 import speed

RECORD_SWEEP = False  # True: measure the sweep on this machine (minutes)
if RECORD_SWEEP:
    from course.memory import naive_column_attention as naive_forward

    sweep = speed.sweep(naive_forward, lambda q, k, v, b: tiled_attention_forward(
        q, k, v, block_q=b, block_k=b), log=lambda line: None)
else:
    sweep = speed.load()
print("\n".join(speed.table(sweep)))
print()
print("\n".join(speed.describe(sweep, live=RECORD_SWEEP)))

# %% [markdown]
# Read the table as FlashAttention's argument in miniature. Small tiles lose: each costs the
# same dozen operator calls whatever its size, so tiles of 16 pay that overhead 256 times more
# often than tiles of 256. Naive attention's time per score jumps once its score tensors outgrow
# the caches; tiles whose scores fit stay near their own cost per score. FlashAttention's block
# sizes are set by the same trade on a GPU: B_c = ⌈M / 4d⌉ so that the tiles fit the SRAM
# (FlashAttention, Algorithm 1), 64 or 128 in FlashAttention-2's kernels. What pure PyTorch
# cannot give your tiles is what makes a fused kernel fast: it keeps a tile in registers or
# on-chip memory from scores to output, with no operator calls and no Python loop, which is why
# SDPA beats your tiles by the factor printed above, and FlashAttention is faster than naive
# attention on a GPU despite recomputing in the backward pass (FlashAttention §4.3: up to 3×
# for sequences up to 2K).
#
# ## 9. Precision: bfloat16 tiles with float32 accumulators
#
# On a GPU, attention runs in bfloat16 or float16, with float32 accumulators inside the kernel.
# The lesson's case: q, k, v of shape (1, 4, 1024, 64) drawn in float64, rounded to bfloat16,
# tiles of 64. Each result against float64 attention of the unrounded inputs: your tiles with
# float32 accumulators; the same tile loop with everything in bfloat16
# (`course/lessons/lesson09/precision.py`); naive attention and SDPA in bfloat16; and two
# references: the exact attention of the rounded inputs, and that result rounded to bfloat16 (the
# error left when the inputs' and the output's rounding are the only ones).

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson09 import precision

errors = precision.errors(tiled_attention_forward)
for name, error in errors.items():
    if name != "output dtype":
        print(_("{name:38} max |x - float64| = {error:.2e}").format(name=_(name), error=error))

# %%
best = errors["exact, of the rounded inputs, rounded"]
print(_("your bfloat16 tiles: output {dtype}; within 2.5e-3 of float64: {close}; within 10 % of "
        "the exact result of the rounded inputs, rounded: {best}").format(
    dtype=errors["output dtype"], close=errors["tiles, float32 accumulators"] < 2.5e-3,
    best=errors["tiles, float32 accumulators"] < 1.1 * best))
print(_("tiles accumulating in bfloat16 are x{ratio:.1f} further from float64").format(
    ratio=errors["tiles, bfloat16 accumulators"] / errors["tiles, float32 accumulators"]))

# %% [markdown]
# With float32 accumulators your tiles land on that reference: the inputs' rounding and the
# output's own rounding are nearly all that is left. It is not a strict floor (a maximum over
# many entries: another bfloat16 computation may land a little either side of it). Tiles that
# accumulate in bfloat16 lose several times more on the way, a little at each of the 16 key
# tiles.
#
# ## 10. AlphaFold's row attention with pair bias at S = 5,120
#
# In AlphaFold2's MSA stack, row attention lets the residues of each sequence attend to each
# other, with the pair bias from z (lesson 04), shape (H, R, R), shared by all S sequences:
# q, k, v (S, H, R, c) and scores (S, H, R, R). At the extra MSA's deepest setting, S = 5,120
# (AlphaFold2's default is 1,024; 5,120 is used by some of its released models, lesson 05),
# with 8 heads of c = 8: how long a protein (R residues) fits on a card, for one layer's
# attention core, inputs included? The naive need is quadratic in R (three predictions). The
# tiled one has a linear part, the predicted peak of tiles of 64 (two predictions), and a
# quadratic part known exactly: the inputs, among them the (H, R, R) pair bias, quadratic in R
# but independent of S.

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson09.memory import fit_need

S, H, c = 5120, 8, 8


def row_shapes(R):
    return [(S, H, R, c)] * 3 + [(H, R, R)]


def naive_rows(q, k, v, bias):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c) + bias, dim=-1) @ v


def tiled_rows(q, k, v, bias):
    return tiled_attention(q, k, v, bias, None, 64, 64)


def row_inputs_bytes(R):  # q, k, v and the pair bias, float32
    return (3 * S * H * R * c + H * R * R) * 4


def row_need(fn, R):
    return row_inputs_bytes(R) + predict_call(fn, row_shapes(R)).peak


naive_curve = fit_need(lambda R: row_need(naive_rows, R), (128, 256, 384))
peak_line = fit_line(lambda R: predict_call(tiled_rows, row_shapes(R)).peak, (192, 256))
tiled_curve = (4.0 * H, peak_line[1] + 3 * S * H * c * 4, peak_line[2])  # + the inputs, exactly
print(_("check at R = 320: tiled need predicted on meta {meta:.4f} GB, from the curve {curve:.4f} "
        "GB").format(meta=row_need(tiled_rows, 320) / GB,
                     curve=(tiled_curve[0] * 320 ** 2 + tiled_curve[1] * 320 + tiled_curve[2]) / GB))
fused = (3 * S * H * 300 * c + H * 300 * 300 + S * H * 300 * c + S * H * 300) * 4
print(_("R = 300: naive needs {naive:.1f} GB, these tiles {tiled:.2f} GB (inference, one layer); a "
        "fused kernel needs the inputs, the output and lse: {fused:.2f} GB").format(
    naive=row_need(naive_rows, 300) / GB, tiled=row_need(tiled_rows, 300) / GB, fused=fused / GB))
print(_("one (S, H, 64, 64) tile tensor of these tiles: {tile:.2f} GB").format(
    tile=S * H * 64 * 64 * 4 / GB))
print(_("kept for training at R = 300, per layer: naive {naive:.1f} GB of weights, tiled {tiled:.3f} "
        "GB").format(naive=S * H * 300 * 300 * 4 / GB, tiled=S * H * 300 * (c + 1) * 4 / GB))
print(f"{_('card'):>7} {_('naive: largest R'):>17} {_('tiled: largest R'):>17} "
      f"{_('z at that R'):>14}")
for capacity in (24, 40, 80):
    longest = solve_need(tiled_curve, capacity * GB)
    print(f"{capacity:>4} GB {solve_need(naive_curve, capacity * GB):>17,} {longest:>17,} "
          f"{longest ** 2 * 128 * 4 / GB:>11.1f} GB")

# %% [markdown]
# For inference at R = 300, naive row attention needs about 31 GB for one layer (two score
# tensors of 14.7 GB exist together for a moment, lesson 05 showed why): it does not fit on a
# 24 GB card, and it fits on 40 and 80 GB. In training it keeps 14.7 GB of weights per layer,
# while that layer's backward pass runs (AlphaFold2 and OpenFold recompute each block's
# activations in its backward pass, so the layers' weights do not pile up). Tiled, the same
# layer keeps under half a GB, and the longest protein for which *this layer's attention core*
# fits grows from a few hundred residues to thousands. The model is more than this core: the
# pair representation z (R, R, 128) alone, in float32, outgrows the card at those lengths (the
# last column), and the triangle operations on it cost O(R³): the pair stack is AlphaFold's next
# wall, where OpenFold's chunking and offloading come in.
#
# The tiled figures are this implementation's: each PyTorch operation of a tile runs on all
# S · H of them at once, so a tile tensor takes the size printed above, and a few are alive at a
# time. A fused kernel keeps its tiles in SRAM and registers, per thread block, and needs about
# the inputs, the output and lse. Both do S · H · R² · c multiply-adds twice.
#
# ### OpenFold's low-memory attention
#
# OpenFold, the open reimplementation of AlphaFold2, has four alternatives to its stock PyTorch
# attention for this layer:
#
# - **Its own CUDA softmax** (`use_memory_efficient_kernel`, `attention_core` in
#   `openfold/utils/kernel/`): computes the whole score tensor and takes its softmax in place, so
#   it holds one score tensor instead of two, with a backward; it saves a copy, not the quadratic.
# - **DeepSpeed's Evoformer kernel** (`DS4Sci_EvoformerAttention`, used with
#   `use_deepspeed_evo_attention`): a fused CUDA kernel that takes the mask bias and the pair
#   bias and returns the pair bias's gradient, for training and inference: what your
#   `TiledAttention` does, in CUDA.
# - **FlashAttention** (`use_flash`): takes the mask, not the pair bias.
# - **`_lma`** in `openfold/model/primitives.py` ("low-memory attention", after Rabe & Staats
#   2021), used when `use_lma` is set, which OpenFold documents for inference.
#
# OpenFold cannot be installed from a package index (the `openfold` name there does not build,
# and `openfold3` is the AlphaFold 3 successor, with a large dependency tree). So a test of the
# course's repository (`test_lesson09_openfold.py`, not part of the student handout) re-states
# the algorithm of `_lma`, read at commit ce0029e of aqlaboratory/openfold (dated 2025-09-15),
# with the row attention around it: queries divided by √c, the MSA mask as an additive bias
# 10⁹ (mask − 1), the pair bias LayerNorm(z) → Linear(c_z, H), the gate and the output
# projection. On copied weights, in float64, your tiled row attention equals it to 1e-12, and so
# does lesson 06's module. Where its chunking differs from FlashAttention's:
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
#   it). And it detaches each chunk's maximum where the chunks are merged but not inside that
#   chunk's exponentials, so its autograd gradient for q and k is not attention's gradient once
#   there is more than one key chunk. Rabe and Staats's own code detaches the maximum *before*
#   the exponentials, and checkpoints each chunk: with that one change split-then-merge
#   differentiates exactly (the test shows both). Your `TiledAttention` keeps the output and the
#   logsumexp and has its own backward.
# - **Masks as a bias.** A padded key gets −10⁹ added; a query whose keys are *all* padding then
#   has every score shifted by the same amount, and attends to all keys as if nothing were
#   masked. Lesson 02's rule, and your tiles with a boolean mask, give it zeros.
#
# ## 11. Route two beside it: a sliding window
#
# Route two changes the model: query i sees only the keys with |i − j| ≤ w. As a mask this is a
# band along the diagonal, and your tiled attention with that mask computes it exactly, but it
# still visits every tile, most of which the band does not touch. `sliding_window_attention`
# (given in `exercises/tiled.py`, it calls your `tiled_attention_forward`) reads, for each query
# block, only the keys `band_keys` gives: those within w of one of its queries, widened at both
# ends to whole blocks of the tile grid (FlashAttention-2 rounds both ends the same way), with
# the band's mask for that slice only. L = 512, a window of 16, tiles of 64; the band is checked
# against lesson 02's attention with a band mask written out here, and the scores are counted
# as they are computed:

# %%
from exercises.tiled import band_mask, sliding_window_attention

L, window, block = 512, 16, 64
generator = torch.Generator().manual_seed(11)
qw, kw, vw = (torch.randn(2, L, 16, generator=generator, dtype=torch.float64) for _ in range(3))
positions = torch.arange(L)
band = (positions[:, None] - positions[None, :]).abs() <= window  # the band, written out

skipping, tiles_read = sliding_window_attention(qw, kw, vw, window, block)
reference = scaled_dot_product_attention(qw, kw, vw, mask=band)
computed = count_scores(lambda: sliding_window_attention(qw[:1], kw[:1], vw[:1], window, block), 16)
n_blocks = len(key_blocks(L, block))
per_block = block + 2 * math.ceil(window / block) * block
print(_("max |band tiles - lesson 02 with the band mask| below 1e-12: {ok}").format(
    ok=(skipping - reference).abs().max().item() < 1e-12))
print(_("tiles computed: {tiles} of {all} ({share:.1%}); scores computed: {computed:,} of L² = "
        "{square:,}").format(tiles=tiles_read, all=n_blocks ** 2, share=tiles_read / n_blocks ** 2,
                             computed=computed, square=L * L))
print(_("bound L · (block + 2·⌈w/block⌉·block) = {bound:,}; keys each query sees: at most "
        "{keys}").format(bound=L * per_block, keys=2 * window + 1))

# %% tags=["nbval-ignore-output"]
from course.memory import profile_bytes

window_inputs = [t.float() for t in (qw, kw, vw)]
full_band = band_mask(slice(0, L), slice(0, L), window)  # built before the timing: not measured
with torch.no_grad(), threads(1):
    runs = {
        N_("every tile, band mask"): lambda: tiled_attention_forward(
            *window_inputs, mask=full_band, block_q=block, block_k=block),
        N_("band tiles only"): lambda: sliding_window_attention(*window_inputs, window, block),
    }
    for name, run in runs.items():
        print(_("{name:22}: peak {peak:6.2f} MB, {ms:7.1f} ms (best of 3, 1 thread)").format(
            name=_(name), peak=profile_bytes(run).peak / 1e6,
            ms=best_time(run, repeats=3) * 1e3))

# %% [markdown]
# The two routes combine: the window cuts the work from L² scores to the band's tiles, and with
# the full mask built beforehand both ways hold about the same few tiles at their peak (memory
# was already linear): skipping saves work and time, not memory. The price of route two is paid
# in the model, not the computer: information travels at most w positions per layer, and
# attention between distant positions needs many layers (or a few global tokens, as in Longformer
# and BigBird; lesson 05's global attention is one such summary).
#
# ## 12. The production path: FlexAttention and SDPA's backends
#
# What you wrote by hand is what PyTorch's **FlexAttention** (`torch.nn.attention.flex_attention`)
# generates: you give it a `score_mod(score, b, h, q_idx, kv_idx)`, here "add the pair bias
# bias[h, q_idx, kv_idx]", and a `BlockMask` built from a `mask_mod(b, h, q_idx, kv_idx)`, here
# causal or a sliding window: which tiles hold any visible key (the others are skipped) and which
# of those need the mask applied inside, as your causal exercise and the window do by hand.
# `torch.compile` turns it into one fused kernel, with a backward on a GPU.
#
# On the CPU with torch 2.13, FlexAttention without `torch.compile` runs an unfused reference
# that builds the whole score matrix, and its first call imports and runs TorchDynamo (seconds);
# compiled, building its CPU kernel takes far longer than this lesson (the last line below says
# how long it took); and it has no backward on the CPU.
# So the comparison below is the one recorded with the course (`scripts/record_flex09.py`, the
# course's tiles against compiled FlexAttention, the best of 3 timings, the profiler's peak); set
# `FLEX_LIVE = True` to run it here with your tiles (compiled: minutes).

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson09 import flex

FLEX_LIVE = False  # True: compile FlexAttention here and compare it with your tiles (minutes)
if FLEX_LIVE:
    flex_record = flex.run({
        "pair bias": lambda q, k, v, bias: tiled_attention_forward(q, k, v, bias, None, 64, 64)[0],
        "causal": lambda q, k, v, bias: causal_tiled_attention(q, k, v, flex.BLOCK),
        "sliding window": lambda q, k, v, bias: sliding_window_attention(
            q, k, v, flex.WINDOW, flex.BLOCK)[0]}, log=lambda line: None)
else:
    flex_record = flex.load()
print("\n".join(flex.table(flex_record)))

# %% [markdown]
# The values agree to float32's rounding in every setting (the column max |flex - tiles|). The tiles that
# FlexAttention's BlockMask skips are the ones your causal exercise and the window skip; the
# time and the peak are a fused kernel's against a Python loop of PyTorch operations.
#
# **SDPA's backends.** `torch.nn.functional.scaled_dot_product_attention` chooses among kernels;
# `torch.nn.attention.sdpa_kernel([...])` names the ones it may use, and raises when none of them
# accepts the inputs. On this machine, which backend runs for which dtype:

# %% tags=["nbval-ignore-output"]
from torch.nn.attention import SDPBackend, sdpa_kernel

small = [torch.randn(1, 2, 64, 16, generator=generator) for _ in range(3)]
device = "cuda" if torch.cuda.is_available() else "cpu"
backends = [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
print(_("SDPA on {device}: the dtypes each backend accepts").format(device=device))
for backend in backends:
    accepted = []
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16):
        try:
            with sdpa_kernel([backend]):
                torch.nn.functional.scaled_dot_product_attention(
                    *(t.to(device=device, dtype=dtype) for t in small))
            accepted.append(str(dtype).removeprefix("torch."))
        except RuntimeError:
            pass
    print(f"  {backend.name:20} {', '.join(accepted) or _('none')}")

# %% [markdown]
# On a CUDA card the choice differs (PyTorch's `sdp_utils.cpp`): the FlashAttention kernel takes
# float16 and bfloat16 only, and no attention mask or bias; the memory-efficient kernel takes
# float32 too, and an additive mask; the math backend takes anything, unfused. So SDPA on float32
# inputs never runs FlashAttention on a GPU: it runs the memory-efficient kernel, or math.
#
# ## 13. On a GPU
#
# On a CUDA card the next cell grows L for naive attention, your tiled attention and SDPA, in
# float32 (SDPA on its memory-efficient kernel) and in bfloat16 (SDPA on its FlashAttention
# kernel), in inference and in training, until the card runs out of memory or a time budget is
# spent, and shows the peaks (`course/lessons/lesson09/gpu.py`; the kernel that ran is named).
# Without a GPU it shows the runs recorded on real cards in `data/lesson09/gpu_runs.json`, if
# any (`python scripts/record_gpu_run09.py --source "..."` adds one).

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson09 import gpu as tiled_gpu

if torch.cuda.is_available():
    tiled_gpu.show(tiled_gpu.measure(tiled_attention, source="this notebook", log=lambda line: None))
elif tiled_gpu.load():
    for record in tiled_gpu.load():
        tiled_gpu.show(record)
else:
    print(_("No CUDA GPU here, and no GPU run of this lesson is recorded yet "
            "(data/lesson09/gpu_runs.json holds none)."))

# %% [markdown]
# No GPU run of this lesson is recorded yet, so it prints no GPU timing of its own. On a card, the
# table prints for each method and mode the largest L it reached, its peak and its time there,
# and why it stopped (out of memory, or the time budget); the figure marks with an x where a
# method ran out of memory. Read SDPA's time against your tiles' in that table. Naive attention's
# peak holds its L × L scores times the heads, twice for a moment (lesson 05), quadratic in L;
# SDPA's kernels and your tiles keep the output and the logsumexp.
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
# 7. A training step with recomputation does more FLOPs than a naive one. Why is FlashAttention
#    faster than naive attention on a GPU anyway, and when are your PyTorch tiles faster than
#    naive attention on a CPU?
# 8. Causal attention with tiles of 64 at L = 4,096: how many tiles are computed, and how many
#    of them need the mask?
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
# 7. On a GPU the cost of attention is mostly moving the L × L matrix through HBM, and a fused
#    kernel never does; one more q kᵀ on the tensor cores is cheaper than writing and reading
#    back L² numbers (section 6). On a CPU, section 8's sweep prints its answer, computed from
#    the table on the machine that measured it ("so the best tiles are faster than naive at ...");
#    your tiles win where naive's score tensors outgrow the caches and the tiles are
#    large enough that the operator calls of each tile do not dominate.
# 8. 64 query blocks; block b needs key blocks 0 … b: 64 · 65 / 2 = 2,080 tiles of 4,096, and
#    only the 64 diagonal tiles need the mask.
#
# </details>
#
# ## Summary
#
# - The online softmax reads a row in blocks with a running maximum m and sum l; when m rises to
#   m′, l (and any accumulator) is multiplied by exp(m − m′). It equals the softmax exactly.
# - Tiled attention applies it to (block_q, block_k) tiles with the bias and mask of each tile,
#   returns the output and lse = m + log l, and never holds a q × k tensor; its accumulators are
#   float32 whatever the input's dtype.
# - The backward pass recomputes each tile's weights P = exp(s − lse): dV = Pᵀ dO,
#   dS = P ∘ (dO Vᵀ − D) with D = rowsum(dO ∘ O), dQ = dS K / √c, dK = dSᵀ Q / √c (FlashAttention-2),
#   and dbias = dS summed over broadcast axes at the bias's own size (as DeepSpeed's Evoformer
#   kernel). Training keeps the output and one number per query.
# - Causal attention skips the tiles above the diagonal and masks only the diagonal ones: about
#   half the scores.
# - Recomputing costs one more q kᵀ (3.5 forward passes per training step instead of 3) and saves
#   writing and reading back L² numbers: on a GPU the cheaper side by far.
# - Memory, predicted from shapes and confirmed by the profiler, grows as L² for naive (and
#   chunked) attention and linearly for tiles. Time depends on the machine: in pure PyTorch the
#   tiles pay operator calls per tile and gain where naive's scores leave the caches (the
#   sweep says where); fused kernels (SDPA, FlexAttention, FlashAttention) gain both ways.
# - OpenFold's `_lma` chunks differently (split then merge, large chunks, no backward of its
#   own, masks as a −10⁹ bias) and equals your tiles on AlphaFold's row attention; its low-memory
#   route for training is DeepSpeed's Evoformer kernel.
# - Route two (a sliding window) combines with route one: skip the tiles outside the band.
