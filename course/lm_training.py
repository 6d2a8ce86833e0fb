"""Lesson 08's machinery: data, training and measurements of the tiny LM (solutions/tiny_lm.py).

Two datasets, both with a BOS token at position 0:
- "bb", Bigram-Backcopy (after Guo et al. 2024, "Active-Dormant Attention Heads"): characters
  'a'-'z' and ' ' follow a bigram chain (data/lesson08/bigram_table.json); right after one of the
  TRIGGERS the next character is a copy of the one before the trigger. Only there does
  attention have a job; everywhere else the bigram row of the current character says it all.
  (Guo et al.'s own code, GuoTianYu2000/Active-Dormant-Attention, BBM/data.py, draws Shakespeare's
  characters; its triggers are the k = 3 or 5 most frequent characters, its first character is
  drawn from the character frequencies without the triggers, its sequences are 256 long.)
- "text": characters of Python standard-library docstrings (data/lesson08/docstrings.txt),
  the first 90 % for training, the last 10 % for validation.

Two architectures (solutions/tiny_lm.py): "paper" (RMSNorm, RoPE, bias-free gate, built like the
paper's model) and "gpt2" (LayerNorm, learned positions, gate with a bias). The shipped checkpoints
(float16 state dicts) and metrics in data/lesson08/ come from `scripts/train_lesson08.py`, which
calls `train_and_measure` for every architecture, dataset, variant and seed, and for the
ABLATIONS (one seed each, metrics only) that find which change makes the architectures differ.
"""
from __future__ import annotations

import functools
import json
import math
import re
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from course import ROOT
from course.columns import pad
from course.i18n import _
from course.lesson08_functional import functional, sink_rate, value_drain

DATA = ROOT / "data" / "lesson08"
VARIANTS = ("none", "elementwise", "headwise", "static")
ARCHS = ("paper", "gpt2")
DATASETS = ("bb", "text")
SEEDS = (0, 1, 2)
TRIGGERS = "fpw"
SEQ_LEN = 64  # BOS + 63 characters
BOS = 0
# the first-token share if every query i >= 1 spread its attention evenly over keys 0..i
UNIFORM_SHARE = sum(1 / (i + 1) for i in range(1, SEQ_LEN)) / (SEQ_LEN - 1)
VAL_SEQUENCES = 256
VAL_SEED = 10_000
# the training recipe of each architecture's shipped runs (the notebook prints them). "gpt2" is
# the course's first recipe; "paper" is the usual LLM one (as the paper's model family trains):
# weight decay 0.1 on matrices only, a shorter warm-up. decay: "all" or "matrices".
RECIPES = {
    "paper": dict(steps=2500, batch_size=32, lr=1e-2, warmup=50, weight_decay=0.1,
                  decay="matrices", grad_clip=1.0),
    "gpt2": dict(steps=2500, batch_size=32, lr=1e-2, warmup=100, weight_decay=0.01,
                 decay="all", grad_clip=1.0),
}
STEPS = 2500
# the model width of each architecture: the paper-like FFN is 4 d_model wide, as usual
D_FF = {"paper": 256, "gpt2": 128}
# one change at a time, one seed, Bigram-Backcopy: which piece makes the architectures differ.
# Each: TinyLM options (arch, norm, positions, gate_bias, d_ff) and "recipe" (a RECIPES key).
ABLATIONS = {
    "paper, gpt2's recipe and d_ff": dict(arch="paper", recipe="gpt2", d_ff=128),
    "gpt2 + RoPE": dict(arch="gpt2", positions="rope"),
    "gpt2 + RMSNorm": dict(arch="gpt2", norm="rms"),
    "paper + learned positions": dict(arch="paper", positions="learned"),
    "paper + gate bias": dict(arch="paper", gate_bias=True),
}
ABLATION_GATES = ("none", "elementwise")
# the notebook's RETRAIN: the paper-like model in the strong-sink set-up, 4 variants, one seed,
# fewer steps (to stay under 10 minutes on 2 cores)
RETRAIN_STEPS = 1000


def model_class():
    """The tiny LM class, from exercises/ (the same code as solutions/tiny_lm.py; no exercise)."""
    from exercises.tiny_lm import TinyLM
    return TinyLM


