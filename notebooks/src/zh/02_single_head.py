# %% [markdown] en="ccebd0849872"
# # 第 02 课：单头注意力
#
# **先修要求：**第 01 课的 `stable_softmax` 和 `scaled_scores`（`exercises/softmax.py`）：你的注意力要调用它们。
#
# **本课你将**
# - 把第 01 课的零件组装成 `scaled_dot_product_attention(q, k, v, bias, mask)`，前导批量轴有多少个都能处理；
# - 构造因果掩码和填充掩码，并决定看不到任何键的查询该得到什么；
# - 比较用 −1e8、−inf 和零做掩码的效果（包括 float16 下），并在小部件里试遍掩码与填入值的各种组合；
# - 把你的函数与 PyTorch 的 `torch.nn.functional.scaled_dot_product_attention` 对照检查；
# - 把它包装成带可学习投影的模块：`SingleHeadAttention`。

# %% en="d35e1109a130"
import course_setup  # noqa: F401

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言
from course.plots import heatmaps

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="28aa56c9a9ae"
# ## 先看形状
#
# 第 01 课里，一个查询只面对几个键。在模型中，序列的每个位置都是查询，而且一次要处理许多序列（到第 04 课还有许多头和许多 MSA 行）。所以输入带有前导批量轴 `*`：
#
# | 张量 | 形状 | 含义 |
# |---|---|---|
# | q | `(*, q, c)` | q 个查询，宽度为 c |
# | k | `(*, k, c)` | k 个键，宽度与查询相同 |
# | v | `(*, k, c_v)` | 每个键对应一个值；值的宽度可以不同 |
# | scores, weights | `(*, q, k)` | 每个（查询，键）对一个数 |
# | bias, mask | 可广播到 `(*, q, k)` | 加到分数上 / 过滤分数 |
# | output | `(*, q, c_v)` | 每个查询得到一个混合后的值 |
#
# `q @ k.transpose(-2, -1)` 把最后两个轴当作矩阵相乘，前面的轴都当作批量轴，所以第 01 课的代码本来就能处理 `*`。

# %% [markdown] en="cb0ead8f0332"
# ## 掩码：查询能看到哪些键
#
# 掩码是布尔张量，**查询可以关注该键的位置为 True**（与 PyTorch 的 `scaled_dot_product_attention` 约定相同）。常用的掩码有两种：
#
# - **因果掩码**：语言模型预测下一个词元时，位置 i 只能看位置 j ≤ i。这是 (n, n) 的下三角矩阵，包含对角线。
# - **填充掩码**：长度不同的序列要填充到同一长度，才能组成批量。任何查询都不能关注填充的键。长度为 (B,) 时，掩码形状为 (B, 1, max_len)：大小为 1 的轴代表“所有查询”，因此能与分数 (B, q, k) 广播。
#
# 在 `exercises/attention.py` 中写出 `causal_mask(n)` 和 `padding_mask(lengths, max_len)`。

# %% tags=["check"] en="b7fa34042b9b"
from course.checks.lesson02 import check_causal_mask
from exercises.attention import causal_mask

check_causal_mask(causal_mask)

# %% tags=["check"] en="5fc78fe9c670"
from course.checks.lesson02 import check_padding_mask
from exercises.attention import padding_mask

check_padding_mask(padding_mask)

# %% en="7aee868ade96"
print(causal_mask(4).int())
print(padding_mask(torch.tensor([4, 2]), 4).int())

# %% [markdown] en="ecbbfb15fbc3"
# ## 在 softmax 内部做掩码，以及整行被掩盖的情况
#
# 被掩盖的键，权重必须恰好为 0。标准做法是在 softmax 之前把它的分数换成 −∞（e^−∞ = 0）。也有代码库改用很大的有限数：alphafold-decoded 课程用 −1e8，AlphaFold2 自己的代码用 −1e9。这有区别吗？看下面三个查询：查询 0 能看到两个键，查询 1 **一个键也**看不到（可以想象成填充位置在提问），查询 2 能看到一个键。

# %% en="0ff282458ffd"
scores = torch.tensor([[1.0, 2.0, 0.5],
                       [1.0, 2.0, 0.5],
                       [1.0, 2.0, 0.5]], dtype=torch.float64)
mask = torch.tensor([[True, True, False],
                     [False, False, False],
                     [False, True, False]])

print("fill -1e8:\n", torch.softmax(scores.masked_fill(~mask, -1e8), dim=-1))
print("fill -inf:\n", torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1))

