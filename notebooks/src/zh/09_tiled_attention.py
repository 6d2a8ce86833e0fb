# %% [markdown] en="aba0dca7125a"
# # 第 09 课：从不保存分数矩阵的注意力
#
# **先修要求：**本课调用的练习是第 01 课的 `stable_softmax` 和 `scaled_scores`（`exercises/softmax.py`：逐块计算时每一块都要调用 `scaled_scores`），以及第 02 课的 `scaled_dot_product_attention` 和 `causal_mask`（`exercises/attention.py`：逐块实现的结果必须与它相等）。第 03–08 课是背景阅读，本课的代码不依赖它们：第 04 课的 pair bias 和第 05 课的内存测量，会在用到的地方重新交代。
#
# 第 05 课撞上了一堵墙：注意力要给每一对查询和键打一个分，分数张量随序列长度的平方增长，到了 AlphaFold 的 MSA 深度，没有哪张显卡放得下。本课程依据的笔记给出两条出路。**路线一**：注意力照算，只是切成块来算，并用**在线** softmax（Milakov 和 Gimelshein 2018，arXiv 1805.02867），让 L × L 的矩阵从不完整写出。这样内存从 O(L²) 降到 O(L)，计算量仍是 O(L²)（Rabe 和 Staats 2021，《Self-attention does not need O(n²) memory》，arXiv 2112.05682；FlashAttention，Dao 等 2022，arXiv 2205.14135；FlashAttention-2，Dao 2023，arXiv 2307.08691）。**路线二**：改变注意力的数学形式，例如滑动窗口、稀疏注意力或线性注意力；第 05 课的全局注意力就是早期的一例。这一课由你亲手实现路线一。
#
# **本课你将**
# - 写出在线 softmax：按块维护累计最大值和累计和，靠重新缩放恒等式保持精确；
# - 写出逐块注意力的前向传播：返回输出和每个查询的 logsumexp，掩码和加性偏置（pair bias）逐块施加；无论输入是什么 dtype，累计最大值、累计和与输出累加器都用 float32；
# - 写出靠重新计算的反向传播：一个只保存输出和 logsumexp 的 `torch.autograd.Function`（FlashAttention-2 的算法 2，外加偏置的梯度）；
# - 写出因果注意力，对角线以上的块一个都不算，并清点算了多少个分数；
# - 算一算 FLOPs 和显存读写量，弄清为什么重新计算比保存更划算；
# - 测量内存随 L 的变化（由形状预测，再由 profiler 证实），也测量时间：朴素注意力的分数一旦装不进 CPU 缓存，耗时就会跳升；
# - 比较用 float32 累加器的 bfloat16 逐块实现与 float64 的结果；
# - 估算 AlphaFold 带 pair bias 的行注意力在 24/40/80 GB 显卡上能处理多长的蛋白质，并看看 OpenFold 的低内存注意力换了一种切法；
# - 把两条路线结合成滑动窗口，跳过带状区域以外的块，再认识生产环境中的工具：FlexAttention 和 SDPA 的各个后端。

# %% [markdown] en="0a879b325f40"
# ## 1. 墙，以及它从哪里来
#
# 本课程遇到过的三个分数张量，均按 float32 计算（GB = 10⁹ 字节）：第 05 课的列注意力，S = 5,120 条序列（R = 300 列，8 个头）；同样深度下 AlphaFold 带 pair bias 的行注意力（5,120 条序列各自给自己的 300 个残基两两打分，8 个头）；以及一个 2,000 残基的蛋白质在 S = 512 时的行注意力。

# %% [markdown] en="1e28c9ebbcf0"
# softmax 看起来需要一次拿到一整行分数：既要最大值（为了数值稳定，见第 01 课），又要和（为了归一化）。训练看起来还要再用一次：softmax 的反向传播要用到权重。这两个前提其实都不成立，下面几节逐一破除。
#
# ## 2. 在线 softmax：累计最大值与累计和
#
# softmax(x)ᵢ = exp(xᵢ − m) / l，其中 m = maxⱼ xⱼ，l = Σⱼ exp(xⱼ − m)。每次只读 x 的一块，维护两个数：m 是目前见过的最大元素，l 是目前见过的元素的 exp(xⱼ − m) 之和。新的一块把最大值从 m 抬到 m′ 时，l 里已有的每一项都是相对旧的 m 算的。**重新缩放恒等式**
#
# exp(xⱼ − m′) = exp(xⱼ − m) · exp(m − m′)
#
# 告诉我们怎样一次把它们全部改好：l 乘以 exp(m − m′)，再加上新块自己的 exp(xⱼ − m′)。读完最后一块，m 和 l 恰好是整行的最大值与和，再走一遍就能写出 exp(xᵢ − m) / l。这就是 Milakov 和 Gimelshein（2018）的在线归一化。以 [1, 3, 2, 6] 为例，每块 2 个元素，手算如下：

