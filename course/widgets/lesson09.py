"""Lesson 09 widget: the tiles of the score matrix as tiled attention visits them, and one row's
running max and sum.

`tile_walk` is the plain compute function (unit-tested): it replays the online softmax of the
lesson on a small score matrix, tile by tile, and records what one query row has seen so far;
`tiles_explorer()` is the thin widget. The score matrix is drawn whole for the picture only:
the algorithm it shows never holds more than one tile of it.
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import torch
from matplotlib.patches import Rectangle

from course.i18n import _
from course.widgets.base import live_figure

L = 24           # queries and keys of the picture
CHANNELS = 4     # channels of q and k
WINDOW = 4       # the sliding window of route two: |i - j| <= WINDOW
BLOCKS = [3, 4, 6, 8]


def scores_matrix(seed: int = 9) -> torch.Tensor:
    """(L, L) scaled scores q kᵀ / sqrt(c) of fixed random queries and keys (float64), with
    a few large entries so that a row's maximum changes as its tiles are read."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(L, CHANNELS, generator=generator, dtype=torch.float64)
    k = torch.randn(L, CHANNELS, generator=generator, dtype=torch.float64)
    k[L // 2:] *= 3.0  # later keys score higher: the running max rises from tile to tile
    return q @ k.T / math.sqrt(CHANNELS)


def tile_order(block: int, window: int | None = None) -> list[tuple[int, int]]:
    """(query block, key block) pairs in the order tiled attention visits them: query blocks in
    turn, each against its key blocks left to right; with a window, only the key blocks that
    meet the band |i - j| <= window of some query of the block."""
    n = math.ceil(L / block)
    order = []
    for qb in range(n):
        for kb in range(n):
            if window is not None:
                first_query, last_query = qb * block, min((qb + 1) * block, L) - 1
                first_key, last_key = kb * block, min((kb + 1) * block, L) - 1
                if first_key > last_query + window or last_key < first_query - window:
                    continue
            order.append((qb, kb))
    return order


def tile_walk(block: int, row: int, step: int, window: int | None = None, seed: int = 9) -> dict:
    """The state after `step` tiles of `tile_order(block, window)` (clamped to 1..all).

    returns {"scores": (L, L), "order": the visit order, "visited": the first `step` tiles,
    "current": the last visited tile, "history": [(key block, m, l)] for `row` after each of its
    key tiles visited so far (l relative to that m), "final": (m, l) of the whole row over the
    keys it may see, "tiles": number of tiles in the order, "all_tiles": ceil(L / block)²}.
    """
    scores = scores_matrix(seed)
    if window is not None:
        i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
        scores = scores.masked_fill((i - j).abs() > window, float("-inf"))
    order = tile_order(block, window)
    step = max(1, min(step, len(order)))
    visited = order[:step]
    m, l, history = float("-inf"), 0.0, []
    for qb, kb in visited:
        if qb != row // block:
            continue
        values = scores[row, kb * block:(kb + 1) * block]
        m_new = max(m, float(values.max()))
        l = l * math.exp(m - m_new) + float(torch.exp(values - m_new).sum())
        m = m_new
        history.append((kb, m, l))
    final_m = float(scores[row].max())
    final_l = float(torch.exp(scores[row] - final_m).sum())
    return {"scores": scores, "order": order, "visited": visited, "current": visited[-1],
            "history": history, "final": (final_m, final_l), "tiles": len(order),
            "all_tiles": math.ceil(L / block) ** 2}


def _draw_tiles(ax, walk: dict, block: int, row: int) -> None:
    shown = walk["scores"].masked_fill(torch.isinf(walk["scores"]), float("nan"))
    image = ax.imshow(shown.numpy(), cmap="viridis")  # a tensor warns in matplotlib
    ax.figure.colorbar(image, ax=ax, shrink=0.8, label=_("score"))
    visited = set(walk["visited"])
    order = set(walk["order"])
    n = math.ceil(L / block)
    for qb in range(n):
        for kb in range(n):
            corner = (kb * block - 0.5, qb * block - 0.5)
            if (qb, kb) not in order:  # skipped by the window: never computed
                ax.add_patch(Rectangle(corner, block, block, facecolor="white", alpha=0.9,
                                       hatch="//", edgecolor="lightgrey"))
            elif (qb, kb) not in visited:
                ax.add_patch(Rectangle(corner, block, block, facecolor="black", alpha=0.6))
    qb, kb = walk["current"]
    ax.add_patch(Rectangle((kb * block - 0.5, qb * block - 0.5), block, block, fill=False,
                           edgecolor="red", lw=2))
    ax.axhline(row, color="white", lw=1, ls=":")
    ax.set(xlabel=_("key j"), ylabel=_("query i"))
    ax.set_title(_("tile {done} of {total} ({all} without a window); red: the tile in hand")
                 .format(done=len(walk["visited"]), total=walk["tiles"], all=walk["all_tiles"]),
                 fontsize=8)


def _draw_row(ax, walk: dict, block: int, row: int) -> None:
    final_m, final_l = walk["final"]
    ax.axhline(final_m, color="tab:red", ls="--", lw=1, label=_("max of the whole row"))
    axes = [ax]
    if walk["history"]:
        blocks = [kb for kb, _m, _l in walk["history"]]
        ax.plot(blocks, [m for _kb, m, _l in walk["history"]], "o-", color="tab:red",
                label=_("running max m"))
        right = ax.twinx()
        right.plot(blocks, [l for _kb, _m, l in walk["history"]], "s-", color="tab:blue",
                   label=_("running sum l"))
        right.axhline(final_l, color="tab:blue", ls="--", lw=1, label=_("sum of the whole row"))
        right.set_ylabel(_("l = Σ exp(score − m)"), color="tab:blue")
        axes.append(right)
    else:
        ax.text(0.5, 0.5, _("row {row}'s tiles are not reached yet").format(row=row),
                ha="center", transform=ax.transAxes, fontsize=8)
    n = math.ceil(L / block)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xticks(range(n))  # key blocks are whole numbers
    ax.set(xlabel=_("key block"), ylabel=_("m"))
    ax.set_title(_("query row {row}: what the online softmax keeps").format(row=row), fontsize=8)
    # one legend for both axes, under the plot: inside it would cover the last points, where the
    # running values meet the dashed lines of the whole row
    handles, labels = [], []
    for axis in axes:
        found = axis.get_legend_handles_labels()
        handles, labels = handles + found[0], labels + found[1]
    ax.legend(handles, labels, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18),
              ncol=2, frameon=False)


