# %% [markdown] en="5699c4a24bdf"
# # 第 03 课：多头注意力
#
# **先修要求：**第 02 课的 `scaled_dot_product_attention`（`exercises/attention.py`，以及它调用的第 01 课的函数）：你的 `MultiHeadAttention` 要为每个头调用它。
#
# **本课你将**
# - 把宽投影拆成 `N_head` 个头，再合并回来（`split_heads`、`merge_heads`），弄清 `view` 和 `transpose` 的先后为什么要紧；
# - 写出 `MultiHeadAttention`，第 05、06 课都在这个模块上扩展；
# - 用代码证明：一个联合投影等于 N 个独立的头；
# - 统计真实模块的参数：c = c_in / N_head 时，头再多也不增加开销；
# - 复制权重后，与 `torch.nn.MultiheadAttention` 的结果完全一致；
# - 看看 Q 和 K 上的偏置给分数添了哪些项，其中哪些被 softmax 抵消；
# - 画出模块的计算图，在小部件里改变头数，再让同一个模块改走 PyTorch 融合的 `scaled_dot_product_attention`。

# %% [markdown] en="449e47fce4ad"
# ## 一个头，一个问题
#
# 单头（第 02 课）只用一组权重 W_q、W_k 给每一对位置打分，也就只有一种“相关”的标准。可蛋白质或句子里同时存在许多种关系：哪些残基在空间上靠近，哪些位于同一条 β 链上，哪个词是哪个动词的主语。单个头只能把这些关系全挤进每对位置的一个分数里，学到的便是模糊的折中。
#
# **多头注意力**并排运行 N_head 个注意力。每个头在自己宽度为 c 的子空间里工作，有自己的查询、键和值，最后再把各头的结果混合起来：
#
# | 步骤 | 形状 |
# |---|---|
# | 输入 x | `(*, L, c_in)` |
# | q, k, v = linear_q(x), linear_k(x), linear_v(x)：各用**一个** Linear，c_in → N_head·c | `(*, L, N_head·c)` |
# | 拆成多个头 | `(*, N_head, L, c)` |
# | 每个头的分数 q kᵀ / √c（+ 偏置），沿键做 softmax | `(*, N_head, L, L)`：N_head 个分数矩阵 |
# | weights @ v | `(*, N_head, L, c)` |
# | 合并：把各头拼接起来 | `(*, L, N_head·c)` |
# | linear_o：N_head·c → c_in，带偏置 | `(*, L, c_in)` |
#
# 头的轴紧挨在 (L, c) 之前。第 02 课的 `scaled_dot_product_attention` 把前导轴都当作批量轴，所以不用循环，一次就能算完所有头。

# %% [markdown] en="36da9c7950a2"
# ## 练习 1：拆分与合并头
#
# `split_heads(x, N_head)` 把 `(*, L, N_head·c)` 变成 `(*, N_head, L, c)`，**头 h 分到通道块 h·c … (h+1)·c − 1**。`merge_heads` 是它的逆运算。
#
# 很容易想到一行写法 `x.view(*batch, N_head, L, c)`：形状对，内容却错了。`view` 从不搬动数据，只是按新形状重新解读同一块内存。内存里先存位置 0 的所有通道，再存位置 1 的所有通道，依此类推。按 (N_head, L, c) 解读，“头 0”就成了最前面的 L·c 个数：几个完整的位置，而不是一个通道块。正确做法是先把最后一个轴看作 (N_head, c)（这些通道在内存中相邻，`view` 做得到），再用 `transpose` 把头的轴换到 L 前面。
#
# 用一个元素等于自身下标的张量，就能看得一清二楚：L = 4 个位置，2 个头，每头宽度为 3。值为 10 的元素（下标从零数起）是位置 1 的通道 4，属于头 1。