# %% [markdown] en="8fca32b2c032"
# 第一块给出 m = 3，l = e⁻² + e⁰ = 1.1353。第二块把最大值抬到 6：旧的和缩小为原来的 e⁻³（原先各项“以 3 为基准”，现在改为以 6 为基准），再加上这一块的 e⁻⁴ + e⁰。第一块除了每行两个数，什么都不用留。
#
# 被掩盖的元素是 −inf。一行读到的全是 −inf 时，累计最大值也是 −inf，而 exp(−inf − (−inf)) 是 NaN：这时改为减去 0（每一项都是 exp(−inf) = 0，本来就该如此）。另外，m 要从 −inf 开始，而不是从 0 开始：假如一行的元素都远小于 0（比如 −1000），m 从 0 起步就永远不会被它们抬高，一直停在 0，exp(x − 0) 会下溢为 0。
#
# ## 练习 1：`online_softmax`
#
# 在 `exercises/tiled.py` 中写出 `online_softmax(x, block_size)`：沿 x 的最后一轴计算 softmax，按每块 `block_size` 个元素维护累计最大值和累计和（最后一块可以更短），再对各块走第二遍。x 可以有任意多个前导轴，也可以含有 −inf，只要每行至少有一个有限值。累计最大值和累计和用 `accumulator_dtype(x.dtype)`（已给出：输入为 bfloat16 和 float16 时是 float32，为 float32 和 float64 时就是输入自己的 dtype），放在 x 所在的设备上（`torch.full_like(..., dtype=...)`、`torch.zeros_like`），结果则以 x 的 dtype 返回：检查会用 float32、bfloat16 的输入运行你的代码，也会在 PyTorch 的 `meta` 设备上运行。辅助函数 `key_blocks(n, block)`（已给出）列出各个切片。

# %% [markdown] en="19eb48bd5f89"
# 下面用第 01 课那些跨度很大的行（元素在 ±1000 之间，直接取 exp 会上溢）与你的 `stable_softmax` 对照，分别用 float64 和 float32，每块 2 个元素：

# %% [markdown] en="bf728ef6d9f6"
# ## 3. 逐块实现：前向传播
#
# 注意力对所有查询行同时套用这个办法。把查询切成每块 `block_q` 行，把键（和值）切成每块 `block_k` 个：每一对（查询块，键块）就是分数矩阵的一块（tile），共 (block_q, block_k) 个数。对每个查询块，依次走过各个键块，为每个查询维护：
#
# - m 和 l，与在线 softmax 相同；
# - 输出累加器 acc = Σⱼ exp(sᵢⱼ − m) vⱼ，对目前见过的键求和。
#
# 一块的分数 s 由你第 01 课的 `scaled_scores(q_tile, k_tile)` 算出，加上这一块的偏置，掩码为 False 处置为 −inf。对这一块：
#
# m′ = max(m, rowmax(s)),  p = exp(s − m′),  l ← l · exp(m − m′) + rowsum(p),  acc ← acc · exp(m − m′) + p v_tile
#
# l 和 acc 都是“相对 m”的和，所以 m 一旦升高，两者都要重新缩放。走完最后一个键块后，out = acc / l，**lse = m + log l**，即这个查询的分数的 logsumexp：softmax 分母的对数，每个查询一个数，反向传播要用到它。这就是 FlashAttention-2 的算法 1：查询块在外层循环，键块在内层循环，除以 l 推迟到最后。
#
# **看不到任何键的查询**，是指加上偏置、施加掩码之后分数全为 −inf 的查询：要么掩码挡住了所有键，要么偏置在那一整行都是 −inf。这样的查询 l 一直是 0：令 out = 0、lse = log 0 = −inf。掩码挡住所有键时，第 02 课的规则同样给出全零；两者不一致的地方在于整行偏置为 −inf 的情形（第 02 课对这一行做 softmax 会得到 NaN）。FlashAttention-2 的内核对这种行取 lse = +inf，这样反向传播中的 exp(s − lse) 自然为 0，无须特殊处理；本课保留 −inf，改为减去 0。
#
# **精度。** 逐块实现可以接受 bfloat16 输入，GPU 上的注意力就是这样运行的。但 bfloat16 只有 8 位尾数，用它对很多块求和，误差会越积越大。FlashAttention 的内核把 m、l 和 acc 放在 float32 中（即 `accumulator_dtype`），每块 q、k、v 先转成 float32，只有输出最后转回 q 的 dtype；lse 保留 float32。本课也这样做。
#
# 偏置或掩码只要能与分数 (*, q, k) 广播，也切成同样的块，例如第 04 课的 pair bias (H, R, R)（对应行注意力的分数 (S, H, R, R)）或填充掩码 (B, 1, k)。已给出的辅助函数 `tile(t, rows, cols)` 以视图形式返回 t 的 (rows, cols) 块；大小为 1 的查询轴或键轴整段保留，广播照样成立。整个过程不会创建任何 q × k 大小的张量。
#
# ## 练习 2：`tiled_attention_forward`
#
# 在 `exercises/tiled.py` 中写出 `tiled_attention_forward(q, k, v, bias=None, mask=None, block_q=64, block_k=64)`：q 为 (*, q, c)，k 为 (*, k, c)，v 为 (*, k, c_v)，前导轴可以广播；返回 `(out, lse)`：out 为 (*, q, c_v)，dtype 与 q 相同，等于第 02 课的注意力；lse 为 (*, q)，dtype 为 `accumulator_dtype(q.dtype)`。每一块都调用你第 01 课的 `scaled_scores`。q 和 k 的长度可以不同，也都不必是块大小的整数倍。每个查询块的结果写进同一个输出张量中对应的那些行（用第一块结果的 `new_empty` 创建这个张量，dtype 和设备都会保持一致）。检查还会用 profiler 测量你的前向传播：占用的内存必须不到一个 q × k 分数张量的一半。

# %% [markdown] en="709d22bfa012"
# 在 float64 下，把你的逐块结果与你第 02 课的注意力对照。例子是带第 04 课 pair bias 的行注意力：MSA 有 3 条序列、4 个头、R = 50 个残基（50 既不是 16 的倍数，也不是 12 的倍数）；偏置 (4, 50, 50) 由各序列共享；填充掩码把最后 5 个残基设为填充，并让序列 0 的查询 0 看不到任何键。

