"""Lesson 08's plots and widget: first-token attention, gate scores, per-head heatmaps.

Compute functions take the shipped metrics (course.lm_training.load_metrics) and return plain
numbers, so tests can check them; draw functions fill a matplotlib Figure.
"""
from __future__ import annotations

import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from course.columns import width
from course.i18n import N_, _
from course.lm_training import GATE_BINS, SEEDS, UNIFORM_SHARE, VARIANTS, run_key
from course.widgets.base import live_figure

LABELS = {"none": N_("baseline"), "elementwise": N_("G1 elementwise"),
          "headwise": N_("G1 headwise"), "static": N_("static scalar")}
COLOURS = {"none": "tab:red", "elementwise": "tab:blue", "headwise": "tab:cyan",
           "static": "tab:orange"}
ARCH_NAMES = {"paper": N_("paper-like (RMSNorm, RoPE)"),
              "gpt2": N_("GPT-2-style (LayerNorm, learned positions)")}
# the widget's choice of runs: (set-up, dataset) -> what the title calls them
RUNS = {("sink", "bb"): N_("Bigram-Backcopy, trigger token (strong-sink set-up)"),
        ("course", "bb"): N_("Bigram-Backcopy, triggers f/p/w (the course's set-up)"),
        ("course", "text"): N_("docstring text (the course's set-up)")}
# the title lesson 08's notebook gives attention_maps (a plain string in its code cell, the same
# in both editions): marked here so that the catalog holds it and the Chinese figure shows it
HEAD_MAP_TITLE = N_("paper-like build, strong-sink set-up, layer 0, head with the largest BOS share")
CAPTION = N_(
    "Each bar is the share of attention that the tokens of a tiny 2-layer language model give to "
    "position 0, the BOS (beginning-of-sequence) token that starts every input; a head with "
    "nothing to do often parks its attention there (an attention sink). Uniform attention would "
    "give BOS 0.06. Red is the model without a gate. G1 elementwise and G1 headwise are the "
    "gated-attention paper's gate, sigmoid(x W), computed from each token after attention and "
    "before the output projection, one gate per channel or one per head; the static scalar is "
    "one fixed number per head (which a model can fold into its weights). Bigram-Backcopy is a "
    "toy language: letters follow each other by English letter-pair frequencies, and after a "
    "trigger the next letter copies the one before the trigger, the only place where attention "
    "is needed. Try both set-ups of runs: find the one where the red bars are tall, then see "
    "whether the blue and cyan bars fall far below them, in each layer and for every seed.")


def first_token_share_per_layer(runs: dict, dataset: str, seed: int | str = "mean",
                                arch: str = "paper", setup: str = "course") -> dict:
    """{variant: [share of layer 0, layer 1, ...]} for one seed, or the mean over the seeds."""
    seeds = SEEDS if seed == "mean" else (int(seed),)
    shares = {}
    for gate in VARIANTS:
        keys = [run_key(arch, dataset, gate, s, setup) for s in seeds]
        per_seed = np.array([runs[k]["first_token_share_per_layer"] for k in keys if k in runs])
        shares[gate] = per_seed.mean(axis=0).tolist()
    return shares


def draw_first_token_share(fig, runs: dict, dataset: str = "bb", seed="mean",
                           arch: str = "paper", setup: str = "course") -> None:
    shares = first_token_share_per_layer(runs, dataset, seed, arch, setup)
    ax = fig.add_subplot()
    n_layers = len(shares["none"])
    width = 0.8 / len(VARIANTS)
    for i, gate in enumerate(VARIANTS):
        xs = np.arange(n_layers) + (i - (len(VARIANTS) - 1) / 2) * width
        ax.bar(xs, shares[gate], width, label=_(LABELS[gate]), color=COLOURS[gate])
    ax.axhline(UNIFORM_SHARE, color="grey", linestyle=":", linewidth=1)
    ax.set_xticks(range(n_layers), [_("layer {layer}").format(layer=layer) for layer in range(n_layers)])
    ax.set_ylim(0, 1)
    ax.set_ylabel(_("attention on position 0 (BOS)"))
    which = _("mean over seeds") if seed == "mean" else _("seed {seed}").format(seed=seed)
    ax.set_title(f"{_(ARCH_NAMES[arch])}\n{_(RUNS[setup, dataset])}, {which}", fontsize=9)
    ax.legend(fontsize=8, loc="upper right")