# %% [markdown] en="89c58bb93f4a"
# 错误的版本里，“头 0”拿到的是位置 0 和 1 的全部六个通道，被切成四个各含 3 个数的假位置，位置 2 和 3 则根本看不到。正确的版本里，头 0 拿到的是全部 4 个位置的通道 0–2。
#
# 在 `exercises/mha.py` 中写出 `split_heads` 和 `merge_heads`（保留任意前导批量轴 `*`）。`merge_heads` 转置回来之后要用 `reshape`，不能用 `view`：转置之后，同一位置的各个通道在内存中已不再相邻。

# %% [markdown] en="00c1d1e5e899"
# ## 练习 2：`MultiHeadAttention`
#
# 在 `exercises/mha.py` 中，补全 `MultiHeadAttention(c_in, c, N_head, attn_dim=-2, gated=False, is_global=False, use_bias_for_embeddings=False)` 中属于第 03 课的部分：
#
# - `__init__` 中：`linear_q`、`linear_k`、`linear_v` = `nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)`，以及 `linear_o = nn.Linear(N_head * c, c_in)`（带偏置）。名字不能改：检查、第 05–06 课和下面的权重复制都要用到；
# - `_attention(x, bias, attention_mask)`：传进来的 x 已经是 `(*, L, c_in)`，注意力轴在 −2。先投影，再拆分头，然后调用你在第 02 课写的 `scaled_dot_product_attention`，传入偏置和**键**掩码 `attention_mask[..., None, None, :]`（形状 `(*, 1, 1, L)`：对每个头、每个查询都相同），最后合并头。返回 `(*, L, N_head·c)`；`linear_o` 由 `forward` 负责。
#
# `forward` 已经写好：它把 `attn_dim` 轴挪到 −2，算完再挪回去，所以同一个模块既能沿 MSA 的行、也能沿列做注意力（第 04 课）。门控和全局变体分别属于第 06 课和第 05 课，它们的代码块不要动。
#
# **新的掩码约定。**第 02 课的掩码与分数同形；从这里开始，模块为 x 的每个位置接收一个标志，再自己构造与分数同形的键掩码：
#
# | | 第 02 课：`scaled_dot_product_attention` 的 `mask` | 第 03 课起：`MultiHeadAttention` 的 `attention_mask` |
# |---|---|---|
# | 形状 | 可广播到分数 `(*, q, k)`；`padding_mask` 给出 `(B, 1, L)` | `x.shape[:-1]`，例如 `(B, L)`：每个位置一个标志 |
# | True 表示 | 查询 i 可以看到键 j | 该位置是真实的（不是填充） |
# | 能表达 | 任何模式：因果、填充，或两者兼有 | 只有填充（对每个查询都相同） |
#
# `key_mask_to_flags`（在 `exercises/mha.py` 中，已经写好）把第 02 课的填充掩码 `(B, 1, L)` 变成标志 `(B, L)`，`flags_to_key_mask` 则反过来。因果掩码没有标志形式：键 j 是否可见取决于查询，所以辅助函数会拒绝它。

# %% [markdown] en="49486c130a52"
# ## 一步一步看形状
#
# 与 `_attention` 相同的步骤，逐步写出：批量里有 2 条序列，每条 5 个词元，c_in = 16，4 个头，每头宽度为 4：

# %% [markdown] en="4d04b126990e"
# ## 一个联合投影 = N 个独立的头
#
# 纸面上，每个头有自己的 W_q^h、W_k^h、W_v^h（c_in → c）。代码里却只有一个输出为 N_head·c 的 `linear_q`。两者其实是一回事：联合权重的第 h 个行块**就是** W_q^h，而 `split_heads` 恰好把这一块的输出交给头 h。一次大矩阵乘法在一次调用里完成 N 次小矩阵乘法的工作。
#
# 验证一下：构造 N_head 个独立的单头投影，把联合权重的各个行块复制进去，在 Python 循环里逐个运行这些头，拼接后比较：

