# %% [markdown] en="baa45d7f4633"
# # 第 08 课：门控注意力论文，在玩具规模上复现
#
# **先修要求：**第 03 课（你的多头注意力：头、`split_heads`）、第 06 课（AlphaFold2 加在注意力输出上的 sigmoid 门）和第 07 课（围绕注意力搭建的 Transformer：`RMSNorm`、旋转位置编码、`DecoderBlock`）。
#
# 2025 年，Qiu 等（“Gated Attention for Large Language Models: Non-linearity, Sparsity, and Attention-Sink-Free”，arXiv 2505.06708，Qwen 团队，NeurIPS 2025 最佳论文）训练了 15B 混合专家模型和 1.7B 稠密模型的 30 多种变体，发现有一处改动始终有帮助：把缩放点积注意力（SDPA）的输出乘以一个由词元自身算出的 sigmoid 门，每个头各算各的，放在输出投影 W_O 之前。在本课中，你先搭建这个门，然后亲自检验论文的论断，所用的模型小到可以在笔记本电脑的 CPU 上训练。
#
# **本课你将**
# - 写出论文的门（位置 G1），逐元素和逐头两种，并通过它们的检查；
# - 在代码中说明为什么门能加入非线性，而每个头一个固定的数做不到；
# - 把你第 07 课的 `DecoderBlock` 放进按论文的模型搭建的小型语言模型（RMSNorm、旋转位置编码），旁边是一个 GPT-2 风格的模型（LayerNorm、可学习位置）；
# - 找出小模型究竟在什么条件下才会形成强的**注意力汇点**（attention sink）（在课程的模型和数据与一个汇点很强的设置之间，一次只改一处）；
# - 在汇点强和汇点弱的地方分别检验论文的论断：第一个词元上的注意力、门的稀疏性、巨量激活（按其发现者的方式测量）和损失，并诚实地与论文的数字比较。

# %% en="5b7a35735b35"
import course_setup  # noqa: F401  （把课程加入路径，打开 autoreload）

import torch

# %% [markdown] en="b028de804e87"
# ## 门，以及原始笔记 003 错在哪里
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
# **论文的代码原本的样子**（仓库 `qiuzh20/gated_attention`，`modeling_qwen3.py`，一个 Qwen3 模型）：pre-norm 的 **RMSNorm**，q 和 k 上的**旋转位置编码**（RoPE），没有可学习位置。门没有自己的模块：`q_proj` 多出一些输出行，所以门的 logit 与 q、k、v 来自同样的归一化隐藏状态，在 q 自己的归一化和 RoPE 之前。这些行按键/值头的组排列（代码用 `view(bsz, q_len, num_key_value_heads, -1)` 拆分 `q_proj` 的输出）：每组的块里先是这组各头的查询，再是它们的门。只有在不用分组查询注意力时（每组一个头），才是每个头一块。SDPA 之后，输出逐头乘以 `sigmoid(gate)`，然后是 `o_proj`。**没有单独的门偏置**：只有当模型的 QKV 偏置打开时（Qwen3 的默认配置中是关的），才经由 `q_proj` 有偏置。它的 eager 注意力路径用 float32 计算 softmax。
#
# 我们的练习把门写成一个单独的、不带偏置的 `gate_proj = Linear(d_model, n_gates, bias=False)`，输入同一个 X。它与不带偏置的 `q_proj` 多出的那些行是同一个函数，只是更易读，也更容易关掉。
#
# 原始笔记 003（本课程出发点之一的笔记）把门描述为*每个头一个可学习的标量* σ(g_h)，对每个词元都一样。这是**错的**，而且区别很重要。每个头一个固定的数可以并入 W_O（下面你会亲手做），所以它既不增加非线性，也不带来依赖查询的稀疏性。原始笔记还引用了一个“rank 127.3 → 156.8”，它不在论文里，也不可能发生（同样见下文）。它的引用“Qwen Team (2024)”也是错的。
#
# 门增加了多少参数？在论文的 15B MoE 模型中（隐藏大小 2048，32 个 128 通道的查询头，24 层），所有层合计：

# %% en="72d01adc3cb0"
hidden, heads, head_dim, layers = 2048, 32, 128, 24
print(f"elementwise G1: {layers * hidden * heads * head_dim:>12,} parameters")
print(f"headwise G1:    {layers * hidden * heads:>12,} parameters")
print(f"one scalar per head (seed 003's reading): {layers * heads:,} parameters")

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

