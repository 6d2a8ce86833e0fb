"""course/widgets/base.py: the in-place figure every widget is built on (no front end needed)."""
import ipywidgets as widgets
import pytest

from course.widgets.base import live_figure, render_png

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def draw_line(fig, slope, label="y"):
    ax = fig.subplots()
    ax.plot([0, 1], [0, slope])
    ax.set_ylim(-5, 5)
    ax.set_xlabel("x")
    ax.set_ylabel(label)


def test_render_png_draws_with_the_values_given():
    seen = {}

    def draw(fig, **values):
        seen.update(values)
        draw_line(fig, **values)

    png = render_png(draw, slope=2.0, label="v")
    assert png.startswith(PNG_MAGIC)
    assert seen == {"slope": 2.0, "label": "v"}
    assert render_png(draw_line, slope=2.0) == render_png(draw_line, slope=2.0), "not deterministic"
    assert render_png(draw_line, slope=2.0) != render_png(draw_line, slope=-2.0)


def test_render_png_size_follows_figsize_and_dpi():
    import struct
    png = render_png(draw_line, figsize=(4.0, 2.0), dpi=50, slope=1.0)
    width, height = struct.unpack(">II", png[16:24])  # IHDR
    assert (width, height) == (200, 100)


@pytest.fixture
def box():
    controls = {"slope": widgets.FloatSlider(value=1.0, min=-3, max=3),
                "label": widgets.Dropdown(options=["y", "z"], value="y")}
    return live_figure(draw_line, controls, "what to look at"), controls


def test_layout_controls_above_image_above_caption(box):
    box, controls = box
    row, image, caption = box.children
    assert isinstance(row, widgets.HBox) and list(row.children) == list(controls.values())
    assert isinstance(image, widgets.Image) and image.format == "png"
    assert bytes(image.value).startswith(PNG_MAGIC), "the figure is drawn before any control moves"
    assert isinstance(caption, widgets.HTML) and "what to look at" in caption.value


def test_the_caption_is_plain_text_not_html():
    caption = live_figure(draw_line, {"slope": widgets.FloatSlider()}, "the <pad> columns").children[2]
    assert "&lt;pad&gt;" in caption.value and "<pad>" not in caption.value


def test_every_control_redraws_the_same_image_in_place(box):
    box, controls = box
    image = box.children[1]
    first = bytes(image.value)
    controls["slope"].value = -2.0
    assert box.children[1] is image, "the image widget is replaced, not updated in place"
    second = bytes(image.value)
    assert second != first and second.startswith(PNG_MAGIC)
    controls["label"].value = "z"
    assert bytes(image.value) != second
    assert bytes(image.value) == render_png(draw_line, figsize=(7.0, 3.2), slope=-2.0, label="z")


def test_redraw_is_exposed_and_uses_the_current_values(box):
    box, controls = box
    image = box.children[1]
    controls["slope"].value = 3.0
    drawn = bytes(image.value)
    image.value = b""
    box.redraw()
    assert bytes(image.value) == drawn


def test_an_error_in_draw_surfaces_when_the_widget_is_built():
    def broken(fig, slope):
        raise ValueError("broken draw")

    with pytest.raises(ValueError, match="broken draw"):
        live_figure(broken, {"slope": widgets.FloatSlider()}, "caption")
