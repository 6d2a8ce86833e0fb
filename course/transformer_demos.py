"""Measurements shown in lesson 07 (the Transformer around attention), kept out of the notebook so
tests reach them.

- `offset_map`: the matrix R_k with PE(pos + k) = R_k PE(pos), fitted by least squares, and the
  rotation the formula predicts for it;
- `deep_stack`: activation scale and gradient size through a deep stack of feed-forward layers,
  plain, with residuals, with pre-norm or post-norm residuals;
- `rnn_vs_attention`: an RNN's L sequential steps against one attention call, timed, with the
  operation counts that explain the timings; `timing_verdict` says what the timings show, so the
  lesson's text never states a result that another machine may reverse.

None of this uses the student's exercises unless they are passed in, so it runs at any stage.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from course.memory import best_seconds
from course.i18n import _

VARIANTS = ("plain", "residual", "pre-norm residual", "post-norm residual")


def offset_map(pe: torch.Tensor, k: int) -> tuple[torch.Tensor, float]:
    """The (d, d) matrix R that best maps every PE[pos] to PE[pos + k], and the largest error.

    pe: (L, d). Least squares over the pairs (PE[pos], PE[pos + k]), pos = 0 .. L-k-1; returns
    (R, max |PE[pos + k] - R PE[pos]|). A residual near 1e-15 means one matrix fits every pos.
    """
    source, target = pe[:-k], pe[k:]
    r_transposed = torch.linalg.lstsq(source, target).solution  # target ≈ source @ R^T
    residual = (source @ r_transposed - target).abs().max().item()
    return r_transposed.T, residual


def predicted_offset_map(d: int, k: int, base: float = 10000.0) -> torch.Tensor:
    """Block-diagonal (d, d): pair i is the 2-D rotation by k * base**(-2i/d) that takes
    (sin a, cos a) to (sin(a + φ), cos(a + φ)), φ = k * base**(-2i/d)."""
    rotation = torch.zeros(d, d, dtype=torch.float64)
    for i in range(d // 2):
        phi = k * base ** (-2 * i / d)
        c, s = math.cos(phi), math.sin(phi)
        # sin(a + φ) = sin a cos φ + cos a sin φ;  cos(a + φ) = cos a cos φ - sin a sin φ
        rotation[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[c, s], [-s, c]],
                                                                  dtype=torch.float64)
    return rotation


def _feed_forward(d: int, generator: torch.Generator) -> nn.Module:
    """Linear(d, 4d), GELU, Linear(4d, d) with weights of std 1/sqrt(fan_in) and zero biases: each
    Linear keeps the variance of its input, so the layer's gain comes from the GELU alone."""
    ffn = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)).double()
    with torch.no_grad():
        for linear in (ffn[0], ffn[2]):
            fan_in = linear.weight.shape[1]
            linear.weight.copy_(torch.randn(linear.weight.shape, generator=generator,
                                            dtype=torch.float64) / math.sqrt(fan_in))
            linear.bias.zero_()
    return ffn


