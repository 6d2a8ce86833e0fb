# %% [markdown] en="c0ff65f373ec"
# # 第 09 课：从不保存分数矩阵的注意力
#
# **先修要求：**第 01 课的 `stable_softmax` 和 `scaled_scores`（`exercises/softmax.py`：逐块注意力在每个块上都调用 `scaled_scores`），第 02 课的 `scaled_dot_product_attention`（`exercises/attention.py`：逐块计算的结果必须与它相等，看不到任何键的查询也按它的规则处理），第 04 课的 pair bias，以及第 05 课的内存测量。
#
# 第 05 课撞上了一堵墙：注意力要为每一对查询和键打一个分，分数张量随序列长度的平方增长，到了 AlphaFold 的序列深度，没有哪张显卡放得下。本课程依据的笔记给出了两条出路。**路线一**（FlashAttention）：把同样的注意力切成块来算，配合**在线** softmax，L × L 的矩阵从不完整写出；内存从 O(L²) 降到 O(L)，计算量仍是 O(L²)。**路线二**：改数学（滑动窗口、稀疏注意力、线性注意力）；第 05 课的全局注意力就是早期的一例。第 05 课动手实现了路线二，路线一只是作为库函数（`sdpa`）出现过。这一课由你亲手实现路线一。
#
# **本课你将**
# - 写出在线 softmax：按块维护累计最大值和累计和，靠重新缩放恒等式保持精确；在第 01 课那些跨度很大的行上，用 float64 和 float32 与你的 `stable_softmax` 对照；
# - 写出逐块计算的注意力前向传播，返回输出和每个查询的 logsumexp，掩码和加性偏置（pair bias）逐块施加，看不到任何键的查询按第 02 课的规则处理；
# - 写出靠重新计算的反向传播：一个只保存输出和 logsumexp 的 `torch.autograd.Function`（FlashAttention-2 的算法 2），并用 `gradcheck` 检验；
# - 像第 05 课那样测量峰值内存随 L 的变化（由形状预测，再由 profiler 证实），比较朴素、分块、逐块和 PyTorch 的 SDPA，推理和训练都测，并如实给出耗时；
# - 估算 AlphaFold 带 pair bias 的行注意力在 S = 5,120 时对 24/40/80 GB 显卡的需求，看 OpenFold 的低内存注意力在分块方式上有何不同；
# - 把两条路线结合起来：滑动窗口，跳过带状区域以外的块。

# %% en="e5c138b0f748"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

# %% en="acab4ff40994"
import math

import matplotlib.pyplot as plt
import torch

from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="0a879b325f40"
# ## 1. 墙，以及它从哪里来
#
# 本课程遇到过的三个分数张量，均按 float32 计算（GB = 10⁹ 字节）：第 05 课的列注意力，S = 5,120 条序列（R = 300 列，8 个头）；同样深度下 AlphaFold 带 pair bias 的行注意力（5,120 条序列各自让自己的 300 个残基两两打分，8 个头）；以及一个 2,000 残基的蛋白质在 S = 512 时的行注意力。

# %% en="fc8a0425bc66"
def score_tensor_gb(*shape):
    return math.prod(shape) * 4 / 1e9


print(f"column attention, S = 5,120, R = 300, 8 heads: (R, H, S, S) = "
      f"{score_tensor_gb(300, 8, 5120, 5120):7.1f} GB")
print(f"row attention,    S = 5,120, R = 300, 8 heads: (S, H, R, R) = "
      f"{score_tensor_gb(5120, 8, 300, 300):7.1f} GB")
print(f"row attention,    S = 512, R = 2,000, 8 heads: (S, H, R, R) = "
      f"{score_tensor_gb(512, 8, 2000, 2000):7.1f} GB")

# %% [markdown] en="74f4eb7ba61b"
# softmax 看起来需要一次拿到整行打分：既要最大值（为了数值稳定，见第 01 课），又要和（为了归一化）。训练看起来还要再用一次：softmax 的反向传播要用到权重。这两点其实都不成立。接下来三节把它们逐一拿掉。
#
# ## 2. 在线 softmax：累计最大值与累计和
#
# softmax(x)ᵢ = exp(xᵢ − m) / l，其中 m = maxⱼ xⱼ，l = Σⱼ exp(xⱼ − m)。每次读 x 的一块，只维护两个数：m 是目前见过的最大元素，l 是目前见过的元素的 exp(xⱼ − m) 之和。新的一块把最大值从 m 抬到 m′ 时，l 里已有的每一项都是相对旧的 m 算的。**重新缩放恒等式**
#
# exp(xⱼ − m′) = exp(xⱼ − m) · exp(m − m′)
#
# 告诉我们怎样一次把它们全部改好：l 乘以 exp(m − m′)，再加上新块自己的 exp(xⱼ − m′)。读完最后一块，m 和 l 恰好是整行的最大值与和，再走一遍就能写出 exp(xᵢ − m) / l。以 [1, 3, 2, 6] 为例，每块 2 个元素，手算如下：

# %% en="7924cbdda99c"
row = torch.tensor([1.0, 3.0, 2.0, 6.0], dtype=torch.float64)
m, l = -math.inf, 0.0
for start in (0, 2):
    block = row[start:start + 2]
    m_new = max(m, block.max().item())
    rescale = math.exp(m - m_new)  # 第一块之前 exp(-inf) = 0：没有需要重新缩放的
    l = l * rescale + torch.exp(block - m_new).sum().item()
    print(f"after block {block.tolist()}: m = {m_new}, l = {l:.4f}   (the old sum was "
          f"multiplied by {rescale:.4f})")
    m = m_new
print("online:", torch.exp(row - m) / l)
print("whole row at once:", torch.softmax(row, dim=-1))

