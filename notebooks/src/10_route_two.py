# %% [markdown]
# # Lesson 10: route two, change the math
#
# **Prerequisites:** lesson 02's attention and masks, lesson 05's global attention
# (`MultiHeadAttention` with `is_global=True` in `exercises/mha.py`, and its `masked_mean`),
# lesson 06's and lesson 08's gates, lesson 09's tiles and memory measurements (`key_blocks` in
# `exercises/tiled.py` is used here too).
#
# Lesson 09 ended on the source notes' two ways out of attention's quadratic memory wall. **Route
# one** (lesson 09) keeps softmax attention exactly and computes it in tiles: memory falls from
# O(L²) to O(L), the compute stays O(L²). **Route two** changes the mathematics. The notes list
# "sliding window, sparse, linear attention / Mamba", and add that "Nyströmformer's landmark
# averaging is a close relative of averaging the queries into one row, and global attention is one
# of this line's forerunners". Lesson 05 built global attention and lesson 09 a sliding window.
# Here you build the rest and measure what it costs.
#
# **In this lesson you will**
# - write linear attention (φ = elu + 1) in three forms and prove them equal: the quadratic masked
#   form, the recurrence (a recurrent network with a state of constant size) and the chunked form
#   (the state between chunks, the quadratic form inside one);
# - measure their memory the way lesson 09 measures it (predicted from shapes, confirmed by the
#   profiler);
# - meet two numeric traps and fix them: a float16 normaliser that overflows, and decays written as
#   ratios of cumulative products;
# - write a decayed (gated) state, the recurrence h = a_t h + k_t v_tᵀ of Mamba-2 (GLA decays each
#   key channel apart), and its quadratic form, and see exactly what is gated there;
# - write Nyström attention, whose one-landmark case is lesson 05's global attention, and measure
#   its error as the number of landmarks grows;
# - read what route two costs on a small recall task, trained for the same number of steps with
#   softmax, linear, decayed linear and sliding-window attention;
# - put both routes in one table, with lesson 09's measured figures.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %%
import matplotlib.pyplot as plt
import torch

from course.columns import pad
from course.i18n import N_, _  # printed labels, figure titles and axes in the notebook's language

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## 1. Why softmax needs the whole matrix, and what replaces it
#
# Softmax attention gives key j the weight exp(qᵢ · kⱼ / √c) / Σⱼ′ exp(qᵢ · kⱼ′ / √c). The
# exponential ties each query to each key: no sum over the keys can be taken before the query is
# known, so every (query, key) pair is computed, L² of them (lesson 09 only avoids *storing* them).
#
# Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs") replaces exp(q · k) by a
# product of features, φ(q) · φ(k), with φ(x) = elu(x) + 1, a map whose values are always
# positive (so every weight is positive, as softmax's are). Then, for one query,
#
# outᵢ = Σⱼ (φ(qᵢ) · φ(kⱼ)) vⱼ / Σⱼ φ(qᵢ) · φ(kⱼ) = φ(qᵢ)ᵀ S / φ(qᵢ)ᵀ z,   S = Σⱼ φ(kⱼ) vⱼᵀ,  z = Σⱼ φ(kⱼ)
#
# by associativity: S (d × e) and z (d) do not depend on the query, so they are computed once.
# Nothing of size L × L exists. φ is given in `exercises/linear.py` as `feature_map`:

# %%
from exercises.linear import feature_map

x = torch.tensor([-3.0, -1.0, 0.0, 1.0, 3.0], dtype=torch.float64)
print("x            :", x)
print("elu(x) + 1   :", feature_map(x))
print("exp(x)       :", torch.exp(x))

# %% [markdown]
# For x ≥ 0, elu(x) + 1 = x + 1 grows like a line; for x < 0 it is exp(x): positive, never zero
# in exact arithmetic. The weights φ(qᵢ) · φ(kⱼ) are a *kernel*, not a softmax: they do not
# concentrate on one key as the scores grow, since scaling q and k by t changes a weight by a
# factor of at most about t², where softmax's change exponentially in t (the widget of section 9
# shows one row of each).
#
# The associativity, checked on a non-causal example of 6 queries, 9 keys, d = 4, e = 3: the
# quadratic form builds a (6, 9) weight matrix, the other a (4, 3) state and a (4,) normaliser.

# %%
generator = torch.Generator().manual_seed(10)
q, k, v = (torch.randn(n, c, generator=generator, dtype=torch.float64)
           for n, c in [(6, 4), (9, 4), (9, 3)])
weights = feature_map(q) @ feature_map(k).T                  # (6, 9)
quadratic = weights @ v / weights.sum(dim=-1, keepdim=True)
S, z = feature_map(k).T @ v, feature_map(k).sum(dim=0)       # (4, 3) and (4,)
associative = feature_map(q) @ S / (feature_map(q) @ z)[:, None]
print(_("weights"), tuple(weights.shape), _(" state"), tuple(S.shape), _(" normaliser"), tuple(z.shape))
print(_("max |quadratic - associative| below 1e-12:"),
      (quadratic - associative).abs().max().item() < 1e-12)

# %% [markdown]
# ## Exercise 1: `linear_attention`, the quadratic form
#
# In `exercises/linear.py`, write `linear_attention(q, k, v, causal=True)`: q (*, L_q, d),
# k (*, L_k, d), v (*, L_k, e). Compute W = φ(q) φ(k)ᵀ (*, L_q, L_k); with `causal=True` keep its
# lower triangle (query i sees keys j ≤ i, its own included: `tril()`); return W v / rowsum(W).
# φ applies to the queries and the keys only, **never to the values**, and the normaliser of
# query i sums **its own row** of W (over the keys). Compute in `accumulation_dtype(q)` (given:
# float32 for float16 or bfloat16 inputs, otherwise the input's own dtype) and return the output
# in q's dtype: section 5 shows why.

# %% tags=["check"]
from course.checks.lesson10 import check_linear_attention
from exercises.linear import linear_attention

check_linear_attention(linear_attention)