# ----------------------------------------------------------------------------------- data
TRIGGER_TOKEN = "#"  # the dedicated trigger of trigger="token" ("^" is how BOS is printed)
TRIGGER_RATE = 0.1


def bigram_counts(text: str, alphabet: str) -> list[list[int]]:
    """Character bigram counts over `alphabet` (letters and ' '): lower-cased, every run of other
    characters read as one space. counts[a][b]: how often alphabet[b] follows alphabet[a]."""
    letters = re.sub(r"[^a-z]+", " ", text.lower())
    index = {ch: i for i, ch in enumerate(alphabet)}
    counts = [[0] * len(alphabet) for _ in alphabet]
    for a, b in zip(letters, letters[1:]):
        counts[index[a]][index[b]] += 1
    return counts


class BigramBackcopy:
    """Sequences of the Bigram-Backcopy task; token 0 is BOS, token i >= 1 is vocab[i].

    trigger="letters" (the default): the characters in `triggers` (f, p, w) are the triggers,
        drawn at their bigram frequency (about 5 % of the characters); the vocabulary is BOS and
        the 27 characters.
    trigger="token": a dedicated trigger token TRIGGER_TOKEN, emitted with probability
        `trigger_rate` after any other character (the choice of the prototype the lesson's sink
        search started from; Guo et al.'s triggers are ordinary frequent characters); the
        vocabulary gains that token.
    first="space": the first character follows a space (a word start) and is never a trigger;
        first="uniform": it is uniform over the 26 letters.
    smoothed=True: the shipped table (add-one smoothing, every transition possible); False: the
        raw bigram counts of data/lesson08/docstrings.txt (transitions never seen stay impossible).
    """

    def __init__(self, table_path: Path = DATA / "bigram_table.json", triggers: str = TRIGGERS,
                 trigger: str = "letters", trigger_rate: float = TRIGGER_RATE,
                 first: str = "space", smoothed: bool = True):
        table = json.loads(Path(table_path).read_text())
        self.alphabet = table["alphabet"]
        if smoothed:
            self.probabilities = torch.tensor(table["probabilities"], dtype=torch.float64)
        else:
            counts = torch.tensor(bigram_counts((DATA / "docstrings.txt").read_text(), self.alphabet),
                                  dtype=torch.float64)
            self.probabilities = counts / counts.sum(-1, keepdim=True)
        self.trigger, self.trigger_rate = trigger, trigger_rate
        if trigger == "token":
            self.vocab = ["<bos>"] + list(self.alphabet) + [TRIGGER_TOKEN]
            self.trigger_ids = torch.tensor([len(self.vocab) - 1])
        else:
            self.vocab = ["<bos>"] + list(self.alphabet)
            self.trigger_ids = torch.tensor([self.alphabet.index(t) + 1 for t in triggers])
        if first == "uniform":
            first_row = torch.tensor([float(ch != " ") for ch in self.alphabet], dtype=torch.float64)
        else:
            first_row = self.probabilities[self.alphabet.index(" ")].clone()
            if trigger == "letters":
                first_row[self.trigger_ids - 1] = 0.0
        self.first = first_row / first_row.sum()

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def sample(self, n: int, generator: torch.Generator, length: int = SEQ_LEN) -> torch.Tensor:
        """(n, length) token ids: BOS, then the bigram chain with back-copies after triggers."""
        tokens = torch.zeros(n, length, dtype=torch.long)
        tokens[:, 1] = torch.multinomial(self.first.expand(n, -1), 1, generator=generator)[:, 0] + 1
        n_letters = len(self.alphabet)
        for t in range(2, length):
            previous = tokens[:, t - 1]
            copy = torch.isin(previous, self.trigger_ids)
            # a trigger token's row is never used (a copy follows it): any valid row will do
            rows = self.probabilities[(previous - 1).clamp(max=n_letters - 1)]
            drawn = torch.multinomial(rows, 1, generator=generator)[:, 0] + 1
            if self.trigger == "token":
                emit = torch.rand(n, generator=generator, dtype=torch.float64) < self.trigger_rate
                drawn = torch.where(emit, self.trigger_ids[0], drawn)
            tokens[:, t] = torch.where(copy, tokens[:, t - 2], drawn)
        return tokens

    def copy_positions(self, tokens: torch.Tensor) -> torch.Tensor:
        """Bool (n, length): True at positions whose token is a back-copy (previous is a trigger)."""
        mask = torch.zeros_like(tokens, dtype=torch.bool)
        mask[:, 2:] = torch.isin(tokens[:, 1:-1], self.trigger_ids)
        return mask

    def decode(self, tokens) -> str:
        return "".join("^" if int(t) == BOS else self.vocab[int(t)] for t in tokens)