def draw_tiles(fig, step: int, block: int, row: int, window: bool) -> None:
    """Left: the score matrix, tiles dimmed until visited. Right: the chosen row's m and l."""
    walk = tile_walk(block, row, step, WINDOW if window else None)
    ax_tiles, ax_row = fig.subplots(1, 2, width_ratios=[1.1, 1])
    _draw_tiles(ax_tiles, walk, block, row)
    _draw_row(ax_row, walk, block, row)


def tiles_in_order(block: int, window: bool) -> int:
    """How many tiles the walk visits: what the "tiles visited" slider runs up to."""
    return len(tile_order(block, WINDOW if window else None))


def tiles_explorer() -> widgets.VBox:
    controls = {
        "step": widgets.IntSlider(value=16, min=1, max=tiles_in_order(4, False),
                                  description=_("tiles visited")),
        "block": widgets.SelectionSlider(options=BLOCKS, value=4, description=_("block size")),
        "row": widgets.IntSlider(value=10, min=0, max=L - 1, description=_("query row")),
        "window": widgets.Checkbox(value=False, indent=False,
                                   description=_("sliding window: skip tiles outside the band"),
                                   layout=widgets.Layout(width="auto")),
    }

    def follow_tile_count(_change=None):
        """The slider runs from 1 to the number of tiles the walk visits: none of its track
        does nothing, and its readout is the tile the figure shows."""
        total = tiles_in_order(controls["block"].value, controls["window"].value)
        controls["step"].value = min(controls["step"].value, total)
        controls["step"].max = total

    for name in ("block", "window"):  # before live_figure's own observers: the max first
        controls[name].observe(follow_tile_count, names="value")
    return live_figure(draw_tiles, controls, _(
        "Tiled attention reads the scores of 24 queries against 24 keys one square tile at a "
        "time and never holds the whole matrix. Left: the tiles visited so far (dark ones come "
        "later, the red one is in hand). Right: for one query row, the running maximum m and the "
        "running sum l of exp(score − m) after each of its tiles; the dashed lines are the "
        "values over the whole row, which the last tile reaches. Try: move the tiles slider and "
        "watch l fall when m jumps (the old sum is rescaled by exp(m_old − m_new)); change "
        "the block size; tick the sliding window and see the tiles far from the diagonal "
        "skipped."), figsize=(10.0, 4.0))
