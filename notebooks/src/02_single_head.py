# %% [markdown]
# # Lesson 02: single-head attention
#
# **Prerequisites:** lesson 01's `stable_softmax` and `scaled_scores` (`exercises/softmax.py`):
# your attention calls them.
#
# **In this lesson you will**
# - turn lesson 01's pieces into `scaled_dot_product_attention(q, k, v, bias, mask)`, which works
#   over any number of leading batch axes;
# - build causal and padding masks, and decide what a query that may see *no* key should get;
# - compare −1e8, −inf and zeros for masking, including in float16, and try every combination of
#   masks and fills in a widget;
# - check your function against PyTorch's `torch.nn.functional.scaled_dot_product_attention`;
# - wrap it in a module with learned projections: `SingleHeadAttention`.

# %%
import course_setup  # noqa: F401

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from course.i18n import _  # figure titles and labels in the notebook's language
from course.plots import heatmaps

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Shapes first
#
# In lesson 01 one query met a few keys. In a model, every position of a sequence is a query, and
# we process many sequences (and, in lesson 04, many heads and many MSA rows) at once. So the
# inputs carry leading batch axes `*`:
#
# | tensor | shape | meaning |
# |---|---|---|
# | q | `(*, q, c)` | q queries of width c |
# | k | `(*, k, c)` | k keys, same width as the queries |
# | v | `(*, k, c_v)` | one value per key; its width may differ |
# | scores, weights | `(*, q, k)` | one number per (query, key) pair |
# | bias, mask | broadcastable to `(*, q, k)` | added to / filtering the scores |
# | output | `(*, q, c_v)` | one mixed value per query |
#
# `q @ k.transpose(-2, -1)` multiplies the last two axes as matrices and treats every axis in
# front as a batch axis, so the lesson 01 code already handles `*`.

# %% [markdown]
# ## Masks: which keys a query may see
#
# A mask is a boolean tensor, **True where the query may attend to the key** (the same
# convention as PyTorch's `scaled_dot_product_attention`). Two masks cover most uses:
#
# - **causal**: in a language model predicting the next token, position i may look at positions
#   j ≤ i only. An (n, n) lower-triangular matrix, diagonal included.
# - **padding**: sequences of different lengths are padded to one length to form a batch. No
#   query may attend to a padding key. For lengths (B,), a mask of shape (B, 1, max_len): the
#   size-1 axis stands for "every query", so it broadcasts against scores (B, q, k).
#
# Write `causal_mask(n)` and `padding_mask(lengths, max_len)` in `exercises/attention.py`.

# %% tags=["check"]
from course.checks.lesson02 import check_causal_mask
from exercises.attention import causal_mask

check_causal_mask(causal_mask)

# %% tags=["check"]
from course.checks.lesson02 import check_padding_mask
from exercises.attention import padding_mask

check_padding_mask(padding_mask)

# %%
print(causal_mask(4).int())
print(padding_mask(torch.tensor([4, 2]), 4).int())

# %% [markdown]
# ## Masking inside the softmax, and the fully masked row
#
# A masked key must get weight exactly 0. The standard trick: before the softmax, replace its
# score by −∞ (e^−∞ = 0). Some code bases use a large finite number instead: −1e8 in the
# alphafold-decoded course, −1e9 in AlphaFold2's own code. Does it matter? Look at the three
# queries below: query 0 sees two keys, query 1 sees **none** (think of a padding position
# asking a question), query 2 sees one.

# %%
scores = torch.tensor([[1.0, 2.0, 0.5],
                       [1.0, 2.0, 0.5],
                       [1.0, 2.0, 0.5]], dtype=torch.float64)
mask = torch.tensor([[True, True, False],
                     [False, False, False],
                     [False, True, False]])

print("fill -1e8:\n", torch.softmax(scores.masked_fill(~mask, -1e8), dim=-1))
print("fill -inf:\n", torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1))

# %% [markdown]
# For rows that see something, both fills agree. For the blind row they disagree, and neither is
# good:
#
# - with −1e8 every score of the row is the same (−1e8), so the softmax is **uniform over the
#   masked keys**: the blind position quietly averages the values of keys it may not see;
# - with −∞ the row is (−∞) − (−∞) = NaN, and a single NaN spreads through every later layer.
#
# And the finite fill is less safe than it looks in half precision: float16 cannot store −1e8.

# %%
print("-1e8 in float16:", torch.tensor(-1e8).half().item(), "  float16 min:", torch.finfo(torch.float16).min)

