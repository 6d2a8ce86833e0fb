# check: 09.tiled_forward


def tiled_attention_forward(q, k, v, bias=None, mask=None, block_q=64, block_k=64):
    """The running max, sum and accumulator created before the key loop (from -inf, 0 and 0, on
    q's device, in float32 at least) instead of from the first tile; the output zeros to start."""
    acc = accumulator_dtype(q.dtype)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                   *(t.shape[:-2] for t in (bias, mask) if t is not None))
    out = q.new_zeros(*batch, q.shape[-2], v.shape[-1])
    lse = q.new_zeros(*batch, q.shape[-2], dtype=acc)
    for rows in key_blocks(q.shape[-2], block_q):
        n = rows.stop - rows.start
        m = q.new_full((*batch, n, 1), float("-inf"), dtype=acc)
        l = q.new_zeros((*batch, n, 1), dtype=acc)
        total = q.new_zeros((*batch, n, v.shape[-1]), dtype=acc)
        for cols in key_blocks(k.shape[-2], block_k):
            s = scaled_scores(q[..., rows, :].to(acc), k[..., cols, :].to(acc))
            if bias is not None:
                s = s + tile(bias, rows, cols)
            if mask is not None:
                s = s.masked_fill(~tile(mask, rows, cols), float("-inf"))
            m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
            shift = m_new.masked_fill(m_new == float("-inf"), 0.0)
            p = torch.exp(s - shift)
            factor = torch.exp(m - shift)
            l = l * factor + p.sum(dim=-1, keepdim=True)
            total = total * factor + p @ v[..., cols, :].to(acc)
            m = m_new
        out[..., rows, :] = (total / l.clamp(min=torch.finfo(acc).tiny)).to(q.dtype)
        lse[..., rows] = (m.masked_fill(m == float("-inf"), 0.0) + torch.log(l)).squeeze(-1)
    return out, lse
