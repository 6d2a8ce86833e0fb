# %% [markdown] en="cbea36b027cc"
# # 第 10 课：路线二，改数学
#
# **先修要求：**第 02 课的注意力和掩码，第 05 课的全局注意力（`exercises/mha.py` 中带 `is_global=True` 的 `MultiHeadAttention`，以及它的 `masked_mean`），第 06 课和第 08 课的门，第 09 课的逐块计算和内存测量（这里也要用到 `exercises/tiled.py` 中的 `key_blocks`）。
#
# 第 09 课结尾回到了原始笔记给出的两条出路，用来绕开注意力随长度平方增长的内存墙。**路线一**（第 09 课）精确保留 softmax 注意力，只是分块来算：内存从 O(L²) 降到 O(L)，计算量仍是 O(L²)。**路线二**改数学。笔记列举了“滑窗、稀疏、线性注意力/Mamba”，并补充说“Nyströmformer 的 landmark 平均与‘query 平均成一行’是直系亲戚，global attention 算是这条线的先驱之一”。第 05 课实现了全局注意力，第 09 课实现了滑动窗口。这一课由你实现其余几种，并测量它们的代价。
#
# **本课你将**
# - 用三种形式写出线性注意力（φ = elu + 1），并证明它们相等：二次的带掩码形式、循环形式（状态大小不变的循环神经网络）和分块形式（块与块之间传递状态，块内用二次形式）；
# - 按第 09 课的办法测量它们的内存（由形状预测，再由 profiler 证实）；
# - 遇到两个数值陷阱并修好它们：float16 下溢出的归一化项，以及写成累积乘积之比的衰减；
# - 写出衰减（门控）状态，即 GLA 和 Mamba-2 的递推 h = a_t h + k_t v_tᵀ，以及它的二次形式，弄清这里到底门控的是什么；
# - 写出 Nyström 注意力：只有一个地标点时，它就是第 05 课的全局注意力；再测量地标点增多时它的误差；
# - 在一个小型联想回忆任务上读出路线二的代价：softmax、线性、带衰减的线性和滑动窗口注意力，训练同样多的步数；
# - 把两条路线放进同一张表，配上第 09 课测得的数字。

# %% en="e5c138b0f748"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

# %% en="acab4ff40994"
import math

import matplotlib.pyplot as plt
import torch

from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="ea59e17dad6a"
# ## 1. softmax 为什么需要整个矩阵，又拿什么来替代
#
# softmax 注意力给键 j 的权重是 exp(qᵢ · kⱼ / √c) / Σⱼ′ exp(qᵢ · kⱼ′ / √c)。指数把每个查询和每个键绑在一起：在查询出现之前，任何对键的求和都无法先做，所以每一对（查询，键）都要算，共 L² 对（第 09 课只是避免了把它们*存下来*）。
#
# 线性注意力（Katharopoulos 等 2020，“Transformers are RNNs”）把 exp(q · k) 换成特征的乘积 φ(q) · φ(k)，其中 φ(x) = elu(x) + 1，取值永远为正（所以每个权重都为正，和 softmax 的权重一样）。于是对一个查询有
#
# outᵢ = Σⱼ (φ(qᵢ) · φ(kⱼ)) vⱼ / Σⱼ φ(qᵢ) · φ(kⱼ) = φ(qᵢ)ᵀ S / φ(qᵢ)ᵀ z,   S = Σⱼ φ(kⱼ) vⱼᵀ,  z = Σⱼ φ(kⱼ)
#
# 这靠的是结合律：S（d × e）和 z（d）与查询无关，只需算一次。L × L 大小的东西根本不存在。φ 已在 `exercises/linear.py` 中给出，名为 `feature_map`：

# %% en="d47855915abb"
from exercises.linear import feature_map

x = torch.tensor([-3.0, -1.0, 0.0, 1.0, 3.0], dtype=torch.float64)
print("x            :", x)
print("elu(x) + 1   :", feature_map(x))
print("exp(x)       :", torch.exp(x))

# %% [markdown] en="68242ff29560"
# 当 x ≥ 0 时，elu(x) + 1 = x + 1，像一条直线那样增长；当 x < 0 时它等于 exp(x)：为正，在精确算术下永远不为零。权重 φ(qᵢ) · φ(kⱼ) 是一个*核*，不是 softmax：分数变大时它们不会变尖锐（第 9 节的小部件把两者的一行并排画出）。
#
# 在一个非因果的例子上验证结合律：6 个查询、9 个键，d = 4，e = 3。二次形式要建一个 (6, 9) 的权重矩阵，另一种只要一个 (4, 3) 的状态和一个 (4,) 的归一化项。

# %% en="7fc9ecec8761"
generator = torch.Generator().manual_seed(10)
q, k, v = (torch.randn(n, c, generator=generator, dtype=torch.float64)
           for n, c in [(6, 4), (9, 4), (9, 3)])
weights = feature_map(q) @ feature_map(k).T                  # (6, 9)
quadratic = weights @ v / weights.sum(dim=-1, keepdim=True)
S, z = feature_map(k).T @ v, feature_map(k).sum(dim=0)       # (4, 3) 和 (4,)
associative = feature_map(q) @ S / (feature_map(q) @ z)[:, None]
print("weights", tuple(weights.shape), " state", tuple(S.shape), " normaliser", tuple(z.shape))
print("max |quadratic - associative| below 1e-12:",
      (quadratic - associative).abs().max().item() < 1e-12)

# %% [markdown] en="b357dad22b8d"
# ## 练习 1：`linear_attention`，二次形式
#
# 在 `exercises/linear.py` 中写出 `linear_attention(q, k, v, causal=True)`：q (*, L_q, d)，k (*, L_k, d)，v (*, L_k, e)。计算 W = φ(q) φ(k)ᵀ (*, L_q, L_k)；`causal=True` 时只保留它的下三角（查询 i 看到键 j ≤ i，包括它自己：`tril()`）；返回 W v / rowsum(W)。φ 只作用于查询和键，**绝不作用于值**；查询 i 的归一化项是 W 中**它自己那一行**之和（沿键求和）。在 `accumulation_dtype(q)` 中计算（已给出：输入为 float16 或 bfloat16 时是 float32，否则就是输入自己的 dtype），并以 q 的 dtype 返回输出：第 5 节会说明原因。

# %% tags=["check"] en="f5bc396410c8"
from course.checks.lesson10 import check_linear_attention
from exercises.linear import linear_attention

check_linear_attention(linear_attention)