class DocstringText:
    """Character-level windows of the docstring corpus; token 0 is BOS."""

    def __init__(self, path: Path = DATA / "docstrings.txt"):
        text = Path(path).read_text()
        self.vocab = ["<bos>"] + sorted(set(text))
        index = {ch: i for i, ch in enumerate(self.vocab)}
        ids = torch.tensor([index[ch] for ch in text], dtype=torch.long)
        split = int(0.9 * len(ids))
        self.train_ids, self.val_ids = ids[:split], ids[split:]

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def sample(self, n: int, generator: torch.Generator, length: int = SEQ_LEN,
               split: str = "train") -> torch.Tensor:
        ids = self.train_ids if split == "train" else self.val_ids
        starts = torch.randint(0, len(ids) - length, (n,), generator=generator)
        windows = torch.stack([ids[s:s + length - 1] for s in starts.tolist()])
        return torch.cat([torch.full((n, 1), BOS, dtype=torch.long), windows], dim=1)

    def decode(self, tokens) -> str:
        return "".join("^" if int(t) == BOS else self.vocab[int(t)] for t in tokens)


@functools.lru_cache(maxsize=8)
def _dataset(name: str, options: tuple):
    return BigramBackcopy(**dict(options)) if name == "bb" else DocstringText()


def load_dataset(name: str, **options):
    """"bb" (BigramBackcopy, with its keyword options) or "text" (DocstringText), cached."""
    return _dataset(name, tuple(sorted(options.items())))


def validation_tokens(dataset) -> torch.Tensor:
    generator = torch.Generator().manual_seed(VAL_SEED)
    if isinstance(dataset, DocstringText):
        return dataset.sample(VAL_SEQUENCES, generator, split="val")
    return dataset.sample(VAL_SEQUENCES, generator)