# %% [markdown] en="7c310523fccc"
# 第一块给出 m = 3，l = e⁻² + e⁰ = 1.1353。第二块把最大值抬到 6：旧的和缩小为原来的 e⁻³（原先各项“以 3 为基准”，现在改为以 6 为基准），再加上这一块的 e⁻⁴ + e⁰。第一块除了每行两个数，什么都不用留。
#
# 被掩盖的元素是 −inf。一行读到的全是 −inf 时，累计最大值也是 −inf，而 exp(−inf − (−inf)) 是 NaN：这时改为减去 0（每一项都是 exp(−inf) = 0，本来就该如此）。
#
# ## 练习 1：`online_softmax`
#
# 在 `exercises/tiled.py` 中写出 `online_softmax(x, block_size)`：沿 x 的最后一轴计算 softmax，按每块 `block_size` 个元素维护累计最大值和累计和（最后一块可以更短），再对各块走第二遍。x 可以有任意多个前导轴，也可以含有 −inf，只要每行至少有一个有限值。累计最大值和累计和要用 x 的 dtype 和设备新建（`torch.full_like`、`torch.zeros_like`）：检查会用 float32 输入运行你的代码，也会在 PyTorch 的 `meta` 设备上运行。辅助函数 `key_blocks(n, block)`（已给出）列出各个切片。

# %% tags=["check"] en="623320a651cf"
from course.checks.lesson09 import check_online_softmax
from exercises.tiled import online_softmax

check_online_softmax(online_softmax)

# %% [markdown] en="19eb48bd5f89"
# 第 01 课那些跨度达 ±1000 的行（直接算 exp 会溢出），每块 2 个元素，用 float64 和 float32 分别与你的 `stable_softmax` 对照：

# %% en="be519c37debb"
from exercises.softmax import stable_softmax

wide_rows = [[-800.0, 0.0, 800.0], [-30.0, 0.0, 10.0], [1000.0, 1001.0, 1002.0],
             [-1000.0, -999.0, 1000.0]]
for dtype, tolerance in [(torch.float64, 1e-12), (torch.float32, 1e-6)]:
    x = torch.tensor(wide_rows, dtype=dtype)
    gap = (online_softmax(x, 2) - stable_softmax(x, dim=-1)).abs().max().item()
    print(f"{str(dtype):14}: max |online - stable| below {tolerance:g}: {gap < tolerance}, "
          f"result dtype {online_softmax(x, 2).dtype}")

# %% [markdown] en="cff9ebd14143"
# ## 3. 分成块：前向传播
#
# 注意力把同样的做法同时用在每一行查询上。把查询切成每块 `block_q` 行，把键（和值）切成每块 `block_k` 个：每一对（查询块，键块）是分数矩阵的一**块**，含 (block_q, block_k) 个数。对每个查询块，依次走过各个键块，并为每个查询维护
#
# - m 和 l，与在线 softmax 相同；
# - 输出累加器 acc = Σⱼ exp(sᵢⱼ − m) vⱼ，对目前见过的键求和。
#
# 设某块的分数为 s（你在第 01 课写的 `scaled_scores(q_tile, k_tile)`，加上这一块的偏置，掩码为 False 处置为 −inf），则
#
# m′ = max(m, rowmax(s))，p = exp(s − m′)，l ← l · exp(m − m′) + rowsum(p)，acc ← acc · exp(m − m′) + p v_tile
#
# l 和 acc 都是“相对 m”的和，所以 m 上升时两者都要重新缩放。走完最后一个键块，out = acc / l，**lse = m + log l**，即该查询分数的 logsumexp：softmax 分母的对数，每个查询一个数，反向传播要用到它。看不到任何键的查询 l 一直是 0：令它的 out = 0（第 02 课的规则），lse = log 0 = −inf。
#
# 能与打分 (*, q, k) 广播的偏置或掩码，例如第 04 课的 pair bias (H, R, R) 对行注意力的分数 (S, H, R, R)，或者填充掩码 (B, 1, k)，也切成同样的块：已给出的辅助函数 `tile(t, rows, cols)` 以视图的形式返回 t 的 (rows, cols) 块，长度为 1 的查询轴或键轴整段保留，广播照样成立。整个过程不会新建任何 q × k 大小的东西。
#
# ## 练习 2：`tiled_attention_forward`
#
# 在 `exercises/tiled.py` 中写出 `tiled_attention_forward(q, k, v, bias=None, mask=None, block_q=64, block_k=64)`：q (*, q, c)、k (*, k, c)、v (*, k, c_v) 的前导轴可以广播；返回 `(out, lse)`，out (*, q, c_v) 等于第 02 课的注意力，lse 的形状是 (*, q)。在每个块上调用你在第 01 课写的 `scaled_scores`。q 和 k 的长度可以不同，也都不必是块大小的整数倍。把每个查询块的结果写进同一个输出张量的相应行（用第一块结果的 `new_empty` 新建它，dtype 和设备都会保持不变）。检查还会用 profiler 测量你的前向传播：它占用的内存必须远小于一个 q × k 分数张量。

# %% tags=["check"] en="c5f6a6ba5d0e"
from course.checks.lesson09 import check_tiled_forward
from exercises.tiled import tiled_attention_forward

check_tiled_forward(tiled_attention_forward)

# %% [markdown] en="709d22bfa012"
# 在 float64 下，把你的逐块结果与你在第 02 课写的注意力对照，用的是带第 04 课 pair bias 的行注意力：一个 MSA 有 3 条序列、4 个头、R = 50 个残基（50 既不能被块大小 16 整除，也不能被 12 整除），偏置 (4, 50, 50) 由各条序列共享，填充掩码让最后 5 个残基成为填充，并让序列 0 的查询 0 完全看不到任何键。

