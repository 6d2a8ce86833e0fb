# %% [markdown] en="0409ab9df5de"
# # 第 04 课：注意力偏置与广播
#
# **先修要求：**第 02 课的 `scaled_dot_product_attention` 和第 03 课的 `MultiHeadAttention`（`exercises/mha.py`）：本课给它们加上偏置。
#
# **没有 AlphaFold2 背景？**本课中关于 AlphaFold2 的部分可以跳过：*AlphaFold2 的 pair bias*（练习 `PairBias`）、*行注意力与列注意力*和*一个玩具 MSA*。第 05、06 课以它们为基础，第 07、08 课用不到它们。其余内容（偏置、掩码、ALiBi、T5、广播及其练习）人人适用。
#
# **本课你将**
# - 看看分数上的加性偏置起什么作用，并用滑块调节偏置；
# - 用代码构造各种偏置：填充掩码、ALiBi、T5 的分桶相对位置，以及 AlphaFold2 由 pair 表征 z 得到的 pair bias（练习）；
# - 把形状为 (B, N_head, R, R) 的偏置加到形状为 (B, S, N_head, R, R) 的分数上，推广到任意更高阶的分数（练习），并弄清大小为 1 的轴为什么必须插在中间，而不是最前面；
# - 用 `attn_dim` 让同一个 `MultiHeadAttention` 做行注意力或列注意力；
# - 在玩具 MSA 中找出两个位置之间的耦合：任何单条序列都看不出来。

# %% en="667b4cc6a5a9"
import course_setup  # noqa: F401

import matplotlib.pyplot as plt
import torch

from course.checks.inputs import fill_parameters
from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="9338b1da0003"
# ## 偏置从哪里进入
#
# 第 02 课的注意力函数已经有 `bias` 参数：它在 softmax 之前加到缩放后的分数上。
#
# weights = softmax(q kᵀ / √c **+ bias**)，沿键计算
#
# 内容匹配 q·k 衡量查询 i 与键 j 有多契合；偏置则给 (i, j) 这一对加上与内容无关的**先验**：“相邻的词元更重要”“这个键是填充”“AlphaFold 认为残基 i 和 j 相互接触”。内容定下基准，先验加分或减分，softmax 再把总分变成权重。
#
# 别把它与位置进入 Transformer 的另一条途径混为一谈：2017 年那篇论文的正弦位置编码（以及 GPT 的可学习位置嵌入）加在**输入** x 上，注意力只能透过内容间接看到位置。各种偏置则直接作用在**分数**上。
#
# 一个查询，四个键：给键 3 加上 +2 的偏置，权重就向它倾斜；权重之和仍然为 1，多出的部分由其他键让出。

# %% en="0b9b3085cbcf"
scores = torch.tensor([1.0, 0.5, 0.2, -0.3], dtype=torch.float64)
bias = torch.tensor([0.0, 0.0, 0.0, 2.0], dtype=torch.float64)
print(_("without bias:"), torch.softmax(scores, dim=-1))
print(_("with bias:   "), torch.softmax(scores + bias, dim=-1))

# %% [markdown] en="578c8e355371"
# 小部件在 5 × 5 的分数矩阵上做同样的事：选一个查询 i、一个键 j，再选加在这一对上的偏置 b。只有第 i 行会变。把 b 调到远低于零，键 j 就从第 i 行消失：掩码其实就是极大的负偏置。

# %% tags=["nbval-ignore-output"] en="13e89ff16f7b"
from course.widgets.lesson04 import pair_bias_explorer

pair_bias_explorer()

# %% [markdown] en="1671c604f828"
# ## 各种偏置
#
# 下面每种偏置都得到一个以 `(N_head, q, k)` 结尾的张量（这几个轴也可以是大小为 1 的轴），能直接加到分数 `(*, N_head, q, k)` 上。它们都在 `exercises/bias.py` 里；除了 pair bias 和广播辅助函数，其余都已写好。
#
# ### 作为偏置的填充掩码
#
# 第 02 课用布尔值做掩码。加性形式对真实的键取 0，对填充取巨大的负数（AlphaFold2 用 −1e9）：在浮点数中 e^(−1e9) 恰好为 0，被填充的键于是得不到权重。形状 `(B, 1, 1, L)` 在头和查询上广播。

