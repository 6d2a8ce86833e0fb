"""Lesson 02 widget: which keys each query may see (causal and padding masks), and the weights.

`mask_demo` is the plain compute function (unit-tested); `mask_explorer()` is the thin widget.
The masking is written here, not imported from the exercises, so the widget works before (and
whatever the state of) the student's `attention_weights`. The toy is the lesson's: six tokens with
seeded random embeddings, q = k = x, scores q kᵀ / √8.

Three ways to fill a masked score, which agree on every query that sees at least one key and
differ on a query that sees none (a fully masked, "blind" row):

    zero   -inf, and a blind row gets zero weights: the course's choice (and PyTorch's SDPA here)
    1e8    -1e8: a blind row becomes uniform over the keys it was not allowed to see
    inf    -inf alone: a blind row is 0/0 = NaN
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import matplotlib
import torch
from matplotlib.colors import ListedColormap

from course.i18n import N_, _
from course.widgets.base import live_figure

TOKENS = ("the", "cat", "sat", "on", "a", "mat")
WIDTH = 8  # channels of the toy embeddings
FILLS = {"zero": N_("−∞, blind → 0"), "1e8": N_("−1e8"), "inf": N_("−∞ only")}


def build_mask(n: int, causal: bool, n_real: int, hide_padding_queries: bool) -> torch.Tensor:
    """(n, n) bool, True where query i may attend to key j.

    causal: only keys j <= i. n_real: positions n_real .. n-1 are padding, hidden as keys from
    every query. hide_padding_queries: padding positions see no key either (real & realᵀ), which
    makes their rows fully masked.
    """
    if not 1 <= n_real <= n:
        raise ValueError(f"n_real must be between 1 and {n}, not {n_real}")
    real = torch.arange(n) < n_real                       # (n,)
    mask = real[None, :].expand(n, n).clone()             # (n, n): key j is real
    if hide_padding_queries:
        mask &= real[:, None]
    if causal:
        mask &= torch.ones(n, n, dtype=torch.bool).tril()
    return mask


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, fill: str) -> torch.Tensor:
    """softmax over keys (last axis) of scores with masked entries filled as `fill` says.

    scores: (*, q, k) float; mask: broadcastable bool, True = may attend; fill: a key of FILLS.
    """
    if fill == "1e8":
        return torch.softmax(scores.masked_fill(~mask, -1e8), dim=-1)
    weights = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
    if fill == "inf":
        return weights
    if fill == "zero":
        return torch.where(mask.any(dim=-1, keepdim=True), weights, torch.zeros_like(weights))
    raise ValueError(f"fill must be one of {sorted(FILLS)}, not {fill!r}")


def mask_demo(causal: bool = True, n_real: int = 4, hide_padding_queries: bool = False,
              fill: str = "zero", n: int = len(TOKENS), seed: int = 2) -> dict[str, torch.Tensor]:
    """The lesson's toy sentence under a mask.

    returns mask (n, n) bool, weights (n, n) (NaN where `fill` is "inf" and a row is blind),
    blind (n,) bool (queries that see no key) and row_sums (n,).
    """
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, WIDTH, generator=generator, dtype=torch.float64)
    mask = build_mask(n, causal, n_real, hide_padding_queries)
    weights = masked_softmax(x @ x.T / math.sqrt(WIDTH), mask, fill)
    return {"mask": mask, "weights": weights, "blind": ~mask.any(dim=-1),
            "row_sums": weights.sum(dim=-1)}


def token_labels(n_real: int, n: int = len(TOKENS)) -> list[str]:
    return [TOKENS[i] if i < n_real else "<pad>" for i in range(n)]


def _heatmap(fig, ax, values, cmap, labels, title, colorbar_label, ticks=None, tick_labels=None):
    image = ax.imshow(values, cmap=cmap, vmin=0, vmax=1)
    bar = fig.colorbar(image, ax=ax, shrink=0.8, label=colorbar_label, ticks=ticks)
    if tick_labels is not None:
        bar.ax.set_yticklabels(tick_labels)
    ax.set_xticks(range(len(labels)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.set(xlabel=_("key j"), ylabel=_("query i"))
    ax.set_title(title, fontsize=9)


def draw_masks(fig, causal: bool, n_real: int, hide_padding_queries: bool, fill: str) -> None:
    """Left: the mask. Middle: the weights (NaN cells in red). Right: each query's row sum."""
    result = mask_demo(causal, n_real, hide_padding_queries, fill)
    labels = token_labels(n_real)
    ax_mask, ax_weights, ax_sums = fig.subplots(1, 3, width_ratios=[1, 1, 0.55])
    _heatmap(fig, ax_mask, result["mask"].double().numpy(), ListedColormap(["#d9d9d9", "#2c7fb8"]),
             labels, _("mask: may query i see key j?"), "", ticks=[0.25, 0.75],
             tick_labels=[_("hidden"), _("visible")])
    weights = result["weights"]
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="tab:red")  # NaN cells in red
    _heatmap(fig, ax_weights, weights.numpy(), cmap, labels,
             _("weights, masked scores filled with {fill}").format(fill=_(FILLS[fill])), _("weight"))
    for (i, j), value in ((ij, weights[ij].item()) for ij in
                          ((i, j) for i in range(weights.shape[0]) for j in range(weights.shape[1]))):
        text = "NaN" if math.isnan(value) else f"{value:.2f}"
        ax_weights.text(j, i, text, ha="center", va="center", fontsize=6,
                        color="white" if math.isnan(value) or value < 0.6 else "black")
    sums = result["row_sums"]
    rows = range(len(sums))
    colours = ["tab:red" if b else "tab:blue" for b in result["blind"].tolist()]
    ax_sums.barh(rows, sums.nan_to_num(0.0).numpy(), color=colours)
    for i, value in enumerate(sums.tolist()):
        ax_sums.text(0.05, i, "NaN" if math.isnan(value) else f"{value:.2f}", va="center",
                     fontsize=7, color="black")
    ax_sums.set(xlim=(0, 1.3), ylim=(len(sums) - 0.5, -0.5), xlabel=_("row sum"))
    ax_sums.set_yticks(list(rows), labels, fontsize=8)
    blind = int(result["blind"].sum())
    ax_sums.set_title(_("{n} blind rows (red)").format(n=blind) if blind else _("no blind row"),
                      fontsize=9)


def mask_explorer() -> widgets.VBox:
    controls = {
        "causal": widgets.Checkbox(value=True, description=_("causal mask (no peeking ahead)")),
        "n_real": widgets.IntSlider(value=4, min=1, max=len(TOKENS),
                                    description=_("real tokens")),
        "hide_padding_queries": widgets.Checkbox(value=False,
                                                 description=_("padding queries see nothing")),
        "fill": widgets.ToggleButtons(options=[(_(label), key) for key, label in FILLS.items()],
                                      value="zero", description=_("masked score")),
    }
    return live_figure(draw_masks, controls, _(
        "A mask says which words each word may look at: left, blue = allowed. Middle: the "
        "attention weights that result; each row is one word's weights and sums to 1. Try: untick "
        "the causal mask and every word sees the whole sentence; lower the real tokens and the "
        "<pad> columns go dark. Tick 'padding queries see nothing': those rows may see no word at "
        "all. Then switch the masked score: the other rows never change, but −1e8 spreads a blind "
        "row's weight evenly over keys it may not see, and −∞ only makes it NaN (red), which "
        "would spread through every later layer; the course gives a blind row zeros."), figsize=(10.0, 3.6))
