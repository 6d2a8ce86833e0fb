"""Lesson 10 widget: what each form of attention keeps as L grows, and one query's weights under
softmax, linear and Nyström attention side by side.

`state_numbers` and `row_weights` are the plain compute functions (unit-tested); `routes_explorer`
is the thin widget. The widget computes its own small examples (phi = elu + 1, segment-mean
landmarks, Nyströmformer's iterative inverse): widgets never import the learner's exercises, so
it works before any is written.
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import torch

from course.i18n import N_, _
from course.widgets.base import live_figure

# what one head keeps, in numbers, when it has read L tokens (d = e: the head's channels)
FORMS = {
    "softmax: scores": N_("softmax: the L × L scores"),
    "softmax: K/V cache": N_("softmax: keys and values (a generating model's cache)"),
    "linear: cumsum": N_("linear, cumsum form: every prefix state (L, d, d)"),
    "linear: recurrence": N_("linear, recurrence: one state (d, d) and z (d)"),
    "linear: chunked": N_("linear, chunked: a chunk's weights and one state"),
    "Nyström": N_("Nyström: L × m, m × m and m × L"),
    "sliding window": N_("sliding window: the last w keys and values"),
}
LENGTHS = [2 ** p for p in range(6, 18)]  # 64 .. 131,072
SEQUENCE = 48                             # tokens of the weights example


def state_numbers(form: str, L: int, d: int = 64, chunk: int = 64, m: int = 32,
                  window: int = 256) -> int:
    """How many numbers one head holds at once for the part that depends on L (the output of
    L rows is left out: every form writes it)."""
    return {
        "softmax: scores": L * L,
        "softmax: K/V cache": 2 * L * d,
        "linear: cumsum": L * d * d + L * d,
        "linear: recurrence": d * d + d,
        "linear: chunked": min(chunk, L) ** 2 + d * d + d,
        "Nyström": 2 * L * min(m, L) + min(m, L) ** 2,
        "sliding window": 2 * min(window, L) * d,
    }[form]


def _example(sharpness: float, seed: int):
    """q, k (SEQUENCE, 8): a slowly varying signal plus noise, so that neighbours look alike
    (the structure segment means rely on), scaled by `sharpness`."""
    generator = torch.Generator().manual_seed(seed)
    steps = torch.randn(SEQUENCE, 8, generator=generator, dtype=torch.float64)
    smooth = torch.cumsum(steps, dim=0) / math.sqrt(SEQUENCE) * 2
    q = smooth + 0.5 * torch.randn(SEQUENCE, 8, generator=generator, dtype=torch.float64)
    k = smooth + 0.5 * torch.randn(SEQUENCE, 8, generator=generator, dtype=torch.float64)
    return q * sharpness, k * sharpness


def _iterative_inverse(a: torch.Tensor, iterations: int = 6) -> torch.Tensor:
    eye = torch.eye(a.shape[-1], dtype=a.dtype)
    z = a.T / a.abs().sum(dim=0).max()
    for _step in range(iterations):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def row_weights(row: int, m: int, sharpness: float = 1.0, seed: int = 10) -> dict:
    """The weights query `row` gives the SEQUENCE keys (non-causal), each form's own:
    {"softmax", "linear", "nystrom"}: (SEQUENCE,) float64. Softmax and linear rows sum to 1 and
    are positive; the Nyström row sums to about 1 and may hold negative entries."""
    q, k = _example(sharpness, seed)
    scale = q.shape[-1] ** -0.5
    softmax = torch.softmax(q @ k.T * scale, dim=-1)
    phi_q, phi_k = torch.nn.functional.elu(q) + 1, torch.nn.functional.elu(k) + 1
    linear = phi_q @ phi_k.T
    linear = linear / linear.sum(dim=-1, keepdim=True)
    segment = torch.arange(SEQUENCE) * m // SEQUENCE
    means = torch.stack([torch.stack([x[segment == i].mean(dim=0) for i in range(m)])
                         for x in (q, k)])
    f = torch.softmax(q @ means[1].T * scale, dim=-1)
    a = torch.softmax(means[0] @ means[1].T * scale, dim=-1)
    b = torch.softmax(means[0] @ k.T * scale, dim=-1)
    nystrom = f @ _iterative_inverse(a) @ b
    return {"softmax": softmax[row], "linear": linear[row], "nystrom": nystrom[row]}


def draw_routes(fig, L: int, d: int, m: int, row: int, sharpness: float) -> None:
    """Left: the numbers each form holds against L, the chosen L marked. Right: one query's
    weights in three forms."""
    ax_size, ax_row = fig.subplots(1, 2, width_ratios=[1.2, 1])
    for form, label in FORMS.items():
        ax_size.loglog(LENGTHS, [state_numbers(form, n, d, m=m) for n in LENGTHS], label=_(label))
    ax_size.axvline(L, color="grey", ls=":", lw=1)
    ax_size.set(xlabel=_("L (tokens read)"), ylabel=_("numbers held per head"))
    ax_size.set_title(_("at L = {L:,}: softmax {s:,} scores, the recurrence {r:,} numbers\n"
                        "(chunks of 64, a window of 256)")
                      .format(L=L, s=state_numbers("softmax: scores", L, d),
                              r=state_numbers("linear: recurrence", L, d)), fontsize=8)
    ax_size.legend(fontsize=6, loc="upper left")
    weights = row_weights(row, m, sharpness)
    keys = torch.arange(SEQUENCE).numpy()
    ax_row.plot(keys, weights["softmax"].numpy(), "o-", ms=3, label=_("softmax"))
    ax_row.plot(keys, weights["linear"].numpy(), "s-", ms=3, label=_("linear (elu + 1)"))
    ax_row.plot(keys, weights["nystrom"].numpy(), "^-", ms=3,
                label=_("Nyström, {m} landmarks").format(m=m))
    ax_row.axvline(row, color="grey", ls=":", lw=1)
    ax_row.axhline(0.0, color="black", lw=0.5)
    ax_row.set(xlabel=_("key j"), ylabel=_("weight of key j"))
    ax_row.set_title(_("query {row}: the weights it gives the {n} keys").format(row=row,
                                                                            n=SEQUENCE),
                     fontsize=8)
    ax_row.legend(fontsize=7)


def routes_explorer() -> widgets.VBox:
    """Route two: what each form of attention holds as L grows, and one query's weights."""
    controls = {
        "L": widgets.SelectionSlider(options=LENGTHS, value=4096, description=_("L")),
        "d": widgets.SelectionSlider(options=[16, 32, 64, 128], value=64,
                                     description=_("head channels d")),
        "m": widgets.SelectionSlider(options=[1, 2, 3, 4, 6, 8, 12, 16, 24, 48], value=8,
                                     description=_("landmarks m")),
        "row": widgets.IntSlider(value=20, min=0, max=SEQUENCE - 1, description=_("query")),
        "sharpness": widgets.FloatSlider(value=1.5, min=0.25, max=4.0, step=0.25,
                                         description=_("q, k scale")),
    }
    return live_figure(draw_routes, controls, _(
        "Left: how many numbers one attention head holds at once as the sequence grows, for "
        "each form (log scales): softmax's scores grow as L², its key/value cache and the "
        "cumsum form as L, the recurrence and the chunked form not at all. Right: the weights "
        "one query gives 48 keys under softmax, linear attention (phi = elu + 1) and Nyström's "
        "approximation of softmax. Try: raise the q, k scale and see softmax sharpen while linear "
        "attention stays flat; move m from 1 (every query gets the same row: lesson 05's global "
        "attention) to 48 (Nyström close to softmax); move L and d and read the sizes."),
        figsize=(10.0, 4.0))
