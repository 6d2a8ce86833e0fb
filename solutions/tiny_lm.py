"""Lesson 08: a tiny causal language model, to test the gated-attention paper's claims on a CPU.

Two architectures, both read top to bottom as:

    tokens (B, L) ──token embedding (+ learned position embedding for "gpt2")──> h (B, L, d_model)
    for each of the n_layers blocks (pre-norm residual):
        h = h + Attention(Norm(h))       # mixes information between positions
        h = h + FeedForward(Norm(h))     # GELU MLP, transforms each position on its own
    logits = Norm(h) @ token_embeddingᵀ  # output head tied to the input embedding (tied=True)

arch="paper" (the default), built like the paper's Qwen3-style model: RMSNorm, rotary position
    embeddings (RoPE, rotate-half) on q and k in every attention layer, no learned positions.
    Its blocks are lesson 07's DecoderBlock, with the same module and parameter names (norm_attn,
    attn.linear_q/k/v/o, norm_ffn, ffn.0, ffn.2), so an ungated block's weights load into your
    DecoderBlock(d_model, n_heads, d_ff, rope=True) and compute the same output. The G1 gate is
    gate_proj, a bias-free Linear from the same normalised input as q, k, v: the same function
    as the paper's code, where the gate is extra output rows of q_proj (with no QKV bias).
    gate_bias=True adds a bias to it (an ablation, not the paper).
arch="gpt2": LayerNorm, learned absolute positions, attention with a stacked qkv projection and
    a bias-free W_O (`out`), and a gate with its own bias. The parameter names are those of your
    lesson-08 exercise GatedCausalSelfAttention (qkv, out, gate_proj).

Three switches change the model around attention, for both architectures (the lesson's search
for what makes an attention sink strong turns them one at a time):
    init="torch" (the default): PyTorch's default initialisation of every Linear, the embeddings
        N(0, 0.02). init="normal": every matrix N(0, 0.02) and the projections that write into
        the residual stream (W_O and the FFN's second layer) N(0, 0.02 / sqrt(2 n_layers)),
        biases 0: GPT-2's scheme (Radford et al. 2019; Hugging Face's GPT2 and, without the
        residual scaling, its Qwen3 `initializer_range = 0.02`).
    biases=True (the default): W_O (of "paper"; "gpt2"'s W_O never has one) and both FFN layers
        carry a bias; False: none (as in Qwen3, whose attention and MLP have no biases).
    tied=True (the default): the output head is the token embedding; False: its own matrix
        (`lm_head`).

Position 0 always holds the BOS token, so "first-token attention" is attention to BOS.
The gate variants (`gate`):
    "none"         the baseline, softmax attention then W_O;
    "elementwise"  G1 of Qiu et al. 2025: Y' = Y * sigmoid(X W_theta), one gate per head
                   channel, per token, computed from the layer's normalised input X;
    "headwise"     G1 with one gate per head per token;
    "static"       one learned number per head, sigmoid(g_h), the same for every token (the
                   misreading of seed 003; it folds into W_O, see the lesson).
Everything is written out here (not imported from your exercises) so that the shipped
checkpoints load and run whatever state your exercises are in.
"""
from __future__ import annotations

import torch
from torch import nn

GATES = ("none", "elementwise", "headwise", "static")
ARCHS = ("paper", "gpt2")
# what each architecture uses unless a config says otherwise (the ablations change one at a time)
ARCH_DEFAULTS = {"paper": dict(norm="rms", positions="rope", gate_bias=False),
                 "gpt2": dict(norm="layer", positions="learned", gate_bias=True)}
# the switches both architectures share (see the module docstring)
SHARED_DEFAULTS = dict(init="torch", biases=True, tied=True)
INITS = ("torch", "normal")
INIT_STD = 0.02
# the parameters that write into the residual stream, scaled down by sqrt(2 n_layers) under "normal"
RESIDUAL_PROJECTIONS = ("attn.linear_o.weight", "attn.out.weight", "ffn.2.weight")