# %% [markdown] en="d89ad63a0d65"
# ## 注意力之外的模型：一个小型语言模型，两种构建
#
# 第 07 课搭建了围绕注意力搭建的 Transformer 块。语言模型把这样的块堆叠在一个嵌入和一个输出头之间，都在 `exercises/tiny_lm.py` 里（那里没有练习；从头到尾读一遍即可；它自带每个部件的一份副本，所以无论你的练习写到哪一步，随课程提供的权重文件都能运行）：
#
# - **词元嵌入**：词元 id → 一个由 d_model 个数组成的可学习向量；
# - **pre-norm 残差块**：`h = h + attention(Norm(h))`，然后 `h = h + FFN(Norm(h))`。残差流 h 把一切向前传递。每个子层读取它的一份归一化副本，再把结果加回去。门的 X 就是这份归一化副本；
# - **前馈网络（FFN）**：Linear(d_model → d_ff)、GELU、Linear(d_ff → d_model)，对每个位置分别作用；
# - **输出头**：最后一个 Norm，然后与每个词元的嵌入做点积（输出头与输入嵌入*绑定*），得到下一个词元的 logit。
#
# 两种构建的区别，正是论文的模型与 GPT-2 系列在归一化、位置和门的偏置上的区别：
#
# | | **类论文**（`arch="paper"`，默认） | **GPT-2 风格**（`arch="gpt2"`） |
# |---|---|---|
# | 归一化 | RMSNorm（第 07 课） | LayerNorm |
# | 位置 | 每一层在 q 和 k 上用 RoPE | 每个位置一个可学习向量，加到嵌入上 |
# | G1 门 | 不带偏置的 `gate_proj`（与论文的代码一样） | 带自己偏置的 `gate_proj` |
# | 块 | 第 07 课的 `DecoderBlock`，同样的名字 | 堆叠的 `qkv`、不带偏置的 `out`（你练习中的名字） |
# | FFN 宽度 d_ff | 256（4·d_model，常用值） | 128（课程的第一个小型语言模型） |
#
# 类论文构建并*不是*处处都像 Qwen3。它保留了带偏置的 GELU FFN（Qwen3：不带偏置的 SwiGLU）、W_O 上的偏置（Qwen3 没有）、没有 QK-norm（Qwen3 在 RoPE 之前用 RMSNorm 逐头归一化 q 和 k），也没有分组查询注意力和混合专家。这些差别是我们为了让小模型保持简单而选择保留的，并不是关于什么要紧的论断。
#
# 两者都是：2 层，d_model 64，4 个 16 通道的头，GELU，64 个词元的上下文，位置 0 是 BOS 词元。每种构建四个变体：基线（没有门）、G1 逐元素、G1 逐头，以及每个头一个静态标量。
#
# 另外三个开关在两种构建中都改变注意力之外的模型部件；下面对注意力汇点的搜索一次拨动其中一个：
# - `init="normal"`：每个矩阵都从 N(0, 0.02) 抽取，写入残差流的两个投影（W_O、FFN 的第二层）从 N(0, 0.02/√(2·layers)) 抽取，偏置为 0：GPT-2 的初始化（Hugging Face 的 Qwen3 配置也从 N(0, 0.02) 抽取）。默认的 `init="torch"` 是 PyTorch 自己对 `nn.Linear` 的初始化，对一个 64 宽的层来说更宽；
# - `biases=False`：W_O 和 FFN 中都没有偏置，与 Qwen3 一样；
# - `tied=False`：一个单独的输出头，而不是词元嵌入。

# %% en="13b05dd53098"
from exercises.tiny_lm import TinyLM

for arch in ("paper", "gpt2"):
    for gate in ("none", "elementwise", "headwise", "static"):
        model = TinyLM(vocab_size=28, gate=gate, arch=arch)
        print(f"{arch:>5} {gate:>12}: {sum(p.numel() for p in model.parameters()):,} parameters")
print({k: v for k, v in TinyLM(vocab_size=28).config.items() if k != "gate"})
torch.manual_seed(0)
for init in ("torch", "normal"):
    weight = TinyLM(vocab_size=28, init=init).blocks[0].attn.linear_q.weight
    print(f"init={init!r}: the std of W_Q in layer 0 is {weight.std():.3f}")

# %% [markdown] en="b50c442315f3"
# 类论文的块沿用第 07 课 `DecoderBlock` 的模块名和参数名（`norm_attn`、`attn.linear_q/k/v/o`、`norm_ffn`、`ffn`）。所以一个训练好的基线块可以严格地（strict）载入**你的** `DecoderBlock(64, 4, 256, rope=True)`，并且必须算出同样的输出。如果你还没写第 07 课，这个单元会说明这一点，课程照常继续。

# %% en="6f5c440aa000"
from course import lm_training as lm

shipped_block = lm.load_checkpoint("bb", "none", seed=0, arch="paper").blocks[0]
try:
    from exercises.transformer import DecoderBlock

    yours = DecoderBlock(64, 4, 256, rope=True)
    yours.load_state_dict(shipped_block.state_dict(), strict=True)
    h = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        gap = (yours(h) - shipped_block(h)[0]).abs().max().item()
    print(f"your DecoderBlock runs the shipped block's weights: same output {gap < 1e-4} "
          f"(max |difference| below 1e-4)")
except (ImportError, NotImplementedError, RuntimeError, AttributeError, TypeError) as error:
    print("lesson 07's DecoderBlock is not written yet (exercises/transformer.py), so this "
          f"comparison is skipped: {type(error).__name__}")

# %% [markdown] en="dbc4f49feb74"
# ## 两个数据集
#
# **Bigram-Backcopy**（二元组加回拷，仿照 Guo 等 2024，“Active-Dormant Attention Heads”）：字符 `a`–`z` 和空格沿一条二元（bigram）链依次出现（这张表由我们的文本语料统计而来，放在 `data/lesson08/` 中）。在一个触发符之后，下一个字符**复制触发符之前的那个字符**。只有在这些复制位置上，注意力才有活要干。在其他任何地方，当前字符已经说明了一切，而一个无事可做的头仍然必须把它的 softmax 权重放在某处。Guo 等表明，它学会把权重放在第一个词元上，并把那个词元的值变得很小。这就是注意力汇点。
#
# 课程的版本以字母 `f`、`p` 和 `w` 为触发符，按它们的二元组频率出现，并让每个序列像一个词那样开头（第一个字符跟在一个空格之后）。Guo 等的任务，以及课程与之对比的原型，有三处不同，都是 `lm.BigramBackcopy` 的选项：
# - `trigger="token"`：一个单独的触发词元（下面的 `#`），在任何其他字符之后以 0.1 的概率出现；
# - `first="uniform"`：第一个字符是 26 个字母中的任意一个，概率相等；
# - `smoothed=False`：用语料的原始二元组计数（从未见过的字符对仍然不可能出现），而不是随课程提供的表所做的加一平滑。
#
# **文档字符串文本**：取自 Python 标准库文档字符串的 400,000 个字符（PSF 许可证；由 `scripts/make_lesson08_data.py` 提取）。这是一小段自然文本。下面 `^` 是 BOS，`|` 标出一个 Bigram-Backcopy 序列的复制位置。

# %% en="89797d81a625"
bb, text = lm.load_dataset("bb"), lm.load_dataset("text")
bb_sink = lm.load_dataset("bb", **lm.sink_spec(lm.SETUPS["sink"])["data"])
for name, data in (("f, p, w", bb), ("trigger token", bb_sink)):
    sample = data.sample(1, torch.Generator().manual_seed(3))[0]
    copies = int(data.copy_positions(lm.validation_tokens(data)).sum())
    print(f"triggers {name}: {copies} copy positions in the validation set, "
          f"of {lm.VAL_SEQUENCES * (lm.SEQ_LEN - 1)} predictions")
    print(data.decode(sample))
    print("".join("|" if c else " " for c in data.copy_positions(sample[None])[0]))
