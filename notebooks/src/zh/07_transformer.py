# %% [markdown] en="8590e0f16184"
# # 第 07 课：围绕注意力搭建的 Transformer
#
# **先修要求：**第 02 课和第 03 课。本课建立在你自己的 `scaled_dot_product_attention` 和 `causal_mask`（`exercises/attention.py`），以及你的 `MultiHeadAttention`、`split_heads` 和 `merge_heads`（`exercises/mha.py`）之上。
#
# 光有注意力还不是 Transformer。围绕着它的，是本课从原始笔记 003（本课程出发点之一的中文 Transformer 笔记）第四部分选出并加上的各个部件：位置（注意力本身看不到词序）、归一化和残差通路（没有它们，深的堆栈训练不起来）、前馈网络，以及解码器的两种注意力（因果自注意力和对编码器的交叉注意力）。第 08 课的小型语言模型就是你在这里写的解码器块的堆叠（结构相同，模块名相同），再加上论文中的门控。
#
# **本课你将**
# - 为 RNN 的 L 个串行步骤和一次注意力调用计时，并计算差距为什么随 L 变化；
# - 证明没有位置信息的注意力是置换等变的，并看清这对“我爱吃苹果”和“苹果吃爱我”意味着什么；
# - 写出正弦位置编码，并测量 PE(pos + k) 是 PE(pos) 的一个固定旋转；
# - 写出旋转位置编码（RoPE），并测量它的分数只取决于 i − j；
# - 写出 RMSNorm，观察在有无残差和归一化时，激活和梯度穿过一个深堆栈的情况；
# - 用你自己的模块组装一个 pre-norm 解码器块和交叉注意力，并画出这个块；
# - 看到词嵌入表只学习一个批量用到的那些行。

# %% en="e5c138b0f748"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

# %% en="ebfa496b1af8"
import math

import matplotlib.pyplot as plt
import torch
from torch import nn

from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言
from exercises.attention import causal_mask, scaled_dot_product_attention
from exercises.mha import MultiHeadAttention, merge_heads, split_heads

torch.set_printoptions(precision=4, sci_mode=False)


def below(value: float, limit: float = 1e-12) -> str:
    """Differences at rounding level differ between machines: print only that they are tiny."""
    return f"< {limit:g}" if value < limit else f"{value:.3g}"


# %% [markdown] en="41572a44c870"
# ## 1. 为什么注意力取代了 RNN
#
# 在 Transformer 之前，序列要经过循环神经网络。RNN 每一步读一个词元，并携带一个状态：h_t = tanh(W x_t + U h_{t−1} + b)。第 t 步需要 h_{t−1}，所以一个 L 个词元的序列要走 **L 步，一步接一步**，而词元 1 说的话要经过 h 的 99 次更新才能到达词元 100。自注意力从整个序列一次算出每个位置：**一步**，任意两个位置之间只隔一次加权求和（笔记 003，§1.2–1.3 和 §7.2）。
#
# 代价是计算量。对宽度 d = 64（一个头；`course/transformer_demos.py` 中的 `operation_counts`）统计乘加次数：

# %% en="7d4ef1c8d4d4"
from course.transformer_demos import operation_counts

print(f"{'L':>6} {'RNN steps':>10} {'RNN mult-adds':>14} {'attn steps':>11} "
      f"{'attn mult-adds':>15} {'score entries':>14}")
for L in (16, 64, 256, 1024, 4096):
    counts = operation_counts(L, d=64)
    print(f"{L:>6} {counts['rnn sequential steps']:>10,} {counts['rnn multiply-adds']:>14,} "
          f"{counts['attention sequential steps']:>11} {counts['attention multiply-adds']:>15,} "
          f"{counts['score entries']:>14,}")

# %% [markdown] en="34f76c89f1ef"
# RNN 的计算量随 L 增长，注意力的随 L² 增长（L × L 的分数）。在表中的每个长度上，注意力做的算术都*多于* RNN（光是它的四个投影，开销就是 RNN 两个矩阵的两倍），而且差距随 L 扩大。它赢的地方，赢在它的算术是一次大的并行调用，而不是 L 次相互依赖的小调用。那么实际上它快多少？
#
# 笔记 003 说“1000 个词元时 RNN 约 1 秒，Transformer 约 0.1 秒；GPU 利用率 10–30% 对 80–95%”。这些数字没有给出来源、硬件或模型规模，所以我们来测量。下面是一个在 Python 循环中逐步运行整条序列的 `nn.RNNCell`，对比你的 `MultiHeadAttention`（4 个宽度为 16 的头）在同一个 x (1, L, 64) 上的一次调用，都在一个 CPU 线程上。计时取决于机器以及机器上同时运行的其他程序，所以测试不比较这些输出。

# %% tags=["nbval-ignore-output"] en="1d1d9489d344"
from tqdm.auto import tqdm

from course.transformer_demos import rnn_vs_attention, timing_verdict

threads = torch.get_num_threads()
torch.set_num_threads(1)  # 单线程：其他程序共享 CPU 核心时计时更稳定
torch.manual_seed(0)
attention_module = MultiHeadAttention(64, 16, 4)
lengths = [16, 32, 64, 128, 256, 512, 768]
seconds = rnn_vs_attention(attention_module, lengths, d=64,
                           progress=lambda ls: tqdm(ls, desc="timing RNN vs attention"))
torch.set_num_threads(threads)
for L, rnn_s, attention_s in zip(lengths, seconds["rnn"], seconds["attention"]):
    print(f"L = {L:>5}: RNN loop {rnn_s * 1e3:8.2f} ms   attention {attention_s * 1e3:8.2f} ms   "
          f"RNN / attention = {rnn_s / attention_s:6.2f}")