# %% [markdown] en="5f3e35b3ccfc"
# ## 2. 因果形式就是一个循环神经网络
#
# 加上因果掩码，求和只跑过 j ≤ i：Sᵢ = Σⱼ≤ᵢ φ(kⱼ) vⱼᵀ，zᵢ = Σⱼ≤ᵢ φ(kⱼ)。每一个都等于前一个再加上一个词元，所以模型可以逐个词元地读序列，只保留 (S, z)：
#
# S ← S + φ(kₜ) vₜᵀ,  z ← z + φ(kₜ),  outₜ = φ(qₜ)ᵀ S / φ(qₜ)ᵀ z.
#
# 这正是那篇论文的标题：使用线性注意力的 Transformer **就是**一个循环神经网络，每个头的状态有 d × e + d 个数，与长度无关。用 softmax 注意力生成文本，要保留此前每一个键和值（“KV 缓存”，每个头 2 · L · d 个数）；用线性注意力生成，只需保留状态。
#
# ## 练习 2：`linear_attention_recurrent`
#
# 在 `exercises/linear.py` 中写出 `linear_attention_recurrent(q, k, v, state=None)`：一个遍历词元的循环，返回 `(out, (S, z))`：out (*, L, e) 用 q 的 dtype，S (*, d, e) 和 z (*, d) 是最后一个词元之后的状态，用工作 dtype。批量中的每条序列 (*) 各有自己的状态，`state=None` 从零开始：**状态不能在序列之间泄漏**，既不能通过一个对批量轴求和的 einsum，也不能从一次调用带到下一次调用。传入的状态要接着用：对一条序列的前后两半调用两次，第二次传入第一次的状态，结果等于对整条序列调用一次。在循环内逐个词元地施加 φ，并把每个输出写进一个用 `new_empty` 一次建好的张量：这样除了输出之外，不保留任何长度为 L 的东西（第 4 节会测量）。

# %% tags=["check"] en="fb6f45c21613"
from course.checks.lesson10 import check_linear_recurrent
from exercises.linear import linear_attention_recurrent

check_linear_recurrent(linear_attention_recurrent)

# %% [markdown] en="dc21276bcff7"
# 状态就是生成模型所需要的全部。把两条序列的 12 个词元分三次读入，每次 4 个，每次都交给它上一次的状态，结果与对全部 12 个词元调用一次完全相同：

# %% en="1dc6d7dbeb7b"
generator = torch.Generator().manual_seed(11)
q, k, v = (torch.randn(2, 12, 4, generator=generator, dtype=torch.float64) for _ in range(3))
whole, _state = linear_attention_recurrent(q, k, v)
state, pieces = None, []
for start in (0, 4, 8):
    part, state = linear_attention_recurrent(q[:, start:start + 4], k[:, start:start + 4],
                                             v[:, start:start + 4], state=state)
    pieces.append(part)
print("state S", tuple(state[0].shape), "and z", tuple(state[1].shape), "carried between calls")
print("three calls of 4 tokens = one call of 12, to 1e-12:",
      (torch.cat(pieces, dim=1) - whole).abs().max().item() < 1e-12)
print("equal to your quadratic form, to 1e-12:",
      (linear_attention(q, k, v) - whole).abs().max().item() < 1e-12)

# %% [markdown] en="d93e57bce562"
# ## 3. 分块：块内用二次形式，块间传递状态
#
# 循环形式一步接一步地走 L 小步：内存少，但没有并行。二次形式做一次大矩阵乘法：可以并行，但要 L × L。**分块形式**兼取两者之长。把序列切成每块 C 个词元。对第 c 块，S 和 z 是*此前*所有块的和（**不含本块的**状态）：
#
# out_c = (φ(q_c) S + tril(φ(q_c) φ(k_c)ᵀ) v_c) / (φ(q_c) z + rowsum(tril(φ(q_c) φ(k_c)ᵀ))),
#
# 然后才更新 S ← S + φ(k_c)ᵀ v_c，z ← z + Σ φ(k_c)。第一项通过状态带来本块之前的一切；带掩码的二次项带来本块自己、直到每个查询为止的键。如果先更新状态（**含本块的**状态），本块自己的键就被算了两次，一次通过 S，一次通过带掩码的项：这就是这种形式典型的差一错误。fla 库的参考代码（fla-org/flash-linear-attention，`naive_chunk_linear_attn`）用每块 64 个词元计算这种形式，并把不含本块的状态写成一个平移了一块的累积和。
#
# ## 练习 3：`linear_attention_chunked`
#
# 写出 `linear_attention_chunked(q, k, v, chunk=64)`：因果线性注意力，每次处理 `chunk` 个词元（最后一块可以短一些：第 09 课的 `key_blocks(L, chunk)` 列出各段切片）。它返回 (*, L, e)，用 q 的 dtype，与你的二次形式在 `causal=True` 时相等。任何时候都不要建超过一块的权重：检查会测量你的峰值内存。

# %% tags=["check"] en="10d443a93b96"
from course.checks.lesson10 import check_linear_chunked
from exercises.linear import linear_attention_chunked

check_linear_chunked(linear_attention_chunked)

# %% [markdown] en="6ab479c783c6"
# ### 三种形式是同一个函数
#
# 在 L = 256（2 个头，d = e = 16，float64）时，三种形式以及下一节的累积和形式给出相同的输出，对一个固定损失的梯度也相同（每个差值都相对于最大的那个元素来量）；`gradcheck` 把分块形式的梯度与有限差分比较（用它的快速模式：沿随机方向比较）。

# %% en="c20c3cbe5a92"
from exercises.linear import linear_attention_cumsum

generator = torch.Generator().manual_seed(12)
q, k, v = (torch.randn(2, 256, 16, generator=generator, dtype=torch.float64) for _ in range(3))
forms = {
    "quadratic": lambda q, k, v: linear_attention(q, k, v),
    "recurrence": lambda q, k, v: linear_attention_recurrent(q, k, v)[0],
    "chunked (64)": lambda q, k, v: linear_attention_chunked(q, k, v, chunk=64),
    "cumsum": linear_attention_cumsum,
}
loss_weights = torch.randn(2, 256, 16, generator=generator, dtype=torch.float64)
results = {}
for name, form in forms.items():
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]
    out = form(*leaves)
    results[name] = (out.detach(), *torch.autograd.grad((out * loss_weights).sum(), leaves))
def relative_gap(mine, theirs):
    """The largest difference, relative to the largest entry of the reference."""
    return ((mine - theirs).abs().max() / theirs.abs().max()).item()


for name in list(forms)[1:]:
    gaps = [relative_gap(mine, theirs) for mine, theirs in zip(results[name], results["quadratic"])]
    print(f"{name:13} vs quadratic: output and dq, dk, dv agree to 1e-12: {max(gaps) < 1e-12}")
small = [t[:1, :10, :3].clone().requires_grad_(True) for t in (q, k, v)]
print("gradcheck of the chunked form (chunks of 4):",
      torch.autograd.gradcheck(lambda *t: linear_attention_chunked(*t, chunk=4), small,
                               fast_mode=True))