# %% [markdown]
# ## 2. The causal form is a recurrent network
#
# With a causal mask the sums run over j ≤ i only: Sᵢ = Σⱼ≤ᵢ φ(kⱼ) vⱼᵀ and zᵢ = Σⱼ≤ᵢ φ(kⱼ). Each is
# the previous one plus one token, so a model can read the sequence token by token and keep only
# (S, z):
#
# S ← S + φ(kₜ) vₜᵀ,  z ← z + φ(kₜ),  outₜ = φ(qₜ)ᵀ S / φ(qₜ)ᵀ z.
#
# This is the title of the paper: a Transformer with linear attention **is** a recurrent network,
# whose state has d × e + d numbers per head whatever the length. Generating text with softmax
# attention keeps every earlier key and value (the "KV cache", 2 · L · d numbers per head);
# generating with linear attention keeps the state.
#
# ## Exercise 2: `linear_attention_recurrent`
#
# Write `linear_attention_recurrent(q, k, v, state=None)` in `exercises/linear.py`: a loop over the
# tokens that returns `(out, (S, z))`, out (*, L, e) in q's dtype, S (*, d, e) and z (*, d) after
# the last token, in the working dtype. Each sequence of the batch (*) has its own state, and
# `state=None` starts from zeros: **a state must not leak between sequences**, neither through an
# einsum that sums over the batch axes nor from one call to the next. A state passed in is
# continued: two calls on the halves of a sequence, the second given the first's state, equal one
# call on the whole. Apply φ to one token at a time inside the loop and write each output into a
# tensor made once with `new_empty`: then nothing of length L is held but the output (section 4
# measures it).

# %% tags=["check"]
from course.checks.lesson10 import check_linear_recurrent
from exercises.linear import linear_attention_recurrent

check_linear_recurrent(linear_attention_recurrent)

# %% [markdown]
# The state is all a generating model needs. Reading 12 tokens of two sequences in three calls of
# 4, each handed the previous state, gives exactly the outputs of one call on all 12:

# %%
generator = torch.Generator().manual_seed(11)
q, k, v = (torch.randn(2, 12, 4, generator=generator, dtype=torch.float64) for _ in range(3))
whole, _state = linear_attention_recurrent(q, k, v)
state, pieces = None, []
for start in (0, 4, 8):
    part, state = linear_attention_recurrent(q[:, start:start + 4], k[:, start:start + 4],
                                             v[:, start:start + 4], state=state)
    pieces.append(part)
print(_("state S"), tuple(state[0].shape), _("and z"), tuple(state[1].shape), _("carried between calls"))
print(_("three calls of 4 tokens = one call of 12, to 1e-12:"),
      (torch.cat(pieces, dim=1) - whole).abs().max().item() < 1e-12)
print(_("equal to your quadratic form, to 1e-12:"),
      (linear_attention(q, k, v) - whole).abs().max().item() < 1e-12)

# %% [markdown]
# ## 3. Chunks: the quadratic form inside, the state between
#
# The recurrence does L small steps one after another: little memory, but no parallel work. The
# quadratic form does one big matrix product: parallel, but L × L. The **chunked form** takes the
# best of each. Cut the sequence into chunks of C tokens. For chunk c, with S and z the sums over
# every *earlier* chunk (the **exclusive** state),
#
# out_c = (φ(q_c) S + tril(φ(q_c) φ(k_c)ᵀ) v_c) / (φ(q_c) z + rowsum(tril(φ(q_c) φ(k_c)ᵀ))),
#
# and only then S ← S + φ(k_c)ᵀ v_c, z ← z + Σ φ(k_c). The first term brings everything before the
# chunk through the state; the masked quadratic term, the chunk's own keys up to each query. Update
# the state first (an **inclusive** state) and the chunk's own keys count twice, once through S
# and once through the masked term: the classic off-by-one of this form. The reference code of
# the fla library (fla-org/flash-linear-attention, `naive_chunk_linear_attn`) computes the same
# chunked form without φ (a layer applies its feature map, if any, before the call) and with the
# normaliser optional, in chunks of exactly 64 tokens, and writes the exclusive state as a
# cumulative sum shifted by one chunk.
#
# ## Exercise 3: `linear_attention_chunked`
#
# Write `linear_attention_chunked(q, k, v, chunk=64)`: causal linear attention, `chunk` tokens at
# a time (the last chunk may be shorter: `key_blocks(L, chunk)` from lesson 09 lists the slices).
# It returns (*, L, e) in q's dtype, equal to your quadratic form with `causal=True`. Never build
# weights for more than one chunk: the check measures your peak memory.

# %% tags=["check"]
from course.checks.lesson10 import check_linear_chunked
from exercises.linear import linear_attention_chunked

check_linear_chunked(linear_attention_chunked)

# %% [markdown]
# ### The three forms are one function
#
# At L = 256 (2 heads, d = e = 16, float64), the three forms and the cumulative-sum form of the
# next section give the same outputs, and the same gradients of a fixed loss (each difference
# measured relative to the largest entry); `gradcheck` compares the chunked form's gradients with
# finite differences (its fast mode: along random directions).

# %%
from exercises.linear import linear_attention_cumsum

generator = torch.Generator().manual_seed(12)
q, k, v = (torch.randn(2, 256, 16, generator=generator, dtype=torch.float64) for _ in range(3))
forms = {
    N_("quadratic"): lambda q, k, v: linear_attention(q, k, v),
    N_("recurrence"): lambda q, k, v: linear_attention_recurrent(q, k, v)[0],
    N_("chunked (64)"): lambda q, k, v: linear_attention_chunked(q, k, v, chunk=64),
    N_("cumsum"): linear_attention_cumsum,
}
loss_weights = torch.randn(2, 256, 16, generator=generator, dtype=torch.float64)
results = {}
for name, form in forms.items():
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = form(*leaves)
    results[name] = (out.detach(), *torch.autograd.grad((out * loss_weights).sum(), leaves))
def relative_gap(mine, theirs):
    """The largest difference, relative to the largest entry of the reference."""
    return ((mine - theirs).abs().max() / theirs.abs().max()).item()


for name in list(forms)[1:]:
    gaps = [relative_gap(mine, theirs) for mine, theirs in zip(results[name], results["quadratic"])]
    print(pad(_(name), 13) + _(" vs quadratic: output and dq, dk, dv agree to 1e-12: {agree}")
          .format(agree=max(gaps) < 1e-12))
small = [t[:1, :10, :3].clone().requires_grad_(True) for t in (q, k, v)]
print(_("gradcheck of the chunked form (chunks of 4):"),
      torch.autograd.gradcheck(lambda *t: linear_attention_chunked(*t, chunk=4), small,
                               fast_mode=True))