# %% en="2c21022c89cc"
from exercises.attention import scaled_dot_product_attention
from exercises.bias import padding_bias

real = torch.tensor([[True, True, True, True, True],
                     [True, True, True, False, False]])  # 序列 1：3 个词元 + 2 个填充
pad_bias = padding_bias(real).double()
print(_("padding bias"), tuple(pad_bias.shape), "\n", pad_bias[:, 0, 0])

generator = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 4, 5, 8, generator=generator, dtype=torch.float64) for _ in range(3))
by_bias = scaled_dot_product_attention(q, k, v, bias=pad_bias)
by_mask = scaled_dot_product_attention(q, k, v, mask=real[:, None, None, :])
print(_("bias form == boolean mask:"), torch.allclose(by_bias, by_mask, rtol=0, atol=1e-12))

# %% [markdown] en="787c7be0f7bb"
# ### ALiBi：按距离施加的固定惩罚
#
# ALiBi（Press 等，2022）加上 −m_h·|i − j|：键越远，分数越低。每个头的斜率 m_h 不同，所以有的头看得远，有的只看附近。它完全没有参数；头数是 2 的幂时，斜率构成等比数列 2^(−8/N_head)、2^(−16/N_head)、……（8 个头时：1/2、1/4、……、1/256）。头数不是 2 的幂时，`alibi_slopes` 沿用作者代码的做法：设 n 为小于头数的最大 2 的幂，先取 n 个头的斜率，其余的从 2n 个头的斜率中隔一个取一个补齐（单元打印了 6 个头的情况）。ALiBi 是为因果语言模型设计的，那里只有 j ≤ i 才有意义。

# %% en="963f3072b5b2"
from exercises.bias import alibi_bias, alibi_slopes

print(_("slopes for 8 heads:"), alibi_slopes(8))
print(_("slopes for 6 heads:"), alibi_slopes(6))
alibi = alibi_bias(8, 8)  # (N_head, L, L)
print(_("ALiBi bias"), tuple(alibi.shape), "head 0, query 0:", alibi[0, 0])

fig, axes = plt.subplots(1, 3, figsize=(9, 2.8), layout="constrained")
for ax, head in zip(axes, (0, 3, 7)):  # 所有子图共用一个颜色刻度：斜率大的头看得近得多
    image = ax.imshow(alibi[head].numpy(), cmap="magma", vmin=alibi.min().item(), vmax=0.0)
    ax.set_title(_("head {head}: slope {slope:.4f}").format(head=head, slope=alibi_slopes(8)[head]),
                 fontsize=9)
    ax.set_xlabel(_("key j"))
    ax.set_ylabel(_("query i"))
fig.colorbar(image, ax=axes, shrink=0.8, label=_("bias"))
plt.show()

# %% [markdown] en="982335cead97"
# ### T5：每个头、每个距离桶一个可学习的标量
#
# T5（Raffel 等，2020，基于 Shaw 等，2018）把相对位置 j − i 分进若干**桶**，为每个桶、每个头学习一个数。近距离各占一个桶；远一些的距离共用桶，桶宽按对数增长；超过某个距离（默认 `max_distance=128` 时为 91）后，无论多远都归入最后一个桶。默认两个方向共 32 个桶：16 个给查询之后的键，16 个给其余的键。在“之前”那一半（j ≤ i）里，桶 0 到 7 就是精确的距离 0 到 7；在“之后”那一半里，距离 1 到 7 对应桶 17 到 23，而桶 16（查询之后、距离为 0）从不使用，因为 j − i = 0 已经归入前一半：

# %% en="018c41e9604a"
from exercises.bias import RelativePositionBias, relative_position_bucket

relative = torch.tensor([-300, -128, -100, -50, -20, -12, -8, -7, -1, 0, 1, 2, 7, 8, 20, 50, 128, 300])
buckets = relative_position_bucket(relative)
print(" j - i :", " ".join(f"{d:>4}" for d in relative.tolist()))
print(_("bucket :"), " ".join(f"{b:>4}" for b in buckets.tolist()))
distances = torch.arange(-150, 151)
all_buckets = relative_position_bucket(distances)
print(_("last bucket after the query starts at j - i ="), distances[all_buckets == 31].min().item(),
      "; before it at j - i =", distances[all_buckets == 15].max().item())