# %% [markdown] en="9ad62009e3ee"
# ## 4. 像第 09 课那样测量内存
#
# 在形状为 (4, L, 32) 的 q、k、v 上（4 个头，d = e = 32，float32），以推理方式计算因果线性注意力的四种做法：你的二次形式（每个头一个 L × L 的权重矩阵），你的循环形式，你的分块形式（每块 8 个词元），以及 `linear_attention_cumsum`（已给出）——它把循环形式照字面执行：对每个 φ(kₜ) vₜᵀ 求累积和，一次拿出全部 L 个前缀状态 (L, d, e)。和第 09 课一样，峰值（调用在输入之外最多占用的字节，包括输出）由 `meta` 设备根据形状**预测**，再由 profiler 的内存分配事件**测量**（`course/tiled_memory.py`）。循环形式的每个词元都是十来个运算，两种工具都要逐个记录，所以长度取得很短：16、32 和 64 个词元。

# %% en="46a788f87eb1"
from course.lessons.lesson10 import agree, memory_of

memory_forms = {
    "quadratic": lambda q, k, v: linear_attention(q, k, v),
    "recurrence": lambda q, k, v: linear_attention_recurrent(q, k, v)[0],
    "chunked": lambda q, k, v: linear_attention_chunked(q, k, v, chunk=8),
    "cumsum": linear_attention_cumsum,
}
lengths = [16, 32, 64]
memory = memory_of(memory_forms, lengths, lambda L: (4, L, 32))
output_bytes = {L: 4 * L * 32 * 4 for L in lengths}

# %% tags=["nbval-ignore-output"] en="da1b377dca8e"
print(f"{'form':11} {'L':>4} {'predicted peak':>15} {'measured peak':>14} {'peak - output':>14}"
      "   (bytes)")
for (name, L), (predicted, measured) in memory.items():
    print(f"{name:11} {L:>4} {predicted.peak:>15,} {measured.peak:>14,} "
          f"{predicted.peak - output_bytes[L]:>14,}")

# %% en="8fb69ed721f1"
print("predicted = measured within 1 % for every form and L:", agree(memory, within=0.01))

# %% tags=["nbval-ignore-output"] en="eb82b1be466c"
for name in memory_forms:  # how your forms grow: it depends on how they are written
    held = [memory[name, L][0].peak - output_bytes[L] for L in lengths]
    print(f"{name:11} beyond the output, when L doubles: x {held[1] / held[0]:.2f}, "
          f"x {held[2] / held[1]:.2f}")

# %% [markdown] en="94d23c297bbd"
# 除去每种形式都要写的输出，循环形式在每个长度上占用的字节都一样：它的状态和一个词元的临时量。分块形式在 L 跨过两块之后就不再增长（一块的权重加上状态）。累积和形式随 L 翻倍：它保存了每一个前缀状态。二次形式的增长趋向 4 倍，即它的 L × L 权重。在 `meta` 上由形状预测，任何 L 都一样算：取真实头的尺寸，累积和形式是

# %% en="a2ca177cdb1e"
from course.lessons.lesson09.memory import predict_call

L, d = 8192, 64
states_bytes = L * d * d * 8
cumsum_peak = predict_call(linear_attention_cumsum, [(1, L, d)] * 3, dtype=torch.float64).peak
recurrence_state = (d * d + d) * 8
print(f"L = {L:,}, d = e = {d}, float64: the prefix states (L, d, e) are {states_bytes / 2**20:.0f} "
      f"MiB; the cumsum form's peak on meta {cumsum_peak / 2**20:.0f} MiB; the recurrence's state "
      f"{recurrence_state / 2**10:.1f} KiB")

# %% [markdown] en="fb9b97d745c3"
# 累积和形式的峰值略多于状态的两倍：每个词元的乘积 φ(kₜ) vₜᵀ 在它们的累积和出现之前就已存在。循环形式在每个长度上都只保留 32.5 KiB（S 和 z）。两种形式也都要保存输出，即 L × e 个数，任何注意力都是如此。
#
# 训练时，autograd 会保留反向传播需要的东西：照现在这样写的循环形式保留每个词元的状态，分块形式保留每块一个状态外加每块的权重。出路是重新计算而不是保留，就像第 09 课的反向传播对 softmax 所做的那样；写它又是第 09 课的练习，这里不再展开。
#
# ## 5. 数值陷阱之一：float16 下溢出的归一化项
#
# 归一化项 φ(qᵢ)ᵀ zᵢ 对此前每个键加一个正项。查询和键方差为 1、d = 64 时，每一项约为 86（下面打印），所以几百个词元之后，这个和就超过 float16 能表示的最大数 65,504，变成 inf；输出 φ(q)ᵀ S / inf 于是成了 0（分子也溢出的地方则是 NaN）。bfloat16 有 float32 的范围，但只有 8 位精度：给一个已到 1,000 的累计和加 1，什么也没变，长长的求和就停滞了。对 d = 64 的五次随机抽样，float16 归一化项第一次溢出时的 L（以 64 为步长）：

# %% en="25182c6e9757"
from course.lessons.lesson10 import first_overflow, normaliser_float16

generator = torch.Generator().manual_seed(0)
a, b = (torch.randn(100_000, 64, generator=generator) for _ in range(2))
per_key = (feature_map(a) * feature_map(b)).sum(dim=-1).mean().item()
print(f"mean of φ(q) · φ(k) at d = 64: {per_key:.1f}; float16's largest number: "
      f"{torch.finfo(torch.float16).max:,.0f}")
overflow = first_overflow(range(64, 1025, 64), d=64)
print("first L with an inf normaliser, 5 draws:", overflow)
print("at L = 512 every draw is finite:",
      all(torch.isfinite(normaliser_float16(512, 64, s)).all().item() for s in range(5)))

# %% [markdown] en="1c40a5fe6904"
# 所以溢出发生在 L = 512 和 1,024 之间。修法就是你的函数已经采用的那一种：把状态和归一化项保持在 float32（fla 的参考代码 `naive_recurrent_linear_attn` 把 q、k、v 转成 float32，最后再把输出转回去），并返回输入的 dtype。另一种修法干脆去掉归一化项，改用一个归一化层来归一化输出，GLA 和 Mamba-2 的层就是这样做的（在输出投影之前做 RMSNorm：GLA 对每个头的输出各做一次，Mamba-2 对所有头一起做），第 10 节实验中的衰减层也是如此（每个头一个 LayerNorm）。你的函数在 float16 下，与在 float32 中算好再舍入的结果比较：

