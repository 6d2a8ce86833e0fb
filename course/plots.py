"""Plots shared by several lessons."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.i18n import _


def heatmaps(maps, titles, row_labels=None, col_labels=None, suptitle=None, cmap="viridis",
             annotate: bool = True):
    """Side-by-side heatmaps of 2-D tensors (e.g. attention weights: rows are queries, columns keys)."""
    fig, axes = plt.subplots(1, len(maps), figsize=(3.2 * len(maps), 3.0), squeeze=False,
                             layout="constrained")
    for ax, values, title in zip(axes[0], maps, titles):
        values = torch.as_tensor(values).detach().double()
        image = ax.imshow(values.numpy(), cmap=cmap, vmin=0, vmax=max(1.0, values.max().item()))
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(_("key"))
        ax.set_ylabel(_("query"))
        if row_labels is not None:
            ax.set_yticks(range(len(row_labels)), row_labels)
        if col_labels is not None:
            ax.set_xticks(range(len(col_labels)), col_labels, rotation=45, ha="right")
        if annotate and values.numel() <= 64:
            for (i, j), v in ((ij, values[ij].item()) for ij in
                              ((i, j) for i in range(values.shape[0]) for j in range(values.shape[1]))):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if v < 0.6 else "black")
    fig.colorbar(image, ax=axes[0, -1], shrink=0.8)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


def show_model_graph(module, input_data, name: str, depth: int = 3):
    """Draw a module's forward pass with torchview; without Graphviz's `dot`, print the DOT source.

    Returns the torchview graph. The SVG goes to the notebook (cells showing it are tagged
    nbval-ignore-output: the layout may differ between Graphviz builds).
    """
    import shutil

    from IPython.display import SVG, display
    from torchview import draw_graph

    graph = draw_graph(module, input_data=input_data, graph_name=name, expand_nested=True,
                       depth=depth)
    graph.visual_graph.node_attr["fontname"] = "Helvetica"  # a font every Graphviz knows
    if shutil.which("dot"):
        display(SVG(graph.visual_graph.pipe(format="svg")))
    else:
        print(_("Graphviz `dot` not found, so here is the graph's DOT source instead "
                "(paste it into any Graphviz viewer):") + "\n")
        print(graph.visual_graph.source)
    return graph
