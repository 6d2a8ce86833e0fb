# %% [markdown] en="29e14ad9b457"
# # 第 00 课：从这里开始
#
# **先修要求：**不需要本课程的任何前置内容；会一点 Python、看过 PyTorch 张量会有帮助。之后的每一课都建立在前面几课的练习之上，并在开头说明需要哪些。
#
# 本课程用 PyTorch 从零搭建注意力：手算 Q、K、V，单头、多头，注意力偏置，AlphaFold2 的全局列注意力和输出门控，最后是 2025 年的门控注意力论文：它的论断，你将在笔记本电脑的 CPU 上亲手检验。
#
# **本课你将**
# - 了解代码写在哪里，检查（check）又怎样告诉你代码对不对；
# - 看看你的机器能为课程提供什么（有没有 CUDA、有没有 Graphviz）；
# - 写出你的第一个函数，通过你的第一个检查；
# - 认识课程的术语，中英对照。

# %% [markdown] en="7673ab9ec71c"
# ## 课程如何进行
#
# | 文件夹 | 里面有什么 | 你需要编辑吗？ |
# |---|---|---|
# | `notebooks/` | 每课一个笔记本：讲解、实验、图、检查单元<!-- zh-only -->（英文版在 `notebooks/`，中文版在 `notebooks/zh/`）<!-- /zh-only --> | 运行它，随意试验 |
# | `exercises/` | 你要实现的函数和类，每个主题一个文件 | **是：你的代码写在这里** |
# | `data/` | 部分课程读取的小数据文件 | 否 |
# | `course/` | 课程的运行机制：检查、小部件、绘图 | 否 |
#
# 每个练习都是 `exercises/*.py` 里的函数，函数体只会抛出 `NotImplementedError`。把抛出它的那一行换成你的代码，保存文件，再运行本课的**检查单元**。笔记本用 *autoreload* 导入你的文件，改完代码不必重启内核。
#
# 检查在固定输入上运行你的代码（float64 和 float32、多种形状、额外的批量轴），再与参考实现比较。全部一致时，打印一行以 `PASS` 开头的结果。这一行只管这些可见用例：老师的评分程序还会用同类的隐藏输入再试一遍；提交之前，`make check HIDDEN=1` 也能让你先试一次。结果不一致时，检查照样跑完所有用例，然后告诉你：第一个出错的用例，期望和实际的形状，差异有多大，以及综合所有用例的差异得出的提示（缩放错了、float32 舍入、两个轴换了位置……）。代码抛出异常时，检查会指出*你的*代码里出错的文件和行号。
#
# 后面的练习会调用前面的练习：第 02 课的 `attention_weights` 要调用你在第 01 课写的 `scaled_scores`。如果某个练习失败，只是因为它调用的练习有错，检查会先说明这一点，显示 `BLOCKED` 而不是 `FAIL`：
#
# ```
# BLOCKED 02.attention_weights by 01.scaled_scores:
#   你的 attention_weights 调用了你的 scaled_scores，而它没有通过 01.scaled_scores：请先修好它。
#   单独看，你的 attention_weights 是对的：用参考实现的 scaled_scores 代替你的之后，……
# ```
#
# 第二行说明这个练习单独看对不对：检查会再运行它一次，用参考实现记录下的结果顶替那个没通过的练习。先修好被点名的练习。一个 bug 只算一个 `FAIL`，调用它的练习都显示为 `BLOCKED`。
#
# 你打开的笔记本已经用参考答案运行过，所以每个检查单元都显示 `PASS`。你亲自运行检查单元时，检查的才是*你的*代码。想一次检查所有练习，就在课程文件夹的终端里运行 `make check`：每个练习占一行，标明 `PASS`、`FAIL`、`BLOCKED`（附上阻塞它的检查）或 `TODO`，随后列出每个 `FAIL` 的完整信息；`make check ONLY=01.scaled_scores` 只显示一个检查的完整信息。
#
# <!-- zh-only: README.md -->（中文版的检查信息、提示和 `make check` 的表格都是中文，用例名也译成了中文（其中的形状和代码照原样）。`PASS`、`FAIL`、`BLOCKED`、`TODO` 和检查编号在两种语言里都不变，评分程序读的就是它们；同样不变的还有 PASS 一行末尾的 `(16 cases)` 和 BLOCKED 一行里的 `by`，这两行也由评分程序读取。说明比较结果的那一行也是中文，只保留标签和公式，例如 `output 形状 (1, 2) 符合预期；max |expected - got| = 0.293（容差 1e-09 + 1e-07*|expected|）`。仍是英文的只有：Python 的报错文字，以及少数几个检查的探测结果，例如 `output holds 2 NaN/inf values`。）

