"""Lesson 05 widget: the memory column attention needs against the number of sequences S.

`memory_curves` and `card_walls` are the plain compute functions (unit-tested);
`memory_explorer()` is the thin widget. Every number is the course's own prediction from shapes
(`course.memory`: the attention core run on PyTorch's `meta` device, inputs included), for three
ways of computing it: all columns at once (naive), 4 columns at a time (chunked, as AlphaFold2 at
inference) and global column attention. (Fused kernels such as PyTorch's SDPA are left out: their
memory cannot be predicted from shapes, lesson 05 measures it.)
"""
from __future__ import annotations

import functools
import math

import ipywidgets as widgets
import torch
from matplotlib.ticker import NullLocator

from course.i18n import N_, _
from course.memory import GB, need_quadratic, predicted_need
from course.widgets.base import live_figure

METHODS = {"naive": N_("all columns at once"), "chunked": N_("4 columns at a time"),
           "global": N_("global attention")}
COLOURS = {"naive": "tab:red", "chunked": "tab:orange", "global": "tab:blue"}
CARDS_GB = (24, 40, 80)
SEQUENCES = [256, 512, 1024, 2048, 4096, 5120, 8192, 16384, 32768, 65536]
COLUMNS = [64, 128, 256, 300, 512, 1024]
HEADS = [1, 2, 4, 8, 16]
DTYPES = {"float32": torch.float32, "float16": torch.float16}
CHANNELS = 8  # c per head, as in AlphaFold2's extra-MSA stack
CURVE_POINTS = 49


def _s_grid(low: int = SEQUENCES[0], high: int = SEQUENCES[-1], points: int = CURVE_POINTS):
    ratio = (high / low) ** (1 / (points - 1))
    return [round(low * ratio ** k) for k in range(points)]


def memory_curves(R: int, H: int, dtype: str = "float32", c: int = CHANNELS,
                  sizes=None) -> dict[str, list[float]]:
    """{"S": sizes, method: [GB needed at each S]}: inputs plus the predicted peak of one call.

    Each method's need is a quadratic in S, fitted exactly through predictions on `meta`
    (course.memory.need_quadratic), so the curve costs three predictions, not one per point.
    """
    sizes = list(sizes) if sizes is not None else _s_grid()
    curves = {"S": sizes}
    for method in METHODS:
        a, b, d = need_quadratic(method, R, H, c, DTYPES[dtype])
        curves[method] = [(a * S * S + b * S + d) / GB for S in sizes]
    return curves


def largest_fitting(a: float, b: float, d: float, capacity: float) -> int:
    """Largest S >= 1 with a·S² + b·S + d <= capacity (a >= 0, b > 0)."""
    if a > 0:
        S = int((-b + math.sqrt(b * b - 4 * a * (d - capacity))) / (2 * a))
    else:
        S = int((capacity - d) / b)
    S = max(S, 1)
    while a * (S + 1) ** 2 + b * (S + 1) + d <= capacity:  # the root's rounding, either way
        S += 1
    while S > 1 and a * S * S + b * S + d > capacity:
        S -= 1
    return S


@functools.lru_cache(maxsize=128)
def card_walls(R: int, H: int, dtype: str = "float32", c: int = CHANNELS,
               cards_gb=CARDS_GB) -> dict[str, dict[int, int]]:
    """{method: {card GB: largest S whose inputs plus predicted peak fit on the card}}.

    The same walls as course.memory.predicted_wall, from the exact quadratic of the need alone
    (predicted_wall confirms on meta, which costs a redraw about half a second).
    """
    walls = {}
    for method in METHODS:
        a, b, d = need_quadratic(method, R, H, c, DTYPES[dtype])
        walls[method] = {card: largest_fitting(a, b, d, card * GB) for card in cards_gb}
    return walls


def need_at(S: int, R: int, H: int, dtype: str = "float32", c: int = CHANNELS) -> dict[str, float]:
    """{method: GB needed at this S}, predicted on `meta` at exactly this size."""
    return {method: predicted_need(method, R, H, S, c, DTYPES[dtype]) / GB for method in METHODS}