# %% en="9473fef5c5c6"
generator = torch.Generator().manual_seed(1)
qh, kh, vh = (torch.randn(1, 1024, 64, generator=generator).half() for _ in range(3))
naive = (feature_map(qh) @ feature_map(kh).transpose(-2, -1)).tril()
naive_out = naive @ vh / naive.sum(dim=-1, keepdim=True)  # 全部在 float16 中计算
yours = linear_attention(qh, kh, vh)
reference = linear_attention(qh.float(), kh.float(), vh.float())
print("all in float16: finite rows", int(torch.isfinite(naive_out).all(dim=-1).sum()), "of 1024,",
      "all-zero rows", int((naive_out == 0).all(dim=-1).sum()))
print("yours: dtype", yours.dtype, "| finite everywhere:", bool(torch.isfinite(yours).all()),
      "| max |yours - float32 result| below 1e-3:",
      (yours.float() - reference).abs().max().item() < 1e-3)

# %% [markdown] en="38c0f65a133f"
# ## 6. 数值陷阱之二：写成累积乘积之比的衰减
#
# 下一节给状态加上衰减：h ← aₜ h + kₜ vₜᵀ，其中 aₜ 在 (0, 1] 内。展开后，词元 s 到达词元 t 时要乘上 a_{s+1} · … · aₜ。很容易想把它写成累积乘积之比 Pₜ / Pₛ，其中 Pₜ = a₁ · … · aₜ。取常数 a = 0.5，Pₜ = 0.5ᵗ：float32 能表示的最小正数是 2⁻¹⁴⁹，所以乘积会变成 0，比值变成 0 / 0。a = 0.9 时更糟，因为它不声不响：在 float32 最小的那些数里，乘积乘以 0.9 又舍入回它自己，一步的“衰减”恰好是 1.0，过了很久乘积才变成 0。在 float32 中，t 从 1 开始计：

# %% en="c30123d00568"
from course.lessons.lesson10 import cumulative_product_trap

print("float32's smallest positive number is 2^-149:",
      torch.tensor(2.0 ** -149, dtype=torch.float32).item() > 0,
      "| 2^-150 rounds to 0:", torch.tensor(2.0 ** -150, dtype=torch.float32).item() == 0)
for a in (0.5, 0.9):
    trap = cumulative_product_trap(a, 1200)
    print(f"a = {a}: P_t is 0 from t = {trap['zero']}; the decay matrix P_t / P_s has NaN from "
          f"row t = {trap['nan row']}; a step's ratio P_t / P_(t-1) is exactly 1.0 first at "
          f"t = {trap['ratio one'] or 'never (the product reaches 0 first)'}")
print("float64, a = 0.5: P_t is 0 from t =", cumulative_product_trap(0.5, 1200, torch.float64)['zero'])

# %% [markdown] en="356277ac2887"
# 改为在**对数空间**里把衰减加起来：令 cₜ = log a₁ + … + log aₜ（一串不大于 0 的数的累积和），从 s 到 t 的衰减就是 exp(cₜ − cₛ)，是两个和之差，而不是两个趋于零的乘积之比。在对角线以上（s > t），这个差为正，它的 exp 可能上溢：在 exp **之前**把这些元素设为 −inf，它们就会精确地得到 0，前向传播和梯度里都是如此（Mamba-2 的最小 SSD 代码就是这样构造衰减矩阵的：先 `segsum`，再 exp）。
#
# ## 7. 衰减状态：GLA 和 Mamba-2 门控的是什么
#
# 线性注意力从不遗忘：S 是一个简单的和，第 10,000 个词元的状态对第 1 个词元和对第 9,999 个词元一视同仁。**衰减**状态按模型逐词元选定的速率遗忘：
#
# hₜ = aₜ hₜ₋₁ + kₜ vₜᵀ,  outₜ = qₜᵀ hₜ,  aₜ in (0, 1]
#
# （先衰减，再加入词元：词元自己的键不被衰减）。Mamba-2 的 SSD 层（Dao & Gu 2024）每个头、每个词元用一个标量 aₜ；GLA（门控线性注意力，Yang 等 2023）对键的每个通道各用一个衰减，Gₜ ⊙ hₜ₋₁。两者都不除以归一化项，而是改为归一化输出（RMSNorm）。展开得 outₜ = Σₛ≤ₜ (a_{s+1} · … · aₜ) (qₜ · kₛ) vₛ：二次形式就是用一个**衰减矩阵** D 给 q kᵀ 加掩码，Dₜₛ = exp(cₜ − cₛ)（s ≤ t），对角线以上为 0，即 SSD 论文中的“1-半可分”掩码。
#
# 这里门控的到底是什么？第 06 课的 AlphaFold 门和第 08 课的门（门控注意力论文的 G1）把注意力的**输出**逐通道乘以 σ(x W)：它们缩放一层读出的内容，不碰权重。这里 aₜ 乘的是**状态**：它决定过去有多少能留到此后每个词元的读出里。输出上的门无法遗忘；状态上的衰减无法让当前更响亮。GLA 和 Mamba-2 的层两种都有：状态上的衰减，以及第 06 课那种输出门，只是把 sigmoid 换成了别的函数。GLA 把归一化后的输出乘以 swish(x W_g)（fla 的 `GatedLinearAttention`），Mamba-2 在它带门的 RMSNorm 里乘以 silu(z)，z 是其输入的一个投影（mamba_ssm 的 `Mamba2`）。混合模型把两类层都用上：Qwen3-Next 让三个 Gated DeltaNet 层（带 delta 规则更新的衰减状态）与一个门控 softmax 注意力层交替，门就是第 08 课的那种（Hugging Face transformers 中它的配置让每第四层是完整注意力）。
#
# ## 练习 4：`decayed_recurrent`
#
# 在 `exercises/linear.py` 中写出 `decayed_recurrent(q, k, v, log_a, state=None)`：q、k (*, L, d)，v (*, L, e)，log_a (*, L) 是每个词元衰减的对数。遍历词元：h = exp(log_aₜ) h + kₜ vₜᵀ（加入词元**之前**先衰减），outₜ = qₜᵀ h。没有 φ，没有归一化项。返回 `(out, h)`；和练习 2 一样，每条序列有自己的状态，None 从零开始，传入的状态要接着用。

# %% tags=["check"] en="9f402cf52903"
from course.checks.lesson10 import check_decayed_recurrent
from exercises.linear import decayed_recurrent

check_decayed_recurrent(decayed_recurrent)

# %% [markdown] en="4c9be9ce04f0"
# ## 练习 5：`decayed_attention`，衰减矩阵
#
# 写出 `decayed_attention(q, k, v, log_a)`：与 `decayed_recurrent` 相同的输出，写成 (D ∘ q kᵀ) v，其中 c = cumsum(log_a)，Dₜₛ = exp(cₜ − cₛ)（s ≤ t），s > t 时为 0。在对数空间里构造 D，并在 exp 之前把上三角设为 −inf（第 6 节）。