print(_("after the query, j - i = 1..7 -> buckets"), relative_position_bucket(torch.arange(1, 8)).tolist(),
      "; bucket 16 used for some j - i in -300..300:",
      bool((relative_position_bucket(torch.arange(-300, 301)) == 16).any()))

plt.figure(figsize=(7, 2.6))
plt.step(distances.numpy(), all_buckets.numpy(), where="mid")
plt.xlabel(_("relative position j − i"))
plt.ylabel(_("bucket"))
plt.title(_("T5 buckets: exact near 0, logarithmic further out, one last bucket from ±91 on"),
          fontsize=9)
plt.show()

# %% [markdown] en="429891e4dccc"
# 这个模块就是 `nn.Embedding(num_buckets, N_head)`：查出每一对所在的桶，再把头的轴挪到前面。它的大小与序列长度无关：

# %% en="568c06a2752e"
t5_bias = fill_parameters(RelativePositionBias(N_head=4), seed=1)
print(_("parameters:"), sum(p.numel() for p in t5_bias.parameters()), "= 32 buckets x 4 heads")
print(_("bias for L=6:"), tuple(t5_bias(6, 6).shape), "  for L=500:", tuple(t5_bias(500, 500).shape))
print(_("head 0, query 2, keys 0..5:"), t5_bias(6, 6)[0, 2].detach())

# %% [markdown] en="7113dec7b8b0"
# AlphaFold2 对残基用了同样的思路：残基编号之差 i − j 截断到 ±32，在 65 个区间上做 one-hot，经过一个 Linear 进入初始的 pair 表征 z（补充材料，算法 4，“relpos”）。但它没有止步于此，这就引出了最后一种偏置。
#
# ### AlphaFold2 的 pair bias
#
# AlphaFold2 为每一对残基保存一个有 c_z 个通道的可学习特征向量 z[i, j]（pair 表征）。MSA 上的行注意力从 z 读取偏置，每个块都重新计算（补充材料，算法 7）：
#
# 1. 在 z 的 c_z 个通道上做 LayerNorm；
# 2. **不带**偏置的 Linear c_z → N_head：每一对、每个头一个数；
# 3. 头的轴这时在最后，`(*, R, R, N_head)`，要挪到两个残基轴的前面：`(*, N_head, R, R)`，同时 i（查询）仍在 j（键）之前。
#
# 所以这个先验既不是固定的公式（ALiBi），也不是按距离查表（T5）：它由网络一路精炼的表征算出，梯度也经由它流回 z。
#
# **练习。**在 `exercises/bias.py` 中写出 `PairBias(c_z, N_head)`，参数名为 `layer_norm_z` 和 `linear_z`。
#
# 第 3 步的提示：`transpose(-1, -3)` 形状没错，却把 i 和 j 也交换了（头 h 拿到的是转置后的偏置）；`movedim(-1, -3)` 只挪动头的轴，其余轴的顺序保持不变。

# %% tags=["check"] en="c9311a36b1af"
from course.checks.lesson04 import check_pair_bias
from exercises.bias import PairBias

check_pair_bias(PairBias)

# %% en="1377be4b336b"
B, S, R, c_m, c_z, N_head = 2, 4, 5, 16, 8, 8
generator = torch.Generator().manual_seed(2)
z = torch.randn(B, R, R, c_z, generator=generator, dtype=torch.float64)
pair_bias = fill_parameters(PairBias(c_z, N_head), seed=3)(z)
print("z", tuple(z.shape), "-> pair bias", tuple(pair_bias.shape), "  (B, N_head, R, R)")

