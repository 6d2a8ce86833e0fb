"""Lesson 07 widget: position similarity under sinusoidal encodings and RoPE, and its redraw."""
import pytest
import torch

from course.widgets.base import render_png
from course.widgets.lesson07 import (draw_similarity, position_similarity, rope_rotate,
                                     similarity_explorer, sinusoidal_table)
from solutions.transformer import apply_rope, sinusoidal_encoding


def test_formulas_match_the_solutions():
    torch.testing.assert_close(sinusoidal_table(20, 8, 100.0), sinusoidal_encoding(20, 8, 100.0))
    x = torch.randn(9, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    torch.testing.assert_close(rope_rotate(x, 500.0), apply_rope(x, base=500.0))


@pytest.mark.parametrize("scheme", ["sinusoidal", "RoPE"])
def test_similarity_depends_on_the_offset_only(scheme):
    similarity = position_similarity(scheme, d=16, base=10000.0, L=24)
    torch.testing.assert_close(similarity.diagonal(), torch.ones(24, dtype=torch.float64))
    for offset in (1, 5, 17):  # every diagonal holds one value
        diagonal = similarity.diagonal(offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal))
    assert similarity.abs().max() <= 1 + 1e-12


def test_rope_with_equal_pair_weights_is_the_sinusoidal_map():
    ones = torch.ones(24, 8, dtype=torch.float64) / 8 ** 0.5
    rope = rope_rotate(ones) @ rope_rotate(ones).T
    torch.testing.assert_close(rope, position_similarity("sinusoidal", 8, 10000.0, L=24))


def test_unknown_scheme_is_refused():
    with pytest.raises(ValueError):
        position_similarity("ALiBi", 8, 100.0)


def test_draw_and_widget_redraw():
    png = render_png(draw_similarity, figsize=(10, 3.8), scheme="RoPE", log10_base=2.0, d=8)
    assert png.startswith(b"\x89PNG")
    box = similarity_explorer()
    image, controls = box.children[1], box.children[0].children
    before = image.value
    controls[0].value = "RoPE"
    after_scheme = image.value
    assert after_scheme != before
    controls[2].value = 64
    assert image.value != after_scheme