# %% [markdown]
# ## 4. Memory, measured as lesson 09 measures it
#
# Four ways to compute causal linear attention on q, k, v of shape (4, L, 32) (4 heads, d = e = 32,
# float32), in inference: your quadratic form (an L × L weight matrix per head), your recurrence,
# your chunked form (chunks of 8) and `linear_attention_cumsum` (given), which takes the
# recurrence literally: the cumulative sum of every φ(kₜ) vₜᵀ, all L prefix states (L, d, e) at
# once. As in lesson 09, the peak (the most the call holds above its inputs, its output included)
# is **predicted** on the `meta` device from shapes and **measured** by the profiler's allocation
# events (`course/lessons/lesson09/memory.py`). Every token of the recurrence is a dozen operations that
# both tools record one by one, so the lengths are short: 16, 32 and 64 tokens.

# %%
from course.lessons.lesson10 import agree, memory_of

memory_forms = {
    N_("quadratic"): lambda q, k, v: linear_attention(q, k, v),
    N_("recurrence"): lambda q, k, v: linear_attention_recurrent(q, k, v)[0],
    N_("chunked"): lambda q, k, v: linear_attention_chunked(q, k, v, chunk=8),
    N_("cumsum"): linear_attention_cumsum,
}
lengths = [16, 32, 64]
memory = memory_of(memory_forms, lengths, lambda L: (4, L, 32))
output_bytes = {L: 4 * L * 32 * 4 for L in lengths}

# %% tags=["nbval-ignore-output"]
print(pad(_("form"), 11), f"{'L':>4}", pad(_("predicted peak"), 15, ">"), pad(_("measured peak"), 14, ">"),
      pad(_("peak - output"), 14, ">") + _("   (bytes)"))
for (name, L), (predicted, measured) in memory.items():
    print(pad(_(name), 11) + f" {L:>4} {predicted.peak:>15,} {measured.peak:>14,} "
          f"{predicted.peak - output_bytes[L]:>14,}")

# %%
print(_("predicted = measured within 1 % for every form and L:"), agree(memory, within=0.01))

# %% tags=["nbval-ignore-output"]
for name in memory_forms:  # how your forms grow: it depends on how they are written
    held = [memory[name, L][0].peak - output_bytes[L] for L in lengths]
    print(pad(_(name), 11) + _(" beyond the output, when L doubles: x {first:.2f}, x {second:.2f}")
          .format(first=held[1] / held[0], second=held[2] / held[1]))

# %% [markdown]
# Beyond the output, which every form writes, the recurrence holds the same bytes at every length:
# its state and one token's temporaries. The chunked form is flat once L spans two chunks (one
# chunk's weights and the state). The cumulative-sum form doubles with L: it holds every prefix
# state. The quadratic form grows towards a factor 4, its L × L weights. Predicted from shapes on
# `meta`, the same bytes at any L: the cumsum form at the sizes of a real head,

# %%
from course.lessons.lesson09.memory import predict_call

L, d = 8192, 64
states_bytes = L * d * d * 8
cumsum_peak = predict_call(linear_attention_cumsum, [(1, L, d)] * 3, dtype=torch.float64).peak
recurrence_state = (d * d + d) * 8
print(_("L = {L:,}, d = e = {d}, float64: the prefix states (L, d, e) are {states:.0f} MiB; the "
        "cumsum form's peak on meta {peak:.0f} MiB; the recurrence's state {state:.1f} KiB")
      .format(L=L, d=d, states=states_bytes / 2**20, peak=cumsum_peak / 2**20,
              state=recurrence_state / 2**10))

# %% [markdown]
# The cumsum form's peak is a little over twice the states: the products φ(kₜ) vₜᵀ of every token
# exist before their cumulative sum does. The recurrence keeps 32.5 KiB (S and z) at every
# length. Both forms hold the output too, L × e numbers, as any attention does.
#
# In training, autograd keeps what the backward pass needs: the recurrence as written keeps every
# token's state, and the chunked form one state per chunk plus each chunk's weights. Recomputing
# instead of keeping, as lesson 09's backward pass did for softmax, is the way out; writing it is
# lesson 09's exercise again, and is left out here.
#
# ## 5. Numeric trap 1: a normaliser that overflows in float16
#
# The normaliser φ(qᵢ)ᵀ zᵢ sums one positive term per earlier key. With queries and keys of unit
# variance and d = 64 each term is about 86 (printed below), so after a few hundred tokens the sum
# passes float16's largest number, 65,504, and becomes inf; the output φ(q)ᵀ S / inf is then 0
# (or NaN, where the numerator overflows too). bfloat16 has float32's range but 8 bits of
# precision: adding 1 to a running sum of 1,000 changes nothing, so a long sum stalls. The first L (in steps of 64) at which the float16
# normaliser overflows, for five random draws at d = 64:

# %%
from course.lessons.lesson10 import first_overflow, normaliser_float16

generator = torch.Generator().manual_seed(0)
a, b = (torch.randn(100_000, 64, generator=generator) for _ in range(2))
per_key = (feature_map(a) * feature_map(b)).sum(dim=-1).mean().item()
print(_("mean of φ(q) · φ(k) at d = 64: {mean:.1f}; float16's largest number: {largest:,.0f}")
      .format(mean=per_key, largest=torch.finfo(torch.float16).max))
overflow = first_overflow(range(64, 1025, 64), d=64)
print(_("first L with an inf normaliser, 5 draws:"), overflow)
print(_("at L = 512 every draw is finite:"),
      all(torch.isfinite(normaliser_float16(512, 64, s)).all().item() for s in range(5)))

# %% [markdown]
# Between L = 512 and 1,024, then. The fix is the one your functions already apply: keep the state
# and the normaliser in float32 (fla's reference code `naive_recurrent_linear_attn` casts q, k, v
# to float32 and casts the output back), and return the input's dtype. Another fix drops the
# normaliser altogether and normalises the output with a norm layer instead, as the layers of GLA
# and Mamba-2 do (an RMSNorm before the output projection: of each head's output in GLA, of all
# heads together in Mamba-2) and as the decayed layer of section 10's experiment does (a
# LayerNorm per head). Your function in float16, against the same computed in float32 and
# rounded:

# %%
generator = torch.Generator().manual_seed(1)
qh, kh, vh = (torch.randn(1, 1024, 64, generator=generator).half() for _ in range(3))
naive = (feature_map(qh) @ feature_map(kh).transpose(-2, -1)).tril()
naive_out = naive @ vh / naive.sum(dim=-1, keepdim=True)  # everything in float16
yours = linear_attention(qh, kh, vh)
reference = linear_attention(qh.float(), kh.float(), vh.float())
print(_("all in float16: finite rows {finite} of 1024, all-zero rows {zero}")
      .format(finite=int(torch.isfinite(naive_out).all(dim=-1).sum()),
              zero=int((naive_out == 0).all(dim=-1).sum())))
