"""Realistic bugs for the checks of lesson 09 (online softmax, tiled attention, recomputation,
causal tiles)."""
import dataclasses

from tests.mutation import Mutant

ONLINE_SUM = "l = l * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)"
ONLINE_MAX = "m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))"
ONLINE_SHIFT = ('        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)  '
                '# exp(-inf - 0) = 0, not NaN')
ONLINE_START = 'm = torch.full_like(x[..., :1], float("-inf"), dtype=acc)'
ONLINE_ACC = "    acc = accumulator_dtype(x.dtype)\n    m = torch.full_like"
FORWARD_ACC = "    acc = accumulator_dtype(q.dtype)\n    out = lse = None"
FORWARD_SCORES = "            scores = scaled_scores(q_tile, k[..., cols, :].to(acc))  # (*, block_q, block_k)"
FORWARD_BIAS = "                scores = scores + tile(bias, rows, cols)\n            if mask"
FORWARD_MASK = ('                scores = scores.masked_fill(~tile(mask, rows, cols), float("-inf"))\n'
                "            tile_max")
FORWARD_LOOPS = ("    for rows in key_blocks(q.shape[-2], block_q):\n"
                 "        q_tile = q[..., rows, :].to(acc)\n"
                 "        m = l = acc_out = None\n"
                 "        for cols in key_blocks(k.shape[-2], block_k):\n")
FORWARD_OUT = "block_out = (acc_out / l.masked_fill(l == 0, 1.0)).to(q.dtype)"
BACKWARD_LOOPS = ("        for cols in key_blocks(k.shape[-2], block_k):\n"
                  "            k_tile, v_tile = k[..., cols, :].to(acc), v[..., cols, :].to(acc)\n"
                  "            for rows in key_blocks(q.shape[-2], block_q):\n")
