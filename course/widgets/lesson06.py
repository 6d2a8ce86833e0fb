"""Lesson 06 widget: gate logits per channel against output channels, the attention map unchanged.

`gate_demo` is the plain compute function (unit-tested); `gate_explorer()` is the thin widget.
The toy: 5 tokens, one head, 4 value channels, seeded; the gate is the same for every token, as
in an AlphaFold gate whose linear_g has weight 0 and bias = the slider values (which is exactly
how AF2 initialises it, with every bias at 1).
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import torch

from course.i18n import _
from course.widgets.base import live_figure

N_TOKENS, N_CHANNELS = 5, 4
AF2_INITIAL_LOGIT = 1.0  # linear_g bias at initialisation: sigmoid(1) = 0.73


def gate_demo(gate_logits, n_tokens: int = N_TOKENS, seed: int = 6) -> dict[str, torch.Tensor]:
    """Attention on seeded toy q, k, v, then a per-channel gate sigmoid(logits).

    gate_logits: one logit per value channel (its length sets the number of channels).
    returns weights (n, n) softmax over keys, o (n, C) = weights @ v, gate (C,) = sigmoid(logits),
    gated (n, C) = o * gate. The weights do not depend on the logits: the gate acts after them.
    """
    logits = torch.as_tensor(gate_logits, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed)
    c_qk = 4
    q = torch.randn(n_tokens, c_qk, generator=generator, dtype=torch.float64)
    k = torch.randn(n_tokens, c_qk, generator=generator, dtype=torch.float64)
    v = torch.randn(n_tokens, len(logits), generator=generator, dtype=torch.float64)
    weights = torch.softmax(q @ k.T / math.sqrt(c_qk), dim=-1)
    o = weights @ v
    gate = torch.sigmoid(logits)
    return {"weights": weights, "o": o, "gate": gate, "gated": o * gate}


def draw_gate(fig, **logits) -> None:
    """Attention weights | gate per channel | o | gate * o, for logits g0, g1, ... (kwargs)."""
    values = [logits[f"g{i}"] for i in range(len(logits))]
    result = gate_demo(values)
    ax_weights, ax_gate, ax_o, ax_gated = fig.subplots(1, 4, width_ratios=[5, 4, 4, 4])
    image = ax_weights.imshow(result["weights"].numpy(), cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(image, ax=ax_weights, shrink=0.8, label=_("weight"))
    ax_weights.set(title=_("attention weights\n(unchanged by the gate)"), xlabel=_("key"),
                   ylabel=_("query"))
    channels = range(len(values))
    ax_gate.bar(channels, result["gate"].numpy(), color="tab:green")
    ax_gate.axhline(1 / (1 + math.exp(-AF2_INITIAL_LOGIT)), color="grey", lw=0.8, ls="--")
    ax_gate.set(ylim=(0, 1), xticks=list(channels), xlabel=_("channel"),
                title=_("gate (sum {total}:\nno normalisation)").format(
                    total=f"{result['gate'].sum().item():.2f}"))
    limit = result["o"].abs().max().item()
    for ax, key, title in [(ax_o, "o", _("o (before the gate)")), (ax_gated, "gated", "gate ⊙ o")]:
        image = ax.imshow(result[key].numpy(), cmap="coolwarm", vmin=-limit, vmax=limit)
        ax.set(title=title, xlabel=_("channel"), ylabel=_("token"), xticks=list(channels))
    fig.colorbar(image, ax=[ax_o, ax_gated], shrink=0.8, label=_("value (same scale)"))


def gate_explorer(n_channels: int = N_CHANNELS) -> widgets.VBox:
    # vertical, like the faders of a mixing desk: four of them fit side by side at full length
    controls = {f"g{i}": widgets.FloatSlider(value=AF2_INITIAL_LOGIT, min=-8.0, max=8.0, step=0.5,
                                             description=_("logit {i}").format(i=i),
                                             orientation="vertical", readout_format=".1f")
                for i in range(n_channels)}
    return live_figure(draw_gate, controls, _(
        "Attention mixes the values of 5 tokens with the weights on the left; its output o has "
        "one number per token and channel. An output gate then multiplies each channel by "
        "sigmoid(logit), between 0 (closed) and 1 (open). Each slider is one channel's logit; "
        "AlphaFold2 starts them all at 1 (dashed line: 0.73). Try: pull a slider down and that "
        "channel's column of gate ⊙ o fades to 0, while the attention weights and the other "
        "channels do not move. The gates need not sum to 1: each channel is scaled on its own."),
        figsize=(10.0, 3.0))
