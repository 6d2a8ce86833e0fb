"""Lesson 10's experiment: what route two costs on associative recall, measured on a toy task.

The task (multi-query associative recall, after Arora et al. 2023, "Zoology", arXiv:2312.04927):
a sequence lists N key-value pairs, k_1 v_1 k_2 v_2 ... k_N v_N (keys distinct), then asks for
every key again in a random order, q_1 ... q_N; at each query the model must predict the value
that followed that key. Keys are tokens 0 .. KEYS-1, values KEYS .. KEYS+VALUES-1: L = 3N.

The model is one attention layer, the same for every kind of attention but the mixing itself:

    h_t = E[x_t] + E_prev[x_{t-1}]      (a learned embedding of the token and of the one before:
                                         at a value, the key it follows; a width-2 convolution)
    q, k, v = split into H heads of h_t W_q, h_t W_k, h_t W_v
    o = mix(q, k, v)  (causal), per head;  logits = W_out LayerNorm(h + W_o o)

with mix one of: softmax attention (lesson 02, causal mask), a sliding window of WINDOW keys
(lesson 02 with a causal band mask), linear attention (this lesson's quadratic form, phi = elu+1)
and decayed linear attention (this lesson's decayed form, a data-dependent scalar decay per head
and token, log a_t = -softplus(h_t w_a + b_a), followed by a LayerNorm per head as GLA does,
no normaliser). The three mixing functions below are the solutions' code, operation for
operation (tests/test_lesson10.py proves them equal): course machinery runs where solutions/ is
absent (the student handout). Every run trains for the same number of steps on the same batches (seeded), with
one thread; `python scripts/train_lesson10.py` trains every run, resumes where it stopped, and
writes data/lesson10/recall.json.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from course import ROOT

KEYS, VALUES = 256, 64
VOCAB = KEYS + VALUES
MIXERS = ("softmax", "window", "linear", "decayed")
PAIRS_TRAIN = (4, 48)       # N drawn per batch from this range (inclusive)
PAIRS_EVAL = (4, 8, 16, 32, 48)
WINDOW = 16
DATA = ROOT / "data" / "lesson10"
RESULTS = DATA / "recall.json"
BUILD = ROOT / "build" / "lesson10_recall"


WEIGHTS = DATA / "recall_weights.pt"


def softmax_attention(q, k, v, mask):
    """Lesson 02's scaled_dot_product_attention with a mask in which every query sees a key."""
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, float("-inf"))
    shifted = scores - scores.amax(dim=-1, keepdim=True)
    exponentials = shifted.exp()
    return (exponentials / exponentials.sum(dim=-1, keepdim=True)) @ v


def linear_attention(q, k, v):
    """This lesson's causal linear attention, quadratic form (float32 inputs)."""
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    weights = (phi_q @ phi_k.transpose(-2, -1)).tril()
    return (weights @ v) / weights.sum(dim=-1, keepdim=True)


def decayed_attention(q, k, v, log_a):
    """This lesson's decayed attention, quadratic form: (D ∘ q kᵀ) v, D from cumsum(log_a)."""
    c = torch.cumsum(log_a, dim=-1)
    L = q.shape[-2]
    future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(diagonal=1)
    decay = torch.exp((c[..., :, None] - c[..., None, :]).masked_fill(future, float("-inf")))
    return (decay * (q @ k.transpose(-2, -1))) @ v


@dataclass(frozen=True)
class Config:
    mixer: str = "softmax"
    width: int = 64
    heads: int = 4
    window: int = WINDOW
    steps: int = 1500
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0


def make_batch(pairs: int, batch: int, generator: torch.Generator):
    """tokens (batch, 3N) and targets (batch, 3N): -100 except at the N queries, where the
    target is the value that followed the queried key."""
    keys = torch.stack([torch.randperm(KEYS, generator=generator)[:pairs] for _ in range(batch)])
    values = torch.randint(KEYS, VOCAB, (batch, pairs), generator=generator)
    order = torch.stack([torch.randperm(pairs, generator=generator) for _ in range(batch)])
    context = torch.stack([keys, values], dim=-1).flatten(-2)  # k_1 v_1 k_2 v_2 ...
    queries = keys.gather(1, order)
    tokens = torch.cat([context, queries], dim=1)
    targets = torch.full_like(tokens, -100)
    targets[:, 2 * pairs:] = values.gather(1, order)
    return tokens, targets