print(f"docstring corpus: {len(text.train_ids) + len(text.val_ids):,} characters, "
      f"{text.vocab_size - 1} distinct, 90 % for training")
print(repr(text.decode(text.sample(1, torch.Generator().manual_seed(3))[0])))

# %% [markdown] en="e6714fd42a4b"
# ## 训练好的权重，或者自己训练
#
# 两种构建的每个变体都用 3 个随机种子训练，训练方案见下（AdamW、线性预热、余弦衰减、2,500 步、每步 32 个序列），分两种**设置**：课程自己的模型和数据（在 Bigram-Backcopy 和文本上），以及注意力汇点很强的设置（在 Bigram-Backcopy 上；下面会找到它）。GPT-2 风格构建沿用课程的第一个训练方案（对每个参数施加 0.01 的权重衰减）；类论文构建用常见的大语言模型方案（只对矩阵施加 0.1 的权重衰减，预热更短）和常用的 FFN 宽度 4·d_model。每次运行的测量值都放在 `data/lesson08/` 中，还有种子 0 的 float16 权重，所以这个笔记本只需加载它们。`scripts/train_lesson08.py` 在命令行中训练整套模型，带进度条，并从中断处继续。
#
# 设置 `RETRAIN = True` 可以自己重新训练主要的对比：强汇点设置下的类论文构建，四个变体。为了在 2 个核心上不超过 10 分钟，它只训练**一个种子、`lm.RETRAIN_STEPS` 步**，而不是 3 个种子、2,500 步，所以把它的数字与随课程提供的数字比较时，看方向和大小，不要逐位比较。

# %% en="787933644dd2"
for arch, recipe in lm.RECIPES.items():
    print(f"{arch:>5} recipe: {recipe}, d_ff {lm.D_FF[arch]}")
print(f"the strong-sink set-up: {', '.join(lm.SETUPS['sink'])}")
runs = lm.load_metrics()
ablations, search = lm.load_ablations(), lm.load_sink_search()
from course import lesson08_analysis as analysis

for setup, datasets in (("course", lm.DATASETS), ("sink", ("bb",))):
    for arch in lm.ARCHS:
        for dataset in datasets:
            prefix = lm.setup_prefix(arch, setup)
            print(f"{setup:>6} {arch:>5} {dataset:>4}: seeds " + "; ".join(
                f"{gate} {analysis.seeds_listed(runs, prefix, dataset, gate)}" for gate in lm.VARIANTS))
print(f"{len(runs)} shipped runs, {len(search)} runs of the sink search, "
      f"{len(ablations)} ablation runs")

# %% tags=["nbval-ignore-output"] en="d7109815b170"
minutes = sum(m["train_seconds"] for m in [*runs.values(), *ablations.values(), *search.values()]) / 60
print(f"training time of the shipped runs: {minutes:.0f} min in all (one thread each, two runs "
      "side by side on 2 cores shared with other jobs)")

# %% en="a972d37da72b"
RETRAIN = False  # True：类论文构建，强汇点设置，4 个变体，种子 0，lm.RETRAIN_STEPS 步
if RETRAIN:
    fresh = lm.retrain_main_comparison()
    print(lm.compare_runs(runs, fresh))

# %% [markdown] en="355d3b616fc0"
# ## 论断 (c)：没有注意力汇点
#
# **首词元份额**是位置 0（BOS）上的注意力权重，在层、头和位置 ≥ 1 的查询上取平均（位置 0 只能关注它自己）。如果注意力均匀分布，位置 i 的查询会给 BOS 1/(i+1)。在我们的 63 个查询位置上平均，它是：

# %% en="f2c7dcaba31a"
print(f"uniform attention: first-token share {lm.UNIFORM_SHARE:.3f}")

# %% [markdown] en="2b773cf4ae5d"
# ### 课程的设置：弱汇点
#
# 先看课程自己的模型和数据。两种构建并排：首词元份额（3 个种子的均值；以及逐层的值）和验证损失。

# %% en="ad0832ea67a8"
NAMES = {"paper": "paper-like (RMSNorm, RoPE)", "gpt2": "GPT-2-style (LayerNorm, learned pos.)"}
print("Bigram-Backcopy (triggers f, p, w), the course's set-up, mean over seeds")
print(analysis.side_by_side(runs, {arch: NAMES[arch] for arch in lm.ARCHS}, "bb"))
print()
print("Docstring text, the course's set-up, mean over seeds")
print(analysis.side_by_side(runs, {arch: NAMES[arch] for arch in lm.ARCHS}, "text"))

# %% [markdown] en="bd036fa7539c"
# 在 Bigram-Backcopy 上，基线把大约五分之一的注意力放在 BOS 上，与论文的 46.7 % 相去甚远，而 G1 逐元素只在类论文构建中降低了它，而且不是每个种子都降低（后面的表给出了种子间的分散）。这么弱的汇点，留给门可去除的东西很少。所以在检验这条论断之前，先深入一层问：**强汇点究竟是怎么形成的？**
#
# ### 强汇点在哪里形成？
#
# 同一训练方案的一个独立原型（2 层、RMSNorm、RoPE、GELU FFN、AdamW、2,500 步）在 Bigram-Backcopy 上形成了强汇点：它的第 0 层几乎把全部注意力都放在 BOS 上。它与课程的模型和数据同时在七处不同，即 `lm.SINK_FACTORS`：三处在数据（触发词元、第一个字符、原始二元组），一处在训练（一个固定的 40,000 个序列的池子，反复从中抽取，而不是每次都用新序列），三处在模型（初始化、没有偏置、不绑定的输出头）。我们把每一处都写成课程自己代码的一个选项，在类论文构建上只训练基线来搜索，用能把这些部件区分开的最少次数的运行：
#
# 1. 七处全改：课程的代码这时也会形成汇点吗？
# 2. 三个模型部件加上触发词元，数据和训练的其余部分用课程的（新序列、像词那样开头的第一个字符、平滑过的二元组）；
# 3. 留一法：七处中每次去掉一处，七种各一个种子；
# 4. 凡是判定所依据的运行，都用 3 个种子：两种设置，以及去掉后汇点就消失的那两个部件；
# 5. 仍能形成汇点的最小组合。
#
# 每一行是一组部件（x：原型的选择，.：课程的选择），给出基线的首词元份额（n 个种子的均值 [最小值, 最大值]）及其第 0 层的值。第一行是课程的设置，第二行是强汇点设置（七处全改），两者都有 3 个种子：