# %% [markdown]
# **Our choice:** mask with −∞, and give a query that may see no key **a row of zero weights**,
# hence a zero output. A zero is honest (this position received no information), it cannot
# leak padding content, and it carries no NaN. PyTorch's own `scaled_dot_product_attention`
# makes the same choice in this version, as we check at the end of the lesson. A common
# alternative is to let the blind rows compute anything finite and rely on the loss ignoring
# padding positions; AlphaFold2's −1e9 does that.
#
# ## Exercise: attention weights, then attention
#
# In `exercises/attention.py` write:
#
# - `attention_weights(q, k, bias=None, mask=None)`: the scaled scores (your lesson 01
#   function), plus the bias, masked, then softmax over the keys; fully masked rows give zeros;
# - `scaled_dot_product_attention(q, k, v, bias=None, mask=None)`: the weights times v.
#
# The bias is added to the scaled scores as it is (it is not divided by √c): it is a prior on
# each (query, key) pair, such as a relative-position term or AlphaFold's pair bias (lesson 04).

# %% tags=["check"]
from course.checks.lesson02 import check_attention_weights
from exercises.attention import attention_weights

check_attention_weights(attention_weights)

# %% tags=["check"]
from course.checks.lesson02 import check_attention_forward
from exercises.attention import scaled_dot_product_attention

check_attention_forward(scaled_dot_product_attention)

# %% [markdown]
# ## Looking at the weights
#
# A toy sentence of five tokens, random embeddings (seeded), no learned projections: q = k = x.
# On the left, no mask: each token attends most to itself (q·q is large). In the middle, the
# causal mask: row i spreads its weight over tokens 0..i only. On the right, the sentence has 3
# real tokens padded to 5, and we mask both padding keys and padding queries (`real & real.T`):
# columns 3 and 4 get no weight, and rows 3 and 4, which see nothing, are all zeros.

# %%
tokens = ["the", "cat", "sat", "<pad>", "<pad>"]
generator = torch.Generator().manual_seed(2)
x = torch.randn(5, 8, generator=generator, dtype=torch.float64)

plain = attention_weights(x, x)
causal = attention_weights(x, x, mask=causal_mask(5))
real = padding_mask(torch.tensor([3]), 5)[0]            # (1, 5): keys that are real
padded = attention_weights(x, x, mask=real & real.T)    # (5, 5): real query and real key
fig = heatmaps([plain, causal, padded], [_("no mask"), _("causal mask"), _("padding (3 real)")],
               row_labels=tokens, col_labels=tokens)
plt.show()
# rounded: correct code written differently may be off from 1 in the last bit
print("row sums:", causal.sum(-1).round(decimals=4), padded.sum(-1).round(decimals=4))

# %% [markdown]
# ## Widget: masks and the fully masked row
#
# A toy sentence like the one above (six tokens, q = k = x, seeded; the masking is the course's
# own code, not yours), with every choice of this section on a control: the causal mask, how many
# tokens are real, whether padding queries are masked too, and what a masked score is filled
# with. Tick "padding queries see nothing" to make blind rows, then switch the fill: the rows
# that see something never change, the blind ones become zeros, a uniform row or NaN.

# %% tags=["nbval-ignore-output"]
from course.widgets.lesson02 import mask_explorer

mask_explorer()

# %% [markdown]
# ## The same answer as PyTorch
#
# `torch.nn.functional.scaled_dot_product_attention` computes the same function with fused,
# memory-efficient kernels; it is what production code calls. Its `attn_mask` takes either a
# boolean mask (True = may attend, as ours) or a float tensor that is *added* to the scores (our
# bias). Compare on a batch with two leading axes:

# %%
generator = torch.Generator().manual_seed(3)
q = torch.randn(2, 3, 6, 8, generator=generator, dtype=torch.float64)
k = torch.randn(2, 3, 7, 8, generator=generator, dtype=torch.float64)
v = torch.randn(2, 3, 7, 5, generator=generator, dtype=torch.float64)
bias = torch.randn(2, 3, 6, 7, generator=generator, dtype=torch.float64)
lengths_mask = padding_mask(torch.tensor([7, 4]), 7)[:, None]   # (2, 1, 1, 7)

