def batched_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """einsum over the last axis; the ellipsis broadcasts the leading axes."""
    return torch.einsum("...i,...i->...", a, b)