# ------------------------------------------------------------------------------- training
def lm_loss(model, tokens: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of predicting tokens[:, 1:] from every prefix."""
    logits = model(tokens)
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())


POOL_SEED = 0  # recipe "pool": one fixed set of training sequences, the same for every seed


def _optimizer(model, recipe: dict, steps: int):
    """AdamW (0.9, 0.95) with linear warm-up, then cosine decay to a tenth."""
    if recipe.get("decay", "all") == "matrices":  # the usual LLM recipe: no decay on vectors
        groups = [{"params": [p for p in model.parameters() if p.dim() >= 2]},
                  {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0}]
    else:
        groups = model.parameters()
    optimizer = torch.optim.AdamW(groups, lr=recipe["lr"], betas=(0.9, 0.95),
                                  weight_decay=recipe["weight_decay"])

    def learning_rate(step):
        if step < recipe["warmup"]:
            return (step + 1) / recipe["warmup"]
        done = (step - recipe["warmup"]) / max(1, steps - recipe["warmup"])
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * done))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, learning_rate)


def _training_batches(dataset, recipe: dict, steps: int, generator: torch.Generator):
    """(steps, batch_size, SEQ_LEN): fresh sequences for every batch, or, with recipe["pool"] = n,
    batches drawn (with replacement) from one fixed set of n sequences."""
    size = recipe["batch_size"]
    if not recipe.get("pool"):  # one vectorised draw is much cheaper than one per step
        return dataset.sample(steps * size, generator).view(steps, size, -1)
    pool = training_pool(dataset, recipe["pool"])
    return pool[torch.randint(len(pool), (steps, size), generator=generator)]


@functools.lru_cache(maxsize=2)
def training_pool(dataset, n: int) -> torch.Tensor:
    """The fixed training pool of n sequences (POOL_SEED), drawn once per process: the same
    tensor every time (drawing 40,000 sequences costs seconds)."""
    return dataset.sample(n, torch.Generator().manual_seed(POOL_SEED))


def train(dataset, gate: str, seed: int, steps: int = STEPS, threads: int = 2,
          progress: bool = True, model_options: dict | None = None, **recipe):
    """Train one TinyLM from scratch; returns the model (float32, eval mode).
    model_options: TinyLM keywords (arch, norm, positions, gate_bias, d_ff, init, biases, tied)
    and optionally "recipe", a RECIPES key (default: the architecture's); default the
    paper-like model. recipe: keywords that override single settings of the recipe (and
    pool=n: train on a fixed set of n sequences)."""
    from tqdm.auto import tqdm

    options = dict(model_options or {})
    arch = options.setdefault("arch", "paper")
    options.setdefault("d_ff", D_FF[arch])
    recipe = {**RECIPES[options.pop("recipe", arch)], **recipe, "steps": steps}
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = model_class()(dataset.vocab_size, max_len=SEQ_LEN, gate=gate, **options)
    optimizer, schedule = _optimizer(model, recipe, steps)
    generator = torch.Generator().manual_seed(1000 + seed)
    bar = tqdm(range(steps), desc=f"{arch:>5} {gate:>11} seed {seed}", disable=not progress,
               mininterval=2.0, leave=False)
    model.train()
    stream = _training_batches(dataset, recipe, steps, generator)
    for step in bar:
        loss = lm_loss(model, stream[step])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["grad_clip"])
        optimizer.step()
        schedule.step()
        if step % 100 == 0:
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    return model.eval()


def compact_state(model) -> dict[str, torch.Tensor]:
    """The state dict in float16, on the CPU: how checkpoints ship (half the bytes of float32)."""
    return {name: t.detach().to("cpu", torch.float16) for name, t in model.state_dict().items()}


def load_model(config: dict, state: dict[str, torch.Tensor]):
    model = model_class()(**config)
    model.load_state_dict({name: t.float() for name, t in state.items()})
    return model.eval()


# --------------------------------------------------------------------------- measurements
GATE_BINS = 20


@torch.no_grad()
def measure(model, dataset, tokens: torch.Tensor | None = None) -> dict:
    """The lesson's measurements on the validation sequences (numbers and nested lists only).

    first_token_share: mean over layers, heads and query positions >= 1 of the weight on
        position 0 (BOS); also per layer and per [layer][head].
    gate_mean, gate_below_0.1, gate_histogram (counts in GATE_BINS bins over [0, 1]): all gate
        scores of all layers (None without a gate).
    gate_at_trigger, gate_elsewhere (Bigram-Backcopy only): mean gate score of queries that are
        a trigger character (their next token is a back-copy) and of all other queries >= 1,
        over all layers; also per layer.
    max_activation: largest |hidden state| after each block, and its maximum.
    massive_activations_per_layer: per block output, as Sun et al. 2024 measure massive
        activations (see massive_activations).
    val_loss; copy_accuracy (Bigram-Backcopy only): argmax prediction right at back-copies.
    The functional tests of the sink (course.lesson08_functional): loss_bos_blocked,
    loss_bos_value_zeroed, loss_window and loss_window_bos ({window: loss}); value_drain
    [layer][head]; sink_rate.
    """
    tokens = validation_tokens(dataset) if tokens is None else tokens
    logits, record = model(tokens, details=True)
    per_head = torch.stack([w[:, :, 1:, 0].mean(dim=(0, 2)) for w in record["weights"]])
    result = {
        "first_token_share": per_head.mean().item(),
        "first_token_share_per_layer": per_head.mean(dim=1).tolist(),
        "first_token_share_per_head": per_head.tolist(),
        "val_loss": F.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).item(),
        "max_activation_per_layer": [h.abs().max().item() for h in record["hidden"]],
    }
    result["max_activation"] = max(result["max_activation_per_layer"])
    result.update({k: v for k, v in functional(model, tokens).items() if k != "loss_full"})
    result["value_drain"] = value_drain(model, tokens, record)
    result["sink_rate"] = sink_rate(result["first_token_share_per_head"])
    result["massive_activations_per_layer"] = [massive_activations(h) for h in record["hidden"]]
    scores = [g for g in record["gate_scores"] if g is not None]
    if scores:
        flat = torch.cat([g.flatten() for g in scores])
        result["gate_mean"] = flat.mean().item()
        result["gate_below_0.1"] = (flat < 0.1).double().mean().item()
        result["gate_histogram"] = torch.histc(flat, bins=GATE_BINS, min=0.0, max=1.0).tolist()
    else:
        result["gate_mean"] = result["gate_below_0.1"] = result["gate_histogram"] = None
    result["gate_at_trigger"] = result["gate_elsewhere"] = None
    if scores and isinstance(dataset, BigramBackcopy):
        trigger = torch.isin(tokens, dataset.trigger_ids)  # (B, L) queries whose next token is a copy
        other = ~trigger
        other[:, 0] = False  # BOS can only attend to itself
        per_query = [g.mean(dim=(-2, -1)) for g in scores]  # each (B, L)
        result["gate_at_trigger_per_layer"] = [g[trigger].mean().item() for g in per_query]
        result["gate_elsewhere_per_layer"] = [g[other].mean().item() for g in per_query]
        result["gate_at_trigger"] = sum(result["gate_at_trigger_per_layer"]) / len(per_query)
        result["gate_elsewhere"] = sum(result["gate_elsewhere_per_layer"]) / len(per_query)
    if isinstance(dataset, BigramBackcopy):
        copies = dataset.copy_positions(tokens)[:, 1:]  # aligned with predictions of tokens[:, 1:]
        right = logits[:, :-1].argmax(-1) == tokens[:, 1:]
        result["copy_accuracy"] = right[copies].double().mean().item()
        result["copy_positions"] = int(copies.sum())
    else:
        result["copy_accuracy"] = None
    return result



def massive_activations(hidden: torch.Tensor, top: int = 3) -> dict:
    """hidden: (B, L, d) one layer's output. Massive activations as Sun et al. 2024 ("Massive
    Activations in Large Language Models") measure them, relative to the hidden state itself:
    the `top` largest magnitudes |h| over all positions and channels, the median magnitude, the
    ratio largest / median (they call activations massive at about 1,000x the median), and
    where the largest sits (position 0 is BOS; its channel)."""
    magnitude = hidden.abs()
    values, where = magnitude.flatten().topk(top)
    median = magnitude.median().item()
    position, channel = divmod(int(where[0]) % (hidden.shape[-2] * hidden.shape[-1]), hidden.shape[-1])
    return {"top": values.tolist(), "median": median, "ratio": values[0].item() / median,
            "position": position, "channel": channel}


def train_and_measure(dataset_name: str, gate: str, seed: int, steps: int = STEPS,
                      threads: int = 2, progress: bool = True, model_options: dict | None = None):
    """Train one run and measure it with its float16 weights (exactly what ships).
    model_options: as train's, plus "data" (BigramBackcopy options) and "pool" (recipe)."""
    options = dict(model_options or {})
    dataset = load_dataset(dataset_name, **options.pop("data", {}))
    recipe = {"pool": options.pop("pool")} if options.get("pool") else {}
    start = time.perf_counter()
    model = train(dataset, gate, seed, steps=steps, threads=threads, progress=progress,
                  model_options=options, **recipe)
    seconds = time.perf_counter() - start
    state = compact_state(model)
    shipped = load_model(model.config, state)
    metrics = measure(shipped, dataset)
    metrics["train_seconds"] = seconds
    metrics["steps"] = steps
    return shipped.config, state, metrics


def run_key(arch: str, dataset: str, gate: str, seed: int, setup: str = "course") -> str:
    """'paper/bb/none/seed0' in the course's set-up, 'sink/paper/bb/none/seed0' in another."""
    return f"{setup_prefix(arch, setup)}/{dataset}/{gate}/seed{seed}"


def setup_prefix(arch: str, setup: str = "course") -> str:
    return arch if setup == "course" else f"{setup}/{arch}"


def _file_stem(arch: str, dataset: str, setup: str) -> str:
    return f"{arch}_{dataset}" if setup == "course" else f"{setup}_{arch}_{dataset}"


def checkpoint_path(arch: str, dataset: str, folder: Path | None = None, setup: str = "course") -> Path:
    return Path(folder or DATA) / f"checkpoints_{_file_stem(arch, dataset, setup)}.pt"


def metrics_path(arch: str, dataset: str, folder: Path | None = None, setup: str = "course") -> Path:
    return Path(folder or DATA) / f"metrics_{_file_stem(arch, dataset, setup)}.json"


def ablations_path(folder: Path | None = None) -> Path:
    return Path(folder or DATA) / "metrics_ablations.json"


def _progress_line(key: str, m: dict) -> str:
    return (f"{key}: first-token share {m['first_token_share']:.3f} (per layer "
            + ", ".join(f"{v:.2f}" for v in m["first_token_share_per_layer"])
            + f"), val loss {m['val_loss']:.4f}, {m['train_seconds']:.0f} s")


# the seeds whose float16 weights ship (the cells that need weights use seed 0); every seed's
# metrics ship
CHECKPOINT_SEEDS = (0,)


def _stored_runs(arch: str, dataset: str, folder: Path, setup: str, record: dict):
    """(metrics, checkpoints) already trained with this recipe and set-up, else empty dicts."""
    path = metrics_path(arch, dataset, folder, setup)
    if not path.exists():
        return {}, {}
    stored = json.loads(path.read_text())
    if {k: stored.get(k) for k in record} != record:
        return {}, {}
    weights = checkpoint_path(arch, dataset, folder, setup)
    return stored["runs"], torch.load(weights, weights_only=True) if weights.exists() else {}


def train_all(archs=ARCHS, datasets=DATASETS, variants=VARIANTS, seeds=SEEDS,
              steps: int = STEPS, threads: int = 2, folder: Path | None = None,
              progress: bool = True, setup: str = "course",
              checkpoint_seeds=CHECKPOINT_SEEDS) -> dict:
    """Train every run of a set-up (SETUPS); write metrics_<stem>.json (every run) and
    checkpoints_<stem>.pt (the runs of checkpoint_seeds), stem "<arch>_<dataset>", or
    "<setup>_<arch>_<dataset>" outside the course's set-up. Runs already there (same recipe and
    set-up) are kept, so an interrupted training resumes where it stopped."""
    folder = Path(folder or DATA)
    folder.mkdir(parents=True, exist_ok=True)
    all_metrics = {}
    for arch in archs:
        for dataset in datasets:
            record = {"recipe": {**RECIPES[arch], "steps": steps}}
            if setup != "course":
                record["setup"] = list(SETUPS[setup])
            metrics, checkpoints = _stored_runs(arch, dataset, folder, setup, record)
            for gate in variants:
                for seed in seeds:
                    key = run_key(arch, dataset, gate, seed, setup)
                    if key in metrics and (seed not in checkpoint_seeds or key in checkpoints):
                        continue
                    config, state, metrics[key] = train_and_measure(
                        dataset, gate, seed, steps=steps, threads=threads, progress=progress,
                        model_options=sink_spec(SETUPS[setup], arch))
                    if progress:
                        print(_progress_line(key, metrics[key]), flush=True)
                    # written after every run, so an interrupted training keeps what it finished
                    metrics_path(arch, dataset, folder, setup).write_text(
                        json.dumps({**record, "runs": metrics}, indent=1) + "\n")
                    if seed in checkpoint_seeds:
                        checkpoints[key] = {"config": config, "state": state}
                        torch.save(checkpoints, checkpoint_path(arch, dataset, folder, setup))
            all_metrics.update(metrics)
    return all_metrics


def _train_into(path: Path, key: str, spec: dict, dataset: str, gate: str, seed: int,
                threads: int, progress: bool) -> dict:
    """Train one metrics-only run of `spec` into the JSON file `path` (runs by key), unless it is
    there already (an interrupted training resumes). Returns all runs of the file."""
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    if key in runs:
        return runs
    config, _state, metrics = train_and_measure(dataset, gate, seed, threads=threads,
                                           progress=progress, model_options=spec)
    metrics.update(config=config, recipe=spec.get("recipe", spec["arch"]),
                   data=spec.get("data", {}), pool=spec.get("pool"))
    # re-read first: another process may have added runs meanwhile
    runs = json.loads(path.read_text())["runs"] if path.exists() else {}
    runs[key] = metrics
    if progress:
        print(_progress_line(key, metrics), flush=True)
    path.write_text(json.dumps({"recipes": RECIPES, "runs": runs}, indent=1) + "\n")
    return runs


def train_ablations(names=tuple(ABLATIONS), gates=ABLATION_GATES, seed: int = 0,
                    dataset: str = "bb", threads: int = 2, folder: Path | None = None,
                    progress: bool = True) -> dict:
    """One seed per ablation and gate; metrics (with each run's config) to metrics_ablations.json."""
    runs = {}
    for name in names:
        for gate in gates:
            runs = _train_into(ablations_path(folder), f"{name}/{dataset}/{gate}/seed{seed}",
                               ABLATIONS[name], dataset, gate, seed, threads, progress)
    return runs


# ------------------------------------------------------- what makes the attention sink strong
# The seven places where an independent prototype (2 layers, the same recipe, written outside
# the course; a strong sink forms in it) differs from the course's model and Bigram-Backcopy data. Each: the
# options that give the course's code the prototype's choice. The search turns them on in
# groups (bisection) on the paper-like build, baselines first.
SINK_FACTORS = {
    "trigger token": {"data": {"trigger": "token"}},
    "normal init": {"init": "normal"},
    "no biases": {"biases": False},
    "untied head": {"tied": False},
    "fixed pool": {"pool": 40_000},
    "uniform first": {"data": {"first": "uniform"}},
    "raw bigrams": {"data": {"smoothed": False}},
}


def sink_spec(factors, arch: str = "paper") -> dict:
    """The model_options of `arch` with the prototype's choice of every factor named."""
    spec = {"arch": arch, "data": {}}
    for name in factors:
        for key, value in SINK_FACTORS[name].items():
            if key == "data":
                spec["data"].update(value)
            else:
                spec[key] = value
    return spec


# The set-ups the lesson trains every variant of, in both builds: the course's own model and data,
# and the one the sink search found to make a strong attention sink (a list of SINK_FACTORS).
SETUPS = {
    "course": (),
    "sink": tuple(SINK_FACTORS),
}


def sink_search_path(folder: Path | None = None) -> Path:
    return Path(folder or DATA) / "metrics_sink_search.json"


def sink_search_key(factors, gate: str, seed: int, arch: str = "paper") -> str:
    """E.g. 'paper: trigger token + normal init/bb/none/seed0' ('the course's set-up' for none)."""
    named = " + ".join(f for f in SINK_FACTORS if f in factors) or "the course's set-up"
    return f"{arch}: {named}/bb/{gate}/seed{seed}"


def train_sink_search(factors, gates=("none",), seeds=(0,), arch: str = "paper",
                      threads: int = 1, folder: Path | None = None, progress: bool = True) -> dict:
    """Runs of the sink search (metrics only) into metrics_sink_search.json."""
    runs = {}
    for seed in seeds:
        for gate in gates:
            runs = _train_into(sink_search_path(folder), sink_search_key(factors, gate, seed, arch),
                               sink_spec(factors, arch), "bb", gate, seed, threads, progress)
    return runs


def load_metrics(folder: Path | None = None, archs=ARCHS, setups=None) -> dict:
    """Shipped metrics of every run of the set-ups (default: all SETUPS), by run_key."""
    runs = {}
    for setup in setups or SETUPS:
        for arch in archs:
            for dataset in DATASETS:
                path = metrics_path(arch, dataset, folder, setup)
                if path.exists():
                    runs.update(json.loads(path.read_text())["runs"])
    return runs


def load_sink_search(folder: Path | None = None) -> dict:
    return json.loads(sink_search_path(folder).read_text())["runs"]


def load_ablations(folder: Path | None = None) -> dict:
    return json.loads(ablations_path(folder).read_text())["runs"]


@functools.lru_cache(maxsize=4)
def _checkpoint_file(path: Path, modified: float) -> dict:
    return torch.load(path, weights_only=True)


def load_checkpoint(dataset: str, gate: str, seed: int, arch: str = "paper",
                    folder: Path | None = None, setup: str = "course"):
    """A shipped (or retrained, with `folder`) model, float32, in eval mode."""
    path = checkpoint_path(arch, dataset, folder, setup)
    stored = _checkpoint_file(path, path.stat().st_mtime)[run_key(arch, dataset, gate, seed, setup)]
    return load_model(stored["config"], stored["state"])


SUMMARY_KEYS = ("first_token_share", "gate_mean", "gate_below_0.1", "gate_at_trigger",
                "gate_elsewhere", "max_activation", "val_loss", "copy_accuracy")


def summary(runs: dict, dataset: str, arch: str = "paper", keys=SUMMARY_KEYS):
    """{gate: {key: (mean, min, max) over seeds}} for one run-key prefix (an architecture, or
    "<setup>/<arch>") and dataset (None where not measured); also 'first_token_share_per_layer':
    the mean over seeds of each layer."""
    table = {}
    for gate in VARIANTS:
        found = [m for k, m in runs.items() if k.startswith(f"{arch}/{dataset}/{gate}/")]
        row = {}
        for key in keys:
            values = [m[key] for m in found if m.get(key) is not None]
            row[key] = (sum(values) / len(values), min(values), max(values)) if values else None
        layers = [m["first_token_share_per_layer"] for m in found]
        row["first_token_share_per_layer"] = [sum(v) / len(v) for v in zip(*layers)] if layers else None
        table[gate] = row
    return table


# ------------------------------------------------------------------- the notebook's RETRAIN
RETRAIN_FOLDER = ROOT / "build" / "lesson08_retrain"


RETRAIN_SETUP = "sink"


def retrain_main_comparison(folder: Path = RETRAIN_FOLDER, threads: int = 2,
                            steps: int = RETRAIN_STEPS, seeds=(0,), setup: str = RETRAIN_SETUP) -> dict:
    """The paper-like model in the strong-sink set-up, 4 variants, Bigram-Backcopy, seed 0,
    RETRAIN_STEPS steps, into `folder` (not data/); returns their metrics. The full set is
    scripts/train_lesson08.py."""
    start = time.perf_counter()
    train_all(archs=("paper",), datasets=("bb",), seeds=seeds, steps=steps, threads=threads,
              folder=folder, setup=setup)
    print(f"retrained {len(VARIANTS) * len(seeds)} runs in "
          f"{(time.perf_counter() - start) / 60:.1f} min")
    return load_metrics(folder, archs=("paper",), setups=(setup,))


def compare_runs(shipped: dict, fresh: dict, arch: str = "paper", setup: str = RETRAIN_SETUP,
                 datasets=("bb",)) -> str:
    """Shipped (mean of 3 seeds, full steps) vs retrained: the headline numbers per variant."""
    prefix = setup_prefix(arch, setup)
    lines = [f"{pad(_('dataset'), 8)} {pad(_('variant'), 12)} {pad(_('first-token share'), 22, '>')} {pad(_('val loss'), 18, '>')}",
             f"{'':21} {pad(_('shipped'), 11, '>')} {pad(_('retrained'), 10, '>')} {pad(_('shipped'), 9, '>')} {pad(_('retrained'), 9, '>')}"]
    for dataset in datasets:
        old, new = summary(shipped, dataset, prefix), summary(fresh, dataset, prefix)
        for gate in VARIANTS:
            lines.append(f"{dataset:8} {gate:12} {old[gate]['first_token_share'][0]:>11.3f} "
                         f"{new[gate]['first_token_share'][0]:>10.3f} "
                         f"{old[gate]['val_loss'][0]:>9.3f} {new[gate]['val_loss'][0]:>9.3f}")
    return "\n".join(lines)


# ------------------------------------------------- a trained layer in the student's exercise
def as_exercise_attention(attn, cls):
    """The paper-like model's attention layer `attn` (PaperSelfAttention) as the exercise class
    `cls` (GatedCausalSelfAttention with rope=True): q, k, v stacked into qkv, linear_o's matrix
    as out. W_O's bias is left out (the exercise's out has none): the module computes the layer's
    output minus linear_o.bias. Same dtype as attn."""
    d_model = attn.linear_q.weight.shape[1]
    module = cls(d_model, attn.n_heads, attn.gate, rope=attn.rope).to(attn.linear_q.weight)
    state = {"qkv.weight": torch.cat([attn.linear_q.weight, attn.linear_k.weight,
                                      attn.linear_v.weight]),
             "out.weight": attn.linear_o.weight}
    state.update({name: t for name, t in attn.state_dict().items()
                  if name.startswith(("gate_proj.", "gate_logit"))})
    module.load_state_dict(state)
    return module