# %% [markdown] en="6692ea62ba6d"
# 下面的小部件逐块走过一个 24 × 24 的分数矩阵。左图是目前已访问的块（暗色的块还没轮到，红框是正在处理的块；整个矩阵只是为了画图才画出来）。右图是某一查询行每处理完一个块后的累计最大值和累计和：最大值每跳升一次，和就随之缩小，然后再增长；处理完最后一块，两者恰好等于整行的最大值与和（虚线）。滑块的范围正好是这次要访问的块数，会随块大小和滑动窗口变化。

# %% [markdown] en="11884c3b4e3c"
# ## 4. 反向传播：靠重新计算
#
# PyTorch 的 autograd 可以直接对你写的逐块前向传播求导，但为此要保留所有中间结果：每一块的 p，合起来就是整个权重矩阵。省下的内存到了训练时又回来了。FlashAttention 的做法是手写反向传播，由 q、k 和保存下来的 lse **重新计算**每一块的权重：P = exp(s − lse)，正好是 softmax 的权重，一次算一块。
#
# 记 dO 为损失对输出的梯度（autograd 交给 `backward` 的就是它）。对 O = P V、P = softmax(S)、S = Q Kᵀ / √c + bias，梯度如下（FlashAttention-2 的算法 2，并像 DeepSpeed 的 Evoformer 内核那样加上偏置的梯度；FlashAttention-2 本身没有偏置）：
#
# - dV = Pᵀ dO，dP = dO Vᵀ；
# - dS = P ∘ (dP − D)，其中 **D = rowsum(dO ∘ O)**，每个查询一个数。（softmax 的雅可比矩阵给出 dSᵢⱼ = Pᵢⱼ (dPᵢⱼ − Σₖ Pᵢₖ dPᵢₖ)，而 Σₖ Pᵢₖ dPᵢₖ = Σₖ Pᵢₖ (dOᵢ · vₖ) = dOᵢ · Oᵢ：由 O 和 dO 算一次就够了，用不着 P 的任何一行）；
# - dQ = dS K / √c，dK = dSᵀ Q / √c，dbias = dS 沿偏置被广播的那些轴求和（由 S 条序列共享的 pair bias，梯度就是各序列之和）。
#
# 每一项都是对各块求和：外层循环走键块，内层循环走查询块，重新计算这一块的 P，再把这一块的贡献加到 dV、dK（属于这个键块）和 dQ、dbias（属于这个查询块）上。整个过程不会创建比偏置本身更大的张量：dbias 按偏置自己的大小逐块累加，所以由 S 条序列共享的 pair bias，梯度只有分数的 1/S。（如果按分数的大小构造 dbias，autograd 会把它加回偏置的形状，每个值都对，但反向传播就要占用一整个分数张量：检查会在偏置沿前导轴共享时测量峰值。）与前向传播一样，用 `accumulator_dtype(q.dtype)` 给出的 dtype 累加，每个梯度再以对应输入的 dtype 返回。
#
# ## 练习 3：`TiledAttention`
#
# 在 `exercises/tiled.py` 中写出 `TiledAttention(torch.autograd.Function)` 的两个静态方法：
#
# - `forward(ctx, q, k, v, bias, mask, block_q, block_k)`：用你的 `tiled_attention_forward` 算出 out 和 lse；保存 q、k、v、bias、mask、out 和 lse（`ctx.save_for_backward` 接受缺省偏置或掩码的 None），块大小存在 ctx 上；返回 out；
# - `backward(ctx, grad_out)`：依次返回 q、k、v 和 bias 的梯度，各与对应输入同形（`sum_to_size` 可以撤销广播），然后 mask、block_q 和 block_k 各返回 None。看不到任何键的查询 lse = −inf：这时减去 0，它的权重以及经过这些权重的梯度就都是 0。
#
# `tiled_attention(q, k, v, bias, mask, block_q, block_k)`（已给出）调用 `TiledAttention.apply`。检查会把你的梯度与参考实现对照，运行 `torch.autograd.gradcheck`，并测量前向传播为反向传播保留了多少内存，以及反向传播本身的峰值。

# %% [markdown] en="01e9ad5ac77c"
# 在 float64 下，把你的梯度与 autograd 对你第 02 课注意力求得的梯度对照，用的是同一个行注意力（pair bias、填充、看不到任何键的查询），再在一个小例子上运行 `gradcheck`：

# %% [markdown] en="3936942e82e5"
# ## 5. 因果注意力：对角线以上的块一个都不算
#
# 在解码器中，查询 i 只能看到键 j ≤ i。给你的逐块注意力加上因果掩码，结果是对的，但仍要把对角线以上的每一块都算一遍，再用掩码抹掉：白做了一半的工作。FlashAttention-2 直接跳过这些块：块为正方形时，第 b 个查询块只需要第 0 … b 个键块，之后的都不需要，而且只有对角线上的第 b 块要用掩码。
#
# ## 练习 4：`causal_tiled_attention`
#
# 在 `exercises/tiled.py` 中写出 `causal_tiled_attention(q, k, v, block=64)`：对每个查询块 `rows`（来自 `key_blocks(L, block)`），对截至 `rows.stop` 的键和值调用你的 `tiled_attention`（不能再多：再往后的块都在对角线以上），块大小为 `block`，掩码为这一段上的“键 j ≤ 查询 i”，用整个序列的**全局**下标：i 从 `rows.start` 到 `rows.stop`，j 从 0 到 `rows.stop`（两者都用 `device=q.device` 创建）。这个掩码在对角线左边的每一块都是 True，只在对角线上的块里有 False。最后把各块的输出拼接起来。反向传播由你的 `TiledAttention` 给出。检查会在你的函数运行时清点算了多少个分数：至多 L²/2 + L·block 个。