print(_("yours: dtype"), yours.dtype, _("| finite everywhere:"), bool(torch.isfinite(yours).all()),
      _("| max |yours - float32 result| below 1e-3:"),
      (yours.float() - reference).abs().max().item() < 1e-3)

# %% [markdown]
# ## 6. Numeric trap 2: decays as ratios of cumulative products
#
# The next section gives the state a decay: h ← aₜ h + kₜ vₜᵀ, with aₜ in (0, 1]. Unrolled, token
# s reaches token t multiplied by a_{s+1} · … · aₜ. It is tempting to write this as a ratio of
# cumulative products, Pₜ / Pₛ with Pₜ = a₁ · … · aₜ. With a constant a = 0.5, Pₜ = 0.5ᵗ: float32's
# smallest positive number is 2⁻¹⁴⁹, so the product reaches 0 and the ratio becomes 0 / 0. With
# a = 0.9 it is worse, because it is silent: float32's smallest numbers are multiples of 2⁻¹⁴⁹, so
# there two successive products round to the same number and the "decay" of a step is exactly
# 1.0. `torch.cumprod`, which on the CPU multiplies in float64 and rounds each product to float32,
# still reaches 0 later; a running product kept in float32 stops for good at 4 · 2⁻¹⁴⁹ (4 × 0.9 =
# 3.6 rounds back to 4) and never reaches 0. With `torch.cumprod` in float32, t counted from 1:

# %%
from course.lessons.lesson10 import cumulative_product_trap

print(_("float32's smallest positive number is 2^-149:"),
      torch.tensor(2.0 ** -149, dtype=torch.float32).item() > 0,
      _("| 2^-150 rounds to 0:"), torch.tensor(2.0 ** -150, dtype=torch.float32).item() == 0)
for a in (0.5, 0.9):
    trap = cumulative_product_trap(a, 1200)
    print(_("a = {a}: P_t is 0 from t = {zero}; the decay matrix P_t / P_s has NaN from row t = "
            "{nan_row}; a step's ratio P_t / P_(t-1) is exactly 1.0 first at t = {one}")
          .format(a=a, zero=trap['zero'], nan_row=trap['nan row'],
                  one=trap['ratio one'] or _("never (the product reaches 0 first)")))
print(_("float64, a = 0.5: P_t is 0 from t ="), cumulative_product_trap(0.5, 1200, torch.float64)['zero'])

# %% [markdown]
# Sum the decays in **log space** instead: with cₜ = log a₁ + … + log aₜ (a cumulative sum of
# numbers ≤ 0), the decay from s to t is exp(cₜ − cₛ), a difference of two sums, never a ratio of
# two vanishing products. Above the diagonal (s > t) the difference is positive and its exp can
# overflow: set those entries to −inf **before** the exp, so that they come out as exactly 0, in
# the forward pass and in the gradient (the minimal SSD code of Mamba-2 masks its decay matrix the
# same way before the exp, `exp(segsum(A))`; its `segsum` even adds up each segment's logs
# directly rather than subtracting two cumulative sums, which loses digits once the sums are
# large, and keeps the subtraction as `segsum_unstable`).
#
# ## 7. A decayed state: what GLA and Mamba-2 gate
#
# Linear attention never forgets: S is a plain sum, and the state of token 10,000 weighs token 1
# as much as token 9,999. A **decayed** state forgets at a rate the model chooses per token:
#
# hₜ = aₜ hₜ₋₁ + kₜ vₜᵀ,  outₜ = qₜᵀ hₜ,  aₜ in (0, 1]
#
# (decay first, then add the token: the token's own key enters undecayed). Mamba-2's SSD layer
# (Dao & Gu 2024) uses one scalar aₜ per head and token; GLA (gated linear attention, Yang et
# al. 2023) one decay per channel of the key, Gₜ ⊙ hₜ₋₁. Neither divides by a normaliser: both
# normalise their output instead (an RMSNorm). Unrolled, outₜ = Σₛ≤ₜ (a_{s+1} · … · aₜ) (qₜ · kₛ) vₛ:
# the quadratic form is q kᵀ masked by a **decay matrix** D, Dₜₛ = exp(cₜ − cₛ) for s ≤ t and 0 above the diagonal,
# the "1-semiseparable" mask of the SSD paper.
#
# What is gated, precisely? Lesson 06's AlphaFold gate and lesson 08's gate (the gated-attention
# paper's G1) multiply the **output** of attention, per channel, by σ(x W): they scale what a layer
# reads out and leave the weights alone. Here aₜ multiplies the **state**: it decides how much of
# the past survives into every later token's read-out. A gate on the output cannot forget; a decay
# on the state cannot make the present louder. GLA's and Mamba-2's layers have both kinds: the
# decay on the state, and an output gate of lesson 06's kind with another function in place of
# the sigmoid. GLA multiplies its normalised output by swish(x W_g) (fla's
# `GatedLinearAttention`). Mamba-2 multiplies its output by silu(z), z a projection of its input,
# and only then normalises it, both inside its gated RMSNorm (mamba_ssm's `Mamba2`, whose default
# is `norm_before_gate=False`). Hybrid models use both kinds of layer: Qwen3-Next interleaves
# three Gated DeltaNet layers (a decayed state with a delta-rule update) with one layer of gated
# softmax attention, the gate of lesson 08 (its configuration in Hugging Face's transformers makes
# every fourth layer full attention).
#
# ## Exercise 4: `decayed_recurrent`
#
# Write `decayed_recurrent(q, k, v, log_a, state=None)` in `exercises/linear.py`: q, k (*, L, d),
# v (*, L, e), log_a (*, L) the log of each token's decay. Loop over the tokens:
# h = exp(log_aₜ) h + kₜ vₜᵀ (decay **before** adding the token), outₜ = qₜᵀ h. No φ, no
# normaliser. Return `(out, h)`; as in exercise 2, each sequence has its own state, None starts
# from zeros and a state passed in is continued.

# %% tags=["check"]
from course.checks.lesson10 import check_decayed_recurrent
from exercises.linear import decayed_recurrent

check_decayed_recurrent(decayed_recurrent)

# %% [markdown]
# ## Exercise 5: `decayed_attention`, the decay matrix
#
# Write `decayed_attention(q, k, v, log_a)`: the same output as `decayed_recurrent`, as
# (D ∘ q kᵀ) v with c = cumsum(log_a), Dₜₛ = exp(cₜ − cₛ) for s ≤ t and 0 for s > t. Build D in log
# space and mask the upper triangle to −inf before the exp (section 6).