# %% [markdown] en="547e4d58034d"
# 能看到键的行，两种填入值结果一致。“失明”的那一行则不一致，而且两种结果都不好：
#
# - 用 −1e8 填入时，这一行的分数全都相同（−1e8），softmax **在被掩盖的键上均匀分布**：这个什么也看不到的位置悄悄地对它本不该看的键的值求了平均；
# - 用 −∞ 填入时，这一行得到 (−∞) − (−∞) = NaN，而一个 NaN 会扩散到之后的每一层。
#
# 在半精度下，用有限数填入也没有看上去那么安全：float16 存不下 −1e8。

# %% en="7e3e199bc1e9"
print("-1e8 in float16:", torch.tensor(-1e8).half().item(), "  float16 min:", torch.finfo(torch.float16).min)

# %% [markdown] en="baed67c46e8a"
# **我们的选择：**用 −∞ 做掩码；看不到任何键的查询，整行权重都取 0，输出也就是 0。零是诚实的（这个位置没有收到任何信息），不会泄露填充的内容，也不带 NaN。当前版本的 PyTorch 自己的 `scaled_dot_product_attention` 也是这样选的，本课末尾会验证。另一种常见做法是让失明的行随便算出某个有限值，再靠损失函数忽略填充位置；AlphaFold2 的 −1e9 就是这样。
#
# ## 练习：先算注意力权重，再算注意力
#
# 在 `exercises/attention.py` 中写出：
#
# - `attention_weights(q, k, bias=None, mask=None)`：缩放后的分数（你在第 01 课写的函数）加上偏置，做掩码，再沿键做 softmax；整行被掩盖时给出零；
# - `scaled_dot_product_attention(q, k, v, bias=None, mask=None)`：权重乘以 v。
#
# 偏置原样加到缩放后的分数上（不除以 √c）：它是每个（查询，键）对的先验，例如相对位置项，或 AlphaFold 的 pair bias（第 04 课）。

# %% tags=["check"] en="457eeb647938"
from course.checks.lesson02 import check_attention_weights
from exercises.attention import attention_weights

check_attention_weights(attention_weights)

# %% tags=["check"] en="fb4d296ecb9e"
from course.checks.lesson02 import check_attention_forward
from exercises.attention import scaled_dot_product_attention

check_attention_forward(scaled_dot_product_attention)

# %% [markdown] en="602c0b15c715"
# ## 看看权重
#
# 玩具句子有五个词元，嵌入是随机的（固定种子），没有可学习的投影：q = k = x。左图不加掩码：每个词元最关注自己（q·q 很大）。中图加因果掩码：第 i 行只把权重分给词元 0..i。右图的句子只有 3 个真实词元，填充到 5 个，填充的键和填充的查询都被掩盖（`real & real.T`）：第 3、4 列没有权重，第 3、4 行什么也看不到，全为零。

# %% en="56e77233f87a"
tokens = ["the", "cat", "sat", "<pad>", "<pad>"]
generator = torch.Generator().manual_seed(2)
x = torch.randn(5, 8, generator=generator, dtype=torch.float64)

plain = attention_weights(x, x)
causal = attention_weights(x, x, mask=causal_mask(5))
real = padding_mask(torch.tensor([3]), 5)[0]            # (1, 5)：真实的键
padded = attention_weights(x, x, mask=real & real.T)    # (5, 5)：真实的查询与真实的键
fig = heatmaps([plain, causal, padded], [_("no mask"), _("causal mask"), _("padding (3 real)")],
               row_labels=tokens, col_labels=tokens)
plt.show()
# 四舍五入：写法不同的正确代码可能在最后一位上与 1 有出入
print("row sums:", causal.sum(-1).round(decimals=4), padded.sum(-1).round(decimals=4))

# %% [markdown] en="6d5a4eb7bd46"
# ## 小部件：掩码与整行被掩盖
#
# 玩具句子与上面类似（六个词元，q = k = x，固定种子；掩码用的是课程自己的代码，不是你的）。本节的每个选择都有对应的控件：因果掩码、真实词元的个数、填充的查询是否也被掩盖，以及被掩盖的分数填入什么值。勾选“填充的查询什么也看不到”，造出失明的行，再切换填入值：能看到键的行始终不变，失明的行则变成全零、均匀分布或 NaN。

# %% tags=["nbval-ignore-output"] en="f1d8ddefb300"
from course.widgets.lesson02 import mask_explorer

mask_explorer()

# %% [markdown] en="3f73765f7ab2"
# ## 与 PyTorch 的答案相同
#
# `torch.nn.functional.scaled_dot_product_attention` 用融合的、省内存的内核计算同一个函数，生产代码调用的就是它。它的 `attn_mask` 可以是布尔掩码（True 表示可以关注，与我们的约定相同），也可以是*加到*分数上的浮点张量（相当于我们的偏置）。在带两个前导轴的批量上比较：

