# %% [markdown]
# # Lesson 07: the Transformer around attention
#
# **Prerequisites:** lessons 02 and 03. This lesson builds on your own `scaled_dot_product_attention`
# and `causal_mask` (`exercises/attention.py`) and your `MultiHeadAttention`, `split_heads` and
# `merge_heads` (`exercises/mha.py`).
#
# Attention alone is not a Transformer. Around it sit the pieces this lesson adds, from chapter 4
# of seed 003 (the Chinese Transformer notes this course started from): positions (attention on
# its own cannot see word order), a norm and a residual path (without them a deep stack does not
# train), a feed-forward network, and the decoder's two kinds of attention (causal self-attention
# and cross-attention to an encoder).
# Lesson 08's tiny language model is a stack of the decoder block you write here (same structure,
# same module names), with the paper's gate added.
#
# **In this lesson you will**
# - time an RNN's L sequential steps against one attention call, and count why the gap changes
#   with L;
# - show that attention without positions is permutation-equivariant, and what that means for
#   "我爱吃苹果" and "苹果吃爱我";
# - write the sinusoidal positional encoding and measure that PE(pos + k) is a fixed rotation of
#   PE(pos);
# - write rotary position embedding (RoPE) and measure that its scores depend on i − j only;
# - write RMSNorm, and watch activations and gradients through a deep stack with and without
#   residuals and norms;
# - assemble a pre-norm decoder block and cross-attention from your own modules, and draw the block;
# - see that an embedding table learns only the rows a batch used.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %%
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from course.columns import pad
from course.i18n import _  # figure titles and labels in the notebook's language
from exercises.attention import causal_mask, scaled_dot_product_attention
from exercises.mha import MultiHeadAttention, merge_heads, split_heads

torch.set_printoptions(precision=4, sci_mode=False)


def below(value: float, limit: float = 1e-12) -> str:
    """Differences at rounding level differ between machines: print only that they are tiny."""
    return f"< {limit:g}" if value < limit else f"{value:.3g}"


# %% [markdown]
# ## 1. Why attention replaced the RNN
#
# Before the Transformer, sequences went through recurrent networks. An RNN reads one token per
# step and carries a state: h_t = tanh(W x_t + U h_{t−1} + b). Step t needs h_{t−1}, so a sequence
# of L tokens takes **L steps, one after the other**, and what token 1 said reaches token 100 only
# through 99 updates of h. Self-attention computes every position at once from the whole sequence:
# **one step**, and any two positions are one weighted sum apart (seed 003, §1.2–1.3 and §7.2).
#
# The price is work. Counting multiply-adds for width d = 64 (one head; `operation_counts` in
# `course/transformer_demos.py`):

# %%
from course.transformer_demos import operation_counts

headers = [_("L"), _("RNN steps"), _("RNN mult-adds"), _("attn steps"), _("attn mult-adds"), _("score entries")]
print(" ".join(pad(header, width, ">") for header, width in zip(headers, (6, 10, 14, 11, 15, 14))))
for L in (16, 64, 256, 1024, 4096):
    counts = operation_counts(L, d=64)
    print(f"{L:>6} {counts['rnn sequential steps']:>10,} {counts['rnn multiply-adds']:>14,} "
          f"{counts['attention sequential steps']:>11} {counts['attention multiply-adds']:>15,} "
          f"{counts['score entries']:>14,}")

# %% [markdown]
# The RNN's work grows like L, attention's like L² (the L × L scores). Attention does *more*
# arithmetic than the RNN at every length in the table (its four projections alone cost twice the
# RNN's two), and the gap widens with L. Where it wins, it wins because its arithmetic is one big
# parallel call instead of L small dependent ones. So how much faster is it in practice?
#
# Seed 003 says "RNN about 1 s, Transformer about 0.1 s for 1000 tokens; GPU utilisation 10–30 % vs
# 80–95 %". Those figures come with no source, hardware or model size, so measure instead. Below, an `nn.RNNCell` stepped through the sequence in a Python loop, against one call of
# your `MultiHeadAttention` (4 heads of width 16) on the same x (1, L, 64), on one CPU thread. The
# timings depend on the machine and on what else runs on it, so these outputs are not compared by
# the tests.

# %% tags=["nbval-ignore-output"]
from tqdm.auto import tqdm

from course.transformer_demos import rnn_vs_attention, timing_verdict

threads = torch.get_num_threads()
torch.set_num_threads(1)  # one thread: steadier timings when other programs share the cores
torch.manual_seed(0)
attention_module = MultiHeadAttention(64, 16, 4)
lengths = [16, 32, 64, 128, 256, 512, 768]
seconds = rnn_vs_attention(attention_module, lengths, d=64,
                           progress=lambda ls: tqdm(ls, desc="timing RNN vs attention"))
torch.set_num_threads(threads)
for L, rnn_s, attention_s in zip(lengths, seconds["rnn"], seconds["attention"]):
    print(_("L = {L:>5}: RNN loop {rnn:8.2f} ms   attention {attention:8.2f} ms   "
            "RNN / attention = {ratio:6.2f}").format(L=L, rnn=rnn_s * 1e3, attention=attention_s * 1e3,
                                                     ratio=rnn_s / attention_s))
