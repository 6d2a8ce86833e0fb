"""Lesson 06 widget: the compute function, and the widget redrawing when a slider moves."""
import math

import pytest
import torch

from course.widgets.base import render_png
from course.widgets.lesson06 import draw_gate, gate_demo, gate_explorer


def test_gate_is_the_sigmoid_of_the_logits():
    result = gate_demo([-8.0, 0.0, 3.0])
    torch.testing.assert_close(result["gate"], torch.tensor([0.000335, 0.5, 0.952574],
                                                            dtype=torch.float64), atol=1e-6, rtol=0)
    torch.testing.assert_close(result["gated"], result["o"] * result["gate"])


def test_attention_weights_do_not_depend_on_the_gate():
    a, b = gate_demo([1.0, 1.0, 1.0, 1.0]), gate_demo([-8.0, 8.0, 0.0, 2.0])
    torch.testing.assert_close(a["weights"], b["weights"])
    torch.testing.assert_close(a["o"], b["o"])
    assert not torch.allclose(a["gated"], b["gated"])


def test_weights_normalise_over_keys_gate_does_not():
    result = gate_demo([1.0, 1.0, 1.0, 1.0])
    torch.testing.assert_close(result["weights"].sum(-1), torch.ones(5, dtype=torch.float64))
    # AF2's initial gate: 0.73 in every channel, summing to 4 * 0.73, not to 1
    assert result["gate"].sum().item() == pytest.approx(4 / (1 + math.exp(-1)))


def test_gate_scales_whole_channels():
    result = gate_demo([-8.0, 8.0, 0.0, 0.0])
    assert result["gated"][:, 0].abs().max() < 1e-3 * result["o"][:, 0].abs().max()
    torch.testing.assert_close(result["gated"][:, 1], result["o"][:, 1], atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(result["gated"][:, 2], result["o"][:, 2] / 2)


def test_draw_and_widget_redraw():
    png = render_png(draw_gate, figsize=(10, 3), g0=1.0, g1=-2.0, g2=3.0, g3=0.0)
    assert png.startswith(b"\x89PNG")
    box = gate_explorer()
    image = box.children[1]
    before = image.value
    box.children[0].children[0].value = -6.0
    assert image.value != before
