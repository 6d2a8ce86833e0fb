# %% [markdown] en="5699c4a24bdf"
# # 第 03 课：多头注意力
#
# **先修要求：**第 02 课的 `scaled_dot_product_attention`（`exercises/attention.py`，以及它调用的第 01 课的函数）：你的 `MultiHeadAttention` 会为每个头调用它。
#
# **本课你将**
# - 把一个宽投影拆成 `N_head` 个头，再合并回来（`split_heads`、`merge_heads`），并看清 `view` 和 `transpose` 的顺序为什么重要；
# - 写出 `MultiHeadAttention`，第 05、06 课会扩展这个模块；
# - 用代码证明：一个联合投影等于 N 个独立的头；
# - 统计真实模块的参数：当 c = c_in / N_head 时，更多的头不增加任何开销；
# - 复制权重后与 `torch.nn.MultiheadAttention` 完全一致；
# - 看看 Q 和 K 上的偏置给分数加了哪些项，其中哪些被 softmax 抵消；
# - 画出模块的计算图，用小部件试验头的数量，并让同一个模块走 PyTorch 融合的 `scaled_dot_product_attention`。

# %% en="7cba29c2eb03"
import course_setup  # noqa: F401

import math

import torch
import torch.nn.functional as F
from torch import nn

from course.checks.inputs import fill_parameters
from course.measure import best_time, n_parameters

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="449e47fce4ad"
# ## 一个头，一个问题
#
# 单头（第 02 课）用一组权重 W_q、W_k 给每一对位置打分：只有一种“相关”的概念。一个蛋白质或一个句子同时包含许多关系：哪些残基在空间上靠近，哪些位于同一条链上，哪个词是哪个动词的主语。一个头必须把所有这些关系挤进每对位置的一个分数里，于是学到的是一个模糊的折中。
#
# **多头注意力**并排运行 N_head 个注意力，每个在自己宽度为 c 的子空间中，各有自己的查询、键和值，最后把它们的结果混合起来：
#
# | 步骤 | 形状 |
# |---|---|
# | 输入 x | `(*, L, c_in)` |
# | q, k, v = linear_q(x), linear_k(x), linear_v(x)：各**一个** Linear，c_in → N_head·c | `(*, L, N_head·c)` |
# | 拆成多个头 | `(*, N_head, L, c)` |
# | 每个头的分数 q kᵀ / √c（+ 偏置），沿键做 softmax | `(*, N_head, L, L)`：N_head 个分数矩阵 |
# | weights @ v | `(*, N_head, L, c)` |
# | 合并：把各个头拼接起来 | `(*, L, N_head·c)` |
# | linear_o：N_head·c → c_in，带偏置 | `(*, L, c_in)` |
#
# 头的轴紧挨在 (L, c) 之前，所以第 02 课把所有前导轴都当作批量轴的 `scaled_dot_product_attention`，不用循环就能一次算完所有头。

# %% [markdown] en="1d655598da96"
# ## 练习 1：拆分与合并头
#
# `split_heads(x, N_head)` 把 `(*, L, N_head·c)` 变成 `(*, N_head, L, c)`，**头 h 拥有通道块 h·c … (h+1)·c − 1**。`merge_heads` 是它的逆运算。
#
# 诱人的一行写法 `x.view(*batch, N_head, L, c)` 形状对，内容错。`view` 从不移动数字；它只是用新的形状重新读取同一块内存。内存里先是位置 0 的所有通道，然后是位置 1 的所有通道，依此类推。把它读成 (N_head, L, c)，“头 0”就成了前 L·c 个数：是若干个完整的位置，而不是一个通道块。正确的做法是把最后一个轴读作 (N_head, c)——这些通道在内存中相邻，所以 `view` 可以做到——然后用 `transpose` 把头的轴换到 L 前面。
#
# 一个记录自身下标的张量能让这一点一目了然：L = 4 个位置，2 个宽度为 3 的头。第 10 个元素是位置 1 的通道 4，所以它属于头 1。

# %% en="be4d54b5b7dd"
L, N_head, c = 4, 2, 3
counting = torch.arange(L * N_head * c).view(L, N_head * c)
print("x (L, N_head*c):\n", counting)
print("\nwrong: view(N_head, L, c), head 0 =\n", counting.view(N_head, L, c)[0])
print("\nright: view(L, N_head, c).transpose(0, 1), head 0 =\n",
      counting.view(L, N_head, c).transpose(0, 1)[0])