for line in timing_verdict(lengths, seconds["rnn"], seconds["attention"]):
    print(line)

# %% tags=["nbval-ignore-output"] en="038e5cd5b431"
fig, (ax_time, ax_ratio) = plt.subplots(1, 2, figsize=(10, 3.4), layout="constrained")
ax_time.loglog(lengths, seconds["rnn"], "o-", label=_("RNN: L sequential steps"))
ax_time.loglog(lengths, seconds["attention"], "s-", label=_("attention: one call"))
ax_time.set(xlabel=_("sequence length L"), ylabel=_("seconds (best of 3)"), title=_("time per sequence"))
ax_time.legend()
ax_ratio.semilogx(lengths, [r / a for r, a in zip(seconds["rnn"], seconds["attention"])], "o-",
                  color="tab:purple")
ax_ratio.axhline(1, color="grey", lw=0.8, ls="--")
ax_ratio.set(xlabel=_("sequence length L"), ylabel=_("RNN time / attention time"),
             title=_("how many times faster attention is"))
for ax in (ax_time, ax_ratio):
    ax.set_xticks(lengths, [str(L) for L in lengths])
    ax.minorticks_off()
plt.show()

# %% [markdown] en="6617169c7703"
# 从你自己的运行结果读出比值：最后两行给出比值在哪个 L 最大、在最长的 L 上是多少（那里谁更快），以及两者的耗时随 L 增长得多快。有两种开销把比值往相反的方向拉。一步的固定开销（一次 Python 调用，几个小矩阵乘积）RNN 要付 L 次，注意力只付一次；注意力的分数按 L² 增长，RNN 的步数按 L 增长，分数一旦超出 CPU 缓存，开销还会更大（第 05 课）。所以比值未必停留在短序列时的水平。在 GPU 上，天平进一步倒向注意力：它的 L² 计算量在一个内核里分摊到成千上万个核心上，而 RNN 的每一步都是一个让显卡大部分闲置的小内核，各步之间还不能重叠。这才是原始笔记“10–30% 对 80–95%”的真实含义；数字本身取决于显卡、尺寸和代码。留下来的是 L² 的代价：第 05 课已经在时间和内存上测量过它。
#
# ## 2. 没有位置信息的注意力看不到词序
#
# 把“我爱吃苹果”的五个字当作词元，给每个字一个嵌入，然后运行你的 `MultiHeadAttention`。再对“苹果吃爱我”做同样的事：同样的词元，顺序是第一个句子的 3、4、2、1、0。

# %% en="1a631ac4bfa6"
sentence = list("我爱吃苹果")
vocabulary = {char: i for i, char in enumerate(sorted(set("我爱吃苹果今天气很好")))}
order = [3, 4, 2, 1, 0]
shuffled = [sentence[i] for i in order]
print("".join(sentence), "->", "".join(shuffled))

torch.manual_seed(1)
embedding = nn.Embedding(len(vocabulary), 8).double()
attention = MultiHeadAttention(8, 4, 2).double()
with torch.no_grad():
    x_first = embedding(torch.tensor([vocabulary[c] for c in sentence]))  # (5, 8)
    x_second = embedding(torch.tensor([vocabulary[c] for c in shuffled]))
    out_first, out_second = attention(x_first), attention(x_second)
print(_("the inputs are a permutation:    x_second == x_first[order]:"),
      torch.equal(x_second, x_first[order]))
print(_("so are the outputs: max |out_second - out_first[order]| ="),
      below((out_second - out_first[order]).abs().max().item()))
print(_("output of 苹 in each sentence:"), out_first[3, :4], out_second[0, :4], sep="\n  ")
print(_("mean over tokens, max difference:"), below((out_first.mean(0) - out_second.mean(0)).abs().max().item()))

# %% [markdown] en="640d7b2a1a19"
# 笔记 003 说“对Attention来说，这两个句子是一样的”，更精确的说法是：没有位置信息的自注意力是**置换等变**的。打乱词元，输出也以同样的方式被打乱：“苹”在两个句子中得到完全相同的输出向量，其他每个字也是如此。两个句子并不“一样”（它们的输出以不同的顺序出现），但各个词元的输出是同一个向量*集合*，所以任何不看顺序的东西（比如上面对所有词元求的均值）都无法区分它们。谁吃谁的信息丢失了。
#
# 因果掩码本身就能打破这种对称：位置 0 只看到它自己，位置 4 看到全部五个，所以一个词元所在的位置改变了它能看到的东西。（完全不用位置编码训练的仅解码器语言模型，仍然能以这种方式学到位置：Haviv 等，2022。）用你在第 02 课写的函数，简单起见取 q = k = v = x：

# %% en="4ab0dcf61143"
mask = causal_mask(5)
with torch.no_grad():
    causal_first = scaled_dot_product_attention(x_first, x_first, x_first, mask=mask)
    causal_second = scaled_dot_product_attention(x_second, x_second, x_second, mask=mask)
print(_("causal: max |out_second - out_first[order]| ="),
      below((causal_second - causal_first[order]).abs().max().item()))