# %% en="37fe4dd48410"
print(analysis.search_table(analysis.search_with_setups(search, runs, lm.SETUPS), lm.SINK_FACTORS))
for seed in range(3):
    run = runs[f"sink/paper/bb/none/seed{seed}"]
    print(f"all seven, seed {seed}: share on BOS {run['first_token_share']:.3f}, layer 0 "
          f"{run['first_token_share_per_layer'][0]:.3f}")

# %% [markdown] en="da1573cfc98a"
# **搜索说明了什么。**
#
# - *给了全部七处选择，课程的代码也会形成强汇点*（第二行）：三个种子中有两个，第 0 层几乎把全部注意力放在 BOS 上（表下方打印的各个种子），第三个则少得多。所以汇点弱从来不是注意力、RoPE 或 FFN 代码的问题。
# - *七处中有两处是必需的，都在模型里*：GPT-2 的 N(0, 0.02) 初始化和一个单独的输出头。去掉任何一个（换成 PyTorch 的默认初始化，或者让输出头重新与嵌入绑定），份额就在 3 个种子中的每一个里都降到课程的水平或更低；输出头绑定时，第 0 层在三个种子中都停留在均匀注意力（0.06）。
# - *只有它们还不够*：原型的模型配上课程的数据和训练（新序列、像词那样开头的第一个字符、平滑过的二元组）不会形成强汇点；当触发符重新是字母 f、p、w 并且偏置也回来时，初始化加上不绑定的输出头和原型的数据也不会。然而在其余五个部件中去掉任何*一个*，强汇点仍然存在（各一个种子）。这些部件共同起作用；其中没有哪一个单独就是开关。
#
# 所以强汇点不只是注意力本身的性质。它要求模型能给 BOS 一个每个查询都找得到的键和一个什么也不说的值，还要求训练把它推到那里；那两个模型部件是我们离不开的。为什么是这两个？我们没有把原因分离出来。一种说得通的解读：输出头绑定时，BOS 的嵌入同时是一个从不出现在下一位的词元的输出向量，所以每一次预测都在推动它，这与把它塑造成一个沉默的键相冲突；而小的初始化让每个头一开始都接近均匀、值很小，离汇点所需的“什么也不做”很近。
#
# ### 汇点强的地方：论文的论断，3 个种子，两种构建
#
# 强汇点设置用全部七处改动（原型的数据和模型选择，放在课程的代码中）训练两种构建的每个变体：各 3 个种子。

# %% en="fa47fe38fd91"
SINK = {f"sink/{arch}": NAMES[arch] for arch in lm.ARCHS}
print("Bigram-Backcopy (trigger token), the strong-sink set-up, mean over seeds")
print(analysis.side_by_side(runs, SINK, "bb"))

# %% [markdown] en="a304caf5405a"
# 我们测量的一切，按构建和设置列出：种子上的均值，首词元份额另附 [最小值, 最大值]。“触发符处的门”是身为触发符的那些查询的平均门分数（下一个词元是回拷，所以这里正是注意力有活要干的地方），“别处的门”是其他所有查询的平均门分数；“最大/中位数”是残差流的最大激活与其中位数之比（巨量激活的度量，见下文）；n 是种子数。

# %% en="8ac5882ebf37"
for prefix, name in (("sink/paper", "paper-like, strong-sink set-up, Bigram-Backcopy"),
                     ("sink/gpt2", "GPT-2-style, strong-sink set-up, Bigram-Backcopy"),
                     ("paper", "paper-like, the course's set-up, Bigram-Backcopy"),
                     ("gpt2", "GPT-2-style, the course's set-up, Bigram-Backcopy")):
    print(name)
    print(analysis.results_table(runs, prefix, "bb"))
    print()
for prefix in lm.ARCHS:
    print(f"{NAMES[prefix]}, the course's set-up, docstring text")
    print(analysis.results_table(runs, prefix, "text"))
    print()

# %% [markdown] en="839a5319e598"
# 本课对“门去除了汇点”的规则很严格：**每个**带门的种子都低于**每个**基线种子。应用到每种构建和设置上：

# %% en="90d3ab4da4ab"
for prefix, dataset in (("sink/paper", "bb"), ("sink/gpt2", "bb"), ("paper", "bb"), ("gpt2", "bb"),
                        ("paper", "text"), ("gpt2", "text")):
    print(f"{prefix:>10} {dataset:>4}: " + "; ".join(
        f"{gate} {analysis.verdict_lower(runs, prefix, dataset, 'first_token_share', gated=gate)}"
        for gate in ("elementwise", "headwise", "static")))