# %% [markdown] en="7c2947bdf34c"
# ## 多头会增加参数吗？
#
# 取 c_in = 256（AlphaFold 的 MSA 宽度），统计真实模块的参数：
#
# - **单头**：一个头，宽度 c = c_in；
# - **多头，宽度守恒**：8 个头，每头宽度 c = c_in / 8 = 32（N_head·c = c_in）；
# - **多头，加宽**：8 个头，每头都是全宽度 c = c_in。
#
# 每个投影都是 c_in × (N_head·c) 的矩阵，所以 N_head·c = c_in 时估计为 4·c_in²，每个头都是全宽度时为 4·N_head·c_in²；此外只多出 `linear_o` 的偏置（c_in 个数）。`n_parameters(module)`（来自 `course/measure.py`）就是常见的一行代码 `sum(p.numel() for p in module.parameters())`。

# %% [markdown] en="f3d84b054936"
# 宽度守恒时，8 个头与一个头的开销完全相同：262,400 = 4·256² + 256。多出来的头并不是额外的权重，而是把同一组权重切成 8 个独立的切片。把每个头都加宽到全宽度，参数量就乘以 N_head（2,097,408 ≈ 8 × 4·256²）。有些讲 Transformer 的笔记说“头越多参数越多，因为每个头都有自己的 W”：这只对加宽的设计成立，而几乎没人这样用。原始 Transformer（512 = 8 × 64）保持宽度守恒，AlphaFold2 的 Evoformer 和 extra-MSA 注意力也是如此；AlphaFold2 中只有两个注意力模块不守恒（模板逐点注意力，以及不变点注意力的标量部分）：

# %% [markdown] en="473514f67d3e"
# ## 与 `torch.nn.MultiheadAttention` 对齐
#
# PyTorch 的 `nn.MultiheadAttention(embed_dim, num_heads)` 做的是同样的计算，只是参数名不同。它总是保持宽度守恒（每个头有 embed_dim / num_heads 个通道），并把三个输入投影堆在一个张量里：
#
# | 我们的 | `nn.MultiheadAttention` |
# |---|---|
# | `linear_q.weight`、`linear_k.weight`、`linear_v.weight`，各为 (N_head·c, c_in) | `in_proj_weight` (3·embed_dim, embed_dim)，按 q、k、v 堆叠 |
# | 它们的偏置（只在 `use_bias_for_embeddings=True` 时存在） | `in_proj_bias` (3·embed_dim)，`bias=True` 时存在 |
# | `linear_o` | `out_proj` |
# | x 的形状为 (B, L, c) | `batch_first=True`（默认是 (L, B, c)！） |
# | `attention_mask`：True = 真实的键 | `key_padding_mask`：True = **忽略**这个键 |
#
# `bias=True`（默认值）让 q、k、v *和*输出都带偏置，所以它对应 `use_bias_for_embeddings=True` 的模块：

# %% [markdown] en="5ac34d387724"
# AlphaFold 风格的模块（`use_bias_for_embeddings=False`：q、k、v 不带偏置，输出带偏置）在 PyTorch 里找不到完全对应的设置：`bias=False` 连输出偏置也去掉了。对齐的办法有两种：保留 `bias=True`，把 `in_proj_bias` 置零；或者用 `bias=False`，把我们的 `linear_o.bias` 置零：

# %% [markdown] en="1a648450ba9b"
# ## 为什么 AlphaFold 不给 Q、K、V 加偏置
#
# 加上偏置后，查询 i 与键 j 的分数（略去对每一项作用相同的 1/√c）可以展开成四项：
#
# (W_q x_i + b_q) · (W_k x_j + b_k) = **(W_q x_i)·(W_k x_j)** + **(W_q x_i)·b_k** + **b_q·(W_k x_j)** + **b_q·b_k**
#
# | 项 | 取决于 | 沿键的轴 j |
# |---|---|---|
# | (W_q x_i)·(W_k x_j) | i 和 j | 内容上的匹配 |
# | (W_q x_i)·b_k | 只有 i | 同一行内为常数：**沿键的 softmax 把它抵消** |
# | b_q·(W_k x_j) | 只有 j | 随键而变：**保留下来**，相当于给每个键的加分，对所有查询都一样 |
# | b_q·b_k | 都不取决于 | 常数：**被抵消** |
#
# 沿键的 softmax 不理会一行内的常数：softmax(s + a) = softmax(s)。于是 b_k 完全消失；b_q 只留下一个与查询无关的先验：“某些键一般更重要”。下面用代码逐条验证这些论断：

