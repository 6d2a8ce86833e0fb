# %% [markdown]
# # Lesson 01: Q, K, V by hand
#
# **Prerequisites:** lesson 00 (where your code goes, how a check cell reports).
#
# **In this lesson you will**
# - read attention as a soft lookup: a query compared with keys, the values mixed by the result;
# - recompute, in code, the worked examples of the course's source notes (with corrected values
#   where the notes got them wrong);
# - measure why scores are divided by √c: their spread grows with c, the softmax saturates, and
#   the gradient through it vanishes;
# - implement a softmax that cannot overflow, and the scaled scores q·k/√c.

# %%
import course_setup  # noqa: F401

import math

import matplotlib.pyplot as plt
import torch

from course.i18n import _  # figure titles and labels in the notebook's language

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Attention is a soft lookup
#
# Think of a library. You bring a **query** (what you are looking for). Every book has a
# **key** on its spine (a label saying what it offers) and a **value** (its content). A
# hard lookup returns the one book whose key matches best. Attention returns a *blend* of all the
# books, each weighted by how well its key matches your query:
#
# 1. score every key against the query: the dot product q·k, divided by √c (c = vector length);
# 2. turn the scores into weights with a softmax: positive, summing to 1;
# 3. return the weighted sum of the values.
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{c}}\right) V$$
#
# (Some widely read notes write $QK^\top/d_k$ in places; the divisor is $\sqrt{d_k}$.)

# %% [markdown]
# ## The smallest example
#
# Vectors of length c = 2. One query, two keys, two values:
# key 1 points the same way as the query, key 2 is orthogonal to it.

# %%
q = torch.tensor([1.0, 0.0])
keys = torch.tensor([[1.0, 0.0],    # key 1: same direction as q
                     [0.0, 1.0]])   # key 2: orthogonal to q
values = torch.tensor([[2.0, 0.0],  # value 1
                       [0.0, 2.0]]) # value 2

scores = keys @ q / math.sqrt(2)
weights = torch.exp(scores) / torch.exp(scores).sum()
output = weights @ values
print("scores  ", scores)
print("weights ", weights)
print("output  ", output)

# %% [markdown]
# The output leans towards value 1 (its key matches) but keeps a third of value 2: with weights
# rounded to [0.67, 0.33], it is 0.67·[2, 0] + 0.33·[0, 2] = [1.34, 0.66]. Nothing is retrieved
# exactly; everything is retrieved a little, and more of what matches better.

# %% [markdown]
# ## Softmax, step by step
#
# A second example from the notes: the softmax of four scores, then a weighted sum of four
# values. (This example skips the √c step: its scores are taken as already scaled.)

# %%
scores = torch.tensor([0.1, 0.3, 1.0, 0.8], dtype=torch.float64)
exps = scores.exp()
print("exp(scores)    ", exps)
print("sum            ", round(exps.sum().item(), 3))
weights = exps / exps.sum()
print("softmax        ", weights)
values = torch.tensor([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0, 0.5]], dtype=torch.float64)
print("weights @ V    ", weights @ values)
print("rounded first  ", weights.round(decimals=2) @ values)

# %% [markdown]
# The exact sum of the exponentials is 7.399; a hand calculation that first rounds each
# exponential to two decimals gets 7.41. The output is [0.30, 0.18, 0.52] from the rounded
# weights and [0.2998, 0.1824, 0.5178] from the exact ones: at two decimals, the same.

# %% [markdown]
# ## A three-word sentence, by hand
#
# The notes' "我爱吃" ("I love eating") example: three words embedded in 2-D, and identity
# projections so that Q = K = V = X.

# %%
X = torch.tensor([[1.0, 0.0],   # 我 (I)
                  [0.0, 1.0],   # 爱 (love)
                  [1.0, 1.0]],  # 吃 (eat)
                 dtype=torch.float64)
Q = K = V = X
scaled = Q @ K.T / math.sqrt(2)
weights = torch.softmax(scaled, dim=-1)
print("scaled scores\n", scaled)
print("weights (rows: queries)\n", weights)
print("outputs\n", weights @ V)