# %% tags=["check"] en="2e50e6d7f0f1"
from course.checks.lesson10 import check_decayed_attention
from exercises.linear import decayed_attention

check_decayed_attention(decayed_attention)

# %% [markdown] en="61cc64cf9b64"
# 两种形式的前向和反向，L = 256，衰减在 0.5 和 1 之间（差值相对于最大元素来量，同第 3 节），再加上 `gradcheck`：

# %% en="f0dc678b7105"
generator = torch.Generator().manual_seed(13)
q, k, v = (torch.randn(2, 256, 8, generator=generator, dtype=torch.float64) for _ in range(3))
log_a = torch.log(0.5 + 0.5 * torch.rand(2, 256, generator=generator, dtype=torch.float64))
loss_weights = torch.randn(2, 256, 8, generator=generator, dtype=torch.float64)
grads = {}
for name, form in [("recurrence", lambda *t: decayed_recurrent(*t)[0]),
                   ("decay matrix", decayed_attention)]:
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, log_a)]
    out = form(*leaves)
    grads[name] = (out.detach(), *torch.autograd.grad((out * loss_weights).sum(), leaves))
gaps = [relative_gap(a, b) for a, b in zip(grads["recurrence"], grads["decay matrix"])]
print("output and the gradients of q, k, v, log_a agree to 1e-12:", max(gaps) < 1e-12)
small = [t[:1, :8].clone().requires_grad_(True) for t in (q, k, v, log_a)]
print("gradcheck of the decay matrix form:",
      torch.autograd.gradcheck(decayed_attention, small, fast_mode=True))

# %% [markdown] en="be2a98d7f020"
# 课程仓库用两个库自己的参考实现检查你的形式（它的测试 `tests/test_lesson10_upstream.py` 复述了它们，不随学生版分发）：fla 的 `naive_recurrent_gla`（GLA 的递推，键的每个通道各有一个衰减；给每个通道同一个衰减，再把 q 乘以 1/√d，它就是你的 `decayed_recurrent`），以及 Mamba-2 的最小 SSD 代码（`ssd_minimal_discrete`，分块计算，带它的 `segsum`），两者都在 float64 下相差不超过 1e-12。
#
# ## 8. Nyström 地标点，再看第 05 课
#
# Nyströmformer（Xiong 等 2021）保留 softmax，转而近似它的 L × L 矩阵。取 m 个**地标点**：查询的 m 个连续分段的均值（q̃）和键的 m 个连续分段的均值（k̃）。softmax 沿最后一个轴取，分数都乘以 1/√c：
#
# F = softmax(q k̃ᵀ) (L × m),  A = softmax(q̃ k̃ᵀ) (m × m),  B = softmax(q̃ kᵀ) (m × L),
# softmax(q kᵀ) ≈ F A⁺ B,  out = F (A⁺ (B v)),
#
# 其中 A⁺ 是 Moore-Penrose 伪逆，论文用一个迭代来近似它（`iterative_pinv`，已给出）。没有 L × L 大小的东西：只有 L × m、m × m 和 m × L。
#
# 只取**一个**地标点：q̃ 是全部查询的均值，F 是一列 1（对一个元素取 softmax），A = [1]，每个查询得到的都是 B v = softmax(mean(q) kᵀ / √c) v。这就是第 05 课的全局注意力：查询平均成一行。笔记称地标点为“直系亲戚”：这里正好看清有多亲。
#
# ## 练习 6：`landmark_means`
#
# 写出 `landmark_means(x, m, mask=None)`：x (*, L, c)，mask 为 None 或 bool (*, L)，填充处为 False；返回 (*, m, c)。把每条序列的 n 个真实词元编号为 0 … n − 1（对掩码求累积和），编号为 p 的词元放进第 p · m // n 段；每个地标点是其分段中真实词元的均值。**填充不属于任何分段**：带填充的序列必须得到与同一序列去掉填充后相同的地标点。

# %% tags=["check"] en="eac11a9134d8"
from course.checks.lesson10 import check_landmarks
from exercises.linear import landmark_means

check_landmarks(landmark_means)

# %% [markdown] en="d6136b390956"
# ## 练习 7：`nystrom_attention`
#
# 写出 `nystrom_attention(q, k, v, m, mask=None, inverse=iterative_pinv)`：用你的 `landmark_means`（同一个掩码）求 q 和 k 的地标点，然后按上面的式子算 F、A 和 B（B 的分数在填充的键处设为 −inf），out = F · inverse(A) · (B v)，用 q 的 dtype。

# %% tags=["check"] en="baced0d1a277"
from course.checks.lesson10 import check_nystrom
from exercises.linear import nystrom_attention

check_nystrom(nystrom_attention)

# %% [markdown] en="1e83b716169e"
# ### 一个地标点对照第 05 课的模块
#
# 你在第 05 课写的 `MultiHeadAttention(c_in=16, c=4, N_head=4, is_global=True)`，作用于两条 10 个词元的序列，第二条有 3 个填充。取它自己的投影：q = linear_q(x) 拆成 4 个头，它唯一的键头和值头交给每个头共用。在这些上面用一个地标点和填充掩码做 Nyström，然后合并头，再过 linear_o：

# %% en="da3809154b91"
from exercises.mha import MultiHeadAttention, merge_heads, split_heads
from exercises.linear import iterative_pinv

torch.manual_seed(14)
x = torch.randn(2, 10, 16, dtype=torch.float64)
padding = torch.ones(2, 10, dtype=torch.bool)
padding[1, 7:] = False
ungated = MultiHeadAttention(16, 4, 4, is_global=True).double()
gated = MultiHeadAttention(16, 4, 4, is_global=True, gated=True).double()
gated.load_state_dict({**gated.state_dict(), **ungated.state_dict()})
with torch.no_grad():
    gated.linear_g.weight.normal_()  # 每个词元的门都不同
    queries = split_heads(ungated.linear_q(x), 4)                 # (2, 4, 10, 4)
    keys = ungated.linear_k(x).unsqueeze(-3).expand(2, 4, 10, 4)  # 一个头，共享
    values = ungated.linear_v(x).unsqueeze(-3).expand(2, 4, 10, 4)
    one_landmark = nystrom_attention(queries, keys, values, 1, padding[:, None].expand(2, 4, 10))
    mine = ungated.linear_o(merge_heads(one_landmark))
    print("Nyström, m = 1 = lesson 05's global attention (no gate), to 1e-12:",
          (mine - ungated(x, attention_mask=padding)).abs().max().item() < 1e-12)
    print("every real token gets the same row:", torch.allclose(mine[1, :7], mine[1, :1]))
    print("with lesson 05's per-token gate the rows differ: max gap",
          f"{(mine - gated(x, attention_mask=padding)).abs().max().item():.2f}")
    unmasked = ungated.linear_o(merge_heads(nystrom_attention(queries, keys, values, 1)))
    print("landmarks over the padding too (no mask): the real tokens' outputs change by",
          f"{(unmasked[1, :7] - mine[1, :7]).abs().max().item():.2f}")