# %% [markdown] en="d985abb1abdc"
# 值的偏置也好不到哪里去。每行权重之和为 1，所以 Σ_j w_ij (v_j + b_v) = Σ_j w_ij v_j + b_v：每个位置的输出只是平移了 b_v，经过 `linear_o` 后变成常数 W_o b_v，而 `linear_o` 自己的偏置就能吸收它。因此，带全部三个偏置的模块，只要把 W_o b_v 移进输出偏置，计算结果就与只带 b_q 的模块完全相同（唯一的例外：整行被掩盖的查询权重为零，得不到 b_v）。这只对不带门控的模块成立：AF2 的门在 `linear_o` *之前*逐通道乘到 o 上，平移 b_v 于是变成 gate ⊙ b_v，随 x 变化，不能再并成一个常数：

# %% [markdown] en="84c39619c89f"
# 所以没有门控时，3·N_head·c 个偏置数里只有 b_q 起作用；而它的作用（按键的先验），AlphaFold2 改由专门的通道提供：加到分数上的注意力**偏置**，例如第 04 课的 pair bias。（AF2 的论文没有说明 Q/K/V 为什么不带偏置；这个论证是本课程自己的。）让 Q/K/V 只做纯粹的内容投影，把先验统统放进显式的偏置，分工很清楚；许多现代语言模型（例如 LLaMA）也去掉了这些偏置。`linear_o` 保留偏置：它的输出要加回残差流，多一个可学习的平移量是有用的。也有知名模型（例如 BERT）给每个 Linear 都加了偏置，`nn.MultiheadAttention` 默认也是 `bias=True`：`use_bias_for_embeddings` 正是为此而设，让两种模型你都能搭。

# %% [markdown] en="6fac1222ec8f"
# ## 把模块画成图
#
# [torchview](https://github.com/mert-kurttutan/torchview) 追踪一次前向传播，画出其中每个模块和每个张量运算。它通过 Graphviz 的 `dot` 渲染；没有 `dot` 时，这个单元改为打印图的 DOT 源码（可以粘贴到任何 Graphviz 查看器里）。

# %% [markdown] en="cde398039711"
# 从上往下读（x 为 (2, 5, 16)，4 个头，每头宽度为 3）：`movedim` 把注意力轴放到 −2（对行注意力什么也不做）；三个 `Linear` 节点是到 12 个通道的联合投影；`view` (2, 5, 4, 3) 和 `transpose` (2, 4, 5, 3) 拆分头（键为了 kᵀ 还要多做一次 `transpose`）；`matmul` 和 `div` 得到缩放后的分数 (2, 4, 5, 5)；`amax`、`sub`、`exp`、`sum`、`div` 是你在第 01 课写的稳定 softmax；第二个 `matmul` 混合各个值；`transpose` 和 `reshape` 把头合并回 (2, 5, 12)；最后一个 `Linear` 是 `linear_o`。
#
# ## 小部件：头、参数、注意力图
#
# 选择宽度 c_in 和头数。左图：参数量随 N_head 的变化，分宽度守恒和加宽两种，并以 4·c_in² 作参照。右图：每个头在同样 8 个词元上的注意力权重（随机，固定种子，权重的抽取与你的代码无关）。留意：宽度守恒时，参数量不变，头越多，注意力图越多（每张也越窄）。

# %% [markdown] en="2c7ade7715ff"
# ## 生产路径：PyTorch 的融合注意力
#
# 你的 `_attention` 显式构造了 (*, N_head, L, L) 的分数张量：用来学习、查看权重都很合适。`torch.nn.functional.scaled_dot_product_attention` 用融合内核计算同一个函数；在 GPU 上，这些内核（FlashAttention 和内存高效注意力）从不存下整个分数张量。下面是模块的前向传播，只换掉注意力这一步，权重仍是模块自己的：