# %% [markdown] en="f73d4fe43b8f"
# ## 3. 正弦位置编码
#
# 原始的 Transformer（Vaswani 等，2017）在第一层之前，一次性地把一个固定向量 PE(pos) 加到位置 pos 上词元的嵌入上：
#
# PE[pos, 2i] = sin(pos / base^(2i/d_model))，   PE[pos, 2i+1] = cos(pos / base^(2i/d_model))，
# base = 10000。
#
# 通道 2i 和 2i+1 组成一对，共享一个频率 ω_i = base^(−2i/d_model)：第 0 对每个位置转一弧度，最后一对转得极慢，在几千个位置上几乎不动。
#
# ### 练习 1：`sinusoidal_encoding`
#
# 在 `exercises/transformer.py` 中写出 `sinusoidal_encoding(L, d_model, base=10000.0, dtype=torch.float64)`，返回 (L, d_model)。先构造一张 (L, d_model/2) 的角度表，再把偶数通道填上 sin、奇数通道填上 cos（`pe[:, 0::2] = ...`）。检查会单独测试位置 0（它必须是 [0, 1, 0, 1, ...]）、单独一对、频率、`base`、`dtype`，以及下面的性质。

# %% tags=["check"] en="b61dc21767fd"
from course.checks.lesson07 import check_sinusoidal_encoding
from exercises.transformer import sinusoidal_encoding

check_sinusoidal_encoding(sinusoidal_encoding)

# %% en="97d403ec822c"
pe = sinusoidal_encoding(64, 32)
fig, ax = plt.subplots(figsize=(8, 3), layout="constrained")
image = ax.imshow(pe.T.numpy(), cmap="coolwarm", aspect="auto", vmin=-1, vmax=1)
fig.colorbar(image, ax=ax)
ax.set(xlabel=_("position pos"), ylabel=_("channel"), title=_("sinusoidal encoding, d_model = 32"))
plt.show()

# %% [markdown] en="07988312ec69"
# ### PE(pos + k) 是 PE(pos) 的一个固定旋转
#
# 笔记 003 把“相对位置”列为使用 sin 和 cos 的理由之一。精确的说法是：对每个偏移 k，存在一个矩阵 R_k，对所有 pos 都相同，使得 PE(pos + k) = R_k PE(pos)。每一对都是圆上的一个点 (sin a, cos a)，移动 k 个位置就让它转过角度 k ω_i，不论 a 是多少。所以 R_k 是分块对角的，每一对一个 2 × 2 的旋转，并且只取决于 k。
#
# 我们测量两次。第一次不用公式：用最小二乘从 (PE(pos), PE(pos + 3)) 这些对在位置 0–30 上拟合一个矩阵，再在位置 30–60 上拟合一次，把两者都与预测的分块旋转比较。（base 为 10000、d_model 又小时，最慢的几对在 60 个位置上几乎不动，数据无法确定它们的块；所以这次拟合用 base 10 和 d_model = 8，每一对都明显转动。）第二次用真实的 base：从位置 0 到 996，预测的 R_3 在每一个位置上都把 PE(pos) 映射到 PE(pos + 3)。

# %% en="8acadc6514a1"
from course.transformer_demos import offset_map, predicted_offset_map

k = 3
pe_fast = sinusoidal_encoding(64, 8, base=10.0)
R_early, residual_early = offset_map(pe_fast[:31], k)
R_late, residual_late = offset_map(pe_fast[30:61], k)
print(_("base 10, d_model 8: least-squares fit on positions 0-30 and on 30-60"))
print(_("  residual of each fit:"), below(residual_early, 1e-10), "and", below(residual_late, 1e-10))
print(_("  the two fitted matrices differ by"), below((R_early - R_late).abs().max().item(), 1e-10))
print(_("  fitted against the predicted block rotation:"),
      below((R_early - predicted_offset_map(8, k, base=10.0)).abs().max().item(), 1e-10))
print(_("  R_3, pairs 0 and 1 (the rest of these rows is 0):\n"),
      R_early[:4, :4].round(decimals=4) + 0.0)  # + 0.0 把四舍五入得到的 -0.0 变成 0.0
pe = sinusoidal_encoding(1000, 16)
R_3 = predicted_offset_map(16, k)
print(_("base 10000, d_model 16: max |PE(pos + 3) - R_3 PE(pos)| over pos 0..996:"),
      below((pe[k:] - pe[:-k] @ R_3.T).abs().max().item()))

# %% [markdown] en="ee82034d661f"
# 所以一个层可以用一个与所在位置无关的线性映射读出“往前 3 个位置的那个词元”，这正是偏移能够被学会的原因。原始笔记有两处说过头了。“周期性：可以处理任意长度的序列”：公式对任何 pos 都给出一个向量，但在短序列上训练的模型用它处理长得多的序列时表现很差（Press 等，2022，即 ALiBi 论文，测量过这一点）。而且在输入处一次性加上位置只是其中一种办法：接下来的 RoPE 把位置放进每一个注意力层内部。
#
# 加上位置之后，第 2 节的两个句子就不再互为置换了：

# %% en="036ecc90f2a5"
with torch.no_grad():
    positioned_first = attention(x_first + sinusoidal_encoding(5, 8))
    positioned_second = attention(x_second + sinusoidal_encoding(5, 8))
print(_("with PE added: max |out_second - out_first[order]| ="),
      below((positioned_second - positioned_first[order]).abs().max().item()))