# %% en="a1ee63d71d78"
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

# %% [markdown] en="ee654dec8bd2"
# 再看整行被掩盖的情况：PyTorch（本课程固定的版本）同样返回零。

# %% en="44782b4f6114"
blind = torch.tensor([[True, True, False, False, False, False, False],
                      [False] * 7] + [[True] * 7] * 4)
ours = scaled_dot_product_attention(q, k, v, mask=blind)
theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=blind)
print("torch, blind query:", theirs[0, 0, 1])
print("equal to 1e-12:", torch.allclose(ours, theirs, rtol=0, atol=1e-12))

# %% [markdown] en="22251121dde3"
# ## 模块：单头注意力
#
# 前面的 q、k、v 都是直接给定的。在网络中，它们是**同一个输入 x 的可学习投影**，x 的形状为 `(*, L, c_in)`：
#
# q = x W_q，k = x W_k，v = x W_v（各自 c_in → c），接着做注意力，再经过输出投影 W_o（c → c_in），结果才能加回 x。
#
# 在 `exercises/attention.py` 中写出 `SingleHeadAttention(c_in, c)`，参数名为 `linear_q`、`linear_k`、`linear_v`（`nn.Linear(c_in, c, bias=False)`）和 `linear_o`（`nn.Linear(c, c_in)`，带偏置）。检查按参数名把固定的权重复制进你的模块，所以名字不能改。Q、K、V 为什么不带偏置，留到第 03 课讨论。

# %% tags=["check"] en="c0e53f907596"
from course.checks.lesson02 import check_single_head
from exercises.attention import SingleHeadAttention

check_single_head(SingleHeadAttention)

# %% en="ec3cd5fda4da"
torch.manual_seed(0)
layer = SingleHeadAttention(c_in=16, c=8)
x = torch.randn(2, 5, 16)
print("input ", tuple(x.shape), "-> output", tuple(layer(x, mask=causal_mask(5)).shape))
print("parameters:", {name: tuple(p.shape) for name, p in layer.named_parameters()})
print("total:", sum(p.numel() for p in layer.parameters()))

# %% [markdown] en="b511ce39ca4a"
# c_in = 16、c = 8 时：三个 16×8 的投影（384），8×16 的输出权重（128）及其 16 个偏置，共 528 个参数。
#
# ## 自测
#
# 1. 分数的形状为 (2, 3, 6, 7)。什么形状的偏置能与它广播？(3, 6, 7) 可以吗？(2, 6, 7) 呢？
# 2. 偏置为什么必须在 softmax 之前加，而不是在之后加到权重上？
# 3. 一个批量里有长度为 5 和 2 的两条序列，都填充到 5。在形状为 (2, 1, 5) 的填充掩码下，第二条序列有几个查询至少能看到一个键？
# 4. 因果掩码的对角线为什么是 True？
#
# <details><summary>答案</summary>
#
# 1. 形状从右往左对齐。(3, 6, 7) 可以广播（被视为 (1, 3, 6, 7)）。(2, 6, 7) 不行：它会对齐成 (1, 2, 6, 7)，而头的轴上 2 ≠ 3。批量轴为 2 的偏置必须写成 (2, 1, 6, 7)。第 04 课讲的正是这件事。
# 2. 在 softmax 之后加，权重之和就不再是 1，−∞ 的偏置也去不掉任何键。在 softmax 之前加，偏置改变的是键与键之间的竞争。
# 3. 全部 5 个：键掩码对每个查询都隐藏了键 2、3、4，但每个查询仍能看到键 0 和 1。只有同时掩盖查询（如上面的热力图）时，填充的行才会失明。
# 4. 位置 i 可以用自己的词元预测词元 i + 1；要隐藏的只是*之后的*词元。
# </details>
#
# ## 小结
#
# - `scaled_dot_product_attention` 就是：对 q kᵀ/√c 加上偏置、做掩码，沿键做 softmax，再乘以 v；前导批量轴有多少个都可以。
# - 掩码是布尔值，True 表示可以关注。被掩盖的分数变成 −∞；看不到任何键的查询得到全零的权重（我们的选择，这里 PyTorch 的 SDPA 也一样），既不是 NaN，也不是对本不该看的键悄悄求平均（−1e8 的结果）。
# - 你的函数与 PyTorch 融合实现的 `scaled_dot_product_attention` 在 float64 下相差不到 1e-12。
# - 下一课：[第 03 课，多头注意力](03_multi_head.ipynb)。
