# check: 02.attention_weights


def attention_weights(q, k, bias=None, mask=None):
    """A branch on the mask's values (`if mask.all()`), which the meta device cannot run: that
    case then cannot judge the code, and passes."""
    scores = scaled_scores(q, k)
    if bias is not None:
        scores = scores + bias
    if mask is None or bool(mask.all()):
        return stable_softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    sees = mask.expand_as(scores).any(dim=-1, keepdim=True)
    return stable_softmax(scores.masked_fill(~sees, 0.0), dim=-1) * sees
