def online_softmax(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """The blocks read last to first; torch.where for the -inf guard; one final exp(x - m) / l."""
    m = x.new_full((*x.shape[:-1], 1), float("-inf"))
    l = x.new_zeros((*x.shape[:-1], 1))
    for start in reversed(range(0, x.shape[-1], block_size)):
        block = x[..., start:start + block_size]
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
        l = l * torch.exp(m - safe) + torch.exp(block - safe).sum(dim=-1, keepdim=True)
        m = m_new
    return torch.exp(x - m) / l


def tiled_attention_forward(q, k, v, bias=None, mask=None, block_q: int = 64, block_k: int = 64):
    """Key tiles visited last to first, a running logsumexp (torch.logsumexp, torch.logaddexp)
    and an output kept normalised at every step; the result written into a preallocated tensor."""
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2],
                                   *(t.shape[:-2] for t in (bias, mask) if t is not None))
    L_q, L_k = q.shape[-2], k.shape[-2]
    out = q.new_zeros(*batch, L_q, v.shape[-1])
    lse = q.new_full((*batch, L_q), float("-inf"))
    for start_q in range(0, L_q, block_q):
        rows = slice(start_q, min(start_q + block_q, L_q))
        o = out[..., rows, :].clone()
        r = lse[..., rows].clone()
        for start_k in reversed(range(0, L_k, block_k)):
            cols = slice(start_k, min(start_k + block_k, L_k))
            s = torch.einsum("...qc,...kc->...qk", q[..., rows, :], k[..., cols, :]) * q.shape[-1] ** -0.5
            if bias is not None:
                s = s + tile(bias, rows, cols)
            if mask is not None:
                s = torch.where(tile(mask, rows, cols), s, float("-inf"))
            r_new = torch.logaddexp(r, torch.logsumexp(s, dim=-1))
            finite = torch.isfinite(r_new)
            safe = torch.where(finite, r_new, 0.0).unsqueeze(-1)
            keep = torch.where(finite.unsqueeze(-1), torch.exp(r.unsqueeze(-1) - safe), 0.0)
            o = o * keep + torch.exp(s - safe) @ v[..., cols, :]
            r = r_new
        out[..., rows, :] = o
        lse[..., rows] = r
    return out, lse


class TiledAttention(torch.autograd.Function):
    """Query tiles outside, key tiles inside (the other block order), D computed per query tile,
    einsum throughout, the bias gradient reduced with torch's sum_to_size at the end."""

    @staticmethod
    def forward(ctx, q, k, v, bias, mask, block_q, block_k):
        out, lse = tiled_attention_forward(q, k, v, bias, mask, block_q, block_k)
        ctx.save_for_backward(q, k, v, bias, mask, out, lse)
        ctx.block_q, ctx.block_k = block_q, block_k
        return out

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, bias, mask, out, lse = ctx.saved_tensors
        scale = q.shape[-1] ** -0.5
        batch = out.shape[:-2]
        dq = torch.zeros(*batch, *q.shape[-2:], dtype=q.dtype, device=q.device)
        dk = torch.zeros(*batch, *k.shape[-2:], dtype=k.dtype, device=k.device)
        dv = torch.zeros(*batch, *v.shape[-2:], dtype=v.dtype, device=v.device)
        dbias = None
        if bias is not None and ctx.needs_input_grad[3]:
            dbias = torch.zeros(*batch, *bias.shape[-2:], dtype=bias.dtype, device=bias.device)
        for start_q in range(0, q.shape[-2], ctx.block_q):
            rows = slice(start_q, min(start_q + ctx.block_q, q.shape[-2]))
            d_out = grad_out[..., rows, :]
            D = torch.einsum("...qc,...qc->...q", d_out, out[..., rows, :]).unsqueeze(-1)
            r = lse[..., rows]
            r = torch.where(torch.isinf(r), 0.0, r).unsqueeze(-1)
            for start_k in range(0, k.shape[-2], ctx.block_k):
                cols = slice(start_k, min(start_k + ctx.block_k, k.shape[-2]))
                s = torch.einsum("...qc,...kc->...qk", q[..., rows, :], k[..., cols, :]) * scale
                if bias is not None:
                    s = s + tile(bias, rows, cols)
                if mask is not None:
                    s = torch.where(tile(mask, rows, cols), s, float("-inf"))
                p = torch.exp(s - r)
                dv[..., cols, :] += torch.einsum("...qk,...qc->...kc", p, d_out)
                ds = p * (torch.einsum("...qc,...kc->...qk", d_out, v[..., cols, :]) - D)
                dq[..., rows, :] += torch.einsum("...qk,...kc->...qc", ds, k[..., cols, :]) * scale
                dk[..., cols, :] += torch.einsum("...qk,...qc->...kc", ds, q[..., rows, :]) * scale
                if dbias is not None:
                    if bias.shape[-2] == 1 or bias.shape[-1] == 1:
                        ds = ds.sum(dim=[d for d in (-2, -1) if bias.shape[d] == 1], keepdim=True)
                    if bias.shape[-2] == 1 and bias.shape[-1] == 1:
                        dbias += ds
                    elif bias.shape[-2] == 1:
                        dbias[..., :, cols] += ds
                    elif bias.shape[-1] == 1:
                        dbias[..., rows, :] += ds
                    else:
                        dbias[..., rows, cols] += ds
        if dbias is not None:
            dbias = dbias.sum_to_size(bias.shape)
        return (dq.sum_to_size(q.shape), dk.sum_to_size(k.shape), dv.sum_to_size(v.shape),
                dbias, None, None, None)
