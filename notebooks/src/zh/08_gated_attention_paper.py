# %% [markdown] en="1effcf3042c1"
# # 第 08 课：门控注意力论文，在玩具规模上复现
#
# **先修要求：**第 03 课（你的多头注意力：头、`split_heads`）、第 06 课（AlphaFold2 加在注意力输出上的 sigmoid 门）和第 07 课（围绕注意力搭建的 Transformer：`RMSNorm`、旋转位置编码、`DecoderBlock`）。
#
# 2025 年，Qiu 等发表了 “Gated Attention for Large Language Models: Non-linearity, Sparsity, and Attention-Sink-Free”（arXiv 2505.06708，Qwen 团队，NeurIPS 2025 最佳论文）。他们训练了 15B 混合专家模型和 1.7B 稠密模型的 30 多种变体。有一处改动始终有帮助：在输出投影 W_O 之前，把缩放点积注意力（SDPA）的输出乘以一个 sigmoid 门。门由词元自身算出，每个头各算各的。论文的论断之一是：这个门能消除**注意力汇点**（attention sink）。本课先搭建这个门，再亲自检验这条论断。所用的模型很小，笔记本电脑的 CPU 就能训练。
#
# **本课你将**
# - 了解什么是注意力汇点、大模型的汇点为什么要紧，以及怎样检验模型是否*需要*它的汇点，而不只是有没有汇点；
# - 写出论文的门（位置 G1），逐元素和逐头两种，并通过它们的检查；
# - 把你第 07 课的 `DecoderBlock` 放进一个仿照论文搭建的小型语言模型（RMSNorm、旋转位置编码），旁边再放一个 GPT-2 风格的模型；
# - 在两种设置中检验这条论断：一种汇点是很强的模式，在测过的那个种子中却没有什么依赖它；另一种模型依赖它的第一个词元。先在每个变体的 3 个种子上检验；再在模型依赖第一个词元的那种设置中做多种子实验（训练曲线、精确的秩检验，以及效应大小的区间）；
# - 在代码中说明为什么门能加入非线性，而每个头一个固定的数做不到，并把一切与论文自己的数字对照。

# %% en="0e00a3190560"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

import torch

from course.columns import pad
from course.i18n import _

# %% [markdown] en="298297eb116b"
# ## 什么是注意力汇点，它为什么要紧
#
# softmax 注意力要求每个查询的权重加起来等于 1。某个位置上，一个头也许没有什么有用的东西可读，但这份权重仍得有个去处。训练好的语言模型会把很大一部分权重放在**第一个词元**上，不管这个词元是什么。Xiao 等 2023（“Efficient Streaming Language Models with Attention Sinks”，即 StreamingLLM）把这种现象命名为**注意力汇点**。他们还说明了它为什么要紧。如果键值缓存只保留最近的一段词元，那么第一个词元一旦移出窗口，模型就会崩溃，困惑度暴涨。把最前面四个词元和窗口一起保留，模型又恢复了。可见模型不只是*看着*第一个词元，而是*依赖*它。
#
# 这种依赖是有代价的：
# - **内存与流式推理**：缓存必须保留不承载内容的词元（StreamingLLM）；
# - **量化**：汇点往往伴随少数几个极大的激活。Sun 等 2024（“Massive Activations in Large Language Models”）在隐藏状态中发现了少数几个元素，比中位数大几千倍，在有些模型中比一般的激活大 100,000 倍。它们出现在第一个词元和分隔符上，起着固定偏置的作用。Bondarenko 等 2023（“Quantizable Transformers: Removing Outliers by Helping Attention Heads Do Nothing”）发现，破坏 8 位量化的离群值来自想要“什么也不做”的头：这些头把注意力放在这类词元上。他们的一个办法是给每个头加一个由词元算出的 sigmoid 门，让头可以把自己关掉。这正是论文逐头门的前身；
# - **长上下文**：论文报告说，这个门消除了汇点，也让模型更好地推广到更长的上下文。
#
# Gu 等 2024（“When Attention Sink Emerges in Language Models: An Empirical View”）研究汇点究竟何时形成。他们发现小模型也会形成汇点，前提是在足够多的数据上训练得足够久；学习率、权重衰减和数据都有影响。他们的度量叫**汇点率**（sink rate）：在第一个词元上的平均注意力超过 0.3 的头所占的比例。它适合我们这样的短序列。
#
# Guo 等 2024（“Active-Dormant Attention Heads”）构造了一个可以直接观察机制的玩具任务：Bigram-Backcopy，本课就在它上面训练。一个在大多数词元上空闲的头，会把权重送到第一个词元，并把那个词元的值向量变小（“值状态排空”，value-state drain），于是读它几乎什么也加不进来。
#
# ## 论文的论断
#
# 论文在位置 **G1** 的门，把每个头的 SDPA 输出乘以 σ(X W_θ)，其中 X 是这个词元自己的归一化输入。论文把收益归于两点：(a) 值投影与输出投影之间的**非线性**，(b) **稀疏、依赖查询**的门分数。论文还报告：(c) 门消除了**注意力汇点**和巨量激活，(d) 门降低了损失。它的数字来自表 4（15B 混合专家模型）：
#
# | | 基线 | G1 逐元素 | G1 逐头 | 与输入无关的门 |
# |---|---|---|---|---|
# | 第一个词元上的注意力（F-Attn） | 0.467 | 0.048 | 0.073 | 0.364 |
# | 最大激活（M-Act） | 1053 | 94 | 98 | 471 |
# | 门分数均值 | – | 0.116 | 0.172 | 0.335 |
# | 困惑度 | 6.026 | 5.761 | | 5.917 |
#
# 最后一列是论文自己的对照：一个学到的门，但对每个词元都一样。它只把汇点降低了一点；依赖查询的门把它降到约十分之一。M-Act 是隐藏状态中最大的激活绝对值，与 Sun 等相对中位数的比值不是同一种度量（下文两种都测）。困惑度也可以在论文的仓库里查到（`figs/plot_compare.ipynb`：基线 6.026，G1 5.761）。
#
# ## 我们的回答：先看要点
#
# 我们在 Bigram-Backcopy 上、在两种设置下训练了一个 2 层、宽度 64 的模型，每种变体都训练了：没有门、G1 逐元素、G1 逐头，以及每个头一个静态标量。在课程的设置中，多种子实验还加了第五组：FFN 加宽的基线，它的权重和 G1 逐元素一样多。我们测量了**模式**：BOS（第一个词元）上的注意力份额。我们也测量了**依赖**，也就是 StreamingLLM 的问题：禁止所有查询看 BOS 时，损失上升多少。
#
# 下面的回答由随课程提供的测量值算出。每组先给出各种子上的均值 [最小值, 最大值] 和种子数 n，然后是每个比较。两组都至少有检验所需的 5 个种子时，它给出均值之比（前一组的均值除以后一组的）及其 95 % 自助法区间、U（前一组的值更低的种子配对数）、Mann–Whitney U 检验的精确双侧 p，以及 p 是否通过按比较个数校正后的阈值（都在下文的实验中解释）。种子更少时，它只给出秩规则，不做检验：

# %% en="c8c2218e1c7d"
from course import lesson08_analysis as analysis
from course import lesson08_experiment as experiment
from course import lm_training as lm

runs = {**lm.load_metrics(), **experiment.load()}
print(analysis.headline(runs))

