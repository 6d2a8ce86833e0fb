# check: 10.linear_chunked


def linear_attention_chunked(q, k, v, chunk=64):
    """A fixed chunk of 16 whatever is asked (the output does not depend on the chunk size), and
    the inter-chunk state read from a cumulative sum over chunk states taken before the chunk."""
    work = accumulation_dtype(q)
    phi_q, phi_k, v = feature_map(q.to(work)), feature_map(k.to(work)), v.to(work)
    outputs = []
    S = (phi_k[..., :0, :].transpose(-2, -1) @ v[..., :0, :])
    z = phi_k[..., :0, :].sum(dim=-2)
    for rows in key_blocks(q.shape[-2], 16):
        q_c, k_c, v_c = phi_q[..., rows, :], phi_k[..., rows, :], v[..., rows, :]
        weights = (q_c @ k_c.transpose(-2, -1)).tril()
        out = (q_c @ S + weights @ v_c) / ((q_c * z[..., None, :]).sum(-1, keepdim=True)
                                           + weights.sum(-1, keepdim=True))
        outputs.append(out)
        S, z = S + k_c.transpose(-2, -1) @ v_c, z + k_c.sum(dim=-2)
    return torch.cat(outputs, dim=-2).to(q.dtype)