# %% [markdown] en="d76b34dd6486"
# 与第 02 课带因果掩码的注意力对照，在 float64 下比较前向和反向传播，并在你的代码运行时清点算了多少个分数（`course/lessons/lesson09/costs.py` 统计两类运算：每一次沿 c（q 和 k 的通道维）求和的矩阵乘法，以及每一次对一块分数取的 exp）。L = 512，块大小 64：

# %% [markdown] en="aae82047e145"
# L 是块大小的整数倍时，对角线及其下方的块共有 L²/2 + L·block/2 个分数：对角线上的块整块计算，其中一半被掩码抹掉。为了反向传播，你的逐块实现会保留每个查询块那一段掩码（布尔值，所有头和序列共用）；FlashAttention-2 则在内核中由下标现场算出对角块的掩码，什么都不保留（第 12 节的 FlexAttention 用 `mask_mod` 做的也是同一件事）。
#
# ## 6. 算一笔账：为什么重新计算比保存更划算
#
# FlashAttention-2 这样统计注意力的 FLOPs：前向传播每个头 4 · L² · d（q kᵀ 和 P v 两次矩阵乘法，各 L² · d 次乘加，每次乘加算 2 个 FLOPs），有因果掩码时减半；反向传播是前向的 2.5 倍：5 次矩阵乘法（再算一遍分数，以及 dV、dP、dQ、dK），而前向只有 2 次（§4.1）。如果反向传播读回保存的 P，则只需 4 次。因此一步训练，逐块实现要 3.5 次前向传播的计算量，朴素实现要 3 次：多出来的只是一次 q kᵀ。
#
# 多算的这一次，省下的是显存读写。在 GPU 上，分数存放在高带宽显存（HBM，即显卡的 DRAM）里，块则放在片上 SRAM 中。标准实现（FlashAttention 的算法 0）要写出 S，读回 S 再写出 P，再读回 P 与 V 相乘：每个头大约有 4 · L² 个数经过 HBM，另加 Q、K、V 和 O 的 4 · L · d 个。FlashAttention（它的算法 1，键块在外层循环）对每个含 B_c = ⌈M / 4d⌉ 个键的键块，把 Q 和 O 在芯片上过一遍，M 是以数计的 SRAM 大小：经过 HBM 的数共 Θ(L² d² / M) 个（定理 2）。用论文的话说，d 为 64–128、M 约为 100 KB 时，经过 HBM 的数要少得多（“many times fewer”）。（FlashAttention-2 的循环次序，也就是你的前向传播所用的次序，查询块在外层，改为对每个查询块把 K 和 V 过一遍：读写量同阶。）下面的单元对一个头、L = 4,096、d = 64、M = 100 KB（存 bfloat16）算出这两个量，再按 A100 比较“为反向传播保存 P”和“重新计算 P”的代价：HBM 取 1.5 TB/s（FlashAttention §2.1 所给 1.5–2.0 TB/s 的下限），bfloat16 矩阵乘法取 312 TFLOP/s（FlashAttention-2 所说“225 TFLOPs/s，72 % 模型 FLOPs 利用率”背后的峰值）。

# %% [markdown] en="335a2a8602a1"
# 把 L² 个数写出去再读回来，代价是在张量核心上多算一次 q kᵀ 的好几倍：即使不算省下的内存，重新计算也更划算。在 CPU 上，同样的取舍发生在缓存（相当于 SRAM）与内存（相当于 HBM）之间：第 8 节会测量它。
#
# ## 7. 像第 05 课那样测量内存
#
# 对形状为 (R, H, L, c) 的 q、k、v，有四种算法：R = 8 个相互独立的切片（比如说列），H = 4 个头，L 个查询和键，c = 16，float32。`naive` 一次保存所有切片的 L × L 分数；`chunked` 是第 05 课的分块（chunking），一次处理 4 个切片；`tiled` 是你的逐块注意力（tiling），在一个切片内部把 L × L 的分数切成 128 × 128 的块；`sdpa` 是 `torch.nn.functional.scaled_dot_product_attention`。对每一种，分别测推理（在 `no_grad` 下只做前向传播）和训练（前向传播，再反向传播）：
#
# - **预测**：只凭形状，在 `meta` 设备上运行，把每一时刻存活的张量的字节数加起来（`course/lessons/lesson09/memory.py`，建立在第 05 课的追踪器之上；训练时它也看得到 autograd 为反向传播保存的张量）；
# - **实测**：在 CPU 上用 profiler 的内存分配事件测量，L = 256。
#
# “峰值”是调用过程中在输入之外占用的最大字节数；“保留”是前向传播结束后为反向传播留下的（以及输出本身）。

# %% [markdown] en="016930dba18a"
# 对 naive、chunked 和 tiled，由形状预测的字节数就是 CPU 实际分配的字节数，推理和训练都是如此。SDPA 与第 05 课一样，运行的是 PyTorch 在 CPU 上的融合内核：逐块计算，占用的内存远小于 `meta` 上未融合的预测（具体分配多少取决于机器，其中包括线程数）；训练时也只保留输出和一个 logsumexp。再看增长：L 翻倍时，各自的峰值以及训练时保留的字节增长多少倍（用的是预测值，所以在每台机器上都一样）。naive 和 chunked 约为 4，即分数的 L²。tiled 的峰值增长不到 2，因为块的大小是固定的，随 L 增长的只有输出和 logsumexp；而它训练时保留的正是这两样，恰好翻倍。