def dropdown_width(labels, description_columns: int = 12) -> str:
    """A CSS width that shows the longest of `labels` whole, next to a description: about 0.6 em
    per column of monospace-like width (a Chinese character takes two columns)."""
    columns = max(width(text) for text in labels) + description_columns
    return f"{math.ceil(0.6 * columns) + 3}em"


def sink_explorer(runs: dict) -> widgets.VBox:
    """Pick the runs (a set-up and a dataset), a build and a seed; bars show each layer's
    first-token share for every variant."""
    controls = {
        # wide enough for the longest choice: a Dropdown is 300 px by default, which cut the
        # names of the runs off
        "which": widgets.Dropdown(options=[(_(name), key) for key, name in RUNS.items()],
                                  value=("sink", "bb"), description=_("trained runs"),
                                  layout=widgets.Layout(width=dropdown_width(_(n) for n in RUNS.values()))),
        "arch": widgets.ToggleButtons(options=[(_("paper-like"), "paper"), (_("GPT-2-style"), "gpt2")],
                                      value="paper", description=_("model")),
        "seed": widgets.Dropdown(options=[(_("mean"), "mean")] + [(str(s), str(s)) for s in SEEDS],
                                 value="mean", description=_("seed")),
    }

    def draw(fig, which, arch, seed):
        setup, dataset = which
        draw_first_token_share(fig, runs, dataset, seed, arch, setup)

    return live_figure(draw, controls, _(CAPTION), figsize=(7.0, 3.6))


def per_head_heatmaps(runs: dict, dataset: str, seed: int, arch: str = "paper",
                      setup: str = "course"):
    """One heatmap per variant: first-token share of each (layer, head)."""
    fig, axes = plt.subplots(1, len(VARIANTS), figsize=(12, 2.6), layout="constrained")
    for ax, gate in zip(axes, VARIANTS):
        values = np.array(runs[run_key(arch, dataset, gate, seed, setup)]["first_token_share_per_head"])
        image = ax.imshow(values, vmin=0, vmax=1, cmap="Reds")
        for (layer, head), v in np.ndenumerate(values):
            ax.text(head, layer, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if v > 0.6 else "black")
        ax.set_title(_(LABELS[gate]), fontsize=10)
        ax.set_xlabel(_("head"))
        ax.set_ylabel(_("layer"))
        ax.set_xticks(range(values.shape[1]))
        ax.set_yticks(range(values.shape[0]))
    fig.colorbar(image, ax=axes[-1], shrink=0.8, label=_("share on BOS"))
    plt.close(fig)  # shown once, as the cell's value, not again by pyplot
    return fig


def gate_histograms(runs: dict, dataset: str, seed: int, arch: str = "paper",
                    setup: str = "course"):
    """Histogram of all gate scores of each gated variant (counts shipped in the metrics)."""
    gated = [g for g in VARIANTS if g != "none"]
    fig, axes = plt.subplots(1, len(gated), figsize=(11, 2.6), layout="constrained")
    edges = np.linspace(0, 1, GATE_BINS + 1)
    for ax, gate in zip(axes, gated):
        m = runs[run_key(arch, dataset, gate, seed, setup)]
        counts = np.array(m["gate_histogram"])
        ax.bar(edges[:-1], counts / counts.sum(), width=1 / GATE_BINS, align="edge",
               color=COLOURS[gate])
        ax.set_title(_("{variant}: mean {mean:.2f}").format(variant=_(LABELS[gate]), mean=m["gate_mean"]),
                     fontsize=10)
        ax.set_xlabel(_("gate score"))
        ax.set_xlim(0, 1)
    axes[0].set_ylabel(_("fraction of scores"))
    plt.close(fig)
    return fig


def attention_maps(weights_by_variant: dict, title: str):
    """Attention weights (query x key) of one head, one panel per variant; the title is
    translated where the catalog has it."""
    fig, axes = plt.subplots(1, len(weights_by_variant), figsize=(3.1 * len(weights_by_variant), 3.0),
                             layout="constrained")
    for ax, (gate, weights) in zip(np.atleast_1d(axes), weights_by_variant.items()):
        ax.imshow(np.asarray(weights), vmin=0, vmax=1, cmap="viridis")
        ax.set_title(_(LABELS.get(gate, gate)), fontsize=10)
        ax.set_xlabel(_("key (0 = BOS)"))
        ax.set_ylabel(_("query"))
    fig.suptitle(_(title))
    plt.close(fig)
    return fig