class RecallModel(nn.Module):
    """One causal attention layer over a token-and-previous-token embedding (module docstring)."""

    def __init__(self, config: Config):
        super().__init__()
        self.config = config
        width = config.width
        self.embed = nn.Embedding(VOCAB, width)
        self.embed_prev = nn.Embedding(VOCAB + 1, width)  # VOCAB: "no previous token"
        self.qkv = nn.Linear(width, 3 * width, bias=False)
        self.out = nn.Linear(width, width, bias=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, VOCAB)
        if config.mixer == "decayed":
            self.decay = nn.Linear(width, config.heads)
            nn.init.zeros_(self.decay.weight)
            nn.init.constant_(self.decay.bias, -3.0)  # a = exp(-softplus(-3)) = 0.953 at first
            self.head_norm = nn.LayerNorm(width // config.heads, elementwise_affine=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, L) -> logits (B, L, VOCAB)."""
        B, L = tokens.shape
        H = self.config.heads
        previous = F.pad(tokens[:, :-1], (1, 0), value=VOCAB)
        h = self.embed(tokens) + self.embed_prev(previous)  # (B, L, width)
        q, k, v = (t.view(B, L, H, -1).transpose(1, 2) for t in self.qkv(h).chunk(3, dim=-1))
        o = self.mix(q, k, v, h)  # (B, H, L, width / H)
        o = o.transpose(1, 2).reshape(B, L, -1)
        return self.head(self.norm(h + self.out(o)))

    def mix(self, q, k, v, h):
        L = q.shape[-2]
        i = torch.arange(L, device=q.device)
        mixer = self.config.mixer
        if mixer == "softmax":
            return softmax_attention(q, k, v, i[:, None] >= i[None, :])
        if mixer == "window":
            band = (i[:, None] >= i[None, :]) & (i[:, None] - i[None, :] < self.config.window)
            return softmax_attention(q, k, v, band)
        if mixer == "linear":
            return linear_attention(q, k, v)
        if mixer == "decayed":
            log_a = -F.softplus(self.decay(h)).transpose(1, 2)  # (B, H, L)
            scale = q.shape[-1] ** -0.5
            return self.head_norm(decayed_attention(q * scale, k, v, log_a))
        raise ValueError(f"unknown mixer {mixer!r}; known: {MIXERS}")


def state_numbers(config: Config, length: int) -> int:
    """Numbers one layer keeps per sequence to go on generating after `length` tokens: the
    keys and values seen (softmax: all of them; window: the last `window`), or the state
    (linear: S (d, d) and z (d,) per head; decayed: h (d, d) per head)."""
    d, H = config.width // config.heads, config.heads
    return {"softmax": 2 * length * config.width,
            "window": 2 * min(length, config.window) * config.width,
            "linear": H * (d * d + d),
            "decayed": H * d * d}[config.mixer]


def evaluate(model: RecallModel, pairs: int, sequences: int = 512, seed: int = 12345) -> float:
    """Accuracy over the queries of `sequences` fixed validation sequences with N = pairs."""
    generator = torch.Generator().manual_seed(seed + pairs)
    tokens, targets = make_batch(pairs, sequences, generator)
    with torch.no_grad():
        predicted = model(tokens).argmax(-1)
    asked = targets != -100
    return (predicted[asked] == targets[asked]).double().mean().item()


def load_model(config: dict, state: dict) -> RecallModel:
    """A trained model from its config (as shipped) and its weights (float16 are used in float32)."""
    model = RecallModel(Config(**config))
    model.load_state_dict({key: value.float() for key, value in state.items()})
    return model.eval()


def run_name(config: Config) -> str:
    return f"{config.mixer}_seed{config.seed}"


def train(config: Config, folder: Path = BUILD, threads: int = 1, log=print,
          checkpoint_every: int = 250) -> dict:
    """Train one run (resuming from folder/<run>.pt) and return its result (also written to
    folder/<run>.json). The batches depend on (seed, step) only, so a resumed run sees the same
    data as an uninterrupted one."""
    torch.set_num_threads(threads)
    folder.mkdir(parents=True, exist_ok=True)
    name = run_name(config)
    done = folder / f"{name}.json"
    if done.exists():
        return json.loads(done.read_text())
    torch.manual_seed(config.seed)
    model = RecallModel(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / 100) * 0.5 * (1 + math.cos(math.pi * s / config.steps)))
    step, seconds, curve = 0, 0.0, []
    partial = folder / f"{name}.pt"
    if partial.exists():
        saved = torch.load(partial, weights_only=False)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
        step, seconds, curve = saved["step"], saved["seconds"], saved["curve"]
        log(f"{name}: resumed at step {step}")
    while step < config.steps:
        start = time.process_time()
        generator = torch.Generator().manual_seed(config.seed * 1_000_003 + step)
        pairs = int(torch.randint(PAIRS_TRAIN[0], PAIRS_TRAIN[1] + 1, (1,), generator=generator))
        tokens, targets = make_batch(pairs, config.batch, generator)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        seconds += time.process_time() - start
        step += 1
        if step % checkpoint_every == 0 or step == config.steps:
            curve.append({"step": step, "loss": loss.item(),
                          "accuracy_48": evaluate(model, 48, sequences=128)})
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(), "step": step, "seconds": seconds,
                        "curve": curve}, partial)
            log(f"{name}: step {step}, loss {loss.item():.3f}, accuracy at N = 48 "
                f"{curve[-1]['accuracy_48']:.3f}, {seconds:.0f} CPU-s")
    result = {"config": asdict(config), "cpu_seconds": seconds, "curve": curve,
              "accuracy": {str(n): evaluate(model, n) for n in PAIRS_EVAL},
              "parameters": sum(p.numel() for p in model.parameters()),
              "state_numbers": {str(n): state_numbers(config, 3 * n) for n in PAIRS_EVAL}}
    torch.save(model.state_dict(), folder / f"{name}.weights.pt")
    done.write_text(json.dumps(result, indent=1) + "\n")
    return result