for line in timing_verdict(lengths, seconds["rnn"], seconds["attention"]):
    print(line)

# %% tags=["nbval-ignore-output"]
fig, (ax_time, ax_ratio) = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
ax_time.loglog(lengths, seconds["rnn"], "o-", label=_("RNN: L sequential steps"))
ax_time.loglog(lengths, seconds["attention"], "s-", label=_("attention: one call"))
ax_time.set(xlabel=_("sequence length L"), ylabel=_("seconds (best of 3)"), title=_("time per sequence"))
ax_time.legend()
ax_ratio.semilogx(lengths, [r / a for r, a in zip(seconds["rnn"], seconds["attention"])], "o-",
                  color="tab:purple")
ax_ratio.axhline(1, color="grey", lw=0.8, ls="--")
ax_ratio.set(xlabel=_("sequence length L"), ylabel=_("RNN time / attention time"),
             title=_("how many times faster attention is"))
for ax in (ax_time, ax_ratio):
    ax.set_xticks(lengths, [str(L) for L in lengths])
    ax.minorticks_off()
plt.show()

# %% [markdown]
# Read the ratio off your own run: the last two lines say where it was largest, what it is at the
# longest L (and who is faster there), and how fast each time grows with L. Two costs pull it in
# opposite directions. The RNN pays the fixed cost of a step (a Python call, small matrix
# products) L times, attention pays it once; attention's L² scores grow with L² against the RNN's
# L steps, and cost more still once they outgrow the CPU's caches (lesson 05). So the ratio need
# not stay where it was at short lengths. On a GPU the balance tips further towards attention: its
# L² work is spread over thousands of cores in one kernel, while each RNN step is a tiny kernel
# that leaves most of the card idle, and the steps cannot overlap. That is the real content of the
# seed's "10–30 % vs 80–95 %"; the numbers themselves depend on the card, the sizes and the code.
# The L² cost is the one that stays: lesson 05 measured it in time and memory.
#
# ## 2. Attention without positions cannot see word order
#
# Take the five characters of "我爱吃苹果" ("I love eating apples") as tokens, give each an
# embedding, and run your `MultiHeadAttention`. Then do the same for "苹果吃爱我" ("apples eat love
# me"): the same tokens, in the order 3, 4, 2, 1, 0 of the first sentence.

# %%
sentence = list("我爱吃苹果")
vocabulary = {char: i for i, char in enumerate(sorted(set("我爱吃苹果今天气很好")))}
order = [3, 4, 2, 1, 0]
shuffled = [sentence[i] for i in order]
print("".join(sentence), "->", "".join(shuffled))

torch.manual_seed(1)
embedding = nn.Embedding(len(vocabulary), 8).double()
attention = MultiHeadAttention(8, 4, 2).double()
with torch.no_grad():
    x_first = embedding(torch.tensor([vocabulary[c] for c in sentence]))  # (5, 8)
    x_second = embedding(torch.tensor([vocabulary[c] for c in shuffled]))
    out_first, out_second = attention(x_first), attention(x_second)
print(_("the inputs are a permutation:    x_second == x_first[order]:"),
      torch.equal(x_second, x_first[order]))
print(_("so are the outputs: max |out_second - out_first[order]| ="),
      below((out_second - out_first[order]).abs().max().item()))
print(_("output of 苹 in each sentence:"), out_first[3, :4], out_second[0, :4], sep="\n  ")
print(_("mean over tokens, max difference:"), below((out_first.mean(0) - out_second.mean(0)).abs().max().item()))

# %% [markdown]
# This is what seed 003's "对Attention来说，这两个句子是一样的" means, said precisely: self-attention
# without positions is **permutation-equivariant**. Shuffle the tokens and the outputs shuffle the
# same way: 苹 gets exactly the same output vector in both sentences, and so does every other
# character. The two sentences are not "the same" (their outputs come in different orders), but
# each token's output is the same *set* of vectors, so anything that does not look at the order,
# such as the mean over tokens above, cannot tell them apart. Who eats whom is lost.
#
# A causal mask breaks the symmetry on its own: position 0 sees only itself, position 4 sees all
# five, so where a token sits changes what it sees. (Decoder-only language models trained without
# any positional encoding still learn positions this way: Haviv et al. 2022.) With your lesson-02
# function, q = k = v = x for short:

# %%
mask = causal_mask(5)
with torch.no_grad():
    causal_first = scaled_dot_product_attention(x_first, x_first, x_first, mask=mask)
    causal_second = scaled_dot_product_attention(x_second, x_second, x_second, mask=mask)
print(_("causal: max |out_second - out_first[order]| ="),
      below((causal_second - causal_first[order]).abs().max().item()))

