# check: 02.attention_weights


def attention_weights(q, k, bias=None, mask=None):
    """Masked keys filled with the dtype's most negative number instead of -inf, and a query
    that sees no key zeroed by multiplying with its row flag: the same weights and gradients."""
    scores = scaled_scores(q, k)
    if bias is not None:
        scores = scores + bias
    if mask is None:
        return stable_softmax(scores, dim=-1)
    sees = mask.expand_as(scores).any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return stable_softmax(scores, dim=-1) * sees