def _draw_curves(ax, S: int, R: int, H: int, dtype: str) -> None:
    curves = memory_curves(R, H, dtype)
    at_S = need_at(S, R, H, dtype)
    for method, label in METHODS.items():
        ax.loglog(curves["S"], curves[method], color=COLOURS[method],
                  label=f"{_(label)}: {at_S[method]:,.1f} GB")
        ax.plot([S], [at_S[method]], "o", color=COLOURS[method])
    for card in CARDS_GB:
        ax.axhline(card, color="grey", lw=0.8, ls="--")
        ax.text(curves["S"][0], card * 1.1, _("{card} GB card").format(card=card), fontsize=7,
                color="grey")
    ax.axvline(S, color="black", lw=0.8, ls=":")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_locator(NullLocator())  # decades are enough, and minor ticks cost a third
    ax.set(xlabel=_("S (sequences per column)"), ylabel=_("GB needed: inputs + peak (predicted)"),
           ylim=(min(min(curves[m]) for m in METHODS) / 2, max(2000.0, 2 * max(at_S.values()))))
    ax.set_title(_("R = {R} columns, {H} heads of 8 channels, {dtype}: at S = {S:,}").format(
        R=R, H=H, dtype=dtype, S=S), fontsize=9)
    ax.legend(fontsize=7, loc="upper left")


def _draw_walls(ax, R: int, H: int, dtype: str) -> None:
    walls = card_walls(R, H, dtype)
    width = 0.8 / len(METHODS)
    for k, method in enumerate(METHODS):
        xs = [i + (k - 1) * width for i in range(len(CARDS_GB))]
        values = [walls[method][card] for card in CARDS_GB]
        ax.bar(xs, values, width, color=COLOURS[method], label=_(METHODS[method]))
        for x, value in zip(xs, values):
            ax.text(x, value * 1.15, f"{value:,}", ha="center", fontsize=6, rotation=90)
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_ylim(top=max(walls["global"].values()) * 20)
    ax.set_xticks(range(len(CARDS_GB)), [_("{card} GB").format(card=c) for c in CARDS_GB])
    ax.set(ylabel=_("largest S that fits"))
    ax.set_title(_("where each card runs out"), fontsize=9)
    ax.legend(fontsize=6, loc="upper left")


def draw_memory(fig, S: int, R: int, H: int, dtype: str) -> None:
    """Left: GB needed against S, the cards as dashed lines. Right: the largest S per card."""
    ax_curves, ax_walls = fig.subplots(1, 2, width_ratios=[1.5, 1])
    _draw_curves(ax_curves, S, R, H, dtype)
    _draw_walls(ax_walls, R, H, dtype)


def memory_explorer() -> widgets.VBox:
    # a new R, heads or precision costs a few predictions on meta: redraw when the slider is
    # let go, not at every value a drag passes
    slow = {"continuous_update": False}
    controls = {
        "S": widgets.SelectionSlider(options=SEQUENCES, value=5120,
                                     description=_("sequences S"), **slow),
        "R": widgets.SelectionSlider(options=COLUMNS, value=300, description=_("columns R"), **slow),
        "H": widgets.SelectionSlider(options=HEADS, value=8, description=_("heads"), **slow),
        "dtype": widgets.ToggleButtons(options=list(DTYPES), value="float32",
                                       description=_("precision")),
    }
    return live_figure(draw_memory, controls, _(
        "Column attention in AlphaFold2 compares every pair of the S sequences of an alignment, "
        "at each of R positions: its score tables hold S × S numbers per column and head. Left: "
        "the memory one layer's attention needs, predicted from tensor shapes, against S; dashed "
        "lines are 24, 40 and 80 GB graphics cards. Try: drag S and read off each method's need; "
        "doubling S quadruples the red line. Change the columns, heads or precision and see "
        "where each card runs out (right). Computing 4 columns at a time, or one averaged query "
        "per column (global attention), moves the wall by orders of magnitude."),
        figsize=(10.0, 3.8))