# %% [markdown]
# ## 3. Sinusoidal positional encoding
#
# The original Transformer (Vaswani et al. 2017) adds a fixed vector PE(pos) to the embedding of
# the token at position pos, once, before the first layer:
#
# PE[pos, 2i] = sin(pos / base^(2i/d_model)),   PE[pos, 2i+1] = cos(pos / base^(2i/d_model)),
# base = 10000.
#
# Channels 2i and 2i+1 form a pair with one frequency ω_i = base^(−2i/d_model): pair 0 turns by one
# radian per position, the last pair so slowly that it barely moves over thousands of positions.
#
# ### Exercise 1: `sinusoidal_encoding`
#
# In `exercises/transformer.py`, write `sinusoidal_encoding(L, d_model, base=10000.0,
# dtype=torch.float64)`, returning (L, d_model). Build the angles as an (L, d_model/2) table, then
# fill the even channels with sin and the odd ones with cos (`pe[:, 0::2] = ...`). The check tests
# position 0 alone (it must be [0, 1, 0, 1, ...]), one pair, the frequencies, `base`, `dtype`, and
# the property below.

# %% tags=["check"]
from course.checks.lesson07 import check_sinusoidal_encoding
from exercises.transformer import sinusoidal_encoding

check_sinusoidal_encoding(sinusoidal_encoding)

# %%
pe = sinusoidal_encoding(64, 32)
fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
image = ax.imshow(pe.T.numpy(), cmap="coolwarm", aspect="auto", vmin=-1, vmax=1)
fig.colorbar(image, ax=ax)
ax.set(xlabel=_("position pos"), ylabel=_("channel"), title=_("sinusoidal encoding, d_model = 32"))
plt.show()

# %% [markdown]
# ### PE(pos + k) is a fixed rotation of PE(pos)
#
# Seed 003 lists "相对位置" among the reasons for sin and cos. Here is the precise statement: for
# every offset k there is one matrix R_k, the same for every pos, with PE(pos + k) = R_k PE(pos).
# Each pair is a point (sin a, cos a) on a circle, and moving k positions turns it by the angle
# k ω_i whatever a is. So R_k is block-diagonal, one 2 × 2 rotation per pair, and depends on k
# only.
#
# Measured twice. First without the formula: fit a matrix by least squares from the pairs
# (PE(pos), PE(pos + 3)) on positions 0–30, again on positions 30–60, and compare both with the
# predicted block rotation. (With base 10000 and a small d_model the slowest pairs barely move
# over 60 positions, so the data do not pin down their blocks; this fit uses base 10 and
# d_model = 8, where every pair turns visibly.) Then with the real base: the predicted R_3 maps
# PE(pos) to PE(pos + 3) at every position from 0 to 996.

# %%
from course.transformer_demos import offset_map, predicted_offset_map

k = 3
pe_fast = sinusoidal_encoding(64, 8, base=10.0)
R_early, residual_early = offset_map(pe_fast[:31], k)
R_late, residual_late = offset_map(pe_fast[30:61], k)
print(_("base 10, d_model 8: least-squares fit on positions 0-30 and on 30-60"))
print(_("  residual of each fit: {early} and {late}").format(early=below(residual_early, 1e-10),
                                                              late=below(residual_late, 1e-10)))
print(_("  the two fitted matrices differ by"), below((R_early - R_late).abs().max().item(), 1e-10))
print(_("  fitted against the predicted block rotation:"),
      below((R_early - predicted_offset_map(8, k, base=10.0)).abs().max().item(), 1e-10))
print(_("  R_3, pairs 0 and 1 (the rest of these rows is 0):\n"),
      R_early[:4, :4].round(decimals=4) + 0.0)  # + 0.0 turns a rounded -0.0 into 0.0
pe = sinusoidal_encoding(1000, 16)
R_3 = predicted_offset_map(16, k)
print(_("base 10000, d_model 16: max |PE(pos + 3) - R_3 PE(pos)| over pos 0..996:"),
      below((pe[k:] - pe[:-k] @ R_3.T).abs().max().item()))

# %% [markdown]
# So a layer can read "the token 3 positions back" with a linear map that does not depend on
# where it is, which is what makes offsets learnable. Two things the seed overstates.
# "周期性：可以处理任意长度的序列": the formula gives a vector for any pos, but models trained on
# short sequences do poorly on much longer ones with it (Press et al. 2022, the ALiBi paper,
# measured this). And adding positions once at the input is only one way: RoPE, next, puts them
# inside every attention layer.
#
# With positions added, the two sentences of section 2 are no longer a permutation of each other:

# %%
with torch.no_grad():
    positioned_first = attention(x_first + sinusoidal_encoding(5, 8))
    positioned_second = attention(x_second + sinusoidal_encoding(5, 8))
print(_("with PE added: max |out_second - out_first[order]| ="),
      below((positioned_second - positioned_first[order]).abs().max().item()))

