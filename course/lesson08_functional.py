"""Lesson 08's functional tests of the attention sink: does the model *need* its first token?

A sink is a pattern (heads put their weight on BOS) and, in large models, a dependence: Xiao et
al. 2023 ("Efficient Streaming Language Models with Attention Sinks", StreamingLLM) showed that a
model whose cache keeps only a window of recent tokens breaks once the first tokens are evicted,
and recovers when the first few are kept. These functions run that test at toy scale, on a
trained TinyLM (solutions/tiny_lm.py), by masking keys in every layer:

- BOS blocked: every query i >= 1 may attend to every earlier key except BOS (query 0 keeps BOS,
  its only key); the softmax renormalises over the keys left.
- window w: query i sees keys i-w+1 .. i only (the positions, hence RoPE's offsets, unchanged);
  window w + BOS: the same keys plus BOS, StreamingLLM's fix.

- BOS's value zeroed: the attention weights stay as they are, but what a head reads at BOS is
  zero. If this costs as much as blocking BOS, the model uses BOS's value (a fixed vector it
  learned to read there); if it costs nothing, BOS is only a place to park weight.

The value drain (Guo et al. 2024): how large BOS's value vector is next to the other tokens'.
The sink rate (Gu et al. 2024, "When Attention Sink Emerges in Language Models: An Empirical
View"): the fraction of (layer, head) whose mean attention on the first token exceeds EPSILON.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch
import torch.nn.functional as F

WINDOWS = (4, 8, 16)
EPSILON = 0.3  # Gu et al.'s threshold for a head to count as a sink head


def key_mask(L: int, block_bos: bool = False, window: int | None = None,
             keep_bos: bool = False, device=None) -> torch.Tensor:
    """Bool (L, L) on `device`: True where query i may see key j (causality is applied by the
    model on top). Query 0 always keeps key 0, its only key, so no row of the softmax is empty."""
    i, j = torch.arange(L, device=device)[:, None], torch.arange(L, device=device)[None, :]
    allowed = torch.ones(L, L, dtype=torch.bool, device=device)
    if window is not None:
        allowed &= (i - j) < window
    if block_bos:
        allowed[:, 0] = False
    if keep_bos:
        allowed[:, 0] = True
    allowed[0, 0] = True
    return allowed


@torch.no_grad()
def loss_with(model, tokens: torch.Tensor, allowed: torch.Tensor | None = None) -> float:
    """Mean cross-entropy of predicting tokens[:, 1:] (B, L) with the keys `allowed` (L, L)."""
    logits = model(tokens, allowed=allowed)
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).item()


def _values(attn, x: torch.Tensor) -> torch.Tensor:
    """The value vectors of one attention layer, (B, L, n_heads, head_dim), from its input x."""
    if hasattr(attn, "linear_v"):
        v = attn.linear_v(x)
    else:  # the GPT-2-style layer stacks q, k, v
        v = attn.qkv(x).unflatten(-1, (3, -1))[..., 2, :]
    return v.unflatten(-1, (attn.n_heads, -1))


@torch.no_grad()
def value_drain(model, tokens: torch.Tensor, record: dict | None = None) -> list[list[float]]:
    """[layer][head]: mean |value at BOS| / mean |value of the other tokens| (1 = as large as
    theirs; Guo et al.'s value-state drain is a small number). tokens: (B, L), BOS at 0.
    record: the details of model(tokens, details=True), if already computed."""
    if record is None:
        record = model(tokens, details=True)[1]
    inputs = [model.embed(tokens)] + record["hidden"][:-1]  # what enters each block
    drains = []
    for block, h in zip(model.blocks, inputs):
        size = _values(block.attn, block.norm_attn(h)).norm(dim=-1)  # (B, L, n_heads)
        drains.append((size[:, 0].mean(0) / size[:, 1:].mean((0, 1))).tolist())
    return drains


def _zero_position_0(d_model: int | None):
    """A forward hook that zeroes position 0 of a projection's output (its last d_model
    channels only, the values of a stacked qkv, when d_model is given)."""
    def hook(_module, _inputs, output):
        output = output.clone()
        output[:, 0, -(d_model or output.shape[-1]):] = 0.0
        return output
    return hook


@contextmanager
def bos_value_zeroed(model):
    """Within the block, every layer's value vector at position 0 (BOS) is zero."""
    hooks = []
    for block in model.blocks:
        attn = block.attn
        if hasattr(attn, "linear_v"):
            hooks.append(attn.linear_v.register_forward_hook(_zero_position_0(None)))
        else:
            hooks.append(attn.qkv.register_forward_hook(_zero_position_0(attn.qkv.weight.shape[1])))
    try:
        yield model
    finally:
        for hook in hooks:
            hook.remove()


def sink_rate(share_per_head: list[list[float]], epsilon: float = EPSILON) -> float:
    """Gu et al.'s metric: the fraction of heads, over all layers, whose mean attention on the
    first token (share_per_head[layer][head], queries >= 1) exceeds epsilon."""
    flat = [s for layer in share_per_head for s in layer]
    return sum(s > epsilon for s in flat) / len(flat)


@torch.no_grad()
def functional(model, tokens: torch.Tensor, windows=WINDOWS) -> dict:
    """The functional tests of one model on tokens (B, L): the loss with all keys, with BOS
    blocked, with BOS's value zeroed, and in windows of recent keys without and with BOS."""
    L, device = tokens.shape[-1], tokens.device
    result = {"loss_full": loss_with(model, tokens),
              "loss_bos_blocked": loss_with(model, tokens, key_mask(L, block_bos=True, device=device))}
    with bos_value_zeroed(model):
        result["loss_bos_value_zeroed"] = loss_with(model, tokens)
    result["loss_window"] = {str(w): loss_with(model, tokens, key_mask(L, window=w, device=device))
                             for w in windows}
    result["loss_window_bos"] = {str(w): loss_with(model, tokens, key_mask(L, window=w, keep_bos=True,
                                                                           device=device))
                                 for w in windows}
    return result
