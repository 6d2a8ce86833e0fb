# check: 09.online_softmax


def online_softmax(x, block_size):
    """The running max and sum kept in float64 whatever x's dtype (more than the float32 the
    lesson asks for), the result cast back to x's dtype."""
    m = torch.full_like(x[..., :1], float("-inf"), dtype=torch.float64)
    l = torch.zeros_like(x[..., :1], dtype=torch.float64)
    for cols in key_blocks(x.shape[-1], block_size):
        block = x[..., cols].double()
        m_new = torch.maximum(m, block.amax(dim=-1, keepdim=True))
        shift = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
        l = l * torch.exp(m - shift) + torch.exp(block - shift).sum(dim=-1, keepdim=True)
        m = m_new
    return (torch.exp(x.double() - m) / l).to(x.dtype)
