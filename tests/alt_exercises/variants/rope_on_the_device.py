# check: 07.rope


def apply_rope(x, positions=None, base=10000.0):
    """Positions and angles made on x's device and in x's dtype from the start."""
    L, c = x.shape[-2], x.shape[-1]
    half = c // 2
    if positions is None:
        positions = torch.arange(L, device=x.device)
    inv_freq = base ** (-torch.arange(half, device=x.device, dtype=torch.float64) * 2 / c)
    angle = positions.to(device=x.device, dtype=torch.float64)[:, None] * inv_freq
    angle = torch.cat([angle, angle], dim=-1)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * angle.cos().to(x.dtype) + rotated * angle.sin().to(x.dtype)