# %% [markdown] en="3f477b9124d0"
# 在这台机器上快多少？这个单元在三种尺寸下为两条路径计时（float32，单个 CPU 线程，取 5 次中最快的一次），只打印比值：绝对时间取决于你的 CPU，换成 GPU 比值又会不同。教学路径把整个 (B, N_head, L, L) 分数张量存下来，还要在上面扫好几遍（缩放、掩码、最大值、指数、求和、相除）；融合内核不必这样。在 CPU 上、这么小的尺寸下，比值取决于形状、线程数以及机器上同时运行的其他程序，不一定随 L 稳定增长：单元会打印这一次是否如此。
#
# `best_time`（来自 `course/measure.py`）先做一次不计时的预热调用（第一次调用可能要分配内存或挑选内核），再取 5 次中最快的一次：其他程序只会让时间变长，不会变短。

# %% [markdown] en="bd822382370e"
# ## 自测
#
# 1. c_in = 128、4 个头、宽度守恒：c 是多少？四个投影共有多少参数（Q/K/V 不带偏置）？
# 2. `x.view(*batch, N_head, L, c)` 给出的形状是对的。问题出在哪里？
# 3. b_q、b_k、b_v 中哪个会改变注意力权重？怎样改变？
# 4. 把我们 AlphaFold 风格模块的权重复制到 `nn.MultiheadAttention(bias=False)` 后，输出在每个位置都相差同一个向量。为什么？
# 5. 我们的 `attention_mask` 和 PyTorch 的 `key_padding_mask` 形状都是 (B, L)。怎样互相转换？
#
# <details><summary>答案</summary>
#
# 1. c = 128 / 4 = 32；4·128² + 128 = 65,664 个参数（下面的单元会打印），与宽度为 128 的单头相同。
# 2. `view` 按顺序重新解读内存，所以“头 0”会是最前面的 L·c 个数：几个完整的位置，而不是每个位置的通道 0…c−1。应当把最后一个轴拆成 (N_head, c)，再把头的轴转置到 L 前面。
# 3. 只有 b_q：它添上 b_q·(W_k x_j)，即按键的加分，对每个查询都相同。b_k 添上的项在同一行内不变，被沿键的 softmax 抵消；b_v 只让输出平移一个常数，`linear_o` 的偏置可以吸收。
# 4. `bias=False` 把 PyTorch 的输出偏置也去掉了，而我们的模块保留了 `linear_o.bias`。相差的正是这个向量。
# 5. 取反：`key_padding_mask = ~attention_mask`（PyTorch 的 True 表示“忽略这个键”）。
#
# </details>

# %% [markdown] en="f4d6f63c1b21"
# ## 小结
#
# - 多头注意力 = 到 N_head·c 个通道的联合投影，`split_heads`（把最后一个轴看作 (N_head, c)，再转置），在所有头上一次做完第 02 课的注意力，`merge_heads`，最后 `linear_o`。
# - 它恰好等于 N 个独立的头，各头的权重就是联合矩阵的行块。
# - c = c_in / N_head 时，参数量保持 4·c_in²（输出偏置再加 c_in）：多头换来的是多样性，而不是规模。只有把每个头都加宽，参数量才乘以 N_head。
# - 复制权重后，它与 `torch.nn.MultiheadAttention` 相等（`batch_first=True`，偏置设置对应，`key_padding_mask = ~attention_mask`）。
# - Q/K/V 上的偏置几乎不起作用：b_k 和 b_v 被抵消或并入别处；b_q 只留下按键的先验，AlphaFold2 改用显式的注意力偏置来提供。
# - `F.scaled_dot_product_attention` 用一次融合调用计算同一个模块（计时单元给出它在你的机器上值多少）；下一课用偏置把先验放进分数，并用 `attn_dim` 把模块转 90°。
# - 下一课：[第 04 课，偏置与广播](04_bias_broadcasting.ipynb)。
