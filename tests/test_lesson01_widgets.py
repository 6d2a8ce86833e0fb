"""The compute functions behind lesson 01's widget."""
import math

import torch

from course.widgets.base import render_png
from course.widgets.lesson01 import draw_softmax, entropy, entropy_curve, softmax_explorer, softmax_stats


def test_entropy_of_one_hot_and_uniform():
    assert entropy(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)).item() == 0.0
    assert math.isclose(entropy(torch.full((8,), 1 / 8, dtype=torch.float64)).item(), math.log(8))


def test_unscaled_softmax_saturates_as_c_grows():
    curve = entropy_curve(temperature=1.0, scaled=False, dims=[4, 1024])
    assert curve[1] < 0.3 * curve[0]


def test_scaled_softmax_entropy_barely_depends_on_c():
    small, large = entropy_curve(temperature=1.0, scaled=True, dims=[16, 1024])
    assert abs(small - large) < 0.15


def test_temperature_flattens_and_sharpens():
    hot = softmax_stats(64, temperature=10.0)["mean_entropy"]
    cold = softmax_stats(64, temperature=0.1)["mean_entropy"]
    assert cold < softmax_stats(64)["mean_entropy"] < hot <= math.log(8) + 1e-12


def test_weights_are_a_distribution():
    weights = softmax_stats(32, temperature=0.5, scaled=False)["first_query_weights"]
    assert torch.isclose(weights.sum(), torch.tensor(1.0, dtype=torch.float64))


def test_figure_changes_with_each_control():
    base = render_png(draw_softmax, c=64, temperature=1.0, scaled=True)
    assert base.startswith(b"\x89PNG")
    for change in ({"c": 512}, {"temperature": 3.0}, {"scaled": False}):
        values = {"c": 64, "temperature": 1.0, "scaled": True, **change}
        assert render_png(draw_softmax, **values) != base, change


def test_widget_redraws_when_a_slider_moves():
    box = softmax_explorer()
    image = box.children[1]
    before = image.value
    box.children[0].children[0].value = 1024
    assert image.value != before