BACKWARD_BIAS = "                    scores = scores + tile(bias, rows, cols)\n"
BACKWARD_ACC = "        acc = accumulator_dtype(q.dtype)\n        scale"
CAUSAL_KEYS = "        keys = slice(0, rows.stop)\n"
CAUSAL_I = "        i = torch.arange(rows.start, rows.stop, device=q.device)[:, None]\n"
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
    Mutant("09.online_softmax", "tiled.py",
           "(torch.exp(x[..., cols].to(acc) - m) / l).to(x.dtype)",
           "torch.exp(x[..., cols].to(acc) - m) / l", "your result is float32 for bfloat16 inputs",
           "the result left in the accumulators' dtype", kind="dtype"),
    Mutant("09.online_softmax", "tiled.py",
           "    for cols in key_blocks(x.shape[-1], block_size):\n        block = x",
           "    for cols in [slice(s, s + block_size)\n"
           "                 for s in range(0, x.shape[-1] - block_size + 1, block_size)]:\n"
           "        block = x",
           "the last block may be shorter", "pass 1 drops the last, shorter block", kind="sizes"),
    Mutant("09.online_softmax", "tiled.py", "l = l * torch.exp(m - shift)",
           "l = l * torch.exp(shift - m)", "the inverse of the factor",
           "the rescale factor inverted: exp(m_new - m)", kind="evidence"),
    Mutant("09.online_softmax", "tiled.py", ONLINE_START,
           "m = torch.zeros_like(x[..., :1], dtype=acc)", "never rises to them",
           "the running max started at 0 instead of -inf", kind="large scores"),
    # 09.tiled_forward
    Mutant("09.tiled_forward", "tiled.py", "acc_out = acc_out * rescale + p_v",
           "acc_out = acc_out + p_v", "l is rescaled and the output accumulator is not",
           "the output accumulator is not rescaled when the max changes", kind="evidence"),
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
           "L_k // block_k key blocks: the keys of the last, shorter block are left out",
           kind="sizes"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_OUT,
           "block_out = (acc_out / l.masked_fill(l == 0, 1.0)).double()",
           "your result is float64", "the output cast to float64", kind="dtype"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_OUT,
           "block_out = (acc_out / l).to(q.dtype)", "divide by 1 instead",
           "a query that sees no key divides 0 by 0"),
    Mutant("09.tiled_forward", "tiled.py",
           '            shift = m_new.masked_fill(m_new == float("-inf"), 0.0)\n',
           "            shift = m_new\n", "exp(-inf - (-inf)) is NaN",
           "no guard for a query whose first key tiles are all masked"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_SCORES,
           "            scores = scaled_scores(q_tile, k[..., cols, :].to(acc)) / q.shape[-1] ** 0.5",
           "the scale is applied twice", "the scores divided by sqrt(c) twice", kind="evidence"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_SCORES,
           "            scores = q_tile @ k[..., cols, :].to(acc).transpose(-2, -1)",
           "your scores are not divided by sqrt(c)", "the scores not scaled at all",
           kind="evidence"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_OUT, "block_out = acc_out.to(q.dtype)",
           "your output is acc, not acc / l", "no final division by the running sum",
           kind="evidence"),
    Mutant("09.tiled_forward", "tiled.py", "rescale = torch.exp(m - shift)",
           "rescale = torch.exp(shift - m)", "the inverse of the factor",
           "the rescale factor inverted: exp(m_new - m)", kind="evidence"),
    Mutant("09.tiled_forward", "tiled.py",
           "m_new = tile_max if m is None else torch.maximum(m, tile_max)",
           "m_new = tile_max.clamp(min=0.0) if m is None else torch.maximum(m, tile_max)",
           "never rises to them", "the running max started at 0 instead of -inf",
           kind="large scores"),
    Mutant("09.tiled_forward", "tiled.py", "    for rows in key_blocks(q.shape[-2], block_q):\n"
           "        q_tile",
           "    for rows in key_blocks(q.shape[-2] // block_q * block_q, block_q):\n        q_tile",
           "your function returned None for the output",
           "L_q // block_q query blocks: the last, shorter one dropped (None when L_q < block_q)",
           kind="sizes"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_ACC, "    acc = q.dtype\n    out = lse = None",
           "keep m, l and the output accumulator in float32",
           "the running max, sum and accumulator in bfloat16 for bfloat16 inputs", kind="dtype"),
    Mutant("09.tiled_forward", "tiled.py",
           "m_new = tile_max if m is None else torch.maximum(m, tile_max)",
           "m_new = torch.maximum(torch.full(tile_max.shape, float('-inf'), dtype=acc) "
           "if m is None else m, tile_max)",
           "device=x.device", "the running max started from a tensor made on the CPU",
           kind="device"),
    # 09.tiled_backward
    Mutant("09.tiled_backward", "tiled.py",
           "d_scores = p * (d_out @ v_tile.transpose(-2, -1) - D[..., rows, :])",
           "d_scores = p * (d_out @ v_tile.transpose(-2, -1))", "dS = P * (dP - D)",
           "D = rowsum(dO * O) left out of dS", kind="evidence"),
    Mutant("09.tiled_backward", "tiled.py", "dq[..., rows, :] += d_scores @ k_tile * scale",
           "dq[..., rows, :] += d_scores @ k_tile", "dq: sqrt(c) = 2 times too large",
           "dq without the 1/sqrt(c) of the scores", kind="evidence"),
    Mutant("09.tiled_backward", "tiled.py",
           "dk[..., cols, :] += d_scores.transpose(-2, -1) @ q_tile * scale",
           "dk[..., cols, :] += d_scores.transpose(-2, -1) @ q_tile",
           "dk: sqrt(c) = 2 times too large", "dk without the 1/sqrt(c) of the scores",
           kind="evidence"),
    Mutant("09.tiled_backward", "tiled.py", "bias_tile += d_scores.sum_to_size(bias_tile.shape)",
           "bias_tile += (d_scores * scale).sum_to_size(bias_tile.shape)", "no 1/sqrt(c)",
           "dbias scaled by 1/sqrt(c) like dq (the bias is added after the scale)"),
    Mutant("09.tiled_backward", "tiled.py", BACKWARD_BIAS, "                    pass\n",
           "plus the bias, masked", "the bias left out of the recomputed scores"),
    Mutant("09.tiled_backward", "tiled.py",
           'lse = lse.masked_fill(lse == float("-inf"), 0.0).unsqueeze(-1)',
           "lse = lse.unsqueeze(-1)", "where a query sees no key: its lse is -inf",
           "exp(scores - lse) is NaN for a query that sees no key", kind="gradients"),
    Mutant("09.tiled_backward", "tiled.py", "dv[..., cols, :] += p.transpose(-2, -1) @ d_out",
           "dv[..., cols, :] = p.transpose(-2, -1) @ d_out", "dv keeps only the last query block",
           "dv overwritten by each query tile instead of accumulated", kind="gradients"),
    Mutant("09.tiled_backward", "tiled.py",
           "dk[..., cols, :] += d_scores.transpose(-2, -1) @ q_tile * scale",
           "dk[..., cols, :] = d_scores.transpose(-2, -1) @ q_tile * scale",
           "dk is wrong and dq and dv are right",
           "dk overwritten by each query tile instead of accumulated", kind="gradients"),
    Mutant("09.tiled_backward", "tiled.py", "p = torch.exp(scores - lse[..., rows, :])",
           "p = torch.exp(scores) / torch.exp(lse[..., rows, :])",
           "with scores near -1000, exp(scores) alone underflows to 0",
           "P as exp(scores) / exp(lse): 0 / 0 where every score is far below zero",
           kind="large scores"),
    Mutant("09.tiled_backward", "tiled.py", "None if dbias is None else dbias.to(bias.dtype)", "None",
           "returned None for the gradient of bias", "no gradient returned for the bias",
           kind="gradients"),
]