# %% [markdown] en="c1e2adb2a33d"
# - **强汇点设置**（由下文的搜索找到）：3 个种子中有两个，基线的第 0 层几乎把全部注意力放在 BOS 上。在 3 个种子中，G1 逐元素都消除了这个模式，倍数与论文相近（上面第一块）。每个带门种子都低于每个基线种子，这是 3 个种子对 3 个能给出的最强结果，但种子太少，做不了实验的检验。在种子 0 中，屏蔽 BOS 只让这个基线付出约千分之一奈特的代价，种子 0 也是唯一测过的种子：那里的汇点只是模式，没有依赖，门也就没有依赖可消除。种子 1 和 2 没有检验过；实验的强汇点运行随课程提供后，会在它们自己的种子上检验依赖（第二块会说明它们是否已经提供）。
# - **课程自己的设置**（第三块：多种子实验，每组 n 个种子）：模式很弱，但基线依赖 BOS：在每个种子中，屏蔽它都有实在的代价。G1 逐元素把两者都降低了：BOS 上的份额降到基线的一半左右，屏蔽 BOS 的代价降到基线的一小部分，两个差别都通过了校正后的检验。不过并非每个种子都如此：少数带门种子保留的依赖，比最轻的那个基线种子还大（见“每个种子都低于每个种子”后面的计数）。加宽的基线权重和带门模型一样多，在两项上都与基线区分不开（两个比值的区间都包含 1），而 G1 逐元素在两项上都低于它：门的效应不是来自它多出的权重。静态标量是玩具中与输入无关的门，它在实验队列中排在后面：它的那几行给出它有几个种子，以及检验的结果。那里的“否”表示这些种子区分不开两组，而不是两组相同。
#
# **局限，实话实说。**2 层，宽度 64，64 个词元，一个学习率，种子数见上面的输出。我们带门后的份额（强汇点设置中约 0.04）*低于* 64 个词元上的均匀注意力（0.059）；论文在数千个词元上的 4.8 % 则远*高于*均匀注意力。所以可比的是方向和倍数，不是数值。在课程的设置中，基线在 BOS 处读到的是实在的值：把它置零的代价和屏蔽 BOS 差不多（种子 0）。所以这个玩具的依赖，更像把 BOS 当作固定的输入，而不只是停放权重的地方。3 种子的运行只在种子 0 上做了功能测试；实验在每个种子上都做。实验按论断需要的顺序训练它的运行，并能从中断处继续：在 CPU 上用 `scripts/train_lesson08.py --experiment`，在有 GPU 的机器上加 `--device cuda`（多启动几次：每个进程各取队列中的下一次运行）。它已随课程提供的运行，以及它们用了多少 CPU 时间，都打印在下文。这里没有哪个激活接近 Sun 等所说的巨量（中位数的一千倍），所以那条论断在这里无法检验。我们怎样找到这两种设置，以及全部表格，都在后面。
#
# ## 门，以及笔记 003 错在哪里
#
# 对每个词元，设 X 是这一层归一化后的输入（pre-norm 的 RMSNorm 之后的隐藏状态），Y 是一个头的 SDPA 输出。论文在位置 **G1** 的门是
#
# $$Y' = Y \odot \sigma(X W_\theta)$$
#
# 然后 W_O 作用于 Y' 而不是 Y。有三点要紧：
# 1. **逐词元**：门来自 X，也就是生成 q、k、v 的同一个输入。每个词元算出自己的门；
# 2. **逐头**：每个头有自己的那几列门。*逐元素*（elementwise）指每个头的每个通道一个门，所以 W_θ 有 n_heads·head_dim 列（论文最好的变体）。*逐头*（headwise）指每个头一个门（n_heads 列）；
# 3. **在 SDPA 之后、W_O 之前**。论文也试过别的位置：值之后（G2）、W_O 之后（G5），等等。G1 最好。
#
# **论文的代码原本的样子**（仓库 `qiuzh20/gated_attention`，`modeling_qwen3.py`，一个 Qwen3 模型）：pre-norm 的 **RMSNorm**，q 和 k 上的**旋转位置编码**（RoPE），没有可学习位置。门没有自己的模块：`q_proj` 多出一些输出行，所以门的 logit 与 q、k、v 来自同样的归一化隐藏状态，在 q 自己的归一化和 RoPE 之前。这些行按键/值头的组排列（代码用 `view(bsz, q_len, num_key_value_heads, -1)` 拆分 `q_proj` 的输出）：每组的块里先是这组各头的查询，再是它们的门。只有不用分组查询注意力时（每组一个头），才是每个头一块。SDPA 之后，输出逐头乘以 `sigmoid(gate)`，然后是 `o_proj`。**没有单独的门偏置**：只有设置了 `config.qkv_bias`，`q_proj`（以及 `k_proj`、`v_proj` 和 `o_proj`）才有偏置。仓库的配置类没有定义这个选项（它定义的是 `attention_bias=False`），所以它的取值来自发布模型的配置。它的 eager 注意力路径用 float32 计算 softmax。
#
# 我们的练习把门写成一个单独的、不带偏置的 `gate_proj = Linear(d_model, n_gates, bias=False)`，输入同一个 X。它与不带偏置的 `q_proj` 多出的那些行是同一个函数，只是更易读，也更容易关掉。
#
# 笔记 003（本课程出发点之一的原始笔记）把门描述为*每个头一个可学习的标量* σ(g_h)，对每个词元都一样。这是**错的**，而且区别很重要。每个头一个固定的数可以并入 W_O（下面你会亲手做），所以它既不增加非线性，也不带来依赖查询的稀疏性。它和论文中与输入无关的门是同一类对照。笔记还引用了一个“rank 127.3 → 156.8”，它不在论文里，也不可能发生（同样见下文）。它的引用“Qwen Team (2024)”也是错的。
#
# 门增加了多少参数？在论文的 15B MoE 模型中（隐藏大小 2048，32 个 128 通道的查询头，24 层），所有层合计：

# %% en="bf4c470d1f9b"
hidden, heads, head_dim, layers = 2048, 32, 128, 24
print(_("elementwise G1: {n:>12,} parameters").format(n=layers * hidden * heads * head_dim))
print(_("headwise G1:    {n:>12,} parameters").format(n=layers * hidden * heads))
print(_("one scalar per head (seed 003's reading): {n:,} parameters").format(n=layers * heads))

# %% [markdown] en="1c011f94593d"
# ## 练习：G1 门
#
# 打开 `exercises/gated_attention.py`。`GatedCausalSelfAttention(d_model, n_heads, gate)` 是因果多头自注意力。`attend(x)` 已经替你写好（它用你第 02 课的 `attention_weights` 和 `causal_mask`），返回每个头的 SDPA 输出 y，形状为 `(*, L, n_heads, head_dim)`。你要写三部分：
#
# 1. 在 `__init__` 中：`self.gate_proj`，一个 `Linear(d_model, n_heads * gate_width, bias=False)`（不带偏置，与论文一样），其中 gate_width 对 `"elementwise"` 是 head_dim，对 `"headwise"` 是 1；
# 2. `gate_scores(x)`：`gate_proj(x)` 的 sigmoid，最后一个轴拆成 `(n_heads, gate_width)`。第 h 块通道属于头 h；
# 3. 在 `forward` 中：在 `self.out` 之前，把 y 乘以门的分数。
#
# `"static"` 变体（每个头一个可学习的 σ(g_h)）已经替你写好，用来对比。

# %% tags=["check"] en="4e2255ac2e95"
from course.checks.lesson08 import check_gate_elementwise
from exercises.gated_attention import GatedCausalSelfAttention

check_gate_elementwise(GatedCausalSelfAttention)

# %% tags=["check"] en="d3237793cf4d"
from course.checks.lesson08 import check_gate_headwise
from exercises.gated_attention import GatedCausalSelfAttention

check_gate_headwise(GatedCausalSelfAttention)

# %% [markdown] en="f3f534418fb0"
# ## 围绕注意力的模型：一个小型语言模型，两种构建
#
# 第 07 课搭建了围绕注意力的 Transformer 块。语言模型把这样的块堆叠在嵌入和输出头之间。代码都在 `exercises/tiny_lm.py` 里。那里没有练习，从头到尾读一遍即可。它自带每个部件的副本，所以不管你的练习写到哪一步，随课程提供的权重都能运行：
#
# - **词元嵌入**：词元 id → 一个由 d_model 个数组成的可学习向量；
# - **pre-norm 残差块**：`h = h + attention(Norm(h))`，然后 `h = h + FFN(Norm(h))`。残差流 h 把一切向前传递。每个子层读取它的一份归一化副本，再把结果加回去。门的 X 就是这份归一化副本；
# - **前馈网络（FFN）**：Linear(d_model → d_ff)、GELU、Linear(d_ff → d_model)，对每个位置分别作用；
# - **输出头**：最后一个 Norm，再与每个词元的嵌入做点积（输出头与输入嵌入*绑定*），得到下一个词元的 logit。
#
# 论文的模型和 GPT-2 系列在归一化、位置和门偏置上有差别，两种构建的差别正在这里：
#
# | | **类论文模型**（`arch=“paper”`，默认） | **GPT-2 风格模型**（`arch=“gpt2”`） |
# |---|---|---|
# | 归一化 | RMSNorm（第 07 课） | LayerNorm |
# | 位置 | 每一层在 q 和 k 上用 RoPE | 每个位置一个可学习向量，加到嵌入上 |
# | G1 门 | 不带偏置的 `gate_proj`（与论文的代码一样） | 带自己偏置的 `gate_proj` |
# | 块 | 第 07 课的 `DecoderBlock`，同样的名字 | 堆叠的 `qkv`、不带偏置的 `out`（你练习中的名字） |
# | FFN 宽度 d_ff | 256（4·d_model，常用值） | 128（课程的第一个小型语言模型） |
#
# 类论文模型并*不是*处处都像 Qwen3。它保留了带偏置的 GELU FFN（Qwen3 用不带偏置的 SwiGLU），W_O 上有偏置（Qwen3 没有），没有 QK-norm（Qwen3 在 RoPE 之前用 RMSNorm 逐头归一化 q 和 k），也没有分组查询注意力和混合专家。这些差别是为了让小模型保持简单，并不表示我们认为它们无关紧要。
#
# 两者都是 2 层，d_model 64，4 个 16 通道的头，GELU，上下文 64 个词元，位置 0 是 BOS 词元。每种构建有四个变体：基线（没有门）、G1 逐元素、G1 逐头，以及每个头一个静态标量。多种子实验给类论文模型加了第五组，用来对照门多出的参数：FFN 加宽 32 个单元的基线（d_ff 288），它多出的权重与 G1 逐元素多出的一样多。它的 FFN 还多出 64 个偏置，所以在带偏置的课程设置中，它比 G1 逐元素多 64 个参数；没有偏置时两者一样大（下面的单元两种都数）。
#
# 另外三个开关在两种构建中都改变注意力之外的模型部件；下文搜索注意力汇点时，每次只拨动其中一个：
# - `init=“normal”`：每个矩阵都从 N(0, 0.02) 抽取；写入残差流的两个投影（W_O、FFN 的第二层）从 N(0, 0.02/√(2·layers)) 抽取，偏置为 0。这是 GPT-2 的初始化（Hugging Face 的 Qwen3 配置也从 N(0, 0.02) 抽取）。默认的 `init=“torch”` 是 PyTorch 对 `nn.Linear` 的初始化，对 64 宽的层来说分布更宽；
# - `biases=False`：W_O 和 FFN 中都没有偏置，与 Qwen3 一样；
# - `tied=False`：用单独的输出头，而不是词元嵌入。

# %% en="331abe31f172"
from exercises.tiny_lm import TinyLM

from course.widgets import lesson08 as plots

