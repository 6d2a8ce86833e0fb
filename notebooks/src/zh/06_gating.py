# %% [markdown] en="1488a522c314"
# # 第 06 课：门控，以及完整的 AlphaFold2 注意力模块
#
# **先修要求：**第 03–05 课：你在第 03 课写的 `MultiHeadAttention`，加上第 05 课的 `masked_mean` 和 `is_global`（完整模块的检查也会运行全局注意力）。
#
# **没有 AlphaFold2 背景？**请读第 1、2、6 节（门、门与注意力权重、其他的门）：第 08 课的论文以它们为基础，而练习 1 只需要你在第 03 课写的模块。练习 2（完整的 AlphaFold2 模块）和第 3–5 节以第 04–05 课为基础，可以跳过。
#
# AlphaFold2 的 Evoformer 中，每个注意力模块的结尾都一样：在输出投影之前，把注意力输出逐通道地乘上一个 sigmoid“门”，门由模块的输入算出。本课给你的 `MultiHeadAttention` 加上这个门，它就有了 AF2 的全部开关（`attn_dim`、`gated`、`is_global`、注意力偏置和填充掩码），外加一个 `use_bias_for_embeddings`，供确实给 Q、K、V 加偏置的模型使用。
#
# **本课你将**
# - 手算门控 `sigmoid(linear_g(x)) * o`，弄清门为什么由 x 而不是由 o 算出；
# - 了解 AF2 怎样初始化门（权重 0，偏置 1：每个门都从 sigmoid(1) = 0.73 开始）；
# - 借助小部件分清门（作用于通道轴，不归一化）和注意力权重（作用于键轴，softmax）；
# - 给你的模块加上门，并检查整个模块，包括全局注意力；
# - 再统计一次参数（20,608 对 13,440，这次直接来自带门控的模块），并把带 pair bias 的模块画成图。

# %% en="e5c138b0f748"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

# %% en="3d579536c275"

import torch
from torch import nn

from course.i18n import _  # 打印的文字使用笔记本的语言

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="7ba5fc73b36a"
# ## 1. 门
#
# 各头合并之后，注意力输出 o 的形状为 (*, L, N_head · c)。门是对**输入** x 的又一个投影，经 sigmoid 压缩后，逐元素乘到 o 上：
#
# ```python
# # __init__（只在 gated=True 时）
# self.linear_g = nn.Linear(c_in, N_head * c)          # 带偏置
# # forward：在注意力和合并各头之后、linear_o 之前
# g = torch.sigmoid(self.linear_g(x))                  # (*, L, N_head*c)，每个值都在 (0, 1) 内
# o = g * o
# out = self.linear_o(o)
# ```
#
# 门是与注意力并行的分支：两者都读取 x，在乘法处汇合。（在 AF2 中，x 是注意力块经过层归一化的输入。）由 o 算出的门只能看到注意力已经收集到的东西；由 x 算出的门，则让每个词元按自己的特征，逐通道决定保留多少注意力送来的内容。
#
# 手算一个三通道的例子：o = [1.2, −0.5, 2.0]，门的 logit 为 [−8, 0, 3]。

# %% en="d4a32d9cd89e"
o = torch.tensor([1.2, -0.5, 2.0], dtype=torch.float64)
logits = torch.tensor([-8.0, 0.0, 3.0], dtype=torch.float64)
g = torch.sigmoid(logits)
print(_("sigmoid(logits) ="), [f"{value:.6f}" for value in g.tolist()])
print("g * o           =", [f"{value:.6f}" for value in (g * o).tolist()])

# %% [markdown] en="1b40b857ac22"
# 通道 1 被关闭（0.000335 × 1.2 ≈ 0.0004），通道 2 通过一半（−0.25），通道 3 几乎全部通过（1.905）。三个门的总和不受任何约束：每个通道各有各的阀门。
#
# ### AlphaFold2 怎样初始化门
#
# AF2 用**权重 0、偏置 1** 初始化 `linear_g`。于是训练开始时，无论 x 是什么，每个词元、每个通道的门都是 sigmoid(1) = 0.73：注意力输出基本畅通，梯度也能到达两条分支（∂(g·o)/∂o = g = 0.73；∂(g·o)/∂logit = g(1 − g)·o = 0.197·o）。你也许在别处读到门“从 0.5 开始”：那是 PyTorch 默认初始化（小的随机权重，偏置接近 0）平均给出的值，并不是 AF2 的选择。

# %% en="abe76915a6e0"
x = torch.randn(6, 16, generator=torch.Generator().manual_seed(0))
af2_gate = nn.Linear(16, 8)
with torch.no_grad():
    af2_gate.weight.zero_()
    af2_gate.bias.fill_(1.0)
