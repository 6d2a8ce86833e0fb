# %% [markdown] en="ccebd0849872"
# # 第 02 课：单头注意力
#
# **先修要求：**第 01 课的 `stable_softmax` 和 `scaled_scores`（`exercises/softmax.py`）：你的注意力会调用它们。
#
# **本课你将**
# - 把第 01 课的零件组装成 `scaled_dot_product_attention(q, k, v, bias, mask)`，它适用于任意数量的前导批量轴；
# - 构造因果掩码和填充掩码，并决定一个*一个键也*看不到的查询应该得到什么；
# - 比较用 −1e8、−inf 和零做掩码的效果，包括在 float16 下，并在一个小部件里尝试掩码与填充值的每一种组合；
# - 把你的函数与 PyTorch 的 `torch.nn.functional.scaled_dot_product_attention` 对照检查；
# - 把它包装成一个带可学习投影的模块：`SingleHeadAttention`。

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
# 在第 01 课里，一个查询面对几个键。在模型中，序列的每个位置都是一个查询，而且我们一次处理许多序列（在第 04 课还有许多头和许多 MSA 行）。所以输入带有前导批量轴 `*`：
#
# | 张量 | 形状 | 含义 |
# |---|---|---|
# | q | `(*, q, c)` | q 个宽度为 c 的查询 |
# | k | `(*, k, c)` | k 个键，宽度与查询相同 |
# | v | `(*, k, c_v)` | 每个键一个值；它的宽度可以不同 |
# | scores, weights | `(*, q, k)` | 每个（查询，键）对一个数 |
# | bias, mask | 可广播到 `(*, q, k)` | 加到打分上 / 过滤打分 |
# | output | `(*, q, c_v)` | 每个查询一个混合后的值 |
#
# `q @ k.transpose(-2, -1)` 把最后两个轴当作矩阵相乘，把前面的每个轴都当作批量轴，所以第 01 课的代码已经能处理 `*`。

# %% [markdown] en="cb0ead8f0332"
# ## 掩码：一个查询可以看到哪些键
#
# 掩码是一个布尔张量，**在查询可以关注该键的位置为 True**（与 PyTorch 的 `scaled_dot_product_attention` 约定相同）。两种掩码覆盖了大多数用途：
#
# - **因果掩码**：在预测下一个词元的语言模型中，位置 i 只能看位置 j ≤ i。这是一个 (n, n) 的下三角矩阵，包含对角线。
# - **填充掩码**：长度不同的序列被填充到同一长度，才能组成一个批量。任何查询都不能关注填充的键。对长度 (B,)，掩码形状为 (B, 1, max_len)：大小为 1 的轴代表"每一个查询"，所以它能与打分 (B, q, k) 广播。
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
# 被掩盖的键的权重必须恰好为 0。标准做法：在 softmax 之前，把它的打分换成 −∞（e^−∞ = 0）。有些代码库改用一个很大的有限数：alphafold-decoded 课程用 −1e8，AlphaFold2 自己的代码用 −1e9。这有区别吗？看下面三个查询：查询 0 能看到两个键，查询 1 **一个也**看不到（想象一个填充位置在提问），查询 2 能看到一个。

# %% en="0ff282458ffd"
scores = torch.tensor([[1.0, 2.0, 0.5],
                       [1.0, 2.0, 0.5],
                       [1.0, 2.0, 0.5]], dtype=torch.float64)
mask = torch.tensor([[True, True, False],
                     [False, False, False],
                     [False, True, False]])

print("fill -1e8:\n", torch.softmax(scores.masked_fill(~mask, -1e8), dim=-1))
print("fill -inf:\n", torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1))

# %% [markdown] en="392948c28739"
# 对能看到东西的行，两种填充方式结果一致。对"失明"的那一行，两者不一致，而且都不好：
#
# - 用 −1e8 时，这一行的每个打分都相同（−1e8），所以 softmax **在被掩盖的键上均匀分布**：这个填充位置悄悄地对填充内容求了平均；
# - 用 −∞ 时，这一行变成 (−∞) − (−∞) = NaN，而一个 NaN 会扩散到之后的每一层。
#
# 而且在半精度下，有限数填充并不像看起来那么安全：float16 存不下 −1e8。

# %% en="7e3e199bc1e9"
print("-1e8 in float16:", torch.tensor(-1e8).half().item(), "  float16 min:", torch.finfo(torch.float16).min)

# %% [markdown] en="baed67c46e8a"
# **我们的选择：**用 −∞ 做掩码，并让一个一个键也看不到的查询得到**一行全零的权重**，因而输出为零。零是诚实的（这个位置没有收到任何信息），它不会泄露填充的内容，也不带 NaN。在这个版本中，PyTorch 自己的 `scaled_dot_product_attention` 也做了同样的选择，本课末尾会检验这一点。另一种常见做法是让失明的行算出任意有限值，依靠损失函数忽略填充位置；AlphaFold2 的 −1e9 就是这样做的。
#
# ## 练习：先算注意力权重，再算注意力
#
# 在 `exercises/attention.py` 中写出：
#
# - `attention_weights(q, k, bias=None, mask=None)`：缩放后的打分（你在第 01 课写的函数），加上偏置，做掩码，然后沿键做 softmax；整行被掩盖时给出零；
# - `scaled_dot_product_attention(q, k, v, bias=None, mask=None)`：权重乘以 v。
#
# 偏置原样加到缩放后的打分上（不除以 √c）：它是对每个（查询，键）对的先验，比如相对位置项或 AlphaFold 的 pair bias（第 04 课）。

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
# 一个五个词元的玩具句子，随机嵌入（固定种子），没有可学习的投影：q = k = x。左图没有掩码：每个词元最关注它自己（q·q 很大）。中图是因果掩码：第 i 行只把权重分给词元 0..i。右图中句子有 3 个真实词元，填充到 5 个，我们同时掩盖填充的键和填充的查询（`real & real.T`）：第 3、4 列没有权重，第 3、4 行什么也看不到，全为零。

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
# 一个和上面类似的玩具句子（六个词元，q = k = x，固定种子；掩码用的是课程自己的代码，不是你的），本节的每一个选择都对应一个控件：因果掩码、有几个真实词元、填充的查询是否也被掩盖，以及被掩盖的打分填入什么值。勾选"填充的查询什么也看不到"来制造失明的行，再切换填入值：能看到东西的行始终不变，失明的行则变成全零、一行均匀分布或 NaN。