# %% [markdown]
# ## 4. Rotary position embedding (RoPE)
#
# RoPE (Su et al. 2021) is the position scheme of Llama, Qwen3 (the gated-attention paper's model)
# and most current language models. Nothing is added to the embeddings. Instead, inside every
# attention layer, q and k are rotated by an angle proportional to their position, pair of
# channels by pair of channels, just before the scores. A rotation of q by angle a_i and of k by a_j
# changes their dot product to one that depends on a_i − a_j only: the score sees the **relative**
# position i − j, and v is left alone.
#
# Which channels form a pair is a convention. The RoPE paper pairs neighbours (2i, 2i+1). Hugging
# Face's Llama and Qwen3 code, and this course, use **rotate-half**: channel i pairs with channel
# i + c/2, so for a head of width c
#
# ```python
# angle = pos * base ** (-2 * i / c)            # i = 0 .. c/2 - 1, one angle per pair
# angle = cat([angle, angle], -1)               # channels i and i + c/2 share it
# rotate_half(x) = cat([-x[..., c/2:], x[..., :c/2]], -1)
# out = x * cos(angle) + rotate_half(x) * sin(angle)
# ```
#
# Both conventions are correct; they differ by a fixed permutation of the channels, but a model
# trained with one gives wrong results with the other. (Lesson 08's checkpoints use rotate-half.)
#
# ### Exercise 2: `apply_rope`
#
# Write `apply_rope(x, positions=None, base=10000.0)` for x: (*, L, c), positions along axis −2
# (default 0 .. L−1). Return a new tensor of x's dtype; do not modify x. The check tests position 0
# (no change), one pair, that rows keep their length, the pairing, the frequencies, given and
# fractional positions, batch and head axes, float32, and the relative property below.

# %% tags=["check"]
from course.checks.lesson07 import check_rope
from exercises.transformer import apply_rope

check_rope(apply_rope)

# %% [markdown]
# ### Scores depend on i − j only
#
# Put one query vector at position i and one key vector at position j, and compute their score;
# then shift both by the same s. With RoPE the score does not move. With the sinusoidal encoding
# added to the vectors instead, it does.

# %%
generator = torch.Generator().manual_seed(4)
q_vec, k_vec = torch.randn(2, 1, 16, generator=generator, dtype=torch.float64)
pe_table = sinusoidal_encoding(200, 16)


def rope_score(i, j):
    return (apply_rope(q_vec, torch.tensor([i])) * apply_rope(k_vec, torch.tensor([j]))).sum().item()


def added_pe_score(i, j):
    return ((q_vec + pe_table[i]) * (k_vec + pe_table[j])).sum().item()


for name, score in [("RoPE", rope_score), (_("added PE"), added_pe_score)]:
    largest = max(abs(score(i + s, j + s) - score(i, j))
                  for i, j in [(5, 2), (2, 5), (9, 9), (30, 1)] for s in (1, 17, 150))
    print(pad(name, 8, ">") + _(": score(5, 2) = {score:+.4f}; largest change when both positions shift: "
                                "{change}").format(score=score(5, 2), change=below(largest, 1e-10)))

# %% [markdown]
# ### Widget: how similar do two positions look?
#
# The map shows, for positions i and j from 0 to 63, the similarity of the sinusoidal encodings
# PE(i)·PE(j) (scaled to 1 on the diagonal) or, under RoPE, the score of one vector used as the
# query at i and as the key at j. Move the base and the dimension. Every diagonal holds one
# value (a function of i − j); a small base makes every pair turn fast, so far-apart positions can
# look as similar as neighbours; a large base and a large d give a peak at i = j that falls off
# with distance.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson07 import similarity_explorer

similarity_explorer()

# %% [markdown]
# ## 5. RMSNorm, beside LayerNorm
#
# A norm rescales each token's vector so that its size stays in a fixed range, whatever happened
# to it before. Seed 003 writes LayerNorm as γ (x − μ)/σ + β, which is Ba et al.'s (2016)
# equation: it has no ε. PyTorch's `nn.LayerNorm`, like most implementations, divides by
# √(σ² + ε), so that a constant vector does not divide by zero. **RMSNorm**
# (Zhang & Sennrich 2019; Llama, Qwen3) drops the mean and the bias:
#
# RMSNorm(x) = x / √(mean(x²) + ε) · weight,   weight: (d_model,), initialised to ones.
#
# It is cheaper. Its authors measure quality comparable to LayerNorm's with 7–64 % less running
# time, depending on the model. They *hypothesise* that the re-scaling, not the re-centring, is
# what makes LayerNorm work; their experiments are consistent with that, but do not prove it.
#
# ### Exercise 3: `RMSNorm`
#
# Write `RMSNorm(d_model, eps=1e-6)`: one parameter `weight` of ones, and `forward(x)` over the
# last axis (keep it with `keepdim=True` so it broadcasts), ε inside the square root.

# %% tags=["check"]
from course.checks.lesson07 import check_rms_norm
from exercises.transformer import RMSNorm

check_rms_norm(RMSNorm)

# %% [markdown]
# Your RMSNorm against PyTorch's `nn.RMSNorm`, and against `nn.LayerNorm`: on rows whose mean is
# already 0 the two norms agree (same ε, no affine part); on rows with a mean they do not, and
# only LayerNorm removes it.