# %% [markdown] en="559cb5911060"
# **汇点强的地方，论文的论断得以复现。**在类论文构建中，G1 逐元素把首词元份额从 0.471（各种子从 0.25 到 0.59）降到 0.043（0.04 到 0.05）：每个带门的种子都低于每个基线种子，约降到基线的 1/11，甚至略低于均匀注意力（0.059，在本节开头打印过）。论文在它的 15B 模型上报告 46.7 % → 4.8 %，约 10 倍；一个宽度 64 的 2 层模型显示出同样的效应，幅度也相同。汇点所在的第 0 层从 0.78 降到 0.05。逐头（每个头一个门）也通过了规则，降得少一些（0.121），GPT-2 风格构建中的 G1 也通过了（0.492 → 0.146 和 0.196）。门的做法正如本课对 Bigram-Backcopy 的论证所说：在没有东西可复制的地方几乎全关，在触发符处打开（“触发符处的门”和“别处的门”两列；逐层的值见论断 (b) 一节）。一个能把自己关掉的头，不需要把注意力停放在 BOS 上。
#
# 静态标量是对照组。它可以并入 W_O，所以它算不出基线算不出的任何东西，但它改变了训练（它缩放每个头的输出以及那个头的梯度），汇点平均来说变弱了：类论文构建中为 0.177，有一个种子（0.27）高于最低的基线种子，所以按本课的规则不算；GPT-2 风格构建中为 0.375，按规则算，但只降到 1/1.3。依赖输入的门效果强了一个数量级，而且每个种子都如此。
#
# 在课程的设置这个对照情形中，同样的门、同样的代码把一个弱汇点（0.211）移到 0.115，各种子相互重叠：本来就没有多少汇点可去除。
#
# 小部件分别显示每一层。选择一组运行、一种构建和一个种子。

# %% tags=["nbval-ignore-output"] en="2ecceeab137f"
from course.widgets.lesson08 import sink_explorer

sink_explorer(runs)

# %% [markdown] en="9cc3f0cf95c7"
# 逐头来看：每个方格是种子 0 的一个（层，头），Bigram-Backcopy，两种构建，强汇点设置。

# %% en="f6c58a9705d9"
from course.widgets import lesson08 as plots

plots.per_head_heatmaps(runs, "bb", seed=0, arch="paper", setup="sink")

# %% en="a42310a80e17"
plots.per_head_heatmaps(runs, "bb", seed=0, arch="gpt2", setup="sink")

# %% [markdown] en="011635053e71"
# 再看一个头在一个验证序列上做了什么（类论文构建，强汇点设置，第 0 层，前 24 个位置）：每个变体中把最多权重放在 BOS 上的那个头。

# %% en="d30c551d9e42"
tokens = lm.validation_tokens(bb_sink)[:1, :24]
maps = {}
for gate in ("none", "elementwise"):
    model = lm.load_checkpoint("bb", gate, seed=0, setup="sink")
    with torch.no_grad():
        _, record = model(tokens, details=True)
    shares = record["weights"][0][0, :, 1:, 0].mean(dim=-1)
    head = int(shares.argmax())  # 在 BOS 上权重最多的头
    maps[gate] = record["weights"][0][0, head]
    print(f"{gate:>12}: layer 0, head {head}, share on BOS {shares[head]:.2f}")
plots.attention_maps(maps, "paper-like build, strong-sink set-up, layer 0, head with the largest BOS share")

# %% [markdown] en="8a9571ec2cb4"
# **汇点由什么构成。**Guo 等把汇点描述为同时发生的两件事：各个头的注意力落在 BOS 上，*而且* BOS 的值向量很小（“值状态排空”，value-state drain），所以它们在那里读到的东西几乎不贡献什么。下面是第 0 层每个头中 BOS 的值的大小，相对于其他词元的平均值（1 = 和任何词元的一样大），两种设置的基线：

# %% en="32834c019a2c"
for setup, data in (("sink", bb_sink), ("course", bb)):
    model = lm.load_checkpoint("bb", "none", seed=0, setup=setup)
    ratios = analysis.value_at_bos(model, lm.validation_tokens(data)[:64])
    print(f"{setup:>6} set-up, paper-like baseline, layer 0: |value at BOS| / |value elsewhere| "
          "per head: " + " ".join(f"{r:.2f}" for r in ratios))

# %% [markdown] en="4eb773d3ce3b"
# 在强汇点设置中，第 0 层 BOS 的值只有其他词元的百分之几：看向 BOS 的头几乎什么也读不到，所以把注意力停放在那里等于什么也不做，而第 0 层几乎把全部注意力都停放在那里。在课程的设置中，BOS 的值和任何词元的差不多大：把注意力停放在 BOS 上会把某些东西复制到每个位置，所以头没有可以空闲停靠的地方，基线于是把注意力分散开。这就是弱汇点和强汇点之间的区别，测量出来了。
#
# 一个门关着的头，不论它的注意力权重是什么，几乎什么也传不出去。所以对带门的模型，BOS 上的份额只说明了一半。每层的每个头：BOS 上的份额，旁边是那个头的平均门分数（G1 逐元素，强汇点设置，种子 0，两种构建）。

# %% en="5e53137f98d1"
for arch in lm.ARCHS:
    model = lm.load_checkpoint("bb", "elementwise", seed=0, arch=arch, setup="sink")
    with torch.no_grad():
        _, record = model(lm.validation_tokens(bb_sink)[:64], details=True)
    for layer in range(2):
        bos_share = record["weights"][layer][:, :, 1:, 0].mean(dim=(0, 2))
        gate_mean = record["gate_scores"][layer][:, 1:].mean(dim=(0, 1, 3))
        print(f"{arch:>5} layer {layer}: " + "  ".join(
            f"head {h}: BOS {bos_share[h]:.2f}, gate {gate_mean[h]:.2f}" for h in range(4)))

# %% [markdown] en="173c9298ac12"
# ## 巨量激活，按其发现者的方式测量
#
# 论文说门缓解了*巨量激活*（massive activations）：在大模型中，残差流里有少数几个元素比其余的大好几个数量级。Sun 等 2024（“Massive Activations in Large Language Models”）相对于隐藏状态本身来测量它们：逐层比较最大的幅值 |h| 与幅值的**中位数**，当激活约为中位数的 1,000 倍（且绝对值在 100 以上）时称之为巨量。单看绝对大小说明不了多少：一个处处都大的残差流，最大值也大，里面却没有任何巨量的东西。逐层、种子上的均值，以及有多少个种子的最大激活在 BOS 上：