# %% [markdown] en="5219d0a9dcc2"
# 朴素注意力在两种模式下都按 L² 增长，分块处理只是把它除以一个常数（只存 4 个切片的分数，而不是 8 个）。训练时分块处理什么也没省下：autograd 保留了每一段的权重，“保留”一栏与朴素实现完全相同。你的逐块注意力按线性增长：训练时保留的只是输出和每个查询的一个数。
#
# ### 再看第 05 课的墙
#
# 第 05 课预测过列注意力（R = 300 列，8 个头，c = 8，float32）在 24/40/80 GB 显卡上何时耗尽内存。换成你的逐块实现再预测一次：naive 和 chunked 的需求是 S 的二次函数（第 05 课已精确求解），逐块实现的需求在一行跨过三个块之后是线性的（所以在 `meta` 上于 S = 384 和 512 各预测一次，就得到这条直线）。训练时，每层要为反向传播保留它的权重：naive 和 chunked 保留 (R, H, S, S) 个，逐块实现只保留输出和 logsumexp。

# %% [markdown] en="0b41f6424f5e"
# 逐块实现把第 05 课的墙从一两千条序列推到了 24 GB 显卡上的几万条、80 GB 显卡上的几十万条：剩下的只有输入、输出和几块，其中只有块的大小固定，不随 S 线性增长。按列分块也能在推理时放下 S = 5,120（第 05 课）；逐块实现能放下的序列数则是它的好几倍（上面打印了倍数），而且训练时同样如此，因为反向传播靠重新计算，而不是靠保留。
#
# ## 8. 时间：CPU 缓存扮演 GPU 的 SRAM
#
# 内存降下来了，时间呢？你的逐块实现做的是朴素注意力的运算，再多一点（重新缩放，以及训练时多一次 q kᵀ）；而且每一块都是十几个由 Python 调用的独立 PyTorch 操作，每个操作都有固定开销。另一方面，朴素注意力要把 (B, H, L, L) 的分数写进内存，为 softmax 读回来，写出权重，再为乘以 v 读一遍。一旦这些张量装不进 CPU 的缓存，每一遍都要到内存里去，就像 GPU 上每一遍都要经过 HBM；而一块分数能留在缓存里。哪个效应占上风，取决于 L、块大小和机器。先在本机上测一个大小，每种取 3 次中最快的一次，只用一个线程（与下面的扫描相同：机器上还有别的任务时，多个线程在每个小操作上都要互相等待，而逐块实现恰好由许多小操作组成）：

# %% [markdown] en="a8cdc5e536fe"
# 只测一个大小说明不了什么。下面的扫描在 (B, H, L, c) = (2, 4, L, 64) 上，让 L 从 256 到 2,048，把朴素注意力与块大小 16 到 512 的逐块实现逐一计时，每个点都取多次中最快的一次。整个扫描要几分钟，超出了本课的时间预算，所以这里显示的是随课程记录的那张表（`scripts/bench_lesson09.py --record-sweep`），连同测量它的机器；设置 `RECORD_SWEEP = True`，就能在本机上重测。表下面的几行是由表算出来的：无论在哪台机器上测，它们说的都是这张表显示的结果。

# %% [markdown] en="85575f34fc0d"
# 这张表就是 FlashAttention 论点的缩影。块太小会吃亏：不论块多大，每块都要付同样十几次操作调用的开销，块大小为 16 时，付这笔开销的次数是块大小为 256 时的 256 倍。朴素注意力的分数张量一旦超出缓存，每个分数的耗时就跳升；分数装得进缓存的块，则基本保持自己的每分数耗时。GPU 上 FlashAttention 的块大小也由同样的取舍决定：B_c = ⌈M / 4d⌉，让块装进 SRAM（FlashAttention 的算法 1），FlashAttention-2 的内核取 64 或 128。融合内核快在哪里？恰恰在于纯 PyTorch 写的逐块实现做不到的一点：它把一块从分数到输出都留在寄存器或片上内存里，没有操作调用，也没有 Python 循环。所以 SDPA 比你的逐块实现快，快多少上面已经打印出来；在 GPU 上，FlashAttention 尽管在反向传播中重新计算，仍然比朴素注意力快（FlashAttention §4.3：序列长度在 2K 以内时最多快 3 倍）。
#
# ## 9. 精度：用 float32 累加器的 bfloat16 逐块实现
#
# 在 GPU 上，注意力以 bfloat16 或 float16 运行，内核中用 float32 累加。本课的例子：形状为 (1, 4, 1024, 64) 的 q、k、v 先以 float64 生成，再舍入为 bfloat16，块大小 64。每个结果都与未舍入输入的 float64 注意力比较：你的逐块实现（float32 累加器）；同样的逐块实现循环，全部在 bfloat16 中计算（`course/lessons/lesson09/precision.py`）；bfloat16 下的朴素注意力和 SDPA；以及两个参照值：舍入后输入的精确注意力，以及把它再舍入为 bfloat16 的结果（误差只来自输入的舍入和输出的舍入）。

