"""A figure that redraws in place when a control moves: the building block of every widget.

The figure is rendered by matplotlib's Agg backend to PNG bytes and shown in an
`ipywidgets.Image`; moving a control replaces the image's bytes. Nothing is re-displayed, so
there is no flicker of new figures, it works in any Jupyter front end with ipywidgets, and a
browser test can see the change (the <img> source changes).
"""
from __future__ import annotations

import html
import io
from typing import Callable

import ipywidgets as widgets
from matplotlib.figure import Figure


def render_png(draw: Callable[..., None], figsize=(7.0, 3.2), dpi: int = 90, **values) -> bytes:
    """Draw a fresh figure with draw(fig, **values) and return it as PNG bytes."""
    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    draw(fig, **values)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def live_figure(draw: Callable[..., None], controls: dict[str, widgets.ValueWidget],
                caption: str, figsize=(7.0, 3.2)) -> widgets.VBox:
    """Controls above a figure that draw(fig, **control values) redraws whenever one moves.

    draw: fills a blank matplotlib Figure; label the axes there.
    caption: plain text under the figure saying what to look at and what to try.
    """
    image = widgets.Image(format="png", layout=widgets.Layout(width="auto"))

    def redraw(_change=None):
        image.value = render_png(draw, figsize=figsize,
                                 **{name: c.value for name, c in controls.items()})

    for control in controls.values():
        control.style.description_width = "initial"  # full labels, not "temperat..."
        if getattr(control, "orientation", "horizontal") == "horizontal":
            control.layout.min_width = "280px"  # a usable track; the row wraps instead
    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    caption_line = widgets.HTML(f"<i>{html.escape(caption)}</i>")  # plain text: "<pad>" shows
    row = widgets.HBox(list(controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
    box = widgets.VBox([row, image, caption_line])
    box.redraw = redraw  # lets tests trigger a draw without a front end
    return box