# %% [markdown] en="89c58bb93f4a"
# 错误的版本里，“头 0”拿到了位置 0 和 1 的全部六个通道，被切成四个各含 3 个数的假位置，而且从未见到位置 2 和 3。正确的版本里，头 0 拿到全部 4 个位置的通道 0–2。
#
# 在 `exercises/mha.py` 中写出 `split_heads` 和 `merge_heads`（保留任意前导批量轴 `*`）。`merge_heads` 转置回来之后需要用 `reshape` 而不是 `view`：转置之后，同一位置的通道在内存中不再相邻。

# %% tags=["check"] en="4cb840947e4a"
from course.checks.lesson03 import check_split_heads
from exercises.mha import split_heads

check_split_heads(split_heads)

# %% tags=["check"] en="956d83b6c8d0"
from course.checks.lesson03 import check_merge_heads
from exercises.mha import merge_heads

check_merge_heads(merge_heads)

# %% [markdown] en="00c1d1e5e899"
# ## 练习 2：`MultiHeadAttention`
#
# 在 `exercises/mha.py` 中，补全 `MultiHeadAttention(c_in, c, N_head, attn_dim=-2, gated=False, is_global=False, use_bias_for_embeddings=False)` 中属于第 03 课的部分：
#
# - 在 `__init__` 中：`linear_q`、`linear_k`、`linear_v` = `nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)`，以及 `linear_o = nn.Linear(N_head * c, c_in)`（带偏置）。名字很重要：检查、第 05–06 课以及下面的权重复制都会用到它们；
# - `_attention(x, bias, attention_mask)`：x 已经是 `(*, L, c_in)`，注意力轴位于 −2。先投影，拆分头，用偏置和一个**键**掩码 `attention_mask[..., None, None, :]`（形状 `(*, 1, 1, L)`：对每个头、每个查询都相同）调用你在第 02 课写的 `scaled_dot_product_attention`，再合并头。返回 `(*, L, N_head·c)`；`forward` 负责应用 `linear_o`。
#
# `forward` 已经为你写好。它把 `attn_dim` 轴移到 −2 位置，算完再移回去，所以同一个模块可以沿 MSA 的行或列做注意力（第 04 课）。门控和全局变体分别属于第 06 课和第 05 课；不要动它们的代码块。
#
# **一种新的掩码约定。**第 02 课的掩码与分数形状相同；从现在起，模块对 x 的每个位置接收一个标志，由它自己构造与分数同形的键掩码：
#
# | | 第 02 课：`scaled_dot_product_attention` 的 `mask` | 第 03 课起：`MultiHeadAttention` 的 `attention_mask` |
# |---|---|---|
# | 形状 | 可广播到分数 `(*, q, k)`；`padding_mask` 给出 `(B, 1, L)` | `x.shape[:-1]`，例如 `(B, L)`：每个位置一个标志 |
# | True 表示 | 查询 i 可以看到键 j | 该位置是真实的（不是填充） |
# | 能表达 | 任何模式：因果、填充，或两者兼有 | 只有填充（对每个查询都相同） |
#
# `key_mask_to_flags`（在 `exercises/mha.py` 中，已为你写好）把第 02 课的填充掩码 `(B, 1, L)` 变成标志 `(B, L)`，`flags_to_key_mask` 则反过来。因果掩码没有标志形式：键 j 是否可见取决于查询，所以这个辅助函数会拒绝它。

# %% en="30eef629cc93"
from exercises.attention import padding_mask
from exercises.mha import flags_to_key_mask, key_mask_to_flags

lengths = torch.tensor([3, 5])
try:
    lesson02_mask = padding_mask(lengths, 5)  # 你在第 02 课写的函数：(B, 1, L)
except NotImplementedError:  # 还没写：在这里构造同样的掩码
    lesson02_mask = (torch.arange(5) < lengths[:, None])[:, None, :]