# %% [markdown] en="f58197a57a20"
# 用 float32 累加器，你的逐块实现就落在这个参照值上：剩下的几乎只有输入的舍入和输出自身的舍入。它不是严格的下限（它是许多元素误差中的最大值，别的 bfloat16 计算可能略高于它，也可能略低于它）。在 bfloat16 中累加的逐块实现，一路上要多损失好几倍，16 个键块每一块都损失一点。
#
# ## 10. AlphaFold 带 pair bias 的行注意力，S = 5,120
#
# 在 AlphaFold2 的 MSA 堆栈中，行注意力让每条序列的残基彼此关注，并加上来自 z 的 pair bias（第 04 课），形状 (H, R, R)，由全部 S 条序列共享：q、k、v 为 (S, H, R, c)，分数为 (S, H, R, R)。在 extra MSA 最深的设置 S = 5,120 下（AlphaFold2 的默认值是 1,024；5,120 只用于它发布的部分模型，见第 05 课），8 个头、c = 8：对一层的注意力核心（含输入），一张显卡能放下多长的蛋白质（R 个残基）？朴素实现的需求是 R 的二次函数（预测三次）。逐块实现的需求有一个线性部分，即块大小 64 时预测的峰值（预测两次），还有一个精确已知的二次部分：输入，其中 (H, R, R) 的 pair bias 是 R 的二次函数，但与 S 无关。

# %% [markdown] en="c31476ff8e60"
# R = 300 时，朴素行注意力推理一层约需 31 GB（两个 14.7 GB 的分数张量会短暂同时存在，第 05 课讲过原因）：24 GB 显卡放不下，40 GB 和 80 GB 放得下。训练时，在这一层反向传播期间，要保留 14.7 GB 的权重（AlphaFold2 和 OpenFold 在堆栈中每个块的反向传播里重新计算这个块的激活，所以各层的权重不会同时堆积）。换成逐块实现，同一层只保留不到 0.5 GB，*这一层注意力核心*能放下的最长蛋白质从几百个残基增加到几千个。但模型不只是这个核心：单是 pair 表征 z (R, R, 128) 用 float32 存放，到了这样的长度就超出了显卡（最后一列），而作用于它的三角运算是 O(R³) 的：pair 堆栈是 AlphaFold 的下一堵墙，OpenFold 的分块处理（chunking）和显存卸载就用在那里。
#
# 上面逐块实现的数字只属于本课这份实现：每一块的每个 PyTorch 操作都同时作用于全部 S · H 个切片，所以一个块张量就有上面打印的那么大，而且同时存活的不止一个。融合内核把块留在 SRAM 和寄存器里，按线程块分别处理，需要的大约只是输入、输出和 lse。两者都要做两次 S · H · R² · c 次乘加。
#
# ### OpenFold 的低内存注意力
#
# OpenFold 是 AlphaFold2 的开源重新实现，对这一层，它在 PyTorch 的标准写法之外还有四种选择：
#
# - **它自己的 CUDA softmax**（`use_memory_efficient_kernel`，即 `openfold/utils/kernel/` 中的 `attention_core`）：算出整个分数张量，再原地做 softmax，所以只存一个分数张量而不是两个，并有反向传播；它省掉的是一份拷贝，而不是平方级的内存。
# - **DeepSpeed 的 Evoformer 内核**（`DS4Sci_EvoformerAttention`，配合 `use_deepspeed_evo_attention` 使用）：一个融合的 CUDA 内核，接受掩码偏置和 pair bias，并返回 pair bias 的梯度，训练和推理都能用，做的正是你的 `TiledAttention` 所做的事，只不过是用 CUDA 写的。
# - **FlashAttention**（`use_flash`）：接受掩码，不接受 pair bias。
# - **`_lma`**，在 `openfold/model/primitives.py` 中（“低内存注意力”，仿照 Rabe 和 Staats 2021），设置 `use_lma` 时使用，OpenFold 的文档把它列为推理设置。
#
# OpenFold 无法从软件包索引安装（那里名为 `openfold` 的包构建不了，`openfold3` 则是 AlphaFold 3 的后继，依赖很多）。因此课程仓库里有一个测试（`test_lesson09_openfold.py`，不在发给学生的材料里），依据 aqlaboratory/openfold 的提交 ce0029e（日期为 2025-09-15）重新写出了 `_lma` 的算法及其外围的行注意力：查询先除以 √c，MSA 掩码作为加性偏置 10⁹ (mask − 1)，pair bias 为 LayerNorm(z) → Linear(c_z, H)，另有门控和输出投影。权重复制过去之后，在 float64 下，你的逐块行注意力与它相差不到 1e-12，第 06 课的模块也一样。它的切法与 FlashAttention 有以下不同：
#
# - **先拆分，再合并。** 对每一段查询，`_lma` 算出每一段键的最大值、指数和以及加权后的值，*全部保留下来*，最后才相对其中最大的那个最大值一次合并。FlashAttention 则把每一块立即并入累计的 (m, l, acc)，每一块什么都不留。
# - **按内存而不是按芯片确定段的大小。** 默认是 1,024 个查询 × 4,096 个键。R = 300 时一段就装下整行，所以行注意力实际上不分段；只有在长轴上才起作用，比如 S = 5,120 时 extra MSA 的列。FlashAttention 的块（64–128）是按 GPU 的片上内存确定的。
# - **没有自己的反向传播。** `_lma` 由可求导的 PyTorch 操作写成，所以训练时 autograd 会保留每一段的指数：合起来就是整个分数矩阵（测试测量了这一点）。而且 `_lma` 只在合并各段时对每段的最大值做了 detach，在段内的指数里却没有，因此只要键分成不止一段，autograd 给出的 q、k 梯度就不是注意力真正的梯度。Rabe 和 Staats 自己的代码在取指数*之前*就 detach 最大值，并对每一段使用激活检查点：只改这一处，先拆分再合并也能精确求导（测试展示了这两点）。你的 `TiledAttention` 只保留输出和 logsumexp，并有自己的反向传播。
# - **掩码作为偏置。** 填充的键加上 −10⁹；如果某个查询的键*全部*是填充，它的每个分数都平移了同样的量，结果就像什么都没有被掩盖一样关注所有键。而按第 02 课的规则，或者用你的逐块实现配合布尔掩码，这个查询得到的都是全零。
#
# ## 11. 与路线二结合：滑动窗口
#
# 路线二改的是模型：查询 i 只看到满足 |i − j| ≤ w 的键。写成掩码，就是沿对角线的一条带；你的逐块注意力配上这个掩码能精确算出结果，但仍要访问每一块，而其中大多数块与这条带毫无交集。`sliding_window_attention`（已在 `exercises/tiled.py` 中给出，它调用你的 `tiled_attention_forward`）对每个查询块只读 `band_keys` 给出的键：与它的某个查询相距不超过 w 的键，两端都扩展到块网格上的整块（FlashAttention-2 对两端也这样取整），并且只用那一段的带状掩码。L = 512，窗口 16，块大小 64；带状结果与第 02 课的注意力对照，后者所用的带状掩码在这里直接写出，分数则在计算时清点：