# %% [markdown] en="6d8786621ce0"
# ## 你的环境
#
# 课程的任何内容都不要求 GPU。能用 GPU 的单元会自动检测，没有就退回 CPU。第 03、06、07 课用 Graphviz 的 `dot` 画模型图；没装时，显示的是图的文本源码。

# %% [markdown] en="87931f2bde21"
# ## 一个通过的检查，一个失败的检查
#
# 注意力的基础只是一种运算：两个向量的点积，对许多对向量同时计算。热身练习是 `batched_dot(a, b)`：`a` 和 `b` 的形状都是 `(*, n)`，返回沿最后一个轴的点积，形状为 `(*)`。
#
# 下面是写在单元里的正确版本，以及通过它的检查：

# %% [markdown] en="8d8ff682eb9e"
# 再看一个看似合理的错误：对*所有*轴求和，而不只是最后一个轴。只有一对向量时结果恰好正确，所以第一个用例通过；第二个用例有四对向量，错误就暴露了。在你自己的检查单元里，失败显示为红色的错误框；这里把它捕获下来，只打印信息本身。

# %% [markdown] en="1a20f44ad086"
# 代码根本跑不起来时，检查会报告抛出的异常、你的代码里出错的那一行，以及针对这类错误的提示。函数还没写时，检查会直说，并指出该去哪个文件。

# %% [markdown] en="418622894be2"
# ## 你的第一个练习
#
# 打开 `exercises/warmup.py`，把 `batched_dot` 里 `raise NotImplementedError(...)` 那一行换成你的代码，保存，再运行下面的单元。这个单元导入的是**你的**函数。

# %% [markdown] en="caf6d5b1d377"
# ## 术语表 / Vocabulary
#
# 本课程的原始笔记用中文写成，许多读者已经从那里熟悉这些术语。中文版的译名一律以这张表为准。
#
# | English | 中文 | 在本课程中 |
# |---|---|---|
# | attention | 注意力 | 值的加权平均，权重来自查询与键的相似度 |
# | query / key / value (Q, K, V) | 查询 / 键 / 值 | 我要找什么 / 我作为标签提供什么 / 我交出什么 |
# | score, logit | 分数（注意力分数） | q·k / √c，softmax 之前的数值 |
# | attention weights | 注意力权重 | 分数沿键的方向做 softmax；每一行之和为 1 |
# | scaled dot-product attention | 缩放点积注意力 | softmax(QKᵀ/√c + bias)·V |
# | head, multi-head | 头，多头 | 一组 Q/K/V 子空间；多个头并排运行 |
# | channel width c | 通道数 / 每头维度 c | 一个头里每个 q、k、v 向量的长度 |
# | bias (attention bias) | 偏置（注意力偏置） | softmax 之前加到分数上的项：掩码、相对位置、pair bias |
# | mask, padding mask, causal mask | 掩码，填充掩码，因果掩码 | 某个查询不能看到哪些键 |
# | broadcasting | 广播 | 大小为 1 的轴被拉伸到匹配的大小：第 04 课的全部内容 |
# | row / column attention | 行 / 列注意力 | 沿 MSA 表格的一行或一列做注意力 |
# | MSA (multiple sequence alignment) | 多序列比对 | AlphaFold 读取的相关序列组成的表格 |
# | pair representation z | pair 表征（对表征）z | AlphaFold 为每对残基准备的特征；pair bias 的来源 |
# | global attention | 全局注意力 | 用平均后的查询和共享的键/值头：代价随序列数线性增长 |
# | gate, gating | 门，门控 | sigmoid(linear(x))，按通道乘到注意力输出上 |
# | sigmoid | S 型函数（sigmoid） | 1/(1+e^(−x))，取值在 0 与 1 之间 |
# | softmax | softmax（归一化指数） | 先取指数，再除以总和 |
# | attention sink | 注意力汇点（简称汇点） | 内容上毫无理由、却吸走大量注意力权重的词元（常常是第一个）；不要与 d2l 中的注意力汇聚（attention pooling）混淆，那是对值的加权汇总 |
# | mutation test | 变异测试 | 故意把参考实现改坏；好的检查必须察觉 |
#
# ## 小结
#
# - 你的代码写在 `exercises/` 里，由笔记本导入并检查。
# - `PASS ...` 表示你的函数在每个可见用例上都与参考实现一致；失败信息会指出用例、形状、最大差异和可能的原因；`BLOCKED` 表示它调用的练习先失败了。
# - 下一课：[第 01 课，手算 Q、K、V](01_qkv_by_hand.ipynb)。