# %% en="6ebafce8345e"
from exercises.attention import scaled_dot_product_attention

generator = torch.Generator().manual_seed(9)
q, k, v = (torch.randn(3, 4, 50, 8, generator=generator, dtype=torch.float64) for _ in range(3))
pair_bias = torch.randn(4, 50, 50, generator=generator, dtype=torch.float64)
mask = torch.ones(3, 1, 50, 50, dtype=torch.bool)
mask[..., 45:] = False  # 填充的残基
mask[0, :, 0] = False   # 序列 0 的查询 0：什么也看不到

out, lse = tiled_attention_forward(q, k, v, pair_bias, mask, block_q=16, block_k=12)
reference = scaled_dot_product_attention(q, k, v, bias=pair_bias, mask=mask)
scores = (q @ k.transpose(-2, -1) / math.sqrt(8) + pair_bias).masked_fill(~mask, -math.inf)
print("max |tiled - lesson 02| below 1e-12:", (out - reference).abs().max().item() < 1e-12)
print("lse equals torch.logsumexp of the scores:",
      torch.allclose(lse, torch.logsumexp(scores, dim=-1), rtol=0, atol=1e-12))
print("the blind query: output", out[0, 0, 0, :3].tolist(), " lse", lse[0, :, 0].tolist())

# %% [markdown] en="a84dfd713d78"
# 下面的小部件逐块走过一个 24 × 24 的分数矩阵。左图是到目前为止访问过的块（暗色的块还没轮到，红框是正在处理的块；整个矩阵只是为了画图才画出来）。右图是某一查询行在它的每个块之后的累计最大值和累计和：最大值一跳升，和就被缩小，然后再增长，最后一个块正好落在整行的值上（虚线）。

# %% tags=["nbval-ignore-output"] en="02122445de76"
from course.widgets.lesson09 import tiles_explorer

tiles_explorer()

# %% [markdown] en="1ef87daf5bd8"
# ## 4. 靠重新计算的反向传播
#
# PyTorch 的 autograd 可以照原样对你的逐块前向传播求导，但为此要保留每一个中间结果：每个块的 p，合起来就是整个权重矩阵。省下的内存到训练时又回来了。FlashAttention 的做法是手写反向传播，由 q、k 和保存下来的 lse **重新计算**每一块的权重：P = exp(s − lse)，恰好就是 softmax 权重，一次一块。
#
# 设 dO 是损失对输出的梯度（autograd 交给 `backward` 的量），O = P V、P = softmax(S)、S = Q Kᵀ / √c + bias 的梯度为（FlashAttention-2，Dao 2023，算法 2）：
#
# - dV = Pᵀ dO，dP = dO Vᵀ；
# - dS = P ∘ (dP − D)，其中 **D = rowsum(dO ∘ O)**，每个查询一个数。（由 softmax 的雅可比矩阵得 dSᵢⱼ = Pᵢⱼ (dPᵢⱼ − Σₖ Pᵢₖ dPᵢₖ)，而 Σₖ Pᵢₖ dPᵢₖ = Σₖ Pᵢₖ (dOᵢ · vₖ) = dOᵢ · Oᵢ：由 O 和 dO 一次算出，不需要 P 的任何一行）；
# - dQ = dS K / √c，dK = dSᵀ Q / √c，dbias = dS，再沿偏置被广播的轴求和（被 S 条序列共享的 pair bias 得到的是对这些序列的和）。
#
# 每一项都是对块的求和：外层遍历键块，内层遍历查询块，重新计算这一块的 P，把它的贡献加到（这个键块的）dV、dK 和（这个查询块的）dQ、dbias 上。无论前向还是反向传播，都不会保存任何 q × k 大小的东西。
#
# ## 练习 3：`TiledAttention`
#
# 在 `exercises/tiled.py` 中写出 `TiledAttention(torch.autograd.Function)` 的两个静态方法：
#
# - `forward(ctx, q, k, v, bias, mask, block_q, block_k)`：用你的 `tiled_attention_forward` 算出 out 和 lse；保存 q、k、v、bias、mask、out 和 lse（没有偏置或掩码时，`ctx.save_for_backward` 也接受 None），把块大小记在 ctx 上；返回 out；
# - `backward(ctx, grad_out)`：依次返回 q、k、v 和 bias 的梯度，形状各与输入相同（`sum_to_size` 可以撤销广播），然后为 mask、block_q 和 block_k 各返回 None。看不到任何键的查询 lse = −inf：在那里改为减去 0，使它的权重以及经过这些权重的梯度都是 0。
#
# `tiled_attention(q, k, v, bias, mask, block_q, block_k)`（已给出）调用 `TiledAttention.apply`。检查会把你的梯度与参考实现对照，运行 `torch.autograd.gradcheck`，并测量你的前向传播为反向传播留下了多少内存，以及反向传播本身的峰值。

# %% tags=["check"] en="25bddefcd511"
from course.checks.lesson09 import check_tiled_backward
from exercises.tiled import tiled_attention

check_tiled_backward(tiled_attention)

# %% [markdown] en="01e9ad5ac77c"
# 在 float64 下，把你的梯度与 autograd 对你第 02 课注意力求出的梯度对照，用的是同一个行注意力（pair bias、填充、那个看不到键的查询），再在一个小例子上运行 `gradcheck`：

# %% en="b21084456152"
def gradients(attention, q, k, v, bias, weights):
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    out = attention(*leaves)
    return torch.autograd.grad((out * weights).sum(), leaves)


