# %% [markdown] en="86ceaae40def"
# # 第 01 课：手算 Q、K、V
#
# **先修要求：**第 00 课（代码写在哪里，检查单元怎样报告结果）。
#
# **本课你将**
# - 把注意力看作“软查找”：用查询与各个键比较，再按比较结果混合各个值；
# - 用代码重算课程原始笔记里的例题（笔记算错的地方给出更正后的数值）；
# - 测量分数为什么要除以 √c：分数的离散程度随 c 增大，softmax 随之饱和，经它回传的梯度趋于消失；
# - 实现不会溢出的 softmax，以及缩放后的分数 q·k/√c。

# %% en="ec5ecd031994"
import course_setup  # noqa: F401

import math

import matplotlib.pyplot as plt
import torch

from course.i18n import _  # 图的标题和坐标轴标签使用笔记本的语言

torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown] en="054aea5b3593"
# ## 注意力是一种软查找
#
# 想象一座图书馆。你带着**查询**（query）来，也就是你要找的东西。每本书的书脊上贴着**键**（key），标明这本书讲什么；书的内容是**值**（value）。硬查找只返回键最匹配的那一本。注意力则把所有书*混合*起来返回，键与查询越匹配，这本书的权重越大：
#
# 1. 用查询给每个键打分：点积 q·k，再除以 √c（c 为向量长度）；
# 2. 用 softmax 把分数变成权重：全为正，总和为 1；
# 3. 返回值的加权和。
#
# $$\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{c}}\right) V$$
#
# （有些流传很广的笔记在个别地方写成 $QK^\top/d_k$；除数应当是 $\sqrt{d_k}$。）

# %% [markdown] en="6c50dafb2608"
# ## 最小的例子
#
# 向量长度 c = 2。一个查询，两个键，两个值：键 1 与查询同向，键 2 与查询正交。

# %% en="bd35d53e5a9c"
q = torch.tensor([1.0, 0.0])
keys = torch.tensor([[1.0, 0.0],    # 键 1：与 q 方向相同
                     [0.0, 1.0]])   # 键 2：与 q 正交
values = torch.tensor([[2.0, 0.0],  # 值 1
                       [0.0, 2.0]]) # 值 2

scores = keys @ q / math.sqrt(2)
weights = torch.exp(scores) / torch.exp(scores).sum()
output = weights @ values
print("scores  ", scores)
print("weights ", weights)
print("output  ", output)

# %% [markdown] en="e8cadb3c86da"
# 输出偏向值 1（它的键与查询匹配），但仍保留了三分之一的值 2：权重四舍五入为 [0.67, 0.33] 时，输出是 0.67·[2, 0] + 0.33·[0, 2] = [1.34, 0.66]。没有哪本书被原样取出，而是每本都取一点，取多少看相关程度。

# %% [markdown] en="e9f4aee43487"
# ## 一步一步算 softmax
#
# 笔记里的第二个例子：先对四个分数做 softmax，再对四个值加权求和。（这个例子跳过了除以 √c 这一步：分数被视为已经缩放过。）

# %% en="7975fe7ab871"
scores = torch.tensor([0.1, 0.3, 1.0, 0.8], dtype=torch.float64)
exps = scores.exp()
print("exp(scores)    ", exps)
print("sum            ", round(exps.sum().item(), 3))
weights = exps / exps.sum()
print("softmax        ", weights)
values = torch.tensor([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0, 0.5]], dtype=torch.float64)
print("weights @ V    ", weights @ values)
print("rounded first  ", weights.round(decimals=2) @ values)

# %% [markdown] en="927596352a55"
# 指数之和的精确值是 7.399；手算时如果先把每个指数四舍五入到两位小数，得到的是 7.41。用四舍五入后的权重，输出为 [0.30, 0.18, 0.52]；用精确权重则是 [0.2998, 0.1824, 0.5178]。保留两位小数，两者相同。

# %% [markdown] en="57deb5ffc189"
# ## 手算三个字的句子
#
# 笔记里“我爱吃”的例子：三个字嵌入到二维空间，投影取单位矩阵，所以 Q = K = V = X。

# %% en="dcfafe1a3beb"
X = torch.tensor([[1.0, 0.0],   # 我
                  [0.0, 1.0],   # 爱
                  [1.0, 1.0]],  # 吃
                 dtype=torch.float64)
Q = K = V = X
scaled = Q @ K.T / math.sqrt(2)
weights = torch.softmax(scaled, dim=-1)
print("scaled scores\n", scaled)
print("weights (rows: queries)\n", weights)
print("outputs\n", weights @ V)