# %% [markdown] en="a54a7f96256f"
# 所以，一旦把三件事对齐，一个地标点**就是**第 05 课的全局注意力；两者之间剩下的差别恰好就是这三件事：
#
# - **共享的键和值**：第 05 课只投影出一个键头和一个值头，借给每个查询头用（AlphaFold 的选择，省参数）；Nyström 给每个头各自的键和值。像上面那样把共享的头交给每个头，第 05 课就成了一个特例；
# - **门**：第 05 课的模块把共享的那一行复制给每个词元，再各乘以它自己的 σ(linear_g(x))，所以每个词元的输出不同；Nyström 没有门，只有一个地标点时每个词元得到同一行；
# - **掩码**：第 05 课用带掩码的均值来平均查询，并把填充的键屏蔽掉；Nyströmformer 的代码则把填成零的填充也平均进分段均值。你的 `landmark_means` 只数真实词元，和第 05 课一样；去掉掩码，真实词元的输出就变了。
#
# （投影后查询的均值等于对平均输入做投影，和第 05 课一样，因为 linear_q 是线性的。）地标点多了，Nyström 就保留 m 个摘要而不是一个，对 softmax 的近似也随之变好。变好的快慢取决于数据。两类 q、k、v（64 个词元，c = 16）：相互独立的随机词元，以及一条缓慢变化的序列（随机游走加噪声，相邻的词元相像，正是分段均值所依赖的结构）。相对误差 ‖Nyström − softmax‖ / ‖softmax‖，分别用论文的迭代逆和精确伪逆：

# %% en="dfbd6a985813"
from course.lessons.lesson10 import nystrom_errors, smooth_sequence

landmarks = [1, 2, 4, 8, 16, 32, 64]
data = {
    "slowly varying": [smooth_sequence(64, 16, seed) for seed in (1, 2, 3)],
    "independent tokens": [torch.randn(64, 16, generator=torch.Generator().manual_seed(seed),
                                       dtype=torch.float64) for seed in (1, 2, 3)],
}
errors = {(name, inverse_name): nystrom_errors(nystrom_attention, *tensors, landmarks,
                                               inverse=inverse)
          for name, tensors in data.items()
          for inverse_name, inverse in [("iterative", iterative_pinv),
                                        ("exact", torch.linalg.pinv)]}
print(f"{'q, k, v':19} {'inverse':10}" + "".join(f"{m:>7}" for m in landmarks))
for (name, inverse_name), row in errors.items():
    print(f"{name:19} {inverse_name:10}" + "".join(f"{row[m]:>7.3f}" for m in landmarks))

# %% en="90df88981559"
for name in data:
    row = errors[name, "iterative"]
    print(f"{name:19}: with the iterative inverse, from m = 2 on the error falls at each "
          f"doubling of m: {all(row[b] < row[a] for a, b in zip(landmarks[1:], landmarks[2:]))}; "
          f"m = 64 below m = 1: {row[64] < row[1]}")
print("exact pseudo-inverse at m = L: Nyström is softmax (error below 1e-9):",
      all(errors[name, "exact"][64] < 1e-9 for name in data))

# %% [markdown] en="81cef943d9bc"
# 用迭代逆时，从 m = 2 起 m 每翻一倍误差都下降（在缓慢变化的序列上，两个地标点比一个差）：在缓慢变化的序列上，远在 m = L 之前就降到百分之几，在独立词元上则降得慢，因为互不相关的词元的分段均值什么也概括不了。精确伪逆在 m = L 时是精确的，此时地标点就是词元本身；在那之前则忽高忽低：地标点彼此相像时 A 几乎奇异，它的精确逆会放大剩下的那点差别；迭代六步则停在这之前。
#
# ## 9. 各种形式并排看
#
# 左：随着 L 增长，每种形式的一个头要保存多少个数。右：在 softmax、线性注意力和 Nyström 下，一个查询给 48 个键的权重。

# %% tags=["nbval-ignore-output"] en="142abd9f3148"
from course.widgets.lesson10 import routes_explorer

routes_explorer()

# %% [markdown] en="e01737d87632"
# ## 10. 路线二的代价：回忆
#
# 路线二省下的是内存；它放弃了什么？一个小型联想回忆任务可以测量（多查询联想回忆，仿照 Arora 等 2023，“Zoology”）：一条序列先列出 N 个键值对 k₁ v₁ k₂ v₂ … k_N v_N（键有 256 种可能，值有 64 种），再按随机顺序把每个键重问一遍，模型要在每个问题处说出跟在那个键后面的值。一层注意力，模型除了混合方式之外完全相同（`course/lessons/lesson10_recall.py`）：每个词元的嵌入加上它前一个词元的嵌入（这样才能把值和它的键对上），4 个头，每头 16 个通道，因果。四种注意力：softmax；16 个键的滑动窗口；线性注意力（你的二次形式）；以及衰减状态（你的衰减矩阵，衰减按头、按词元由该词元算出，并在每个头的输出上用 LayerNorm 代替归一化项）。每次运行都在同样的批次上训练同样多的步数（每个批次的 N 在 4 到 48 之间抽取），单线程，在 CPU 上。这些运行作为数据随课程分发（`data/lesson10/recall.json`，由 `scripts/train_lesson10.py` 训练）；本课用分发的权重重建种子 0 的模型，并重新测量：

# %% en="f221b2d17ca6"
from course.lessons.lesson10 import load_recall, recall_table, recheck_recall

shipped = load_recall()
recall = recall_table(shipped)
kinds = [kind for kind in ("softmax", "window", "linear", "decayed") if kind in recall]
rechecked = recheck_recall(shipped)
print("runs shipped:", {kind: recall[kind]["seeds"] for kind in kinds},
      "| steps per run:", shipped["runs"][next(iter(shipped["runs"]))]["config"]["steps"])
print("the seed-0 models measured again on load (N = 48, 128 validation sequences) "
      "give the shipped accuracy:", {kind: rechecked[kind][0] == rechecked[kind][1] for kind in kinds})

# %% en="ca252de857e4"
pairs = shipped["task"]["pairs_eval"]
print(f"{'attention':9} {'numbers kept per sequence at N = 48':>36}" +
      "".join(f"{'N = ' + str(n):>9}" for n in pairs))
for kind in kinds:
    entry = recall[kind]
    print(f"{kind:9} {entry['state'][str(pairs[-1])]:>36,}" +
          "".join(f"{entry['accuracy'][str(n)]:>9.3f}" for n in pairs))