torch.manual_seed(0)
default_gate = nn.Linear(16, 8)
sigmoid_1 = torch.sigmoid(torch.tensor(1.0)).item()
print(f"sigmoid(1) = {sigmoid_1:.4f};  its slope sigmoid(1) * (1 - sigmoid(1)) = "
      f"{sigmoid_1 * (1 - sigmoid_1):.3f}")
with torch.no_grad():
    for label, layer in [("AF2 init (weight 0, bias 1)", af2_gate), ("PyTorch default init", default_gate)]:
        gates = torch.sigmoid(layer(x))
        print(f"{label:<28} gates: mean {gates.mean():.3f}, min {gates.min():.3f}, max {gates.max():.3f}")

# %% [markdown] en="e93639c7fd86"
# ## 2. 门与注意力权重
#
# 两者都是介于 0 和 1 之间、用来相乘的数，很容易混淆。
#
# | | 注意力权重 a | 门 g |
# |---|---|---|
# | 作用于 | **键**轴：读取哪些位置 | **通道**轴：每个特征保留多少 |
# | 归一化方式 | softmax：每个查询的一行之和为 1 | 不归一化：每个通道各自做 sigmoid |
# | 形状（单个头 / 合并后） | (*, N_head, L, L) | (*, L, N_head · c) |
# | 决定 | 从哪里取 | 取来的东西放行多少 |
# | 打个比方 | 从图书馆的哪些书架上取书 | 每本取来的书读多少：调音台上的推子 |
#
# 用固定种子的玩具例子看看数字（5 个词元，4 个通道，每个门都取 AF2 的初始值 0.73）：

# %% en="a40b1dd7a056"
from course.widgets.lesson06 import gate_demo

toy = gate_demo([1.0, 1.0, 1.0, 1.0])
print(_("attention weights: each row sums to"), toy["weights"].sum(dim=-1))
print(_("gate:"), toy["gate"], " sums to", round(toy["gate"].sum().item(), 3))
other = gate_demo([-8.0, 0.0, 3.0, 1.0])
print(_("other gate logits, same attention weights:"), torch.equal(toy["weights"], other["weights"]))

# %% [markdown] en="28b7c4e46477"
# ### 小部件：每个通道的门 logit
#
# 调节某个通道的 logit。左边的注意力图始终不变；变化的是门的条形图和门控后的输出，而且一次变一整个通道。把 logit 推到 −8，这个通道就从输出中消失；推到 +8，它原样通过。

# %% tags=["nbval-ignore-output"] en="6cfa801b9218"
from course.widgets.lesson06 import gate_explorer

gate_explorer()

# %% [markdown] en="68a1e8ac1aa9"
# ## 练习 1：门
#
# 在 `exercises/mha.py` 的 `MultiHeadAttention` 中：
#
# 1. `__init__` 中，`gated` 为真时：创建 `self.linear_g = nn.Linear(c_in, N_head * c)`（带偏置），并像 AF2 那样初始化：权重 0，偏置 1（放在 `torch.no_grad()` 里做）。
# 2. `forward` 中，`self.gated` 为真时：在 `linear_o` 之前，把 o 乘以 `torch.sigmoid(self.linear_g(x))`；这里的 x 是 `movedim` 之后的输入（通道在最后）。
#
# 检查会先给门赋随机权重（这样带门与不带门的模块输出必然不同），再逐一排查几种常见错误：没有乘门、在 `linear_o` 之后才乘、漏了 sigmoid、由 o 算门、初始化不对。

# %% tags=["check"] en="bc8d04a7c49a"
from course.checks.lesson06 import check_gate
from exercises.mha import MultiHeadAttention

check_gate(MultiHeadAttention)

# %% [markdown] en="c2c4c2eb733d"
# ## 练习 2：完整的模块
#
# 有了门，你的模块就具备了 AF2 的所有选项。如果前面都写对了，这里不用再写新代码；这个检查运行 AlphaFold2 用到的各种组合：
#
# - 行注意力（`attn_dim=-2`），带 pair bias (N_head, R, R)、填充掩码和门（AF2 算法 7）；
# - 列注意力（`attn_dim=-3`），带掩码和门（算法 8）；
# - 带门控、带填充的全局列注意力（算法 19），每条序列必须得到自己的门；
# - `use_bias_for_embeddings=True`，以及正数的 `attn_dim`。
#
# 检查失败时，提示会指出是哪种组合；要改的地方通常在 `_global_attention` 里，或者在门对它的处理上。