# Bugs that change no value on the CPU, only memory, how many scores are computed or the device of
# the backward's tensors: the checks' profiler, counting and meta probes see them, the hidden
# cases (outputs and gradients on other CPU inputs; the meta device for forward passes only)
# cannot.
VISIBLE_ONLY = [
    # in bfloat16 the hidden judge allows bfloat16's tolerance (1e-2), more than this drift
    Mutant("09.online_softmax", "tiled.py", ONLINE_ACC,
           "    acc = x.dtype\n    m = torch.full_like", "keep the running max and sum in float32",
           "the running max and sum in bfloat16 for bfloat16 inputs", kind="dtype"),
    Mutant("09.tiled_backward", "tiled.py", "dq = q.new_zeros(*batch, *q.shape[-2:], dtype=acc)",
           "dq = torch.zeros(*batch, *q.shape[-2:], dtype=acc)", "device=x.device",
           "dq's accumulator created on the CPU", kind="device"),
    Mutant("09.online_softmax", "tiled.py", ONLINE_START,
           'm = torch.full(x.shape[:-1] + (1,), float("-inf"), dtype=acc)',
           "create it with device=x.device", "the running max created on the CPU", kind="device"),
    Mutant("09.tiled_forward", "tiled.py", FORWARD_LOOPS,
           "    for rows in key_blocks(q.shape[-2], q.shape[-2]):\n"
           "        q_tile = q[..., rows, :].to(acc)\n"
           "        m = l = acc_out = None\n"
           "        for cols in key_blocks(k.shape[-2], k.shape[-2]):\n",
           "times one (q, k) score tensor", "the block sizes ignored: one tile of all the scores"),
    Mutant("09.tiled_backward", "tiled.py",
           "        ctx.save_for_backward(q, k, v, bias, mask, out, lse)\n",
           "        ctx.save_for_backward(q, k, v, bias, mask, out, lse)\n"
           "        ctx.weights = torch.exp(scaled_scores(q, k) - lse.unsqueeze(-1))\n",
           "keeps", "the forward stores the probabilities for the backward pass"),
    Mutant("09.tiled_backward", "tiled.py", BACKWARD_LOOPS,
           "        for cols in key_blocks(k.shape[-2], k.shape[-2]):\n"
           "            k_tile, v_tile = k[..., cols, :].to(acc), v[..., cols, :].to(acc)\n"
           "            for rows in key_blocks(q.shape[-2], q.shape[-2]):\n",
           "your backward pass held", "the backward recomputes all the weights at once"),
    Mutant("09.causal_tiles", "tiled.py",
           "        j = torch.arange(rows.stop, device=q.device)[None, :]\n",
           "        j = torch.arange(q.shape[-2], device=q.device)[None, :]\n"
           "        keys = slice(0, q.shape[-2])\n",
           "the tiles above the diagonal must never be computed",
           "every key for every query block: the tiles above the diagonal computed and masked"),
    # the forward's own gradients (autograd through its tiles) have no hidden counterpart: the
    # hidden forward cases compare outputs only
    Mutant("09.tiled_forward", "tiled.py", "    out = lse = None\n",
           "    out = lse = None\n    q = q.detach()  # the forward needs no gradient\n",
           "no gradient reaches q", "the query tile detached: no gradient reaches q",
           kind="missing gradient"),
    Mutant("09.tiled_forward", "tiled.py",
           "        block_out = (acc_out / l.masked_fill(l == 0, 1.0)).to(q.dtype)\n",
           "        block_out = torch.where(l == 0, 0.0, acc_out / l).to(q.dtype)\n",
           "gradient", "a blind query's 0 / 0 hidden by torch.where: NaN in the gradient",
           kind="gradients"),
]