# %% tags=["check"]
from course.checks.lesson10 import check_decayed_attention
from exercises.linear import decayed_attention

check_decayed_attention(decayed_attention)

# %% [markdown]
# The two forms, forward and backward, at L = 256 with decays between 0.5 and 1 (differences
# relative to the largest entry, as in section 3), and `gradcheck`:

# %%
generator = torch.Generator().manual_seed(13)
q, k, v = (torch.randn(2, 256, 8, generator=generator, dtype=torch.float64) for _ in range(3))
log_a = torch.log(0.5 + 0.5 * torch.rand(2, 256, generator=generator, dtype=torch.float64))
loss_weights = torch.randn(2, 256, 8, generator=generator, dtype=torch.float64)
grads = {}
for name, form in [("recurrence", lambda *t: decayed_recurrent(*t)[0]),
                   ("decay matrix", decayed_attention)]:
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, log_a)]
    out = form(*leaves)
    grads[name] = (out.detach(), *torch.autograd.grad((out * loss_weights).sum(), leaves))
gaps = [relative_gap(a, b) for a, b in zip(grads["recurrence"], grads["decay matrix"])]
print(_("output and the gradients of q, k, v, log_a agree to 1e-12:"), max(gaps) < 1e-12)
small = [t[:1, :8].clone().requires_grad_(True) for t in (q, k, v, log_a)]
print(_("gradcheck of the decay matrix form:"),
      torch.autograd.gradcheck(decayed_attention, small, fast_mode=True))

# %% [markdown]
# The course repository checks your forms against the libraries' own references (one of its
# tests, not part of the student handout, restates them): fla's
# `naive_recurrent_gla` (the recurrence of GLA with a decay per key channel; given the same decay
# on every channel it is your `decayed_recurrent`, with q scaled by 1/√d) and the minimal SSD code
# of Mamba-2 (`ssd_minimal_discrete`, chunked, with its `segsum`), both in float64 to 1e-12.
#
# ## 8. Nyström landmarks, and lesson 05 again
#
# Nyströmformer (Xiong et al. 2021) keeps the softmax and approximates its L × L matrix instead.
# Take m **landmarks**: the means of m consecutive segments of the queries (q̃) and of the keys
# (k̃). With softmax taken over the last axis and scores scaled by 1/√c,
#
# F = softmax(q k̃ᵀ) (L × m),  A = softmax(q̃ k̃ᵀ) (m × m),  B = softmax(q̃ kᵀ) (m × L),
# softmax(q kᵀ) ≈ F A⁺ B,  out = F (A⁺ (B v)),
#
# with A⁺ the Moore-Penrose pseudo-inverse, which the paper approximates by an iteration
# (`iterative_pinv`, given). Nothing of size L × L: L × m, m × m and m × L.
#
# Take **one** landmark: q̃ is the mean of all queries, F is a column of ones (a softmax over one
# entry), A = [1], and every query receives B v = softmax(mean(q) kᵀ / √c) v. That is lesson 05's
# global attention: the queries averaged into one row. The notes call the landmarks "a close
# relative": here is exactly how close.
#
# ## Exercise 6: `landmark_means`
#
# Write `landmark_means(x, m, mask=None)`: x (*, L, c), mask None or bool (*, L) with False at
# padding; returns (*, m, c). Number the n real tokens of each sequence 0 … n − 1 (a cumulative sum
# of the mask) and put token number p in segment p · m // n; each landmark is the mean of its
# segment's real tokens. **Padding belongs to no segment**: a padded sequence must get the
# landmarks of the same sequence unpadded.

# %% tags=["check"]
from course.checks.lesson10 import check_landmarks
from exercises.linear import landmark_means

check_landmarks(landmark_means)

# %% [markdown]
# ## Exercise 7: `nystrom_attention`
#
# Write `nystrom_attention(q, k, v, m, mask=None, inverse=iterative_pinv)`: the landmarks of q and
# of k with your `landmark_means` (the same mask), then F, A and B as above (B's scores masked to
# −inf at padded keys), and out = F · inverse(A) · (B v), in q's dtype.

# %% tags=["check"]
from course.checks.lesson10 import check_nystrom
from exercises.linear import nystrom_attention

check_nystrom(nystrom_attention)

# %% [markdown]
# ### One landmark against lesson 05's module
#
# Your lesson-05 `MultiHeadAttention(c_in=16, c=4, N_head=4, is_global=True)` on two sequences of
# 10 tokens, the second with 3 of padding. Take its own projections: q = linear_q(x) split into 4
# heads, and its single key and value head given to every head. Nyström with one landmark and the
# padding mask on those, then the heads merged and linear_o:

# %%
from exercises.mha import MultiHeadAttention, merge_heads, split_heads
from exercises.linear import iterative_pinv

torch.manual_seed(14)
x = torch.randn(2, 10, 16, dtype=torch.float64)
padding = torch.ones(2, 10, dtype=torch.bool)
padding[1, 7:] = False
ungated = MultiHeadAttention(16, 4, 4, is_global=True).double()
gated = MultiHeadAttention(16, 4, 4, is_global=True, gated=True).double()
gated.load_state_dict({**gated.state_dict(), **ungated.state_dict()})
with torch.no_grad():
    gated.linear_g.weight.normal_()  # a gate that differs from token to token
    queries = split_heads(ungated.linear_q(x), 4)                 # (2, 4, 10, 4)
    keys = ungated.linear_k(x).unsqueeze(-3).expand(2, 4, 10, 4)  # one head, shared
    values = ungated.linear_v(x).unsqueeze(-3).expand(2, 4, 10, 4)
    one_landmark = nystrom_attention(queries, keys, values, 1, padding[:, None].expand(2, 4, 10))
    mine = ungated.linear_o(merge_heads(one_landmark))
    print(_("Nyström, m = 1 = lesson 05's global attention (no gate), to 1e-12:"),
          (mine - ungated(x, attention_mask=padding)).abs().max().item() < 1e-12)
    print(_("every real token gets the same row:"), torch.allclose(mine[1, :7], mine[1, :1]))
    print(_("with lesson 05's per-token gate the rows differ: max gap"),
          f"{(mine - gated(x, attention_mask=padding)).abs().max().item():.2f}")
    unmasked = ungated.linear_o(merge_heads(nystrom_attention(queries, keys, values, 1)))
    print(_("landmarks over the padding too (no mask): the real tokens' outputs change by"),
          f"{(unmasked[1, :7] - mine[1, :7]).abs().max().item():.2f}")