# %% [markdown] en="999354c9c5e4"
# 第 1 行（我）的权重是 [0.40, 0.20, 0.40]，输出为 [0.80, 0.60]。第 2 行（爱）与之对称：[0.20, 0.40, 0.40] → [0.60, 0.80]；第 3 行（吃）的权重是 [0.25, 0.25, 0.50] → [0.75, 0.75]。原始笔记给第 2、3 行印的数字略有出入（其中第 2 行加起来甚至不等于 1）；上面单元算出的才是实际结果。
#
# **笔记里的一道自测题，更正版。**设 Q = K = I（2×2），V = [[2, 3], [4, 5]]，输出就是 V 吗？很容易以为权重就是单位矩阵，其实不然：分数 1/√2 ≈ 0.71 对 0，离 one-hot 还差得远。

# %% en="274860130d42"
I2 = torch.eye(2, dtype=torch.float64)
V = torch.tensor([[2.0, 3.0], [4.0, 5.0]], dtype=torch.float64)
weights = torch.softmax(I2 @ I2.T / math.sqrt(2), dim=-1)
print("weights\n", weights)
print("output\n", weights @ V)

# %% [markdown] en="24539e307611"
# softmax 能有多“尖”？对分数 [10, 5, 1, 0.1, 0.01]，最大的两个分数相差 5，第一个键就已经拿到 99% 的权重：

# %% en="7d2858850d77"
peaked = torch.softmax(torch.tensor([10, 5, 1, 0.1, 0.01], dtype=torch.float64), dim=-1)
print([f"{w:.3g}" for w in peaked.tolist()])

# %% [markdown] en="4337d04bab53"
# ## 练习 1：不会溢出的 softmax
#
# 教科书上的公式 exp(x_i) / Σ exp(x_j) 遇到大的分数就会出错：

# %% en="d46a4d668599"
big = torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)
print("exp(big)           ", big.exp())
print("textbook softmax   ", big.exp() / big.exp().sum())

# %% [markdown] en="574c88342f2b"
# exp(1000) 超出了 float64 的表示范围（float64 的最大值约为 1.8e308，即 e^709.8），于是变成 inf，而 inf / inf 是 NaN。float32 的上限低得多：exp(89) 就已经溢出。
#
# 解决办法只需一个恒等式：只要 m 沿 softmax 的轴不变，就有 softmax(x) = softmax(x − m)（因子 e^(−m) 在分子和分母中约掉）。取 m 为最大值，最大的指数就成了 e⁰ = 1，不会溢出，总和也至少为 1。
#
# 在 `exercises/softmax.py` 中写出 `stable_softmax(x, dim=-1)`。任意形状的张量、沿任意 `dim` 都要能算（用 `keepdim=True` 保留被归约的轴，才能广播回去）。

# %% tags=["check"] en="7da63da52f6e"
from course.checks.lesson01 import check_stable_softmax
from exercises.softmax import stable_softmax

check_stable_softmax(stable_softmax)

# %% [markdown] en="579adc86a6f3"
# ## 为什么要除以 √c？测一测
#
# 取 q 和 k，各有 c 个独立的标准正态分量。点积是 c 个乘积之和，每个乘积的均值为 0、方差为 1，所以 **q·k 的方差是 c**，离散程度（标准差）是 √c。除以 √c，无论 c 是多少，方差都回到 1。

# %% en="680af02d4b3e"
dims = [4, 16, 64, 256, 1024]
generator = torch.Generator().manual_seed(0)
rows = []
for c in dims:
    q = torch.randn(20_000, c, generator=generator, dtype=torch.float64)
    k = torch.randn(20_000, c, generator=generator, dtype=torch.float64)
    dots = (q * k).sum(dim=-1)
    rows.append((c, dots.var().item(), (dots / math.sqrt(c)).var().item()))
print(f"{'c':>6} {'var(q·k)':>10} {'var(q·k/√c)':>12}")
for c, raw, scaled_var in rows:
    print(f"{c:>6} {raw:>10.0f} {scaled_var:>12.2f}")


# %% [markdown] en="f79d06cc53f9"
# 分数太大，softmax 就会**饱和**：几乎全部权重都落在一个键上。饱和的 softmax 几乎不往回传梯度：它的雅可比矩阵是 diag(p) − p pᵀ，p 为 one-hot 时恰好为零。下面每个查询取 8 个随机键，分别在缩放和不缩放时，测量最大权重的平均值，以及损失对分数的梯度大小。

# %% en="6f53fa9b53f9"
def saturation_and_gradient(c, scaled, n_queries=512, n_keys=8, seed=1):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, c, generator=generator, dtype=torch.float64)
    k = torch.randn(n_keys, c, generator=generator, dtype=torch.float64)
    v = torch.randn(n_queries, n_keys, generator=generator, dtype=torch.float64)  # 每个查询一组值
    scores = (q @ k.T / (math.sqrt(c) if scaled else 1.0)).requires_grad_()
    weights = torch.softmax(scores, dim=-1)
    (weights * v).sum().backward()
    return weights.max(dim=-1).values.mean().item(), scores.grad.norm(dim=-1).mean().item()