# %% en="9f4545037638"
for prefix, dataset, name in (("sink/paper", "bb", "paper-like, strong-sink set-up"),
                              ("sink/gpt2", "bb", "GPT-2-style, strong-sink set-up"),
                              ("paper", "bb", "paper-like, the course's set-up, Bigram-Backcopy"),
                              ("gpt2", "bb", "GPT-2-style, the course's set-up, Bigram-Backcopy"),
                              ("paper", "text", "paper-like, the course's set-up, text"),
                              ("gpt2", "text", "GPT-2-style, the course's set-up, text")):
    print(name)
    print(analysis.massive_table(runs, prefix, dataset))
    print()
extremes = analysis.massive_extremes(runs)
print("over every layer of every shipped run: max/median from {:.0f}x ({}) to {:.0f}x ({}); "
      "the largest activation at BOS in {} of {} layers".format(
          *extremes["lowest"], *extremes["highest"], extremes["at_bos"], extremes["layers"]))

# %% [markdown] en="8936320c27ac"
# **这里没有什么是巨量的。**在每种设置、构建和变体中，最大激活都在中位数的大约十倍到大约一百倍之间（见表格下面那一行），远未达到 Sun 等称之为巨量激活的千倍，而且只在不到四分之一的层中落在 BOS 上。在最大 |h| 达到几百的地方，中位数也很大：那里是整个残差流都大，而不是其中少数几个元素。一个绝对阈值（比如“低于 1,000，所以没有巨量激活”）分不清这些情形；比值能分清。所以我们的运行无法检验论文关于门能缓解巨量激活的论断：在这些宽度 64 的 2 层模型中，不论有没有门，巨量激活都没有形成，我们也不知道更多的层、更大的宽度或更长的训练会不会让它们形成。G1 的各行也不是稳定地更低（见下面与论文对比的表）。
#
# ## 论断 (b)：稀疏、依赖查询的门分数
#
# 论文发现 G1 的门分数大多接近零：每个词元只打开每个头输出的一小部分。下面是每个带门变体在验证集上的全部门分数（类论文构建，种子 0），分别在强汇点设置中和文本上：

# %% en="30bcf4699f34"
plots.gate_histograms(runs, "bb", seed=0, arch="paper", setup="sink")

# %% en="808c0fb074f1"
plots.gate_histograms(runs, "text", seed=0, arch="paper")

# %% [markdown] en="915079f41ef9"
# 依赖查询意味着：在有活要干的地方打开。在 Bigram-Backcopy 上，活在触发符处。门在触发符处比在其他地方开得大多少（3 个种子的均值，逐层）？

# %% en="b395901c5f1d"
for prefix in ("sink/paper", "sink/gpt2", "paper", "gpt2"):
    print(analysis.gate_at_triggers(runs, prefix))

# %% [markdown] en="d5eeef74c534"
# ## 论断 (a)：非线性，在代码中
#
# 没有门时，一个头对输出的贡献是 `weights_h @ x @ W_V,h @ W_O,h`：一个线性映射 M_h = W_V,h W_O,h（d_model × d_model）作用于经注意力混合的输入。M_h 要经过 head_dim 个通道，所以**它的秩最多是 head_dim**。论文把这称为门使之变成非线性的那个低秩线性映射。
#
# 我们取训练好的类论文模型（强汇点设置，种子 0）的第 0 层，把它的权重载入**你的** `GatedCausalSelfAttention`，用 `rope=True`（旋转位置编码在那里是现成的代码）：`lm.as_exercise_attention` 把 `linear_q/k/v` 堆叠成你的 `qkv`，并把 `linear_o` 的矩阵放进你的 `out`。这些模型的 W_O 上没有偏置，和你的一样，所以我们先检查你的模块算出的恰好是语言模型算出的东西。

# %% en="244ede502656"
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
        print(f"{gate:>12}: your module = the LM's layer: {torch.allclose(module(x), reference)}")
    ranks = [torch.linalg.matrix_rank(value_output_map(module, h)).item() for h in range(4)]
print("rank of W_V,h W_O,h per head (head_dim = 16):", ranks)

# %% [markdown] en="91a92e613b1f"
# **静态标量可以并入 W_O。**σ(g_h)·(y_h W_O,hᵀ) = y_h (σ(g_h) W_O,h)ᵀ：缩放 W_O 中头 h 的那些列，然后去掉门。并入之后不带门的模块算出同样的输出。

# %% en="3c03f0366521"
with torch.no_grad():
    module, x, _ = trained_layer("static")
    folded = fold_static_gate(module)
    print("static gates:", [round(v, 2) for v in torch.sigmoid(module.gate_logit).tolist()])
    gap = (module(x) - folded(x)).abs().max().item()
    print("static-gated output = folded ungated output (to 1e-12):", gap < 1e-12)

# %% [markdown] en="3e2050e03bbf"
# **依赖输入的门无法并入。**对每个头，我们拟合最好的单个矩阵 M（在 64 × 64 个词元上做最小二乘），使 `(weights_h @ x) @ M` 与这个头加到输出上的东西相符。我们报告相对残差：0 表示这个头就是一个线性映射。

# %% en="997763f84136"
with torch.no_grad():
    for gate in ("none", "static", "headwise", "elementwise"):
        module, x, _ = trained_layer(gate)
        residuals = [linear_fold_residual(module, x, h) for h in range(4)]
        print(f"{gate:>12}: relative residual of the best linear fold per head:",
              " ".join(f"{r:.2f}" for r in residuals))

# %% [markdown] en="863d7ba3642a"
# **门做不到的事：把秩提高到 head_dim 以上。**一个带门的头的输出，不论堆叠多少个词元，都是一个有 head_dim 列的矩阵。它的秩最多是 head_dim，有没有门都一样。原始笔记 003 声称，对 128 通道的头，门把“秩”从 127.3 提高到 156.8。这不可能：156.8 > 128。论文里也没有这样的数字。收益来自输入到输出的映射变成了非线性的（上面的残差），而不是来自超过头宽度的秩。

# %% en="8735dc7f335b"
with torch.no_grad():
    module, x, _ = trained_layer("elementwise")
    y, _ = module.attend(x)
    gated = (y * module.gate_scores(x))[..., 0, :].reshape(-1, 16)