for arch in ("paper", "gpt2"):
    for gate in ("none", "elementwise", "headwise", "static"):
        model = TinyLM(vocab_size=28, gate=gate, arch=arch)
        print(f"{pad(_(plots.ARCH_NAMES[arch]), 44)} {pad(analysis.label(gate), 16)} "
              + _("{n:,} parameters").format(n=sum(p.numel() for p in model.parameters())))
print({k: v for k, v in TinyLM(vocab_size=28).config.items() if k != "gate"})
for vocab, biases in ((28, True), (29, False)):  # 课程的设置、强汇点设置
    wider = sum(p.numel() for p in TinyLM(vocab, d_ff=256 + experiment.WIDER, biases=biases).parameters())
    gated = sum(p.numel() for p in TinyLM(vocab, gate="elementwise", biases=biases).parameters())
    print(_("biases {biases}: the wider baseline (d_ff {d_ff}) {wider:,} parameters, G1 elementwise "
            "{gated:,}: {more:+,}").format(biases=biases, d_ff=256 + experiment.WIDER, wider=wider,
                                          gated=gated, more=wider - gated))
torch.manual_seed(0)
for init in ("torch", "normal"):
    weight = TinyLM(vocab_size=28, init=init).blocks[0].attn.linear_q.weight
    print(_("init={init!r}: the std of W_Q in layer 0 is {std:.3f}").format(init=init, std=weight.std()))

# %% [markdown] en="b50c442315f3"
# 类论文模型的块沿用第 07 课 `DecoderBlock` 的模块名和参数名（`norm_attn`、`attn.linear_q/k/v/o`、`norm_ffn`、`ffn`）。所以训练好的基线块可以严格地（strict）载入**你的** `DecoderBlock(64, 4, 256, rope=True)`，而且必须算出同样的输出。如果你还没写第 07 课，这个单元会说明，课程照常继续。

# %% en="905c84d88f99"
shipped_block = lm.load_checkpoint("bb", "none", seed=0, arch="paper").blocks[0]
try:
    from exercises.transformer import DecoderBlock

    yours = DecoderBlock(64, 4, 256, rope=True)
    yours.load_state_dict(shipped_block.state_dict(), strict=True)
    h = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        gap = (yours(h) - shipped_block(h)[0]).abs().max().item()
    print(_("your DecoderBlock runs the shipped block's weights: same output {same} "
            "(max |difference| below 1e-4)").format(same=gap < 1e-4))
except (ImportError, NotImplementedError, RuntimeError, AttributeError, TypeError) as error:
    print(_("lesson 07's DecoderBlock is not written yet (exercises/transformer.py), so this "
            "comparison is skipped: {error}").format(error=type(error).__name__))

# %% [markdown] en="14d4e60db222"
# ## 两个数据集
#
# **Bigram-Backcopy**（仿照 Guo 等 2024）：字符 `a`–`z` 和空格沿一条二元（bigram）链依次出现。这张表由我们的文本语料统计而来，放在 `data/lesson08/` 中。遇到触发符后，下一个字符**复制触发符之前的那个字符**。只有在这些复制位置上，注意力才有活要干。在其他位置，当前字符已经说明了一切；无事可做的头仍然必须把它的 softmax 权重放在某处。
#
# Guo 等自己的代码（仓库 `GuoTianYu2000/Active-Dormant-Attention`，`BBM/data.py`）按莎士比亚文本的二元组频率抽取字符。触发符是出现*最频繁*的 k = 3 或 5 个字符；第一个字符按字符频率抽取，但排除触发符。序列长 256 个词元。课程的版本以字母 `f`、`p`、`w` 为触发符，按它们的二元组频率出现；每个序列像一个词那样开头（第一个字符跟在空格之后）。`lm.BigramBackcopy` 有三个改变数据的选项，强汇点设置把三个都打开：
# - `trigger=“token”`：单独的触发词元（下面的 `#`），在任何其他字符之后以 0.1 的概率出现。这是早先一个原型的选择，不是 Guo 等的；
# - `first=“uniform”`：第一个字符是 26 个字母中的任意一个，概率相等；
# - `smoothed=False`：用语料的原始二元组计数（没见过的字符对仍然不会出现），而不是随课程提供的表所做的加一平滑。
#
# **文档字符串文本**：取自 Python 标准库文档字符串的 400,000 个字符（PSF 许可证；由 `scripts/make_lesson08_data.py` 提取）。这是一小段自然文本。下面 `^` 是 BOS，`|` 标出 Bigram-Backcopy 序列的复制位置。

# %% en="7d7350977997"
bb, text = lm.load_dataset("bb"), lm.load_dataset("text")
bb_sink = lm.load_dataset("bb", **lm.sink_spec(lm.SETUPS["sink"])["data"])
for name, data in ((_("triggers f, p, w"), bb), (_("a trigger token"), bb_sink)):
    sample = data.sample(1, torch.Generator().manual_seed(3))[0]
    copies = int(data.copy_positions(lm.validation_tokens(data)).sum())
    print(_("{name}: {copies} copy positions in the validation set, of {n} predictions").format(
        name=name, copies=copies, n=lm.VAL_SEQUENCES * (lm.SEQ_LEN - 1)))
    print(data.decode(sample))
    print("".join("|" if c else " " for c in data.copy_positions(sample[None])[0]))
print(_("docstring corpus: {n:,} characters, {distinct} distinct, 90 % for training").format(
    n=len(text.train_ids) + len(text.val_ids), distinct=text.vocab_size - 1))
print(repr(text.decode(text.sample(1, torch.Generator().manual_seed(3))[0])))

# %% [markdown] en="61b8f5295271"
# ## 训练好的权重，或者自己训练
#
# 这里的每个模型都按下面的训练方案训练：AdamW、线性预热、余弦衰减，2,500 步，每步 32 个序列。共有两种**设置**。课程自己的模型和数据，分别在 Bigram-Backcopy 和文本上训练。强汇点设置由下文的搜索找到，在 Bigram-Backcopy 上训练。GPT-2 风格模型沿用课程的第一个训练方案（对每个参数施加 0.01 的权重衰减）。类论文模型用大语言模型常见的方案（只对矩阵施加 0.1 的权重衰减，预热更短），FFN 宽度取常用的 4·d_model。两种构建的每个变体都有 3 个种子。**多种子实验**再次训练 Bigram-Backcopy 上的类论文模型，种子更多，还加上第五组，并按本课的论断需要的顺序训练：在课程的设置中，先是基线和 G1 逐元素，然后是加宽的基线，再是种子较少的静态标量和 G1 逐头；强汇点设置放在最后。它每 100 步记录一次损失、BOS 上的份额、值状态排空和屏蔽 BOS 后的损失，训练结束时跑全部功能测试。它的运行各自独立：同一个种子编号并不会重现那次 3 种子的运行，因为训练在不同的线程数、设备和库版本之间做不到逐位重现。
#
# 每次运行的测量值都放在 `data/lesson08/` 中，种子 0 的 float16 权重文件也在那里，所以这个笔记本只需加载它们。`scripts/train_lesson08.py` 在命令行中训练每一组，并从中断处接着训练：实验用 `--experiment`（启动两次，就能在 2 个核心上同时训练两个），在 GPU 上用 `--experiment --device cuda`，然后用 `--experiment --collect` 把已完成的运行放进随课程提供的数据。
#
# 设置 `RETRAIN = True` 可以自己重新训练强汇点设置下的对比：类论文模型，四个变体。为了在 2 个核心上不超过 10 分钟，它只训练**一个种子、`lm.RETRAIN_STEPS` 步**，而不是 2,500 步。所以把它的数字与随课程提供的数字比较时，只看方向和大小，不要逐位比较。

# %% en="635eb343e7db"
for arch, recipe in lm.RECIPES.items():
    print(_("{arch} recipe: {recipe}, d_ff {d_ff}").format(arch=arch, recipe=recipe, d_ff=lm.D_FF[arch]))
print(_("the strong-sink set-up: {factors}").format(factors=", ".join(lm.SETUPS["sink"])))
ablations, search = lm.load_ablations(), lm.load_sink_search()
for setup in ("course", "sink"):
    prefix = analysis.EXPERIMENT_PREFIXES[setup]
    print(_("experiment, {setup}: seeds per arm: {seeds}").format(
        setup=analysis.label(setup), seeds="; ".join(
            f"{analysis.label(arm)} {analysis.n_seeds(runs, prefix, 'bb', arm)}"
            for arm in analysis.ARM_LABELS)))
print(_("{runs} runs shipped in all (the experiment's among them), {search} runs of the sink "
        "search, {ablations} ablation runs").format(runs=len(runs), search=len(search), ablations=len(ablations)))

# %% tags=["nbval-ignore-output"] en="091ea6b6b42c"
cpu = [m["cpu_seconds"] for m in experiment.load().values()]
minutes = sum(m.get("train_seconds", 0) for m in [*runs.values(), *ablations.values(), *search.values()]) / 60
print(_("the experiment's {n} runs took {hours:.1f} CPU hours, {each:.1f} CPU minutes a run on "
        "average (from {low:.1f} to {high:.1f}); the 3-seed runs, the search and the ablations "
        "{minutes:.0f} min (one thread each, on 2 cores shared with other jobs)").format(
    n=len(cpu), hours=sum(cpu) / 3600, each=sum(cpu) / max(len(cpu), 1) / 60,
    low=min(cpu, default=0) / 60, high=max(cpu, default=0) / 60, minutes=minutes))
left = len(experiment.queue()) - len(cpu)
print(_("{left} runs of the experiment remain: about {hours:.0f} CPU hours at that rate "
        "(`scripts/train_lesson08.py --experiment` resumes them; `--device cuda` on a GPU)").format(
    left=left, hours=left * sum(cpu) / max(len(cpu), 1) / 3600))