loss_weights = torch.randn(3, 4, 50, 8, generator=generator, dtype=torch.float64)
tiled_grads = gradients(lambda *t: tiled_attention(*t, mask, 16, 12), q, k, v, pair_bias,
                        loss_weights)
naive_grads = gradients(lambda *t: scaled_dot_product_attention(*t[:3], bias=t[3], mask=mask),
                        q, k, v, pair_bias, loss_weights)
for name, mine, theirs in zip(["dq", "dk", "dv", "dbias"], tiled_grads, naive_grads):
    print(f"{name:6} shape {str(tuple(mine.shape)):15} max |tiled - autograd| below 1e-12: "
          f"{(mine - theirs).abs().max().item() < 1e-12}")
small = [t[:1, :1, :6, :3].clone().requires_grad_(True) for t in (q, k, v)]
small_bias = pair_bias[:1, :6, :6].clone().requires_grad_(True)
print("gradcheck:", torch.autograd.gradcheck(
    lambda *t: tiled_attention(*t, mask[:1, :, :6, :6], 4, 4), (*small, small_bias)))

# %% [markdown] en="2cc94aa20a1f"
# ## 5. 像第 05 课那样测量内存
#
# 在形状为 (R, H, L, c) 的 q、k、v 上用四种方式计算注意力：R = 8 个互相独立的切片（比如列），H = 4 个头，L 个查询和键，c = 16，float32。`naive` 同时保存所有切片的 L × L 打分；`chunked` 一次处理 4 个切片（第 05 课）；`tiled` 是你的逐块注意力（128 × 128 的块）；`sdpa` 是 `torch.nn.functional.scaled_dot_product_attention`。每种方式都分推理（`no_grad` 下的前向传播）和训练（前向传播，再反向传播）两种情况：
#
# - **预测**：只凭形状，在 `meta` 设备上运行，把每一时刻存活的张量字节数加起来（`course/tiled_memory.py`，建立在第 05 课的跟踪器之上；训练时它也能看到 autograd 为反向传播保存的张量）；
# - **测量**：在 CPU 上由 profiler 的内存分配事件得出。
#
# “峰值”是调用在输入之外最多占用的内存；“保留”是前向传播结束后为反向传播留下的内存（连同输出）。

# %% en="619599814e8c"
from course.memory import chunked_column_attention, naive_column_attention
from course.tiled_memory import measure_call, predict_call

methods = {
    "naive": naive_column_attention,
    "chunked": chunked_column_attention,
    "tiled": lambda q, k, v: tiled_attention(q, k, v, None, None, 128, 128),
    "sdpa": torch.nn.functional.scaled_dot_product_attention,
}
lengths = [128, 256, 512]
memory = {}
for name, fn in methods.items():
    for train in (False, True):
        for L in lengths:
            shapes = [(8, 4, L, 16)] * 3
            memory[name, train, L] = (predict_call(fn, shapes, train=train),
                                      measure_call(fn, shapes, train=train))

# %% tags=["nbval-ignore-output"] en="0f16c6ca71ce"
print(f"{'method':8} {'mode':9} {'L':>5} {'predicted peak':>15} {'measured peak':>14} "
      f"{'predicted kept':>15} {'measured kept':>14}   (MB)")
for (name, train, L), (predicted, measured) in memory.items():
    print(f"{name:8} {'training' if train else 'inference':9} {L:>5} "
          f"{predicted.peak / 1e6:>15.2f} {measured.peak / 1e6:>14.2f} "
          f"{predicted.held_after / 1e6:>15.2f} {measured.held_after / 1e6:>14.2f}")

# %% en="1cf35be0ad20"
def agree(name, train):
    """Predicted and measured peak and kept bytes within 0.1 % at every L."""
    return all(abs(predicted.peak - measured.peak) <= 1e-3 * measured.peak and
               abs(predicted.held_after - measured.held_after) <= 1e-3 * measured.held_after
               for predicted, measured in (memory[name, train, L] for L in lengths))


for name in ["naive", "chunked", "tiled"]:
    print(f"{name:8} predicted = measured within 0.1 %: inference {agree(name, False)}, "
          f"training {agree(name, True)}")
sdpa_ratio = memory["sdpa", False, 512][1].peak / memory["sdpa", False, 512][0].peak
print(f"sdpa     measured / predicted peak at L = 512, inference: below 0.1: {sdpa_ratio < 0.1}")

# %% [markdown] en="4e46fd0e1a19"
# 对朴素、分块和逐块这三种方式，由形状预测的字节数就是 CPU 实际分配的字节数，推理和训练都如此。SDPA 和第 05 课一样，运行的是 PyTorch 在 CPU 上的融合内核，它按块计算，占用的内存远少于 `meta` 上未融合路径的预测（而且它分配多少内存取决于机器，包括线程数）。再看增长：L 翻倍时，峰值和训练时保留的内存各增长多少倍（用的是预测值，上面已由 profiler 证实，所以在每台机器上都一样）。朴素和分块：约 4 倍，即分数的 L²。逐块：峰值增长不到 2 倍，因为块的大小固定，随 L 增长的只有输出和 logsumexp；这两者正是训练时保留的内存，恰好翻倍。

# %% tags=["nbval-ignore-output"] en="a7a9261a0620"
print(f"{'method':8} {'mode':9} {'peak x, L 128->256':>19} {'256->512':>9} {'kept x, 256->512':>17}")
for name in ["naive", "chunked", "tiled"]:  # predicted: the same bytes on every machine
    for train in (False, True):
        peaks = [memory[name, train, L][0].peak for L in lengths]
        kept = [memory[name, train, L][0].held_after for L in lengths]
        print(f"{name:8} {'training' if train else 'inference':9} {peaks[1] / peaks[0]:>19.2f} "
              f"{peaks[2] / peaks[1]:>9.2f} {kept[2] / kept[1]:>17.2f}")