flags = key_mask_to_flags(lesson02_mask)
print("lesson 02 mask", tuple(lesson02_mask.shape), "-> attention_mask", tuple(flags.shape))
print(flags)
print("and back, equal:", torch.equal(flags_to_key_mask(flags), lesson02_mask))
try:
    key_mask_to_flags(torch.ones(5, 5, dtype=torch.bool).tril())
except ValueError as error:
    print("causal mask:", error)

# %% tags=["check"] en="20a09bb84452"
from course.checks.lesson03 import check_multi_head_attention
from exercises.mha import MultiHeadAttention

check_multi_head_attention(MultiHeadAttention)

# %% [markdown] en="49486c130a52"
# ## 一步一步看形状
#
# 与 `_attention` 相同的步骤，在一个含 2 条、每条 5 个词元的序列批量上逐步写出，c_in = 16，4 个宽度为 4 的头：

# %% en="8e1b384d7d46"
mha = fill_parameters(MultiHeadAttention(c_in=16, c=4, N_head=4), seed=3)
x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)

q = mha.linear_q(x)
print("linear_q(x)         ", tuple(q.shape), "   (B, L, N_head*c)")
q, k, v = (split_heads(layer(x), mha.N_head) for layer in (mha.linear_q, mha.linear_k, mha.linear_v))
print("split_heads         ", tuple(q.shape), "(B, N_head, L, c)")
scores = q @ k.transpose(-2, -1) / math.sqrt(mha.c)
print("scores              ", tuple(scores.shape), "(B, N_head, L, L): one matrix per head")
heads_out = torch.softmax(scores, dim=-1) @ v
print("weights @ v         ", tuple(heads_out.shape), "(B, N_head, L, c)")
merged = merge_heads(heads_out)
print("merge_heads         ", tuple(merged.shape), "   (B, L, N_head*c)")
out = mha.linear_o(merged)
print("linear_o            ", tuple(out.shape), "   (B, L, c_in)")
print("same as mha(x):", torch.allclose(out, mha(x), rtol=0, atol=1e-12))

# %% [markdown] en="b6b306eabc57"
# ## 一个联合投影 = N 个独立的头
#
# 在纸面上，每个头有自己的 W_q^h、W_k^h、W_v^h（c_in → c）。在代码里，只有一个输出为 N_head·c 的 `linear_q`。两者是同一回事：联合权重的第 h 个行块**就是** W_q^h，而 `split_heads` 恰好把这个块的输出交给头 h。一次大矩阵乘法只是比 N 次小矩阵乘法快得多。
#
# 来检验一下：构造 N_head 个独立的单头投影，把联合权重的行块复制进去，在 Python 循环里逐个运行这些头，拼接起来再比较：

# %% en="bdf4c35a6a57"
c_in, c, N_head = mha.linear_q.in_features, mha.c, mha.N_head
separate_heads = []
for h in range(N_head):
    rows = slice(h * c, (h + 1) * c)  # 联合权重中属于头 h 的行块
    head = {name: nn.Linear(c_in, c, bias=False).double() for name in ("q", "k", "v")}
    with torch.no_grad():
        head["q"].weight.copy_(mha.linear_q.weight[rows])
        head["k"].weight.copy_(mha.linear_k.weight[rows])
        head["v"].weight.copy_(mha.linear_v.weight[rows])
    separate_heads.append(head)

outputs = []
for head in separate_heads:  # 每个头一次小注意力，不用 view，也不用 transpose
    q_h, k_h, v_h = head["q"](x), head["k"](x), head["v"](x)  # 各为 (B, L, c)
    weights_h = torch.softmax(q_h @ k_h.transpose(-2, -1) / math.sqrt(c), dim=-1)
    outputs.append(weights_h @ v_h)
loop_result = mha.linear_o(torch.cat(outputs, dim=-1))  # 按顺序拼接头 0、1、……

print("N separate heads == joint projection:",
      torch.allclose(loop_result, mha(x), rtol=0, atol=1e-12))