# %% [markdown] en="7fc830871e98"
# ## 4. 旋转位置编码（RoPE）
#
# RoPE（Su 等，2021）是 Llama、Qwen3（门控注意力论文所用的模型）以及大多数当前语言模型的位置方案。它不往嵌入上加任何东西，而是在每个注意力层内部、紧挨着计算分数之前，按与位置成正比的角度，把 q 和 k 逐对通道地旋转。把 q 旋转角度 a_i、把 k 旋转角度 a_j，它们的点积就变成只取决于 a_i − a_j 的值：分数看到的是**相对**位置 i − j，而 v 保持不变。
#
# 哪些通道组成一对是一种约定。RoPE 论文把相邻的通道配对 (2i, 2i+1)。Hugging Face 的 Llama 和 Qwen3 代码，以及本课程，使用 **rotate-half**：通道 i 与通道 i + c/2 配对，所以对宽度为 c 的头：
#
# ```python
# angle = pos * base ** (-2 * i / c)            # i = 0 .. c/2 - 1，每一对一个角度
# angle = cat([angle, angle], -1)               # 通道 i 和 i + c/2 共用它
# rotate_half(x) = cat([-x[..., c/2:], x[..., :c/2]], -1)
# out = x * cos(angle) + rotate_half(x) * sin(angle)
# ```
#
# 两种约定都对，只差一个固定的通道置换；但用一种约定训练的模型，换成另一种就会算错。（第 08 课训练好的权重用的是 rotate-half。）
#
# ### 练习 2：`apply_rope`
#
# 为 x：(*, L, c) 写出 `apply_rope(x, positions=None, base=10000.0)`，位置沿轴 −2（默认 0 .. L−1）。返回一个与 x 的 dtype 相同的新张量；不要修改 x。检查会测试位置 0（不变）、单独一对、各行保持长度不变、配对方式、频率、给定的和小数的位置、批量轴和头轴、float32，以及下面的相对性质。

# %% tags=["check"] en="6fc14aa07143"
from course.checks.lesson07 import check_rope
from exercises.transformer import apply_rope

check_rope(apply_rope)

# %% [markdown] en="2b0ee21e43ae"
# ### 分数只取决于 i − j
#
# 把一个查询向量放在位置 i，一个键向量放在位置 j，计算它们的分数；然后把两者同时平移同一个 s。用 RoPE 时分数不动。改用加到向量上的正弦位置编码时，它会变。

# %% en="97013fd3246e"
generator = torch.Generator().manual_seed(4)
q_vec, k_vec = torch.randn(2, 1, 16, generator=generator, dtype=torch.float64)
pe_table = sinusoidal_encoding(200, 16)


def rope_score(i, j):
    return (apply_rope(q_vec, torch.tensor([i])) * apply_rope(k_vec, torch.tensor([j]))).sum().item()


def added_pe_score(i, j):
    return ((q_vec + pe_table[i]) * (k_vec + pe_table[j])).sum().item()


for name, score in [("RoPE", rope_score), ("added PE", added_pe_score)]:
    largest = max(abs(score(i + s, j + s) - score(i, j))
                  for i, j in [(5, 2), (2, 5), (9, 9), (30, 1)] for s in (1, 17, 150))
    print(f"{name:>8}: score({5}, {2}) = {score(5, 2):+.4f}; largest change when both positions "
          f"shift: {below(largest, 1e-10)}")

# %% [markdown] en="431f837fc6c3"
# ### 小部件：两个位置看起来有多相似？
#
# 这张图显示，对从 0 到 63 的位置 i 和 j，正弦编码的相似度 PE(i)·PE(j)（对角线上缩放为 1），或者在 RoPE 下，同一个向量在 i 处作为查询、在 j 处作为键时的分数。移动 base 和维度。每条对角线上只有一个值（i − j 的函数）；base 小时每一对都转得快，于是相距很远的位置可能看起来和相邻位置一样相似；base 大、d 也大时，在 i = j 处出现一个峰，并随距离下降。

# %% tags=["nbval-ignore-output"] en="b1725db6ee93"
from course.widgets.lesson07 import similarity_explorer

similarity_explorer()

# %% [markdown] en="9e100fce0265"
# ## 5. RMSNorm，与 LayerNorm 对照
#
# 归一化对每个词元的向量重新缩放，使它的大小保持在一个固定范围内，不论之前发生过什么。笔记 003 把 LayerNorm 写成 γ (x − μ)/σ + β，这正是 Ba 等（2016）的公式：其中没有 ε。PyTorch 的 `nn.LayerNorm` 和大多数实现一样，除以的是 √(σ² + ε)，这样常数向量就不会除以零。**RMSNorm**（Zhang 与 Sennrich，2019；Llama、Qwen3）去掉了均值和偏置：
#
# RMSNorm(x) = x / √(mean(x²) + ε) · weight，   weight：(d_model,)，初始化为全 1。
#
# RMSNorm 的开销更小。据其作者测量，它的质量与 LayerNorm 相当，运行时间少 7–64 %，具体视模型而定。他们*假设* LayerNorm 起作用靠的是重新缩放，而不是重新居中；他们的实验与这一假设相符，但不能证明它。
#
# ### 练习 3：`RMSNorm`
#
# 写出 `RMSNorm(d_model, eps=1e-6)`：一个全为 1 的参数 `weight`，以及沿最后一个轴计算的 `forward(x)`（用 `keepdim=True` 保留它，以便广播），ε 放在平方根里面。

# %% tags=["check"] en="906feaf044fa"
from course.checks.lesson07 import check_rms_norm
from exercises.transformer import RMSNorm

check_rms_norm(RMSNorm)

# %% [markdown] en="dbeec06986f9"
# 你的 RMSNorm 对比 PyTorch 的 `nn.RMSNorm`，以及对比 `nn.LayerNorm`：在均值已经为 0 的行上，两种归一化结果一致（ε 相同，没有仿射部分）；在有均值的行上它们不一致，只有 LayerNorm 会去掉均值。

