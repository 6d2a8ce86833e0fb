"""Shared plots: the model graph with and without Graphviz's `dot`."""
import shutil

import pytest
import torch

from course.plots import heatmaps, show_model_graph
from solutions.mha import MultiHeadAttention


def test_graph_without_dot_prints_the_dot_source(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "/nonexistent")
    graph = show_model_graph(MultiHeadAttention(8, 2, 4), torch.randn(1, 3, 8), "MHA")
    out = capsys.readouterr().out
    assert "Graphviz `dot` not found" in out and "digraph MHA" in out
    assert "linear_q" in graph.visual_graph.source or "Linear" in graph.visual_graph.source


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz dot (make puts one on PATH)")
def test_graph_renders_svg_with_dot(capsys):
    graph = show_model_graph(MultiHeadAttention(8, 2, 4, gated=True), torch.randn(1, 3, 8), "MHA")
    assert "not found" not in capsys.readouterr().out
    assert graph.visual_graph.pipe(format="svg").lstrip().startswith(b"<?xml")


def test_heatmaps_one_panel_per_map():
    fig = heatmaps([torch.eye(3), torch.ones(3, 3) / 3], ["a", "b"], row_labels=list("xyz"))
    assert len(fig.axes) == 3  # two maps and a colour bar
