# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 08: causal self-attention with the output gate of Qiu et al. 2025 (arXiv 2505.06708).

The paper's gate, at position G1 (after scaled dot-product attention, before W_O):

    Y' = Y * sigmoid(X W_theta)

X is the layer's input (the normalised hidden state of each token), Y the SDPA output of each
head. So the gate is different for every token and every head. W_theta has no bias: in the
paper's code the gate logits are extra output rows of q_proj, which has no bias (unless the
model's QKV bias is switched on); a separate bias-free Linear from X computes the same thing.
"elementwise": one gate per head channel (W_theta has n_heads*head_dim columns); "headwise": one
gate per head (n_heads columns).
For comparison, "static" is one learned number per head, sigmoid(g_h), the same for every token:
what seed 003 describes. It is not the paper's gate, and below we show it folds into W_O.
"""
from __future__ import annotations

import torch
from torch import nn

from .attention import attention_weights, causal_mask
from .tiny_lm import apply_rope  # given code, no exercise

GATES = ("none", "elementwise", "headwise", "static")


class GatedCausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with an optional sigmoid output gate.

    d_model: channels of x; n_heads heads of head_dim = d_model // n_heads channels.
    gate: "none", "elementwise" (G1, one gate per head channel), "headwise" (G1, one gate per
        head) or "static" (one learned scalar per head, for comparison).
    Parameters: qkv = Linear(d_model, 3*d_model, bias=False) (q, k, v stacked in that order),
        out = Linear(d_model, d_model, bias=False) (W_O), and gate_proj (W_theta, bias-free)
        for the input-dependent gates or gate_logit (n_heads,) for the static one.
    rope: rotate q and k by their positions (rotary embeddings, as the paper-like tiny LM does;
        given code), so that a trained layer of that model runs in this module.
    """

    def __init__(self, d_model: int, n_heads: int, gate: str = "elementwise", rope: bool = False):
        super().__init__()
        if gate not in GATES:
            raise ValueError(f"gate must be one of {GATES}, got {gate!r}")
        self.n_heads, self.head_dim, self.gate = n_heads, d_model // n_heads, gate
        self.rope = rope
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)
        if gate in ("elementwise", "headwise"):
            # Hint: one gate logit per head channel (elementwise) or per head (headwise), no bias.
            raise NotImplementedError("lesson 08: write GatedCausalSelfAttention.__init__ in exercises/gated_attention.py")
        elif gate == "static":
            self.gate_logit = nn.Parameter(torch.zeros(n_heads))

    def attend(self, x: torch.Tensor):
        """x: (*, L, d_model) -> SDPA output per head (*, L, n_heads, head_dim) and the
        attention weights (*, n_heads, L, L)."""
        q, k, v = self.qkv(x).unflatten(-1, (3, self.n_heads, self.head_dim)).unbind(-3)
        q, k, v = (t.transpose(-3, -2) for t in (q, k, v))  # (*, n_heads, L, head_dim)
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        weights = attention_weights(q, k, mask=causal_mask(x.shape[-2]).to(x.device))
        return (weights @ v).transpose(-3, -2), weights

    def gate_scores(self, x: torch.Tensor) -> torch.Tensor:
        """x: (*, L, d_model) -> gate scores in (0, 1), shape (*, L, n_heads, head_dim) for
        "elementwise", (*, L, n_heads, 1) for "headwise" and "static"."""
        if self.gate == "static":
            return torch.sigmoid(self.gate_logit)[:, None].expand(*x.shape[:-1], -1, 1)
        # Hint: a linear map of each token's x, a sigmoid, then split the last axis into heads.
        raise NotImplementedError("lesson 08: write GatedCausalSelfAttention.gate_scores in exercises/gated_attention.py")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (*, L, d_model), the layer's normalised input. returns (*, L, d_model)."""
        y, _ = self.attend(x)  # (*, L, n_heads, head_dim)
        if self.gate != "none":
            # Hint: G1 multiplies each head's SDPA output by its gate scores, before W_O.
            raise NotImplementedError("lesson 08: write GatedCausalSelfAttention.forward in exercises/gated_attention.py")
        return self.out(y.flatten(-2))


# ---- The non-linearity claim, in code (given; the lesson runs these) -----------------------

def head_slice(module: GatedCausalSelfAttention, head: int) -> slice:
    return slice(head * module.head_dim, (head + 1) * module.head_dim)


def value_output_map(module: GatedCausalSelfAttention, head: int) -> torch.Tensor:
    """The (d_model, d_model) matrix W_V,h W_O,h of one head: without a gate, the head adds
    weights_h @ (x @ this matrix) to the output. It factors through head_dim channels, so its
    rank is at most head_dim."""
    d_model = module.out.weight.shape[0]
    w_v = module.qkv.weight[2 * d_model:][head_slice(module, head)]  # (head_dim, d_model)
    w_o = module.out.weight[:, head_slice(module, head)]  # (d_model, head_dim)
    return w_v.T @ w_o.T


def fold_static_gate(module: GatedCausalSelfAttention) -> GatedCausalSelfAttention:
    """An ungated copy whose W_O columns of head h are scaled by sigmoid(g_h): same function."""
    d_model = module.out.weight.shape[0]
    folded = GatedCausalSelfAttention(d_model, module.n_heads, gate="none",
                                      rope=module.rope).to(module.out.weight)
    with torch.no_grad():
        folded.qkv.weight.copy_(module.qkv.weight)
        scale = torch.sigmoid(module.gate_logit).repeat_interleave(module.head_dim)
        folded.out.weight.copy_(module.out.weight * scale)
    return folded


def head_contribution(module: GatedCausalSelfAttention, x: torch.Tensor, head: int) -> torch.Tensor:
    """What head h adds to the layer's output: (*, L, d_model)."""
    y, _ = module.attend(x)
    y_h = y[..., head, :]
    if module.gate != "none":
        y_h = y_h * module.gate_scores(x)[..., head, :]
    return y_h @ module.out.weight[:, head_slice(module, head)].T


def linear_fold_residual(module: GatedCausalSelfAttention, x: torch.Tensor, head: int) -> float:
    """Fit the best single matrix M with head_contribution ~ (weights_h @ x) @ M (least squares);
    return the relative residual |fit - contribution| / |contribution|. Zero means the head is
    one linear map of the attention-mixed input, as in an ungated or statically gated head."""
    _, weights = module.attend(x)
    mixed = (weights[..., head, :, :] @ x).reshape(-1, x.shape[-1])  # (rows, d_model)
    target = head_contribution(module, x, head).reshape(-1, x.shape[-1])
    best = torch.linalg.lstsq(mixed, target).solution
    return ((mixed @ best - target).norm() / target.norm()).item()