results = {s: [saturation_and_gradient(c, s) for c in dims] for s in (True, False)}
print(f"{'c':>6} | {'max weight':>10} {'grad size':>10} (÷√c) | {'max weight':>10} {'grad size':>10} (no scale)")
for i, c in enumerate(dims):
    (m1, g1), (m0, g0) = results[True][i], results[False][i]
    print(f"{c:>6} | {m1:>10.3f} {g1:>10.2e}       | {m0:>10.3f} {g0:>10.2e}")

# %% en="0d5d6950e4a3"
fig, axes = plt.subplots(1, 3, figsize=(12, 3.3), layout="constrained")
axes[0].loglog(dims, [r[2] for r in rows], "o-", label="q·k/√c")
axes[0].loglog(dims, [r[1] for r in rows], "o--", label=_("q·k (no scale)"))
axes[0].set(xlabel=_("dimension c"), ylabel=_("variance of the score"), title=_("score variance grows like c"))
for scaled_flag, style, label in ((True, "o-", "÷√c"), (False, "o--", _("no scale"))):
    axes[1].semilogx(dims, [m for m, g in results[scaled_flag]], style, label=label)
    axes[2].loglog(dims, [g for m, g in results[scaled_flag]], style, label=label)
axes[1].set(xlabel=_("dimension c"), ylabel=_("mean largest weight (8 keys)"), title=_("softmax saturates"),
            ylim=(0, 1.05))
axes[2].set(xlabel=_("dimension c"), ylabel=_("mean |∂loss/∂scores|"), title=_("gradient vanishes"))
for ax in axes:
    ax.legend()
plt.show()

# %% [markdown] en="f42abc24816d"
# 不缩放时，到 c = 1024，8 个权重中最大的那个平均超过 0.9，传到分数上的梯度只剩缩放时的一小部分：模型学得很慢，而且对落败的键几乎学不到东西。缩放之后，三条曲线都很平稳。
#
# ## 练习 2：缩放后的分数
#
# 在 `exercises/softmax.py` 中写出 `scaled_scores(q, k)`：q 的形状为 `(*, q, c)`，k 的形状为 `(*, k, c)`，结果 `(*, q, k)` 存放 q_i·k_j/√c。前导轴 `*` 是批量轴（个数不限），所以只转置 k 的最后两个轴。

# %% tags=["check"] en="10b9d8a86f77"
from course.checks.lesson01 import check_scaled_scores
from exercises.softmax import scaled_scores

check_scaled_scores(scaled_scores)

# %% [markdown] en="3f2ec74adb2b"
# 用你写的两个函数，重现本课的第一个例子：

# %% en="fb6bd5ae5238"
q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
keys = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
values = torch.tensor([[2.0, 0.0], [0.0, 2.0]], dtype=torch.float64)
print(stable_softmax(scaled_scores(q, keys)) @ values)

# %% [markdown] en="a2e498508792"
# ## 动手玩：维度、缩放和温度
#
# 拖动滑块。左图是一个查询在 8 个随机键上的权重；右图是权重的平均熵随 c 的变化（0 表示全部权重在一个键上；log 8 ≈ 2.08 表示均匀）。**温度** T 用来除分数：softmax(s/T)。T > 1 让分布变平，T < 1 让分布变尖。除以 √c 相当于一个随 c 增长的温度，增长的幅度恰好抵消分数离散程度的增长。

# %% tags=["nbval-ignore-output"] en="c553aa66a8a7"
from course.widgets.lesson01 import softmax_explorer

softmax_explorer()

# %% [markdown] en="b9e1bf011762"
# ## 自测
#
# 1. 给一行的每个分数都加上同一个数，softmax 为什么不变？
# 2. c 从 64 增长到 256，未缩放分数的标准差变为原来的几倍？
# 3. 温度趋于 0 时，权重会怎样？趋于无穷大时呢？
# 4. 注意力权重是查询和键的非线性函数。注意力的哪一部分*是*线性的？
#
# <details><summary>答案</summary>
#
# 1. e^(x+m) = e^x·e^m：因子 e^m 出现在每一项和总和中，相互约掉。正因如此，才可以减去最大值。
# 2. √(256/64) = 2 倍：方差与 c 成正比，标准差与 √c 成正比。
# 3. T → 0：全部权重落在最大的分数上（最大值唯一时，就是硬 argmax）。T → ∞：权重均匀，各为 1/n。
# 4. 权重固定时，输出对值 V 是线性的。权重本身来自 QKᵀ 的 softmax，对输入不是线性的，所以注意力整体上不是线性的（有些笔记说它是线性的，那是错的）。
# </details>
#
# ## 小结
#
# - 注意力用查询给每个键打分（q·k/√c），用 softmax 把分数变成权重，再返回值的加权混合。
# - 安全的 softmax 先减去每个切片的最大值；结果在数学上完全相同。
# - 分量方差为 1 时，未缩放的分数方差为 c：c 越大，softmax 越饱和，梯度越趋于消失。除以 √c 让方差保持为 1。
# - 下一课：[第 02 课，单头注意力](02_single_head.ipynb)：批量、掩码、偏置，以及带可学习投影的模块。