# %% en="6f64f07ce9ba"
for name in ["naive", "chunked", "tiled"]:
    for train in (False, True):
        peaks = [memory[name, train, L][0].peak for L in lengths]
        kept = [memory[name, train, L][0].held_after for L in lengths]
        bound, holds = ("< 2", lambda x: x < 2) if name == "tiled" else ("> 3.5", lambda x: x > 3.5)
        print(f"{name:8} {'training' if train else 'inference':9} peak x {bound} at each doubling: "
              f"{all(holds(b / a) for a, b in zip(peaks, peaks[1:]))}, kept x {kept[2] / kept[1]:.2f}")

# %% tags=["nbval-ignore-output"] en="436aec0f2c9b"
fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
colours = {"naive": "tab:red", "chunked": "tab:orange", "tiled": "tab:purple", "sdpa": "tab:green"}
for ax, train in zip(axes, (False, True)):
    for name in methods:
        ax.loglog(lengths, [memory[name, train, L][1].peak / 1e6 for L in lengths], "o-",
                  color=colours[name], label=name)
    ax.set(xlabel=_("L (queries = keys)"), ylabel=_("peak MB above the inputs (profiler)"),
           title=_("training: forward and backward") if train else _("inference: forward"))
    ax.legend()
plt.show()

# %% [markdown] en="5219d0a9dcc2"
# 朴素注意力在两种情况下都随 L² 增长，分块只是把它除以一个常数（保存 4 个切片而不是 8 个切片的分数）。训练时分块一点也省不下：autograd 保留了每一块的权重，也就是“保留”那一栏，与朴素注意力完全相同。你的逐块注意力线性增长：训练时它保留的只是输出和每个查询一个数。
#
# ### 再看第 05 课的墙
#
# 第 05 课预测了列注意力（R = 300 列，8 个头，c = 8，float32）在 24/40/80 GB 显卡上什么时候耗尽内存。换成你的逐块注意力再做一次：朴素和分块的需求是 S 的二次函数（第 05 课已精确求解），逐块的需求在一行跨过三块之后就是线性的（所以在 `meta` 上预测 S = 384 和 512 两处就能定出这条直线）。训练时，每一层都要为反向传播保留权重：朴素和分块保留 (R, H, S, S) 个，逐块只保留输出和 logsumexp。

# %% tags=["nbval-ignore-output"] en="f7b880e86927"
from course.memory import GB, predicted_need, predicted_wall
from course.tiled_memory import fit_line, solve_need


def tiled_columns(q, k, v):
    return tiled_attention(q, k, v, None, None, 128, 128)


def tiled_need(S):  # 输入 + 预测的峰值，与第 05 课计算显卡需求的方式相同
    return 3 * 300 * 8 * S * 8 * 4 + predict_call(tiled_columns, [(300, 8, S, 8)] * 3).peak


line = fit_line(tiled_need, (384, 512))
print(f"check of the line at S = 640: predicted on meta {tiled_need(640) / 1e9:.4f} GB, "
      f"from the line {(line[1] * 640 + line[2]) / 1e9:.4f} GB")
print(f"{'card':>7} {'naive':>9} {'chunked':>9} {'tiled':>11}")
for capacity in (24, 40, 80):
    print(f"{capacity:>4} GB {predicted_wall('naive', capacity * GB, 300, 8, 8):>9,} "
          f"{predicted_wall('chunked', capacity * GB, 300, 8, 8):>9,} "
          f"{solve_need(line, capacity * GB):>11,}")
S = 5120
print(f"\nat S = 5,120, one layer: naive needs {predicted_need('naive', 300, 8, S, 8) / GB:.0f} GB, "
      f"chunked {predicted_need('chunked', 300, 8, S, 8) / GB:.1f} GB, "
      f"tiled {(line[1] * S + line[2]) / GB:.2f} GB (inference)")
kept_tiled = 300 * 8 * S * (8 + 1) * 4
print(f"kept for training, per layer: naive and chunked {300 * 8 * S * S * 4 / GB:.0f} GB of "
      f"weights, tiled {kept_tiled / GB:.3f} GB (output and logsumexp)")
check_S = 256
kept = predict_call(tiled_columns, [(300, 8, check_S, 8)] * 3, train=True).held_after
print(f"(at S = {check_S}, meta's kept bytes for tiled = output + logsumexp: "
      f"{kept == 300 * 8 * check_S * (8 + 1) * 4})")

# %% [markdown] en="453f039bfbb8"
# 逐块计算把第 05 课的墙从一两千条序列推到了 24 GB 显卡上的数万条、80 GB 显卡上的数十万条：剩下的只有输入、输出和几个块，其中只有块的固定大小与 S 无关。按列分块在推理时几乎同样有效（第 05 课），在训练时毫无用处；逐块计算两者兼顾，因为反向传播靠重新计算，而不是靠保留。
#
# ## 6. 如实看待耗时
#
# 内存降下来了，时间呢？在这台 CPU 上先不计时运行一次，再计时运行一次，L = 256，形状同上：

# %% tags=["nbval-ignore-output"] en="6c3caf76e588"
from course.measure import best_time
from course.tiled_memory import make_tensors

inputs = make_tensors([(8, 4, 256, 16)] * 3)
grad_inputs = make_tensors([(8, 4, 256, 16)] * 3, requires_grad=True)


def train_step(fn):
    return lambda: fn(*grad_inputs).sum().backward()


