"""Realistic bugs for the checks of lesson 09 (online softmax, tiled attention, recomputation)."""
from tests.mutation import Mutant

ONLINE_SUM = "l = l * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)"
ONLINE_MAX = "m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))"
ONLINE_SHIFT = ('        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)  '
                '# exp(-inf - 0) = 0, not NaN')
FORWARD_BIAS = "                scores = scores + tile(bias, rows, cols)\n            if mask"
FORWARD_MASK = ('                scores = scores.masked_fill(~tile(mask, rows, cols), float("-inf"))\n'
                "            tile_max")
FORWARD_LOOPS = ("    for rows in key_blocks(q.shape[-2], block_q):\n"
                 "        q_tile = q[..., rows, :]\n"
                 "        m = l = acc = None\n"
                 "        for cols in key_blocks(k.shape[-2], block_k):\n")
BACKWARD_LOOPS = ("        for cols in key_blocks(k.shape[-2], block_k):\n"
                  "            k_tile, v_tile = k[..., cols, :], v[..., cols, :]\n"
                  "            for rows in key_blocks(q.shape[-2], block_q):\n")
BACKWARD_BIAS = "                    scores = scores + tile(bias, rows, cols)\n"
TILES = "the sum l AND the output accumulator"

MUTANTS = [
    # 09.online_softmax
    Mutant("09.online_softmax", "tiled.py", ONLINE_SUM,
           "l = l + torch.exp(block - shift).sum(dim=-1, keepdim=True)",
           "l = l * exp(m - m_new)", "the sum is not rescaled when a block raises the max"),
    Mutant("09.online_softmax", "tiled.py", ONLINE_MAX,
           "m_new = block.amax(dim=-1, keepdim=True)", "carried to the next block",
           "each block's own max, not carried between blocks"),
    Mutant("09.online_softmax", "tiled.py", ONLINE_SHIFT, "        shift = m_new",
           "exp(-inf - (-inf)) is NaN", "no guard for a row that has seen only -inf"),
    Mutant("09.online_softmax", "tiled.py", "l = torch.zeros_like(x[..., :1])",
           "l = torch.zeros(x.shape[:-1] + (1,), dtype=torch.float64, device=x.device)",
           "your result is float64", "the running sum hard-coded to float64"),
    Mutant("09.online_softmax", "tiled.py",
           "    for cols in key_blocks(x.shape[-1], block_size):\n",
           "    for cols in [slice(s, s + block_size)\n"
           "                 for s in range(0, x.shape[-1] - block_size + 1, block_size)]:\n",
           "the last block may be shorter", "pass 1 drops the last, shorter block"),
    # 09.tiled_forward
    Mutant("09.tiled_forward", "tiled.py", "acc = acc * rescale + p_v", "acc = acc + p_v", TILES,
           "the output accumulator is not rescaled when the max changes"),
    Mutant("09.tiled_forward", "tiled.py",
           "m_new = tile_max if m is None else torch.maximum(m, tile_max)", "m_new = tile_max",
           "the running max must be carried", "the max is not carried between key tiles"),
    Mutant("09.tiled_forward", "tiled.py",
           'block_lse = (m.masked_fill(m == float("-inf"), 0.0) + torch.log(l)).squeeze(-1)',
           "block_lse = torch.log(l).squeeze(-1)", "lse = m + log(l)",
           "logsumexp off by the max"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_BIAS,
           "                scores = scores + tile(bias, slice(0, rows.stop - rows.start), cols)\n"
           "            if mask", "tile(bias, rows, cols)",
           "the first query block's bias added to every query block"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_MASK,
           "                scores = scores.masked_fill(\n"
           "                    ~tile(mask, rows, slice(0, cols.stop - cols.start)), float(\"-inf\"))\n"
           "            tile_max", "tile(mask, rows, cols)",
           "the first key block's mask applied to every key block"),
    Mutant("09.tiled_forward", "tiled.py",
           "        for cols in key_blocks(k.shape[-2], block_k):\n            scores = scaled",
           "        for cols in [slice(s, s + block_k)\n"
           "                     for s in range(0, k.shape[-2] // block_k * block_k, block_k)]:\n"
           "            scores = scaled",
           "the last query or key block is shorter",
           "L_k // block_k key blocks: the keys of the last, shorter block are left out"),
    Mutant("09.tiled_forward", "tiled.py", "block_out = acc / l.masked_fill(l == 0, 1.0)",
           "block_out = (acc / l.masked_fill(l == 0, 1.0)).double()",
           "your result is float64", "the output cast to float64"),
    Mutant("09.tiled_forward", "tiled.py", "block_out = acc / l.masked_fill(l == 0, 1.0)",
           "block_out = acc / l", "divide by 1 instead",
           "a query that sees no key divides 0 by 0"),
    Mutant("09.tiled_forward", "tiled.py",
           '            shift = m_new.masked_fill(m_new == float("-inf"), 0.0)\n',
           "            shift = m_new\n", "exp(-inf - (-inf)) is NaN",
           "no guard for a query whose first key tiles are all masked"),
    # 09.tiled_backward
    Mutant("09.tiled_backward", "tiled.py",
           "d_scores = p * (d_out @ v_tile.transpose(-2, -1) - D[..., rows, :])",
           "d_scores = p * (d_out @ v_tile.transpose(-2, -1))", "dS = P * (dP - D)",
           "D = rowsum(dO * O) left out of dS"),
    Mutant("09.tiled_backward", "tiled.py", "dq[..., rows, :] += d_scores @ k_tile * scale",
           "dq[..., rows, :] += d_scores @ k_tile", "dq = dS k / sqrt(c)",
           "dq without the 1/sqrt(c) of the scores"),
    Mutant("09.tiled_backward", "tiled.py", "bias_tile += d_scores.sum_to_size(bias_tile.shape)",
           "bias_tile += (d_scores * scale).sum_to_size(bias_tile.shape)",
           "summed over the axes the bias was broadcast",
           "dbias scaled by 1/sqrt(c) like dq (the bias is added after the scale)"),
    Mutant("09.tiled_backward", "tiled.py", BACKWARD_BIAS, "                    pass\n",
           "plus the bias, masked", "the bias left out of the recomputed scores"),
    Mutant("09.tiled_backward", "tiled.py",
           'lse = lse.masked_fill(lse == float("-inf"), 0.0).unsqueeze(-1)',
           "lse = lse.unsqueeze(-1)", "where a query sees no key: its lse is -inf",
           "exp(scores - lse) is NaN for a query that sees no key"),
    Mutant("09.tiled_backward", "tiled.py", "dv[..., cols, :] += p.transpose(-2, -1) @ d_out",
           "dv[..., cols, :] = p.transpose(-2, -1) @ d_out", "for every (query, key) tile",
           "dv overwritten by each query tile instead of accumulated"),
]

