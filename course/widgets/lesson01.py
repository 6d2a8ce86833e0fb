"""Lesson 01 widget: how dimension c, the 1/sqrt(c) scale and a temperature shape the softmax.

Compute functions are plain and unit-tested; `softmax_explorer()` is the thin widget layer.
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import torch

from course.i18n import _
from course.widgets.base import live_figure

DIMENSIONS = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats along the last axis; 0 for one-hot, log(n) for uniform."""
    return -(weights * weights.clamp_min(1e-300).log()).sum(dim=-1)


def random_scores(c: int, n_queries: int, n_keys: int, scaled: bool, temperature: float,
                  seed: int = 0) -> torch.Tensor:
    """Scores q·k (/sqrt(c) if scaled) / temperature for standard-normal q, k. (n_queries, n_keys)."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(n_queries, c, generator=generator, dtype=torch.float64)
    k = torch.randn(n_keys, c, generator=generator, dtype=torch.float64)
    scores = q @ k.T
    if scaled:
        scores = scores / math.sqrt(c)
    return scores / temperature


def softmax_stats(c: int, temperature: float = 1.0, scaled: bool = True, n_keys: int = 8,
                  n_queries: int = 256, seed: int = 0) -> dict:
    """Weights of the first query, and mean entropy / max weight over all queries."""
    weights = torch.softmax(random_scores(c, n_queries, n_keys, scaled, temperature, seed), dim=-1)
    return {
        "first_query_weights": weights[0],
        "mean_entropy": entropy(weights).mean().item(),
        "mean_max_weight": weights.max(dim=-1).values.mean().item(),
        "uniform_entropy": math.log(n_keys),
    }


def entropy_curve(temperature: float, scaled: bool, dims=DIMENSIONS, **kwargs) -> list[float]:
    """Mean softmax entropy for each dimension in `dims`."""
    return [softmax_stats(c, temperature, scaled, **kwargs)["mean_entropy"] for c in dims]


def draw_softmax(fig, c: int, temperature: float, scaled: bool) -> None:
    """Left: one query's weights over 8 keys. Right: mean entropy against c, scaled and not."""
    stats = softmax_stats(c, temperature, scaled)
    left, right = fig.subplots(1, 2)
    weights = stats["first_query_weights"].numpy()
    left.bar(range(len(weights)), weights, color="tab:blue")
    left.set_ylim(0, 1)
    left.set_xlabel(_("key j"))
    left.set_ylabel(_("attention weight"))
    left.set_title(_("c={c}, T={temperature}, {scale}: entropy {entropy} nats").format(
        c=c, temperature=f"{temperature:.2g}", scale="÷√c" if scaled else _("no scale"),
        entropy=f"{stats['mean_entropy']:.2f}"))
    for is_scaled, style in ((True, "-"), (False, "--")):
        right.plot(DIMENSIONS, entropy_curve(temperature, is_scaled), style, marker="o",
                   markersize=3, label="q·k/√c" if is_scaled else _("q·k (no scale)"))
    right.axhline(stats["uniform_entropy"], color="grey", lw=0.8, ls=":", label=_("uniform"))
    right.axvline(c, color="tab:red", lw=0.8)
    right.set_xscale("log", base=2)
    right.set_xlabel(_("dimension c"))
    right.set_ylabel(_("mean entropy (nats)"))
    right.legend(fontsize=8)


def softmax_explorer() -> widgets.VBox:
    controls = {
        "c": widgets.SelectionSlider(options=DIMENSIONS, value=64, description="c"),
        "temperature": widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=1, step=0.05,
                                              description=_("temperature")),
        "scaled": widgets.Checkbox(value=True, description=_("divide by √c")),
    }
    return live_figure(draw_softmax, controls, _(
        "A query is compared with 8 keys by dot products of random vectors of size c; the "
        "softmax turns the 8 scores into weights that sum to 1. Left: one query's weights. Right: "
        "their entropy averaged over many queries, against c (ln 8 = 2.08, dotted: all keys "
        "weighted alike; 0: one key takes everything). Try: untick 'divide by √c' and raise c: "
        "the weights collapse onto one key. With the scale, c hardly matters. A temperature above "
        "1 flattens the weights, below 1 sharpens them."))
