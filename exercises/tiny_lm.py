# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 08: a tiny causal language model, to test the gated-attention paper's claims on a CPU.

Read it top to bottom; every piece around attention is the standard one of a GPT-style model:

    tokens (B, L) ──token embedding + position embedding──> h (B, L, d_model)
    for each of the n_layers blocks (pre-norm residual):
        h = h + Attention(LayerNorm(h))       # mixes information between positions
        h = h + FeedForward(LayerNorm(h))     # transforms each position on its own
    logits = LayerNorm(h) @ token_embeddingᵀ  # output head tied to the input embedding

Position 0 always holds the BOS token, so "first-token attention" is attention to BOS.
The attention layer has the four variants of the lesson (`gate`):
    "none"         the baseline, softmax attention then W_O;
    "elementwise"  G1 of Qiu et al. 2025: Y' = Y * sigmoid(X W_theta + b), one gate per head
                   channel, per token, computed from the layer's normalised input X;
    "headwise"     G1 with one gate per head per token;
    "static"       one learned number per head, sigmoid(g_h), the same for every token (the
                   misreading of seed 003; it folds into W_O, see the lesson).
The attention layer is written out here (not imported from your exercise) so that the shipped
checkpoints load and run whatever state exercises/gated_attention.py is in; its parameter
names are those of the exercise, so its weights also load into your GatedCausalSelfAttention.
"""
from __future__ import annotations

import torch
from torch import nn

GATES = ("none", "elementwise", "headwise", "static")


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with an optional G1 gate (see the module docstring)."""

    def __init__(self, d_model: int, n_heads: int, gate: str = "none"):
        super().__init__()
        if gate not in GATES:
            raise ValueError(f"gate must be one of {GATES}, got {gate!r}")
        self.n_heads, self.head_dim, self.gate = n_heads, d_model // n_heads, gate
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)  # W_O
        if gate in ("elementwise", "headwise"):
            gate_width = self.head_dim if gate == "elementwise" else 1
            self.gate_proj = nn.Linear(d_model, n_heads * gate_width)  # W_theta and its bias
        elif gate == "static":
            self.gate_logit = nn.Parameter(torch.zeros(n_heads))  # sigmoid(0) = 0.5 at the start

    def gate_scores(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, L, d_model) -> gate scores (B, L, n_heads, head_dim or 1), all in (0, 1)."""
        if self.gate == "static":
            return torch.sigmoid(self.gate_logit)[:, None].expand(*x.shape[:-1], -1, 1)
        return torch.sigmoid(self.gate_proj(x)).unflatten(-1, (self.n_heads, -1))

    def forward(self, x: torch.Tensor):
        """x: (B, L, d_model), already normalised. Returns (output, weights, gate scores or None);
        weights: (B, n_heads, L, L), row i = how query i spreads its attention over keys j <= i."""
        L = x.shape[-2]
        q, k, v = self.qkv(x).unflatten(-1, (3, self.n_heads, self.head_dim)).unbind(-3)
        q, k, v = (t.transpose(-3, -2) for t in (q, k, v))  # each (B, n_heads, L, head_dim)
        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5  # (B, n_heads, L, L)
        future = torch.ones(L, L, dtype=torch.bool, device=x.device).triu(1)
        weights = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        y = (weights @ v).transpose(-3, -2)  # (B, L, n_heads, head_dim): SDPA output per head
        scores_g = None
        if self.gate != "none":
            scores_g = self.gate_scores(x)
            y = y * scores_g  # G1: after SDPA, before W_O, separately for every head
        return self.out(y.flatten(-2)), weights, scores_g


class Block(nn.Module):
    """Pre-norm transformer block: x + attention(norm(x)), then x + feed-forward(norm(x))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, gate: str):
        super().__init__()
        self.norm_attn = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, gate)
        self.norm_ffn = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))

    def forward(self, h: torch.Tensor):
        attended, weights, gate_scores = self.attn(self.norm_attn(h))
        h = h + attended
        h = h + self.ffn(self.norm_ffn(h))
        return h, weights, gate_scores


class TinyLM(nn.Module):
    """A GPT-style causal LM: vocab_size tokens, contexts of up to max_len positions."""

    def __init__(self, vocab_size: int, max_len: int = 64, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, d_ff: int = 128, gate: str = "none"):
        super().__init__()
        self.config = dict(vocab_size=vocab_size, max_len=max_len, d_model=d_model,
                           n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, gate=gate)
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff, gate) for _ in range(n_layers))
        self.norm_out = nn.LayerNorm(d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)

    def forward(self, tokens: torch.Tensor, details: bool = False):
        """tokens: (B, L) integer ids, BOS at position 0. Returns logits (B, L, vocab_size):
        row i predicts token i+1. With details=True also a dict of per-layer lists:
        'weights' (B, n_heads, L, L), 'gate_scores' (B, L, n_heads, w) or None, 'hidden' (B, L, d)."""
        positions = torch.arange(tokens.shape[-1], device=tokens.device)
        h = self.token_embedding(tokens) + self.position_embedding(positions)
        record = {"weights": [], "gate_scores": [], "hidden": []}
        for block in self.blocks:
            h, weights, gate_scores = block(h)
            record["weights"].append(weights)
            record["gate_scores"].append(gate_scores)
            record["hidden"].append(h)
        logits = self.norm_out(h) @ self.token_embedding.weight.T  # tied output head
        return (logits, record) if details else logits