# %% [markdown] en="69481db37655"
# 两条路线可以结合：窗口把工作量从 L² 个分数减到带内的块；事先建好完整的掩码之后，两种做法在峰值时占用的都只是差不多那几块（内存本来就是线性的）：跳过块省的是计算和时间，不是内存。路线二的代价由模型而不是计算机来付：信息每经过一层最多传出 w 个位置，相距很远的位置之间要靠很多层才能互相关注（或者靠少数几个全局词元，如 Longformer 和 BigBird；第 05 课的全局注意力就是这样一种汇总）。
#
# ## 12. 生产环境中的做法：FlexAttention 与 SDPA 的后端
#
# 你手写的这些，正是 PyTorch 的 **FlexAttention**（`torch.nn.attention.flex_attention`）会为你生成的。你给它一个 `score_mod(score, b, h, q_idx, kv_idx)`，这里是“加上 pair bias bias[h, q_idx, kv_idx]”；再给它一个由 `mask_mod(b, h, q_idx, kv_idx)` 构造的 `BlockMask`，这里是因果或滑动窗口。`BlockMask` 记下哪些块含有可见的键（其余的块跳过），其中又有哪些块需要在内部施加掩码，就像你在因果练习和滑动窗口中手工做的那样。`torch.compile` 把这些变成融合内核，在 GPU 上还带反向传播。
#
# 在 CPU 上、torch 2.13 中，不经 `torch.compile` 的 FlexAttention 运行的是一个未融合的参考实现，会构造整个分数矩阵，而且第一次调用就要导入并运行 TorchDynamo（数秒）；编译后的 CPU 内核构建起来比整节课还要久（下面最后一行给出了实际用时）；而且它在 CPU 上没有反向传播。所以下面的对比是随课程记录的（`scripts/record_flex09.py`，课程的逐块实现对编译后的 FlexAttention，3 次计时取最快，峰值取自 profiler）；设置 `FLEX_LIVE = True`，就能在这里用你的逐块实现重做（要编译：需要几分钟）。

# %% [markdown] en="08a2e1cea10b"
# 在每种设置下，数值都只相差 float32 的舍入误差（max |flex - tiles| 这一列）。FlexAttention 的 BlockMask 跳过的块，正是你的因果练习和滑动窗口跳过的那些；时间和峰值的差别，是融合内核与 Python 循环调用 PyTorch 操作之间的差别。
#
# **SDPA 的后端。** `torch.nn.functional.scaled_dot_product_attention` 会在几个内核中挑选；`torch.nn.attention.sdpa_kernel([...])` 指定它可以用哪些，若其中没有一个接受这组输入就报错。在本机上，各后端分别接受哪些 dtype：

# %% [markdown] en="8525ae7d6b52"
# 在 CUDA 显卡上情况不同（见 PyTorch 的 `sdp_utils.cpp`）：FlashAttention 内核只接受 float16 和 bfloat16，而且不接受注意力掩码或偏置；memory-efficient 内核也接受 float32，并接受加性掩码；math 后端什么都接受，但不融合。所以在 GPU 上，SDPA 对 float32 输入从来不会运行 FlashAttention，运行的是 memory-efficient 内核或者 math。
#
# ## 13. 在 GPU 上
#
# 在 CUDA 显卡上，下一个单元让朴素注意力、你的逐块注意力和 SDPA 的 L 不断增长，分别用 float32（SDPA 走 memory-efficient 内核）和 bfloat16（SDPA 走 FlashAttention 内核），推理和训练都测，直到显卡内存耗尽或时间预算用完，然后显示各自的峰值（`course/lessons/lesson09/gpu.py`；实际运行的内核会写明）。没有 GPU 时，这个单元显示 `data/lesson09/gpu_runs.json` 中在真实显卡上记录的运行（如果有的话；`python scripts/record_gpu_run09.py --source "..."` 可以添加一条）。