# %% [markdown]
# Row 1 (我) weighs [0.40, 0.20, 0.40] and becomes [0.80, 0.60]. Row 2 (爱) is its mirror image,
# [0.20, 0.40, 0.40] → [0.60, 0.80]; row 3 (吃) weighs [0.25, 0.25, 0.50] → [0.75, 0.75]. The
# source note prints slightly different numbers for rows 2 and 3 (its row 2 does not even sum to
# 1); the cell above is the arithmetic.
#
# **A self-check from the notes, corrected.** With Q = K = I (2×2) and V = [[2, 3], [4, 5]], is
# the output just V? A tempting answer says the weights are the identity matrix. They are not:
# a score of 1/√2 ≈ 0.71 against 0 is far from one-hot.

# %%
I2 = torch.eye(2, dtype=torch.float64)
V = torch.tensor([[2.0, 3.0], [4.0, 5.0]], dtype=torch.float64)
weights = torch.softmax(I2 @ I2.T / math.sqrt(2), dim=-1)
print("weights\n", weights)
print("output\n", weights @ V)

# %% [markdown]
# How peaked does a softmax get? For scores [10, 5, 1, 0.1, 0.01], a gap of 5 between the two
# largest scores already gives the first key 99 % of the weight:

# %%
peaked = torch.softmax(torch.tensor([10, 5, 1, 0.1, 0.01], dtype=torch.float64), dim=-1)
print([f"{w:.3g}" for w in peaked.tolist()])

# %% [markdown]
# ## Exercise 1: a softmax that cannot overflow
#
# The textbook formula exp(x_i) / Σ exp(x_j) breaks on large scores:

# %%
big = torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)
print("exp(big)           ", big.exp())
print("textbook softmax   ", big.exp() / big.exp().sum())

# %% [markdown]
# exp(1000) is beyond float64 (whose largest value is about 1.8e308, e^709.8), so it becomes inf,
# and inf / inf is NaN. In float32 the limit is much lower: exp(89) already overflows.
#
# The fix uses one identity: softmax(x) = softmax(x − m) for any m that is constant along the
# softmax axis (the factor e^(−m) cancels between numerator and denominator). Choose m = the
# maximum: the largest exponent becomes e⁰ = 1, nothing overflows, and the sum is at least 1.
#
# Write `stable_softmax(x, dim=-1)` in `exercises/softmax.py`. It must work along any `dim` of a
# tensor of any shape (keep the reduced axis with `keepdim=True` so it broadcasts back).

# %% tags=["check"]
from course.checks.lesson01 import check_stable_softmax
from exercises.softmax import stable_softmax

check_stable_softmax(stable_softmax)

# %% [markdown]
# ## Why divide by √c? Measure it
#
# Take q and k with c independent standard-normal entries. Their dot product is a sum of c
# products, each with mean 0 and variance 1, so **the variance of q·k is c** and its spread
# (standard deviation) is √c. Dividing by √c brings the variance back to 1, whatever c is.

# %%
dims = [4, 16, 64, 256, 1024]
generator = torch.Generator().manual_seed(0)
rows = []
for c in dims:
    q = torch.randn(20_000, c, generator=generator, dtype=torch.float64)
    k = torch.randn(20_000, c, generator=generator, dtype=torch.float64)
    dots = (q * k).sum(dim=-1)
    rows.append((c, dots.var().item(), (dots / math.sqrt(c)).var().item()))
print(f"{'c':>6} {'var(q·k)':>10} {'var(q·k/√c)':>12}")
for c, raw, scaled_var in rows:
    print(f"{c:>6} {raw:>10.0f} {scaled_var:>12.2f}")

# %% [markdown]
# Large scores make the softmax **saturate**: one key takes nearly all the weight. And a saturated
# softmax passes almost no gradient back. Its Jacobian is diag(p) − p pᵀ, which is zero when p is
# one-hot. Below, for 8 random keys per query, we measure the mean largest weight and the size of
# the gradient of a loss with respect to the scores, with and without the scale.

# %%
def saturation_and_gradient(c, scaled, n_queries=512, n_keys=8, seed=1):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, c, generator=generator, dtype=torch.float64)
    k = torch.randn(n_keys, c, generator=generator, dtype=torch.float64)
    v = torch.randn(n_queries, n_keys, generator=generator, dtype=torch.float64)  # one value set per query
    scores = (q @ k.T / (math.sqrt(c) if scaled else 1.0)).requires_grad_()
    weights = torch.softmax(scores, dim=-1)
    (weights * v).sum().backward()
    return weights.max(dim=-1).values.mean().item(), scores.grad.norm(dim=-1).mean().item()


