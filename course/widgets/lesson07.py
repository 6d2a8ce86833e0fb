"""Lesson 07 widget: how similar positions i and j look, under sinusoidal encodings or RoPE.

`position_similarity` is the plain compute function (unit-tested); `similarity_explorer()` is the
thin widget. Its formulas are written here, not imported from the exercises, so the widget works
before (and whatever the state of) the student's `sinusoidal_encoding` and `apply_rope`.

- sinusoidal: cos-similarity PE(i)·PE(j) / (d/2) of the encodings themselves (each pair of
  channels contributes cos((i - j) ω_p), so the map depends on i - j only);
- RoPE: the attention score of one fixed vector (seeded, unit length) used as the query at
  position i and as the key at position j: the same token at two places. Pair p contributes
  (its share of the vector's squared length) * cos((i - j) ω_p): again a function of i - j only,
  a weighted version of the sinusoidal map (with equal weights it would be that map).
"""
from __future__ import annotations

import ipywidgets as widgets
import torch

from course.i18n import N_, _
from course.widgets.base import live_figure

SCHEMES = (N_("sinusoidal"), "RoPE")  # values the code compares; N_: the label is translated
N_POSITIONS = 64
DIMENSIONS = [2, 4, 8, 16, 32, 64, 128]


def frequencies(d: int, base: float) -> torch.Tensor:
    """ω_p = base**(-2p/d) for the d/2 pairs p = 0 .. d/2 - 1 (both schemes use the same ones)."""
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def sinusoidal_table(L: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """(L, d): sin on even channels, cos on odd ones (Vaswani et al. 2017)."""
    angle = torch.arange(L, dtype=torch.float64)[:, None] * frequencies(d, base)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)


def rope_rotate(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate-half RoPE of x (L, d), positions 0 .. L-1 (the convention of the exercise)."""
    L, d = x.shape
    angle = torch.arange(L, dtype=torch.float64)[:, None] * frequencies(d, base)
    angle = torch.cat([angle, angle], dim=-1)
    rotated = torch.cat([-x[:, d // 2:], x[:, :d // 2]], dim=-1)
    return x * angle.cos() + rotated * angle.sin()


def position_similarity(scheme: str, d: int, base: float, L: int = N_POSITIONS,
                        seed: int = 7) -> torch.Tensor:
    """(L, L) similarity of positions i (rows) and j (columns), 1 on the diagonal, in [-1, 1]."""
    if scheme == "sinusoidal":
        pe = sinusoidal_table(L, d, base)
        return pe @ pe.T / (d / 2)
    if scheme == "RoPE":
        generator = torch.Generator().manual_seed(seed)
        token = torch.randn(d, generator=generator, dtype=torch.float64)
        rotated = rope_rotate((token / token.norm()).expand(L, d), base)  # (L, d)
        return rotated @ rotated.T
    raise ValueError(f"scheme must be one of {SCHEMES}")


def draw_similarity(fig, scheme: str, log10_base: float, d: int) -> None:
    """Left: the (L, L) heatmap with a colorbar. Right: row L/2, against the offset i - j."""
    base = 10.0 ** log10_base
    similarity = position_similarity(scheme, d, base)
    ax_map, ax_row = fig.subplots(1, 2, width_ratios=[1.15, 1])
    image = ax_map.imshow(similarity.numpy(), cmap="coolwarm", vmin=-1, vmax=1)
    fig.colorbar(image, ax=ax_map, shrink=0.85,
                 label="PE(i)·PE(j) / (d/2)" if scheme == "sinusoidal" else "RoPE(x, i) · RoPE(x, j)")
    ax_map.set(title=_("{scheme}, d = {d}, base = {base}").format(
        scheme=_(scheme), d=d, base=f"{base:,.0f}"), xlabel=_("position j"), ylabel=_("position i"))
    middle = N_POSITIONS // 2
    offsets = middle - torch.arange(N_POSITIONS)
    ax_row.plot(offsets.numpy(), similarity[middle].numpy(), color="tab:purple")
    ax_row.axhline(0, color="grey", lw=0.6)
    ax_row.set(ylim=(-1.05, 1.05), xlabel=_("offset i - j"),
               title=_("row i = {i}").format(i=middle), ylabel=_("similarity"))


def similarity_explorer() -> widgets.VBox:
    controls = {
        "scheme": widgets.ToggleButtons(options=[(_(s), s) for s in SCHEMES], value="sinusoidal",
                                        description=_("scheme")),
        "log10_base": widgets.FloatSlider(value=4.0, min=1.0, max=6.0, step=0.25,
                                          description="log10(base)", readout_format=".2f"),
        "d": widgets.SelectionSlider(options=DIMENSIONS, value=16, description=_("dimension d")),
    }
    return live_figure(draw_similarity, controls, _(
        "Attention alone does not see word order; a position encoding gives each position its "
        "own pattern of sines and cosines, over d channels (sinusoidal: added to the token; "
        "RoPE: rotating queries and keys). Left: how similar positions i and j look, for every "
        "pair of 64 positions (1: alike, −1: opposite). Right: one row, against the offset i − j. "
        "Try both schemes: every diagonal of the map holds one value, so the similarity depends "
        "on the distance i − j only. A small base or a small d makes it repeat after a few "
        "positions; a large base stretches it over many."), figsize=(10.0, 3.8))