# %% en="0f2944eccb91"
rows = torch.randn(4, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64) + 2.0
centred = rows - rows.mean(dim=-1, keepdim=True)
ours = RMSNorm(8, eps=1e-5).double()
torch_rms = nn.RMSNorm(8, eps=1e-5).double()
layer_norm = nn.LayerNorm(8, eps=1e-5, elementwise_affine=False).double()
with torch.no_grad():
    print(_("yours vs nn.RMSNorm:            max difference"), below((ours(rows) - torch_rms(rows)).abs().max().item()))
    print(_("RMSNorm vs LayerNorm, mean 0:   max difference"), below((ours(centred) - layer_norm(centred)).abs().max().item()))
    print(_("RMSNorm vs LayerNorm, mean 2:   max difference"), below((ours(rows) - layer_norm(rows)).abs().max().item()))
    print(_("row means after RMSNorm:  "), ours(rows).mean(-1))
    print(_("row means after LayerNorm: all below 1e-12:"),
          bool(layer_norm(rows).mean(-1).abs().max() < 1e-12))

# %% [markdown] en="71d5dc2c471b"
# ## 6. 深堆栈中的残差和归一化
#
# 笔记 003 的“残差连接: 缓解梯度消失”和“Layer Norm: 稳定训练”，来测量一下。取 32 个前馈层 f（Linear 64 → 256，GELU，Linear 256 → 64，权重标准差为 1/√fan_in），用四种方式连接：
#
# | 连接方式 | 一层 | |
# |---|---|---|
# | plain | x ← f(x) | 没有残差，没有归一化 |
# | residual | x ← x + f(x) | 没有归一化 |
# | pre-norm residual | x ← x + f(RMSNorm(x)) | GPT-2 以来、Llama、Qwen3、你的块 |
# | post-norm residual | x ← RMSNorm(x + f(x)) | 2017 年论文的“Add & Norm” |
#
# 跟踪每一层之后 x 的大小（均方根），以及从输出上一个固定的损失传到每一层第一个权重矩阵的梯度大小。

# %% en="acc8ccf6eeb3"
from course.transformer_demos import VARIANTS, deep_stack

stacks = {variant: deep_stack(variant, depth=32) for variant in VARIANTS}
print(f"{'wiring':<20} {'rms after 32 layers':>20} {'gradient at layer 1':>20} {'at layer 32':>12}")
for variant, result in stacks.items():
    print(f"{variant:<20} {result['activation rms'][-1]:>20.3g} {result['gradient norm'][0]:>20.3g} "
          f"{result['gradient norm'][-1]:>12.3g}")

# %% en="a14e18c2d901"
fig, (ax_rms, ax_grad) = plt.subplots(1, 2, figsize=(10, 3.6), layout="constrained")
for variant, result in stacks.items():
    ax_rms.semilogy(result["activation rms"], label=variant)
    ax_grad.semilogy(range(1, 33), result["gradient norm"], label=variant)
ax_rms.set(xlabel=_("layer"), ylabel=_("rms of x"), title=_("activation scale"))
ax_grad.set(xlabel=_("layer"), ylabel="‖∂loss/∂W‖", title=_("gradient reaching each layer"))
ax_rms.legend(fontsize=8)
plt.show()

# %% [markdown] en="d2626965261b"
# 数字说明了什么：
#
# - **plain**：每一层都让 x 缩小（GELU 把小的输入减半），所以 x 和所有梯度都逐渐消失：32 层之后，什么也学不到了。没有残差的深堆栈根本很难训练。
# - **residual**：x + f(x) 保留了一条直通的路径，但每一层都在 x 上再加上 f(x)，所以激活和梯度一层接一层地增长。
# - **pre-norm**：f 看到的是归一化后的输入，所以每一层加上的量是有界的；残差流增长得很慢（大约像 √depth），而梯度通过这些加法完好地到达第 1 层。
# - **post-norm**：每次相加之后的归一化把尺度固定为 1。在这里它是稳定的，但在真实的 Transformer 中，post-norm 需要学习率预热才能训练（Xiong 等，2020），这就是当前的模型把归一化放进分支内部的原因：pre-norm。
#
# ## 7. 前馈网络，以及注意力为什么不是线性的
#
# 原始论文的 FFN 是 FFN(x) = ReLU(x W₁ + b₁) W₂ + b₂，d_ff = 2048 = 4 × 512；当前的大语言模型使用 GELU 或门控变体（Llama 和 Qwen 中的 SwiGLU）。它单独作用于每个词元：改变一个词元，只有那个词元的 FFN 输出会变。注意力则会混合词元：

# %% en="f7482d586cf5"
torch.manual_seed(6)
ffn = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8)).double()
x_tokens = torch.randn(5, 8, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
x_changed = x_tokens.clone()
x_changed[2] += 1.0
with torch.no_grad():
    ffn_moved = (ffn(x_changed) - ffn(x_tokens)).abs().amax(dim=-1)
    attention_moved = (attention(x_changed) - attention(x_tokens)).abs().amax(dim=-1)
print(_("token 2 changed; largest change of each token's output:"))
print(_("  FFN:      "), ffn_moved)
print(_("  attention:"), attention_moved)

# %% [markdown] en="6ed78fdade4c"
# 笔记 003 接着说“Attention是线性的, FFN引入非线性”。只对了一半：FFN 的 GELU 是非线性的，但注意力也是。它的权重 softmax(q kᵀ/√c) 本身由 x 算出，所以输出是 x 与 x 的非线性函数的乘积。直接在你的 `MultiHeadAttention` 上检验线性：f(2x) = 2 f(x) 和 f(x + y) = f(x) + f(y)；然后冻结权重（从 x 算一次权重，再把它用于另一个输入）：只有这条值的通路是线性的。

# %% en="19a29f40d8bb"
y_tokens = torch.randn(5, 8, generator=torch.Generator().manual_seed(8), dtype=torch.float64)


def attention_values(x_for_weights, x_for_values, module=attention):
    """Your module's computation, with the weights from one input and the values from another."""
    q = split_heads(module.linear_q(x_for_weights), module.N_head)
    k = split_heads(module.linear_k(x_for_weights), module.N_head)
    v = split_heads(module.linear_v(x_for_values), module.N_head)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(module.c), dim=-1)
    return module.linear_o(merge_heads(weights @ v)) - module.linear_o.bias