results = {s: [saturation_and_gradient(c, s) for c in dims] for s in (True, False)}
print(f"{'c':>6} | {'max weight':>10} {'grad size':>10} (÷√c) | {'max weight':>10} {'grad size':>10} (no scale)")
for i, c in enumerate(dims):
    (m1, g1), (m0, g0) = results[True][i], results[False][i]
    print(f"{c:>6} | {m1:>10.3f} {g1:>10.2e}       | {m0:>10.3f} {g0:>10.2e}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.3), layout="constrained")
axes[0].loglog(dims, [r[2] for r in rows], "o-", label="q·k/√c")
axes[0].loglog(dims, [r[1] for r in rows], "o--", label=_("q·k (no scale)"))
axes[0].set(xlabel=_("dimension c"), ylabel=_("variance of the score"), title=_("score variance grows like c"))
for scaled_flag, style, label in ((True, "o-", "÷√c"), (False, "o--", _("no scale"))):
    axes[1].semilogx(dims, [m for m, g in results[scaled_flag]], style, label=label)
    axes[2].loglog(dims, [g for m, g in results[scaled_flag]], style, label=label)
axes[1].set(xlabel=_("dimension c"), ylabel=_("mean largest weight (8 keys)"), title=_("softmax saturates"),
            ylim=(0, 1.05))
axes[2].set(xlabel=_("dimension c"), ylabel=_("mean |∂loss/∂scores|"), title=_("gradient vanishes"))
for ax in axes:
    ax.legend()
plt.show()

# %% [markdown]
# Without the scale, by c = 1024 the largest of 8 weights averages above 0.9 and the gradient
# reaching the scores is a fraction of its scaled size: the model would learn slowly, and learn
# mostly nothing about the keys that lost. With the scale, all three curves stay flat.
#
# ## Exercise 2: scaled scores
#
# Write `scaled_scores(q, k)` in `exercises/softmax.py`: q of shape `(*, q, c)`, k of shape
# `(*, k, c)`, result `(*, q, k)` holding q_i·k_j/√c. The leading axes `*` are batch axes (any
# number of them), so transpose only the last two axes of k.

# %% tags=["check"]
from course.checks.lesson01 import check_scaled_scores
from exercises.softmax import scaled_scores

check_scaled_scores(scaled_scores)

# %% [markdown]
# Your two functions reproduce the first example of this lesson:

# %%
q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
keys = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
values = torch.tensor([[2.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
print(stable_softmax(scaled_scores(q, keys)) @ values)

# %% [markdown]
# ## Play: dimension, scale and temperature
#
# Move the sliders. The left panel shows one query's weights over 8 random keys; the right panel
# the mean entropy of the weights (0 = all weight on one key; log 8 ≈ 2.08 = uniform) against c.
# A **temperature** T divides the scores: softmax(s/T). T > 1 flattens, T < 1 sharpens. Dividing
# by √c is a temperature that grows with c just enough to cancel the growing spread.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson01 import softmax_explorer

softmax_explorer()

# %% [markdown]
# ## Self-check
#
# 1. Why does adding the same number to every score of a row leave the softmax unchanged?
# 2. c grows from 64 to 256. By what factor does the standard deviation of an unscaled score grow?
# 3. What happens to the weights as the temperature goes to 0? To infinity?
# 4. The attention weights are a non-linear function of the queries and keys. Which part of
#    attention *is* linear?
#
# <details><summary>Answers</summary>
#
# 1. e^(x+m) = e^x·e^m: the factor e^m appears in every term and in the sum, and cancels. That
#    is exactly why subtracting the maximum is allowed.
# 2. By √(256/64) = 2: the variance grows like c, the standard deviation like √c.
# 3. T → 0: all weight on the largest score (a hard argmax, when it is unique). T → ∞: uniform
#    weights, 1/n each.
# 4. For fixed weights, the output is linear in the values V. The weights themselves come from a
#    softmax of QKᵀ, which is not linear in the input, so attention as a whole is not linear
#    (a claim you may meet in some notes).
# </details>
#
# ## Summary
#
# - Attention scores every key against a query (q·k/√c), turns the scores into weights with a
#   softmax, and returns the weighted mix of the values.
# - A safe softmax subtracts each slice's maximum first; the result is mathematically the same.
# - Unscaled scores of unit-variance entries have variance c: the softmax saturates and its
#   gradient vanishes as c grows.
#   Dividing by √c keeps the variance at 1.
# - Next: [lesson 02, single-head attention](02_single_head.ipynb): batches, masks, bias, and a
#   module with learned projections.