# %% tags=["check"] en="f6e8c9c222ac"
from course.checks.lesson06 import check_full_module
from exercises.mha import MultiHeadAttention

check_full_module(MultiHeadAttention)

# %% [markdown] en="01fee1da6983"
# ## 3. 全局注意力中的门：因序列而异
#
# 第 05 课的全局注意力给一列中的每条序列同样的汇总值。门由每条序列自己的 x 算出，所以乘过门之后，各条序列就不同了。没有门时，它们完全相同：

# %% en="af7ac33bc925"
msa = torch.randn(4, 3, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
torch.manual_seed(3)
for gated in (False, True):
    module = MultiHeadAttention(8, 4, 2, attn_dim=-3, gated=gated, is_global=True).double()
    if gated:  # 随机的门权重，就像训练了一段时间之后（初始化时它们是 0）
        nn.init.normal_(module.linear_g.weight, std=0.5)
    with torch.no_grad():
        out = module(msa)  # (S=4, R=3, 8)
    spread = (out - out[:1]).abs().max().item()
    print(f"gated={gated!s:5}: largest difference between sequences of a column {spread:.3g}")


# %% [markdown] en="ce8037e12ddb"
# ## 4. 带门控模块的参数量
#
# AF2 的 extra MSA 堆栈：c_e = 64，8 个头，每头宽度 8，带门控；Q/K/V 不带偏置；不计 LayerNorm。第 05 课的门是手工加上的，现在它已是模块的一部分。

# %% en="8382dcedacc7"
from course.measure import n_parameters  # sum(p.numel() for p in module.parameters())

plain = MultiHeadAttention(64, 8, 8, attn_dim=-3, gated=True)
global_ = MultiHeadAttention(64, 8, 8, attn_dim=-3, gated=True, is_global=True)
print(f"plain gated column attention : {n_parameters(plain):,}")
print(f"global gated column attention: {n_parameters(global_):,}")
print(f"linear_g alone: {n_parameters(plain.linear_g):,} "
      f"(64 x 64 weights + 64 biases); ungated: {n_parameters(plain) - n_parameters(plain.linear_g):,}"
      f" and {n_parameters(global_) - n_parameters(global_.linear_g):,}")
wide = MultiHeadAttention(256, 32, 8, gated=True)  # AF2 的 MSA 行注意力：c_m = 256，8 x 32
print(f"c_in = 256, 8 heads of 32, gated: {n_parameters(wide):,} "
      f"(5 c_in² = {5 * 256**2:,}, plus biases)")


# %% [markdown] en="a2849354f6ed"
# 门大约增加 c_in² 个参数（多一个 c_in × N_head·c 的矩阵），宽度守恒的模块由此从约 4·c_in² 变成约 5·c_in²。
#
# ## 5. 带 pair bias 的模块，画成图
#
# 在 AF2 的行注意力（算法 7）中，pair 表征 z (R, R, c_z) 给每条序列的 R × R 分数加偏置。一个很薄的包装负责构造偏置，再交给你的模块：z → LayerNorm → 到 N_head 的 Linear（不带偏置）→ 把头的轴挪到前面：(N_head, R, R) → 为序列插入大小为 1 的轴：(1, N_head, R, R)，它能与分数 (S, N_head, R, R) 广播（第 04 课）。你的模块的 `forward` 要的正是这样一个已经能与分数广播的偏置。

# %% en="788b70e8c937"
class RowAttentionWithPairBias(nn.Module):
    """Gated MSA row attention whose scores get a bias from the pair representation z."""

    def __init__(self, c_m: int, c_z: int, c: int, N_head: int):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)
        self.attention = MultiHeadAttention(c_m, c, N_head, attn_dim=-2, gated=True)

    def forward(self, m, z):
        """m: (*, S, R, c_m); z: (*, R, R, c_z). returns (*, S, R, c_m)."""
        b = self.linear_z(self.layer_norm_z(z))  # (*, R, R, N_head)
        b = b.movedim(-1, -3)  # (*, N_head, R, R)
        b = b.unsqueeze(-4)  # (*, 1, N_head, R, R)：每条序列用同一个偏置
        return self.attention(m, bias=b)


torch.manual_seed(4)
row_attention = RowAttentionWithPairBias(c_m=16, c_z=6, c=3, N_head=4)
m_in = torch.randn(5, 7, 16)  # S=5 条序列，R=7 个残基，c_m=16
z_in = torch.randn(7, 7, 6)   # pair 表征，c_z=6
print(_("output:"), tuple(row_attention(m_in, z_in).shape))

# %% tags=["nbval-ignore-output"] en="a91a63373311"
from course.plots import show_model_graph