# %% en="a972d37da72b"
RETRAIN = False  # True：类论文模型，强汇点设置，4 个变体，种子 0，lm.RETRAIN_STEPS 步
if RETRAIN:
    fresh = lm.retrain_main_comparison()
    print(lm.compare_runs(runs, fresh))

# %% [markdown] en="3ec3c4ebf216"
# ## 检验论断 (c)：作为模式的汇点
#
# **首词元份额**是位置 0（BOS）上的注意力权重，对各层、各头和位置 ≥ 1 的查询取平均（位置 0 只能看它自己）。如果注意力均匀分布，位置 i 的查询给 BOS 的是 1/(i+1)。对我们的 63 个查询位置取平均，结果是：

# %% en="961df11861cf"
print(_("uniform attention: first-token share {share:.3f}").format(share=lm.UNIFORM_SHARE))

# %% [markdown] en="16b19bb46811"
# 两种构建、两种设置，都在 Bigram-Backcopy 上：BOS 上的份额（各种子的均值，以及每一层的值）和验证损失。

# %% en="9dfb92e4af34"
NAMES = {arch: _(plots.ARCH_NAMES[arch]) for arch in lm.ARCHS}
print(_("Bigram-Backcopy, the strong-sink set-up (trigger token), mean over seeds"))
print(analysis.side_by_side(runs, {f"sink/{arch}": NAMES[arch] for arch in lm.ARCHS}, "bb"))
print()
print(_("Bigram-Backcopy, the course's set-up (triggers f, p, w), mean over seeds"))
print(analysis.side_by_side(runs, {arch: NAMES[arch] for arch in lm.ARCHS}, "bb"))

# %% [markdown] en="c54fa2fea3cc"
# 在强汇点设置中，基线把全部注意力的约一半放在 BOS 上，第 0 层放得更多：类论文模型 3 个种子中有两个，第 0 层几乎全放在那里（各个种子打印在下文搜索表的下方）。两种构建中，G1 都降低了份额。在课程的设置中，基线只把约五分之一放在 BOS 上，远低于论文的 46.7 %，门的效果也更小。单看模式，似乎应该在强汇点设置中检验这条论断。下一个测试却给出了相反的答案。
#
# ## 模型需要它的汇点吗？功能测试
#
# 一个模式可能只是闲置的。StreamingLLM 问的是：模型是否*需要*它的第一个词元。我们在训练好的模型的每一层屏蔽一些键，从三个角度来问：
# - **屏蔽 BOS**：任何查询都不许看 BOS，softmax 把权重分给其他键。代价是验证损失的上升，单位是每个字符的奈特（nat）；
# - **窗口**：每个查询只看最近的 8 个键，**旁边带或不带 BOS**。这就是玩具规模的 StreamingLLM 测试：不带 BOS 应该崩溃，带上 BOS 应该恢复；
# - **把 BOS 的值置零**：权重不变，但头在 BOS 处读到的是零。如果这和屏蔽 BOS 代价相当，说明模型在 BOS 处读到了实在的东西；如果毫无代价，BOS 只是停放权重的地方。
#
# 表中还给出 BOS 上的份额（全部层，以及第 0 层）和**值状态排空**：第 0 层中 BOS 的值向量与其他词元的值向量大小之比 |v_BOS| / |v|（1 表示一样大）。类论文模型每个变体的种子 0：

# %% en="f64206a12aba"
FUNCTIONAL_CASES = [(_("strong-sink, Bigram-Backcopy"), "sink/paper", "bb"),
                    (_("course's, Bigram-Backcopy"), "paper", "bb"),
                    (_("course's, docstring text"), "paper", "text")]
print(analysis.functional_table(runs, FUNCTIONAL_CASES))

# %% [markdown] en="cdd8ce1ac73d"
# **强汇点不承担任何负载（种子 0）。**强汇点基线的种子 0 中，第 0 层几乎把全部注意力放在 BOS 上，可屏蔽 BOS 几乎没有代价。BOS 的值被排空了：只有其他词元的百分之几（排空那一列），头在那里读到的几乎是零。拿走 BOS，权重就分散到其他键上，而网络的其余部分也不需要这些键。这个种子复现了汇点的模式和值状态排空，却没有复现让大模型的汇点变得要紧的那种依赖。另外两个种子没有测过：种子 1 的第 0 层放在 BOS 上的权重少得多，更接近课程的设置。
#
# **弱模式反而承担了实在的负载。**在课程的设置中（种子 0），屏蔽 BOS 让基线每个字符的损失上升：Bigram-Backcopy 上约 0.13 奈特，文本上约 0.3 奈特。不带 BOS 的 8 键窗口代价相当；窗口旁带上 BOS，代价几乎消失。这正是 StreamingLLM 的发现，只不过出现在一个 2 层模型里。在 Bigram-Backcopy 上，BOS 的值比其他词元的大，把它置零的代价也和屏蔽 BOS 差不多。在文本上，BOS 的值比其他词元的略小，置零的代价约为屏蔽 BOS 的三分之二。所以这个基线把 BOS 当作一个固定向量的来源，每次都去读这个学到的偏置，而不只是一个停放权重的空位。Gu 等描述的大模型第一个词元更像键上的偏置，值却很小；我们的偏置在值里。这是玩具版的依赖，不是大语言模型的那种。在 Bigram-Backcopy 上，GPT-2 风格模型更接近后者（见附录）：屏蔽 BOS 让它的基线付出约 1 奈特，而把 BOS 的值置零只能解释其中不到一半。
#
# **在种子 0 中，凡是存在依赖的地方，G1 逐元素都把它降到基线代价的一小部分**，两种构建都是：Bigram-Backcopy 上为十八分之一或更少，文本上约为五分之一或更少。静态标量保留了大部分或全部依赖。在 Bigram-Backcopy 上，逐头门因构建而异：类论文模型中它保留了依赖，GPT-2 风格模型中它把依赖降了下来。以上都只是一个种子；下面的多种子实验在更多种子上检验每个变体。G1 逐元素的削减换了种子还成立吗？实验的回答是：平均而言成立，但不是每个种子都成立。
#
# ## 多种子实验
#
# Bigram-Backcopy 上的类论文模型，五组，分阶段训练：在课程的设置中（基线依赖 BOS），先在每个种子上训练 G1 逐元素和基线，然后在每个种子上训练加宽的基线，再在较少的种子上训练静态标量和 G1 逐头；强汇点设置放在最后。下面是第一阶段的曲线，取自随课程提供的训练日志（每 100 步在 64 个验证序列上测量）：BOS 上的份额、屏蔽 BOS 时的损失（虚线：看全部键时的损失），以及两者之差，即屏蔽 BOS 的代价。每个种子一条细线，各种子的均值一条粗线，图例中给出种子数 n：

# %% en="3186353c5752"
plots.training_curves(runs)

# %% [markdown] en="fe766b0b0915"
# 同样的曲线，取几个训练步数，写成各种子上的均值 [最小值, 最大值]，并加上加宽的基线；然后是 G1 逐元素每个种子屏蔽 BOS 的代价：

# %% en="ef738e2a614d"
prefix = analysis.EXPERIMENT_PREFIXES["course"]
for key in ("first_token_share", "bos_cost"):
    print(analysis.curve_table(runs, prefix, key, arms=("none", "elementwise", "wider")))
    print()
print(analysis.curve_table(runs, prefix, "bos_cost", seeds_of="elementwise"))

# %% [markdown] en="ad3234ea7802"
# 模式在两组中都在最初一百步内形成，此后几乎不动，带门的份额始终约为基线的一半。基线的依赖出现得一样早，每个种子都是，平均而言一直缓慢增长到最后。G1 逐元素的依赖在大多数种子中、在训练的大部分时间里都很小，有些种子中会短暂升高（见细线）；在少数最后变大的种子中，它的增长大部分发生在最初 1,000 步之后。所以门并不让依赖变得不可能：它让依赖更少出现，平均也小得多。
#
# 训练结束时测得的一切，按组列出，格式是各种子上的均值 [最小值, 最大值]（n 个种子）。各列依次是：BOS 上的份额（全部层；第 0 层）、第 0 层的值状态排空、Gu 等的汇点率、验证损失，以及各项功能测试的代价（窗口为 8 个键）。

# %% en="f7b74bdc56f0"
for setup in ("course", "sink"):
    print(analysis.label(setup))
    print(analysis.experiment_table(runs, setup))
    print()

# %% [markdown] en="98fd110d17ea"
# **检验。**我们把论文的论断 (c) 检验为每种设置中的两个比较：论文测量的模式（BOS 上的份额），以及它没有测量的依赖（屏蔽 BOS 的代价，即 StreamingLLM 的问题）。G1 逐元素在这两项上与基线不同吗？两种设置共 4 个比较，我们以 0.05 / 4 = 0.0125 为界检验它们（Bonferroni 校正：4 个比较中任何一个碰巧通过的概率仍低于 0.05）。每个比较用精确的双侧 Mann–Whitney U 检验。U 数的是在所有（前一组的一个种子，后一组的一个种子）配对中，前一组的值更低的有多少对。检验问的是：如果两组来自同一个分布，U 离中间至少这么远的概率有多大。它把合在一起的种子分成两组的所有分法都数一遍，在这个假设下每种分法的可能性都一样。一组的每个种子都低于另一组的每个种子，是最极端的分法：n1 个种子对 n2 个时，它的双侧 p 是 2 / C(n1 + n2, n1)。所以 3 个种子对 3 个永远过不了 0.0125（2/20 = 0.1）；5 对 5 可以（2/252 = 0.008），10 对 10 能达到 2/184,756，约 0.00001。我们只在两组都至少有 5 个种子时做检验。
#
# 效应的大小用均值之比表示：前一组的均值除以后一组的，附上 95 % 百分位自助法（bootstrap）区间：对每组的种子有放回地重抽样，重复很多次，取这些比值中间的 95 %。只有 5 到 10 个种子时，这样的区间往往偏窄：把它读作种子所允许的分散，而不是精确的保证。两组共用每个种子的训练序列，所以配对检验可能更灵敏；我们把两组当作相互独立，这是更谨慎的选择。