print("(accuracy over the questions of 512 validation sequences, mean of the seeds; "
      "chance is 1/64 = 0.016)")

# %% tags=["nbval-ignore-output"] en="6daec32d92d6"
print("CPU-seconds per run (one thread, this course's machine):",
      {kind: round(recall[kind]["cpu_seconds"]) for kind in kinds})

# %% tags=["nbval-ignore-output"] en="4d7f4c73139d"
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
for kind in kinds:
    entry = recall[kind]
    left.plot(pairs, [entry["accuracy"][str(n)] for n in pairs], "o-", label=kind)
    left.fill_between(pairs, [entry["lowest"][str(n)] for n in pairs],
                      [entry["highest"][str(n)] for n in pairs], alpha=0.15)
    right.semilogx([entry["state"][str(n)] for n in pairs],
                   [entry["accuracy"][str(n)] for n in pairs], "o-", label=kind)
left.set(xlabel=_("key-value pairs N (L = 3N)"), ylabel=_("recall accuracy"),
         title=_("recall against the number of pairs (band: lowest and highest seed)"))
right.set(xlabel=_("numbers kept per sequence (one layer)"), ylabel=_("recall accuracy"),
          title=_("recall against what the layer keeps"))
for ax in (left, right):
    ax.axhline(1 / 64, color="grey", ls=":", lw=1)
    ax.legend()
plt.show()


# %% en="f797fe4f5da8"
def best(n):
    return max(kinds, key=lambda kind: recall[kind]["accuracy"][str(n)])


print("highest accuracy at each N:", {n: best(n) for n in pairs})
print("softmax above linear at every N:", all(recall["softmax"]["accuracy"][str(n)] >
                                              recall["linear"]["accuracy"][str(n)] for n in pairs))
print("linear attention's accuracy falls at every step of N:",
      all(recall["linear"]["accuracy"][str(a)] > recall["linear"]["accuracy"][str(b)]
          for a, b in zip(pairs, pairs[1:])))
print("decayed minus linear, per N:", {n: round(recall["decayed"]["accuracy"][str(n)] -
                                                recall["linear"]["accuracy"][str(n)], 3)
                                       for n in pairs})

# %% [markdown] en="608ffb889923"
# 这张图在这台机器上说明的就是这些，不多说。训练同样多的步数之后，softmax 注意力在每个 N 上几乎记得每一对；它保留读过的每一个键和值（每个通道 2 · L 个数，即表的第一列）。线性注意力的状态大小固定，4 个头，每个 16 × 16，外加 16 个数的归一化项，N 每增加一级它的准确率都下降：要存的对越多，它们在一个不能增长的状态里就越模糊。衰减状态保存的数差不多一样多（没有归一化项），回忆得也不比普通线性注意力好（差值见上面打印）：衰减帮模型遗忘，而这个任务什么也不要它忘。两者在不同种子之间差别都很大（图中的阴影带）：四个种子只能说明方向，给不出精确的数字。滑动窗口保留最后 16 个词元；被问的键一旦在更远处，它就无可匹配；即使在 N = 4 时，整条序列都在它的窗口里、它算的恰好就是 softmax 注意力，它也远低于 softmax：训练批次里的问题大多落在窗口之外，同样的步数里它学到的很少。Arora 等 2023（“Zoology”）在真实语言模型中发现了同类的差距：在联想回忆上，一个 70M 参数的注意力模型胜过一个 1.4B 参数的门控卷积模型；他们还构造了这里用到的多查询回忆任务来研究它。一层、四个头、几分钟 CPU：这些都是玩具模型，训练得更久或状态更宽，每个数都会变。比较就是比较本身：同样的步数，同样的数据，只改了混合方式。
#
# ## 11. 两条路线并排
#
# 第 09 课的数字取自它自己执行过的笔记本（`lesson09_figures` 读它打印的输出），第 10 课的数字取自本笔记本。

# %% tags=["nbval-ignore-output"] en="75475151ab6c"
from course.lessons.lesson10 import lesson09_figures

route_one = lesson09_figures()
naive_growth, tiled_growth = route_one["naive", "training"], route_one["tiled", "training"]
print("lesson 09, training, when L doubles (256 -> 512): naive attention's peak "
      f"x {naive_growth[1]:.2f}, what it keeps x {naive_growth[2]:.2f}; tiled: peak "
      f"x {tiled_growth[1]:.2f}, kept x {tiled_growth[2]:.2f}")
print(f"lesson 09, column attention at S = 5,120, one layer kept for training: naive "
      f"{route_one['kept GB']['naive']:.0f} GB, tiled {route_one['kept GB']['tiled']:.3f} GB")
held = {name: [memory[name, L][0].peak - output_bytes[L] for L in lengths]
        for name in memory_forms}
print(f"lesson 10, inference, beyond the output, when L doubles (32 -> 64): recurrence "
      f"x {held['recurrence'][2] / held['recurrence'][1]:.2f}, chunked "
      f"x {held['chunked'][2] / held['chunked'][1]:.2f}, cumsum x "
      f"{held['cumsum'][2] / held['cumsum'][1]:.2f}, quadratic x "
      f"{held['quadratic'][2] / held['quadratic'][1]:.2f}")