# %%
rows = torch.randn(4, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64) + 2.0
centred = rows - rows.mean(dim=-1, keepdim=True)
ours = RMSNorm(8, eps=1e-5).double()
torch_rms = nn.RMSNorm(8, eps=1e-5).double()
layer_norm = nn.LayerNorm(8, eps=1e-5, elementwise_affine=False).double()
with torch.no_grad():
    print(_("yours vs nn.RMSNorm:            max difference"), below((ours(rows) - torch_rms(rows)).abs().max().item()))
    print(_("RMSNorm vs LayerNorm, mean 0:   max difference"), below((ours(centred) - layer_norm(centred)).abs().max().item()))
    print(_("RMSNorm vs LayerNorm, mean 2:   max difference"), below((ours(rows) - layer_norm(rows)).abs().max().item()))
    print(_("row means after RMSNorm:  "), ours(rows).mean(-1))
    print(_("row means after LayerNorm: all below 1e-12:"),
          bool(layer_norm(rows).mean(-1).abs().max() < 1e-12))

# %% [markdown]
# ## 6. Residuals and norms in a deep stack
#
# Seed 003's "残差连接: 缓解梯度消失" and "Layer Norm: 稳定训练", measured. Take 32 feed-forward
# layers f (Linear 64 → 256, GELU, Linear 256 → 64, weights of std 1/√fan_in) and wire them four
# ways:
#
# | wiring | one layer | |
# |---|---|---|
# | plain | x ← f(x) | no residual, no norm |
# | residual | x ← x + f(x) | no norm |
# | pre-norm residual | x ← x + f(RMSNorm(x)) | GPT-2 onwards, Llama, Qwen3, your block |
# | post-norm residual | x ← RMSNorm(x + f(x)) | the 2017 paper's "Add & Norm" |
#
# and follow the size (root mean square) of x after each layer, and the size of the gradient that
# reaches each layer's first weight matrix from a fixed loss on the output.

# %%
from course.transformer_demos import VARIANTS, deep_stack

stacks = {variant: deep_stack(variant, depth=32) for variant in VARIANTS}
print(pad(_("wiring"), 20), pad(_("rms after 32 layers"), 20, ">"), pad(_("gradient at layer 1"), 20, ">"),
      pad(_("at layer 32"), 12, ">"))
for variant, result in stacks.items():
    print(f"{variant:<20} {result['activation rms'][-1]:>20.3g} {result['gradient norm'][0]:>20.3g} "
          f"{result['gradient norm'][-1]:>12.3g}")

# %%
fig, (ax_rms, ax_grad) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
for variant, result in stacks.items():
    ax_rms.semilogy(result["activation rms"], label=variant)
    ax_grad.semilogy(range(1, 33), result["gradient norm"], label=variant)
ax_rms.set(xlabel=_("layer"), ylabel=_("rms of x"), title=_("activation scale"))
ax_grad.set(xlabel=_("layer"), ylabel="‖∂loss/∂W‖", title=_("gradient reaching each layer"))
ax_rms.legend(fontsize=8)
plt.show()

# %% [markdown]
# What the numbers say:
#
# - **plain**: each layer shrinks x (the GELU halves small inputs), so x and every gradient fade
#   towards zero: after 32 layers nothing is left to learn from. A deep stack without residuals is
#   hard to train at all.
# - **residual**: x + f(x) keeps a direct path, but adds f(x) on top of x at every layer, so the
#   activations and gradients grow layer after layer.
# - **pre-norm**: f sees a normalised input, so each layer adds a bounded amount; the residual
#   stream grows slowly (like √depth), and the gradient reaches layer 1 intact through the
#   additions.
# - **post-norm**: the norm after each addition pins the scale to 1. It is stable here, but in a
#   real Transformer post-norm needs a learning-rate warm-up to train (Xiong et al. 2020), which
#   is why current models put the norm inside the branch: pre-norm.
#
# ## 7. The feed-forward network, and why attention is not linear
#
# The FFN of the original paper is FFN(x) = ReLU(x W₁ + b₁) W₂ + b₂ with d_ff = 2048 = 4 × 512;
# current LLMs use GELU or gated variants (SwiGLU in Llama and Qwen). It is applied to each token
# on its own: change one token, and only that token's FFN output changes. Attention mixes tokens:

# %%
torch.manual_seed(6)
ffn = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8)).double()
x_tokens = torch.randn(5, 8, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
x_changed = x_tokens.clone()
x_changed[2] += 1.0
with torch.no_grad():
    ffn_moved = (ffn(x_changed) - ffn(x_tokens)).abs().amax(dim=-1)
    attention_moved = (attention(x_changed) - attention(x_tokens)).abs().amax(dim=-1)
print(_("token 2 changed; largest change of each token's output:"))
print(_("  FFN:      "), ffn_moved)
print(_("  attention:"), attention_moved)

# %% [markdown]
# Seed 003 then says "Attention是线性的, FFN引入非线性". Half right: the FFN's GELU
# is non-linear, but so is attention. Its weights softmax(q kᵀ/√c) are themselves computed from
# x, so the output is a product of x with a non-linear function of x. Test linearity directly,
# f(2x) = 2 f(x) and f(x + y) = f(x) + f(y), on your `MultiHeadAttention`; then freeze the weights
# (compute them from x once, and reuse them for another input): only that value path is linear.

# %%
y_tokens = torch.randn(5, 8, generator=torch.Generator().manual_seed(8), dtype=torch.float64)


def attention_values(x_for_weights, x_for_values, module=attention):
    """Your module's computation, with the weights from one input and the values from another."""
    q = split_heads(module.linear_q(x_for_weights), module.N_head)
    k = split_heads(module.linear_k(x_for_weights), module.N_head)
    v = split_heads(module.linear_v(x_for_values), module.N_head)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(module.c), dim=-1)
    return module.linear_o(merge_heads(weights @ v)) - module.linear_o.bias