seconds = {}
for name in ("naive", "tiled", "sdpa"):
    with torch.no_grad():
        forward = best_time(lambda: methods[name](*inputs), repeats=1)
    seconds[name] = (forward, best_time(train_step(methods[name]), repeats=1))
    print(f"{name:6} forward {seconds[name][0] * 1e3:8.1f} ms   training step "
          f"{seconds[name][1] * 1e3:8.1f} ms")
print(f"tiled / sdpa: forward x{seconds['tiled'][0] / seconds['sdpa'][0]:.1f}, "
      f"training x{seconds['tiled'][1] / seconds['sdpa'][1]:.1f};  tiled / naive: forward "
      f"x{seconds['tiled'][0] / seconds['naive'][0]:.1f}, training "
      f"x{seconds['tiled'][1] / seconds['naive'][1]:.1f}")

# %% [markdown] en="1c84bf320129"
# 你的逐块实现与朴素注意力做的是同样的算术，还多一点（重新缩放，以及训练时打分要算两遍）。上面的单元打印了各自在这里的耗时，每种只计时一次：机器上同时还有别的任务时，单次计时每次运行都不一样，所以这些倍数只能粗看（课程仓库中的 `scripts/bench_lesson09.py` 取多次中的最快者）。融合内核之所以快，靠的正是纯 PyTorch 给不了你的逐块实现的东西：
#
# - **没有融合。**块循环里的每一行都是一个单独的 PyTorch 运算：打分写进内存，被 `exp` 读回，再写出，又被与 v 的矩阵乘法读入。融合内核（CPU 上 PyTorch 的 SDPA，GPU 上的 FlashAttention）让一个块从打分到输出始终留在寄存器或片上存储里，每个块只读一次 q、k、v，只写一次输出。
# - **Python 在逐块循环。**每个块要调用十来个算子，每次调用都有几微秒的 Python 与分派开销，与块的大小无关：块越小，开销占比越大。
# - **FlashAttention 省下的是内存读写，不是算术**（其论文标题里的“IO-awareness”）。在 GPU 上，朴素注意力要把 L × L 矩阵在较慢的高带宽显存里读写好几遍；FlashAttention 的 CUDA 内核（以及它的 Triton 版本）从不让这个矩阵离开高速的片上存储，所以在那里它反而比朴素注意力*更快*，尽管反向传播要重新计算。
#
# 你写的算法就是真正的算法；它的速度要靠编译器或手写内核来实现。
#
# ## 7. AlphaFold 带 pair bias 的行注意力，S = 5,120
#
# 在 AlphaFold2 的 MSA 模块中，行注意力让每条序列的各残基互相关注，并加上来自 z 的 pair bias（第 04 课），形状 (H, R, R)，由全部 S 条序列共享：q、k、v 为 (S, H, R, c)，打分为 (S, H, R, R)。取 extra MSA 最深的设置 S = 5,120（AlphaFold2 的默认值是 1,024；5,120 用于部分已发布的模型，见第 05 课），8 个头，c = 8：对一层的注意力核心（含输入），一张显卡能放下多长的蛋白质（R 个残基）？朴素的需求是 R 的二次函数（三次预测），逐块（64 的块）是线性的（两次预测）。

# %% tags=["nbval-ignore-output"] en="1d1220cdfe46"
from course.tiled_memory import fit_need

S, H, c = 5120, 8, 8


def row_shapes(R):
    return [(S, H, R, c)] * 3 + [(H, R, R)]


def naive_rows(q, k, v, bias):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c) + bias, dim=-1) @ v


def tiled_rows(q, k, v, bias):
    return tiled_attention(q, k, v, bias, None, 64, 64)


def row_need(fn, R):
    return (3 * S * H * R * c + H * R * R) * 4 + predict_call(fn, row_shapes(R)).peak


naive_curve = fit_need(lambda R: row_need(naive_rows, R), (128, 256, 384))
tiled_curve = fit_line(lambda R: row_need(tiled_rows, R), (192, 256))
print(f"R = 300: naive needs {row_need(naive_rows, 300) / GB:.1f} GB, "
      f"tiled {row_need(tiled_rows, 300) / GB:.2f} GB (inference, one layer)")
print(f"kept for training at R = 300, per layer: naive {S * H * 300 * 300 * 4 / GB:.1f} GB of "
      f"weights, tiled {S * H * 300 * (c + 1) * 4 / GB:.3f} GB")
print(f"{'card':>7} {'naive: largest R':>17} {'tiled: largest R':>17}")
for capacity in (24, 40, 80):
    print(f"{capacity:>4} GB {solve_need(naive_curve, capacity * GB):>17,} "
          f"{solve_need(tiled_curve, capacity * GB):>17,}")

# %% [markdown] en="61db6bbe371a"
# 推理时，R = 300 的朴素行注意力一层约需 31 GB（两个 14.7 GB 的分数张量会短暂同时存在，第 05 课讲过原因）：24 GB 显卡放不下，40 GB 和 80 GB 放得下。训练时它每层要保留 14.7 GB 的权重，而 extra MSA 模块有 4 个块，后面还有主模块的 48 个块。逐块计算时，同一层只保留不到 0.5 GB，一张显卡能容纳的蛋白质长度也从几百个残基增加到几千个。
#
# 耗时并没有降低。两者都要做两遍 S · H · R² · c 次乘加；这里在少数几条序列上测量（工作量与 S 成正比，所以单元按比例换算到 S = 5,120）：

# %% tags=["nbval-ignore-output"] en="f1154eb3d7ce"
few = 4
row_inputs = make_tensors([(few, H, 300, c)] * 3 + [(H, 300, 300)])
with torch.no_grad():
    for name, fn in [("naive", naive_rows), ("tiled", tiled_rows)]:
        per_call = best_time(lambda: fn(*row_inputs), repeats=1)
        print(f"{name:6}: {per_call * 1e3:7.1f} ms for S = {few}, about "
              f"{per_call * S / few:6.1f} s per layer at S = 5,120 on this CPU")