MUTANTS += [
    # the backward's peak with a shared bias is measured by the hidden cases too
    Mutant("09.tiled_backward", "tiled.py",
           "dbias = torch.zeros_like(bias, dtype=acc) if need_dbias else None",
           "dbias = q.new_zeros(*batch, *bias.shape[-2:], dtype=acc) if need_dbias else None",
           "accumulate dbias at the bias's own size",
           "the bias's gradient built at the scores' size, summed to the bias's by autograd",
           kind="sizes"),
    # 09.causal_tiles
    Mutant("09.causal_tiles", "tiled.py", CAUSAL_KEYS,
           "        keys = slice(0, rows.stop // block * block)\n",
           "the diagonal tiles are skipped", "the key range rounded down: the last diagonal tile "
           "skipped", kind="sizes"),
    Mutant("09.causal_tiles", "tiled.py", CAUSAL_I,
           "        i = torch.arange(0, rows.stop - rows.start, device=q.device)[:, None]\n",
           "the mask is built in the tile's own indices", "the mask in tile-local indices"),
    Mutant("09.causal_tiles", "tiled.py", "j <= i, block, block))", "j < i, block, block))",
           "key j <= query i, not j < i", "each query kept from its own key"),
    Mutant("09.causal_tiles", "tiled.py", CAUSAL_I,
           "        i = torch.arange(rows.start, rows.stop)[:, None]\n", "device=x.device",
           "the query indices created on the CPU", kind="device"),
    Mutant("09.causal_tiles", "tiled.py", "    return torch.cat(outputs, dim=-2)\n    # END",
           "    return torch.cat(outputs, dim=-2).double()\n    # END", "your result is float64",
           "the output cast to float64", kind="dtype"),
]