# %% [markdown]
# So one landmark **is** lesson 05's global attention, once three things are lined up, and these
# are exactly the differences that remain between the two:
#
# - **shared keys and values**: lesson 05 projects one key head and one value head and lends them
#   to every query head (AlphaFold's choice, which saves parameters); Nyström gives each head its
#   own. Feeding the shared head to every head, as above, makes lesson 05 a special case;
# - **the gate**: lesson 05's module multiplies each token's copy of the shared row by its own
#   σ(linear_g(x)), so the outputs differ per token; Nyström has no gate, and with one landmark
#   every token gets the same row;
# - **the mask**: lesson 05 averages the queries with a masked mean and masks padded keys; the
#   Nyströmformer code averages zero-filled padding into its segment means. Your `landmark_means`
#   counts real tokens only, as lesson 05 does; without the mask the real tokens' outputs change.
#
# (The mean of the projected queries equals the projection of the mean input, as in lesson 05,
# since linear_q is linear.) With more landmarks Nyström keeps m summaries instead of one, and the
# approximation of softmax improves. How fast depends on the data. Two kinds of q, k, v (64 tokens,
# c = 16): independent random tokens, and a slowly varying sequence (a random walk plus noise,
# neighbours alike, the structure segment means rely on). The relative error
# ‖Nyström − softmax‖ / ‖softmax‖, with the paper's iterative inverse and with an exact
# pseudo-inverse:

# %%
from course.lessons.lesson10 import nystrom_errors, smooth_sequence

landmarks = [1, 2, 4, 8, 16, 32, 64]
data = {
    N_("slowly varying"): [smooth_sequence(64, 16, seed) for seed in (1, 2, 3)],
    N_("independent tokens"): [torch.randn(64, 16, generator=torch.Generator().manual_seed(seed),
                                       dtype=torch.float64) for seed in (1, 2, 3)],
}
errors = {(name, inverse_name): nystrom_errors(nystrom_attention, *tensors, landmarks,
                                               inverse=inverse)
          for name, tensors in data.items()
          for inverse_name, inverse in [(N_("iterative"), iterative_pinv),
                                        (N_("exact"), torch.linalg.pinv)]}
print(pad("q, k, v", 19), pad(_("inverse"), 10) + "".join(f"{m:>7}" for m in landmarks))
for (name, inverse_name), row in errors.items():
    print(pad(_(name), 19), pad(_(inverse_name), 10) + "".join(f"{row[m]:>7.3f}" for m in landmarks))

# %%
for name in data:
    row = errors[name, "iterative"]
    print(pad(_(name), 19) + _(": with the iterative inverse, from m = 2 on the error falls at each "
                              "doubling of m: {falls}; m = 64 below m = 1: {below}")
          .format(falls=all(row[b] < row[a] for a, b in zip(landmarks[1:], landmarks[2:])),
                  below=row[64] < row[1]))
print(_("exact pseudo-inverse at m = L: Nyström is softmax (error below 1e-9):"),
      all(errors[name, "exact"][64] < 1e-9 for name in data))

# %% [markdown]
# With the iterative inverse the error falls at every doubling of m from m = 2 on (on the slowly
# varying sequence, two landmarks do worse than one), to a few hundredths on the slowly
# varying sequence well before m = L, and slowly on independent tokens, where segment means of
# unrelated tokens summarise nothing. The exact pseudo-inverse is exact at m = L, where the landmarks are the tokens
# themselves, and erratic before: A is nearly singular when the landmarks resemble each other,
# and its exact inverse amplifies what is left; six steps of the iteration stop short of that.
#
# ## 9. The forms side by side
#
# Left: how many numbers one head holds as L grows, for each form. Right: the weights one query
# gives 48 keys under softmax, linear attention and Nyström.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson10 import routes_explorer

routes_explorer()

# %% [markdown]
# ## 10. What route two costs: recall
#
# Memory is what route two saves; what does it give up? A small associative-recall task measures
# it (multi-query associative recall, after Arora et al. 2023, "Zoology"): a sequence lists N
# key-value pairs, k₁ v₁ k₂ v₂ … k_N v_N (256 possible keys, 64 possible values), then asks for
# every key again in a random order, and at each question the model must name the value that
# followed that key. One attention layer, the same model but for the mixing
# (`course/lessons/lesson10_recall.py`): each token's embedding plus an embedding of the token
# before it (so a value's key can be matched), 4 heads of 16 channels, causal. Four kinds of
# attention: softmax; a sliding window of 16 keys; linear attention (your quadratic form); and a
# decayed state (your decay matrix, a decay per head and token computed from the token, and a
# LayerNorm on each head's output instead of a normaliser). Every run trains for the same number
# of steps on the same batches (N drawn between 4 and 48 for each batch), one thread, on the CPU.
# The runs ship as data (`data/lesson10/recall.json`, trained by `scripts/train_lesson10.py`); the
# lesson rebuilds the seed-0 models from their shipped weights and measures them again:

# %%
from course.lessons.lesson10 import load_recall, recall_table, recheck_recall

shipped = load_recall()
recall = recall_table(shipped)
kinds = [kind for kind in (N_("softmax"), N_("window"), N_("linear"), N_("decayed")) if kind in recall]
rechecked = recheck_recall(shipped)
print(_("runs shipped:"), {kind: recall[kind]["seeds"] for kind in kinds},
      _("| steps per run:"), shipped["runs"][next(iter(shipped["runs"]))]["config"]["steps"])
print(_("the seed-0 models measured again on load (N = 48, 128 validation sequences) "
        "give the shipped accuracy:"), {kind: rechecked[kind][0] == rechecked[kind][1] for kind in kinds})

# %%
pairs = shipped["task"]["pairs_eval"]
print(pad(_("attention"), 9), pad(_("numbers kept per sequence at N = 48"), 36, ">") +
      "".join(f"{'N = ' + str(n):>9}" for n in pairs))
for kind in kinds:
    entry = recall[kind]
    print(pad(_(kind), 9) + f" {entry['state'][str(pairs[-1])]:>36,}" +
          "".join(f"{entry['accuracy'][str(n)]:>9.3f}" for n in pairs))
print(_("(accuracy over the questions of 512 validation sequences, mean of the seeds; "
        "chance is 1/64 = 0.016)"))

# %% tags=["nbval-ignore-output"]
print(_("CPU-seconds per run (one thread, this course's machine):"),
      {kind: round(recall[kind]["cpu_seconds"]) for kind in kinds})