# %% [markdown] en="677894a9d187"
# ### OpenFold 的低内存注意力
#
# AlphaFold2 的开源重新实现 OpenFold 也走了路线一：`openfold/model/primitives.py` 中的 `_lma`（“low-memory attention”，依据 Rabe 与 Staats 2021，“Self-attention does not need O(n²) memory”），在设置 `use_lma` 时使用，它的文档把这项设置归为推理用途。OpenFold 无法从软件包索引安装（那里的 `openfold` 包构建失败，`openfold3` 是 AlphaFold 3 的后继实现，依赖繁多），所以课程仓库中的一个测试（`test_lesson09_openfold.py`，不在发给学生的材料里）重新表述了 `_lma` 的算法（读自 aqlaboratory/openfold 的提交 ce0029e，2025 年九月），连同它外围的行注意力：查询先除以 √c，MSA 掩码作为加性偏置 10⁹ (mask − 1)，pair bias 为 LayerNorm(z) → Linear(c_z, H)，以及门控和输出投影。在复制过来的权重上、float64 下，你的逐块行注意力与它相差不超过 1e-12，第 06 课的模块也一样。它的分块方式与 FlashAttention 的不同之处：
#
# - **先拆分，后合并。**对每个查询块，`_lma` 算出每个键块的最大值、指数和与加权的值，*全部保留*，最后再以其中最大的最大值为基准一次合并。FlashAttention 则把每一块立刻并入累计的 (m, l, acc)，不为任何块保留东西。
# - **块的大小为内存而定，不为芯片而定。**默认是 1,024 个查询 × 4,096 个键。R = 300 时一块就装下整行，所以行注意力实际上没有分块；它在长轴上才起作用，例如 S = 5,120 时 extra MSA 的列。FlashAttention 的块（64–128）是按 GPU 片上存储的大小来定的。
# - **没有自己的反向传播。**`_lma` 用可微的 PyTorch 运算写成，所以训练时 autograd 会保留每一块的指数：合起来是一整个分数矩阵（测试测量了这一点）。而且它在合并各块时对每块的最大值做了 detach，在该块的指数里却没有，所以一旦键块多于一个，它由 autograd 得到的 q 和 k 的梯度就不是注意力的梯度（测试也展示了这一点）：这是它只用于推理的又一个理由。你的 `TiledAttention` 只保留输出和 logsumexp，并有自己的反向传播。
# - **掩码作为偏置。**填充的键被加上 −10⁹；如果一个查询的键*全部*是填充，它的每个分数都平移同样的量，结果等于什么都没有掩盖。第 02 课的规则，以及你用布尔掩码的逐块注意力，给它的是全零。
#
# ## 8. 路线二放在旁边：滑动窗口
#
# 路线二改变的是模型：查询 i 只看 |i − j| ≤ w 的键。写成掩码，就是沿对角线的一条带，你的逐块注意力加上这个掩码就能精确算出，但仍然要访问每一块，其中大多数块根本碰不到这条带。`sliding_window_attention`（已在 `exercises/tiled.py` 中给出，它调用你的 `tiled_attention_forward`）只访问与各查询块的带相交的键块，并且只为那一段构造带状掩码。L = 512，窗口 16，块大小 64：

# %% en="2c3c3f82a539"
from exercises.tiled import band_mask, key_blocks, sliding_window_attention

L, window, block = 512, 16, 64
generator = torch.Generator().manual_seed(11)
qw, kw, vw = (torch.randn(4, L, 16, generator=generator, dtype=torch.float64) for _ in range(3))
band = band_mask(slice(0, L), slice(0, L), window)

skipping, visited = sliding_window_attention(qw, kw, vw, window, block)
every_tile, _lse = tiled_attention_forward(qw, kw, vw, mask=band, block_q=block, block_k=block)
all_tiles = len(key_blocks(L, block)) ** 2
print(f"max |skipping tiles - every tile with the band mask| below 1e-12: "
      f"{(skipping - every_tile).abs().max().item() < 1e-12}")
print(f"tiles computed: {visited} of {all_tiles} ({visited / all_tiles:.1%}); "
      f"scores computed: {visited * block * block:,} instead of {L * L:,}; "
      f"keys each query sees: at most {2 * window + 1}")

# %% tags=["nbval-ignore-output"] en="58d9fc3ffb12"
from course.memory import profile_bytes

window_inputs = [t.float() for t in (qw, kw, vw)]
with torch.no_grad():
    runs = {
        "every tile, band mask": lambda: tiled_attention_forward(
            *window_inputs, mask=band_mask(slice(0, L), slice(0, L), window),
            block_q=block, block_k=block),
        "band tiles only": lambda: sliding_window_attention(*window_inputs, window, block),
    }
    for name, run in runs.items():
        print(f"{name:22}: peak {profile_bytes(run).peak / 1e6:6.2f} MB, "
              f"{best_time(run, repeats=1, warmup=False) * 1e3:7.1f} ms")

# %% [markdown] en="3dfa938d8cbb"
# 两条路线可以结合：窗口把工作量从 L² 个分数降到约 L · (block + 2w) 个，逐块计算让内存保持线性（第一行用到的完整 L × L 布尔掩码本身就是平方级的；第二行只为每块构造它那一段带）。路线二的代价由模型而不是计算机来付：信息每层最多传播 w 个位置，相距很远的位置之间要经过很多层才能关注到对方（或者借助少数几个全局词元，如 Longformer 和 BigBird；第 05 课的全局注意力就是这样一种汇总）。
#
# ## 9. 在 GPU 上
#
# 在 CUDA 显卡上，下一个单元让朴素注意力、你的逐块注意力和 PyTorch 的 SDPA（在那里它运行 FlashAttention 内核）的 L 不断增大，推理和训练各测一遍，直到显卡内存耗尽或用完 30 秒的时间预算，然后显示峰值（`course/tiled_gpu.py`）。没有 GPU 时，它显示在真实显卡上记录下来的运行（`data/lesson09/gpu_runs.json`；在课程仓库中，`python scripts/record_gpu_run09.py --source "..."` 可以添加一次运行）。

