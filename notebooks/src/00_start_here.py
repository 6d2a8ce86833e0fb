# %% [markdown]
# # Lesson 00: start here
#
# **Prerequisites:** none from the course; Python and a first look at PyTorch tensors help. Each
# later lesson builds on the exercises of the lessons before it and says which at its top.
#
# This course builds attention in PyTorch from the ground up: Q, K, V by hand, one head, many
# heads, attention bias, AlphaFold2's global column attention and output gate, the Transformer
# around attention, and the 2025 gated-attention paper, whose claims you will test yourself on a
# laptop CPU. The last lessons take on what attention costs on long sequences, by two routes:
# **route one** computes the same attention tile by tile with an online softmax, never holding the
# whole score matrix; **route two** changes the math itself (linear attention, a gated state,
# Nyström landmarks) and measures what that gives up.
#
# **In this lesson you will**
# - learn where you write code and how a check tells you whether it is right;
# - see what your machine offers the course (CUDA or not, Graphviz or not, a font for Chinese
#   or not);
# - write your first function and pass your first check;
# - meet the course's vocabulary, in English and Chinese.

# %%
import course_setup  # noqa: F401  (puts the course on the path, turns on autoreload)

# %% [markdown]
# ## How the course works
#
# | folder | what is in it | do you edit it? |
# |---|---|---|
# | `notebooks/` | one notebook per lesson: explanations, experiments, plots, check cells | run it, play with it |
# | `exercises/` | the functions and classes you implement, one file per topic | **yes: your code goes here** |
# | `data/` | small data files some lessons read | no |
# | `course/` | the machinery: checks, widgets, plots | no |
#
# Each exercise is a function in `exercises/*.py` whose body raises `NotImplementedError`.
# Replace that line with your code, save the file, and run the lesson's **check cell**. The
# notebook imports your file with *autoreload*, so you never need to restart the kernel after an
# edit.
#
# A check runs your code on fixed inputs (float64 and float32, several shapes, extra batch axes) and
# compares it with the reference. When everything agrees it prints one line starting with `PASS`;
# that covers these visible cases only: the instructor's grader also tries hidden inputs of the same
# kinds, and `make check HIDDEN=1` lets you do the same before you hand in. When your code does not
# agree, the check tries every case anyway, then tells you the first case that differs, what shape
# it expected and got, how large the difference is, and the hint that the differences of all the
# cases point to (a wrong scale, float32 rounding, a swapped axis...). If your code raised an error,
# it shows the file and line of *your* code where it happened.
#
# Later exercises call earlier ones: lesson 02's `attention_weights` calls your `scaled_scores`
# from lesson 01. When an exercise fails only because one it calls is wrong, its check says so
# first, with `BLOCKED` instead of `FAIL`:
#
# ```
# BLOCKED 02.attention_weights by 01.scaled_scores:
#   your attention_weights calls your scaled_scores, which fails 01.scaled_scores: fix that first.
#   On its own, your attention_weights is right: with the reference scaled_scores in place of ...
# ```
#
# The second line tells whether the exercise is right on its own (the check runs it once more
# with recorded results of the reference in place of the failing one). Fix the exercise it names
# first; one bug shows as one `FAIL`, and everything that calls it as `BLOCKED`.
#
# The notebooks you opened were run against the reference solutions, so every check cell already
# shows `PASS`. Run a check cell yourself and it tests *your* code. For every exercise at once,
# run `make check` in a terminal in the course folder: one line per exercise, `PASS`, `FAIL`,
# `BLOCKED` (with what blocks it) or `TODO`, then the whole message of each `FAIL`;
# `make check ONLY=01.scaled_scores` shows the whole message of one check.

# %% [markdown]
# ## Your environment
#
# Nothing in the course needs a GPU. Cells that can use one detect it and fall back to the CPU.
# Graphviz's `dot` draws the model graphs of lessons 03, 06 and 07; without it you see the
# graph's text source instead. Figures with Chinese text (those of the Chinese edition) need a
# font that has Chinese characters; without one they show boxes, and the report gives the
# command that installs one.

# %% tags=["nbval-ignore-output"]
from course.env_report import environment_report

report = environment_report()