# %% en="202312e2f93a"
print(_("exact two-sided Mann-Whitney U test; ratio of the means with a 95 % percentile "
        "bootstrap interval, {n:,} resamples").format(n=analysis.stats.BOOTSTRAP_RESAMPLES))
print(analysis.comparison_table(runs, analysis.PRIMARY))

# %% [markdown] en="5b03d910d17e"
# 接着是对照，在每种设置中：G1 逐元素对加宽的基线（效应是否只是门多出的权重？），加宽的基线对基线，静态标量对基线，以及 G1 逐元素对静态标量（门是否必须由词元算出？），还有 G1 逐头对基线。两种设置共 20 个比较，以 0.05 / 20 = 0.0025 为界检验：5 个种子对 10 个可以通过（2/3,003 = 0.0007），5 对 5 不行。

# %% en="36338d38f5c4"
print(analysis.comparison_table(runs, analysis.CONTROLS))

# %% [markdown] en="fde8d56b131c"
# **实验说明了什么。**在课程的设置中，G1 逐元素对基线通过了这条论断的两项检验：有门时，BOS 上的份额和屏蔽 BOS 的代价都更低。代价是更嘈杂的那一项。在不同种子之间，基线的代价从它的最低值起相差好几倍；少数带门种子保留的依赖，比最轻的那个基线种子还大。所以门降低了依赖：对均值和大多数种子如此，并非对每次运行都如此；把依赖消除（代价接近零）的只是部分种子。实验的种子在两项上都区分不开加宽的基线和基线（两个比值的区间都包含 1），而 G1 逐元素在两项上都低于加宽的基线：降低汇点的不是门多出的权重。静态标量和 G1 逐头在队列中排在后面，种子可能更少；对照表给出每个比较的种子数和判定。那里的“否”表示这些种子区分不开两组，而不是两组相同：比值的区间表明两组仍可能相差多远。强汇点设置的运行随课程提供后，会有自己的行。在那之前，它的回答在模式上依据 3 种子的运行，在依赖上依据种子 0。
#
# ### 门做了什么，逐头来看
#
# 小部件分别显示每一层。选择一组运行、一种构建和一个种子。

# %% tags=["nbval-ignore-output"] en="2ecceeab137f"
from course.widgets.lesson08 import sink_explorer

sink_explorer(runs)

# %% [markdown] en="9cc3f0cf95c7"
# 逐头来看：每个方格是种子 0 的一个（层，头），Bigram-Backcopy，两种构建，强汇点设置。

# %% en="ed0c30ca7bb8"
plots.per_head_heatmaps(runs, "bb", seed=0, arch="paper", setup="sink")

# %% en="a42310a80e17"
plots.per_head_heatmaps(runs, "bb", seed=0, arch="gpt2", setup="sink")

# %% [markdown] en="011635053e71"
# 再看一个头在一个验证序列上做了什么（类论文模型，强汇点设置，第 0 层，前 24 个位置）：每个变体中把最多权重放在 BOS 上的那个头。

# %% en="f5731cca60d0"
tokens = lm.validation_tokens(bb_sink)[:1, :24]
maps = {}
for gate in ("none", "elementwise"):
    model = lm.load_checkpoint("bb", gate, seed=0, setup="sink")
    with torch.no_grad():
        _logits, record = model(tokens, details=True)
    shares = record["weights"][0][0, :, 1:, 0].mean(dim=-1)
    head = int(shares.argmax())  # 在 BOS 上权重最大的头
    maps[gate] = record["weights"][0][0, head]
    print(_("{variant}: layer 0, head {head}, share on BOS {share:.2f}").format(
        variant=pad(analysis.label(gate), 16, ">"), head=head, share=shares[head]))
plots.attention_maps(maps, "paper-like build, strong-sink set-up, layer 0, head with the largest BOS share")

# %% [markdown] en="0308762990cd"
# 门关上的头几乎什么也传不出去，不管它的注意力权重是什么。所以对带门的模型，BOS 上的份额只说明了一半。下面逐层列出每个头在 BOS 上的份额，以及这个头的平均门分数（G1 逐元素，强汇点设置，种子 0，两种构建）。

# %% en="629ffa2348ef"
for arch in lm.ARCHS:
    model = lm.load_checkpoint("bb", "elementwise", seed=0, arch=arch, setup="sink")
    with torch.no_grad():
        _logits, record = model(lm.validation_tokens(bb_sink)[:64], details=True)
    for layer in range(2):
        bos_share = record["weights"][layer][:, :, 1:, 0].mean(dim=(0, 2))
        gate_mean = record["gate_scores"][layer][:, 1:].mean(dim=(0, 1, 3))
        print(_("{arch}, layer {layer}: {heads}").format(arch=arch, layer=layer, heads="  ".join(
            _("head {head}: BOS {share:.2f}, gate {gate:.2f}").format(
                head=h, share=bos_share[h], gate=gate_mean[h]) for h in range(4))))

# %% [markdown] en="57662c2e2cb1"
# 在大模型中，汇点出现在较深的层，并伴随着巨量激活：Sun 等表明，正是巨量激活让第一个词元的键与众不同。这里的汇点却在第 0 层，直接认出 BOS 的*嵌入*。不要把玩具的机制照搬到大模型上；值得带走的是问题和检验方法。

# %% [markdown] en="020cb3854d22"
# ## 我们怎样找到这两种设置
#
# 这一节为上面的回答提供支撑：强汇点设置是怎样找到的，以及在课程的设置中，两种构建的差别由什么决定。
#
# ### 强汇点模式在哪里形成？
#
# 一个独立的原型用同样的训练方案（2 层、RMSNorm、RoPE、GELU FFN、AdamW、2,500 步），在 Bigram-Backcopy 上形成了强汇点：它的第 0 层几乎把全部注意力放在 BOS 上。它与课程的模型和数据同时有七处不同，即 `lm.SINK_FACTORS`。三处在数据：触发词元、第一个字符、原始二元组。一处在训练：反复抽取一个固定的 40,000 序列池，而不是每次用新序列。三处在模型：初始化、没有偏置、不绑定的输出头。我们把每一处都写成课程代码的一个选项，在类论文模型上只训练基线，用尽量少的训练次数把各因素区分开：
#
# 1. 七处全用：课程的代码是否也会形成汇点？
# 2. 三个模型部件加触发词元，其余照用课程的数据和训练（新序列、像词那样开头的第一个字符、平滑过的二元组）；
# 3. 逐一去掉：七处中每次去掉一处，各一个种子；
# 4. 凡是判断所依赖的运行都用 3 个种子：两种设置，以及去掉后汇点消失的那两处；
# 5. 仍能形成汇点的最小组合。
#
# 搜索按基线种子 0 的份额来挑设置，而不是按门的效果。这个种子同时也是门的比较中基线的种子 0，所以比较可能因这个选择而被夸大（赢家的诅咒）：因模式强而被挑中的种子，可能比这个设置的典型种子更强。表格下面最后一行把这个种子去掉来衡量它。每一行是一组部件（x：原型的选择，.：课程的选择），列出基线的首词元份额（n 个种子上的均值 [最小值, 最大值]）和第 0 层的份额。第一行是课程的设置，第二行是强汇点设置（七处全用），两者都有 3 个种子：

# %% en="86fb4be91e2d"
print(analysis.search_table(analysis.search_with_setups(search, runs, lm.SETUPS), lm.SINK_FACTORS))
for seed in range(3):
    run = runs[f"sink/paper/bb/none/seed{seed}"]
    print(_("all seven, seed {seed}: share on BOS {share:.3f}, layer 0 {layer0:.3f}").format(
        seed=seed, share=run["first_token_share"], layer0=run["first_token_share_per_layer"][0]))
base = analysis.values(runs, "sink/paper", "bb", "none", "first_token_share")
gated = analysis.values(runs, "sink/paper", "bb", "elementwise", "first_token_share")
print(_("without seed 0, the seed the search chose by: baseline {base:.3f} (was {all:.3f}), G1 "
        "elementwise {gated:.3f}, {ratio:.1f}x lower on the means (was {was:.1f}x); every gated seed "
        "below both other baseline seeds: {rule}").format(
    base=analysis.mean(base[1:]), all=analysis.mean(base), gated=analysis.mean(gated),
    ratio=analysis.mean(base[1:]) / analysis.mean(gated), was=analysis.mean(base) / analysis.mean(gated),
    rule=_("yes") if max(gated) < min(base[1:]) else _("no")))