with torch.no_grad():
    def f(x):
        return attention(x) - attention.linear_o.bias  # the bias is affine, not the point here
    print(_("attention: |f(2x) - 2 f(x)|       ="), f"{(f(2 * x_tokens) - 2 * f(x_tokens)).abs().max().item():.3g}")
    print(_("attention: |f(x+y) - f(x) - f(y)| ="),
          f"{(f(x_tokens + y_tokens) - f(x_tokens) - f(y_tokens)).abs().max().item():.3g}")
    frozen = (attention_values(x_tokens, x_tokens + y_tokens)
              - attention_values(x_tokens, x_tokens) - attention_values(x_tokens, y_tokens))
    print(_("weights frozen at x, values linear:  "), below(frozen.abs().max().item()))

# %% [markdown]
# So the FFN adds per-token non-linearity; attention's non-linearity lives in the weights, which
# is also what lesson 08's gate builds on.
#
# ## 8. The pre-norm decoder block
#
# A GPT-style decoder block (lesson 08's tiny language model is built from blocks like it):
#
# ```
# h = h + SelfAttention(RMSNorm(h))     # causal, with RoPE on q and k
# h = h + FFN(RMSNorm(h))               # Linear(d_model, d_ff), GELU, Linear(d_ff, d_model)
# ```
#
# The residual stream h is never normalised itself; each branch reads a normalised copy and adds
# its result back. Compare seed 003's §4.2–4.3, which draws the 2017 post-norm "Add & Norm",
# h = Norm(h + Sublayer(h)).
#
# ### Exercise 4: `DecoderBlock`
#
# Write `DecoderBlock(d_model, n_heads, d_ff, rope=True)` in `exercises/transformer.py`, with
# exactly these submodules (lesson 08 loads trained weights by these names):
#
# - `self.norm_attn = RMSNorm(d_model)`, `self.norm_ffn = RMSNorm(d_model)`;
# - `self.attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads)`, your lesson-03 module,
#   used for its projections `linear_q/k/v/o`;
# - `self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))`.
#
# In `forward(h)`, with x = norm_attn(h): q, k, v = `split_heads(attn.linear_q(x), n_heads)` and
# so on; with rope, `apply_rope` on q and k (after the split, so positions run along axis −2);
# your `scaled_dot_product_attention(q, k, v, mask=causal_mask(L))`; `merge_heads`;
# `attn.linear_o`; add to h. Then the FFN branch. (RoPE is why the block cannot simply call
# `self.attn(x)`: the rotation goes between the projections and the scores.)
#
# The check tests the names, that the block is causal, that it returns h when both branches are
# switched off (a pre-norm block does; a post-norm one does not), both settings of `rope`, L = 1,
# batch axes, gradients, and that h is left unmodified.

# %% tags=["check"]
from course.checks.lesson07 import check_decoder_block
from exercises.transformer import DecoderBlock

check_decoder_block(DecoderBlock)

# %% [markdown]
# The block is causal, measured: change the last token, and no earlier position's output moves.
# Its parameters, for the width of lesson 08's model (d_model = 64, 4 heads) with d_ff = 256:

