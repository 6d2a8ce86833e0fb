def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """PyTorch's own softmax (stable too)."""
    return torch.softmax(x, dim=dim)


def scaled_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """einsum scores, multiplied by 1/sqrt(c) rather than divided by sqrt(c)."""
    return torch.einsum("...qc,...kc->...qk", q, k) * q.shape[-1] ** -0.5