# %% [markdown] en="2635c26b0d75"
# **搜索说明了什么。**
#
# - *选择种子 0 让比较略有夸大*：去掉这个种子，基线的平均份额下降，门的倍数也随之下降，但每个带门种子仍低于剩下的两个基线种子（见上面最后一行）。
# - *给了全部七处选择，课程的代码也会形成强汇点*（第二行）：三个种子中有两个，第 0 层几乎把全部注意力放在 BOS 上（见表下方打印的各个种子），第三个少得多。所以模式弱从来不是注意力、RoPE 或 FFN 代码的问题。
# - *在这个设置中，七处里有两处是必需的，都在模型里*：GPT-2 的 N(0, 0.02) 初始化和单独的输出头。从七处中去掉任何一个（换成 PyTorch 的默认初始化，或者让输出头重新与嵌入绑定），3 个种子的份额都会跌回课程设置的水平，甚至更低。输出头绑定时，第 0 层在三个种子中都停在均匀注意力（0.06）。这只是在一组七处改动中逐一去掉，而且只用了一个训练方案（学习率 1e-2，权重衰减 0.1，2,500 步）。Gu 等在许多设置中都发现了汇点，只要训练足够久。所以其他途径（更长的训练、别的学习率或权重衰减）在这里是没测，而不是被排除了。
# - *只有它们还不够*：原型的模型配上课程的数据和训练（新序列、像词那样开头的第一个字符、平滑过的二元组），形成不了强汇点。即便保留这种初始化、独立输出头和原型的数据，只要把触发符换回字母 f、p、w，再把偏置加回去，也形成不了强汇点。然而在其余五处中去掉任意*一处*，强汇点仍然存在（各一个种子）。这些部件共同起作用，没有哪一处单独就是开关。
#
# 为什么偏偏是这两个模型部件？我们没有把原因分离出来。一种说得通的解读是：输出头与嵌入绑定时，BOS 的嵌入同时充当输出向量；而 BOS 永远不会是下一个词元，于是每次预测都要把它往外推。这与把它塑造成一个沉默的键相冲突。而小的初始化让每个头一开始都接近均匀、值也很小，离汇点所需的“什么也不做”很近。
#
# ### 承担负载的汇点在哪里形成？
#
# 上面的搜索找的是强*模式*。为了寻找*负载*，我们对随课程提供的每种设置的种子 0 都做了功能测试：两种构建，分别在强汇点数据、课程的 Bigram-Backcopy 和文本上（类论文模型见上文，GPT-2 风格模型见附录）。强模式几乎不承担负载；课程的设置在两种构建、两个数据集上都承担负载，GPT-2 风格的基线最多。所以我们不必再去试更长的序列或更多的层。在我们种子 0 的运行中，两种设置在值状态排空上也不同。一种读法是：BOS 的值被排空时，汇点用起来不花什么，丢了也不损失什么；BOS 的值是实在的向量时，模型学会去读它，于是离不开它。排空不可能是全部原因。在课程的设置中，带门的模型读到的 BOS 值与其他词元的差不多大，甚至更大（见排空那几列），但屏蔽 BOS 给它们带来的代价平均只有基线的一小部分，在好几个种子中几乎为零。而强汇点基线被拿走 BOS 时，第 0 层几乎全部的权重都移到了没有被排空的值上，它的损失仍然不动：网络的其余部分并不需要那一层读到的东西。按 Guo 等的说法，BOS 上的注意力和它的值被排空，会在训练中相互强化；上面实验的曲线画出了训练过程中的份额和屏蔽 BOS 的代价。
#
# ### 两种构建的差别由哪个部件决定？（课程的设置）
#
# 在课程的设置中，两种构建有三处模型上的差别（归一化、位置、门偏置），还有训练上的差别（训练方案、FFN 宽度）。为了找出是哪一处决定了某个差别，我们**一次只改一处**，只改两种构建不同的地方；先用一个种子，一个种子不够时再加。每个消融实验从一种构建出发，换上另一种构建的一个部件。“paper, gpt2's recipe and d_ff” 是完全按 GPT-2 风格模型训练的类论文模型；“gpt2 + RoPE” 是用旋转位置编码代替可学习位置的 GPT-2 风格模型，依此类推（`lm.ABLATIONS`）。标着“构建”的行是完整的构建，供参考；n 是每个均值背后的种子数。

# %% en="61aa0f4630cc"
sources = {_("build: {name}").format(name=NAMES[arch]): (runs, arch) for arch in lm.ARCHS}
sources.update({name: (ablations, name) for name in lm.ABLATIONS})
print(_("Bigram-Backcopy (triggers f, p, w)"))
print(analysis.ablation_table(sources, "bb"))
print()
print(_("Docstring text"))
print(analysis.ablation_table(sources, "text"))

# %% [markdown] en="c2e70a22b951"
# **消融实验说明了什么。**
#
# - *Bigram-Backcopy：门能否移动弱模式。*没有门时，每种构建和消融都形成差不多同样的弱模式（份额约 0.2，主要在第 0 层）。不同的是 G1 逐元素对它的作用。用可学习位置时，份额基本不动：GPT-2 风格模型，以及用可学习位置代替 RoPE 的类论文模型。用旋转位置编码时，份额降了大约一半：类论文模型、换上 RoPE 的 GPT-2 风格模型，以及按 GPT-2 风格方案和宽度训练的类论文模型。单换 RMSNorm 降幅小得多；加上门偏置，类论文模型的降幅基本不变（一个种子）。这**指向**位置编码，而不是归一化、门偏置或训练方案。但这算不上证明：这些是 1 到 3 个种子的均值，而完整的类论文模型在这里的效应本身就落在它各种子的分散之内（见附录中 3 种子的表）。
# - *文档字符串文本：基线本身。*这里两种构建在没有门时就不同：GPT-2 风格的基线在 BOS 上放了更多权重，损失也更高。给它换上 RoPE（一个种子），份额的差距就消失了，损失差距也缩小了一半以上。按 GPT-2 风格方案和宽度训练的类论文模型（一个种子），损失介于两种构建之间：损失差距的其余部分，由归一化和块的细节，以及训练方案连同更宽的 FFN 分担。
#
# 为什么位置会要紧？我们没有分离出机制。一种说得通的解读是：用可学习的绝对位置时，位置 0 有一个专属的向量，任何查询都找得到。于是空闲的头可以一直把权重停在那里，同时由门把输出关掉。一个几乎关上的头，注意力权重上几乎得不到梯度，也就没有什么会移动它们。用 RoPE 时，键是通过它相对于每个查询的偏移被看到的，位置 0 没有专属的向量来标记。
#
# ## 巨量激活，用两种方式测量
#
# 论文说门缓解了*巨量激活*（massive activations）：大模型的残差流里，有少数几个元素比其余的大好几个数量级。论文测的是最大激活的绝对值（M-Act，1053 → 94）。Sun 等 2024 则相对于隐藏状态本身来测：逐层比较最大的幅值 |h| 与幅值的**中位数**。激活超过 100、又约为中位数的 1,000 倍时，他们称之为巨量。在我们这么小的模型里，单看绝对大小说明不了多少：一个处处都大的残差流，最大值也大，里面却没有任何巨量的东西。下面逐层列出各种子上的均值，以及有多少个种子的最大激活落在 BOS 上：

# %% en="f17b60a91b23"
for prefix, dataset, name in (("sink/paper", "bb", _("paper-like, strong-sink set-up")),
                              ("paper", "bb", _("paper-like, the course's set-up, Bigram-Backcopy")),
                              ("paper", "text", _("paper-like, the course's set-up, text"))):
    print(name)
    print(analysis.massive_table(runs, prefix, dataset))
    print()
extremes = analysis.massive_extremes(runs)
print(_("over every layer of every shipped run: max/median from {low:.0f}x ({low_run}) to "
        "{high:.0f}x ({high_run}); the largest activation at BOS in {at_bos} of {layers} layers").format(
    low=extremes["lowest"][0], low_run=extremes["lowest"][1], high=extremes["highest"][0],
    high_run=extremes["highest"][1], at_bos=extremes["at_bos"], layers=extremes["layers"]))
print()
print(_("the paper's measure: the largest |h| over both layers, mean [min, max] over the seeds"))
print(analysis.largest_activations(runs, [
    (_("strong-sink, paper-like"), "sink/paper", "bb"), (_("strong-sink, GPT-2-style"), "sink/gpt2", "bb"),
    (_("course's bb, paper-like"), "paper", "bb"), (_("course's bb, GPT-2-style"), "gpt2", "bb"),
    (_("text, paper-like"), "paper", "text"), (_("text, GPT-2-style"), "gpt2", "text")]))

# %% [markdown] en="1f77dfe46af7"
# **按 Sun 等的度量，这里没有什么是巨量的。**在每种设置、构建和变体中，最大激活都只有中位数的大约十倍到一百倍（见表格下面第一行），远未达到 Sun 等所说的千倍，而且只在不到四分之一的层中落在 BOS 上。
#
# **论文的绝对度量没有阈值。**我们的最大 |h| 并不小：它能达到几百，与论文的基线（1053；见最后一张表）数量级相同。但在它达到几百的地方，中位数也很大（见最后一张表下面那一行）：那里是整个残差流都大，而不是少数几个元素。在每一行中，门都降低了最大 |h| 的均值，G1 逐头和静态标量也是如此，而静态标量并不随词元作任何选择；在大多数行中，带门的种子与基线的种子重叠（最后一列数的是三个带门变体中有几个重叠）。所以我们的运行无法检验“门能缓解巨量激活”这条论断：在这些宽度 64 的 2 层模型中，不论有没有门，巨量激活都没有形成，而绝对最大值只是随整个残差流的尺度变化。更多的层、更大的宽度或更长的训练会不会让它们形成，我们不知道。
#
# Guo 等描述过“残差状态峰值”（residual-state peak）：第一个词元的残差状态远大于其他词元的，这是玩具中巨量激活的对应物。我们在这里看的是它的一个替代指标，即单个最大激活落在哪里：大多不在 BOS 上（见前面表格的最后一列）。
#
# ## 论断 (b)：稀疏、依赖查询的门分数
#
# 论文发现 G1 的门分数大多接近零（表 4 中均值为 0.116）：每个词元只打开每个头输出的一小部分。下面是每个带门变体在验证集上的全部门分数（类论文模型，种子 0），分别在强汇点设置中和文本上：

