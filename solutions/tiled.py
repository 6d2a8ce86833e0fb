"""Lesson 09: attention that never holds the score matrix (online softmax, tiles, recomputation).

Plain attention builds scores (*, q, k), a number for every query-key pair, then softmax, then
weights @ v. FlashAttention (Dao et al. 2022, arXiv 2205.14135; FlashAttention-2, Dao 2023,
arXiv 2307.08691) computes the same output a tile at a time: block_q queries against block_k keys.
Two facts make it exact:

- **online softmax** (Milakov & Gimelshein 2018, arXiv 1805.02867): the softmax denominator of a
  row can be accumulated block by block, with a running maximum m and a running sum l; when a
  later block raises the maximum from m to m', the sum so far is rescaled by exp(m - m') (and so
  is the output accumulated so far);
- **recomputation**: the backward pass needs the weights P = softmax(scores), but they are
  cheap to recompute tile by tile from q, k and the logsumexp of each row (lse = m + log l),
  so the forward pass keeps only the output and one number per query.

Memory then grows like the inputs (linearly in L), not like the scores (L²); the compute stays
quadratic. The running max, sum and output accumulator are float32 at least, whatever the input
dtype (`accumulator_dtype`): bfloat16 keeps 8 bits of mantissa, too few for a sum over many tiles.
The helpers `key_blocks`, `tile` and `accumulator_dtype` are given; the exercises are
`online_softmax`, `tiled_attention_forward`, `TiledAttention` and `causal_tiled_attention`.
"""
import torch

from .softmax import scaled_scores


def key_blocks(n: int, block: int) -> list[slice]:
    """Consecutive slices of length `block` covering range(n); the last one may be shorter.

    key_blocks(10, 4) -> [slice(0, 4), slice(4, 8), slice(8, 10)]
    """
    if block < 1:
        raise ValueError(f"a block holds at least one entry, not {block}")
    return [slice(start, min(start + block, n)) for start in range(0, n, block)]


def tile(t: torch.Tensor, rows: slice, cols: slice) -> torch.Tensor:
    """The (rows, cols) tile of a bias or mask that broadcasts against scores (*, q, k).

    t: (*, q or 1, k or 1). A size-1 query or key axis broadcasts: it is kept whole, so the tile
    still broadcasts against the scores of the tile. Returns a view (nothing is copied).
    """
    rows = rows if t.shape[-2] > 1 else slice(None)
    cols = cols if t.shape[-1] > 1 else slice(None)
    return t[..., rows, cols]


