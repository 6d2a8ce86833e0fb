# check: 02.attention_weights


def attention_weights(q, k, bias=None, mask=None):
    """A query that sees no key keeps its row of -inf, and the NaN its softmax gives is replaced
    by 0 afterwards: masked_fill sends no gradient to the entries it filled, so no NaN reaches
    q, k or the bias either."""
    scores = scaled_scores(q, k)
    if bias is not None:
        scores = scores + bias
    if mask is None:
        return stable_softmax(scores, dim=-1)
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.nan_to_num(stable_softmax(scores, dim=-1), nan=0.0)