with torch.no_grad():
    def f(x):
        return attention(x) - attention.linear_o.bias  # 偏置是仿射部分，这里不讨论它
    print(_("attention: |f(2x) - 2 f(x)|       ="), f"{(f(2 * x_tokens) - 2 * f(x_tokens)).abs().max().item():.3g}")
    print(_("attention: |f(x+y) - f(x) - f(y)| ="),
          f"{(f(x_tokens + y_tokens) - f(x_tokens) - f(y_tokens)).abs().max().item():.3g}")
    frozen = (attention_values(x_tokens, x_tokens + y_tokens)
              - attention_values(x_tokens, x_tokens) - attention_values(x_tokens, y_tokens))
    print(_("weights frozen at x, values linear:  "), below(frozen.abs().max().item()))

# %% [markdown] en="85ebc9755dff"
# 所以 FFN 增加的是逐词元的非线性；注意力的非线性存在于权重之中，这也是第 08 课的门控所依赖的。
#
# ## 8. pre-norm 解码器块
#
# 一个 GPT 风格的解码器块（第 08 课的小型语言模型就是由这样的块构成的）：
#
# ```
# h = h + SelfAttention(RMSNorm(h))     # 因果，对 q 和 k 使用 RoPE
# h = h + FFN(RMSNorm(h))               # Linear(d_model, d_ff)、GELU、Linear(d_ff, d_model)
# ```
#
# 残差流 h 本身从不被归一化；每条分支读取一份归一化后的副本，再把结果加回来。对比笔记 003 的 §4.2–4.3，那里画的是 2017 年的 post-norm“Add & Norm”，h = Norm(h + Sublayer(h))。
#
# ### 练习 4：`DecoderBlock`
#
# 在 `exercises/transformer.py` 中写出 `DecoderBlock(d_model, n_heads, d_ff, rope=True)`，子模块必须恰好是这些（第 08 课按这些名字加载训练好的权重）：
#
# - `self.norm_attn = RMSNorm(d_model)`，`self.norm_ffn = RMSNorm(d_model)`；
# - `self.attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads)`，你在第 03 课写的模块，用它的投影 `linear_q/k/v/o`；
# - `self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))`。
#
# 在 `forward(h)` 中，令 x = norm_attn(h)：q, k, v = `split_heads(attn.linear_q(x), n_heads)`，依此类推；有 rope 时，对 q 和 k 做 `apply_rope`（在拆分之后，这样位置沿轴 −2 排列）；你的 `scaled_dot_product_attention(q, k, v, mask=causal_mask(L))`；`merge_heads`；`attn.linear_o`；加到 h 上。然后是 FFN 分支。（正因为有 RoPE，这个块不能直接调用 `self.attn(x)`：旋转要插在投影和分数之间。）
#
# 检查会测试名字、块是因果的、两条分支都关掉时它返回 h（pre-norm 块是这样；post-norm 块不是）、`rope` 的两种设置、L = 1、批量轴、梯度，以及 h 没有被修改。

# %% tags=["check"] en="439b381b08c6"
from course.checks.lesson07 import check_decoder_block
from exercises.transformer import DecoderBlock

check_decoder_block(DecoderBlock)

# %% [markdown] en="173c78183205"
# 块是因果的，有测量为证：改动最后一个词元，之前各位置的输出纹丝不动。按第 08 课模型的宽度（d_model = 64，4 个头）、d_ff = 256 统计它的参数：

# %% en="3082a62c8e4f"
torch.manual_seed(9)
block = DecoderBlock(64, 4, 256).double()
h = torch.randn(1, 6, 64, generator=torch.Generator().manual_seed(10), dtype=torch.float64)
h_changed = h.clone()
h_changed[0, -1] = 0.0
with torch.no_grad():
    moved = (block(h_changed) - block(h)).abs().amax(dim=-1)[0]
print(_("change of each position's output when only the last token changes:"))
print("  ", [below(value) for value in moved.tolist()])
for name, parameter in block.named_parameters():
    print(f"  {name:<22} {tuple(parameter.shape)}")
print(f"total: {sum(p.numel() for p in block.parameters()):,} parameters "
      f"(attention {sum(p.numel() for p in block.attn.parameters()):,}, "
      f"FFN {sum(p.numel() for p in block.ffn.parameters()):,}, "
      f"norms {block.norm_attn.weight.numel() + block.norm_ffn.weight.numel()})")

# %% [markdown] en="12e3e61c2c6d"
# 把块画成图（torchview），小到可以读懂：d_model = 16，2 个头，d_ff = 32，一条 5 个词元的序列。

# %% tags=["nbval-ignore-output"] en="6966a785b255"
from course.plots import show_model_graph

small_block = DecoderBlock(16, 2, 32)
graph = show_model_graph(small_block, [torch.randn(1, 5, 16)], "DecoderBlock", depth=2)