# %% [markdown] en="7c2947bdf34c"
# ## 多头会增加参数吗？
#
# 用 c_in = 256（AlphaFold 的 MSA 宽度）统计真实模块的参数：
#
# - **单头**：一个宽度为 c = c_in 的头；
# - **多头，宽度守恒**：8 个宽度为 c = c_in / 8 = 32 的头（N_head·c = c_in）；
# - **多头，加宽**：8 个全宽度 c = c_in 的头。
#
# 每个投影都是一个 c_in × (N_head·c) 的矩阵，所以当 N_head·c = c_in 时估计为 4·c_in²，当每个头都是全宽度时为 4·N_head·c_in²；另外只多出 `linear_o` 的偏置（c_in 个数）。`n_parameters(module)`（来自 `course/measure.py`）就是常见的一行代码 `sum(p.numel() for p in module.parameters())`。

# %% en="2f6779e39929"
c_in = 256
estimate = 4 * c_in ** 2
designs = {
    "single head (c = c_in)": MultiHeadAttention(c_in, c_in, 1),
    "8 heads, c = c_in/8 = 32": MultiHeadAttention(c_in, c_in // 8, 8),
    "8 heads, widened (c = c_in)": MultiHeadAttention(c_in, c_in, 8),
}
print(f"{'design':<30}{'parameters':>12}{'/ 4*c_in^2':>12}")
for name, module in designs.items():
    count = n_parameters(module)
    print(f"{name:<30}{count:>12,}{count / estimate:>12.4f}")
print(f"{'estimate 4*c_in^2':<30}{estimate:>12,}")

# %% [markdown] en="f3d84b054936"
# 宽度守恒时，8 个头的开销与一个头完全相同：262,400 = 4·256² + 256。这些头不是额外的权重；它们是同一组权重被切成的 8 个独立切片。把每个头都加宽到全宽度，参数数量乘以 N_head（2,097,408 ≈ 8 × 4·256²）。一些关于 Transformer 的笔记声称“头越多参数越多，因为每个头都有自己的 W”：这只对加宽的设计成立，而几乎没人这样用。原始 Transformer（512 = 8 × 64）保持宽度守恒，AlphaFold2 的 Evoformer 和 extra-MSA 注意力也是如此；它有两个注意力模块不守恒（模板逐点注意力，以及不变点注意力的标量部分）：

# %% en="76b608bb5672"
for where, width, c_head, heads in [("MSA row/column attention", 256, 32, 8),
                                    ("triangle attention (pair)", 128, 32, 4),
                                    ("extra-MSA global column attention", 64, 8, 8),
                                    ("template pointwise attention", 128, 16, 4),
                                    ("invariant point attention (scalar)", 384, 16, 12)]:
    print(f"{where:<36} c_in={width:<4} {heads:>2} heads x c={c_head:<3} = {heads * c_head:<4}"
          f" conserved: {heads * c_head == width}")

# %% [markdown] en="473514f67d3e"
# ## 与 `torch.nn.MultiheadAttention` 对齐
#
# PyTorch 的 `nn.MultiheadAttention(embed_dim, num_heads)` 是同一个计算，只是参数名不同。它总是保持宽度守恒（每个头有 embed_dim / num_heads 个通道），并把三个输入投影放在一个堆叠的张量里：
#
# | 我们的 | `nn.MultiheadAttention` |
# |---|---|
# | `linear_q.weight`、`linear_k.weight`、`linear_v.weight`，各为 (N_head·c, c_in) | `in_proj_weight` (3·embed_dim, embed_dim)，按 q、k、v 堆叠 |
# | 它们的偏置（只在 `use_bias_for_embeddings=True` 时存在） | `in_proj_bias` (3·embed_dim)，`bias=True` 时存在 |
# | `linear_o` | `out_proj` |
# | x 的形状为 (B, L, c) | `batch_first=True`（默认是 (L, B, c)！） |
# | `attention_mask`：True = 真实的键 | `key_padding_mask`：True = **忽略**这个键 |
#
# `bias=True`（它的默认值）让它在 q、k、v *以及*输出上都有偏置，所以它对应我们 `use_bias_for_embeddings=True` 的模块：

# %% en="9d905cce91f6"
c_in, N_head = 16, 4
ours = fill_parameters(MultiHeadAttention(c_in, c_in // N_head, N_head,
                                          use_bias_for_embeddings=True), seed=5)
theirs = nn.MultiheadAttention(c_in, N_head, bias=True, batch_first=True).double()
with torch.no_grad():
    theirs.in_proj_weight.copy_(torch.cat([ours.linear_q.weight, ours.linear_k.weight,
                                           ours.linear_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.linear_q.bias, ours.linear_k.bias,
                                         ours.linear_v.bias]))
    theirs.out_proj.weight.copy_(ours.linear_o.weight)
    theirs.out_proj.bias.copy_(ours.linear_o.bias)

x = torch.randn(2, 6, c_in, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # 序列 1 有 2 个填充词元
theirs_out, _ = theirs(x, x, x, need_weights=False)
theirs_masked, _ = theirs(x, x, x, key_padding_mask=~real, need_weights=False)
print("no mask, equal:     ", torch.allclose(ours(x), theirs_out, rtol=0, atol=1e-12))
print("padding mask, equal:", torch.allclose(ours(x, attention_mask=real), theirs_masked,
                                             rtol=0, atol=1e-12))

# %% [markdown] en="5ac34d387724"
# AlphaFold 风格的模块（`use_bias_for_embeddings=False`：q、k、v 没有偏置，但输出有偏置）在那里没有完全对应的孪生兄弟：`bias=False` 把输出偏置也去掉了。有两种办法把它们对齐：保留 `bias=True` 并把 `in_proj_bias` 置零，或者用 `bias=False` 并把我们的 `linear_o.bias` 置零：

# %% en="b140436f8eb2"
af2_style = fill_parameters(MultiHeadAttention(c_in, c_in // N_head, N_head), seed=6)
with_bias = nn.MultiheadAttention(c_in, N_head, bias=True, batch_first=True).double()
no_bias = nn.MultiheadAttention(c_in, N_head, bias=False, batch_first=True).double()
stacked = torch.cat([af2_style.linear_q.weight, af2_style.linear_k.weight,
                     af2_style.linear_v.weight])
with torch.no_grad():
    for twin in (with_bias, no_bias):
        twin.in_proj_weight.copy_(stacked)
        twin.out_proj.weight.copy_(af2_style.linear_o.weight)
    with_bias.in_proj_bias.zero_()
    with_bias.out_proj.bias.copy_(af2_style.linear_o.bias)
print("bias=True, in_proj_bias zeroed, equal:",
      torch.allclose(af2_style(x), with_bias(x, x, x, need_weights=False)[0], rtol=0, atol=1e-12))
with torch.no_grad():
    af2_style.linear_o.bias.zero_()
print("bias=False vs ours with linear_o.bias zeroed, equal:",
      torch.allclose(af2_style(x), no_bias(x, x, x, need_weights=False)[0], rtol=0, atol=1e-12))

# %% [markdown] en="1a648450ba9b"
# ## 为什么 AlphaFold 不给 Q、K、V 加偏置
#
# 加上偏置后，查询 i 与键 j 的分数（略去对每一项作用相同的 1/√c）展开为四项：
#
# (W_q x_i + b_q) · (W_k x_j + b_k) = **(W_q x_i)·(W_k x_j)** + **(W_q x_i)·b_k** + **b_q·(W_k x_j)** + **b_q·b_k**
#
# | 项 | 取决于 | 沿键的轴 j |
# |---|---|---|
# | (W_q x_i)·(W_k x_j) | i 和 j | 内容上的匹配 |
# | (W_q x_i)·b_k | 只有 i | 每一行内为常数：**沿键的 softmax 把它抵消** |
# | b_q·(W_k x_j) | 只有 j | 不同的键不同：**保留下来**，是一个对每个查询都相同的按键加分 |
# | b_q·b_k | 什么都不取决于 | 常数：**被抵消** |
#
# 沿键的 softmax 忽略一行内任何不变的量：softmax(s + a) = softmax(s)。所以 b_k 完全消失，而 b_q 只作为一个“某些键通常更有价值”的先验保留下来，这个先验不取决于查询。我们用代码检验每一个论断：

# %% en="ca606a58a0c2"
generator = torch.Generator().manual_seed(7)
L, c_in, c = 5, 8, 4
x = torch.randn(L, c_in, generator=generator, dtype=torch.float64)
W_q, W_k = (torch.randn(c, c_in, generator=generator, dtype=torch.float64) for _ in range(2))
b_q, b_k = (torch.randn(c, generator=generator, dtype=torch.float64) for _ in range(2))

full = (x @ W_q.T + b_q) @ (x @ W_k.T + b_k).T / math.sqrt(c)   # (L, L)：查询 i，键 j
content = (x @ W_q.T) @ (x @ W_k.T).T / math.sqrt(c)
query_only = ((x @ W_q.T) @ b_k / math.sqrt(c))[:, None]         # (L, 1)：每行一个值
key_only = ((x @ W_k.T) @ b_q / math.sqrt(c))[None, :]           # (1, L)：每列一个值
constant = b_q @ b_k / math.sqrt(c)


def same(a, b):
    return torch.allclose(a, b, rtol=0, atol=1e-12)


print("four terms add up to the biased score:", same(full, content + query_only + key_only + constant))
print("softmax(full) == softmax(content + key_only):  ",
      same(full.softmax(-1), (content + key_only).softmax(-1)))
print("softmax(full) == softmax(content):             ",
      same(full.softmax(-1), content.softmax(-1)))
print("dropping b_k changes nothing:                  ",
      same(full.softmax(-1), ((x @ W_q.T + b_q) @ (x @ W_k.T).T / math.sqrt(c)).softmax(-1)))

# %% [markdown] en="d985abb1abdc"
# 值的偏置也好不到哪里去。每一行权重之和为 1，所以 Σ_j w_ij (v_j + b_v) = Σ_j w_ij v_j + b_v：每个位置的输出只是平移了 b_v，`linear_o` 把它变成常数 W_o b_v，而 `linear_o` 自己的偏置就能容纳它。所以带全部三个偏置的模块，在把 W_o b_v 移进输出偏置之后，与只带 b_q 的模块计算的结果完全相同（唯一的例外：整行被掩盖的查询权重为零，得不到 b_v）。这一点对不带门控的模块成立：AF2 的门控在 `linear_o` *之前*逐通道乘到 o 上，于是平移 b_v 变成 gate ⊙ b_v，它随 x 变化，不再能折叠成一个常数：

# %% en="d1b8a9d564ea"
biased = fill_parameters(MultiHeadAttention(8, 4, 2, use_bias_for_embeddings=True), seed=8)
x = torch.randn(3, 5, 8, generator=torch.Generator().manual_seed(9), dtype=torch.float64)
reference_out = biased(x)
with torch.no_grad():
    biased.linear_o.bias += biased.linear_o.weight @ biased.linear_v.bias  # 吸收 W_o b_v
    biased.linear_v.bias.zero_()
    biased.linear_k.bias.zero_()
print("b_k and b_v removed, output unchanged:", same(biased(x), reference_out))
with torch.no_grad():
    biased.linear_q.bias.zero_()
print("b_q removed as well, output unchanged:", same(biased(x), reference_out))

# %% [markdown] en="84c39619c89f"
# 所以，在没有门控时，3·N_head·c 个偏置数中只有 b_q 起作用，而它的作用（一个按键的先验）AlphaFold2 改由一个专门的通道来提供：加到分数上的注意力**偏置**，比如第 04 课的 pair bias。（AF2 的论文没有说明 Q/K/V 不带偏置的理由；这个论证是本课程自己的。）让 Q/K/V 只做纯粹的内容投影，把所有先验都放进那个显式的偏置里，是一种清晰的分工；许多现代语言模型（例如 LLaMA）也去掉了这些偏置。`linear_o` 保留它的偏置：它的输出被加回残差流，在那里一个自由的偏移是有用的。另一些知名模型（比如 BERT）确实在每个 Linear 上都加了偏置，`nn.MultiheadAttention` 也默认 `bias=True`：这就是 `use_bias_for_embeddings` 存在的原因，让你两种都能搭建。

# %% [markdown] en="6fac1222ec8f"
# ## 把模块画成图
#
# [torchview](https://github.com/mert-kurttutan/torchview) 追踪一次前向传播，画出每个模块和每个张量运算。它通过 Graphviz 的 `dot` 渲染；没有 `dot` 时，这个单元改为打印图的 DOT 源码（可粘贴到任何 Graphviz 查看器中）。

# %% tags=["nbval-ignore-output"] en="d09dd96ff32e"
from course.plots import show_model_graph

# c_in=16，4 个宽度为 3 的头：N_head*c = 12，这样图中每个轴的大小都不同
graph = show_model_graph(MultiHeadAttention(16, 3, 4), torch.randn(2, 5, 16), "MultiHeadAttention")

# %% [markdown] en="cde398039711"
# 从上往下读（x 为 (2, 5, 16)，4 个宽度为 3 的头）：`movedim` 把注意力轴放到 −2（对行来说什么也不做）；三个 `Linear` 节点是到 12 个通道的联合投影；`view` (2, 5, 4, 3) 和 `transpose` (2, 4, 5, 3) 拆分头（键为了 kᵀ 还多一次 `transpose`）；`matmul` 和 `div` 给出缩放后的分数 (2, 4, 5, 5)；`amax`、`sub`、`exp`、`sum`、`div` 是你在第 01 课写的稳定 softmax；第二个 `matmul` 混合值；`transpose` 和 `reshape` 把头合并回 (2, 5, 12)；最后一个 `Linear` 是 `linear_o`。
#
# ## 小部件：头、参数、注意力图
#
# 选择宽度 c_in 和头的数量。左图：参数数量随 N_head 的变化，分宽度守恒和加宽两种，并以 4·c_in² 作参照。右图：每个头在同样 8 个词元上的注意力权重（随机、固定种子，权重的抽取与你的代码无关）。注意在宽度守恒时，同样的参数数量下，头越多，注意力图越多（也越窄）。

# %% tags=["nbval-ignore-output"] en="62ad14c4fbbb"
from course.widgets.lesson03 import heads_explorer

heads_explorer()


# %% [markdown] en="2c7ade7715ff"
# ## 生产路径：PyTorch 的融合注意力
#
# 你的 `_attention` 显式地构造了 (*, N_head, L, L) 的分数张量：非常适合学习，也适合检查权重。`torch.nn.functional.scaled_dot_product_attention` 用融合内核计算同一个函数，在 GPU 上它从不存储整个分数张量（FlashAttention 和内存高效注意力）。下面是模块的前向传播，只替换了注意力这一步，使用模块自己的权重：

# %% en="6cadc138db55"
def forward_with_fused_attention(module, x, attention_mask=None):
    """module(x, attention_mask=...) for a non-global, ungated MultiHeadAttention, via F.sdpa."""
    x = x.movedim(module.attn_dim, -2)
    q, k, v = (split_heads(layer(x), module.N_head)
               for layer in (module.linear_q, module.linear_k, module.linear_v))
    key_mask = None
    if attention_mask is not None:
        mask_dim = module.attn_dim if module.attn_dim >= 0 else module.attn_dim + 1
        key_mask = attention_mask.movedim(mask_dim, -1)[..., None, None, :]
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=key_mask)  # (*, N_head, L, c)
    return module.linear_o(merge_heads(o)).movedim(-2, module.attn_dim)


x = torch.randn(2, 3, 7, 16, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
real = torch.ones(2, 3, 7, dtype=torch.bool)  # 每个位置一个标志：x.shape[:-1]
real[0, :, 5:] = False  # 样例 0：每行的最后两个位置是填充
real[1, 2, :] = False   # 样例 1：第三行是填充
for attn_dim in (-2, -3):
    module = fill_parameters(MultiHeadAttention(16, 4, 4, attn_dim=attn_dim), seed=12)
    print(f"attn_dim={attn_dim}: fused == teaching path:",
          same(forward_with_fused_attention(module, x, real), module(x, attention_mask=real)))


# %% [markdown] en="f90899ad79ac"
# 在这台机器上它快多少？这个单元在三种大小下为两条路径计时（float32，一个 CPU 线程，5 次中最快的一次），只打印比值：绝对时间取决于你的 CPU，而在 GPU 上长序列时的差距要大得多。教学路径把整个 (B, N_head, L, L) 分数张量实际存下来，并在它上面做多遍处理（缩放、掩码、最大值、指数、求和、相除）；融合内核不这样做。在 CPU 上、这么小的尺寸下，比值取决于形状、线程数以及机器上同时还在运行什么，不一定随 L 稳定增长：这个单元会打印这次运行中是否如此。
#
# `best_time`（来自 `course/measure.py`）先做一次不计时的预热调用（第一次调用可能要分配内存或选择内核），然后取 5 次中最快的一次：其他程序只会增加时间，不会减少。

# %% tags=["nbval-ignore-output"] en="6a378c7bf29b"
threads = torch.get_num_threads()
torch.set_num_threads(1)  # 单线程：对两条路径更公平，在繁忙的机器上也更稳定
ratios = []
with torch.inference_mode():
    for batch, length in [(8, 64), (2, 256), (1, 512)]:
        module = MultiHeadAttention(64, 16, 4)
        x = torch.randn(batch, length, 64, generator=torch.Generator().manual_seed(0))
        teaching = best_time(lambda: module(x))
        fused = best_time(lambda: forward_with_fused_attention(module, x))
        ratios.append(teaching / fused)
        print(f"B={batch}, L={length:>4}: teaching path / fused = {teaching / fused:5.1f}x")
torch.set_num_threads(threads)
grows = all(a < b for a, b in zip(ratios, ratios[1:]))
print("in this run the gap", "grew with L at every step" if grows else "did not grow steadily with L")

# %% [markdown] en="bd822382370e"
# ## 自测
#
# 1. c_in = 128、4 个头、宽度守恒：c 是多少，四个投影共有多少参数（Q/K/V 不带偏置）？
# 2. `x.view(*batch, N_head, L, c)` 给出的形状是对的。哪里出了问题？
# 3. b_q、b_k、b_v 中哪个会改变注意力权重，怎样改变？
# 4. 你把我们 AlphaFold 风格模块的权重复制到 `nn.MultiheadAttention(bias=False)` 中；输出在每个位置都相差同一个向量。为什么？
# 5. 我们的 `attention_mask` 和 PyTorch 的 `key_padding_mask` 形状都是 (B, L)。怎样把一个变成另一个？
#
# <details><summary>答案</summary>
#
# 1. c = 128 / 4 = 32；4·128² + 128 = 65,664 个参数（下面的单元会打印出来），与一个宽度为 128 的单头相同。
# 2. `view` 按顺序重新读取内存，所以“头 0”会是前 L·c 个数：若干个完整的位置，而不是每个位置的通道 0…c−1。应当把最后一个轴拆成 (N_head, c)，再把头的轴转置到 L 前面。
# 3. 只有 b_q：它加上 b_q·(W_k x_j)，一个按键的加分，对每个查询都相同。b_k 加上的项在每一行内不变，被沿键的 softmax 抵消；b_v 只让输出平移一个常数，`linear_o` 的偏置可以吸收它。
# 4. `bias=False` 把 PyTorch 的输出偏置也去掉了；我们的模块保留了 `linear_o.bias`。差的就是这个向量。
# 5. 取反：`key_padding_mask = ~attention_mask`（PyTorch 的 True 表示“忽略这个键”）。
#
# </details>

# %% en="22896a5a1832"
print("c =", 128 // 4, " parameters:", n_parameters(MultiHeadAttention(128, 128 // 4, 4)))

# %% [markdown] en="53fbf2956c88"
# ## 小结
#
# - 多头注意力 = 一个到 N_head·c 个通道的联合投影，`split_heads`（把最后一个轴看作 (N_head, c)，再转置），在所有头上一次性做第 02 课的注意力，`merge_heads`，以及 `linear_o`。
# - 它恰好等于 N 个独立的头，每个头的权重是联合矩阵的一个行块。
# - 当 c = c_in / N_head 时，参数数量保持 4·c_in²（输出偏置再加 c_in）：头换来的是多样性，而不是规模。只有把每个头都加宽，参数才乘以 N_head。
# - 复制权重后，它等于 `torch.nn.MultiheadAttention`（`batch_first=True`，偏置设置对应，`key_padding_mask = ~attention_mask`）。
# - Q/K/V 上的偏置几乎不起作用：b_k 和 b_v 被抵消或折叠掉；b_q 只作为一个按键的先验保留下来，而 AlphaFold2 改用显式的注意力偏置来提供它。
# - `F.scaled_dot_product_attention` 更快地计算同一个模块；下一课用偏置把先验放进分数，并用 `attn_dim` 把模块转 90°。
# - 下一课：[第 04 课，偏置与广播](04_bias_broadcasting.ipynb)。