# ------------------------------------------------------------------ the pieces of lesson 07
def apply_rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotary position embedding, rotate-half convention (Hugging Face Llama/Qwen3): x (*, L, c),
    c even, positions 0..L-1 along axis -2. Channel i pairs with i + c/2, angle pos * base**(-2i/c)."""
    L, c = x.shape[-2], x.shape[-1]
    inverse_frequency = base ** (-torch.arange(0, c // 2, dtype=torch.float64) * 2 / c)
    angles = torch.arange(L, dtype=torch.float64)[:, None] * inverse_frequency  # (L, c/2)
    angles = torch.cat([angles, angles], dim=-1)  # (L, c)
    cos, sin = angles.cos().to(x), angles.sin().to(x)
    rotated = torch.cat([-x[..., c // 2:], x[..., :c // 2]], dim=-1)
    return x * cos + rotated * sin


class RMSNorm(nn.Module):
    """x / sqrt(mean(x**2) + eps) * weight over the last axis (no mean subtraction, no bias)."""

    def __init__(self, d_model: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def causal_softmax(q: torch.Tensor, k: torch.Tensor, allowed: torch.Tensor | None = None) -> torch.Tensor:
    """q, k: (*, n_heads, L, head_dim) -> attention weights (*, n_heads, L, L), future masked.
    allowed: optional bool (L, L), True where query i may also see key j (the lesson's tests of
    the sink forbid BOS, or keep only a window of recent keys); every row must keep one key."""
    L = q.shape[-2]
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    hidden = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1)
    if allowed is not None:
        hidden = hidden | ~allowed
    return scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)


class _Gate(nn.Module):
    """The gate variants; scores(x) has shape (*, L, n_heads, head_dim or 1), all in (0, 1)."""

    def _make_gate(self, d_model: int, n_heads: int, head_dim: int, gate: str, bias: bool):
        if gate not in GATES:
            raise ValueError(f"gate must be one of {GATES}, got {gate!r}")
        self.gate = gate
        if gate in ("elementwise", "headwise"):
            gate_width = head_dim if gate == "elementwise" else 1
            self.gate_proj = nn.Linear(d_model, n_heads * gate_width, bias=bias)  # W_theta
        elif gate == "static":
            self.gate_logit = nn.Parameter(torch.zeros(n_heads))  # sigmoid(0) = 0.5 at the start

    def gate_scores(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate == "static":
            return torch.sigmoid(self.gate_logit)[:, None].expand(*x.shape[:-1], -1, 1)
        return torch.sigmoid(self.gate_proj(x)).unflatten(-1, (self.n_heads, -1))

    def _gated(self, x: torch.Tensor, y: torch.Tensor):
        """y: (*, L, n_heads, head_dim) SDPA output per head -> (y gated, scores or None)."""
        if self.gate == "none":
            return y, None
        scores = self.gate_scores(x)
        return y * scores, scores  # G1: after SDPA, before W_O, separately for every head


class PaperSelfAttention(_Gate):
    """The paper-like layer: lesson 07's attention names, RoPE on q and k, bias-free G1 gate."""

    def __init__(self, d_model: int, n_heads: int, gate: str = "none", gate_bias: bool = False,
                 rope: bool = True, bias: bool = True):
        super().__init__()
        self.n_heads, self.head_dim, self.rope = n_heads, d_model // n_heads, rope
        self.linear_q = nn.Linear(d_model, d_model, bias=False)
        self.linear_k = nn.Linear(d_model, d_model, bias=False)
        self.linear_v = nn.Linear(d_model, d_model, bias=False)
        self.linear_o = nn.Linear(d_model, d_model, bias=bias)
        self._make_gate(d_model, n_heads, self.head_dim, gate, gate_bias)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor | None = None):
        """x: (B, L, d_model), already normalised; allowed: see causal_softmax. Returns (output,
        weights, gate scores or None); weights: (B, n_heads, L, L), row i = how query i spreads
        its attention over keys j <= i."""
        def heads(t):  # (B, L, d_model) -> (B, n_heads, L, head_dim): channel block h is head h
            return t.unflatten(-1, (self.n_heads, self.head_dim)).transpose(-3, -2)
        q, k, v = heads(self.linear_q(x)), heads(self.linear_k(x)), heads(self.linear_v(x))
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        weights = causal_softmax(q, k, allowed)
        y = (weights @ v).transpose(-3, -2)  # (B, L, n_heads, head_dim): SDPA output per head
        y, scores = self._gated(x, y)
        return self.linear_o(y.flatten(-2)), weights, scores


class CausalSelfAttention(_Gate):
    """The GPT-2-style layer: stacked qkv, bias-free W_O, gate with its own bias by default.
    Its parameter names are those of the exercise GatedCausalSelfAttention."""

    def __init__(self, d_model: int, n_heads: int, gate: str = "none", gate_bias: bool = True,
                 rope: bool = False):
        super().__init__()
        self.n_heads, self.head_dim, self.rope = n_heads, d_model // n_heads, rope
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.out = nn.Linear(d_model, d_model, bias=False)  # W_O
        self._make_gate(d_model, n_heads, self.head_dim, gate, gate_bias)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor | None = None):
        """As PaperSelfAttention.forward."""
        q, k, v = self.qkv(x).unflatten(-1, (3, self.n_heads, self.head_dim)).unbind(-3)
        q, k, v = (t.transpose(-3, -2) for t in (q, k, v))  # each (B, n_heads, L, head_dim)
        if self.rope:
            q, k = apply_rope(q), apply_rope(k)
        weights = causal_softmax(q, k, allowed)
        y = (weights @ v).transpose(-3, -2)
        y, scores = self._gated(x, y)
        return self.out(y.flatten(-2)), weights, scores