# %%
torch.manual_seed(9)
block = DecoderBlock(64, 4, 256).double()
h = torch.randn(1, 6, 64, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
h_changed = h.clone()
h_changed[0, -1] = 0.0
with torch.no_grad():
    moved = (block(h_changed) - block(h)).abs().amax(dim=-1)[0]
print(_("change of each position's output when only the last token changes:"))
print("  ", [below(value) for value in moved.tolist()])
for name, parameter in block.named_parameters():
    print(f"  {name:<22} {tuple(parameter.shape)}")
print(_("total: {total:,} parameters (attention {attention:,}, FFN {ffn:,}, norms {norms})").format(
    total=sum(p.numel() for p in block.parameters()), attention=sum(p.numel() for p in block.attn.parameters()),
    ffn=sum(p.numel() for p in block.ffn.parameters()),
    norms=block.norm_attn.weight.numel() + block.norm_ffn.weight.numel()))

# %% [markdown]
# The block as a graph (torchview), small enough to read: d_model = 16, 2 heads, d_ff = 32, one
# sequence of 5 tokens.

# %% tags=["nbval-ignore-output"]
from course.plots import show_model_graph

small_block = DecoderBlock(16, 2, 32)
graph = show_model_graph(small_block, [torch.randn(1, 5, 16)], "DecoderBlock", depth=2)

# %% [markdown]
# Follow h (1, 5, 16) down the graph: it splits at once into the residual path (the long arrow
# on the left) and `RMSNorm`; the three `Linear`s of `attn` make q, k, v; `view` and `transpose`
# are your `split_heads` (1, 2, 5, 8). The two small chains in the top corners build RoPE's
# angles (`__rpow__` is base ** (...), then `cat`, `cos`, `sin`); on q and on k, `neg` and `cat`
# are rotate_half and `mul`, `mul`, `add` are x·cos + rotate_half(x)·sin. The third `view` (v)
# goes straight down: no rotation. `tril` is your `causal_mask`; then the scores (`matmul`,
# `div`), the mask (`masked_fill`, twice: your lesson-02 guard for rows that see nothing), the
# softmax (`amax`, `sub`, `exp`, `sum`, `div`) and the product with v; `transpose`/`reshape` is
# `merge_heads`, the fourth `Linear` is `linear_o`, and the first `add` joins the residual path.
# The FFN branch repeats the pattern: `RMSNorm`, `Linear`, `GELU`, `Linear`, `add`.
#
# ## 9. Encoder, decoder and cross-attention
#
# The 2017 Transformer translates: an **encoder** reads the source sentence ("我爱吃苹果") and a
# **decoder** writes the target ("I love eating apples") one token at a time. An encoder layer is
# the block above without the causal mask (every source token sees every other one, except
# padding). A decoder layer has three branches: causal self-attention over what it has written
# so far, **cross-attention** to the encoder's output, and the FFN:
#
# ```
# h = h + SelfAttention(Norm(h))                  # causal
# h = h + CrossAttention(Norm(h), memory)         # q from h; k, v from the encoder output
# h = h + FFN(Norm(h))
# ```
#
# In cross-attention the queries come from the decoder and the keys and values from the encoder's
# output (`memory`), so the scores are (L_target, L_source). There is no causal mask: the whole
# source is known before decoding starts. But the sources of a batch have different lengths and
# are padded, and no query may read the padding: a key mask `memory_mask` (*, L_source), True for
# real tokens.
#
# ### Exercise 5: `CrossAttention`
#
# Write `CrossAttention(d_model, n_heads)`: `linear_q`, `linear_k`, `linear_v` (d_model → d_model,
# no bias) and `linear_o` (with bias); `forward(x, memory, memory_mask=None)` with `split_heads`,
# your `scaled_dot_product_attention` with mask `memory_mask[..., None, None, :]` (shape
# (*, 1, 1, L_source): the same for every head and every query), `merge_heads`, `linear_o`.

# %% tags=["check"]
from course.checks.lesson07 import check_cross_attention
from exercises.transformer import CrossAttention

check_cross_attention(CrossAttention)

# %% [markdown]
# A batch of two source sentences, "我爱吃苹果" (5 tokens) and "我爱你" (3 tokens, padded to 5), and
# four target positions. The weights each target position gives the source tokens, first head of
# the padded sentence: padding gets none, and the padded encoder outputs can be anything.

# %%
from exercises.attention import attention_weights

torch.manual_seed(11)
cross = CrossAttention(8, 2).double()
memory = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
targets = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
memory_mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
with torch.no_grad():
    q = split_heads(cross.linear_q(targets), 2)
    k = split_heads(cross.linear_k(memory), 2)
    weights = attention_weights(q, k, mask=memory_mask[..., None, None, :])  # (2, 2, 4, 5)
    garbage = memory.clone()
    garbage[1, 3:] = 1e3
    moved = (cross(targets, garbage, memory_mask) - cross(targets, memory, memory_mask)).abs().max()
print(_("weights of the padded sentence, head 0 (rows: target positions, columns: 我 爱 你 pad pad):"))
print(weights[1, 0])
print(_("padding set to 1000: output changes by"), below(moved.item()))

# %% [markdown]
# ## 10. From tokens to vectors: an embedding table learns only the rows it used
#
# Seed 003 §4.7 and §7.3: text is split into tokens, each token id picks one row of an embedding
# table (a lookup, `nn.Embedding`), and positions are added or, with RoPE, applied inside
# attention. The table is learned like any weight, with one twist the seed points out: after a
# backward pass, only the rows of tokens that occurred in the batch have a gradient. A row used
# twice gets the sum of both uses.

# %%
torch.manual_seed(14)
table = nn.Embedding(len(vocabulary), 4).double()
id_to_char = {i: c for c, i in vocabulary.items()}
batch = torch.tensor([[vocabulary[c] for c in "我爱吃苹果"], [vocabulary[c] for c in "今天天气很"]])
upstream = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(15), dtype=torch.float64)
loss = (table(batch) * upstream).sum()  # any loss: d loss / d (looked-up vectors) = upstream
loss.backward()
used = sorted(set(batch.flatten().tolist()))
with_gradient = table.weight.grad.abs().sum(dim=-1).nonzero().flatten().tolist()
print(_("vocabulary: {characters} ({rows} rows); tokens in the batch: {used}").format(
    characters="".join(sorted(vocabulary, key=vocabulary.get)), rows=len(vocabulary),
    used="".join(id_to_char[i] for i in used)))
