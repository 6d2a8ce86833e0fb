"""The compute functions behind lesson 03's widget."""
import pytest
import torch

from course.widgets.base import render_png
from course.widgets.lesson03 import (count_parameters, draw_heads, head_width, heads_explorer,
                                     parameter_curves, per_head_weights)


def test_width_conserving_heads_cost_no_extra_parameters():
    # 4*c_in^2 weights plus the c_in biases of linear_o, for any head count dividing c_in
    assert {count_parameters(256, n) for n in (1, 2, 4, 8)} == {4 * 256 ** 2 + 256}
    assert count_parameters(256, 8) == 262_400


def test_widened_heads_cost_n_head_times_more():
    assert count_parameters(256, 8, widened=True) == 2_097_408
    assert count_parameters(64, 4, widened=True) == 4 * 4 * 64 ** 2 + 64


def test_head_width():
    assert head_width(64, 8, widened=False) == 8
    assert head_width(64, 8, widened=True) == 64
    with pytest.raises(ValueError):
        head_width(64, 3, widened=False)


def test_curves_skip_head_counts_that_do_not_divide():
    curves = parameter_curves(32, head_counts=[1, 3, 4])
    assert curves["N_head"] == [1, 4]
    assert curves["estimate"] == [4 * 32 ** 2] * 2


def test_each_head_has_its_own_normalised_map():
    weights = per_head_weights(64, 4)
    assert weights.shape == (4, 8, 8)
    assert torch.allclose(weights.sum(-1), torch.ones(4, 8, dtype=torch.float64))
    assert not torch.allclose(weights[0], weights[1])
    assert torch.equal(weights, per_head_weights(64, 4))  # seeded: the same maps every time


def test_drawing_and_widget():
    assert render_png(draw_heads, c_in=64, N_head=16, widened=False)[:4] == b"\x89PNG"
    assert render_png(draw_heads, c_in=32, N_head=1, widened=True)[:4] == b"\x89PNG"
    box = heads_explorer()
    before = box.children[1].value
    box.children[0].children[1].value = 8
    assert box.children[1].value != before
