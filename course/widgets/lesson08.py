"""Lesson 08's plots and widget: first-token attention, gate scores, per-head heatmaps.

Compute functions take the shipped metrics (course.lm_training.load_metrics) and return plain
numbers, so tests can check them; draw functions fill a matplotlib Figure.
"""
from __future__ import annotations

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from course.lm_training import GATE_BINS, SEEDS, VARIANTS, run_key
from course.widgets.base import live_figure

LABELS = {"none": "baseline", "elementwise": "G1 elementwise", "headwise": "G1 headwise",
          "static": "static scalar"}
COLOURS = {"none": "tab:red", "elementwise": "tab:blue", "headwise": "tab:cyan",
           "static": "tab:orange"}


ARCH_NAMES = {"paper": "paper-like (RMSNorm, RoPE)", "gpt2": "GPT-2-style (LayerNorm, learned positions)"}


def first_token_share_per_layer(runs: dict, dataset: str, seed: int | str = "mean",
                                arch: str = "paper") -> dict:
    """{variant: [share of layer 0, layer 1, ...]} for one seed, or the mean over the seeds."""
    seeds = SEEDS if seed == "mean" else (int(seed),)
    shares = {}
    for gate in VARIANTS:
        per_seed = np.array([runs[run_key(arch, dataset, gate, s)]["first_token_share_per_layer"]
                             for s in seeds if run_key(arch, dataset, gate, s) in runs])
        shares[gate] = per_seed.mean(axis=0).tolist()
    return shares


def draw_first_token_share(fig, runs: dict, dataset: str = "bb", seed="mean",
                           arch: str = "paper") -> None:
    shares = first_token_share_per_layer(runs, dataset, seed, arch)
    ax = fig.add_subplot()
    n_layers = len(shares["none"])
    width = 0.8 / len(VARIANTS)
    for i, gate in enumerate(VARIANTS):
        xs = np.arange(n_layers) + (i - (len(VARIANTS) - 1) / 2) * width
        ax.bar(xs, shares[gate], width, label=LABELS[gate], color=COLOURS[gate])
    ax.set_xticks(range(n_layers), [f"layer {layer}" for layer in range(n_layers)])
    ax.set_ylim(0, 1)
    ax.set_ylabel("attention on position 0 (BOS)")
    name = "Bigram-Backcopy" if dataset == "bb" else "docstring text"
    ax.set_title(f"{ARCH_NAMES[arch]}, {name}, "
                 f"{'mean over seeds' if seed == 'mean' else f'seed {seed}'}", fontsize=10)
    ax.legend(fontsize=8, loc="upper right")


def sink_explorer(runs: dict) -> widgets.VBox:
    """Pick an architecture, a dataset and a seed; bars show each layer's first-token share for
    every variant."""
    controls = {
        "arch": widgets.ToggleButtons(options=[("paper-like", "paper"), ("GPT-2-style", "gpt2")],
                                      value="paper", description="model"),
        "dataset": widgets.ToggleButtons(options=[("Bigram-Backcopy", "bb"), ("text", "text")],
                                         value="bb", description="data"),
        "seed": widgets.Dropdown(options=["mean"] + [str(s) for s in SEEDS], value="mean",
                                 description="seed"),
    }

    def draw(fig, arch, dataset, seed):
        draw_first_token_share(fig, runs, dataset, seed, arch)

    return live_figure(draw, controls, "red: no gate; compare it with the gated variants layer "
                       "by layer, on text and on Bigram-Backcopy", figsize=(7.0, 3.4))


def per_head_heatmaps(runs: dict, dataset: str, seed: int, arch: str = "paper"):
    """One heatmap per variant: first-token share of each (layer, head)."""
    fig, axes = plt.subplots(1, len(VARIANTS), figsize=(12, 2.6), layout="constrained")
    for ax, gate in zip(axes, VARIANTS):
        values = np.array(runs[run_key(arch, dataset, gate, seed)]["first_token_share_per_head"])
        image = ax.imshow(values, vmin=0, vmax=1, cmap="Reds")
        for (layer, head), v in np.ndenumerate(values):
            ax.text(head, layer, f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="white" if v > 0.6 else "black")
        ax.set_title(LABELS[gate], fontsize=10)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
        ax.set_xticks(range(values.shape[1]))
        ax.set_yticks(range(values.shape[0]))
    fig.colorbar(image, ax=axes[-1], shrink=0.8, label="share on BOS")
    plt.close(fig)  # shown once, as the cell's value, not again by pyplot
    return fig


def gate_histograms(runs: dict, dataset: str, seed: int, arch: str = "paper"):
    """Histogram of all gate scores of each gated variant (counts shipped in the metrics)."""
    gated = [g for g in VARIANTS if g != "none"]
    fig, axes = plt.subplots(1, len(gated), figsize=(11, 2.6), layout="constrained")
    edges = np.linspace(0, 1, GATE_BINS + 1)
    for ax, gate in zip(axes, gated):
        m = runs[run_key(arch, dataset, gate, seed)]
        counts = np.array(m["gate_histogram"])
        ax.bar(edges[:-1], counts / counts.sum(), width=1 / GATE_BINS, align="edge",
               color=COLOURS[gate])
        ax.set_title(f"{LABELS[gate]}: mean {m['gate_mean']:.2f}", fontsize=10)
        ax.set_xlabel("gate score")
        ax.set_xlim(0, 1)
    axes[0].set_ylabel("fraction of scores")
    plt.close(fig)
    return fig


def attention_maps(weights_by_variant: dict, title: str):
    """Attention weights (query x key) of one head, one panel per variant."""
    fig, axes = plt.subplots(1, len(weights_by_variant), figsize=(3.1 * len(weights_by_variant), 3.0),
                             layout="constrained")
    for ax, (gate, weights) in zip(np.atleast_1d(axes), weights_by_variant.items()):
        ax.imshow(np.asarray(weights), vmin=0, vmax=1, cmap="viridis")
        ax.set_title(LABELS.get(gate, gate), fontsize=10)
        ax.set_xlabel("key (0 = BOS)")
        ax.set_ylabel("query")
    fig.suptitle(title)
    plt.close(fig)
    return fig
