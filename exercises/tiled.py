# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
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
    # Hint: start from m = -inf and l = 0 (dtype accumulator_dtype(x.dtype), x's device); per block:
    # Hint: m_new = max(m, block max); l = l * exp(m - m_new) + exp(block - m_new).sum(-1).
    # Hint: while a row has seen only -inf, m_new is -inf too: subtract 0 instead of -inf.
    raise NotImplementedError("lesson 09: write online_softmax in exercises/tiled.py")


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
    # Hint: for each query block: m, l and an output accumulator; for each key block: the tile's
    # Hint: scores (your scaled_scores on tiles cast to acc = accumulator_dtype(q.dtype), plus
    # Hint: tile(bias, rows, cols), masked to -inf), then the online update of m and l, and
    # Hint: acc_out = acc_out * exp(m - m_new) + exp(scores - m_new) @ v_tile (v_tile in acc too);
    # Hint: then write acc_out / l and m + log(l) into the query block's rows of out and lse.
    raise NotImplementedError("lesson 09: write tiled_attention_forward in exercises/tiled.py")


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
        # Hint: out, lse from your tiled_attention_forward; ctx.save_for_backward(q, k, v, bias,
        # Hint: mask, out, lse) and the block sizes on ctx: nothing of size q x k.
        raise NotImplementedError("lesson 09: write TiledAttention.forward in exercises/tiled.py")

    @staticmethod
    def backward(ctx, grad_out):
        # Hint: D = (grad_out * out).sum(-1); per tile: P = exp(scores - lse) (0 where masked),
        # Hint: dV += Pᵀ dO, dP = dO Vᵀ, dS = P * (dP - D), dQ += dS K / sqrt(c), dK += dSᵀ Q / sqrt(c),
        # Hint: dbias tile += dS summed over the axes the bias was broadcast along (bias's size);
        # Hint: accumulate in accumulator_dtype(q.dtype), return each gradient in its input's dtype.
        raise NotImplementedError("lesson 09: write TiledAttention.backward in exercises/tiled.py")


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
    # Hint: for rows in key_blocks(L, block): the keys 0 .. rows.stop (not beyond: those tiles lie
    # Hint: above the diagonal), the mask key j <= query i with i in range(rows.start, rows.stop)
    # Hint: and j in range(0, rows.stop) (global indices, device=q.device), then your
    # Hint: tiled_attention(q rows, k and v up to rows.stop, None, mask, block, block); concatenate.
    raise NotImplementedError("lesson 09: write causal_tiled_attention in exercises/tiled.py")


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
