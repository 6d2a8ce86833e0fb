"""Lesson 02 widget: masks (causal, padding) and the fully masked row, computed and redrawn."""
import math

import pytest
import torch

from course.widgets.lesson02 import (FILLS, build_mask, mask_demo, mask_explorer, masked_softmax,
                                     token_labels)


def test_causal_mask_is_lower_triangular_with_its_diagonal():
    mask = build_mask(4, causal=True, n_real=4, hide_padding_queries=False)
    assert torch.equal(mask, torch.ones(4, 4, dtype=torch.bool).tril())


def test_padding_hides_keys_from_every_query_and_queries_only_when_asked():
    keys_only = build_mask(5, causal=False, n_real=3, hide_padding_queries=False)
    assert keys_only[:, :3].all() and not keys_only[:, 3:].any()
    both = build_mask(5, causal=False, n_real=3, hide_padding_queries=True)
    real = torch.arange(5) < 3
    assert torch.equal(both, real[:, None] & real[None, :])  # the lesson's real & real.T
    with pytest.raises(ValueError):
        build_mask(5, causal=False, n_real=0, hide_padding_queries=False)


def test_rows_that_see_a_key_agree_for_every_fill_and_sum_to_one():
    results = [mask_demo(causal=True, n_real=3, hide_padding_queries=True, fill=f) for f in FILLS]
    seeing = ~results[0]["blind"]
    assert seeing.tolist() == [True, True, True, False, False, False]
    for result in results:
        torch.testing.assert_close(result["weights"][seeing], results[0]["weights"][seeing])
        torch.testing.assert_close(result["row_sums"][seeing], torch.ones(3, dtype=torch.float64))
        assert (result["weights"][seeing][~result["mask"][seeing]] == 0).all()  # masked keys: 0


def test_the_fully_masked_row_zeros_uniform_or_nan():
    blind = {f: mask_demo(causal=False, n_real=4, hide_padding_queries=True, fill=f)["weights"][5]
             for f in FILLS}
    assert torch.equal(blind["zero"], torch.zeros(6, dtype=torch.float64))
    torch.testing.assert_close(blind["1e8"], torch.full((6,), 1 / 6, dtype=torch.float64))
    assert blind["inf"].isnan().all()


def test_no_row_is_blind_with_padding_keys_alone_or_a_causal_mask():
    for causal, hide in [(True, False), (False, False)]:
        assert not mask_demo(causal=causal, n_real=2, hide_padding_queries=hide)["blind"].any()


def test_masked_softmax_broadcasts_and_rejects_an_unknown_fill():
    scores = torch.zeros(2, 3, 4, dtype=torch.float64)
    key_mask = torch.tensor([True, True, False, False])
    weights = masked_softmax(scores, key_mask, "zero")
    torch.testing.assert_close(weights[..., :2], torch.full((2, 3, 2), 0.5, dtype=torch.float64))
    with pytest.raises(ValueError):
        masked_softmax(scores, key_mask, "-1e9")


def test_token_labels_mark_padding():
    assert token_labels(2, n=4) == ["the", "cat", "<pad>", "<pad>"]


def test_the_widget_redraws_when_each_control_moves_in_the_browsers_order():
    """The browser test moves the controls in page order from their first values; each move
    must change the figure itself (the fully masked rows appear before the fill is switched)."""
    box = mask_explorer()
    image, controls = box.children[1], box.children[0].children
    assert bytes(image.value[:4]) == b"\x89PNG"
    causal, n_real, hide, fill = controls
    for control, value in [(causal, False), (n_real, 2), (hide, True), (fill, "inf"), (fill, "1e8")]:
        before = image.value
        control.value = value
        assert image.value != before, (control.description, value)
    assert math.isnan(mask_demo(False, 2, True, "inf")["weights"][3, 0])
