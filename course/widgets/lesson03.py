"""Lesson 03 widget: how many parameters heads cost, and what each head attends to.

Compute functions are plain and unit-tested; `heads_explorer()` is the thin widget layer. The
projections are real `nn.Linear` modules with the shapes of the course's MultiHeadAttention, so
the counts are what `sum(p.numel() for p in module.parameters())` gives; they do not depend on
the student's code, so the widget works before lesson 03's exercise is done.
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import torch
from torch import nn

from course.i18n import _
from course.widgets.base import live_figure

HEAD_COUNTS = [1, 2, 4, 8, 16]
WIDTHS = [32, 64, 128, 256]


def projections(c_in: int, c: int, N_head: int, bias_qkv: bool = False) -> nn.ModuleDict:
    """linear_q/k/v (c_in -> N_head*c) and linear_o (N_head*c -> c_in, with bias)."""
    return nn.ModuleDict({
        "linear_q": nn.Linear(c_in, N_head * c, bias=bias_qkv),
        "linear_k": nn.Linear(c_in, N_head * c, bias=bias_qkv),
        "linear_v": nn.Linear(c_in, N_head * c, bias=bias_qkv),
        "linear_o": nn.Linear(N_head * c, c_in),
    })


def head_width(c_in: int, N_head: int, widened: bool) -> int:
    """c per head: c_in / N_head when the width is conserved, c_in when every head is full width."""
    if widened:
        return c_in
    if c_in % N_head:
        raise ValueError(f"c_in={c_in} is not divisible by N_head={N_head}")
    return c_in // N_head


def count_parameters(c_in: int, N_head: int, widened: bool = False) -> int:
    """Parameters of the four projections (Q/K/V without bias, output with bias)."""
    modules = projections(c_in, head_width(c_in, N_head, widened), N_head)
    return sum(p.numel() for p in modules.parameters())


def parameter_curves(c_in: int, head_counts=HEAD_COUNTS) -> dict[str, list[int]]:
    """Parameter counts against N_head, width conserved and widened, with the 4*c_in^2 estimate."""
    usable = [n for n in head_counts if c_in % n == 0]
    return {
        "N_head": usable,
        "conserved": [count_parameters(c_in, n) for n in usable],
        "widened": [count_parameters(c_in, n, widened=True) for n in usable],
        "estimate": [4 * c_in ** 2] * len(usable),
    }


def per_head_weights(c_in: int, N_head: int, widened: bool = False, L: int = 8,
                     seed: int = 0) -> torch.Tensor:
    """Attention weights (N_head, L, L) of each head on one fixed input of L tokens.

    Weights and input are drawn from a seeded generator, so a given setting always shows the
    same maps. Row i of head h: how query i spreads its attention over the keys. The projections
    are drawn 1.5 times larger than nn.Linear's usual scale so that the maps show some contrast.
    """
    c = head_width(c_in, N_head, widened)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(L, c_in, generator=generator, dtype=torch.float64)
    w_q = torch.randn(N_head * c, c_in, generator=generator, dtype=torch.float64) * 1.5 / math.sqrt(c_in)
    w_k = torch.randn(N_head * c, c_in, generator=generator, dtype=torch.float64) * 1.5 / math.sqrt(c_in)
    q = (x @ w_q.T).view(L, N_head, c).transpose(0, 1)  # (N_head, L, c)
    k = (x @ w_k.T).view(L, N_head, c).transpose(0, 1)
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c), dim=-1)


def draw_heads(fig, c_in: int, N_head: int, widened: bool) -> None:
    """Left: parameters against N_head. Right: the attention map of every head (up to 8)."""
    if c_in % N_head:
        N_head = max(n for n in HEAD_COUNTS if c_in % n == 0 and n <= N_head)
    curves = parameter_curves(c_in)
    left_fig, right_fig = fig.subfigures(1, 2, width_ratios=[1, 1.3])
    ax = left_fig.subplots()
    # the estimate lies almost exactly under the conserved curve: a wide pale band shows it there
    ax.plot(curves["N_head"], curves["estimate"], color="tab:grey", lw=7, alpha=0.35,
            solid_capstyle="butt", label=_("4·c_in² (grey band, under the blue)"))
    ax.plot(curves["N_head"], curves["conserved"], marker="o", label="c = c_in / N_head")
    ax.plot(curves["N_head"], curves["widened"], marker="s", ls="--", label=_("c = c_in (widened)"))
    current = count_parameters(c_in, N_head, widened)
    ax.plot([N_head], [current], "o", ms=12, mfc="none", mec="tab:red")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N_head")
    ax.set_ylabel(_("parameters"))
    ax.set_title(_("c_in={c_in}: {count} parameters").format(c_in=c_in, count=f"{current:,}"),
                 fontsize=9)
    ax.legend(fontsize=7)
    weights = per_head_weights(c_in, N_head, widened)
    shown = min(N_head, 8)
    cols = min(shown, 4)
    rows = math.ceil(shown / cols)
    axes = right_fig.subplots(rows, cols, squeeze=False)
    for h, head_ax in enumerate(axes.flat):
        head_ax.set_xticks([])
        head_ax.set_yticks([])
        if h >= shown:
            head_ax.axis("off")
            continue
        image = head_ax.imshow(weights[h].numpy(), vmin=0, vmax=float(weights.max()), cmap="viridis")
        head_ax.set_title(_("head {h}").format(h=h), fontsize=8)
    right_fig.colorbar(image, ax=axes, shrink=0.8, label=_("weight"))  # one scale for every head
    title = _("weights (query rows, key columns), c={c}").format(c=head_width(c_in, N_head, widened))
    if N_head > 8:
        title += _(", first 8 of {n}").format(n=N_head)
    right_fig.suptitle(title, fontsize=9)


def heads_explorer() -> widgets.VBox:
    controls = {
        "c_in": widgets.Dropdown(options=WIDTHS, value=64, description="c_in"),
        "N_head": widgets.SelectionSlider(options=HEAD_COUNTS, value=4, description="N_head"),
        "widened": widgets.Checkbox(value=False, description=_("widened (c = c_in)")),
    }
    return live_figure(draw_heads, controls, _(
        "Multi-head attention projects each of c_in input channels to queries, keys and values "
        "and splits them into N_head heads of c channels, which attend separately. Left: the "
        "parameters of the four projections against N_head. With c = c_in / N_head (the usual "
        "choice) the count stays 4·c_in² + c_in whatever N_head; ticked 'widened', every head gets "
        "all c_in channels and the count grows N_head-fold. Right: each head's attention weights "
        "on the same 8 random tokens. Try: raise N_head: more maps, each different, for the same "
        "parameter count."), figsize=(8.0, 3.4))