# %% [markdown] en="bfddcac995b3"
# | | 精确吗？ | 内存随 L | 计算量随 L | 会坏在哪里 | 这里测得的 |
# |---|---|---|---|---|---|
# | softmax，朴素（第 02、05 课） | 是 | L² | L² | 内存：L × L 的分数 | 第 09 课：L 翻倍时峰值 ×4；S = 5,120 时每层保留 252 GB |
# | **路线一**：逐块计算、在线 softmax（第 09 课） | 是 | L | L² | 时间：计算量仍是平方级 | 第 09 课：L 翻倍时保留量 ×2；S = 5,120 时每层保留 0.442 GB |
# | 路线二：滑动窗口（第 09 课） | 否：只看 w 个键 | L · w | L · w | 比 w 更远的一切 | 第 10 节：被问的对在更远处时，回忆接近随机 |
# | 路线二：线性注意力，循环形式或分块形式（本课） | 否：是核，不是 softmax | 状态大小不变（另加输出） | L | 回忆：状态只有 d × e 个数 | 第 4 节：除输出外不随 L 增长；第 10 节：回忆随 N 下降 |
# | 路线二：衰减状态，GLA / Mamba-2（本课） | 否 | 状态大小不变 | L | 回忆：状态只有 d × e 个数，与线性注意力相同 | 第 10 节 |
# | 路线二：Nyström，m 个地标点（本课） | 否：F A⁺ B | L · m | L · m | 与所在分段不像的词元上的精度 | 第 8 节：误差随 m 的变化 |
# | 路线二：全局注意力（第 05 课） | 否：只有一行 | L | L | 每个词元得到同一行（门之前） | 第 8 节：m = 1 的 Nyström |
#
# （第 09 课的数字是它在上面打印的那些；本课的数字打印在所列的各节中。）
#
# ### 笔记里 AlphaFold 的故事，用本课程的数字来讲
#
# 原始笔记说，AlphaFold2 在 2021 年、FlashAttention 出现之前，面对训练选择了路线二；今天的 OpenFold 也用上了路线一。用本课程自己的数字：
#
# - AlphaFold2 的 extra MSA 堆栈沿一个很深的 MSA 的列做注意力：默认 1,024 条序列，它发布的部分模型用到 5,120 条（第 05 课）。普通列注意力要为反向传播保留权重：第 09 课打印了 S = 5,120（R = 300 列，8 个头）时每层 252 GB，而这个堆栈有 4 个块。AlphaFold2 在这里用的是全局列注意力（第 05 课，算法 19）：每列一个平均后的查询，这是路线二的一层。它的主堆栈有 48 个块，处理至多 512 条序列，保留精确的列注意力。
# - 路线一 FlashAttention 发表于 2022 年（Dao 等），在 AlphaFold2 之后。第 09 课打印了同一层在训练中逐块计算所保留的量：0.442 GB，即输出加上每个查询一个数。路线一在不改模型的前提下解决内存问题；路线二改的是模型，再用改过的模型去训练。
# - 开源复现 OpenFold 保留了 AlphaFold2 的模型，包括全局注意力，并为那些精确的层加上路线一：它的低内存注意力（第 09 课的 `_lma`，源自 Rabe 和 Staats），以及在 GPU 上可选的内核（DeepSpeed 的 Evoformer attention、FlashAttention）。
#
# ## 自测
#
# 1. 为什么线性注意力能在看到查询之前就对键求和，softmax 注意力却不能？
# 2. 练习 2 的循环形式无论 L 多大都只保存 d × e + d 个数。softmax 模型为了生成下一个词元要保留什么？它怎样增长？
# 3. 在分块形式中，如果在算出本块输出之前就用本块的键更新了状态，会出什么错？
# 4. 在 float16、d = 64 时，你的归一化项在 L = 512 和 1,024 之间溢出。本课给出了哪两种修法？各自的代价是什么？
# 5. 为什么 exp(cₜ − cₛ) 是安全的，而 Pₜ / Pₛ 不是？上三角为什么必须在 exp 之前设为 −inf，而不是在 exp 之后设为 0？
# 6. 第 08 课的门和 Mamba-2 的衰减都是 (0, 1) 之间的数。它们各自乘的是什么？各自能做到什么、另一个做不到？
# 7. 只有一个地标点的 Nyström 注意力与第 05 课的全局注意力模块之间，还剩哪三点差别？
# 8. 在第 10 节中，哪种注意力为每条序列保存的数最多？哪种回忆得最好？这是巧合吗？
#
# <details><summary>答案</summary>
#
# 1. φ(qᵢ) · φ(kⱼ) 是 qᵢ 的一个函数与 kⱼ 的一个函数的乘积，所以 Σⱼ (φ(qᵢ) · φ(kⱼ)) vⱼ = φ(qᵢ)ᵀ (Σⱼ φ(kⱼ) vⱼᵀ)：对键的求和只做一次。exp(qᵢ · kⱼ) 拆不成这样的乘积（用有限个特征做不到），所以每一对都要算。
# 2. 读过的每一个键和值（KV 缓存），每个头 2 · L · d 个数：随 L 线性增长，而循环形式的状态大小不变。
# 3. 本块自己的键被算了两次：一次通过状态，一次通过带掩码的二次项；而且查询还会通过状态看到本块中排在它后面的键。
# 4. 把状态和归一化项保持在 float32（状态的字节数是 float16 的两倍；输出再转回去），或者用输出上的归一化层代替归一化项（GLA 对每个头做 RMSNorm）：这时权重之和不再是一，这一层要依赖归一化层的尺度。
# 5. cₜ − cₛ 是两串对数之和的差，和它所代表的衰减一样小；Pₜ 和 Pₛ 会下溢到 0（或停在 float32 最小的数上），它们的比是 0 / 0 或 1.0。对角线以上 cₜ − cₛ 为正，它的 exp 可能是 inf：inf · 0 是 NaN，即使用 torch.where 在前向传播中把它藏起来，NaN 也会进入梯度；exp(−inf) = 0 则两个问题都没有。
# 6. 输出门乘的是注意力读出的内容，逐通道；它能让一个头的输出静音，却改变不了这一层记住的东西。衰减乘的是状态，此后每个词元都要读它；它能忘掉过去，却不能放大当前的输出。
# 7. 共享的键和值（第 05 课只有一个头，借给每个查询头），第 05 课模块中每个词元各自的门，以及掩码（第 05 课用带掩码的均值；Nyströmformer 的代码把填成零的填充也平均进地标点）。
# 8. softmax 保存得最多（每一个键和值，随 L 增长），回忆得也最好。这不是巧合：要回忆 N 个任意的对，总得有地方存它们；一个固定大小、只有 4 × (16 × 16 + 16) 个数的状态，在 N 接近它的大小时就只能把它们混在一起。
#
# </details>
#
# ## 小结
#
# - 线性注意力把 exp(q · k) 换成 φ(q) · φ(k)，φ = elu + 1；对键的求和只做一次，因果形式就是一个状态为 S（d × e）和 z（d）的循环神经网络。
# - 三种形式，同一个函数：二次的带掩码形式、循环形式、分块形式（块间传递不含本块的状态，块内用带掩码的二次形式）：在 float64 下相差不超过 1e-12，梯度也一样。循环形式和分块形式除输出外只保存大小不变的状态；累积和形式随 L 增长，二次形式随 L² 增长。
# - 两个陷阱：float16 的归一化项会溢出（d = 64 时在 L = 512 和 1,024 之间）：用 float32 累加，或者用归一化层代替归一化项；累积乘积之比会下溢：在对数空间里把衰减相加，并在 exp 之前加掩码。
# - 衰减状态 hₜ = aₜ hₜ₋₁ + kₜ vₜᵀ（GLA、Mamba-2）有一个用衰减矩阵加掩码的二次形式；它的衰减门控的是状态，而第 06 课和第 08 课的门缩放的是输出。
# - Nyström 通过 m 个地标点均值近似 softmax；一个地标点就是第 05 课的全局注意力，只少了共享的键和值、门和带掩码的均值。
# - 在回忆任务上，同样的训练之下，保留每一个键和值的 softmax 几乎记得每一对；状态大小固定的形式，要存的对越多，回忆得越少。路线二用模型能存下的东西换内存；路线一（第 09 课）让模型保持精确，付出的是时间。

