# %% [markdown] en="c755f35b7b86"
# # 第 05 课：全局注意力，以及列注意力为什么会耗尽内存
#
# **先修要求：**第 03 课的 `MultiHeadAttention`（第 05 课扩展它；它属于第 03 课的部分必须先能工作）和第 04 课的玩具 MSA。
#
# **没有 AlphaFold2 背景？**本课可以跳过：它讲的是 AlphaFold2 的 MSA，第 07、08 课不以它为基础（第 06 课的完整模块练习则需要它）。其中通用的部分是第 7 节（从形状预测内存、24/40/80 GB 的显卡在哪里耗尽内存、为什么分块只在推理时有用），它运行的是课程自己的代码，而不是你的练习：先运行第 1 节之前的代码单元，再运行第 7 节。
#
# AlphaFold2 读入多序列比对（MSA）：S 条相关序列，每条 R 个位置。行注意力让同一条序列的各个位置交流；列注意力让同一个位置上的各条序列交流。进化上的证据来自列注意力，而它的代价也随 S² 增长。对很深的“extra MSA”，AlphaFold2 改用开销更小的变体：**全局列注意力**（AF2 补充材料的算法 19）。
#
# **本课你将**
# - 在第 04 课的玩具 MSA 上看清，为什么不能干脆去掉列注意力；
# - 计算代价表（S = 512、5120 以及全局时的分数个数和字节数），并纠正一种常见的说法；
# - 写出 `masked_mean`，以及 `MultiHeadAttention` 的 `is_global` 选项：每列只用平均后的查询，所有查询头共享同一个键/值头，缩放 1/√c；
# - 从真实模块统计参数：20,608（普通，带门控）对 13,440（全局，带门控）；
# - 测量时间和峰值内存随 S 的变化（双对数坐标上，内存的斜率是 2 和 1；时间的斜率在其附近，因机器而异）；
# - 只凭形状预测列注意力的内存，用 profiler 检验预测，找出 24/40/80 GB 的显卡在哪里耗尽内存（还可以在小部件里改变这些尺寸）；再与真实显卡（H200）上的运行比较，弄清按列分块为什么对推理有用、对训练却没用。

# %% en="e5c138b0f748"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

# %% en="44d157209006"
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="ecc26430f7bc"
# ## 1. 行、列，以及为什么列很重要
#
# MSA 表征 m 的形状为 (S, R, c)（代码中另有批量轴）：S 条序列（同一个蛋白质在人、小鼠、鱼……中的版本），R 个残基位置，c 个通道。第 04 课用同一个模块实现了两个方向：
#
# | | 沿什么做注意力 | 每个切片的分数 | 你的模块 |
# |---|---|---|---|
# | 行注意力 | 一条序列的 R 个位置 | R × R，对 S 条序列中的每一条 | `MultiHeadAttention(..., attn_dim=-2)` |
# | 列注意力 | 一个位置上的 S 条序列 | S × S，对 R 个位置中的每一个 | `MultiHeadAttention(..., attn_dim=-3)` |
#
# 第 04 课的玩具 MSA 有 48 条虚构的序列，每条 60 个位置，其中位置 37 和 54 共变：37 处的 L 总是伴随 54 处的 V，S 伴随 T。位置 12 和 20 的字母相同、比例相同，但各自独立地打乱（诱饵）。

# %% en="2bf419365c6e"
from course.widgets.lesson04 import TOY_MSA, column_mutual_information, one_hot_msa, read_fasta

names, sequences = read_fasta(TOY_MSA)
msa = one_hot_msa(sequences)  # (S, R, 20)
print(_("MSA one-hot:"), tuple(msa.shape), " (S sequences, R positions, 20 amino acids)")
for name, row in list(zip(names, sequences))[:4]:
    print(f"{name}  ...{row[8:22]}...{row[33:56]}...   pos 12, 20: {row[11]}{row[19]}"
          f"   pos 37, 54: {row[36]}{row[53]}")


# %% [markdown] en="e1807c942fca"
# 一条序列只能告诉你“37 处是 L，54 处是 V”，每个位置一个样本。两个位置*一起*变化，是跨序列、沿着列统计出来的量，用两列之间的互信息衡量（第 04 课）：只用一条序列，每一对的互信息都是 0，因为只有一个元素的列不可能变化；用全部 48 条序列，耦合的那一对就突显出来，诱饵则不会。