# %% [markdown] en="5e6eecb43d7e"
# 沿着图往下跟踪 h (1, 5, 16)：它立刻分成残差路径（左边那条长箭头）和 `RMSNorm`；`attn` 的三个 `Linear` 产生 q、k、v；`view` 和 `transpose` 是你的 `split_heads` (1, 2, 5, 8)。上方两角的两条小链构造 RoPE 的角度（`__rpow__` 是 base ** (...)，然后是 `cat`、`cos`、`sin`）；在 q 和 k 上，`neg` 和 `cat` 是 rotate_half，`mul`、`mul`、`add` 是 x·cos + rotate_half(x)·sin。第三个 `view`（v）直接往下走：不旋转。`tril` 是你的 `causal_mask`；然后是分数（`matmul`、`div`）、掩码（`masked_fill`，两次：你在第 02 课为什么也看不到的行所做的保护）、softmax（`amax`、`sub`、`exp`、`sum`、`div`）以及与 v 的乘积；`transpose`/`reshape` 是 `merge_heads`，第四个 `Linear` 是 `linear_o`，第一个 `add` 汇入残差路径。FFN 分支重复这个模式：`RMSNorm`、`Linear`、`GELU`、`Linear`、`add`。
#
# ## 9. 编码器、解码器和交叉注意力
#
# 2017 年的 Transformer 做翻译：**编码器**读取源句（“我爱吃苹果”），**解码器**一次一个词元地写出目标句（“I love eating apples”）。编码器层就是上面的块去掉因果掩码（每个源词元都能看到其他每一个，填充除外）。解码器层有三条分支：对它已经写出的内容做因果自注意力，对编码器的输出做**交叉注意力**，以及 FFN：
#
# ```
# h = h + SelfAttention(Norm(h))                  # 因果
# h = h + CrossAttention(Norm(h), memory)         # q 来自 h；k、v 来自编码器的输出
# h = h + FFN(Norm(h))
# ```
#
# 在交叉注意力中，查询来自解码器，键和值来自编码器的输出（`memory`），所以分数是 (L_target, L_source)。没有因果掩码：在开始解码之前，整个源句都已知。但一个批量中的源句长度不同、经过填充，任何查询都不能读取填充：用一个键掩码 `memory_mask` (*, L_source)，对真实的词元为 True。
#
# ### 练习 5：`CrossAttention`
#
# 写出 `CrossAttention(d_model, n_heads)`：`linear_q`、`linear_k`、`linear_v`（d_model → d_model，不带偏置）和 `linear_o`（带偏置）；`forward(x, memory, memory_mask=None)` 使用 `split_heads`、带掩码 `memory_mask[..., None, None, :]`（形状 (*, 1, 1, L_source)：对每个头、每个查询都相同）的你的 `scaled_dot_product_attention`、`merge_heads` 和 `linear_o`。

# %% tags=["check"] en="7018ff29ed68"
from course.checks.lesson07 import check_cross_attention
from exercises.transformer import CrossAttention

check_cross_attention(CrossAttention)

# %% [markdown] en="88d426e82df1"
# 批量里有两个源句：“我爱吃苹果”（5 个词元）和“我爱你”（3 个词元，填充到 5），目标有四个位置。下面是有填充的那个句子第一个头的权重，即每个目标位置分给各个源词元的权重：填充得不到任何权重，所以填充位置上的编码器输出是什么都无所谓。

# %% en="7479e232e30b"
from exercises.attention import attention_weights

torch.manual_seed(11)
cross = CrossAttention(8, 2).double()
memory = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
targets = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
memory_mask = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
with torch.no_grad():
    q = split_heads(cross.linear_q(targets), 2)
    k = split_heads(cross.linear_k(memory), 2)
    weights = attention_weights(q, k, mask=memory_mask[..., None, None, :])  # (2, 2, 4, 5)
    garbage = memory.clone()
    garbage[1, 3:] = 1e3
    moved = (cross(targets, garbage, memory_mask) - cross(targets, memory, memory_mask)).abs().max()
print(_("weights of the padded sentence, head 0 (rows: target positions, columns: 我 爱 你 pad pad):"))
print(weights[1, 0])
print(_("padding set to 1000: output changes by"), below(moved.item()))

# %% [markdown] en="dae50b36cc4e"
# ## 10. 从词元到向量：词嵌入表只学习它用到的那些行
#
# 笔记 003 §4.7 和 §7.3：文本被切分成词元，每个词元 id 选出词嵌入表的一行（一次查表，`nn.Embedding`），然后加上位置，或者用 RoPE 在注意力内部施加位置。这张表像任何权重一样被学习，但有一个原始笔记指出的特点：一次反向传播之后，只有批量中出现过的词元所在的行有梯度。用了两次的行得到两次使用的梯度之和。

# %% en="517c83f646dd"
torch.manual_seed(14)
table = nn.Embedding(len(vocabulary), 4).double()
id_to_char = {i: c for c, i in vocabulary.items()}
batch = torch.tensor([[vocabulary[c] for c in "我爱吃苹果"], [vocabulary[c] for c in "今天天气很"]])
upstream = torch.randn(2, 5, 4, generator=torch.Generator().manual_seed(15), dtype=torch.float64)
loss = (table(batch) * upstream).sum()  # 任意损失：d loss / d（查出的向量）= upstream
loss.backward()
used = sorted(set(batch.flatten().tolist()))
with_gradient = table.weight.grad.abs().sum(dim=-1).nonzero().flatten().tolist()
print(f"vocabulary: {''.join(sorted(vocabulary, key=vocabulary.get))} ({len(vocabulary)} rows); "
      f"tokens in the batch: {''.join(id_to_char[i] for i in used)}")