# %% en="30bcf4699f34"
plots.gate_histograms(runs, "bb", seed=0, arch="paper", setup="sink")

# %% en="808c0fb074f1"
plots.gate_histograms(runs, "text", seed=0, arch="paper")

# %% [markdown] en="915079f41ef9"
# 依赖查询意味着：在有活要干的地方打开。在 Bigram-Backcopy 上，活在触发符处。门在触发符处比在其他地方开得大多少（3 个种子的均值，逐层）？

# %% en="b395901c5f1d"
for prefix in ("sink/paper", "sink/gpt2", "paper", "gpt2"):
    print(analysis.gate_at_triggers(runs, prefix))

# %% [markdown] en="374a02a7df4e"
# 在 Bigram-Backcopy 上，门都是稀疏的；在每种设置和构建中，至少有一层的门在触发符处比在别处开得大得多。并非每一层都如此：在课程的设置中，类论文模型第 0 层的门只开到别处的约两倍（1.9x）。这与论文一致，但任务本身就是为此构造的：90 % 以上的位置没有东西可复制。在文本上，几乎每个位置都有可以从上下文预测的东西，门一直开着（均值约 0.3）。

# %% [markdown] en="d5eeef74c534"
# ## 论断 (a)：非线性，在代码中
#
# 没有门时，一个头对输出的贡献是 `weights_h @ x @ W_V,h @ W_O,h`：一个线性映射 M_h = W_V,h W_O,h（d_model × d_model）作用于经注意力混合的输入。M_h 要经过 head_dim 个通道，所以**它的秩最多是 head_dim**。论文说的就是这个低秩线性映射，门让它变成非线性的。
#
# 我们取训练好的类论文模型（强汇点设置，种子 0）的第 0 层，把权重载入**你的** `GatedCausalSelfAttention`，用 `rope=True`（旋转位置编码在那里是现成的代码）：`lm.as_exercise_attention` 把 `linear_q/k/v` 堆叠成你的 `qkv`，再把 `linear_o` 的矩阵放进你的 `out`。这些模型的 W_O 上没有偏置，和你的一样。所以我们先检查：你的模块算出的，恰好就是语言模型算出的东西。

# %% en="8be54d45ba56"
from exercises.gated_attention import (GatedCausalSelfAttention, fold_static_gate,
                                       linear_fold_residual, value_output_map)

layer_tokens = lm.validation_tokens(bb_sink)[:64]


def trained_layer(gate):
    """Layer 0 of a trained paper-like model (strong-sink set-up, seed 0) as your module."""
    model = lm.load_checkpoint("bb", gate, seed=0, setup="sink").double()
    return analysis.trained_layer(model, layer_tokens, GatedCausalSelfAttention)


with torch.no_grad():
    for gate in ("none", "elementwise", "headwise", "static"):
        module, x, reference = trained_layer(gate)
        print(_("{variant}: your module = the LM's layer: {same}").format(
            variant=pad(analysis.label(gate), 16, ">"), same=torch.allclose(module(x), reference)))
    ranks = [torch.linalg.matrix_rank(value_output_map(module, h)).item() for h in range(4)]
print(_("rank of W_V,h W_O,h per head (head_dim = 16):"), ranks)

# %% [markdown] en="91a92e613b1f"
# **静态标量可以并入 W_O。**σ(g_h)·(y_h W_O,hᵀ) = y_h (σ(g_h) W_O,h)ᵀ：缩放 W_O 中头 h 的那些列，然后去掉门。并入之后不带门的模块算出同样的输出。

# %% en="c1e8fed13726"
with torch.no_grad():
    module, x, _reference = trained_layer("static")
    folded = fold_static_gate(module)
    print(_("static gates:"), [round(v, 2) for v in torch.sigmoid(module.gate_logit).tolist()])
    gap = (module(x) - folded(x)).abs().max().item()
    print(_("static-gated output = folded ungated output (to 1e-12):"), gap < 1e-12)

# %% [markdown] en="3e2050e03bbf"
# **依赖输入的门无法并入。**对每个头，我们拟合最好的单个矩阵 M（在 64 × 64 个词元上做最小二乘），使 `(weights_h @ x) @ M` 与这个头加到输出上的东西相符。我们报告相对残差：0 表示这个头就是一个线性映射。

# %% en="e261de1cb464"
with torch.no_grad():
    for gate in ("none", "static", "headwise", "elementwise"):
        module, x, _reference = trained_layer(gate)
        residuals = [linear_fold_residual(module, x, h) for h in range(4)]
        print(_("{variant}: relative residual of the best linear fold per head:").format(
            variant=pad(analysis.label(gate), 16, ">")), " ".join(f"{r:.2f}" for r in residuals))

# %% [markdown] en="863d7ba3642a"
# **门做不到的事：把秩提高到 head_dim 以上。**一个带门的头的输出，不论堆叠多少个词元，都是一个有 head_dim 列的矩阵。它的秩最多是 head_dim，有没有门都一样。笔记 003 声称，对 128 通道的头，门把“秩”从 127.3 提高到 156.8。这不可能：156.8 > 128。论文里也没有这样的数字。收益来自输入到输出的映射变成了非线性的（上面的残差），而不是来自超过头宽度的秩。

# %% en="f03acdd46ec6"
with torch.no_grad():
    module, x, _reference = trained_layer("elementwise")
    y, _weights = module.attend(x)
    gated = (y * module.gate_scores(x))[..., 0, :].reshape(-1, 16)
print(_("head 0: {tokens} tokens x {channels} channels, rank {rank} (at most head_dim = 16)").format(
    tokens=gated.shape[0], channels=gated.shape[1], rank=torch.linalg.matrix_rank(gated).item()))

# %% [markdown] en="08467056bbb1"
# ## 与论文逐项对照
#
# 论文的数字（表 4，15B MoE 模型，除非另行说明均为 G1 逐元素）与我们的对照：各种子上的均值，G1 逐元素（或静态标量）对基线，两种构建，强汇点设置和课程的设置；对类论文模型，还加上课程设置下实验的运行（“实验”）。类论文模型的判定在第四栏，GPT-2 风格模型的在最后一栏。每组有 3 或 4 个种子时，判定套用秩规则，并附上单侧精确 p：*是*表示每个带门种子都低于每个基线种子，*未显示*表示种子相互重叠，意思是这些种子显示不出效应，而不是没有效应。每组至少有 5 个种子时，判定在 0.05 的水平上做双侧精确检验，并给出均值之比及其自助法区间。*只看方向*表示某一边不到 3 个种子（3 种子的运行只有种子 0 做了功能测试）。对门分数，*是*表示均值低于 0.2。我们的损失按每个字符的奈特计，论文的困惑度按词元计：只比较方向，不比较数值。

# %% en="c268e006bcf2"
CASES = [(_("sink bb"), "sink/paper", "sink/gpt2", "bb"), (_("course bb"), "paper", "gpt2", "bb"),
         (_("course bb, exp."), analysis.EXPERIMENT_PREFIXES["course"], None, "bb"),
         (_("text"), "paper", "gpt2", "text")]
print(analysis.paper_comparison(runs, CASES))

# %% [markdown] en="b3fd34ecf7da"
# 论文的数字从哪里来：首词元注意力（F-Attn）、最大激活（M-Act）、门分数均值和与输入无关的门，都来自论文的表 4。困惑度也可以在论文的仓库中查到（`figs/plot_compare.ipynb`：基线 6.026，G1 5.761，G5 6.017）。0.104、且 70 % 低于 0.1，是第三方在发布的 1B 模型上测得的。上面的判定对许多行套用同一条规则，没有做多重比较校正。单独一个 p = 0.05 的“是”只能算提示；经过校正的检验，是多种子实验中的那些。
#
# ### 什么能复现，什么不能，为什么
#
# - **没有注意力汇点（论断 c）：模式。**在形成强模式的地方，G1 逐元素在两种构建、3 个种子中的每一个都降低了它，方向与论文一致：类论文模型中的倍数与论文相近，GPT-2 风格模型中小一些（见上表），但种子太少，做不了校正后的检验。我们带门后的份额低于均匀注意力，论文的则远高于均匀注意力，所以数值本身不可比。在模式弱的地方（课程的设置），3 个种子显示不出效应；实验的种子显示出来了：门大约把它减半。
# - **没有注意力汇点（论断 c）：依赖。**论文没有测这一项；StreamingLLM 说明了它为什么要紧。在我们的基线依赖 BOS 的地方（课程的设置），G1 逐元素把依赖降到基线的一小部分，对均值和大多数种子如此，但不是全部（实验的检验，种子数与它一起打印）；加宽的基线没有降低它。静态标量是否降低了它，见实验的那几行。在汇点是强模式的地方，3 种子的运行中只测过种子 0，它本来就没有依赖可以消除；实验的强汇点运行随课程提供后，会在它们自己的种子上检验。
# - **与输入无关的对照。**论文中与输入无关的门把汇点降低了一点（0.467 → 0.364）。我们的静态标量也降低了强模式的均值，但只有在 GPT-2 风格模型中，各种子才显示出这一点（见上表；未校正的 p = 0.05）。依赖词元的门按均值看走得远得多，在论文中如此，在这里也如此；实验的种子能否把它和静态标量区分开，见实验的对照表。
# - **稀疏、依赖查询的门分数（论断 b）：在 Bigram-Backcopy 上一致**，但这是任务构造使然；**在文本上不一致**，那里的门一直开着。
# - **非线性（论断 a）：成立，由代数保证**，并在代码中检查过：静态标量可以恰好并入 W_O；依赖输入的门不能。
# - **巨量激活：这里无法检验。**按 Sun 等的比值，没有形成巨量激活：最大激活一直在中位数的大约十倍到一百倍之间，从未接近一千倍。论文的绝对 M-Act 没有阈值；在这里它随整个残差流的尺度变化（中位数在几十的地方，它有几百）。每种带门变体都降低了它的均值，静态标量也不例外，但大多在种子的分散之内。
# - **损失（论断 d）：在 Bigram-Backcopy 上没有差别**，随机的二元组字符设定了一个每个变体都能达到的下限。**在文本上有门时更低**，两种构建都是，方向与论文一致；但字符级模型的幅度无法与论文的困惑度相比。
#
# “某方法能消除某样东西”这种论断，只能在那样东西存在的地方检验。在这里，这需要回答两个问题：模式在哪里形成？模型又在哪里需要它？两个问题的答案不一样。