# %% tags=["nbval-ignore-output"] en="f1d8ddefb300"
from course.widgets.lesson02 import mask_explorer

mask_explorer()

# %% [markdown] en="3f73765f7ab2"
# ## 与 PyTorch 的答案相同
#
# `torch.nn.functional.scaled_dot_product_attention` 用融合的、节省内存的内核计算同一个函数；生产代码调用的就是它。它的 `attn_mask` 既可以是布尔掩码（True = 可以关注，与我们的相同），也可以是一个*加到*打分上的浮点张量（我们的偏置）。在一个带两个前导轴的批量上比较：

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
# 再看整行被掩盖的情况：PyTorch（在本课程固定的版本中）也返回零。

# %% en="44782b4f6114"
blind = torch.tensor([[True, True, False, False, False, False, False],
                      [False] * 7] + [[True] * 7] * 4)
ours = scaled_dot_product_attention(q, k, v, mask=blind)
theirs = F.scaled_dot_product_attention(q, k, v, attn_mask=blind)
print("torch, blind query:", theirs[0, 0, 1])
print("equal to 1e-12:", torch.allclose(ours, theirs, rtol=0, atol=1e-12))

# %% [markdown] en="22251121dde3"
# ## 一个模块：单头注意力
#
# 到目前为止，q、k 和 v 都是给定的。在网络中，它们是**同一个输入 x 的可学习投影**，x 的形状为 `(*, L, c_in)`：
#
# q = x W_q，k = x W_k，v = x W_v（各自 c_in → c），然后做注意力，再用输出投影 W_o（c → c_in），使结果能加回 x。
#
# 在 `exercises/attention.py` 中写出 `SingleHeadAttention(c_in, c)`，参数名为 `linear_q`、`linear_k`、`linear_v`（`nn.Linear(c_in, c, bias=False)`）和 `linear_o`（`nn.Linear(c, c_in)`，带偏置）。检查会按参数名把固定的权重复制到你的模块中，所以名字很重要。为什么 Q、K、V 不带偏置，是第 03 课的问题。

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

# %% [markdown] en="356a3c06f0c0"
# c_in = 16、c = 8 时：三个 16×8 的投影（384），一个 8×16 的输出权重（128）和它的 16 个偏置：共 528 个参数。
#
# ## 自测
#
# 1. 你的打分形状为 (2, 3, 6, 7)。什么形状的偏置能与它广播？(3, 6, 7) 可以吗？(2, 6, 7) 呢？
# 2. 为什么偏置必须在 softmax 之前加上，而不是在之后加到权重上？
# 3. 一个批量里有长度为 5 和 2 的序列，填充到 5。在形状为 (2, 1, 5) 的填充掩码下，第二条序列有多少个查询至少能看到一个键？
# 4. 为什么因果掩码的对角线是 True？
#
# <details><summary>答案</summary>
#
# 1. 形状从右往左对齐。(3, 6, 7) 可以广播（它被读作 (1, 3, 6, 7)）。(2, 6, 7) 不行：它会被对齐为 (1, 2, 6, 7)，而在头的轴上 2 ≠ 3。批量轴为 2 的偏置必须是 (2, 1, 6, 7)。第 04 课讲的正是这件事。
# 2. 在 softmax 之后加，权重之和就不再是 1，而且 −∞ 的偏置也无法去掉一个键。在 softmax 之前加，偏置改变的是键之间的竞争。
# 3. 全部 5 个：键掩码对每个查询都隐藏了键 2、3、4，但每个查询仍能看到键 0 和 1。只有同时掩盖查询（如我们的热力图那样）时，填充的行才会失明。
# 4. 位置 i 可以用它自己的词元来预测词元 i + 1；被隐藏的只是*之后的*词元。
# </details>
#
# ## 小结
#
# - `scaled_dot_product_attention` = 对（q kᵀ/√c + 偏置，再做掩码）沿键做 softmax，再乘以 v，适用于任意前导批量轴。
# - 掩码是布尔值，True = 可以关注。被掩盖的打分变成 −∞；一个看不到任何键的查询得到零权重（我们的选择，这里 PyTorch 的 SDPA 也是如此），既不是 NaN，也不是对填充的悄悄平均（−1e8 给出的结果）。
# - 你的函数与 PyTorch 融合的 `scaled_dot_product_attention` 在 float64 精度下相等。
# - 下一课：[第 03 课，多头注意力](03_multi_head.ipynb)。
