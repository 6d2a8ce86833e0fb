# check: 02.padding_mask


def padding_mask(lengths, max_len):
    """Positions made from lengths itself (on its device) by cumsum of ones."""
    positions = lengths.new_ones(max_len).cumsum(0) - 1
    return (positions < lengths[:, None])[:, None, :]