def deep_stack(variant: str, depth: int = 32, d: int = 64, batch: int = 16,
               seed: int = 0) -> dict[str, list[float]]:
    """Push x through `depth` feed-forward layers f (Linear, GELU, Linear; weights of std
    1/sqrt(fan_in)) wired as `variant`, then backpropagate a fixed loss.

    plain: x = f(x); residual: x = x + f(x); pre-norm residual: x = x + f(RMSNorm(x));
    post-norm residual: x = RMSNorm(x + f(x)) (the 2017 paper's "Add & Norm").
    returns "activation rms" (depth + 1 values: the input, then after each layer) and
    "gradient norm" (depth values: the norm of d loss / d weight of each layer's first Linear).
    The layers are the same for every variant (one seed), so only the wiring differs.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}")
    generator = torch.Generator().manual_seed(seed)
    layers = [_feed_forward(d, generator) for _ in range(depth)]
    norm = nn.RMSNorm(d, eps=1e-6).double()  # weight 1, no parameters to learn here
    x = torch.randn(batch, d, generator=generator, dtype=torch.float64)
    loss_weights = torch.randn(batch, d, generator=generator, dtype=torch.float64)
    rms = [x.pow(2).mean().sqrt().item()]
    with torch.enable_grad():
        for layer in layers:
            if variant == "plain":
                x = layer(x)
            elif variant == "residual":
                x = x + layer(x)
            elif variant == "pre-norm residual":
                x = x + layer(norm(x))
            else:
                x = norm(x + layer(x))
            rms.append(x.pow(2).mean().sqrt().item())
        loss = (x * loss_weights).sum() / math.sqrt(batch * d)
        grads = torch.autograd.grad(loss, [layer[0].weight for layer in layers])
    return {"activation rms": rms, "gradient norm": [g.norm().item() for g in grads]}


def operation_counts(L: int, d: int) -> dict[str, int]:
    """Multiply-adds and sequential steps of one RNN pass and one single-head self-attention.

    RNN (Elman, h_t = tanh(W x_t + U h_{t-1} + b)): L steps, each 2 d² multiply-adds, and each
    waits for the one before. Attention: the q, k, v and output projections (4 L d²) plus the
    scores and the weighted sum (2 L² d), with no step waiting for another.
    """
    return {"rnn sequential steps": L, "rnn multiply-adds": 2 * L * d * d,
            "attention sequential steps": 1, "attention multiply-adds": 4 * L * d * d + 2 * L * L * d,
            "score entries": L * L}


def rnn_vs_attention(attention: Callable[[torch.Tensor], torch.Tensor], lengths, d: int = 64,
                     repeats: int = 3, progress=None) -> dict[str, list[float]]:
    """Best-of-`repeats` seconds of an RNN step loop and of one `attention(x)` call, per length.

    The RNN is nn.RNNCell(d, d) called once per position, in a Python loop, as in the seed's
    pseudo-code h_t = RNN(x_t, h_{t-1}): step t cannot start before step t-1 is done. attention:
    any module or function mapping x (1, L, d) to (1, L, d), called once. Float32, no autograd.
    progress: optional wrapper for the loop over lengths (e.g. tqdm).
    """
    torch.manual_seed(0)
    cell = nn.RNNCell(d, d)
    seconds = {"L": list(lengths), "rnn": [], "attention": []}

    def rnn_loop(x):
        h = torch.zeros(x.shape[0], d)
        for t in range(x.shape[1]):
            h = cell(x[:, t], h)
        return h

    with torch.no_grad():
        for L in (progress(lengths) if progress else lengths):
            x = torch.randn(1, L, d, generator=torch.Generator().manual_seed(L))
            seconds["rnn"].append(best_seconds(lambda: rnn_loop(x), repeats))
            seconds["attention"].append(best_seconds(lambda: attention(x), repeats))
    return seconds


def timing_verdict(lengths, rnn_seconds, attention_seconds) -> list[str]:
    """What one run of `rnn_vs_attention` shows, read off the measurement itself: where the ratio
    RNN time / attention time peaked, what it is at the longest length (and who is faster there),
    and how fast each time grows with L (log-log slopes; attention's from L >= 256 on, where its
    L² scores dominate)."""
    from course.memory import fit_slope

    ratios = [r / a for r, a in zip(rnn_seconds, attention_seconds)]
    peak = max(range(len(ratios)), key=ratios.__getitem__)
    last = ratios[-1]
    winner = (_("attention is faster") if last > 1 else _("the RNN loop is faster") if last < 1
              else _("they take the same time"))
    long = [i for i, L in enumerate(lengths) if L >= 256] or list(range(len(lengths)))
    attention_slope = fit_slope([lengths[i] for i in long], [attention_seconds[i] for i in long])
    return [_("ratio RNN / attention: largest at L = {peak_L} ({peak:.2f}); at the longest, L = "
              "{last_L}, it is {last:.2f}: {winner} there").format(
                peak_L=lengths[peak], peak=ratios[peak], last_L=lengths[-1], last=last, winner=winner),
            _("slope of log time against log L: RNN {rnn:.2f}, attention for L >= {first} "
              "{attention:.2f}").format(rnn=fit_slope(lengths, rnn_seconds), first=lengths[long[0]],
                                         attention=attention_slope)]