# Bugs that change no value on the CPU, only memory or the device: the checks' profiler and `meta`
# probes see them, the hidden cases (outputs and gradients on other CPU inputs) cannot.
VISIBLE_ONLY = [
    Mutant("09.online_softmax", "tiled.py", 'm = torch.full_like(x[..., :1], float("-inf"))',
           'm = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=x.dtype)',
           "create it with device=x.device", "the running max created on the CPU"),

    Mutant("09.tiled_forward", "tiled.py", FORWARD_LOOPS,
           "    for rows in key_blocks(q.shape[-2], q.shape[-2]):\n"
           "        q_tile = q[..., rows, :]\n"
           "        m = l = acc = None\n"
           "        for cols in key_blocks(k.shape[-2], k.shape[-2]):\n",
           "times one (q, k) score tensor", "the block sizes ignored: one tile of all the scores"),
    Mutant("09.tiled_backward", "tiled.py",
           "        ctx.save_for_backward(q, k, v, bias, mask, out, lse)\n",
           "        ctx.save_for_backward(q, k, v, bias, mask, out, lse)\n"
           "        ctx.weights = torch.exp(scaled_scores(q, k) - lse.unsqueeze(-1))\n",
           "keeps", "the forward stores the probabilities for the backward pass"),
    Mutant("09.tiled_backward", "tiled.py", BACKWARD_LOOPS,
           "        for cols in key_blocks(k.shape[-2], k.shape[-2]):\n"
           "            k_tile, v_tile = k[..., cols, :], v[..., cols, :]\n"
           "            for rows in key_blocks(q.shape[-2], q.shape[-2]):\n",
           "your backward pass held", "the backward recomputes all the weights at once"),
]