print(f"head 0: {gated.shape[0]} tokens x {gated.shape[1]} channels, rank "
      f"{torch.linalg.matrix_rank(gated).item()} (at most head_dim = 16)")

# %% [markdown] en="5a46792789bb"
# ## 是哪个部件让两种构建产生差异？（课程的设置）
#
# 在课程的设置中，两种构建在模型的三个部件（归一化、位置、门的偏置）和训练（训练方案、FFN 宽度）上都不同。为了找出是哪一个决定了某个差异，我们**一次只改一处**，只在两种构建不同的地方改，先用一个种子，一个种子不够的地方再加。每个消融实验从一种构建出发，换上另一种构建的一个部件：“paper, gpt2's recipe and d_ff”是按 GPT-2 风格构建的方式训练的类论文模型；“gpt2 + RoPE”是用旋转位置编码代替可学习位置的 GPT-2 风格构建；依此类推（`lm.ABLATIONS`）。标为“build”的行是完整的构建，供参照；n 是每个均值背后的种子数。

# %% en="e0a06e05d06d"
sources = {f"build: {NAMES[arch]}": (runs, arch) for arch in lm.ARCHS}
sources.update({name: (ablations, name) for name in lm.ABLATIONS})
print("Bigram-Backcopy (triggers f, p, w)")
print(analysis.ablation_table(sources, "bb"))
print()
print("Docstring text")
print(analysis.ablation_table(sources, "text"))

# %% [markdown] en="edd69f63fd4c"
# **消融实验说明了什么。**
#
# - *Bigram-Backcopy：门是否移动了弱汇点。*没有门时，每种构建和消融都形成差不多同样的弱汇点（份额约 0.2，主要在第 0 层）。不同的是 G1 逐元素对它做了什么。用可学习位置时，它停在原处：GPT-2 风格构建，以及用可学习位置代替 RoPE 的类论文构建。用旋转位置编码时，它降了大约一半：类论文构建、换上 RoPE 的 GPT-2 风格构建，以及用 GPT-2 风格训练方案和宽度训练的类论文构建。在 GPT-2 风格构建中只换上 RMSNorm，降幅小得多；加上门偏置，类论文构建的降幅基本不变（一个种子）。所以在这个设置中，**决定它的是位置编码**：是 RoPE，而不是归一化、门偏置或训练方案。这个任务上种子间的分散很大，所以要把 n = 3 那些行的均值与上面表中完整构建各种子的分散相比较，而不是比较单个种子。
# - *文档字符串文本：基线本身。*这里两种构建在没有门时就已经不同：GPT-2 风格的基线在 BOS 上放了更多权重，损失也更高。给它换上 RoPE（一个种子），汇点的差距就消失了，损失差距也减少了一半以上。用 GPT-2 风格训练方案和宽度训练的类论文模型（一个种子）的损失介于两种构建之间：损失差距的其余部分由归一化和块的细节，以及训练方案连同更宽的 FFN 分担。
#
# 为什么位置会要紧？我们没有分离出机制。一种说得通的解读：用可学习的绝对位置时，位置 0 有一个专属于它的向量，任何查询都找得到，所以一个空闲的头可以一直把权重停放在那里，同时由它的门把它的输出关掉（一个几乎关上的头，在注意力权重上几乎得不到梯度，所以没有什么会移动它们）。用 RoPE 时，键是通过它相对于每个查询的偏移被看到的，位置 0 没有专属于它的向量来标记。

# %% [markdown] en="01fb07d309d4"
# ## 论断 (d) 及其余：与论文并排
#
# 论文的数字（除非另有说明，都来自它的 15B MoE 运行），旁边是我们的：3 个种子的均值，G1 逐元素对比基线，两种构建，分别在强汇点设置和课程的设置中。“能复现吗？”一栏把本课的规则应用于类论文构建（按论文的模型搭建的那一种），最后一栏把同样的规则应用于 GPT-2 风格构建：当每个带门的种子都低于每个基线种子时为*是*（再给出低多少，按均值计），当只有均值在论文的方向上时为*否（在种子噪声之内）*；它需要每边各 3 个种子，少于 3 个时只说*仅方向*。对门分数，*是*表示均值低于 0.2。我们的困惑度是按字符计的，论文的按词元计：比较方向，不要比较数值。

# %% en="27503c3e1c90"
CASES = [("sink bb", "sink/paper", "sink/gpt2", "bb"), ("course bb", "paper", "gpt2", "bb"),
         ("text", "paper", "gpt2", "text")]
print(analysis.paper_comparison(runs, CASES))

# %% [markdown] en="a2a822de3e82"
# 论文的数字从哪里来：困惑度来自论文的仓库（`figs/plot_compare.ipynb`：基线 6.026，G1 5.761，G5 6.017）；首词元注意力 46.7 % → 4.8 % 来自论文的注意力汇点分析（引自课程的论断核查，那里把它标为“需在论文中核实”）；约 0.116 的门分数均值来自二手总结，0.104 且 70 % 低于 0.1 是第三方在发布的 1B 模型上测得的；“缓解巨量激活”来自论文在 OpenReview 上的摘要（我们没有为它引用任何数字）。
#
# ### 什么能复现，什么不能，为什么
#
# - **没有注意力汇点（论断 c）：在形成汇点的地方能复现。**在强汇点设置中，G1 逐元素在两种构建和每个种子中都降低了首词元份额，在类论文构建中降幅与论文报告的差不多。在课程的设置中，基线的汇点很弱，效应在种子噪声之内。一种方法去除了某样东西，这个说法只能在那样东西存在的地方检验；找出它在哪里形成，占了大部分工作。
# - **稀疏、依赖查询的门分数（论断 b）：在 Bigram-Backcopy 上能复现**，两种设置和两种构建都是（G1 逐元素：平均门分数只有百分之几，90 % 以上的分数低于 0.1，在触发符处比在其他地方开得大得多），**在文本上不能**：那里几乎每个位置都有可以从上下文预测的东西，门一直开着（均值约 0.3）。
# - **非线性（论断 a）：成立，由代数保证**，并在代码中检查过：静态标量可以恰好并入 W_O；依赖输入的门不能。
# - **巨量激活：这里无法检验。**这些模型中没有形成巨量激活（只有中位数的几十倍，而不是 Sun 等称为巨量的千倍），不论有没有门。
# - **损失（论断 d）：在 Bigram-Backcopy 上没有差别**，它随机的二元组字符设定了一个每个变体都能达到的下限；**在文本上有门时更低**（按本课的规则，两种构建都是），与论文的方向一致，但一个字符级模型的幅度无法与论文的困惑度相比。
#
# 为什么会形成强汇点，只得到了部分回答：在课程的代码中，两个模型选择是必需的（GPT-2 的 N(0, 0.02) 初始化、一个单独的输出头），但并不充分（原型的数据和训练部件要一起起作用）；我们没有分离出机制。这里的一切都是 2 层、宽度 64、2,500 步和 3 个种子：它表明论文的效应在玩具规模上存在，以及在什么条件下存在，而不是它在真实模型中有多大。

