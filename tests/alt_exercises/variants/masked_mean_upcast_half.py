# check: 05.masked_mean


def masked_mean(x, mask, dim):
    """bfloat16 sums accumulated in float32, the mean cast back to x's dtype."""
    if mask is None:
        return x.mean(dim=dim)
    work = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    weights = mask.unsqueeze(-1).to(work)
    total = (x.to(work) * weights).sum(dim=dim)
    return (total / weights.sum(dim=dim).clamp_min(1.0)).to(x.dtype)
