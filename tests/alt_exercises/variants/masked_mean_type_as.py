# check: 05.masked_mean


def masked_mean(x, mask, dim):
    """The mask made x's dtype with type_as; the empty slice guarded by where, after a clamp
    (so that no 0/0 is ever computed, and its gradient stays finite)."""
    if mask is None:
        return x.mean(dim=dim)
    weights = mask.unsqueeze(-1).type_as(x)
    count = weights.sum(dim=dim)
    total = (x * weights).sum(dim=dim)
    return torch.where(count > 0, total / count.clamp_min(1), torch.zeros_like(total))