# %% tags=["nbval-ignore-output"] en="d3c37fcbe29a"
from course import tiled_gpu

if torch.cuda.is_available():
    tiled_gpu.show(tiled_gpu.measure(tiled_attention, source="this notebook", log=lambda line: None))
elif tiled_gpu.load():
    for record in tiled_gpu.load():
        tiled_gpu.show(record)
else:
    print("No CUDA GPU here, and no GPU run of this lesson is recorded yet "
          "(data/lesson09/gpu_runs.json holds none).")

# %% [markdown] en="bf36e7260bcf"
# 在那里可以预期：当 L × L 的分数（乘以头数，短暂时是两份）超过显卡容量时，朴素注意力耗尽内存；SDPA 的 FlashAttention 内核和你的逐块实现线性增长，因时间而不是内存停下；SDPA 比你的逐块实现快得多，原因见第 6 节。
#
# ## 自测
#
# 1. 在线 softmax 中，某一块把最大值从 5 抬到 9。累计和要乘以多少？为什么？
# 2. 为什么输出累加器也必须重新缩放，而不只是和？
# 3. 某个查询的前三个键块全被掩盖。这之后它的 m 和 l 是多少？没有“改为减去 0”的规则会出什么问题？
# 4. 前向传播为反向传播保存了什么？对形状为 (S, H, R, c) 的 q、k、v，这些有多大？
# 5. 为什么 D = rowsum(dO ∘ O) 可以代替 Σₖ Pᵢₖ dPᵢₖ？这对逐块计算为什么重要？
# 6. 把第 05 课的列每次分 4 列计算，推理时已经能把 S = 5,120 放进几 GB。逐块计算还带来了什么？
# 7. 你的逐块注意力由 PyTorch 运算写成，融合内核的优势它一样也没有。FlashAttention 在 GPU 上比朴素注意力慢吗？为什么？
#
# <details><summary>答案</summary>
#
# 1. 乘以 exp(5 − 9) = e⁻⁴：和中的每一项原来是 exp(xⱼ − 5)，现在要变成 exp(xⱼ − 9)。
# 2. acc = Σⱼ exp(sⱼ − m) vⱼ 同样是相对 m 的和；只有两者相对同一个 m，out = acc / l 才正确（只有两者都乘上这个因子，它才会在比值里约掉）。
# 3. m = −inf，l = 0。没有这条规则，p = exp(−inf − (−inf)) = NaN，而且这个 NaN 会一直留在 l 和 acc 里，影响后面的每一块；有了它，p = exp(−inf − 0) = 0。
# 4. q、k、v、偏置和掩码（都是输入，本来就在内存里），输出 (S, H, R, c) 和 logsumexp (S, H, R)：每个查询多一个数，而不是 (S, H, R, R) 的权重。
# 5. Σₖ Pᵢₖ dPᵢₖ = Σₖ Pᵢₖ (dOᵢ · vₖ) = dOᵢ · (Σₖ Pᵢₖ vₖ) = dOᵢ · Oᵢ。前者需要 P 的一整行；dOᵢ · Oᵢ 一行也不需要，所以在块循环之前为每个查询算一次就行。
# 6. 训练：autograd 会为反向传播保留每一块的权重，合起来是 (R, H, S, S)，而逐块计算只保留输出和 logsumexp。另外，一条很长的序列（只有一个切片）根本无法按切片分块；逐块计算在序列内部切分。
# 7. 不，它更快：在 GPU 上，注意力的开销主要在于让 L × L 矩阵在慢速显存里进出，而融合内核从不这样做；这里 CPU 上的逐块实现没有因为分块而变快，是因为每一块都是从 Python 调用的十来个独立运算。
#
# </details>
#
# ## 小结
#
# - 在线 softmax 按块读取一行，维护累计最大值 m 和累计和 l；m 升到 m′ 时，l（以及任何累加器）乘以 exp(m − m′)。结果与 softmax 完全相等。
# - 逐块注意力把这个方法用在 (block_q, block_k) 块上，每块施加自己那一块的偏置和掩码，返回输出和 lse = m + log l，从不保存 q × k 的张量。
# - 反向传播重新计算每一块的权重 P = exp(s − lse)：dV = Pᵀ dO，dS = P ∘ (dO Vᵀ − D)，其中 D = rowsum(dO ∘ O)，dQ = dS K / √c，dK = dSᵀ Q / √c，dbias = dS 沿广播的轴求和（FlashAttention-2）。训练时只保留输出和每个查询一个数。
# - 内存由形状预测、再由 profiler 证实：朴素（以及分块）注意力随 L² 增长，逐块计算线性增长；第 05 课的墙从一两千条序列推到了数万条（24 GB）乃至数十万条（80 GB）。计算量仍是平方级的，在纯 PyTorch 中逐块计算并不带来速度：FlashAttention 的速度来自内核中的融合。
# - OpenFold 的 `_lma` 分块方式不同（先拆分后合并，块很大，没有自己的反向传播，掩码是 −10⁹ 的偏置），在 AlphaFold 的行注意力上与你的逐块实现相等。
# - 路线二（滑动窗口）可以与路线一结合：跳过带状区域以外的块。