# %% tags=["nbval-ignore-output"]
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
for kind in kinds:
    entry = recall[kind]
    left.plot(pairs, [entry["accuracy"][str(n)] for n in pairs], "o-", label=_(kind))
    left.fill_between(pairs, [entry["lowest"][str(n)] for n in pairs],
                      [entry["highest"][str(n)] for n in pairs], alpha=0.15)
    right.semilogx([entry["state"][str(n)] for n in pairs],
                   [entry["accuracy"][str(n)] for n in pairs], "o-", label=_(kind))
left.set(xlabel=_("key-value pairs N (L = 3N)"), ylabel=_("recall accuracy"),
         title=_("recall against the number of pairs (band: lowest and highest seed)"))
right.set(xlabel=_("numbers kept per sequence (one layer)"), ylabel=_("recall accuracy"),
          title=_("recall against what the layer keeps"))
for ax in (left, right):
    ax.axhline(1 / 64, color="grey", ls=":", lw=1)
    ax.legend()
plt.show()

# %%
def best(n):
    return max(kinds, key=lambda kind: recall[kind]["accuracy"][str(n)])


print(_("highest accuracy at each N:"), {n: best(n) for n in pairs})
print(_("softmax above linear at every N:"), all(recall["softmax"]["accuracy"][str(n)] >
                                              recall["linear"]["accuracy"][str(n)] for n in pairs))
print(_("linear attention's accuracy falls at every step of N:"),
      all(recall["linear"]["accuracy"][str(a)] > recall["linear"]["accuracy"][str(b)]
          for a, b in zip(pairs, pairs[1:])))
print(_("decayed minus linear, per N:"), {n: round(recall["decayed"]["accuracy"][str(n)] -
                                                recall["linear"]["accuracy"][str(n)], 3)
                                       for n in pairs})

# %% [markdown]
# What the figure shows on this machine, and no more. After the same number of steps, softmax
# attention recalls almost every pair at every N; it keeps every key and value it has read
# (2 · L numbers per channel, the first column of the table). Linear attention keeps a state of
# fixed size, 4 heads of 16 × 16 plus a normaliser of 16, and its accuracy falls at every step of
# N: the more pairs there are to store, the more they blur in a state that cannot grow. The decayed
# state keeps about as many numbers (no normaliser) and recalls no better than plain linear
# attention (the differences printed above): a decay helps a model forget, and this task asks it
# to forget nothing. Both vary widely from seed to seed (the bands of the figure): four seeds give
# the direction, not a precise figure. The sliding window keeps the last 16 tokens; once the asked key lies further back it has nothing to
# match, and even at N = 4, where the whole sequence fits in its window and it computes exactly
# softmax attention, it is far below softmax: trained on batches whose questions lie mostly beyond
# its window, it had learned little in the same steps. Arora et al. 2023 ("Zoology") found the
# same kind of gap in real language models, where on associative recall a 70M-parameter attention
# model outperformed a 1.4B-parameter gated-convolution model, and built the multi-query
# recall task (MQAR) to study it. The task here is a simpler MQAR: the questions follow the pairs
# at once, with no filler tokens between them, values may repeat, and the vocabulary has 320
# tokens where Zoology's generator defaults to 8,192. One layer, four heads, under a minute of CPU
# per run (printed above): these are toy models, and longer training or a wider state would move
# every number. The comparison is what it
# is: the same steps, the same data, only the mixing changed.
#
# ## 11. The two routes side by side
#
# Lesson 09's figures come from its own executed notebook (`lesson09_figures` reads its printed
# outputs), lesson 10's from this one.

# %% tags=["nbval-ignore-output"]
from course.lessons.lesson10 import lesson09_figures

route_one = lesson09_figures()
naive_growth, tiled_growth = route_one["naive", "training"], route_one["tiled", "training"]
print(_("lesson 09, training, at each doubling of L: naive attention's peak x {naive_cmp} "
        "{naive_bound:g}: {naive_holds}, what it keeps x {naive_kept:.2f}; tiled: peak x "
        "{tiled_cmp} {tiled_bound:g}: {tiled_holds}, kept x {tiled_kept:.2f}")
      .format(naive_cmp=naive_growth[0], naive_bound=naive_growth[1], naive_holds=naive_growth[2],
              naive_kept=naive_growth[3], tiled_cmp=tiled_growth[0], tiled_bound=tiled_growth[1],
              tiled_holds=tiled_growth[2], tiled_kept=tiled_growth[3]))
print(_("lesson 09, column attention at S = 5,120, one layer kept for training: naive {naive:.0f} "
        "GB, tiled {tiled:.3f} GB").format(naive=route_one['kept GB']['naive'],
                                          tiled=route_one['kept GB']['tiled']))
held = {name: [memory[name, L][0].peak - output_bytes[L] for L in lengths]
        for name in memory_forms}
growth = {name: held[name][2] / held[name][1] for name in held}
print(_("lesson 10, inference, beyond the output, when L doubles (32 -> 64): recurrence x "
        "{recurrence:.2f}, chunked x {chunked:.2f}, cumsum x {cumsum:.2f}, quadratic x "
        "{quadratic:.2f}").format(**growth))