def accumulator_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the running max, sum and output accumulator for inputs of `dtype`: float32
    for bfloat16 and float16 (as FlashAttention accumulates on the chip), the input's own dtype
    for float32 and float64."""
    return torch.promote_types(dtype, torch.float32)


def online_softmax(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """softmax(x) along the last axis, reading each row `block_size` entries at a time.

    x: (*, n); entries may be -inf (masked), as long as every row has a finite one.
    returns (*, n) in x's dtype, equal to stable_softmax(x, dim=-1) (lesson 01).

    Pass 1 keeps two numbers per row: m, the largest entry seen so far, and l, the sum of
    exp(entry - m) over the entries seen so far, both in accumulator_dtype(x.dtype). When a block
    raises the maximum from m to m', every term already in l was computed against the old m:
    multiply l by exp(m - m'), since exp(a - m') = exp(a - m) · exp(m - m') (the rescaling
    identity), and add the block's own exp(entry - m'). Pass 2 writes exp(x - m) / l block by block.
    """
    # BEGIN SOLUTION lesson 09
    # Hint: start from m = -inf and l = 0 (dtype accumulator_dtype(x.dtype), x's device); per block:
    # Hint: m_new = max(m, block max); l = l * exp(m - m_new) + exp(block - m_new).sum(-1).
    # Hint: while a row has seen only -inf, m_new is -inf too: subtract 0 instead of -inf.
    acc = accumulator_dtype(x.dtype)
    m = torch.full_like(x[..., :1], float("-inf"), dtype=acc)
    l = torch.zeros_like(x[..., :1], dtype=acc)
    for cols in key_blocks(x.shape[-1], block_size):
        block = x[..., cols].to(acc)
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)  # exp(-inf - 0) = 0, not NaN
        l = l * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.cat([(torch.exp(x[..., cols].to(acc) - m) / l).to(x.dtype)
                      for cols in key_blocks(x.shape[-1], block_size)], dim=-1)
    # END SOLUTION


def tiled_attention_forward(q, k, v, bias=None, mask=None, block_q: int = 64, block_k: int = 64):
    """Attention softmax(q kᵀ / sqrt(c) + bias, masked) v, one (block_q, block_k) tile at a time.

    q: (*, q, c), k: (*, k, c), v: (*, k, c_v); the leading axes broadcast.
    bias: optional, broadcastable to (*, q, k); added to the scaled scores of each tile.
    mask: optional bool, broadcastable to (*, q, k); False marks keys a query must not see.
    returns (out, lse):
        out (*, q, c_v) in q's dtype: lesson 02's scaled_dot_product_attention(q, k, v, bias,
            mask); a query whose scores are all -inf after bias and mask (it may see no key)
            gets zeros;
        lse (*, q) in accumulator_dtype(q.dtype): the logsumexp of each query's scores over the
            keys it sees, log sum_j exp(score_ij); -inf for a query that sees no key.
    Holds a few (*, block_q, block_k) tiles at a time (scores, weights), never (*, q, k); the
    running max, sum and output accumulator are in accumulator_dtype(q.dtype).
    """
    # BEGIN SOLUTION lesson 09
    # Hint: for each query block: m, l and an output accumulator; for each key block: the tile's
    # Hint: scores (your scaled_scores on tiles cast to acc = accumulator_dtype(q.dtype), plus
    # Hint: tile(bias, rows, cols), masked to -inf), then the online update of m and l, and
    # Hint: acc_out = acc_out * exp(m - m_new) + exp(scores - m_new) @ v_tile (v_tile in acc too);
    # Hint: then write acc_out / l and m + log(l) into the query block's rows of out and lse.
    acc = accumulator_dtype(q.dtype)
    out = lse = None
    for rows in key_blocks(q.shape[-2], block_q):
        q_tile = q[..., rows, :].to(acc)
        m = l = acc_out = None
        for cols in key_blocks(k.shape[-2], block_k):
            scores = scaled_scores(q_tile, k[..., cols, :].to(acc))  # (*, block_q, block_k)
            if bias is not None:
                scores = scores + tile(bias, rows, cols)
            if mask is not None:
                scores = scores.masked_fill(~tile(mask, rows, cols), float("-inf"))
            tile_max = scores.amax(dim=-1, keepdim=True)
            m_new = tile_max if m is None else torch.maximum(m, tile_max)
            # a row that has seen only masked keys keeps m = -inf: shift by 0 instead
            shift = m_new.masked_fill(m_new == float("-inf"), 0.0)
            p = torch.exp(scores - shift)
            p_v = p @ v[..., cols, :].to(acc)
            if m is None:
                l, acc_out = p.sum(dim=-1, keepdim=True), p_v
            else:
                rescale = torch.exp(m - shift)  # the old terms were computed against m
                l = l * rescale + p.sum(dim=-1, keepdim=True)
                acc_out = acc_out * rescale + p_v
            m = m_new
        # a query that saw no key has l = 0 and acc_out = 0: out 0, lse = log 0 = -inf
        block_out = (acc_out / l.masked_fill(l == 0, 1.0)).to(q.dtype)
        block_lse = (m.masked_fill(m == float("-inf"), 0.0) + torch.log(l)).squeeze(-1)
        if out is None:  # the first block tells the shape of the (broadcast) leading axes
            out = block_out.new_empty(*block_out.shape[:-2], q.shape[-2], block_out.shape[-1])
            lse = block_lse.new_empty(*block_lse.shape[:-1], q.shape[-2])
        out[..., rows, :] = block_out  # written once, block by block
        lse[..., rows] = block_lse
    return out, lse
    # END SOLUTION


class TiledAttention(torch.autograd.Function):
    """Tiled attention whose backward recomputes each tile's weights (FlashAttention-2's
    Algorithm 2, with a bias gradient as DS4Sci's Evoformer kernel computes it): forward saves
    the inputs, the output and the logsumexp, nothing of size q x k.

    apply(q, k, v, bias, mask, block_q, block_k) -> out; shapes as in `tiled_attention_forward`.
    backward returns the gradients of q, k, v and bias, each with its input's shape and dtype (a
    bias that was broadcast gets the sum over the axes it was broadcast along, accumulated tile
    by tile at the bias's own size, never at the scores' size); none for the mask.
    """

    @staticmethod
    def forward(ctx, q, k, v, bias, mask, block_q, block_k):
        # BEGIN SOLUTION lesson 09
        # Hint: out, lse from your tiled_attention_forward; ctx.save_for_backward(q, k, v, bias,
        # Hint: mask, out, lse) and the block sizes on ctx: nothing of size q x k.
        out, lse = tiled_attention_forward(q, k, v, bias, mask, block_q, block_k)
        ctx.save_for_backward(q, k, v, bias, mask, out, lse)
        ctx.blocks = (block_q, block_k)
        return out
        # END SOLUTION

    @staticmethod
    def backward(ctx, grad_out):
        # BEGIN SOLUTION lesson 09
        # Hint: D = (grad_out * out).sum(-1); per tile: P = exp(scores - lse) (0 where masked),
        # Hint: dV += Pᵀ dO, dP = dO Vᵀ, dS = P * (dP - D), dQ += dS K / sqrt(c), dK += dSᵀ Q / sqrt(c),
        # Hint: dbias tile += dS summed over the axes the bias was broadcast along (bias's size);
        # Hint: accumulate in accumulator_dtype(q.dtype), return each gradient in its input's dtype.
        q, k, v, bias, mask, out, lse = ctx.saved_tensors
        block_q, block_k = ctx.blocks
        acc = accumulator_dtype(q.dtype)
        scale = q.shape[-1] ** -0.5
        batch = out.shape[:-2]  # the leading axes of q, k, v, bias and mask, broadcast
        dq = q.new_zeros(*batch, *q.shape[-2:], dtype=acc)
        dk = k.new_zeros(*batch, *k.shape[-2:], dtype=acc)
        dv = v.new_zeros(*batch, *v.shape[-2:], dtype=acc)
        need_dbias = bias is not None and ctx.needs_input_grad[3]
        dbias = torch.zeros_like(bias, dtype=acc) if need_dbias else None  # the bias's size
        D = (grad_out.to(acc) * out.to(acc)).sum(dim=-1, keepdim=True)  # (*, q, 1): rowsum(dO * O)
        # a query that sees no key has lse = -inf; its weights are all 0 (scores are -inf too)
        lse = lse.masked_fill(lse == float("-inf"), 0.0).unsqueeze(-1)
        for cols in key_blocks(k.shape[-2], block_k):
            k_tile, v_tile = k[..., cols, :].to(acc), v[..., cols, :].to(acc)
            for rows in key_blocks(q.shape[-2], block_q):
                q_tile = q[..., rows, :].to(acc)
                scores = scaled_scores(q_tile, k_tile)
                if bias is not None:
                    scores = scores + tile(bias, rows, cols)
                if mask is not None:
                    scores = scores.masked_fill(~tile(mask, rows, cols), float("-inf"))
                p = torch.exp(scores - lse[..., rows, :])  # this tile's weights, recomputed
                d_out = grad_out[..., rows, :].to(acc)
                dv[..., cols, :] += p.transpose(-2, -1) @ d_out
                d_scores = p * (d_out @ v_tile.transpose(-2, -1) - D[..., rows, :])
                dq[..., rows, :] += d_scores @ k_tile * scale
                dk[..., cols, :] += d_scores.transpose(-2, -1) @ q_tile * scale
                if dbias is not None:
                    bias_tile = tile(dbias, rows, cols)
                    bias_tile += d_scores.sum_to_size(bias_tile.shape)
        return (dq.sum_to_size(q.shape).to(q.dtype), dk.sum_to_size(k.shape).to(k.dtype),
                dv.sum_to_size(v.shape).to(v.dtype),
                None if dbias is None else dbias.to(bias.dtype), None, None, None)
        # END SOLUTION


def tiled_attention(q, k, v, bias=None, mask=None, block_q: int = 64, block_k: int = 64):
    """Differentiable tiled attention: the output of `tiled_attention_forward`, with the
    recomputing backward of `TiledAttention`. Shapes as in `tiled_attention_forward`."""
    return TiledAttention.apply(q, k, v, bias, mask, block_q, block_k)


def causal_tiled_attention(q, k, v, block: int = 64):
    """Causal self-attention (query i sees the keys j <= i) that never computes a tile above the
    diagonal, forward or backward.

    q, k, v: (*, L, c), (*, L, c), (*, L, c_v): as many queries as keys, leading axes broadcast.
    returns out (*, L, c_v), differentiable: each query block calls your `tiled_attention` on the
    keys up to the end of that block, so with tiles of `block` x `block` the key blocks it visits
    are those left of the diagonal and the diagonal one, about L²/2 + L·block/2 scores of L².
    The mask of a query block, in the global indices of the whole sequence (key j <= query i),
    is False only inside its diagonal tile.
    """
    # BEGIN SOLUTION lesson 09
    # Hint: for rows in key_blocks(L, block): the keys 0 .. rows.stop (not beyond: those tiles lie
    # Hint: above the diagonal), the mask key j <= query i with i in range(rows.start, rows.stop)
    # Hint: and j in range(0, rows.stop) (global indices, device=q.device), then your
    # Hint: tiled_attention(q rows, k and v up to rows.stop, None, mask, block, block); concatenate.
    outputs = []
    for rows in key_blocks(q.shape[-2], block):
        keys = slice(0, rows.stop)
        i = torch.arange(rows.start, rows.stop, device=q.device)[:, None]
        j = torch.arange(rows.stop, device=q.device)[None, :]
        outputs.append(tiled_attention(q[..., rows, :], k[..., keys, :], v[..., keys, :], None,
                                       j <= i, block, block))
    return torch.cat(outputs, dim=-2)
    # END SOLUTION


def band_mask(rows: slice, cols: slice, window: int, device=None) -> torch.Tensor:
    """(len(rows), len(cols)) bool: True where |i - j| <= window for query i, key j (sliding
    window attention, in both directions), in the global indices of the sequence."""
    i = torch.arange(rows.start, rows.stop, device=device)[:, None]
    j = torch.arange(cols.start, cols.stop, device=device)[None, :]
    return (i - j).abs() <= window


def band_keys(rows: slice, window: int, block: int, L: int) -> slice:
    """The keys that query block `rows` reads under a window: those within `window` of one of its
    queries, widened at both ends to whole key blocks of the grid 0, block, 2·block, ...
    (FlashAttention-2 rounds both ends the same way), so that every tile read is a tile of the
    grid and the key blocks wholly outside the band are skipped."""
    first = max(rows.start - window, 0) // block * block
    last = min(-(-(rows.stop + window) // block) * block, L)
    return slice(first, last)


def sliding_window_attention(q, k, v, window: int, block: int = 64):
    """Attention in which query i sees only keys j with |i - j| <= window ("route two"),
    visiting only the key tiles that meet the band ("route one" within it).

    q, k, v: (*, L, c) (self-attention, L queries and L keys). returns (out, tiles):
    out (*, L, c_v), and the number of (query block, key block) tiles computed.
    Each query block calls your tiled_attention_forward on the keys `band_keys` gives, with the
    band's mask for that slice only: per query block B + 2·ceil(window / B)·B keys at most,
    so work and memory grow like L·(B + 2·ceil(window / B)·B), not L².
    """
    L = q.shape[-2]
    outputs, tiles = [], 0
    for rows in key_blocks(L, block):
        cols = band_keys(rows, window, block, L)
        mask = band_mask(rows, cols, window, device=q.device)
        out, _ = tiled_attention_forward(q[..., rows, :], k[..., cols, :], v[..., cols, :],
                                         mask=mask, block_q=block, block_k=block)
        outputs.append(out)
        tiles += len(key_blocks(cols.stop - cols.start, block))
    return torch.cat(outputs, dim=-2), tiles
