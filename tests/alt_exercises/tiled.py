def online_softmax(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """The blocks read last to first; torch.where for the -inf guard; float32 (or float64)
    running values from torch.promote_types; one final exp(x - m) / l, cast back."""
    work = torch.promote_types(x.dtype, torch.float32)
    m = x.new_full((*x.shape[:-1], 1), float("-inf"), dtype=work)
    l = x.new_zeros((*x.shape[:-1], 1), dtype=work)
    for start in reversed(range(0, x.shape[-1], block_size)):
        block = x[..., start:start + block_size].to(work)
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        l = l * torch.exp(m - safe) + torch.exp(block - safe).sum(dim=-1, keepdim=True)
        m = m_new
    return (torch.exp(x.to(work) - m) / l).type_as(x)


def tiled_attention_forward(q, k, v, bias=None, mask=None, block_q: int = 64, block_k: int = 64):
    """Key tiles visited last to first, a running logsumexp (torch.logsumexp, torch.logaddexp)
    and an output kept normalised at every step, in float32 at least; the result written into a
    preallocated tensor."""
    work = torch.promote_types(q.dtype, torch.float32)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                   *(t.shape[:-2] for t in (bias, mask) if t is not None))
    L_q, L_k = q.shape[-2], k.shape[-2]
    out = q.new_zeros(*batch, L_q, v.shape[-1], dtype=work)
    lse = q.new_full((*batch, L_q), float("-inf"), dtype=work)
    for start_q in range(0, L_q, block_q):
        rows = slice(start_q, min(start_q + block_q, L_q))
        o = out[..., rows, :].clone()
        r = lse[..., rows].clone()
        for start_k in reversed(range(0, L_k, block_k)):
            cols = slice(start_k, min(start_k + block_k, L_k))
            s = torch.einsum("...qc,...kc->...qk", q[..., rows, :].to(work),
                             k[..., cols, :].to(work)) * q.shape[-1] ** -0.5
            if bias is not None:
                s = s + tile(bias, rows, cols)
            if mask is not None:
                s = torch.where(tile(mask, rows, cols), s, float("-inf"))
            r_new = torch.logaddexp(r, torch.logsumexp(s, dim=-1))
            finite = torch.isfinite(r_new)
            safe = torch.where(finite, r_new, 0.0).unsqueeze(-1)
            keep = torch.where(finite.unsqueeze(-1), torch.exp(r.unsqueeze(-1) - safe), 0.0)
            o = o * keep + torch.exp(s - safe) @ v[..., cols, :].to(work)
            r = r_new
        out[..., rows, :] = o
        lse[..., rows] = r
    return out.to(q.dtype), lse


class TiledAttention(torch.autograd.Function):
    """Query tiles outside, key tiles inside (the other block order), D computed per query tile,
    einsum throughout, the bias gradient of each tile reduced to the bias's own shape at once
    and added where that tile of the bias lies."""

    @staticmethod
    def forward(ctx, q, k, v, bias, mask, block_q, block_k):
        out, lse = tiled_attention_forward(q, k, v, bias, mask, block_q, block_k)
        ctx.save_for_backward(q, k, v, bias, mask, out, lse)
        ctx.block_q, ctx.block_k = block_q, block_k
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, bias, mask, out, lse = ctx.saved_tensors
        work = torch.promote_types(q.dtype, torch.float32)
        scale = q.shape[-1] ** -0.5
        batch = out.shape[:-2]
        dq = torch.zeros(*batch, *q.shape[-2:], dtype=work, device=q.device)
        dk = torch.zeros(*batch, *k.shape[-2:], dtype=work, device=k.device)
        dv = torch.zeros(*batch, *v.shape[-2:], dtype=work, device=v.device)
        dbias = None
        if bias is not None and ctx.needs_input_grad[3]:
            dbias = torch.zeros(bias.shape, dtype=work, device=bias.device)
        for start_q in range(0, q.shape[-2], ctx.block_q):
            rows = slice(start_q, min(start_q + ctx.block_q, q.shape[-2]))
            d_out = grad_out[..., rows, :].to(work)
            D = torch.einsum("...qc,...qc->...q", d_out, out[..., rows, :].to(work)).unsqueeze(-1)
            r = lse[..., rows]
            r = torch.where(torch.isinf(r), 0.0, r).unsqueeze(-1)
            q_tile = q[..., rows, :].to(work)
            for start_k in range(0, k.shape[-2], ctx.block_k):
                cols = slice(start_k, min(start_k + ctx.block_k, k.shape[-2]))
                k_tile, v_tile = k[..., cols, :].to(work), v[..., cols, :].to(work)
                s = torch.einsum("...qc,...kc->...qk", q_tile, k_tile) * scale
                if bias is not None:
                    s = s + tile(bias, rows, cols)
                if mask is not None:
                    s = torch.where(tile(mask, rows, cols), s, float("-inf"))
                p = torch.exp(s - r)
                dv[..., cols, :] += torch.einsum("...qk,...qc->...kc", p, d_out)
                ds = p * (torch.einsum("...qc,...kc->...qk", d_out, v_tile) - D)
                dq[..., rows, :] += torch.einsum("...qk,...kc->...qc", ds, k_tile) * scale
                dk[..., cols, :] += torch.einsum("...qk,...qc->...kc", ds, q_tile) * scale
                if dbias is not None:
                    where = (..., rows if bias.shape[-2] > 1 else slice(None),
                             cols if bias.shape[-1] > 1 else slice(None))
                    dbias[where] += ds.sum_to_size(dbias[where].shape)
        return (dq.sum_to_size(q.shape).to(q.dtype), dk.sum_to_size(k.shape).to(k.dtype),
                dv.sum_to_size(v.shape).to(v.dtype),
                None if dbias is None else dbias.to(bias.dtype), None, None, None)


def causal_tiled_attention(q, k, v, block: int = 64):
    """Query blocks last to first; the key range and the mask from one comparison of positions
    (j - i <= 0); the outputs put back in order at the end."""
    L = q.shape[-2]
    pieces = []
    for start in reversed(range(0, L, block)):
        stop = min(start + block, L)
        offsets = torch.arange(stop, device=q.device)[None, :] - \
            torch.arange(start, stop, device=q.device)[:, None]
        pieces.append(tiled_attention(q[..., start:stop, :], k[..., :stop, :], v[..., :stop, :],
                                      None, offsets <= 0, block, block))
    return torch.cat(pieces[::-1], dim=-2)