# %% [markdown]
# ## A check that passes, a check that fails
#
# Attention is built on one operation: the dot product of two vectors, taken for many pairs at
# once. The warm-up exercise is `batched_dot(a, b)`: for `a` and `b` of shape `(*, n)`, return the
# dot products over the last axis, shape `(*)`.
#
# Here is a correct version, written inline, and the check accepting it:

# %%
from course.checks import CheckFailed
from course.checks.lesson00 import check_batched_dot


def batched_dot_right(a, b):
    return (a * b).sum(dim=-1)


check_batched_dot(batched_dot_right)

# %% [markdown]
# And a plausible bug: summing over *every* axis instead of only the last one. For a single pair
# of vectors that gives the right answer, so the first case passes; the second case has four
# pairs and catches it. In your own check cells a failure shows as a red error box; here we catch
# it to print just the message.

# %%
def batched_dot_wrong(a, b):
    return (a * b).sum()


try:
    check_batched_dot(batched_dot_wrong)
except CheckFailed as failure:
    print(failure)

# %% [markdown]
# If your code does not run at all, the check reports the exception it raised, the line of your
# code that raised it, and a hint about that kind of error. If you have not written the function
# yet, it says so and names the file.

# %%
try:
    check_batched_dot(lambda a, b: a @ b)
except CheckFailed as failure:
    print(failure)

# %% [markdown]
# ## Your first exercise
#
# Open `exercises/warmup.py`, replace the `raise NotImplementedError(...)` line of `batched_dot`
# with your code, save, and run the cell below. It imports **your** function.

# %% tags=["check"]
from course.checks.lesson00 import check_batched_dot
from exercises.warmup import batched_dot

check_batched_dot(batched_dot)

# %% [markdown]
# ## Vocabulary / 术语表
#
# The source notes of this course are in Chinese; many readers will know the terms from there.
#
# | English | 中文 | in this course |
# |---|---|---|
# | attention | 注意力 | a weighted average of values, weights from query-key similarity |
# | query / key / value (Q, K, V) | 查询 / 键 / 值 | what I look for / what I offer as a label / what I hand over |
# | score, logit | 分数 (注意力分数) | q·k / √c, before the softmax |
# | attention weights | 注意力权重 | softmax of the scores over the keys; each row sums to 1 |
# | scaled dot-product attention | 缩放点积注意力 | softmax(QKᵀ/√c + bias)·V |
# | head, multi-head | 头, 多头 | one Q/K/V subspace; several run side by side |
# | channel width c | 通道数 / 每头维度 c | length of each q, k, v vector in a head |
# | bias (attention bias) | 偏置 (注意力偏置) | a term added to the scores before the softmax: masks, relative positions, pair bias |
# | mask, padding mask, causal mask | 掩码, 填充掩码, 因果掩码 | which keys a query may not see |
# | broadcasting | 广播 | size-1 axes stretched to match: the whole of lesson 04 |
# | row / column attention | 行 / 列注意力 | attention along a row or a column of the MSA table |
# | MSA (multiple sequence alignment) | 多序列比对 | the table of related sequences AlphaFold reads |
# | pair representation z | pair 表征 z (对表征) | AlphaFold's features for each residue pair; source of the pair bias |
# | global attention | 全局注意力 | one averaged query, one shared key/value head: cost linear in the number of sequences |
# | gate, gating | 门, 门控 | sigmoid(linear(x)) multiplied into the attention output per channel |
# | sigmoid | S 型函数 (sigmoid) | 1/(1+e^(−x)), between 0 and 1 |
# | softmax | softmax (归一化指数) | exponentiate, then divide by the sum |
# | attention sink | 注意力汇点 (汇点) | a token (often the first) that soaks up attention weight with no content reason |
# | mutation test | 变异测试 | break the reference on purpose; a good check must notice |
#
# ## Summary
#
# - Your code goes in `exercises/`; notebooks import it and check it.
# - `PASS ...` means your function agrees with the reference on every visible case; a failure
#   names the case, the shapes, the largest difference and the likely cause; `BLOCKED` means an
#   exercise it calls fails first.
# - Next: [lesson 01, Q, K, V by hand](01_qkv_by_hand.ipynb).