# %% [markdown] en="37114371a8b3"
# 本课还没有记录任何 GPU 运行，所以它没有打印自己在 GPU 上测得的时间。在显卡上，这张表对每种方法和模式打印它达到的最大 L、在这个 L 上的峰值和时间，以及停下来的原因（内存耗尽，或时间预算用完）；图中用 x 标出某种方法耗尽内存的位置。SDPA 和你的逐块实现各用多少时间，请在这张表里对比。朴素注意力的峰值包含 L × L 的分数乘以头数，并且短暂地有两份（第 05 课），随 L 按平方增长；SDPA 的内核和你的逐块实现保留的是输出和 logsumexp。
#
# ## 自测题
#
# 1. 在线 softmax 中，某一块把最大值从 5 抬到 9。累计和要乘以什么因子？为什么？
# 2. 为什么输出累加器也要重新缩放，而不只是和？
# 3. 一个查询的前三个键块全被掩盖。读完它们之后，它的 m 和 l 是多少？没有“减去 0”这条规则会出什么问题？
# 4. 前向传播为反向传播保存了什么？q、k、v 的形状为 (S, H, R, c) 时，它有多大？
# 5. 为什么可以用 D = rowsum(dO ∘ O) 代替 Σₖ Pᵢₖ dPᵢₖ？这对逐块实现为什么重要？
# 6. 第 05 课每次分块处理 4 列，推理时已经能用几 GB 放下 S = 5,120。逐块实现又多带来了什么？
# 7. 带重新计算的一步训练比朴素实现多做了 FLOPs。为什么在 GPU 上 FlashAttention 仍然比朴素注意力快？你用 PyTorch 写的逐块实现，在 CPU 上什么时候比朴素注意力快？
# 8. 因果注意力，块大小 64，L = 4,096：要计算多少块？其中有多少块需要掩码？
#
# <details><summary>答案</summary>
#
# 1. 乘以 exp(5 − 9) = e⁻⁴：和里的每一项原来都是 exp(xⱼ − 5)，现在要变成 exp(xⱼ − 9)。
# 2. acc = Σⱼ exp(sⱼ − m) vⱼ 同样是相对 m 的和；只有两者相对同一个 m，out = acc / l 才对（两边都乘上同一个因子，才能在比值中约掉）。
# 3. m = −inf，l = 0。没有这条规则，p = exp(−inf − (−inf)) = NaN，而且 NaN 会留在 l 和 acc 中，污染之后的每一块；有了它，p = exp(−inf − 0) = 0。
# 4. q、k、v、偏置和掩码（都是输入，本来就在内存里），输出 (S, H, R, c)，以及 logsumexp (S, H, R)：每个查询只多一个数，而不是 (S, H, R, R) 的权重。
# 5. Σₖ Pᵢₖ dPᵢₖ = Σₖ Pᵢₖ (dOᵢ · vₖ) = dOᵢ · (Σₖ Pᵢₖ vₖ) = dOᵢ · Oᵢ。前者需要 P 的一整行；dOᵢ · Oᵢ 一点都不需要，所以在循环各块之前，每个查询算一次即可。
# 6. 训练：autograd 会为反向传播保留每一段的权重，合计 (R, H, S, S)，而逐块实现只保留输出和 logsumexp。另外，一条长序列（单个切片）根本无法按切片分块；逐块计算却能在切片内部切开。
# 7. 在 GPU 上，注意力的开销主要在于让 L × L 的矩阵经过慢速的 HBM，而融合内核从不这样做；在张量核心上多算一次 q kᵀ，代价比写出再读回 L² 个数低（第 6 节）。在 CPU 上，第 8 节的扫描会打印答案，它由测量那台机器上的表算出（“所以最好的逐块实现在 L = … 时比朴素注意力快……”）；你的逐块实现占优的地方，是朴素实现的分数张量超出缓存、而块又大到每块的操作调用开销不再占主导之处。
# 8. 共 64 个查询块，第 b 块需要第 0 … b 个键块：64 · 65 / 2 = 2,080 块，总共 4,096 块；其中只有对角线上的 64 块需要掩码。
#
# </details>
#
# ## 小结
#
# - 在线 softmax 按块读一行，维护累计最大值 m 和累计和 l；m 升到 m′ 时，l（以及任何累加器）乘以 exp(m − m′)。结果与 softmax 精确相等。
# - 逐块注意力把它用在 (block_q, block_k) 的块上，每块施加自己那一块偏置和掩码，返回输出和 lse = m + log l，从不保存 q × k 的张量；无论输入是什么 dtype，累加器都用 float32。
# - 反向传播重新计算每一块的权重 P = exp(s − lse)：dV = Pᵀ dO，dS = P ∘ (dO Vᵀ − D)，其中 D = rowsum(dO ∘ O)，dQ = dS K / √c，dK = dSᵀ Q / √c（FlashAttention-2），dbias = dS 沿广播轴求和、按偏置本身的大小累加（与 DeepSpeed 的 Evoformer 内核相同）。训练时只保留输出和每个查询的一个数。
# - 因果注意力跳过对角线以上的块，只对对角线上的块施加掩码：约算一半的分数。
# - 重新计算的代价是多算一次 q kᵀ（一步训练相当于 3.5 次前向传播，而不是 3 次），省下的是写出并读回 L² 个数：在 GPU 上，前者的代价低得多。
# - 内存由形状预测、由 profiler 证实：朴素注意力（以及分块处理）按 L² 增长，逐块实现按线性增长。时间则取决于机器：纯 PyTorch 的逐块实现每块都要付操作调用的开销，在朴素实现的分数超出缓存之处才占优（扫描给出了位置）；融合内核（SDPA、FlexAttention、FlashAttention）两方面都占优。
# - OpenFold 的 `_lma` 换了一种切法（先拆分再合并、段很大、没有自己的反向传播、用 −10⁹ 偏置表示掩码），在 AlphaFold 的行注意力上与你的逐块结果相等；它用于训练的低内存做法是 DeepSpeed 的 Evoformer 内核。
# - 路线二（滑动窗口）可以与路线一结合：跳过带外的块。
