def linear_attention(q, k, v, causal=True):
    """einsum, and the normaliser as the weights applied to a column of ones."""
    dtype = q.dtype
    work = torch.promote_types(dtype, torch.float32)
    phi_q, phi_k, v = F.elu(q.to(work)) + 1, F.elu(k.to(work)) + 1, v.to(work)
    weights = torch.einsum("...id,...jd->...ij", phi_q, phi_k)
    if causal:
        L = weights.shape[-1]
        weights = weights.masked_fill(
            ~torch.ones(L, L, dtype=torch.bool, device=q.device).tril(), 0.0)
    ones = torch.ones_like(v[..., :1])
    out = torch.einsum("...ij,...je->...ie", weights, v)
    return (out / torch.einsum("...ij,...jo->...io", weights, ones)).to(dtype)


def linear_attention_recurrent(q, k, v, state=None):
    """A token loop with einsum; the state made from the first token's product, each output
    written into a tensor made once (nothing of length L but the output)."""
    work = accumulation_dtype(q)
    if state is None:
        first = torch.einsum("...d,...e->...de", k[..., 0, :].to(work), v[..., 0, :].to(work))
        S, z = torch.zeros_like(first), torch.zeros_like(first[..., 0])
    else:
        S, z = state[0].to(work), state[1].to(work)
    out = torch.empty(*S.shape[:-2], q.shape[-2], v.shape[-1], dtype=work, device=q.device)
    for t in range(q.shape[-2]):
        q_t, k_t = F.elu(q[..., t, :].to(work)) + 1, F.elu(k[..., t, :].to(work)) + 1
        S = S + torch.einsum("...d,...e->...de", k_t, v[..., t, :].to(work))
        z = z + k_t
        out[..., t, :] = torch.einsum("...d,...de->...e", q_t, S) / \
            torch.einsum("...d,...d->...", q_t, z)[..., None]
    return out.to(q.dtype), (S, z)


def linear_attention_chunked(q, k, v, chunk=64):
    """Chunks cut with split, einsum, a chunk half the size asked for (the result does not
    depend on the chunk size), the outputs written into a tensor made once."""
    work = accumulation_dtype(q)
    size = max(1, chunk // 2)
    S = torch.einsum("...td,...te->...de", k[..., :0, :].to(work), v[..., :0, :].to(work))
    z = S[..., 0] * 0  # zeros (*, d)
    out = torch.empty(*S.shape[:-2], q.shape[-2], v.shape[-1], dtype=work, device=q.device)
    start = 0
    for q_c, k_c, v_c in zip(q.split(size, dim=-2), k.split(size, dim=-2), v.split(size, dim=-2)):
        q_c, k_c, v_c = F.elu(q_c.to(work)) + 1, F.elu(k_c.to(work)) + 1, v_c.to(work)
        n = q_c.shape[-2]
        causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        weights = torch.einsum("...id,...jd->...ij", q_c, k_c) * causal
        numerator = torch.einsum("...id,...de->...ie", q_c, S) + weights @ v_c
        normaliser = torch.einsum("...id,...d->...i", q_c, z) + weights.sum(dim=-1)
        out[..., start:start + n, :] = numerator / normaliser[..., None]
        S = S + torch.einsum("...td,...te->...de", k_c, v_c)
        z = z + k_c.sum(dim=-2)
        start += n
    return out.to(q.dtype)


def decayed_recurrent(q, k, v, log_a, state=None):
    """einsum, the decay as a multiplication of the state by exp(log_a), outputs stacked."""
    dtype, work = q.dtype, accumulation_dtype(q)
    q, k, v, a = q.to(work), k.to(work), v.to(work), log_a.to(work).exp()
    h = torch.zeros_like(torch.einsum("...d,...e->...de", k[..., 0, :], v[..., 0, :])) \
        if state is None else state.to(work)
    outputs = []
    for t in range(q.shape[-2]):
        h = h * a[..., t, None, None] + torch.einsum("...d,...e->...de", k[..., t, :], v[..., t, :])
        outputs.append(torch.einsum("...d,...de->...e", q[..., t, :], h))
    return torch.stack(outputs, dim=-2).to(dtype), h


def decayed_attention(q, k, v, log_a):
    """The decay matrix as Mamba-2's segsum: cumulative sums of the masked decays along each
    column (no difference of two large sums), -inf above the diagonal, then exp."""
    dtype, work = q.dtype, accumulation_dtype(q)
    q, k, v, log_a = q.to(work), k.to(work), v.to(work), log_a.to(work)
    L = log_a.shape[-1]
    below = torch.ones(L, L, dtype=torch.bool, device=q.device).tril(diagonal=-1)
    segsum = torch.cumsum(log_a[..., :, None].expand(*log_a.shape, L).masked_fill(~below, 0.0),
                          dim=-2)
    on_or_below = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
    decay = torch.exp(segsum.masked_fill(~on_or_below, float("-inf")))
    return torch.einsum("...ts,...ts,...se->...te", decay,
                        torch.einsum("...td,...sd->...ts", q, k), v).to(dtype)


def landmark_means(x, m, mask=None):
    """index_add of every real token into its segment, then a division by the counts."""
    if mask is None:
        mask = torch.ones_like(x[..., 0], dtype=torch.bool)
    flat_x, flat_mask = x.reshape(-1, *x.shape[-2:]), mask.reshape(-1, mask.shape[-1])
    rank = torch.cumsum(flat_mask.long(), dim=-1) - 1
    n = flat_mask.sum(dim=-1, keepdim=True).clamp_min(1)
    segment = torch.where(flat_mask, rank * m // n, m)  # padding into an extra slot, dropped
    sums = flat_x.new_zeros(flat_x.shape[0], m + 1, x.shape[-1])
    sums = sums.scatter_add(1, segment[..., None].expand_as(flat_x), flat_x)
    counts = flat_x.new_zeros(flat_x.shape[0], m + 1).scatter_add(
        1, segment, flat_mask.to(x.dtype))
    means = sums[:, :m] / counts[:, :m, None].clamp_min(1.0)
    return means.reshape(*x.shape[:-2], m, x.shape[-1])


def nystrom_attention(q, k, v, m, mask=None, inverse=iterative_pinv):
    """einsum, torch's masked softmax through a -inf bias."""
    dtype, work = q.dtype, accumulation_dtype(q)
    q, k, v = q.to(work), k.to(work), v.to(work)
    scale = 1 / q.shape[-1] ** 0.5
    q_l, k_l = landmark_means(q, m, mask), landmark_means(k, m, mask)
    f = torch.einsum("...ic,...jc->...ij", q, k_l).mul(scale).softmax(dim=-1)
    a = torch.einsum("...ic,...jc->...ij", q_l, k_l).mul(scale).softmax(dim=-1)
    scores = torch.einsum("...ic,...jc->...ij", q_l, k).mul(scale)
    if mask is not None:
        scores = scores + torch.zeros_like(mask, dtype=work).masked_fill(
            ~mask, float("-inf"))[..., None, :]
    return torch.einsum("...im,...mn,...nj,...je->...ie", f, inverse(a), scores.softmax(dim=-1),
                        v).to(dtype)
