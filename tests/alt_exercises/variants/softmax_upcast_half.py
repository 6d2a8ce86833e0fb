# check: 01.stable_softmax


def stable_softmax(x, dim=-1):
    """Half-precision inputs computed in float32 and cast back (as mixed-precision kernels do);
    float32 and float64 inputs computed as they are."""
    work = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
    shifted = work - work.amax(dim=dim, keepdim=True)
    exponentials = shifted.exp()
    return (exponentials / exponentials.sum(dim=dim, keepdim=True)).to(x.dtype)
