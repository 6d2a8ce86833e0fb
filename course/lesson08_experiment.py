"""Lesson 08's many-seed experiment: every arm, many seeds, training curves and the functional
tests of the sink, in two set-ups of the paper-like build on Bigram-Backcopy.

Set-ups (course.lm_training.SETUPS): "sink", where the baseline's layer 0 puts almost all of its
attention on BOS (a strong sink *pattern*), and "course", the course's own model and data, where
the pattern is weak but the baseline depends on BOS (the functional test finds it).

Arms: the four variants of the lesson (ARMS: gate, TinyLM options) and "wider", the baseline with
an FFN WIDER units wider, so that it has as many parameters as G1 elementwise (a control for the
gate's extra parameters).

Each run trains exactly as course.lm_training.train does (the same seeds, data and recipe), and
every CURVE_EVERY steps measures the first CURVE_SEQUENCES validation sequences: the loss, the loss
with BOS blocked, the first-token share (all layers and per layer) and the value drain. Runs are
written one file each into a working folder (default build/lesson08_experiment/); an unfinished run
saves its state every SAVE_EVERY steps and resumes from there; `collect` merges the finished runs
into the shipped metrics (data/lesson08/metrics_experiment.json) and the seed-0 weights.

A run trains on the CPU by default, or on a GPU (device="cuda"; the CPU where torch finds none).
The initial weights and the training sequences are drawn on the CPU either way, so a run sees the
same data on every device; its arithmetic, and so its last bits, differ. The end-of-run
measurements are taken on the CPU from the float16 weights that ship.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import torch

from course import ROOT
from course import lm_training as lm
from course.lesson08_functional import key_mask, value_drain

EXPERIMENT_SETUPS = ("course", "sink")
WIDER = 32  # extra FFN units: 2 layers x 2 x 64 x 32 = 8,192 weights, what G1 elementwise adds
ARMS = {"none": ("none", {}), "elementwise": ("elementwise", {}), "static": ("static", {}),
        "headwise": ("headwise", {}), "wider": ("none", {"d_ff": lm.D_FF["paper"] + WIDER})}
SEEDS = tuple(range(10))
CURVE_EVERY = 100
CURVE_SEQUENCES = 64
SAVE_EVERY = 500
WORK = ROOT / "build" / "lesson08_experiment"
METRICS = lm.DATA / "metrics_experiment.json"
CHECKPOINTS = lm.DATA / "checkpoints_experiment.pt"


PREFIX = "experiment"


def run_key(setup: str, arm: str, seed: int) -> str:
    """The run's key: 'experiment/paper/bb/none/seed3' in the course's set-up,
    'experiment/sink/paper/bb/wider/seed3' in the strong-sink set-up (the shipped keys of
    course.lm_training.run_key under PREFIX). A seed of the experiment is a run of its own, not
    the 3-seed run of the same number: training is not bit-reproducible across thread counts and
    library builds, and 2,500 steps amplify the last bits."""
    return f"{PREFIX}/{lm.run_key('paper', 'bb', arm, seed, setup)}"


def file_stem(setup: str, arm: str, seed: int) -> str:
    return f"{setup}_{arm}_seed{seed}"


def queue(setups=EXPERIMENT_SETUPS, arms=tuple(ARMS), seeds=SEEDS) -> list[tuple[str, str, int]]:
    """The runs in the order the lesson's claims need them, so that a partial set answers the
    main question first (STAGES): in the course's set-up, where the baseline depends on BOS, the
    baseline against G1 elementwise (the paper's claim) on every seed; then the wider baseline (the
    control for the gate's extra parameters) on every seed; then the static scalar (the control for
    input-dependence) and headwise on half the seeds; then everything else (the strong-sink set-up
    last). Within a stage, seed by seed, so that the arms of a stage always have equal seeds."""
    order: list[tuple[str, str, int]] = []
    for stage_setups, stage_arms, n_seeds in STAGES:
        for setup in [s for s in setups if s in stage_setups]:
            for seed in seeds[:n_seeds]:
                order += [(setup, arm, seed) for arm in stage_arms if arm in arms
                          and (setup, arm, seed) not in order]
    for setup in setups:  # whatever no stage named, seed by seed
        for seed in seeds:
            order += [(setup, arm, seed) for arm in ARM_ORDER if arm in arms
                      and (setup, arm, seed) not in order]
    return order


ARM_ORDER = ("none", "elementwise", "wider", "static", "headwise")
# (set-ups, arms, seeds) of each stage, in the order they are trained
STAGES = ((("course",), ("none", "elementwise"), 10),
          (("course",), ("wider",), 10),
          (("course",), ("static", "headwise"), 5))


def _files(folder: Path, stem: str) -> tuple[Path, Path, Path]:
    return folder / f"{stem}.json", folder / f"{stem}.state.pt", folder / f"{stem}.lock"


def _model_and_data(setup: str, arm: str):
    gate, extra = ARMS[arm]
    options = lm.sink_spec(lm.SETUPS[setup], "paper")
    dataset = lm.load_dataset("bb", **options.pop("data"))
    recipe = dict(lm.RECIPES["paper"])
    if options.get("pool"):
        recipe["pool"] = options.pop("pool")
    options = {"d_ff": lm.D_FF["paper"], **options, **extra}
    return gate, options, dataset, recipe


def resolve_device(name: str | None = None) -> torch.device:
    """The device to train on: the CPU by default; "cuda" where torch finds a GPU, else the CPU,
    with a line that says so (so a script started with --device cuda still runs)."""
    device = torch.device(name or "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device found: training on the CPU", flush=True)
        return torch.device("cpu")
    return device


def prepare(setup: str, arm: str, seed: int, steps: int = lm.STEPS, device=None):
    """One run's model, optimizer, schedule, training batches (steps, batch, SEQ_LEN) and curve
    sequences, on `device` (a torch.device or name; default the CPU). The weights and the
    batches are drawn on the CPU first: the same for every device."""
    gate, options, dataset, recipe = _model_and_data(setup, arm)
    recipe["steps"] = steps
    torch.manual_seed(seed)  # as lm.train: the model's initial weights depend on the seed only
    model = lm.model_class()(dataset.vocab_size, max_len=lm.SEQ_LEN, gate=gate, **options).to(device)
    optimizer, schedule = lm._optimizer(model, recipe, steps)
    stream = lm._training_batches(dataset, recipe, steps, torch.Generator().manual_seed(1000 + seed))
    curve_tokens = lm.validation_tokens(dataset)[:CURVE_SEQUENCES]
    return model, optimizer, schedule, recipe, stream.to(device), curve_tokens.to(device), dataset


@torch.no_grad()
def curve_point(model, tokens: torch.Tensor) -> dict:
    """The measurements logged during training, on tokens (B, L)."""
    was_training = model.training
    model.eval()
    logits, record = model(tokens, details=True)
    loss = torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())
    blocked = model(tokens, allowed=key_mask(tokens.shape[-1], block_bos=True, device=tokens.device))
    loss_blocked = torch.nn.functional.cross_entropy(blocked[:, :-1].flatten(0, 1), tokens[:, 1:].flatten())
    shares = [w[:, :, 1:, 0].mean().item() for w in record["weights"]]
    point = {"val_loss": loss.item(), "loss_bos_blocked": loss_blocked.item(),
             "first_token_share": sum(shares) / len(shares), "first_token_share_per_layer": shares,
             "value_drain_per_layer": [sum(h) / len(h) for h in value_drain(model, tokens, record)]}
    model.train(was_training)
    return point


def train_run(setup: str, arm: str, seed: int, folder: Path = WORK, threads: int = 1,
              progress: bool = True, steps: int = lm.STEPS, stop_after: int | None = None,
              device=None) -> dict:
    """Train one run (or finish it from its saved state) and write its metrics; returns them.
    steps: the length of the schedule (lm.STEPS ships); stop_after: save the state after that
    many steps and return None, as an interrupted run would (for tests); device: where to train
    (resolve_device: "cuda" falls back to the CPU where there is no GPU)."""
    folder.mkdir(parents=True, exist_ok=True)
    done, state_path, _lock = _files(folder, file_stem(setup, arm, seed))
    if done.exists():
        return json.loads(done.read_text())
    device = resolve_device(device) if not isinstance(device, torch.device) else device
    torch.set_num_threads(threads)
    model, optimizer, schedule, recipe, stream, curve_tokens, dataset = prepare(setup, arm, seed, steps, device)
    saved = torch.load(state_path, weights_only=False, map_location=device) if state_path.exists() else None
    if saved:
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        schedule.load_state_dict(saved["schedule"])
    start, curve, losses, seconds = (saved["step"], saved["curve"], saved["losses"], saved["seconds"]) \
        if saved else (0, [{"step": 0, **curve_point(model, curve_tokens)}], [], 0.0)
    clock, cpu = time.perf_counter(), time.process_time()
    model.train()
    for step in range(start, steps):
        loss = lm.lm_loss(model, stream[step])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), recipe["grad_clip"])
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
        if (step + 1) % CURVE_EVERY == 0:
            curve.append({"step": step + 1, "train_loss": sum(losses) / len(losses),
                          **curve_point(model, curve_tokens)})
            losses = []
            if progress:
                print(f"{run_key(setup, arm, seed)} step {step + 1}: share "
                      f"{curve[-1]['first_token_share']:.3f}, loss {curve[-1]['val_loss']:.4f}, "
                      f"BOS blocked {curve[-1]['loss_bos_blocked']:.4f}", flush=True)
        if ((step + 1) % SAVE_EVERY == 0 or step + 1 == stop_after) and step + 1 < steps:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                        "schedule": schedule.state_dict(), "step": step + 1, "curve": curve,
                        "losses": losses, "seconds": seconds + time.process_time() - cpu},
                       state_path)
            if step + 1 == stop_after:
                return None
    cpu_seconds = seconds + time.process_time() - cpu
    state = lm.compact_state(model.eval())
    shipped = lm.load_model(model.config, state)  # measured with the float16 weights that ship
    metrics = {**lm.measure(shipped, dataset), "curve": curve, "cpu_seconds": cpu_seconds,
               "wall_seconds_last_sitting": time.perf_counter() - clock, "steps": steps,
               "device": device.type,
               "config": shipped.config, "setup": setup, "arm": arm, "seed": seed}
    if seed == 0:
        torch.save({"config": shipped.config, "state": state}, done.with_suffix(".pt"))
    done.write_text(json.dumps(metrics) + "\n")
    state_path.unlink(missing_ok=True)
    return metrics


def _claim(lock: Path) -> bool:
    """Take a run for this process (a lock file created exclusively); False if another has it."""
    try:
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def work(folder: Path = WORK, threads: int = 1, runs=None, progress: bool = True, device=None) -> int:
    """Train every run of the queue not finished and not taken by another process; returns how
    many this process trained. Several processes may work on one folder side by side (on one
    GPU too: each run is small)."""
    folder.mkdir(parents=True, exist_ok=True)
    device = resolve_device(device)
    trained = 0
    shipped = set(load())  # runs that ship already are not trained again
    for setup, arm, seed in runs or queue():
        done, _state, lock = _files(folder, file_stem(setup, arm, seed))
        if run_key(setup, arm, seed) in shipped or done.exists() or not _claim(lock):
            continue
        try:
            train_run(setup, arm, seed, folder, threads, progress, device=device)
            trained += 1
        finally:
            lock.unlink(missing_ok=True)
    return trained


def collect(folder: Path = WORK, metrics: Path = METRICS, checkpoints: Path = CHECKPOINTS) -> int:
    """Merge the finished runs of `folder` into the shipped metrics file (and the seed-0 weights),
    keeping the runs already shipped; returns the number of runs shipped."""
    shipped = json.loads(metrics.read_text())["runs"] if metrics.exists() else {}
    weights = torch.load(checkpoints, weights_only=True) if checkpoints.exists() else {}
    for path in sorted(folder.glob("*_seed*.json")):
        run = json.loads(path.read_text())
        key = run_key(run["setup"], run["arm"], run["seed"])
        shipped[key] = run
        if path.with_suffix(".pt").exists():
            weights[key] = torch.load(path.with_suffix(".pt"), weights_only=True)
    order = {key: i for i, key in enumerate(run_key(*r) for r in queue())}
    shipped = dict(sorted(shipped.items(), key=lambda kv: order.get(kv[0], len(order))))
    recipe = {**lm.RECIPES["paper"], "steps": lm.STEPS}
    metrics.write_text(json.dumps({"recipe": recipe, "setups": {s: list(lm.SETUPS[s]) for s in EXPERIMENT_SETUPS},
                                   "arms": {a: [g, o] for a, (g, o) in ARMS.items()},
                                   "curve_every": CURVE_EVERY, "curve_sequences": CURVE_SEQUENCES,
                                   "runs": shipped}, indent=None, separators=(",", ":")) + "\n")
    if weights:
        torch.save(weights, checkpoints)
    return len(shipped)


def load(metrics: Path = METRICS) -> dict:
    """The shipped runs of the experiment, by run_key (empty before any has shipped)."""
    return json.loads(metrics.read_text())["runs"] if metrics.exists() else {}


def load_model(setup: str, arm: str, seed: int = 0, checkpoints: Path = CHECKPOINTS):
    stored = torch.load(checkpoints, weights_only=True)[run_key(setup, arm, seed)]
    return lm.load_model(stored["config"], stored["state"])