print(_("rows with a non-zero gradient:"), "".join(id_to_char[i] for i in with_gradient),
      f"({len(with_gradient)} of {len(vocabulary)}); 好 was not in the batch")
both_uses = upstream[1, 1] + upstream[1, 2]  # "天"位于句子 2 的位置 1 和 2
print(_("天 is used twice; its gradient equals the sum of both uses:"),
      torch.allclose(table.weight.grad[vocabulary["天"]], both_uses))

# %% [markdown] en="a3ca3c375142"
# 所以普通的 SGD 在这一步只改变这些行（`nn.Embedding(sparse=True)` 甚至只把这些行存为梯度）。用 Adam 时，其他行还可以借着之前步骤的动量再移动一阵，而权重衰减会让每一行都缩小。经过许多批量之后，出现在相似上下文中的词元得到相似的梯度，于是一起漂移：“相似的词得到相似的嵌入”正是从这里来的，而不是来自任何内置的含义。
#
# ## 自测
#
# 1. 没有位置信息时，注意力对“我爱吃苹果”和“苹果吃爱我”的输出，到底哪些相同，哪些不同？为什么因果掩码会改变这一点？
# 2. PE(pos + k) = R_k PE(pos)：R_k 长什么样，为什么它不取决于 pos？
# 3. 为什么 RoPE 旋转 q 和 k 而不旋转 v？在投影之前旋转 x 会失去什么？
# 4. 一位同事的 `apply_rope` 把通道 i 与 i + 1 配对。它错了吗？什么时候这很重要？
# 5. 行 [3, 3, 3, 3]（weight 全为 1）的 RMSNorm 是什么，LayerNorm 又是什么？
# 6. 在深堆栈中，为什么用普通残差时激活会增长，而用 pre-norm 时只增长得很慢？
# 7. 当 `attn.linear_o` 和 `ffn.2` 为零时，你的块恰好返回 h。post-norm 块会返回什么？
# 8. 在交叉注意力中，哪个张量决定输出的行数，哪个决定键的个数？为什么没有因果掩码？
# 9. 在一张词嵌入表上做一次反向传播之后，哪些行有梯度？
#
# <details><summary>答案</summary>
#
# 1. 每个词元的输出向量在两个句子中完全相同（“苹”得到同一个向量）；只有输出的顺序不同，正如输入的顺序不同一样（置换等变）。任何不看顺序的东西，比如对词元求均值，都完全相同。因果掩码让一个词元能看到什么取决于它在哪里，所以输出不再互为置换。
# 2. 分块对角：每一对通道一个按 k ω_i 旋转的 2 × 2 旋转。移动 k 个位置给每个角度都加上 k ω_i，不论原来的角度是多少，而这是一个与 pos 无关的旋转。
# 3. 把 q_i 和 k_j 都按各自的位置旋转之后，分数 q_i·k_j 只取决于 i − j；RoPE 的全部用途就在于此。v 携带要被混合的内容；旋转它会把内容与绝对位置绑在一起。在投影之前旋转 x，会让 W_q 和 W_k 混合不同对的通道，破坏相对性质。
# 4. 它本身没有错：那是 RoPE 论文的交错约定，是 rotate-half 的一个通道置换，具有同样的相对性质。用一种约定训练的权重被拿到另一种约定下使用时（例如第 08 课训练好的权重，或者 Hugging Face 的权重），问题就来了：结果会是错的。
# 5. RMSNorm：3/√(9 + ε) ≈ [1, 1, 1, 1]。LayerNorm：先减去均值，剩下 [0, 0, 0, 0]。
# 6. 在 x ← x + f(x) 下，x 的方差每一层都增加 f(x) 的方差，所以会累积（当 f 保持其输入的尺度时，是几何级数增长）。用 pre-norm 时，f 看到的是单位大小的输入，所以每一层加上的量大致相同：方差线性增长，大小像 √depth 那样增长。
# 7. Norm(h + 0) = RMSNorm(h)：归一化后的输入，而不是 h。
# 8. 解码器的 x 决定行数（L_target），编码器的 memory 决定键的个数（L_source）。在开始解码之前源句就是完整的，所以每个目标位置都可以读取整个源句；只有填充被掩盖。
# 9. 只有批量中出现过的词元 id 所在的行；用了两次的行得到两个梯度之和。
#
# </details>
#
# ## 小结
#
# - RNN 需要 L 个相互依赖的步骤，注意力只需一次带 L² 个分数的调用：哪个更快取决于 L 和硬件，所以要测量；原始笔记的 10 倍和 GPU 利用率数字没有来源。
# - 没有位置信息时，自注意力是置换等变的；因果掩码或位置信息会打破它。
# - 正弦位置编码：PE(pos + k) = R_k PE(pos)，每个偏移对应一个分块旋转 R_k。RoPE 在注意力内部旋转 q 和 k，所以分数只取决于 i − j（这里使用 rotate-half 约定）。
# - RMSNorm 除以 √(mean(x²) + ε)，没有均值，也没有偏置。残差让梯度在深堆栈中保持活力，归一化让激活保持在范围内；当前的模型使用 pre-norm。
# - FFN 逐词元作用；注意力也不是线性的（它的权重取决于 x）。
# - 你的 `DecoderBlock`（pre-norm、因果、RoPE）和 `CrossAttention`（查询来自解码器，键和值来自编码器，填充被掩盖）都是用你自己第 02/03 课的代码搭建的。
# - 下一课：[第 08 课，门控注意力论文](08_gated_attention_paper.ipynb)，它的小型语言模型堆叠了和你的一样的块，并在它们的注意力上加上论文中的门。