# %% [markdown] en="e382ea23d737"
# ## 广播：轴比分数少的偏置
#
# 行注意力在 MSA m（形状 `(B, S, R, c_m)`：B 个蛋白质，每个 S 条序列，R 个残基）的每条序列上运行，分数的形状为 `(B, S, N_head, R, R)`。pair bias 的形状是 `(B, N_head, R, R)`：**没有 S 轴**，因为比对中的每条序列都用同一个 pair 先验。
#
# PyTorch 广播时**从右往左**对齐形状，并拉伸大小为 1 的轴；缺少的轴当作大小为 1，补在**最前面**。把两个形状排在一起：
#
# ```
# scores     (B=2, S=4, N_head=8, R=5, R=5)
# bias as is       (2,        8,   5,   5)   -> 被视为 (1, 2, 8, 5, 5)：B 对上了 S！
# bias fixed       (2,   1,   8,   5,   5)   -> 这个 1 沿 S 拉伸：每个蛋白质一个偏置
# ```
#
# 修正的办法是在**偏置的批量轴与最后三个轴之间**插入大小为 1 的轴。如果插在最前面呢？`bias.unsqueeze(0)` 的形状是 (1, 2, 8, 5, 5)，这正是广播本来就会做的事，B 又对上了 S。B = 2、S = 4 时，会直接报错：

# %% en="2ce266687e1f"
scores = torch.randn(B, S, N_head, R, R, generator=generator, dtype=torch.float64)
try:
    scores + pair_bias.unsqueeze(0)
except RuntimeError as error:
    print(_("RuntimeError:"), error)

# %% [markdown] en="6cb1f1585428"
# 更糟的是，大小恰好相同时根本不报错。3 个蛋白质、每个 3 条序列时，插在最前面的写法照样能运行，可每个蛋白质的第 s 条序列悄悄拿到了**蛋白质 s** 的 pair bias，也就是别的蛋白质的偏置：

# %% en="dc74db9c4a01"
z3 = torch.randn(3, R, R, c_z, generator=generator, dtype=torch.float64)
bias3 = fill_parameters(PairBias(c_z, N_head), seed=3)(z3)  # (3, N_head, R, R)
scores3 = torch.randn(3, 3, N_head, R, R, generator=generator, dtype=torch.float64)
wrong = scores3 + bias3.unsqueeze(0)   # (1, 3, ...)：不报错
right = scores3 + bias3.unsqueeze(1)   # (3, 1, ...)
print(_("shapes:"), tuple(wrong.shape), tuple(right.shape))
print(_("same result:"), torch.equal(wrong, right))
print(_("protein 0, sequence 1 got the bias of protein 1:"),
      torch.allclose(wrong[0, 1] - scores3[0, 1], bias3[1], rtol=0, atol=1e-12))

# %% [markdown] en="583febfa1e28"
# ### 练习：缺几个轴都能处理
#
# 同一个模块要应对不同阶的分数：行注意力的分数 (B, S, N_head, R, R) 配偏置 (B, N_head, R, R)，需要一个大小为 1 的轴；语言模型的分数 (B, N_head, L, L) 配同阶的偏置，一个也不需要；ALiBi 的 (N_head, L, L) 根本没有批量轴，大小为 1 的轴只能放在最前面（中间没有可插的地方）。一般规则如下，其中 n = scores_ndim − bias.ndim：
#
# `(*batch, N_head, q, k)` → `(*batch, 1, …, 1 (n 个), N_head, q, k)`，其中 batch = `bias.shape[:-3]`。
#
# 在 `exercises/bias.py` 中写出 `broadcastable_bias(bias, scores_ndim)`（返回视图；同一文件中的 `add_bias` 要用到它）。

# %% tags=["check"] en="c7ce5ea7af30"
from course.checks.lesson04 import check_broadcastable_bias
from exercises.bias import add_bias, broadcastable_bias

check_broadcastable_bias(broadcastable_bias)

# %% en="198382d450c4"
for bias_shape, scores_shape in [((2, 8, 5, 5), (2, 4, 8, 5, 5)),   # 行注意力 + pair bias
                                 ((2, 8, 5, 5), (2, 8, 5, 5)),      # 阶相同：什么都不用做
                                 ((8, 5, 5), (2, 4, 8, 5, 5)),      # 没有批量轴（类似 ALiBi）
                                 ((2, 3, 8, 5, 5), (2, 3, 4, 6, 8, 5, 5))]:
    aligned = broadcastable_bias(torch.zeros(bias_shape), len(scores_shape))
    print(f"bias {str(bias_shape):<17} scores {str(scores_shape):<23} -> {tuple(aligned.shape)}")
