# check: 01.stable_softmax


def stable_softmax(x, dim=-1):
    """The max through x.max(dim=...).values, the sum through torch.sum."""
    shifted = x - x.max(dim=dim, keepdim=True).values
    exponentials = torch.exp(shifted)
    return exponentials / torch.sum(exponentials, dim=dim, keepdim=True)