print(_("rows with a non-zero gradient: {characters} ({n} of {rows}); 好 was not in the batch").format(
    characters="".join(id_to_char[i] for i in with_gradient), n=len(with_gradient), rows=len(vocabulary)))
both_uses = upstream[1, 1] + upstream[1, 2]  # 天 sits at positions 1 and 2 of sentence 2
print(_("天 is used twice; its gradient equals the sum of both uses:"),
      torch.allclose(table.weight.grad[vocabulary["天"]], both_uses))

# %% [markdown]
# Plain SGD therefore changes only those rows at this step (`nn.Embedding(sparse=True)` even
# stores the gradient as just those rows). With Adam the other rows can still move for a while,
# from the momentum of earlier steps, and weight decay shrinks every row. Over many batches, tokens
# that appear in similar contexts get similar gradients and drift together: that, not any
# built-in meaning, is where "similar words get similar embeddings" comes from.
#
# ## Self-check
#
# 1. What precisely is the same, and what differs, between attention's outputs for "我爱吃苹果"
#    and "苹果吃爱我" when there are no positions? Why does a causal mask change that?
# 2. PE(pos + k) = R_k PE(pos): what does R_k look like, and why does it not depend on pos?
# 3. Why does RoPE rotate q and k but not v? What would rotating x before the projections lose?
# 4. A colleague's `apply_rope` pairs channel i with i + 1. Is it wrong? When does it matter?
# 5. Which is RMSNorm of the row [3, 3, 3, 3] (weight ones), and which is LayerNorm's?
# 6. In the deep stack, why do activations grow with plain residuals, and why only slowly with
#    pre-norm?
# 7. Your block returns exactly h when `attn.linear_o` and `ffn.2` are zero. What would a
#    post-norm block return?
# 8. In cross-attention, which tensor sets the number of output rows, and which the number of
#    keys? Why is there no causal mask?
# 9. After one backward pass through an embedding table, which rows have a gradient?
#
# <details><summary>Answers</summary>
#
# 1. Each token's output vector is identical in both sentences (苹 gets the same vector); only the
#    order of the outputs differs, as the inputs' order does (permutation equivariance). Anything
#    order-blind, like a mean over tokens, is identical. A causal mask makes what a token sees
#    depend on where it is, so the outputs are no longer a permutation of each other.
# 2. Block-diagonal: one 2 × 2 rotation by k ω_i per pair of channels. Moving k positions adds
#    k ω_i to every angle, whatever the angle was, and that is a rotation independent of pos.
# 3. The score q_i·k_j after rotating both by their positions depends on i − j only; that is all
#    RoPE is for. v carries content to be mixed; rotating it would tie the content to absolute
#    positions. Rotating x before the projections would let W_q and W_k mix channels of different
#    pairs and destroy the relative property.
# 4. Not wrong in itself: it is the RoPE paper's interleaved convention, a channel permutation of
#    rotate-half, with the same relative property. It matters when weights trained with one
#    convention are used with the other (e.g. lesson 08's checkpoints, or Hugging Face weights):
#    the results are then wrong.
# 5. RMSNorm: 3/√(9 + ε) ≈ [1, 1, 1, 1]. LayerNorm: the mean is subtracted first, leaving
#    [0, 0, 0, 0].
# 6. With x ← x + f(x) the variance of x grows by that of f(x) at every layer, so it compounds
#    (geometrically, when f keeps the scale of its input). With pre-norm f sees a unit-size input,
#    so every layer adds about the same amount: the variance grows linearly, the size like √depth.
# 7. Norm(h + 0) = RMSNorm(h): the input normalised, not h.
# 8. The decoder's x sets the rows (L_target), the encoder's memory sets the keys (L_source). The
#    source sentence is complete before decoding starts, so every target position may read all of
#    it; only padding is masked.
# 9. Only the rows of token ids that occurred in the batch; a row used twice gets the sum of the
#    two gradients.
#
# </details>
#
# ## Summary
#
# - An RNN needs L dependent steps, attention one call with L² scores: which is faster depends on
#   L and the hardware, so measure; the seed's 10× and GPU-utilisation figures have no source.
# - Without positions self-attention is permutation-equivariant; a causal mask or positions break it.
# - Sinusoidal encoding: PE(pos + k) = R_k PE(pos) with one block rotation R_k per offset. RoPE
#   rotates q and k inside attention, so scores depend on i − j only (rotate-half convention here).
# - RMSNorm divides by √(mean(x²) + ε) and has no mean and no bias. Residuals keep gradients alive
#   in a deep stack, norms keep activations in range; current models use pre-norm.
# - The FFN is per token; attention is not linear either (its weights depend on x).
# - Your `DecoderBlock` (pre-norm, causal, RoPE) and `CrossAttention` (queries from the decoder,
#   keys and values from the encoder, padding masked) are built from your own lesson-02/03 code.
# - Next: [lesson 08, the gated-attention paper](08_gated_attention_paper.ipynb), whose tiny
#   language model stacks blocks like yours and adds the paper's gate to their attention.