# the whole lines each message holds (its problem line and its hint line), by mutant id
EXACT = {
    '09.tiled_forward: the query tile detached: no gradient reaches q': (
        "grad q: no gradient arrived (autograd gave None: nothing in your code connects it to the output), where the reference's has numbers",
        'hint: the output is right but no gradient reaches q: something on its path to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new torch.tensor(...)), so it would never learn',
    ),
    "09.tiled_forward: a blind query's 0 / 0 hidden by torch.where: NaN in the gradient": (
        'grad v shape (2, 9, 4) as expected, but it holds 72 NaN where the reference has numbers',
        "hint: the output is right but the gradient with respect to v holds NaN where the reference's is a number: a step of the forward pass makes NaN or inf (0/0, exp of inf, the softmax of an all -inf row) and a later where, masked_fill or nan_to_num hides it in the output, but backward still sends NaN through it (NaN * 0 = NaN): make every step finite where it is computed (clamp a count to at least 1 before dividing, give a fully masked row finite scores before the softmax)",
    ),
    '09.tiled_backward: P as exp(scores) / exp(lse): 0 / 0 where every score is far below zero': (
        'dq shape (2, 5, 4) as expected, but it holds 40 NaN where the reference has numbers',
        "hint: P = exp(scores - lse) with the forward's lse: with scores near -1000, exp(scores) alone underflows to 0",
    ),
    '09.online_softmax: the sum is not rescaled when a block raises the max': (
        'output shape (3, 6) as expected; max |expected - got| = 0.5 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: when a block raises a row's maximum from m to m_new, the sum so far was computed against m: l = l * exp(m - m_new) + exp(block - m_new).sum(-1), and m = m_new carried to the next block",
    ),
    "09.online_softmax: each block's own max, not carried between blocks": (
        'output shape (3, 6) as expected, but it holds 4 NaN where the reference has numbers',
        "hint: when a block raises a row's maximum from m to m_new, the sum so far was computed against m: l = l * exp(m - m_new) + exp(block - m_new).sum(-1), and m = m_new carried to the next block",
    ),
    '09.online_softmax: no guard for a row that has seen only -inf': (
        'output shape (3, 10) as expected, but it holds 10 NaN where the reference has numbers',
        "hint: while a row has seen only -inf, its running max m_new is -inf too and exp(-inf - (-inf)) is NaN: shift by 0 where m_new is -inf (m_new.masked_fill(m_new == float('-inf'), 0.0))",
    ),
    "09.online_softmax: the result left in the accumulators' dtype": (
        'output dtype: expected torch.bfloat16, got torch.float32 (the values agree)',
        "hint: your result is float32 for bfloat16 inputs: the output's dtype must follow the input's, and something in your code fixes it (.float(), or torch.zeros/ones/tensor/arange without dtype=): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
    ),
    '09.online_softmax: pass 1 drops the last, shorter block': (
        'output shape (3, 5) as expected; max |expected - got| = inf (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: the last block may be shorter than block_size (here the row length is not a multiple of it): cover every entry, range(0, n, block_size) with slices that stop at n',
    ),
    '09.online_softmax: the rescale factor inverted: exp(m_new - m)': (
        'output shape (3, 5) as expected, but it holds 15 NaN where the reference has numbers',
        'hint: you rescale l by exp(m_new - m), the inverse of the factor: when a block raises the maximum from m to m_new, l = l * exp(m - m_new) + exp(block - m_new).sum(-1)',
    ),
    '09.online_softmax: the running max started at 0 instead of -inf': (
        'output shape (3, 9) as expected, but it holds 27 NaN where the reference has numbers',
        "hint: every entry of these rows is near -1000: a running max that starts at 0 instead of -inf never rises to them, exp(x - 0) underflows to 0 and l = 0; start m at -inf (torch.full_like(..., float('-inf')))",
    ),
    '09.online_softmax: the running max and sum in bfloat16 for bfloat16 inputs': (
        "in bfloat16 your result is 0.0478 away from the exact result of the same bfloat16 inputs, more than one bfloat16 step (0.00781): keep the running max and sum in float32 (accumulator_dtype(x.dtype)) and cast only the result to x's dtype",
        "hint: in bfloat16, keep the running max and sum in float32 (dtype=accumulator_dtype(x.dtype)) and cast the result back to x's dtype: bfloat16 keeps 8 bits of mantissa, and a sum over many blocks in it drifts",
    ),
    '09.tiled_forward: the output accumulator is not rescaled when the max changes': (
        'output shape (2, 8, 3) as expected; max |expected - got| = 2.04 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: l is rescaled and the output accumulator is not: when the maximum rises from m to m_new, multiply acc by exp(m - m_new) too (acc = acc * exp(m - m_new) + p @ v_tile)',
    ),
    '09.tiled_forward: the max is not carried between key tiles': (
        'output shape (2, 4, 3) as expected, but it holds 24 NaN where the reference has numbers',
        'hint: with more than one key tile, the running max must be carried from tile to tile (m_new = max(m, tile max)) and everything accumulated so far rescaled by exp(m - m_new): the sum l AND the output accumulator',
    ),
    '09.tiled_forward: logsumexp off by the max': (
        'logsumexp shape (2, 5) as expected; max |expected - got| = 3.43 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: your logsumexp is log(l), the output is right: lse = m + log(l), with m the final running maximum',
    ),
    "09.tiled_forward: the first query block's bias added to every query block": (
        'output shape (2, 5, 4) as expected; max |expected - got| = 0.824 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: add the bias of THIS tile to its scores: tile(bias, rows, cols), rows the query block and cols the key block (tile() keeps a size-1 axis whole, so a broadcast bias still fits)',
    ),
    "09.tiled_forward: the first key block's mask applied to every key block": (
        'output shape (2, 6, 4) as expected; max |expected - got| = 0.512 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: mask THIS tile's scores: masked_fill(~tile(mask, rows, cols), -inf), rows the query block and cols the key block, before the tile's max",
    ),
    '09.tiled_forward: L_k // block_k key blocks: the keys of the last, shorter block are left out': (
        "raised AttributeError: 'NoneType' object has no attribute 'masked_fill'",
        'hint: your function returned None for the output (or m, l or the accumulator is still None), so a loop over blocks never ran or never wrote: the last query or key block is shorter when L is not a multiple of the block (and the only one when L < block): cover range(0, L, block) with slices that stop at L (key_blocks does), and return (out, lse)',
    ),
    '09.tiled_forward: the output cast to float64': (
        'output dtype: expected torch.float32, got torch.float64 (the values agree)',
        "hint: your result is float64, the reference (like the inputs) float32: something in your code makes float64 (torch.zeros/ones/empty/tensor/arange without dtype=, or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) so that the result keeps the input's dtype",
    ),
    '09.tiled_forward: a query that sees no key divides 0 by 0': (
        'output shape (2, 6, 4) as expected, but it holds 8 NaN where the reference has numbers',
        'hint: the cases that fail have queries whose first key tiles, or all of them, are masked: while m_new is -inf, exp(-inf - (-inf)) is NaN, so shift by 0 there; a query that sees no key keeps l = 0: its output is 0 (divide by 1 instead) and its lse = log(0) = -inf',
    ),
    '09.tiled_forward: no guard for a query whose first key tiles are all masked': (
        'output shape (2, 6, 4) as expected, but it holds 16 NaN where the reference has numbers',
        'hint: the cases that fail have queries whose first key tiles, or all of them, are masked: while m_new is -inf, exp(-inf - (-inf)) is NaN, so shift by 0 there; a query that sees no key keeps l = 0: its output is 0 (divide by 1 instead) and its lse = log(0) = -inf',
    ),
    '09.tiled_forward: the scores divided by sqrt(c) twice': (
        'output shape (2, 5, 4) as expected; max |expected - got| = 0.322 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: your scores are divided by c = 4 instead of sqrt(c) = 2: the scale is applied twice (your scaled_scores already divides by sqrt(c); do not divide q, k or the scores again)',
    ),
    '09.tiled_forward: the scores not scaled at all': (
        'output shape (2, 5, 4) as expected; max |expected - got| = 0.5 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: your scores are not divided by sqrt(c) = 2: compute each tile's scores with your lesson-01 scaled_scores(q_tile, k_tile), which scales them",
    ),
    '09.tiled_forward: no final division by the running sum': (
        'output shape (2, 5, 4) as expected; max |expected - got| = 2.1 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: your output is acc, not acc / l: after the last key tile, divide the output accumulator by the running sum l (out = acc / l), as softmax divides by its sum',
    ),
    '09.tiled_forward: the rescale factor inverted: exp(m_new - m)': (
        'output shape (2, 8, 3) as expected; max |expected - got| = 2.18 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: you rescale by exp(m_new - m), the inverse of the factor: when the maximum rises from m to m_new, what was accumulated against m is multiplied by exp(m - m_new), which is at most 1',
    ),
    '09.tiled_forward: the running max started at 0 instead of -inf': (
        'output shape (2, 5, 4) as expected; max |expected - got| = 1.7 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: every score of these queries is near -1000: a running max that starts at 0 instead of -inf (or the first tile's max) never rises to them, exp(s - 0) underflows to 0 and l = 0; start from the first tile's max, or from -inf",
    ),
    '09.tiled_forward: L_q // block_q query blocks: the last, shorter one dropped (None when L_q < block_q)': (
        'raised TypeError: returned None as the output (a loop over blocks never ran?)',
        'hint: your function returned None for the output (or m, l or the accumulator is still None), so a loop over blocks never ran or never wrote: the last query or key block is shorter when L is not a multiple of the block (and the only one when L < block): cover range(0, L, block) with slices that stop at L (key_blocks does), and return (out, lse)',
    ),
    '09.tiled_forward: the running max, sum and accumulator in bfloat16 for bfloat16 inputs': (
        'logsumexp shape (2, 6) as expected; max |expected - got| = 0.0141 (tolerance 1e-06 + 1e-05*|expected|); and its dtype is torch.bfloat16, not torch.float32',
        "hint: in bfloat16 your logsumexp is torch.bfloat16: keep m, l and the output accumulator in float32 (acc = accumulator_dtype(q.dtype)) and return lse in that dtype, the output cast to q's dtype; lse feeds exp(scores - lse) in the backward pass, where bfloat16's 8 bits of mantissa are too few",
    ),
    '09.tiled_forward: the running max started from a tensor made on the CPU': (
        'raised RuntimeError: Tensor on device meta is not on the expected device cpu!',
        'hint: a tensor created inside your code sits on a fixed device (the CPU) while the inputs are elsewhere (here the `meta` device; on a GPU the same code fails): create tensors with device=x.device (torch.arange(n, device=x.device), zeros_like, x.new_ones(...)), or move them with .to(x.device); a tensor kept in a module belongs in register_buffer, so that module.to() moves it',
    ),
    '09.tiled_backward: D = rowsum(dO * O) left out of dS': (
        'dq shape (2, 5, 4) as expected; max |expected - got| = 1.38 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: dv is right and dq, dk are not, and they match dS = P * dP without D: dS = P * (dP - D) with D = rowsum(dO * O), one number per query (FlashAttention-2's D)",
    ),
    '09.tiled_backward: dq without the 1/sqrt(c) of the scores': (
        'dq shape (2, 5, 4) as expected; max |expected - got| = 0.696 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: dq: sqrt(c) = 2 times too large: the scores were divided by sqrt(c), so their gradient with respect to q and k carries that factor too: dq = dS k / sqrt(c), dk = dSᵀ q / sqrt(c)',
    ),
    '09.tiled_backward: dk without the 1/sqrt(c) of the scores': (
        'dk shape (2, 7, 4) as expected; max |expected - got| = 0.648 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: dk: sqrt(c) = 2 times too large: the scores were divided by sqrt(c), so their gradient with respect to q and k carries that factor too: dq = dS k / sqrt(c), dk = dSᵀ q / sqrt(c)',
    ),
    '09.tiled_backward: dbias scaled by 1/sqrt(c) like dq (the bias is added after the scale)': (
        'dbias shape (6, 9) as expected; max |expected - got| = 0.764 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: dq, dk and dv are right and dbias is 0.5 times the right one: the bias is added after the scores are scaled, so its gradient is dS itself (no 1/sqrt(c))',
    ),
    '09.tiled_backward: the bias left out of the recomputed scores': (
        'dq shape (2, 6, 4) as expected; max |expected - got| = 1.23 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: dv is wrong too, so the recomputed weights are: P = exp(scores - lse) with the tile's scores built as in the forward (scaled, plus the bias, masked), and dv += Pᵀ dO for every (query, key) tile",
    ),
    '09.tiled_backward: exp(scores - lse) is NaN for a query that sees no key': (
        'dq shape (2, 6, 4) as expected, but it holds 8 NaN where the reference has numbers',
        'hint: your dq, dk, dv, dbias hold NaN where a query sees no key: its lse is -inf and exp(scores - lse) = exp(-inf - (-inf)) = NaN; shift by 0 where lse is -inf, so that its weights, and every gradient through them, are 0',
    ),
    '09.tiled_backward: dv overwritten by each query tile instead of accumulated': (
        'dv shape (2, 11, 4) as expected; max |expected - got| = 1.4 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: dv is wrong and dk and dq are right: dv keeps only the last query block's share; accumulate it over every tile (dv[cols] += ..., not =)",
    ),
    '09.tiled_backward: dk overwritten by each query tile instead of accumulated': (
        'dk shape (2, 11, 4) as expected; max |expected - got| = 0.897 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: dk is wrong and dq and dv are right: dk keeps only the last query block's share; accumulate it over every tile (dk[cols] += ..., not =)",
    ),
    '09.tiled_backward: no gradient returned for the bias': (
        'raised RuntimeError: no gradient reached bias: your backward returned None for it',
        "hint: your backward returned None for the gradient of bias: return one gradient per input of forward, dq, dk, dv and dbias (the bias's gradient, of the bias's shape, when a bias was given), then None for mask, block_q and block_k",
    ),
    "09.tiled_backward: the bias's gradient built at the scores' size, summed to the bias's by autograd": (
        "with a bias (q, k) shared by 16 sequences, your backward pass held 696,332 bytes at its peak, 1.33 times one (*, q, k) score tensor (524,288 bytes): accumulate dbias at the bias's own size, tile by tile (tile(dbias, rows, cols) += dS.sum_to_size(...)), never a (*, q, k) gradient that autograd sums afterwards",
        "hint: accumulate dbias at the bias's own size, tile by tile, never at the scores' size",
    ),
    '09.causal_tiles: the key range rounded down: the last diagonal tile skipped': (
        'output shape (2, 13, 3) as expected; max |expected - got| = 0.298 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: the diagonal tiles are skipped: query block rows must see the keys up to rows.stop (its own block included, where key j <= query i), not up to rows.start',
    ),
    '09.causal_tiles: the mask in tile-local indices': (
        'output shape (2, 12, 3) as expected; max |expected - got| = 1.96 (tolerance 1e-09 + 1e-07*|expected|)',
        "hint: the mask is built in the tile's own indices: query i of the block is rows.start + i in the sequence, so the mask is key j <= rows.start + i (torch.arange(rows.start, rows.stop)[:, None] >= torch.arange(rows.stop)[None, :]), not a lower triangle that starts at column 0",
    ),
    '09.causal_tiles: each query kept from its own key': (
        'output shape (2, 12, 3) as expected; max |expected - got| = 1.33 (tolerance 1e-09 + 1e-07*|expected|)',
        'hint: each query is kept from its own key: causal attention lets query i see key i (key j <= query i, not j < i)',
    ),
    '09.causal_tiles: the query indices created on the CPU': (
        'raised RuntimeError: Tensor on device cpu is not on the expected device meta!',
        'hint: a tensor created inside your code sits on a fixed device (the CPU) while the inputs are elsewhere (here the `meta` device; on a GPU the same code fails): create tensors with device=x.device (torch.arange(n, device=x.device), zeros_like, x.new_ones(...)), or move them with .to(x.device); a tensor kept in a module belongs in register_buffer, so that module.to() moves it',
    ),
    '09.causal_tiles: the output cast to float64': (
        'output dtype: expected torch.float32, got torch.float64 (the values agree)',
        "hint: your result is float64 for float32 inputs: the output's dtype must follow the input's, and something in your code fixes it (dtype=torch.float64 or .double()): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
    ),
    "09.tiled_backward: dq's accumulator created on the CPU": (
        'raised RuntimeError: Function TiledAttentionBackward returned an invalid gradient at index 0 - expected device meta but got cpu',
        'hint: a tensor you create has a fixed device: torch.zeros/full/ones/empty/tensor without device= make it on the CPU, and it meets the input on another device (here `meta`; on a GPU, cuda): create it with device=x.device (and dtype=x.dtype), or with torch.zeros_like / full_like / x.new_zeros',
    ),
    '09.online_softmax: the running max created on the CPU': (
        'raised RuntimeError: Tensor on device meta is not on the expected device cpu!',
        'hint: a tensor you create has a fixed device: torch.zeros/full/ones/empty/tensor without device= make it on the CPU, and it meets the input on another device (here `meta`; on a GPU, cuda): create it with device=x.device (and dtype=x.dtype), or with torch.zeros_like / full_like / x.new_zeros',
    ),
    '09.tiled_forward: the block sizes ignored: one tile of all the scores': (
        'your forward pass held 98,816 bytes at its peak, 3.02 times one (q, k) score tensor (32,768 bytes): build scores one (block_q, block_k) tile at a time, never for all keys (or all queries) at once',
        'hint: build the scores one (block_q, block_k) tile at a time, never for all keys (or all queries) at once',
    ),
    '09.tiled_backward: the forward stores the probabilities for the backward pass': (
        "your forward pass keeps 34,048 bytes for the backward pass, 1.04 times one (q, k) score tensor (32,768 bytes): save only q, k, v, bias, mask, out and lse, and recompute each tile's weights in backward",
        'hint: save only q, k, v, bias, mask, out and lse for the backward pass (nothing of size q x k, also not as a list of tiles on ctx)',
    ),
    '09.tiled_backward: the backward recomputes all the weights at once': (
        'your backward pass held 136,704 bytes at its peak, 4.17 times one (q, k) score tensor (32,768 bytes): recompute the weights one tile at a time from q, k and lse, never all keys at once',
        'hint: recompute the weights one (block_q, block_k) tile at a time in backward',
    ),
    '09.causal_tiles: every key for every query block: the tiles above the diagonal computed and masked': (
        'your causal attention computed 4,096 scores for L = 64, more than L²/2 + L·block = 2,560: the tiles above the diagonal must never be computed (query block rows reads the keys up to rows.stop only)',
        "hint: for each query block rows: the keys 0 .. rows.stop (the tiles left of the diagonal and the diagonal one), the mask key j <= query i in the global indices of the sequence (i from rows.start, j from 0), then your tiled_attention; concatenate the blocks' outputs",
    ),
}
MUTANTS = [dataclasses.replace(m, exact=EXACT.get(m.id, ())) for m in MUTANTS]
VISIBLE_ONLY = [dataclasses.replace(m, exact=EXACT.get(m.id, ())) for m in VISIBLE_ONLY]