# %% [markdown]
# | | exact? | memory in L | compute in L | what breaks | measured here |
# |---|---|---|---|---|---|
# | softmax, naive (lessons 02, 05) | yes | L² | L² | memory: the L × L scores | lesson 09: the peak more than ×3.5 and what training keeps ×3.88 when L doubles; 252 GB kept per layer at S = 5,120 |
# | **route one**: tiles, online softmax (lesson 09) | yes | L | L² | time: the compute stays quadratic | lesson 09: the peak less than ×2 and what training keeps ×2.00 when L doubles; 0.442 GB kept per layer at S = 5,120 |
# | route two: sliding window (lesson 09) | no: w keys | L with lesson 09's tiles (L · w if the band's scores are stored) | L · w | anything farther than w | section 10: recall near chance once the pair is farther back |
# | route two: linear attention, recurrence or chunks (this lesson) | no: a kernel, not softmax | constant state (+ output), in inference | L | recall: a state of d × e numbers | section 4: flat beyond the output; section 10: recall falls with N |
# | route two: decayed state, GLA / Mamba-2 (this lesson) | no | constant state, in inference | L | recall: a state of d × e numbers, as for linear attention | section 10 |
# | route two: Nyström, m landmarks (this lesson) | no: F A⁺ B | L · m | L · m | accuracy on tokens unlike their segment | section 8: error against m |
# | route two: global attention (lesson 05) | no: one row | L | L | every token gets the same row (before the gate) | section 8: Nyström with m = 1 |
#
# (The figures of lesson 09 are the ones it printed above; those of this lesson are printed in
# the sections named.)
#
# ### The notes' AlphaFold story, with the course's figures
#
# The source notes say that AlphaFold2, in 2021, before FlashAttention, chose route two for
# training, and that OpenFold today also runs route one. With the course's own numbers:
#
# - AlphaFold2's extra MSA stack attends along the columns of a deep MSA: 1,024 sequences by
#   default, 5,120 in some of its released models (lesson 05). Plain column attention keeps its
#   weights for the backward pass: lesson 09 printed 252 GB per layer at S = 5,120 (R = 300
#   columns, 8 heads), and the stack has 4 blocks (checkpointing each block, as OpenFold's
#   training does, keeps one block's layers at a time, and one layer is already that much).
#   AlphaFold2 uses global column attention there
#   (lesson 05, Algorithm 19): one averaged query per column, a route-two layer. Its main stack,
#   48 blocks over at most 512 sequences, keeps exact column attention.
# - FlashAttention, route one, was published in 2022 (Dao et al.), after AlphaFold2. Lesson 09
#   printed what tiles keep for the same layer in training: 0.442 GB, the output and one number
#   per query. Route one answers the memory problem without changing the model; route two
#   changes the model, which is then trained with that change.
# - OpenFold, the open reimplementation, keeps AlphaFold2's model, global attention included, and
#   adds route one for the exact layers: its low-memory attention (lesson 09's `_lma`, after Rabe
#   and Staats), which it turns off for training, and, on GPUs, optional kernels (DeepSpeed's
#   Evoformer attention, which training can use, and FlashAttention).
#
# ## Self-check
#
# 1. Why can linear attention sum over the keys before it sees a query, and softmax attention
#    cannot?
# 2. The recurrence of exercise 2 holds d × e + d numbers whatever L is. What does a softmax model
#    keep to generate the next token, and how does it grow?
# 3. In the chunked form, what goes wrong if the state is updated with the chunk's own keys before
#    the chunk's output is computed?
# 4. In float16 at d = 64, your normaliser overflowed between L = 512 and 1,024. Which two fixes
#    does the lesson name, and what does each cost?
# 5. Why is exp(cₜ − cₛ) safe where Pₜ / Pₛ is not? And why must the upper triangle be set to −inf
#    before the exp rather than to 0 after it?
# 6. Lesson 08's gate and a Mamba-2 decay are both numbers in (0, 1). What does each
#    multiply, and what can each do that the other cannot?
# 7. Which three differences remain between Nyström attention with one landmark and lesson 05's
#    global attention module?
# 8. In section 10, which kind of attention keeps the most numbers per sequence, and which recalls
#    best? Is that a coincidence?
#
# <details><summary>Answer</summary>
#
# 1. φ(qᵢ) · φ(kⱼ) is a product of a function of qᵢ and a function of kⱼ, so Σⱼ (φ(qᵢ) · φ(kⱼ)) vⱼ
#    = φ(qᵢ)ᵀ (Σⱼ φ(kⱼ) vⱼᵀ): the sum over keys is taken once. exp(qᵢ · kⱼ) does not split into
#    such a product (with finitely many features), so every pair is computed.
# 2. Every key and value read so far (the KV cache), 2 · L · d numbers per head: linear in L,
#    where the recurrence's state is constant.
# 3. The chunk's own keys are counted twice: once through the state and once through the masked
#    quadratic term, and a query also sees the later keys of its chunk through the state.
# 4. Keep the state and the normaliser in float32 (twice the bytes of a float16 state; the output
#    is cast back), or replace the normaliser by a norm of the output (GLA's RMSNorm per head):
#    then the weights no longer sum to one, and the layer relies on the norm's scale.
# 5. cₜ − cₛ is a difference of two finite sums of logs, as small as the decay it stands for;
#    Pₜ and Pₛ underflow to 0 (or stop among float32's smallest numbers) and their ratio is 0 / 0
#    or 1.0. Above the diagonal cₜ − cₛ is positive and its exp may be inf: inf · 0 is NaN, and even a
#    torch.where that hides it in the forward pass sends NaN into the gradient; exp(−inf) = 0 has
#    neither problem.
# 6. The output gate multiplies what attention reads out, per channel; it can silence a head's
#    output but cannot change what the layer remembers. The decay multiplies the state, which every
#    later token reads; it can forget the past, but cannot amplify the current output.
# 7. Shared keys and values (one head lent to every query head in lesson 05), the per-token gate of
#    lesson 05's module, and the mask (lesson 05's masked mean; the Nyströmformer code averages
#    zero-filled padding into its landmarks).
# 8. Softmax keeps the most (every key and value, growing with L) and recalls best. Not a
#    coincidence: recall of N arbitrary pairs needs somewhere to store them. A fixed state of
#    4 × (16 × 16 + 16) numbers holds every pair in one sum of outer products, and keys of 16
#    channels per head, all positive after φ, cannot be kept apart in it: the pairs interfere from
#    the first ones on (the accuracy already falls between N = 4 and N = 8), and more as N grows.
#
# </details>
#
# ## Summary
#
# - Linear attention replaces exp(q · k) by φ(q) · φ(k), φ = elu + 1; the sum over keys is taken
#   once, and the causal form is a recurrent network with a state S (d × e) and z (d).
# - Three forms, one function: the quadratic masked form, the recurrence, the chunked form (an
#   exclusive state between chunks, the masked quadratic form inside): equal to 1e-12 in float64,
#   gradients included. The recurrence and the chunked form hold a constant state beyond the
#   output; the cumsum form grows with L, the quadratic form with L².
# - Two traps: a float16 normaliser overflows (between L = 512 and 1,024 at d = 64): accumulate in
#   float32, or replace the normaliser by a norm; a ratio of cumulative products underflows: sum
#   decays in log space and mask before the exp.
# - A decayed state hₜ = aₜ hₜ₋₁ + kₜ vₜᵀ (Mamba-2; GLA decays each key channel apart) has a
#   quadratic form masked by a decay
#   matrix; its decay gates the state, where lesson 06's and lesson 08's gates scale the output.
# - Nyström approximates softmax through m landmark means; one landmark is lesson 05's global
#   attention, less its shared keys and values, its gate and its masked mean.
# - On recall, with the same training, softmax, which keeps every key and value, recalls almost
#   every pair; the forms with a fixed state recall less as the pairs to store grow. Route two
#   trades memory for what the model can store; route one (lesson 09) keeps the model exact, and
#   its compute quadratic in L.