graph = show_model_graph(row_attention, [m_in, z_in], "RowAttentionWithPairBias")

# %% [markdown] en="2114b7e6e23b"
# 顺着两个输入看。z (7, 7, 6) 经过 `LayerNorm` 和到 4 个头的 `Linear`（7, 7, 4），再经 `movedim`（4, 7, 7）和 `unsqueeze`（1, 4, 7, 7）：这是偏置的路径。m (5, 7, 16) 经过三个投影、拆分头，得到缩放后的分数 (5, 4, 7, 7)；偏置在这里、在 softmax 之前加上（`add`）。门是从 m 出发的那个额外的 `Linear`（到 12 = 4 × 3 个通道），接着是 `sigmoid`，再与合并后的注意力输出做 `mul`，紧挨在最后一个 `Linear`（`linear_o`）之前。
#
# ## 6. 这个门与其他门的关系
#
# - 在 AlphaFold2 中，带门控的注意力模块是算法 7 和 8（MSA 行注意力和列注意力）、13 和 14（三角注意力）以及 19（全局列注意力）。算法 17（模板逐点注意力）不带门控。不变点注意力（算法 22）也没有输出门：它的每头权重 γ^h 缩放的是注意力 logit 内部的点距离项，那是另一回事。
# - 同样的模式，“某个投影的 sigmoid 乘以另一个信号”，也出现在 LSTM（3 个门）、GRU（2 个门）、highway 网络和 GLU 风格的前馈层中（SwiGLU 用 SiLU 代替普通的 sigmoid）。混合专家（MoE）的路由器是另一种门：它对各专家做 softmax（配合 top-k）来挑选专家，专家之间相互竞争，没被选中的专家根本不计算；AF2 的门则把一切都算出来，只做过滤。
# - 第 08 课讨论 2025 年的门控注意力论文：它把同类的门放在语言模型的注意力之后，第 08 课检验它的论断。
#
# ## 自测
#
# 1. 按 AF2 的初始化，x 全为零的词元，门是多少？其他 x 呢？
# 2. 同事把门写成 `torch.sigmoid(self.linear_g(o))`。c_in ≠ N_head·c 时为什么会出错？形状恰好一致时，又损失了什么？
# 3. 门能把注意力从一个键挪到另一个键上吗？
# 4. 检查为什么要在某个用例中把 `linear_v` 的权重置零？它能抓住什么错误？
# 5. 带门控的全局注意力中，哪一部分由一列的所有序列共享，哪一部分因序列而异？
# 6. c_in = 64、8 个头、每头宽度 8 的模块，门增加多少参数？
#
# <details><summary>答案</summary>
#
# 1. 都是 0.73：权重为 0 时，对任何 x 都有 linear_g(x) = bias = 1，所以处处是 sigmoid(1) = 0.73。只有训练改变了权重之后，门才开始依赖输入。
# 2. `linear_g` 要的是 c_in 个输入通道，o 却有 N_head·c 个，形状冲突。形状一致时能运行，但门只能依据同样的内容，重新缩放注意力已经取来的东西，不再由词元自己的特征决定放行什么。
# 3. 不能。门起作用之前，权重已经确定；门缩放的是输出的通道，发生在对键的混合之后。
# 4. v = 0 时注意力输出 o 为 0，所以无论门是多少，正确的模块都返回 `linear_o` 的偏置。如果门在 `linear_o` 之后才乘，就会乘到这个偏置上，于是露出马脚。
# 5. 共享的：平均后的查询和汇总值（对该列各条序列的权重乘以共享的值）。因序列而异的：门 sigmoid(linear_g(x_s))，因而最终输出也因序列而异。
# 6. 64 × 64 + 64 = 4,160（20,608 − 16,448）。
#
# </details>
#
# ## 小结
#
# - AF2 的门：o ← sigmoid(linear_g(x)) ⊙ o，由输入 x 算出，按词元和通道作用，位于合并各头之后、`linear_o` 之前；sigmoid([−8, 0, 3]) = [0.000335, 0.5, 0.953]。
# - AF2 的门从权重 0、偏置 1 开始：每个门都是 0.73，从第一步起就是打开的。
# - 注意力权重挑选键，每个查询之和为 1；门缩放通道，不做归一化。门永远不会改变注意力图。
# - 你的 `MultiHeadAttention` 现在具备 AF2 的所有选项；带门控时，作为普通列注意力有 20,608 个参数，作为全局列注意力有 13,440 个（c_e = 64，8 × 8）。
# - 下一课：[第 07 课，围绕注意力搭建的 Transformer](07_transformer.ipynb)：位置、归一化、残差，以及第 08 课的语言模型所用的解码器块。