class Block(nn.Module):
    """Pre-norm transformer block: h + attention(norm(h)), then h + feed-forward(norm(h))."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, gate: str, arch: str = "paper",
                 norm: str = "rms", gate_bias: bool = False, rope: bool = True,
                 biases: bool = True):
        super().__init__()
        Norm = RMSNorm if norm == "rms" else nn.LayerNorm
        self.norm_attn = Norm(d_model)
        if arch == "paper":
            self.attn = PaperSelfAttention(d_model, n_heads, gate, gate_bias, rope, bias=biases)
        else:
            self.attn = CausalSelfAttention(d_model, n_heads, gate, gate_bias, rope)
        self.norm_ffn = Norm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, d_ff, bias=biases), nn.GELU(),
                                 nn.Linear(d_ff, d_model, bias=biases))

    def forward(self, h: torch.Tensor, allowed: torch.Tensor | None = None):
        attended, weights, gate_scores = self.attn(self.norm_attn(h), allowed)
        h = h + attended
        h = h + self.ffn(self.norm_ffn(h))
        return h, weights, gate_scores


class TinyLM(nn.Module):
    """A causal LM: vocab_size tokens, contexts of up to max_len positions.

    arch: "paper" or "gpt2" (see the module docstring). d_ff defaults to 4 d_model for "paper"
    (the usual width) and 2 d_model for "gpt2" (the course's first tiny LM). norm ("rms" or
    "layer"), positions ("rope" or "learned") and gate_bias default to the architecture's, and
    init ("torch" or "normal"), biases and tied to SHARED_DEFAULTS; setting one of them changes
    that single piece (the lesson's ablations)."""

    def __init__(self, vocab_size: int, max_len: int = 64, d_model: int = 64, n_heads: int = 4,
                 n_layers: int = 2, d_ff: int | None = None, gate: str = "none", arch: str = "paper",
                 norm: str | None = None, positions: str | None = None,
                 gate_bias: bool | None = None, init: str | None = None,
                 biases: bool | None = None, tied: bool | None = None):
        super().__init__()
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        d_ff = d_ff or (4 if arch == "paper" else 2) * d_model  # the shipped widths: 256 and 128
        given = dict(norm=norm, positions=positions, gate_bias=gate_bias, init=init,
                     biases=biases, tied=tied)
        chosen = {**ARCH_DEFAULTS[arch], **SHARED_DEFAULTS,
                  **{k: v for k, v in given.items() if v is not None}}
        if chosen["init"] not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {chosen['init']!r}")
        self.config = dict(vocab_size=vocab_size, max_len=max_len, d_model=d_model,
                           n_heads=n_heads, n_layers=n_layers, d_ff=d_ff, gate=gate, arch=arch,
                           **chosen)
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        if chosen["positions"] == "learned":
            self.position_embedding = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(
            Block(d_model, n_heads, d_ff, gate, arch, chosen["norm"], chosen["gate_bias"],
                  rope=chosen["positions"] == "rope", biases=chosen["biases"])
            for _ in range(n_layers))
        self.norm_out = RMSNorm(d_model) if chosen["norm"] == "rms" else nn.LayerNorm(d_model)
        if not chosen["tied"]:
            self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        if chosen["init"] == "normal":
            self._init_normal(n_layers)

    @torch.no_grad()
    def _init_normal(self, n_layers: int) -> None:
        """GPT-2's initialisation: matrices N(0, 0.02), residual projections N(0, 0.02/sqrt(2 n_layers)),
        biases 0 (norm weights stay 1, a static gate's logits 0)."""
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = INIT_STD / (2 * n_layers) ** 0.5 if name.endswith(RESIDUAL_PROJECTIONS) else INIT_STD
                p.normal_(0.0, std)
            elif name.endswith("bias"):  # Linear biases (LayerNorm's start at 0 anyway)
                p.zero_()

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, L) -> the residual stream entering block 0, (B, L, d_model)."""
        h = self.token_embedding(tokens)
        if self.config["positions"] == "learned":
            h = h + self.position_embedding(torch.arange(tokens.shape[-1], device=tokens.device))
        return h

    def forward(self, tokens: torch.Tensor, details: bool = False,
                allowed: torch.Tensor | None = None):
        """tokens: (B, L) integer ids, BOS at position 0. Returns logits (B, L, vocab_size):
        row i predicts token i+1. With details=True also a dict of per-layer lists:
        'weights' (B, n_heads, L, L), 'gate_scores' (B, L, n_heads, w) or None, 'hidden' (B, L, d).
        allowed: optional bool (L, L) of the keys each query may see in every layer, on top of
        causality (None: all earlier keys), as in causal_softmax."""
        h = self.embed(tokens)
        record = {"weights": [], "gate_scores": [], "hidden": []}
        for block in self.blocks:
            h, weights, gate_scores = block(h, allowed)
            record["weights"].append(weights)
            record["gate_scores"].append(gate_scores)
            record["hidden"].append(h)
        if self.config["tied"]:
            logits = self.norm_out(h) @ self.token_embedding.weight.T
        else:
            logits = self.lm_head(self.norm_out(h))
        return (logits, record) if details else logits