# %% [markdown] en="0fe4c2cd0296"
# ## 自测
#
# 1. 为什么每个头一个固定的门 σ(g_h) 可以从训练好的模型中去掉而不改变输出，而论文的门不能？
# 2. 一个头在 10,000 个词元上的输出是一个 10,000 × 128 的矩阵。不论有没有门，它的秩最大是多少？
# 3. 在 Bigram-Backcopy 中，注意力在哪些位置有活要干？在其他位置，softmax 头会怎么做？带门的头又能怎么做？
# 4. 你的门是用注意力输出 y 而不是 x 算出的。为什么这不是论文的门？哪个检查用例能抓住它？
# 5. 在 Bigram-Backcopy 上，我们的验证损失几乎不随门变化。这与论文矛盾吗？
# 6. 论文的代码里没有 `gate_proj` 模块。它的门 logit 从哪里来？为什么从同一个 X 出发、不带偏置的 `gate_proj` 是同一个函数？
# 7. 在强汇点设置的种子 0 中，基线的第 0 层几乎把全部注意力放在 BOS 上，屏蔽 BOS 却几乎没有代价。在课程的设置中，份额低得多，屏蔽 BOS 却有实在的代价。这两次运行有什么不同？这能解释什么，不能解释什么？StreamingLLM 担心的是哪一种汇点？
# 8. 3 个种子对 3 个种子时，“每个带门种子都低于每个基线种子”给出的单侧 p 是 0.05。为什么 3 对 3 不可能得到更好的结果？10 对 10 时有什么变化？
#
# <details><summary>答案</summary>
#
# 1. σ(g_h) 对每个词元都是同一个数，所以 σ(g_h)·(y_h W_O,hᵀ) = y_h (σ(g_h) W_O,h)ᵀ：把 W_O 中头 h 的那些列乘以它一次，就可以去掉门。论文的门 σ(x W_θ) 随词元而变，没有哪个固定矩阵能吸收它。上面最好的线性并入留下了很大的残差。
# 2. 最多 128，也就是它的列数。门只是把元素相乘，不会增加列数。所以笔记 003 的“127.3 → 156.8”不可能。
# 3. 只在触发符之后，下一个字符复制触发符之前的那个字符。在其他位置，softmax 仍然要把权重 1 分给某处。训练好的头常把它停放在 BOS 上。带门的头可以把门关上（门分数接近 0），于是不需要汇点。触发符与别处对比的那张表显示门正是这样做的：在每种设置和构建中，至少有一层的门在触发符处比在别处开得大得多。
# 4. 论文用这一层归一化后的输入 X 算门，也就是与 q、k、v 相同的输入。由 y 算出的门取决于注意力找到了什么，而不是这个词元是什么。用例 “x (5, 8): the gate is computed from x, and sits before W_O” 能抓住它。
# 5. 不矛盾。这个任务有一个熵的下限：二元组字符是随机的，所以每个学会了二元组表和复制规则的变体都达到同样的损失。论文的损失收益来自在数万亿词元上训练的大模型，那里门额外的表达能力才有用武之地。
# 6. 来自 `q_proj` 多出的输出行，按键/值头的组排列：先是这组各头的查询，再是它们的门（只有不用分组查询注意力时，才是每个头一块）。`q_proj` 读的是归一化后的隐藏状态 X；没有 QKV 偏置时，这些行算的就是 X W_θ，恰好是 `Linear(d_model, n_gates, bias=False)` 从同一个 X 算出的东西。把它们拆出来只改变记账方式，不改变函数。
# 7. 在这两次种子 0 的运行中，它们在值状态排空上不同。在强汇点设置中，BOS 的值只有其他词元的百分之几，读 BOS 几乎什么也加不进来。在课程的设置中，BOS 的值是模型会去读的实在向量（把它置零的代价和屏蔽 BOS 差不多）。这只是一种读法，每种设置只有一个种子，而且只是两者同时出现，并没有证明因果。它也解释不了一切：带门的模型读到的 BOS 值与其他词元的差不多大，对 BOS 的依赖却远小于基线，有的几乎不依赖；强汇点基线被屏蔽 BOS 时，第 0 层的权重移到了没有被排空的值上，却什么也没损失（见“承担负载的汇点在哪里形成？”）。StreamingLLM 担心的是依赖：模型失去最前面的词元就崩溃。门的效果在这种情形下才要紧。
# 8. 精确检验数的是 6 个值的排列方式：从中选出哪 3 个是带门的，共 C(6, 3) = 20 种；“所有带门的都低于所有基线的”只是其中一种，所以单侧 p = 1/20。没有比它更极端的排列。10 对 10 时，同样的排列单侧 p = 1/C(20, 10) = 1/184,756（双侧是它的两倍），而且较弱的排列也可能通过：实验中的 G1 逐元素有几个种子不按顺序，仍然通过了。
#
# </details>
#
# ## 小结
#
# - 注意力汇点是一种模式（权重落在第一个词元上），在大模型中也是一种依赖（没有那个词元模型就崩溃：StreamingLLM）。两者都要检验。
# - 论文的门是 Y' = Y ⊙ σ(X W_θ)：逐词元地由这一层的归一化输入算出，逐头（逐元素或逐头）作用，位于 SDPA 之后、W_O 之前（G1），没有自己的偏置（在它的代码中是 `q_proj` 多出的行）。它不是每个头一个标量。
# - 每个头一个静态标量可以并入 W_O。依赖输入的门给原本线性的值-输出路径加入了真正的非线性。没有哪种门能把一个头的秩提高到它的宽度以上。
# - 在玩具规模上，G1 逐元素在 3 个种子中的每一个都降低了强汇点模式，方向与论文一致（类论文模型中的倍数与论文相近）。在模型依赖 BOS 的地方，多种子实验显示它既降低了弱模式，也降低了依赖，都通过了校正后的阈值；对均值和大多数种子如此，但不是全部。权重一样多的加宽基线保留了依赖；静态标量的结果在实验的那几行里。论文中与输入无关的门是静态标量的对应物，它只把汇点模式降低了一点。巨量激活在这里没有形成，所以那条论断仍未检验。
# - 这是最后一课。你从手算 Q、K、V 出发，一直走到一个 2025 年的结果，并在一个仿照论文搭建的模型上亲自检验了它。
# - 上一课：[第 07 课，围绕注意力的 Transformer](07_transformer.ipynb)。
#
# ## 附录：全部表格
#
# 我们测量的一切，按构建和设置列出：各种子上的均值，首词元份额另附 [最小值, 最大值]。“触发符处的门”是身为触发符的那些查询的平均门分数（下一个词元是回拷，这里正是注意力有活要干的地方）。“别处的门”是其他所有查询的平均门分数。“最大/中位数”是残差流的最大激活与其中位数之比。n 是种子数。

# %% en="8b4ecc59fa5e"
for prefix, dataset, name in (("sink/paper", "bb", _("paper-like, strong-sink set-up, Bigram-Backcopy")),
                              ("sink/gpt2", "bb", _("GPT-2-style, strong-sink set-up, Bigram-Backcopy")),
                              ("paper", "bb", _("paper-like, the course's set-up, Bigram-Backcopy")),
                              ("gpt2", "bb", _("GPT-2-style, the course's set-up, Bigram-Backcopy")),
                              ("paper", "text", _("paper-like, the course's set-up, docstring text")),
                              ("gpt2", "text", _("GPT-2-style, the course's set-up, docstring text"))):
    print(name)
    print(analysis.results_table(runs, prefix, dataset))
    print()

# %% [markdown] en="ff49ca39b3bd"
# GPT-2 风格模型种子 0 的功能测试，以及 GPT-2 风格模型的巨量激活表：

# %% en="282064c02d52"
print(analysis.functional_table(runs, [(_("strong-sink, Bigram-Backcopy"), "sink/gpt2", "bb"),
                                       (_("course's, Bigram-Backcopy"), "gpt2", "bb"),
                                       (_("course's, docstring text"), "gpt2", "text")]))
print()
for prefix, dataset, name in (("sink/gpt2", "bb", _("GPT-2-style, strong-sink set-up")),
                              ("gpt2", "bb", _("GPT-2-style, the course's set-up, Bigram-Backcopy")),
                              ("gpt2", "text", _("GPT-2-style, the course's set-up, text"))):
    print(name)
    print(analysis.massive_table(runs, prefix, dataset))
    print()
