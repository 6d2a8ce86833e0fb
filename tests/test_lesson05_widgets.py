"""Lesson 05 widget: memory against S from the course's own predictions, and the redraw."""
import pytest

from course.memory import GB, predicted_need, predicted_wall
from course.widgets.lesson05 import (CARDS_GB, METHODS, card_walls, largest_fitting, memory_curves,
                                     memory_explorer, need_at)


def test_the_curves_are_the_predictions_on_meta():
    curves = memory_curves(R=16, H=2, sizes=[100, 700, 3000])
    for method in METHODS:
        for S, gb in zip(curves["S"], curves[method]):
            assert gb == pytest.approx(predicted_need(method, 16, 2, S, 8) / GB, rel=1e-9)


def test_naive_grows_as_s_squared_global_as_s():
    curves = memory_curves(R=300, H=8, sizes=[10_000, 20_000])
    assert curves["naive"][1] / curves["naive"][0] == pytest.approx(4, rel=0.01)
    assert curves["global"][1] / curves["global"][0] == pytest.approx(2, rel=0.01)
    assert curves["global"][0] < curves["chunked"][0] < curves["naive"][0]


def test_float16_halves_the_need():
    full, half = (memory_curves(R=64, H=4, dtype=d, sizes=[2048]) for d in ("float32", "float16"))
    for method in METHODS:
        assert half[method][0] == pytest.approx(full[method][0] / 2, rel=1e-9)


def test_the_walls_are_the_lessons():
    walls = card_walls(300, 8)
    assert [walls["naive"][card] for card in CARDS_GB] == [1110, 1435, 2033]  # lesson 05's text
    for card in CARDS_GB:
        assert walls["naive"][card] < walls["chunked"][card] < walls["global"][card]


@pytest.mark.parametrize("R, H, dtype", [(300, 8, "float32"), (64, 2, "float16")])
def test_the_walls_are_course_memorys_confirmed_on_meta(R, H, dtype):
    import torch

    walls = card_walls(R, H, dtype)
    for method in METHODS:
        for card in CARDS_GB:
            assert walls[method][card] == predicted_wall(method, card * GB, R=R, H=H, c=8,
                                                         dtype=getattr(torch, dtype)), (method, card)


def test_largest_fitting():
    assert largest_fitting(1.0, 0.0 + 1e-9, 0.0, 100.0) == 9  # 10² + a hair > 100
    assert largest_fitting(0.0, 2.0, 10.0, 30.0) == 10
    assert largest_fitting(1.0, 1.0, 0.0, 0.5) == 1  # never below one sequence


def test_need_at_one_size():
    at = need_at(5120, R=300, H=8)
    assert at["naive"] == pytest.approx(504.9, abs=0.1)  # "half a terabyte" at S = 5120
    assert at["global"] < 80 < at["naive"]


def test_the_widget_redraws_when_each_control_moves():
    box = memory_explorer()
    image, controls = box.children[1], box.children[0].children
    assert bytes(image.value[:4]) == b"\x89PNG"
    for control, value in zip(controls, [1024, 64, 1, "float16"]):
        before = image.value
        control.value = value
        assert image.value != before, control.description
