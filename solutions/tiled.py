"""Lesson 09: attention that never holds the score matrix (online softmax, tiles, recomputation).

Plain attention builds scores (*, q, k), a number for every query-key pair, then softmax, then
weights @ v. FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023) computes the same output
a tile at a time: block_q queries against block_k keys. Two facts make it exact:

- **online softmax**: the softmax denominator of a row can be accumulated block by block, with a
  running maximum m and a running sum l; when a later block raises the maximum from m to m', the
  sum so far is rescaled by exp(m - m') (and so is the output accumulated so far);
- **recomputation**: the backward pass needs the weights P = softmax(scores), but they are
  cheap to recompute tile by tile from q, k and the logsumexp of each row (lse = m + log l),
  so the forward pass keeps only the output and one number per query.

Memory then grows like the inputs (linearly in L), not like the scores (L²); the compute stays
quadratic. The helpers `key_blocks` and `tile` are given; the exercises are `online_softmax`,
`tiled_attention_forward` and `TiledAttention`.
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


def online_softmax(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """softmax(x) along the last axis, reading each row `block_size` entries at a time.

    x: (*, n); entries may be -inf (masked), as long as every row has a finite one.
    returns (*, n), equal to stable_softmax(x, dim=-1) (lesson 01).

    Pass 1 keeps two numbers per row: m, the largest entry seen so far, and l, the sum of
    exp(entry - m) over the entries seen so far. When a block raises the maximum from m to m',
    every term already in l was computed against the old m: multiply l by exp(m - m'), since
    exp(a - m') = exp(a - m) · exp(m - m') (the rescaling identity), and add the block's own
    exp(entry - m'). Pass 2 writes exp(x - m) / l block by block.
    """
    # BEGIN SOLUTION lesson 09
    # Hint: start from m = -inf and l = 0 (with x's dtype and device); per block:
    # Hint: m_new = max(m, block max); l = l * exp(m - m_new) + exp(block - m_new).sum(-1).
    # Hint: while a row has seen only -inf, m_new is -inf too: subtract 0 instead of -inf.
    m = torch.full_like(x[..., :1], float("-inf"))
    l = torch.zeros_like(x[..., :1])
    for cols in key_blocks(x.shape[-1], block_size):
        block = x[..., cols]
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        shift = m_new.masked_fill(m_new == float("-inf"), 0.0)  # exp(-inf - 0) = 0, not NaN
        l = l * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.cat([torch.exp(x[..., cols] - m) / l
                      for cols in key_blocks(x.shape[-1], block_size)], dim=-1)
    # END SOLUTION


def tiled_attention_forward(q, k, v, bias=None, mask=None, block_q: int = 64, block_k: int = 64):
    """Attention softmax(q kᵀ / sqrt(c) + bias, masked) v, one (block_q, block_k) tile at a time.

    q: (*, q, c), k: (*, k, c), v: (*, k, c_v); the leading axes broadcast.
    bias: optional, broadcastable to (*, q, k); added to the scaled scores of each tile.
    mask: optional bool, broadcastable to (*, q, k); False marks keys a query must not see.
    returns (out, lse):
        out (*, q, c_v): lesson 02's scaled_dot_product_attention(q, k, v, bias, mask); a query
            that may see no key gets zeros (as in lesson 02);
        lse (*, q): the logsumexp of each query's scores over the keys it sees,
            log sum_j exp(score_ij); -inf for a query that sees no key.
    Never holds more than one tile of scores: (*, block_q, block_k).
    """
    # BEGIN SOLUTION lesson 09
    # Hint: for each query block: m, l and an output accumulator; for each key block: the tile's
    # Hint: scores (your scaled_scores + tile(bias, rows, cols), masked to -inf), then the online
    # Hint: update of m and l, and acc = acc * exp(m - m_new) + exp(scores - m_new) @ v_tile;
    # Hint: then write acc / l and m + log(l) into the query block's rows of out and lse.
    out = lse = None
    for rows in key_blocks(q.shape[-2], block_q):
        q_tile = q[..., rows, :]
        m = l = acc = None
        for cols in key_blocks(k.shape[-2], block_k):
            scores = scaled_scores(q_tile, k[..., cols, :])  # (*, block_q, block_k)
            if bias is not None:
                scores = scores + tile(bias, rows, cols)
            if mask is not None:
                scores = scores.masked_fill(~tile(mask, rows, cols), float("-inf"))
            tile_max = scores.amax(dim=-1, keepdim=True)
            m_new = tile_max if m is None else torch.maximum(m, tile_max)
            # a row that has seen only masked keys keeps m = -inf: shift by 0 instead
            shift = m_new.masked_fill(m_new == float("-inf"), 0.0)
            p = torch.exp(scores - shift)
            p_v = p @ v[..., cols, :]
            if m is None:
                l, acc = p.sum(dim=-1, keepdim=True), p_v
            else:
                rescale = torch.exp(m - shift)  # the old terms were computed against m
                l = l * rescale + p.sum(dim=-1, keepdim=True)
                acc = acc * rescale + p_v
            m = m_new
        # a query that saw no key has l = 0 and acc = 0: out 0, lse = log 0 = -inf
        block_out = acc / l.masked_fill(l == 0, 1.0)
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
    Algorithm 2): forward saves the inputs, the output and the logsumexp, nothing of size q x k.

    apply(q, k, v, bias, mask, block_q, block_k) -> out; shapes as in `tiled_attention_forward`.
    backward returns the gradients of q, k, v and bias, each with its input's shape (a bias that
    was broadcast gets the sum over the axes it was broadcast along); none for the mask.
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
        # Hint: dbias tile = dS summed over the axes the bias was broadcast along.
        q, k, v, bias, mask, out, lse = ctx.saved_tensors
        block_q, block_k = ctx.blocks
        scale = q.shape[-1] ** -0.5
        batch = out.shape[:-2]  # the leading axes of q, k, v, bias and mask, broadcast
        dq = q.new_zeros(*batch, *q.shape[-2:])
        dk = k.new_zeros(*batch, *k.shape[-2:])
        dv = v.new_zeros(*batch, *v.shape[-2:])
        dbias = torch.zeros_like(bias) if bias is not None and ctx.needs_input_grad[3] else None
        D = (grad_out * out).sum(dim=-1, keepdim=True)  # (*, q, 1): rowsum(dO * O)
        # a query that sees no key has lse = -inf; its weights are all 0 (scores are -inf too)
        lse = lse.masked_fill(lse == float("-inf"), 0.0).unsqueeze(-1)
        for cols in key_blocks(k.shape[-2], block_k):
            k_tile, v_tile = k[..., cols, :], v[..., cols, :]
            for rows in key_blocks(q.shape[-2], block_q):
                scores = scaled_scores(q[..., rows, :], k_tile)
                if bias is not None:
                    scores = scores + tile(bias, rows, cols)
                if mask is not None:
                    scores = scores.masked_fill(~tile(mask, rows, cols), float("-inf"))
                p = torch.exp(scores - lse[..., rows, :])  # this tile's weights, recomputed
                d_out = grad_out[..., rows, :]
                dv[..., cols, :] += p.transpose(-2, -1) @ d_out
                d_scores = p * (d_out @ v_tile.transpose(-2, -1) - D[..., rows, :])
                dq[..., rows, :] += d_scores @ k_tile * scale
                dk[..., cols, :] += d_scores.transpose(-2, -1) @ q[..., rows, :] * scale
                if dbias is not None:
                    bias_tile = tile(dbias, rows, cols)
                    bias_tile += d_scores.sum_to_size(bias_tile.shape)
        return (dq.sum_to_size(q.shape), dk.sum_to_size(k.shape), dv.sum_to_size(v.shape),
                dbias, None, None, None)
        # END SOLUTION


def tiled_attention(q, k, v, bias=None, mask=None, block_q: int = 64, block_k: int = 64):
    """Differentiable tiled attention: the output of `tiled_attention_forward`, with the
    recomputing backward of `TiledAttention`. Shapes as in `tiled_attention_forward`."""
    return TiledAttention.apply(q, k, v, bias, mask, block_q, block_k)


def band_mask(rows: slice, cols: slice, window: int, device=None) -> torch.Tensor:
    """(len(rows), len(cols)) bool: True where |i - j| <= window for query i, key j (sliding
    window attention, in both directions)."""
    i = torch.arange(rows.start, rows.stop, device=device)[:, None]
    j = torch.arange(cols.start, cols.stop, device=device)[None, :]
    return (i - j).abs() <= window


def sliding_window_attention(q, k, v, window: int, block: int = 64):
    """Attention in which query i sees only keys j with |i - j| <= window ("route two"),
    visiting only the key tiles that meet the band ("route one" within it).

    q, k, v: (*, L, c) (self-attention, L queries and L keys). returns (out, visited):
    out (*, L, c_v), and the number of (query block, key block) tiles computed.
    Each query block calls your tiled_attention_forward on the keys its band reaches, with the
    band's mask for that slice only: work and memory grow like L * (block + 2 window), not L².
    """
    L = q.shape[-2]
    outputs, visited = [], 0
    for rows in key_blocks(L, block):
        # keys within the window of some query of this block, widened to whole key blocks
        first = max(rows.start - window, 0) // block * block
        last = min(rows.stop + window, L)
        cols = slice(first, last)
        mask = band_mask(rows, cols, window, device=q.device)
        out, _ = tiled_attention_forward(q[..., rows, :], k[..., cols, :], v[..., cols, :],
                                         mask=mask, block_q=block, block_k=block)
        outputs.append(out)
        visited += len(key_blocks(last - first, block))
    return torch.cat(outputs, dim=-2), visited
