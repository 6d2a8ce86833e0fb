# check: 00.batched_dot


def batched_dot(a, b):
    """Accumulated in float64, then returned in the inputs' own dtype."""
    dtype = torch.promote_types(a.dtype, b.dtype)
    return (a.double() * b.double()).sum(dim=-1).to(dtype)
