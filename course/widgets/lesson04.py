"""Lesson 04: a bias on one (query, key) pair as a widget, and the toy MSA's column statistics.

Compute functions are plain and unit-tested; `pair_bias_explorer()` is the thin widget layer.
"""
from __future__ import annotations

from pathlib import Path

import ipywidgets as widgets
import torch
from matplotlib.patches import Rectangle

from course import ROOT
from course.i18n import _
from course.widgets.base import live_figure

AMINO_ACIDS = "ACDEFGHIKLMNPQRSTVWY"
TOY_MSA = ROOT / "data" / "toy_msa.fasta"


# --- a bias on one pair -----------------------------------------------------------------------

def example_scores(L: int = 5, seed: int = 4) -> torch.Tensor:
    """Fixed (L, L) scores q kᵀ/√c of random (seeded) queries and keys of width 8."""
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(L, 8, generator=generator, dtype=torch.float64)
    k = torch.randn(L, 8, generator=generator, dtype=torch.float64)
    return q @ k.T / 8 ** 0.5


def weights_with_pair_bias(scores: torch.Tensor, i: int, j: int, b: float) -> torch.Tensor:
    """softmax over keys of scores + bias, where the bias is b at (i, j) and 0 elsewhere."""
    bias = torch.zeros_like(scores)
    bias[i, j] = b
    return torch.softmax(scores + bias, dim=-1)


def draw_pair_bias(fig, i: int, j: int, b: float) -> None:
    """Left: all weights with the bias (the biased cell outlined). Right: row i without/with it."""
    scores = example_scores()
    before = torch.softmax(scores, dim=-1)
    after = weights_with_pair_bias(scores, i, j, b)
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.4])
    image = left.imshow(after.numpy(), vmin=0, vmax=1, cmap="viridis")
    fig.colorbar(image, ax=left, shrink=0.8, label=_("weight"))
    left.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="tab:red", lw=2))
    left.set_xlabel(_("key j"))
    left.set_ylabel(_("query i"))
    left.set_title(_("weights, bias {b} at ({i}, {j})").format(b=f"{b:+.1f}", i=i, j=j), fontsize=9)
    keys = torch.arange(scores.shape[-1]).numpy()
    right.bar(keys - 0.2, before[i].numpy(), width=0.4, label=_("no bias"), color="tab:grey")
    right.bar(keys + 0.2, after[i].numpy(), width=0.4, label=_("with bias"), color="tab:blue")
    right.set_ylim(0, 1)
    right.set_xticks(keys)
    right.set_xlabel(_("key j"))
    right.set_ylabel(_("weight of query {i}").format(i=i))
    right.legend(fontsize=8)
    right.set_title(_("only row i changes; it still sums to 1"), fontsize=9)


def pair_bias_explorer() -> widgets.VBox:
    controls = {
        "i": widgets.IntSlider(value=1, min=0, max=4, description=_("query i")),
        "j": widgets.IntSlider(value=3, min=0, max=4, description=_("key j")),
        "b": widgets.FloatSlider(value=2.0, min=-10.0, max=10.0, step=0.5,
                                 description=_("bias b")),
    }
    return live_figure(draw_pair_bias, controls, _(
        "Attention weights of 5 queries (rows) over 5 keys (columns); each row sums to 1. An "
        "attention bias is a number added to a score before the softmax: here b, on the one "
        "(query i, key j) pair outlined in red. Right: row i without and with it. Try: a positive b "
        "pulls query i towards key j and takes weight from its other keys; b = −10 all but "
        "removes key j, as a mask would. The other rows never change."))


# --- the toy MSA ------------------------------------------------------------------------------

def read_fasta(path: Path | str = TOY_MSA) -> tuple[list[str], list[str]]:
    """Names and sequences of a FASTA file (sequences may span several lines)."""
    names, sequences = [], []
    for line in Path(path).read_text().splitlines():
        if line.startswith(">"):
            names.append(line[1:].split()[0])
            sequences.append("")
        elif line.strip():
            sequences[-1] += line.strip()
    return names, sequences


def one_hot_msa(sequences: list[str], alphabet: str = AMINO_ACIDS) -> torch.Tensor:
    """(S, R, len(alphabet)) float64: row s, position r is the one-hot code of its residue."""
    index = torch.tensor([[alphabet.index(a) for a in row] for row in sequences])
    return torch.nn.functional.one_hot(index, len(alphabet)).double()


def pair_frequencies(msa_one_hot: torch.Tensor) -> torch.Tensor:
    """(R, R, A, A): f[i, j, a, b] = fraction of sequences with residue a at i and b at j.

    A mean over the sequence axis of outer products: a statistic taken along the columns,
    the same shape of computation as AlphaFold2's outer product mean.
    """
    return torch.einsum("sia,sjb->ijab", msa_one_hot, msa_one_hot) / msa_one_hot.shape[0]


def column_mutual_information(msa_one_hot: torch.Tensor) -> torch.Tensor:
    """(R, R) mutual information in nats between the residues of every pair of positions.

    MI(i, j) = sum_ab f_ij(a, b) log(f_ij(a, b) / (f_i(a) f_j(b))), with 0 log 0 = 0. It is 0 when
    the two columns vary independently (or do not vary), and log 2 = 0.693 for two columns that
    each take two letters half the time and always together. The diagonal is set to 0.
    """
    joint = pair_frequencies(msa_one_hot)
    single = msa_one_hot.mean(dim=0)  # (R, A)
    independent = single[:, None, :, None] * single[None, :, None, :]
    ratio = torch.where(joint > 0, joint / independent.clamp_min(1e-300), torch.ones_like(joint))
    mi = (joint * ratio.log()).sum(dim=(-2, -1))
    return mi.fill_diagonal_(0.0).clamp_min(0.0)