# %% en="e73bffa62cfd"
def top_pairs(mi, n=3):
    values, flat = mi.triu(1).flatten().topk(n)
    R = mi.shape[0]
    return [(int(i) // R + 1, int(i) % R + 1, round(v.item(), 3)) for v, i in zip(values, flat)]


mi_one = column_mutual_information(msa[:1])
mi_all = column_mutual_information(msa)
print(_("largest MI from sequence 1 alone:"), round(mi_one.max().item(), 3))
print(_("top pairs (position, position, MI in nats) from all 48:"), top_pairs(mi_all))
print(_("decoys (12, 20):"), round(mi_all[11, 19].item(), 3),
      "  ln 2 =", round(math.log(2), 3))

# %% [markdown] en="f7bf556cc8b3"
# 再来看注意力本身。先嵌入 MSA（固定的随机 `Linear`，把 20 个 one-hot 通道变成 16 个通道），再分别运行行注意力模块和列注意力模块，两者都用你在第 03 课写的 `MultiHeadAttention` 构造。然后改动序列 2 的一个残基（位置 54，V↔T），看序列 1 的输出会不会变。

# %% en="43dca111329c"
from exercises.mha import MultiHeadAttention

torch.manual_seed(5)
embed = nn.Linear(20, 16).double()
row_attention = MultiHeadAttention(16, 4, 2, attn_dim=-2).double()
column_attention = MultiHeadAttention(16, 4, 2, attn_dim=-3).double()

edited = list(sequences)
swap = {"V": "T", "T": "V"}
edited[1] = edited[1][:53] + swap[edited[1][53]] + edited[1][54:]
m, m_edited = embed(msa), embed(one_hot_msa(edited))

with torch.no_grad():
    for label, module in [("row attention   ", row_attention), ("column attention", column_attention)]:
        change = (module(m_edited)[0] - module(m)[0]).abs().max().item()
        print(f"{label}: output of sequence 1 changed by {change:.3g}")

# %% [markdown] en="9677ed060dcc"
# 行注意力从不混合序列：其他 47 条序列无论怎样，序列 1 的输出都不变。只堆叠行注意力的网络，只能逐条序列单独预测，MSA 就白白浪费了。列注意力是各条序列直接交换信息的唯一场所（外积均值也沿列读取，但它写出的是 pair 特征，不是每条序列的输出）。所以列注意力去不掉，问题只在于它的代价。
#
# ## 2. 代价表
#
# 列注意力在每个位置、每个头上，给每一对序列打分：每层 H · R · S² 个数。AlphaFold2 的主 MSA 堆栈最多用 512 条序列（聚类）；extra MSA 堆栈读入的更多。取 R = 300 个残基，H = 8 个头，float32（每个数 4 字节）。这里 **GB = 10⁹ 字节**；旁边也列出 GiB = 2³⁰ 字节，因为不同工具报告的单位不同。

# %% en="57b014b1de8e"
H, R, BYTES = 8, 300, 4


def cost_row(label, n_scores):
    size = n_scores * BYTES
    print(f"{label:<46} {n_scores:>16,} {size / 1e9:>10.3f} GB {size / 2**30:>9.3f} GiB")


print(f"{'':<46} {'scores':>16} {'memory of one score tensor':>27}")
cost_row("plain column attention, S = 512", H * R * 512 * 512)
cost_row("plain column attention, S = 1024", H * R * 1024 * 1024)
cost_row("plain column attention, S = 5120", H * R * 5120 * 5120)
cost_row("  ... S = 5120, 4 columns at a time", H * 4 * 5120 * 5120)
cost_row("global column attention, S = 5120", H * R * 1 * 5120)
print(_("ratio plain / global at S = 5120:"), (H * R * 5120 * 5120) // (H * R * 5120),
      "  ratio S = 5120 / S = 512 (plain):", (5120 * 5120) // (512 * 512))

# %% [markdown] en="c5adf26c81b7"
# 关于这张表，常见的讲法（包括本课程的原始笔记）有两处需要更正：
#
# - **5120 不是通常的 extra MSA 深度。**AlphaFold2 的默认值是 1024 条额外序列；5120 只用于部分发布的模型（模型 1、3、4）和微调。主堆栈的 512 是通常的上限。
# - **250 GB 不是一堵“硬墙”。**不同列的 S × S 表相互独立，没有理由让 300 张表同时存在。AlphaFold2 推理时一次只对几列做列注意力（默认 4 列）：如表所示，S = 5120 时约 3.4 GB。分块去不掉的是计算量（仍是 H · R · S² 个分数，S = 512 时的 100 倍），以及训练时为反向传播保存的一切所占的内存（第 6 节）。所以 S 很大时，AF2 改用全局注意力。
#
# ## 3. 全局注意力：每列一个问题
#
# 全局列注意力对普通的多头列注意力做了两处改动：
#
# 1. **每列只有一个查询。**把 S 个查询平均成一个 q̄（具体做法：沿序列对 x 求*带掩码的*均值，再用 `linear_q` 投影）。每列每个头的分数从 S × S 变成 1 × S，代价从 O(S²) 降到 O(S)。
# 2. **所有查询头共享一个键头和一个值头。**`linear_k` 和 `linear_v` 把 c_in 映射到 c，而不是 N_head · c；唯一的 k 和 v 带大小为 1 的头轴，与 N_head 个查询广播。各头仍然不同，因为每个头有自己的 q̄_h：八个不同的问题，查的是同一本共享的答案书。
#
# 各个形状（`movedim` 之后被关注的轴位于 −2，这里 L = S）：
#
# | 张量 | 普通多头 | 全局 |
# |---|---|---|
# | q | (*, N_head, L, c) | (*, N_head, 1, c)，来自 x 的带掩码均值 |
# | k, v | (*, N_head, L, c) | (*, 1, L, c)，共享 |
# | scores, weights | (*, N_head, L, L) | (*, N_head, 1, L) |
# | 注意力输出 | (*, N_head, L, c) | (*, N_head, 1, c)，再广播到 L 个位置中的每一个 |
#
# 手算一例：一列 3 条序列，一个头，c = 2，q_s = k_s = x_s，x = [1, 0]、[0, 1]、[1, 1]，标量值 v = 2、4、6。

# %% en="a2bc380f58fa"
x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
v = torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64)

plain_weights = torch.softmax(x @ x.T / math.sqrt(2), dim=-1)
print(_("plain: 9 scores, one row of weights per sequence\n"), plain_weights)
print(_("plain: 3 personal outputs"), plain_weights @ v)

q_mean = x.mean(dim=0)
scores = x @ q_mean
print(_("\nglobal: q_mean ="), q_mean, " scores q_mean . k =", scores)
for label, scale in [("with 1/sqrt(c)", math.sqrt(2)), ("without the scale", 1.0)]:
    weights = torch.softmax(scores / scale, dim=-1)
    print(f"global, {label:<17}: weights {weights}  summary {(weights @ v).item():.2f}")

# %% [markdown] en="0c233924c642"
# AlphaFold2 在这里也照常除以 √c（在对查询求平均并投影之后缩放），所以汇总值是 **4.33**。你也许在别处见过 4.48：那是同一个例子不缩放的结果。
#
# 这一列的每条序列收到的都是这个汇总值。但在 AlphaFold2 中，这*并不*是终点：带门控的版本还要乘上由每条序列自己的 x 算出的门（第 06 课），所以各条序列的最终输出仍各不相同（见第 4 节）。
#
# ## 练习 1：带掩码的均值
#
# 真实的 MSA 都经过填充：同一批量里各个蛋白质的序列数不同，缺的行用零补齐，并在掩码中标为 False。普通的 `x.mean(dim)` 把这些行也算进去，q̄ 于是按（真实行数）/（全部行数）的比例被拉向零，序列最少的蛋白质受影响最大。AlphaFold2 和 OpenFold 只对真实的行求平均。
#
# 在 `exercises/mha.py` 中写出 `masked_mean(x, mask, dim)`：
# - x：(*, L, *, c)，L 位于 `dim`；mask：每个位置一个标志，形状为 `x.shape[:-1]`，或为 None；
# - 返回沿 `dim`、在 mask 为 True 的位置上的均值（x 去掉 `dim`）；
# - mask 为 None 时取普通均值；没有任何 True 位置的切片返回 0，而不是 NaN（0/0）。
#
# 提示：在掩码末尾加一个大小为 1 的轴，让它乘到每个通道上；用带掩码的和除以计数，计数下限截断为 1。

# %% tags=["check"] en="4bcb04ef41eb"
from course.checks.lesson05 import check_masked_mean
from exercises.mha import masked_mean

check_masked_mean(masked_mean)

# %% en="7ee7f1fc3006"
# 一列 4 条序列，最后两条是填充（零）：查询的普通均值对带掩码均值
column = torch.tensor([[2.0, 1.0], [4.0, -1.0], [0.0, 0.0], [0.0, 0.0]])
real = torch.tensor([True, True, False, False])
print(_("plain mean :"), column.mean(dim=0))
print(_("masked mean:"), masked_mean(column, real, dim=0))

# %% [markdown] en="11a4f4dd4199"
# ## 练习 2：`is_global` 选项
#
# `exercises/mha.py` 中的 `MultiHeadAttention(c_in, c, N_head, attn_dim, gated, is_global, use_bias_for_embeddings)` 已经能做普通的多头注意力（第 03 课）。现在加上全局变体：
#
# 1. 在 `__init__` 中，当 `is_global` 时：把 `linear_k` 和 `linear_v` 换成单头投影 `nn.Linear(c_in, c, bias=use_bias_for_embeddings)`（`linear_q` 保持 N_head · c）。
# 2. 写出 `_global_attention(x, attention_mask)`（x：(*, L, c_in)，做注意力的轴已在 −2；mask 为 (*, L) 或 None），返回 (*, L, N_head · c)：
#    - q：对 x 沿 L 求带掩码均值后做 `linear_q`，看作 (*, N_head, 1, c)；
#    - k, v：`linear_k(x)`、`linear_v(x)`，带一个大小为 1 的头轴：(*, 1, L, c)；
#    - 调用你在第 02 课写的 `scaled_dot_product_attention`（它除以 √c，c = q.shape[−1]），把掩码作为键掩码 (*, 1, 1, L) 传入，让填充的行得不到权重；
#    - (*, N_head, 1, c) → (*, N_head · c)，再把同一个向量交给 L 个位置中的每一个（`expand`）。
#
# 设置了 `is_global` 时，`forward` 已经会调用 `_global_attention`（并拒绝偏置：AF2 的全局注意力不加偏置）。检查用的是不带门控的模块；门控属于第 06 课。

# %% tags=["check"] en="40747198197c"
from course.checks.lesson05 import check_global_attention
from exercises.mha import MultiHeadAttention

check_global_attention(MultiHeadAttention)

# %% [markdown] en="2dcd46c816d4"
# ## 4. 模块的实际运行
#
# 再算一遍那个手算例子，这次经过你的模块（权重手工设定：q = k = x，通道 0 中 v = 2x₁ + 4x₂，`linear_o` 为恒等映射）。然后取 MSA 中带一行填充的一列：没有门控时，每条真实序列的输出都相同。

# %% en="651f9ccc0f84"
from course.checks.lesson05 import worked_example

print(_("worked example through the module:\n"), worked_example(MultiHeadAttention).detach())

torch.manual_seed(0)
global_attention = MultiHeadAttention(8, 4, 2, attn_dim=-3, is_global=True).double()
msa_x = torch.randn(4, 3, 8, dtype=torch.float64)  # (S=4, R=3, c_in=8)
msa_mask = torch.ones(4, 3, dtype=torch.bool)
msa_mask[3] = False  # 序列 4 是填充
with torch.no_grad():
    out = global_attention(msa_x, attention_mask=msa_mask)
    print(_("output"), tuple(out.shape), "; column 1, sequences 1-3 identical:",
          torch.allclose(out[0, 0], out[1, 0]) and torch.allclose(out[0, 0], out[2, 0]))

# %% [markdown] en="eac234b610b9"
# 下面手工加上第 06 课的门控：对每条序列、每个通道，g = sigmoid(linear_g(x))，在 `linear_o` 之前乘到注意力输出上。汇总值仍由各序列共享；乘上门之后，每条序列的结果就各不相同了。

# %% en="988cc617c5e3"
torch.manual_seed(1)
linear_g = nn.Linear(8, 2 * 4).double()
with torch.no_grad():
    summary = global_attention._global_attention(msa_x.movedim(-3, -2), msa_mask.movedim(-2, -1))
    gated = torch.sigmoid(linear_g(msa_x.movedim(-3, -2))) * summary  # (R, S, N_head*c)
    print(_("column 1, largest difference between sequences 1 and 2:"),
          f"before the gate {(summary[0, 0] - summary[0, 1]).abs().max().item():.3g},",
          f"after {(gated[0, 0] - gated[0, 1]).abs().max().item():.3g}")


# %% [markdown] en="c1db626df892"
# ## 5. 参数：20,608 对 13,440
#
# AlphaFold2 的 extra MSA 堆栈：c_e = 64 个通道，8 个头，每头宽度 c = 8，带门控。直接从模块统计，Q/K/V 不带偏置（与 AF2 相同），不计注意力之前的 LayerNorm。门控的 `linear_g`（c_in → N_head · c，带偏置）属于第 06 课，这里用手工添加的 `nn.Linear(64, 64)` 代替。

# %% en="6a571b7d1837"
from course.measure import n_parameters  # sum(p.numel() for p in module.parameters())

plain_column = MultiHeadAttention(64, 8, 8, attn_dim=-3)
global_column = MultiHeadAttention(64, 8, 8, attn_dim=-3, is_global=True)
gate = nn.Linear(64, 8 * 8)  # 第 06 课的 linear_g
print(f"{'':10} {'plain':>8} {'global':>8}")
for name in ["linear_q", "linear_k", "linear_v", "linear_o"]:
    print(f"{name:10} {n_parameters(getattr(plain_column, name)):>8,} "
          f"{n_parameters(getattr(global_column, name)):>8,}")
print(f"{'linear_g':10} {n_parameters(gate):>8,} {n_parameters(gate):>8,}")
plain_total = n_parameters(plain_column) + n_parameters(gate)
global_total = n_parameters(global_column) + n_parameters(gate)
print(f"{'total':10} {plain_total:>8,} {global_total:>8,}   (saved: {plain_total - global_total:,})")
layer_norm = n_parameters(nn.LayerNorm(64))
print(f"with the LayerNorm(64) ({layer_norm} parameters): {plain_total + layer_norm:,} and "
      f"{global_total + layer_norm:,}")

# %% [markdown] en="8e25a8c0e515"
# 省下的参数全部来自 K 和 V：各自从 64 × 64 = 4,096 个权重变成 64 × 8 = 512 个。全局注意力的参数更少，也更省内存；代价是序列之间不再两两交换信息，每条序列只收到这一列的汇总值。
#
# ## 6. 时间和内存随 S 的变化
#
# 比较普通列注意力与全局列注意力，两者都用你的模块（c_in = 64，8 个头，每头宽度 8，不带门控，float32），只在一列上运行（R = 1，让本课跑得快些）。时间取 3 次运行中最快的一次，单个 CPU 线程；它取决于这台机器和同时运行的其他程序，所以这些输出不参与比较。内存是调用期间 torch profiler 看到的峰值。在双对数坐标上，幂律 S^k 是斜率为 k 的直线：k 可以从拟合中读出。

# %% tags=["nbval-ignore-output"] en="f3e6c1376c05"
from tqdm.auto import tqdm

from course.memory import best_seconds, fit_slope, profile_bytes

torch.manual_seed(0)
threads = torch.get_num_threads()
torch.set_num_threads(1)  # 单线程：其他程序共享 CPU 核心时计时更稳定
modules = {"plain": MultiHeadAttention(64, 8, 8, attn_dim=-3),
           "global": MultiHeadAttention(64, 8, 8, attn_dim=-3, is_global=True)}
sizes = {"plain": [128, 256, 512, 1024], "global": [1024, 4096, 16384, 65536]}
seconds = {name: [] for name in modules}
peaks = {name: [] for name in modules}
steps = [(name, S) for name in modules for S in sizes[name]]
with torch.no_grad():
    for name, S in tqdm(steps, desc="timing and profiling"):
        module = modules[name]
        x_S = torch.randn(S, 1, 64, generator=torch.Generator().manual_seed(S))
        seconds[name].append(best_seconds(lambda: module(x_S)))
        peaks[name].append(profile_bytes(lambda: module(x_S)).peak)
torch.set_num_threads(threads)

# %% tags=["nbval-ignore-output"] en="a53998129cd8"
fig, (ax_time, ax_memory) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
for name, colour in [("plain", "tab:red"), ("global", "tab:blue")]:
    time_slope = fit_slope(sizes[name], seconds[name])
    memory_slope = fit_slope(sizes[name], peaks[name])
    ax_time.loglog(sizes[name], seconds[name], "o-", color=colour,
                   label=_("{name}: slope {slope:.2f}").format(name=name, slope=time_slope))
    ax_memory.loglog(sizes[name], [p / 1e6 for p in peaks[name]], "o-", color=colour,
                     label=_("{name}: slope {slope:.2f}").format(name=name, slope=memory_slope))
    print(f"{name:6}  time slope {time_slope:.2f}   memory slope {memory_slope:.2f}   "
          f"(least-squares fits of log value against log S)")
ax_time.set(xlabel=_("S (sequences)"), ylabel=_("seconds (best of 3)"), title=_("time per call"))
ax_memory.set(xlabel=_("S (sequences)"), ylabel=_("peak MB (profiler)"), title=_("peak memory per call"))
for ax in (ax_time, ax_memory):
    ax.legend()
plt.show()

# %% en="db2885f51080"
print(_("memory slopes, rounded:"),
      {name: round(fit_slope(sizes[name], peaks[name]), 1) for name in sizes})

# %% [markdown] en="1127f1c94749"
# 内存的斜率是 2 和 1（内存分配在哪台机器上都一样）。时间的斜率要粗糙些：在空闲的机器上，它们落在 2 和 1 附近；S × S 的张量超出 CPU 缓存、其他程序又在争抢内存带宽时，斜率会偏高（上面的单元打印了这台机器测得的斜率）；固定开销则把最小的几个尺寸往另一个方向拉。要看 S² 对 S 的规律，内存是更干净的证据；时间遵循同样的规律，只是没那么整齐。
#
# ## 7. 内存爆炸
#
# 列注意力需要多少内存？显卡在哪里耗尽内存？有三种方法可以知道，都在 `course/memory.py` 中，只针对注意力核心本身（q、k、v 已经投影好，形状为 (R, H, S, c)）：
#
# - **从形状预测**：在 PyTorch 的 `meta` 设备上运行代码（那里的张量只有形状、没有数据），累加每一时刻存活张量的字节数；
# - **在 CPU 上测量**：在 `torch.profiler`（`profile_memory=True`）下真实运行，再重放内存的分配和释放事件；
# - **在 GPU 上测量**（只在有 GPU 的地方）：不断增大 S，直到出现 `torch.cuda.OutOfMemoryError`。
#
# 四种计算方式：`naive`（所有列一次算完）、`chunked`（一次 4 列，与 AlphaFold2 推理时相同）、`global`，以及 `sdpa`（`torch.nn.functional.scaled_dot_product_attention`）。
#
# ### 小 S 时的预测与测量（CPU）

# %% tags=["nbval-ignore-output"] en="32e52162b5c5"
from course.memory import METHODS, measure_peak_cpu, predict_peak_bytes

agreement = {}
print(f"{'method':8} {'S':>4} {'predicted kB':>13} {'measured kB':>12} {'measured/predicted':>19}")
for method in METHODS:
    for S in [64, 128, 256]:
        predicted = predict_peak_bytes(method, R=8, H=8, S=S, c=8)
        measured = measure_peak_cpu(method, R=8, H=8, S=S, c=8).peak
        agreement[method, S] = measured / predicted
        print(f"{method:8} {S:>4} {predicted / 1e3:>13.1f} {measured / 1e3:>12.1f} "
              f"{measured / predicted:>19.3f}")

# %% en="7a965b9031cf"
for method in ["naive", "chunked", "global"]:
    ratios = [agreement[method, S] for S in [64, 128, 256]]
    print(f"{method:8} prediction and measurement agree within 5 %:",
          all(abs(r - 1) <= 0.05 for r in ratios))
print(_("sdpa     measured below a tenth of the prediction at S = 256:"), agreement["sdpa", 256] < 0.1)

# %% [markdown] en="3951c8c19407"
# 对 `naive`、`chunked` 和 `global`，从形状预测的字节数就是 CPU 实际分配的字节数。naive 的峰值是**两个**分数张量加上输出，而不是一个：原始分数 q kᵀ 和缩放后的分数会短暂并存，随后并存的是缩放后的分数和 softmax 权重。`sdpa` 的预测值高得离谱，这本身很有启发：在 `meta` 上，PyTorch 运行的是参考（“math”）实现，会把分数实际存下来；真实的 CPU 调用则选用融合内核，分块遍历键（FlashAttention 的思路），从不持有整张 S × S 的表。只凭形状，无从知道会运行哪个内核。
#
# ### 24、40 和 80 GB 的显卡在哪里耗尽内存（外推）
#
# 预测不占内存，所以 S 取多大都能算。取 R = 300 列、8 个头、c = 8、float32，要求输入加上一次调用的预测峰值装得进显卡。其余一概不计：没有权重，没有网络的其他部分，也没有 CUDA 上下文，所以真实的墙会来得更早。

# %% en="c95f49fb1cd3"
from course.memory import GB, predicted_need, predicted_wall

print(f"{'card':>7} " + " ".join(f"{m:>9}" for m in ["naive", "chunked", "global"]))
walls = {}
for capacity in [24, 40, 80]:
    walls[capacity] = {m: predicted_wall(m, capacity * GB, R=300, H=8, c=8)
                       for m in ["naive", "chunked", "global"]}
    print(f"{capacity:>4} GB " + " ".join(f"{walls[capacity][m]:>9,}" for m in walls[capacity]))
print(f"naive at S = 1024 needs {predicted_need('naive', 300, 8, 1024, 8) / GB:.1f} GB; at S = 5120 "
      f"{predicted_need('naive', 300, 8, 5120, 8) / GB:.0f} GB (two score tensors of "
      f"{300 * 8 * 5120**2 * 4 / GB:.1f} GB, plus inputs and output)")
print(f"chunked wall / naive wall at 80 GB: {walls[80]['chunked'] / walls[80]['naive']:.1f};"
      f"  sqrt(300 / 4) = {math.sqrt(300 / 4):.1f}")

# %% en="7f28bc527774"
S_range = [256, 1024, 4096, 16384]
fig, ax = plt.subplots(figsize=(6.5, 3.8), layout="constrained")
for method, colour in [("naive", "tab:red"), ("chunked", "tab:orange"), ("global", "tab:blue")]:
    ax.loglog(S_range, [predicted_need(method, 300, 8, S, 8) / GB for S in S_range], "o-",
              color=colour, label=method)
for capacity in [24, 40, 80]:
    ax.axhline(capacity, color="grey", lw=0.8, ls="--")
    ax.text(S_range[0], capacity * 1.08, f"{capacity} GB", fontsize=8, color="grey")
ax.axvline(5120, color="black", lw=0.6, ls=":")
ax.set(xlabel=_("S (sequences)"), ylabel=_("GB needed (inputs + predicted peak)"),
       title=_("column attention, R = 300, 8 heads, c = 8, float32 (predicted on meta)"))
ax.legend()
plt.show()

# %% [markdown] en="83dbdcca0a2d"
# 所有列一次算完时，即使 S = 1024（AlphaFold2 默认的 extra MSA 深度），一层的注意力核心也要大约 20 GB；S = 5120 要半个 TB。一次算 4 列，能承受的 S 大约扩大到 8 倍（只算分数的话是 √(300/4) ≈ 8.7；输入也要占一份）；全局注意力的需求随 S 线性增长：输入，外加与输入一样多的共享键、值头的副本（下面 H200 的运行说明了原因）。
#
# 下面的小部件为其他尺寸画出同样的预测：拖动 S，改变列数 R、头数和精度，从右图读出每张显卡在哪里耗尽内存。R = 300、8 个头、float32 时，它给出的墙与上表相同。

# %% tags=["nbval-ignore-output"] en="1684c358a0f1"
from course.widgets.lesson05 import memory_explorer

memory_explorer()

# %% [markdown] en="1dfa0ed441e4"
# ### 在真实显卡上：增大 S 直到崩溃
#
# 在 GPU 上，`blow_up_cuda` 对每种方法把 S 每次乘以 √2，直到出现 `torch.cuda.OutOfMemoryError`（被捕获），在每个尺寸上记录输入之外的 `torch.cuda.max_memory_allocated`。在线性增长的内存耗尽之前，平方增长的计算量早就超出了任何演示能承受的时间，所以一种方法也会因时间而停止增长。下面是这样一次在 NVIDIA H200 上的运行，作为数据记录下来（`data/lesson05/gpu_runs.json`，写明了运行的内容、地点和时间）：在那次运行中，一种方法只要某个尺寸用时超过 5 秒就停止，总时间不设上限。旁边是形状给出的预测：圆点是测量值，虚线是在 `meta` 上的预测，叉号标出耗尽内存的那个尺寸；纵轴是这次调用在显卡上需要的全部内存（包括输入），对照显卡的内存容量。

# %% en="4d431401360d"
from course import gpu_runs

for record in gpu_runs.load():
    gpu_runs.show(record)

# %% en="89d94c2cf0f9"
h200 = {run["method"]: run for run in gpu_runs.load()[0]["methods"].values()}
naive_S, naive_oom = h200["naive"]["sizes"][-1], h200["naive"]["out_of_memory_at"]
print(f"naive at S = {naive_S:,}: predicted {predict_peak_bytes('naive', 300, 8, naive_S, 8) / GB:.2f} GB,"
      f" measured {h200['naive']['peaks'][-1] / GB:.3f} GB")
print(f"global: peak / size of k = {predict_peak_bytes('global', 300, 8, 1000, 8) / (300 * 1000 * 8 * 4):.2f}"
      f" with 8 heads, {predict_peak_bytes('global', 300, 1, 1000, 8) / (300 * 1000 * 8 * 4):.2f} with 1")
sdpa_S = h200["sdpa"]["sizes"][-1]
print(f"sdpa at S = {sdpa_S:,}: measured {h200['sdpa']['peaks'][-1] / GB:.2f} GB, its output alone "
      f"{300 * 8 * sdpa_S * 8 * 4 / GB:.2f} GB")

# %% [markdown] en="822b516f2f0e"
# 显卡把这个方法证实到三位有效数字：S = 2,048 时 naive 调用占用了 80.688 GB，恰好是形状所预测的两个分数张量加上输出，而 S = 2,896 时它需要两倍的内存，于是耗尽了。chunked（4 列）和 global 也与各自的预测吻合；chunked 在 S = 16,386 时因时间而非内存停止。有两个意外，都是先在 `meta` 上看到的：
#
# - **全局注意力的峰值是 k 的十倍大小**，而不是两个分数张量：批量矩阵乘法靠复制，把唯一的键（和值）头广播到全部 8 个查询头。只有一个头时，这份复制就不存在了。S = 741,563 时，预测值（142.4 GB）在纸面上还装得下，显卡却耗尽了内存：显卡上除了这次调用的张量，还有别的东西（CUDA 上下文和库，分配器的取整），所以真实的墙比预测的稍早到来。
# - **SDPA 实测 1.78 GB，`meta` 的预测却超过 10 TB**：在 CUDA 上，它的融合内核从不持有 S × S 的分数（光是输出就有 1.78 GB），而 `meta` 走的是 math 路径。它最后因时间而停下：S² 的计算量依然存在。
#
# 在有 CUDA GPU 的地方，下一个单元会在上面运行同样的内存爆炸实验，并以同样的方式展示，用时约 20 秒：在那里四种方法共享 20 秒的时间预算，一种方法的下一个尺寸若会超出它那一份时间，就停止增长。`python scripts/record_gpu_run.py --source “...”` 会把这样一次运行加入已记录的运行中。

# %% tags=["nbval-ignore-output"] en="b171d4294e6a"
if torch.cuda.is_available():
    gpu_runs.show(gpu_runs.measure(R=300, H=8, c=8, source="this notebook", log=lambda line: None))
else:
    print(_("No CUDA GPU here: the run above, recorded on a real card, is what this cell measures."))

# %% [markdown] en="c74bc5566c4c"
# ### 分块拯救了推理，而不是训练
#
# 在 `torch.no_grad()` 下，每个分块的分数和权重在下一个分块开始前就被释放，所以峰值只有 4 列的量。训练时，autograd 必须把每个分块的 softmax 权重一直留到反向传播，前向传播结束时，全部 R 列的权重依然都在。profiler 显示了这一点（R = 8 列，S = 128；“held”指前向传播返回时仍占用的内存）：

# %% en="d10d3daa5847"
print(f"{'':8} {'peak, inference':>16} {'held after forward, training':>30}")
for method in ["naive", "chunked"]:
    inference = measure_peak_cpu(method, R=8, H=8, S=128, c=8)
    training = measure_peak_cpu(method, R=8, H=8, S=128, c=8, train=True)
    print(f"{method:8} {inference.peak / 1e6:>13.2f} MB {training.held_after / 1e6:>27.2f} MB")
print(f"one set of softmax weights for all 8 columns: {8 * 8 * 128 * 128 * 4 / 1e6:.2f} MB")

# %% [markdown] en="3cc43c91195e"
# 而网络的每一层都要同时保留这些：AlphaFold2 有 4 个 extra MSA 块和 48 个 Evoformer 块。所以训练时采样的序列更少（AF2：微调之前为 128 个 MSA 聚类和 1024 条额外序列），可以重新计算激活而不存储（激活检查点：AlphaFold2 的 `use_remat`、OpenFold 的 `blocks_per_ckpt`），并在 S 很大的地方改用全局注意力。如今还有一条出路：FlashAttention 这样的融合内核（上面的 `sdpa` 一行），它去掉了 S × S 的内存，却去不掉 S² 的计算量。
#
# ## 自测
#
# 1. 同一批量里有两个蛋白质，分别有 100 条和 20 条真实序列，都填充到 100。普通均值会让第二个蛋白质的平均查询缩小到原来的多少？
# 2. 全局注意力的 k 是共享的，为什么 8 个头算出的分数仍然不同？
# 3. 没有门控时，同一列的两条序列从全局注意力得到相同的输出吗？有 AlphaFold2 的门控时呢？
# 4. 全局注意力节省的 7,168 个参数（20,608 − 13,440）从哪里来？
# 5. 同事说：“S = 5120 需要 250 GB，所以 extra MSA 堆栈在任何 GPU 上都用不了列注意力。”这句话哪些对，哪些错？
# 6. 为什么 `meta` 设备能精确预测 `naive` 的内存，却预测不了 `sdpa` 的？
#
# <details><summary>答案</summary>
#
# 1. 20/100 = 0.2：80 行填充在求和中算作零，却计入了分母。带掩码的均值除以 20，得到正确的平均值。
# 2. 每个头有自己的 `linear_q` 行，所以各头的 q̄_h 不同；尽管读的是同一个 k（和 v），分数 q̄_h · k_s 仍然不同。
# 3. 没有门控时相同：每列只有一个汇总值，`linear_o` 对每条序列的映射都一样。有门控时不同：sigmoid(linear_g(x)) 取决于每条序列自己的 x。
# 4. 来自 `linear_k` 和 `linear_v`：各自 64 × 64 = 4,096 个权重变成 64 × 8 = 512 个，节省 2 × 3,584 = 7,168 个。
# 5. 对的部分：float32 下，300 列同时存在的分数张量是 252 GB（234 GiB）。错的部分：各列相互独立，可以一次只处理几列（4 列约 3.4 GB）；真正的障碍是 S² 的计算量，以及训练时为反向传播保存的激活。另外，5120 也不是默认深度（默认是 1024）。
# 6. 在 `meta` 上，每个运算都运行参考实现，中间张量与 CPU 上 naive 代码的相同。而 `sdpa` 的真实调用会分派到融合内核，其工作内存从形状上看不出来；meta 运行的则是未融合的 math 路径。
#
# </details>
#
# ## 小结
#
# - 列注意力是 MSA 中各条序列直接交换信息的唯一场所，必须保留；它的分数随 H · R · S² 增长。
# - 全局注意力（AF2 算法 19）：每列只有一个查询，即 x 的**带掩码**均值经 `linear_q` 的投影；所有查询头共享一个键头和一个值头；分数按 1/√c 缩放；汇总值由整列共享，第 06 课的门控让它因序列而异。
# - 20,608 对 13,440 个参数（c_e = 64，8 个头，c = 8，带门控，Q/K/V 不带偏置，不计 LayerNorm）：节省来自 K 和 V。
# - 内存随 S² 增长（普通）或随 S 增长（全局）。在 `meta` 上按形状预测、经 profiler 证实：一层的 naive 核心在 S ≈ 1,110 / 1,435 / 2,033 时填满 24/40/80 GB。在真实显卡（NVIDIA H200）上，S = 2,048 时占用 80.688 GB，与预测一致，到 2,896 时耗尽内存。
# - S = 5120 时的 250 GB 确有其事，但不是墙：按列分块，推理只需几 GB。分块对训练没有帮助，因为训练时每个分块的权重都要留给反向传播。
# - 下一课：[第 06 课，门控](06_gating.ipynb)。