comparisons = {
    "plain": (scaled_dot_product_attention(q, k, v), F.scaled_dot_product_attention(q, k, v)),
    "bias": (scaled_dot_product_attention(q, k, v, bias=bias),
             F.scaled_dot_product_attention(q, k, v, attn_mask=bias)),
    "padding mask": (scaled_dot_product_attention(q, k, v, mask=lengths_mask),
                     F.scaled_dot_product_attention(q, k, v, attn_mask=lengths_mask)),
    "causal (self)": (scaled_dot_product_attention(k, k, v, mask=causal_mask(7)),
                      F.scaled_dot_product_attention(k, k, v, is_causal=True)),
}
for name, (ours, theirs) in comparisons.items():
    print(f"{name:>13}: equal to 1e-12: {torch.allclose(ours, theirs, rtol=0, atol=1e-12)}")

# %% [markdown]
# And the fully masked row: PyTorch (in the version this course pins) returns zeros too.

# %%
blind = torch.tensor([[True, True, False, False, False, False, False],
                      [False] * 7] + [[True] * 7] * 4)
ours = scaled_dot_product_attention(q, k, v, mask=blind)
theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=blind)
print("torch, blind query:", theirs[0, 0, 1])
print("equal to 1e-12:", torch.allclose(ours, theirs, rtol=0, atol=1e-12))

# %% [markdown]
# ## A module: single-head attention
#
# So far q, k and v were given. In a network they are **learned projections of the same input**
# x of shape `(*, L, c_in)`:
#
# q = x W_q, k = x W_k, v = x W_v (each c_in → c), then attention, then an output projection
# W_o (c → c_in) so the result can be added back to x.
#
# Write `SingleHeadAttention(c_in, c)` in `exercises/attention.py`, with the parameter names
# `linear_q`, `linear_k`, `linear_v` (`nn.Linear(c_in, c, bias=False)`) and `linear_o`
# (`nn.Linear(c, c_in)`, with bias). The check copies fixed weights into your module by
# parameter name, so the names matter. Why Q, K, V carry no bias is a question for lesson 03.

# %% tags=["check"]
from course.checks.lesson02 import check_single_head
from exercises.attention import SingleHeadAttention

check_single_head(SingleHeadAttention)

# %%
torch.manual_seed(0)
layer = SingleHeadAttention(c_in=16, c=8)
x = torch.randn(2, 5, 16)
print("input ", tuple(x.shape), "-> output", tuple(layer(x, mask=causal_mask(5)).shape))
print("parameters:", {name: tuple(p.shape) for name, p in layer.named_parameters()})
print("total:", sum(p.numel() for p in layer.parameters()))

# %% [markdown]
# With c_in = 16 and c = 8: three 16×8 projections (384), an 8×16 output weight (128) and its
# 16 biases: 528 parameters.
#
# ## Self-check
#
# 1. Your scores have shape (2, 3, 6, 7). What shapes of bias broadcast against them?
#    Is (3, 6, 7) one? Is (2, 6, 7)?
# 2. Why must the bias be added before the softmax, not to the weights after it?
# 3. A batch holds sequences of lengths 5 and 2, padded to 5. How many queries of the second
#    sequence see at least one key under a padding mask of shape (2, 1, 5)?
# 4. Why is a causal mask's diagonal True?
#
# <details><summary>Answers</summary>
#
# 1. Shapes are matched from the right. (3, 6, 7) broadcasts (it is read as (1, 3, 6, 7)).
#    (2, 6, 7) does not: it would be matched as (1, 2, 6, 7), and 2 ≠ 3 on the head axis. A
#    bias with batch axis 2 must be (2, 1, 6, 7). Lesson 04 is about exactly this.
# 2. After the softmax the weights would no longer sum to 1, and a bias of −∞ could not
#    remove a key. Before the softmax, the bias shifts the competition between keys.
# 3. All 5: the key mask hides keys 2, 3, 4 from every query, but every query still sees keys 0
#    and 1. Only when queries are masked too (as in our heatmap) do padding rows go blind.
# 4. Position i may use its own token to predict token i + 1; only *later* tokens are hidden.
# </details>
#
# ## Summary
#
# - `scaled_dot_product_attention` = softmax over keys of (q kᵀ/√c + bias, masked) times v,
#   over any leading batch axes.
# - Masks are boolean, True = may attend. Masked scores become −∞; a query with no visible key
#   gets zero weights (our choice, shared by PyTorch's SDPA here), not NaN and not a silent
#   average of the keys it may not see (what −1e8 gives).
# - Your function equals PyTorch's fused `scaled_dot_product_attention` to within 1e-12 (float64).
# - Next: [lesson 03, multi-head attention](03_multi_head.ipynb).
