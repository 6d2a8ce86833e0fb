# check: 01.stable_softmax


def stable_softmax(x, dim=-1):
    """exp(x - logsumexp(x)): stable, exact to float64's rounding, the input's dtype kept."""
    return torch.exp(x - torch.logsumexp(x, dim=dim, keepdim=True))