ARM_COLOURS = {**COLOURS, "wider": "tab:brown"}
ARM_LABELS = {**LABELS, "wider": N_("wider baseline")}
# what the training curves draw: (title, the value of one logged point)
CURVES = {
    "share": (N_("share on BOS"), lambda point: point["first_token_share"]),
    "loss_bos_blocked": (N_("loss with BOS blocked (nats)"), lambda point: point["loss_bos_blocked"]),
    "bos_cost": (N_("cost of blocking BOS (nats)"),
                 lambda point: point["loss_bos_blocked"] - point["val_loss"]),
    "val_loss": (N_("validation loss"), lambda point: point["val_loss"]),
}
# the experiment's run-key prefixes (course.lesson08_experiment.run_key)
CURVE_SETUPS = {"experiment/paper": N_("the course's set-up"),
                "experiment/sink/paper": N_("the strong-sink set-up")}
# the first stage of the experiment: the paper's claim, G1 elementwise against the baseline
STAGE_1 = ("none", "elementwise")


def curves_of(runs: dict, prefix: str, arm: str, curve: str) -> tuple[list[int], list[list[float]]]:
    """(steps, one list of values per seed) of one arm's logged training curves."""
    value = CURVES[curve][1]
    found = [m["curve"] for k, m in runs.items()
             if k.startswith(f"{prefix}/bb/{arm}/seed") and m.get("curve")]
    steps = [point["step"] for point in found[0]] if found else []
    return steps, [[value(point) for point in c] for c in found]


def training_curves(runs: dict, prefixes=tuple(CURVE_SETUPS), curves=("share", "loss_bos_blocked", "bos_cost"),
                    arms=STAGE_1):
    """One panel per set-up and measurement: every seed's curve (thin) and their mean (thick),
    one colour per arm, drawn from the shipped metrics; in the panel of the loss with BOS blocked
    a dashed line is each arm's mean validation loss with every key, and the axis leaves out the
    first logged point (the untrained loss). Set-ups without a logged run of these arms are left
    out (the experiment ships the runs trained so far)."""
    prefixes = [p for p in prefixes if any(curves_of(runs, p, arm, "share")[1] for arm in arms)] or list(prefixes)[:1]
    fig, axes = plt.subplots(len(prefixes), len(curves), figsize=(4.0 * len(curves), 2.9 * len(prefixes)),
                             layout="constrained", squeeze=False)
    for row, prefix in zip(axes, prefixes):
        for ax, curve in zip(row, curves):
            later = []  # the values after the first logged point (the losses start far above)
            for arm in arms:
                steps, seeds = curves_of(runs, prefix, arm, curve)
                if not seeds:
                    continue
                for values in seeds:
                    ax.plot(steps, values, color=ARM_COLOURS[arm], linewidth=0.6, alpha=0.35)
                    later += values[1:]
                ax.plot(steps, np.mean(seeds, axis=0), color=ARM_COLOURS[arm], linewidth=2.2,
                        label=f"{_(ARM_LABELS[arm])} (n = {len(seeds)})")
                if curve == "loss_bos_blocked":
                    steps, full = curves_of(runs, prefix, arm, "val_loss")
                    later += [v for values in full for v in values[1:]]
                    ax.plot(steps, np.mean(full, axis=0), color=ARM_COLOURS[arm], linewidth=1.2,
                            linestyle="--", label=_("{arm}: loss with every key").format(arm=_(ARM_LABELS[arm])))
            if curve == "loss_bos_blocked" and later:
                margin = 0.05 * (max(later) - min(later))
                ax.set_ylim(min(later) - margin, max(later) + margin)
                ax.legend(fontsize=7)
            ax.set_title(f"{_(CURVE_SETUPS[prefix])}: {_(CURVES[curve][0])}", fontsize=9)
            ax.set_xlabel(_("training step"))
        if row[0].get_legend_handles_labels()[0]:  # a set-up with no run yet has no legend
            row[0].legend(fontsize=7)
    plt.close(fig)
    return fig