print(_("add_bias == the explicit unsqueeze:"), torch.equal(add_bias(scores3, bias3), right))

# %% [markdown] en="99e8dd69e75d"
# ## 行注意力与列注意力：一个模块，`attn_dim`
#
# MSA 是一张表：S 行（相关蛋白质的序列，比如每个物种一条）乘 R 列（对齐后的残基位置）。注意力可以沿任一方向进行：
#
# - **行注意力**（`attn_dim=-2`，沿 R）：在一条序列内，位置 i 关注位置 j。分数为 R × R，S 行每行各算一次：`(B, S, N_head, R, R)`。
# - **列注意力**（`attn_dim=-3`，沿 S）：在一个位置上，序列 s 关注其他序列。分数为 S × S，R 列每列各算一次：`(B, R, N_head, S, S)`。
#
# 分数总是在同类事物之间配对：残基对残基，或者序列对序列。`MultiHeadAttention.forward` 第一步是 `x.movedim(attn_dim, -2)`：先把要做注意力的那一轴挪到“序列”轴的位置，运行与之前相同的代码，再挪回去。所以列注意力就是在转置后的表上、用同样的权重做行注意力：

# %% en="15a45a618386"
from exercises.mha import MultiHeadAttention

m = torch.randn(B, S, R, c_m, generator=generator, dtype=torch.float64)
row_attention = fill_parameters(MultiHeadAttention(c_m, c_m // N_head, N_head, attn_dim=-2), seed=4)
column_attention = fill_parameters(MultiHeadAttention(c_m, c_m // N_head, N_head, attn_dim=-3),
                                 seed=4)

by_columns = column_attention(m)
by_rows_of_transpose = row_attention(m.transpose(-3, -2)).transpose(-3, -2)
print(_("shapes:"), tuple(row_attention(m).shape), tuple(by_columns.shape))
print(_("column attention == row attention on the transposed MSA:"),
      torch.allclose(by_columns, by_rows_of_transpose, rtol=0, atol=1e-12))

# %% [markdown] en="e016568301ae"
# pair bias 加在行注意力上：分数是 `(B, S, N_head, R, R)`，偏置 `(B, N_head, R, R)` 要为 S 补一个大小为 1 的轴。传入对齐后的偏置，结果与逐条序列使用原始偏置完全相同：

# %% en="0fb52cc87c33"
with_pair_bias = row_attention(m, bias=broadcastable_bias(pair_bias, 5))
one_by_one = torch.stack([row_attention(m[:, s], bias=pair_bias) for s in range(S)], dim=1)
print(_("pair bias broadcast over S == sequence by sequence:"),
      torch.allclose(with_pair_bias, one_by_one, rtol=0, atol=1e-12))

# %% [markdown] en="272544fda794"
# 为什么不干脆把 S 并进批量轴 B？因为同一批量中的元素从不交换信息，这正是“批量”的含义。MSA 中的序列却必须交换信息，而列注意力正是它们直接交换信息的地方。改变 B 不会改变任何蛋白质的预测；改变 S（输入多少条相关序列）则会。
#
# ## 玩具 MSA：只有把所有行放在一起才看得出的耦合
#
# `data/toy_msa.fasta` 是虚构的比对，48 条序列 × 60 个位置（由 `scripts/make_toy_msa.py` 生成）。与原始笔记中的例子一样，其中有两个位置相互耦合：位置 37 是 L（亮氨酸）时，位置 54 必是 V（缬氨酸）；37 是 S（丝氨酸）时，54 必是 T（苏氨酸）。在真实蛋白质中，这种模式说明两个残基很可能在三维空间中相互接触：一处突变，另一处随之突变来补偿。位置 12 和 20 是诱饵：字母相同、比例相同，但各自独立打乱。

# %% en="6767ac926abb"
from course.widgets.lesson04 import column_mutual_information, one_hot_msa, read_fasta

names, sequences = read_fasta()
print(f"{len(sequences)} sequences x {len(sequences[0])} positions")
print(_("          pos 12  pos 20  pos 37  pos 54"))
for name, row in list(zip(names, sequences))[:6]:
    print(f"{name:<8}" + "".join(f"{row[p - 1]:>8}" for p in (12, 20, 37, 54)))

# %% [markdown] en="79067a91fbaf"
# **单条序列**在每个位置只给出一个字母：seq01 在 12 处是 S，20 处是 V，37 处是 L，54 处是 V。单看这一条，无从知道 37 和 54 是一对而 12 和 20 不是；两处都只是一对字母。统计需要样本，而一条序列只是一个样本：在单独一行上，任意两个位置之间的互信息都是零。
#
# **一次只看一列**也没用：位置 12 和 37 的字母计数完全相同，20 和 54 也是。

# %% en="363716b62574"
from collections import Counter

msa = one_hot_msa(sequences)  # (S, R, 20)
print(_("max mutual information from seq01 alone:"), column_mutual_information(msa[:1]).max().item())
for position in (12, 37, 20, 54):
    print(f"position {position}: {dict(sorted(Counter(row[position - 1] for row in sequences).items()))}")

# %% [markdown] en="7c4dad19917b"
# 把所有行放在一起看位置对，耦合就显露出来了：在全部 48 条序列上，数一数哪些字母同时出现。(37, 54) 上只出现 L+V 和 S+T；(12, 20) 上各种组合都有。互信息把这样一张表浓缩为每对位置一个数：完美的两字母耦合为 log 2 ≈ 0.693 nat，相互独立的列接近 0。

# %% en="ee5cf4a79803"
for first, second in ((37, 54), (12, 20)):
    pairs = Counter((row[first - 1], row[second - 1]) for row in sequences)
    print(f"positions ({first}, {second}):", dict(sorted(pairs.items())))

mi = column_mutual_information(msa)  # (R, R)，沿序列轴计算
order = mi.triu().flatten().argsort(descending=True)[:3]
for index in order.tolist():
    i, j = divmod(index, mi.shape[0])
    print(f"MI(position {i + 1}, position {j + 1}) = {mi[i, j].item():.3f} nats")
print(f"MI(position 12, position 20) = {mi[11, 19].item():.3f} nats   (log 2 = {torch.tensor(2.0).log().item():.3f})")

plt.figure(figsize=(4.2, 3.6))
R_msa = mi.shape[0]
plt.imshow(mi.numpy(), cmap="viridis", extent=(0.5, R_msa + 0.5, R_msa + 0.5, 0.5))
plt.colorbar(label=_("mutual information (nats)"))
plt.xlabel(_("position j"))
plt.ylabel(_("position i"))
plt.title(_("one bright pair: (37, 54)"), fontsize=9)
plt.show()

# %% [markdown] en="9d250c41ef93"
# 排在后面的几对得分低得多：它们是恰好落在同几条序列上的随机突变。序列越多，这种噪声越小，这也是 AlphaFold 在比对很深的蛋白质上表现更好的原因之一。
#
# 可以把 MSA 想象成一份问卷：每条序列是一张答卷，每个位置是一道题。我们要找的不是两张相像的答卷，而是在所有答卷上答案一起变化的两道题。问题关乎位置，证据却来自序列。
#
# 留意这个统计量是什么：`course/widgets/lesson04.py` 中的 `pair_frequencies` **沿序列轴**对两个位置 one-hot 列的外积求平均，得到每对位置 (i, j) 的一个特征，形状为 (R, R, 20, 20)。AlphaFold2 的“外积均值”（outer product mean）从可学习的特征算出同类的东西，写入 z，再经由 pair bias 回到行注意力。
#
# 哪种注意力能收集这样的统计？序列 1 的行注意力看不到任何其他序列：改变序列 2，序列 1 的行注意力输出纹丝不动。列注意力在每个位置上混合各条序列，所以序列 1 的输出会变：

# %% en="9c262c1a0e1f"
embed = fill_parameters(torch.nn.Linear(20, c_m), seed=5)
rows = embed(msa)[None]  # (1, S, R, c_m)：把玩具 MSA 当作一个批量元素
edited = msa.clone()
edited[1, 36] = 0.0
edited[1, 36, "ACDEFGHIKLMNPQRSTVWY".index("S")] = 1.0  # 序列 2，位置 37：L -> S
edited_rows = embed(edited)[None]
for name, attention in (("row", row_attention), ("column", column_attention)):
    change = (attention(edited_rows) - attention(rows))[0, 0].abs().max().item()
    print(f"{name:>6} attention: sequence 1's output changed by {change:.3g}")

# %% [markdown] en="7c04f9eb7d41"
# 所以这两个名字说的是注意力沿哪个轴进行，而不是发现了什么。两个**位置**（第 37 列和第 54 列）之间的耦合，是靠**沿序列方向**（即列的方向）的统计发现的；行注意力是使用者，通过 pair bias 读取结果（“读位置 54 时，留意一下位置 37”）。
#
# ## 自测
#
# 1. 分数 (B, S, N_head, R, R) = (2, 4, 8, 5, 5)，pair bias (2, 8, 5, 5)。`broadcastable_bias` 返回什么？`bias.unsqueeze(0)` 又错在哪里？
# 2. AlphaFold2 的三角注意力，分数为 (B, R, N_head, R, R)，来自 z 的偏置为 (B, N_head, R, R)。需要几个大小为 1 的轴，放在哪里？
# 3. 填充偏置对真实的键为什么必须取 0（而不是 1）？
# 4. T5 用 32 个桶（双向）、max_distance 为 128：j − i = 200 和 j − i = 1000 分别落在哪个桶？这样设计有什么好处？
# 5. 在玩具 MSA 中，为什么任何单条序列都显示不出位置 37 和 54 是耦合的？
#
# <details><summary>答案</summary>
#
# 1. 形状为 (2, 1, 8, 5, 5) 的视图。`unsqueeze(0)` 得到 (1, 2, 8, 5, 5)，让 B = 2 对上 S = 4，于是报错；B = S 时它照样运行，却把别的蛋白质的偏置交给了每条序列。
# 2. 一个，放在 B 之后：(B, 1, N_head, R, R)。阶的模式与行注意力相同；模块并不关心这些行来自哪个表征。
# 3. 偏置是*加*到分数上的：加 0，真实键的分数才保持不变。（乘性掩码才用 1。）
# 4. 两者都落在“之后”那一半的最后一个桶，即桶 31（从 91 开始）：此后的所有距离共用这个桶，所以一张固定的表就能应付任意长度，远处的键也一视同仁。
# 5. 一条序列在每个位置只给出一个字母，只是一个样本；耦合说的是字母在许多序列中怎样同时出现。只用一行算出的互信息对每一对位置都是 0；用 48 行算，(37, 54) 是 log 2，诱饵则接近 0。
#
# </details>

# %% en="4a1d5005a7ab"
print(_("answer 4:"), relative_position_bucket(torch.tensor([200, 1000])).tolist())

# %% [markdown] en="3389603c8a8e"
# ## 小结
#
# - 偏置是在 softmax 之前加到分数上的先验：填充掩码、ALiBi 的线性距离惩罚、T5 按桶学习的标量，以及 AlphaFold2 的 pair bias（由 z 经 LayerNorm → 不带偏置的 Linear 到 N_head → `movedim(-1, -3)` 算出）。
# - 广播从右往左对齐形状，缺少的轴补在最前面。带批量轴的偏置，大小为 1 的轴必须插在批量轴与 (N_head, q, k) **之间**：(B, N_head, R, R) → (B, 1, N_head, R, R)，对应 (B, S, N_head, R, R)。插在最前面，要么报错，要么悄悄把蛋白质弄混。
# - 行注意力和列注意力是同一个模块；`attn_dim` 选定轴（`movedim` 到 −2，算完再挪回）。行注意力的分数是每条序列 R × R，列注意力的分数是每个位置 S × S。
# - 位置之间的共变是跨序列的统计量：单看任何一行都看不出，把各行放在一起看则一目了然。这就是 AlphaFold 需要列注意力的原因；第 05 课会展示它的代价，以及全局注意力如何降低这一开销。
# - 下一课：[第 05 课，全局注意力](05_global_attention.ipynb)。