# %% [markdown] en="bf0d86a49185"
# ## 自测
#
# 1. 为什么每个头一个固定的门 σ(g_h) 可以从训练好的模型中去掉而不改变它的输出，而论文的门不行？
# 2. 一个头在 10,000 个词元上的输出是一个 10,000 × 128 的矩阵。不论有没有门，它的秩最大能是多少？
# 3. 在 Bigram-Backcopy 中，注意力在哪些位置上有活要干？在其他位置上，一个 softmax 头做什么，而一个带门的头可以改做什么？
# 4. 你的门是从注意力输出 y 而不是从 x 计算的。为什么这不是论文的门，哪个检查用例能发现它？
# 5. 我们在 Bigram-Backcopy 上的验证损失几乎不随门变化。这与论文矛盾吗？
# 6. 论文的代码里没有 `gate_proj` 模块。它的门 logit 从哪里来，为什么从同一个 X 出发、不带偏置的 `gate_proj` 是同一个函数？
# 7. 类论文基线的两次运行，注意力代码相同，分别把 0.21 和 0.47 的注意力放在 BOS 上。汇点搜索发现哪两个模型选择是强汇点所必需的？为什么在第一次运行上检验“门去除了汇点”说明不了多少？
#
# <details><summary>答案</summary>
#
# 1. σ(g_h) 对每个词元都是同一个数，所以 σ(g_h)·(y_h W_O,hᵀ) = y_h (σ(g_h) W_O,h)ᵀ：把 W_O 中头 h 的那些列乘以它一次，然后去掉门。论文的门 σ(x W_θ) 随词元变化，所以没有哪个固定的矩阵能吸收它。在上面，最好的线性折叠留下了很大的残差。
# 2. 最多 128，即它的列数。门只是对元素做乘法，不会增加列。所以原始笔记 003 的“127.3 → 156.8”是不可能的。
# 3. 只在紧跟触发符的位置，那里的下一个字符复制触发符之前的那个字符。在其他任何地方，softmax 仍然必须把权重 1 分给某样东西。训练好的头把它停放在 BOS 上，而 BOS 的值很小：这就是汇点。带门的头可以改为关上它的门（门分数接近 0），所以它不需要汇点。触发符对比其他地方的表显示门正是这样做的：在触发符处比在其他地方开得大得多。
# 4. 论文从这一层归一化后的输入 X 计算门，也就是与 q、k、v 相同的输入。从 y 算出的门取决于注意力找到了什么，而不是这个词元是什么。用例“x (5, 8): the gate is computed from x, and sits before W_O”能发现它。
# 5. 不矛盾。这个任务有一个熵的下限：二元组字符是随机的，所以每个学会了那张表和复制规则的变体都达到同样的损失。论文的损失收益来自在数万亿词元上训练的大模型，在那里门额外的表达能力有施展的余地。
# 6. 来自 `q_proj` 多出的输出行，按键/值头的组排列：先是这组各头的查询，再是它们的门（只有不用分组查询注意力时，才是每个头一块）。`q_proj` 读取归一化后的隐藏状态 X，并且没有偏置（QKV 偏置关闭，与 Qwen3 一样），所以那些行计算的是 X W_θ，正是 `Linear(d_model, n_gates, bias=False)` 从同一个 X 算出的东西。把它们拆出来改变的是记账方式，而不是函数。
# 7. GPT-2 的 N(0, 0.02) 初始化和一个单独的输出头（不与嵌入绑定）：缺了任何一个，份额在 3 个种子中的每一个里都降到课程的水平或更低，尽管没有原型的数据和训练部件，它们两个也都不够。在第一次运行上，基线几乎没有汇点可去除，它的种子分散得和门的效应一样大，所以不论门做了什么，判定都是“在种子噪声之内”。在汇点强的地方，同样的门把它降到约十分之一，每个种子都如此。
#
# </details>
#
# ## 小结
#
# - 论文的门是 Y' = Y ⊙ σ(X W_θ)：逐词元，来自这一层归一化后的输入；逐头（逐元素或逐头）；在 SDPA 之后、W_O 之前（G1）；没有自己的偏置（在它的代码中：`q_proj` 多出的行）。它不是每个头一个标量。
# - 每个头一个静态标量可以并入 W_O。依赖输入的门给原本线性的值-输出通路加入了真正的非线性。没有哪种门能把一个头的秩提高到它的宽度以上。
# - 在小模型中，强的注意力汇点并不是理所当然的：在课程的代码中，它只在用了 GPT-2 的小初始化和一个不绑定的输出头、再加上原型的数据和训练时才形成。在它形成的地方（首词元份额 0.471，第 0 层 0.78），G1 逐元素在每个种子中都把它降到 0.043，与论文报告的一样（46.7 % → 4.8 %）；在它很弱的地方（0.211），门的效应在种子噪声之内。
# - 这是最后一课。你从手算 Q、K、V 走到了一个 2025 年的结果，并在一个像论文那样搭建的模型上亲自检查了它。
# - 上一课：[第 07 课，围绕注意力搭建的 Transformer](07_transformer.ipynb)。
