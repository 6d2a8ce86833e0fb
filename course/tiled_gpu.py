"""Lesson 09 on a GPU: naive attention, tiled attention and PyTorch's SDPA grown until the card
runs out, in inference and in training, and such runs kept as data for learners without a GPU.

A record is one JSON object, like lesson 05's (course/gpu_runs.py): the card (name, total
memory), the software (torch, CUDA), the shapes (B, H, c, float32, the tiles' block size), how L
grew (L_start, factor, time budget), where the numbers come from (`source`), and per method and
mode ("forward" under no_grad, "training" = forward and backward) the fields of
`course.memory.BlowUp`: the sizes that ran, the peak bytes above the inputs at each, seconds, the
size that ran out of memory, why it stopped.

    measure(tiled, ...)   grows L on this machine's first CUDA card; `tiled` is a tiled attention
                          (q, k, v, bias, mask, block_q, block_k) -> out, the learner's or the
                          solutions'
    load(), append()      the recorded runs in data/lesson09/gpu_runs.json
                          (`python scripts/record_gpu_run09.py --source "..."` adds one)
    show(record)          a table and a figure of one run
"""
from __future__ import annotations

import dataclasses
import datetime
import time
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

from course import ROOT, gpu_runs
from course.memory import GB, BlowUp, naive_column_attention

RUNS_FILE = ROOT / "data" / "lesson09" / "gpu_runs.json"
FORMAT = 1
MODES = ("forward", "training")
COLOURS = {"naive": "tab:red", "tiled": "tab:purple", "sdpa": "tab:green"}
BUDGET_S = 30.0  # all methods and modes together, on a large card


def methods(tiled: Callable, block: int) -> dict[str, Callable]:
    """The three ways, each a function of (q, k, v) of shape (B, H, L, c)."""
    return {"naive": naive_column_attention,
            "tiled": lambda q, k, v: tiled(q, k, v, None, None, block, block),
            "sdpa": F.scaled_dot_product_attention}


def _one_call(fn: Callable, shape, train: bool) -> tuple[int, float]:
    """(peak bytes above the inputs, seconds) of one call on the card (training: with backward)."""
    q, k, v = (torch.randn(shape, device="cuda").requires_grad_(train) for _ in range(3))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    start = time.perf_counter()
    if train:
        out = fn(q, k, v)
        out.backward(torch.ones_like(out))
    else:
        with torch.no_grad():
            out = fn(q, k, v)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return torch.cuda.max_memory_allocated() - before, seconds


def _grow(name: str, fn: Callable, shape_of: Callable[[int], tuple], train: bool, L_start: int,
          factor: float, share: float, L_max: int, log) -> BlowUp:
    """Grow L from L_start until out of memory, out of its time share, or past L_max."""
    run, L, started = BlowUp(name), L_start, time.perf_counter()
    while True:
        if L > L_max:
            run.stopped = f"reached L_max = {L_max}"
            return run
        try:
            peak, seconds = _one_call(fn, shape_of(L), train)
        except torch.cuda.OutOfMemoryError:
            run.out_of_memory_at, run.stopped = L, f"torch.cuda.OutOfMemoryError at L = {L}"
            return run
        finally:
            torch.cuda.empty_cache()
        run.sizes.append(L)
        run.peaks.append(peak)
        run.seconds.append(seconds)
        log(f"{name:6} {'training' if train else 'forward':8} L = {L:7d}: {peak / GB:8.3f} GB, "
            f"{seconds:7.3f} s")
        next_L = int(L * factor)
        expected = seconds * (next_L / L) ** 2  # the compute grows like L²
        used = time.perf_counter() - started
        if used + expected > share:
            run.stopped = f"time budget: L = {next_L} would take about {expected:.1f} s more"
            return run
        L = next_L


def measure(tiled: Callable, B: int = 1, H: int = 8, c: int = 64, block: int = 256,
            L_start: int = 1024, factor: float = 2.0, L_max: int = 1 << 20,
            budget_s: float = BUDGET_S, source: str = "", log=print) -> dict:
    """Grow L for each method and mode on this machine's first CUDA card; return the record."""
    if not torch.cuda.is_available():
        raise RuntimeError("measure needs a CUDA GPU")
    runs: dict[str, dict] = {}
    shares = len(MODES) * 3
    for name, fn in methods(tiled, block).items():
        runs[name] = {}
        for mode in MODES:
            run = _grow(name, fn, lambda L: (B, H, L, c), mode == "training", L_start, factor,
                        budget_s / shares, L_max, log)
            runs[name][mode] = dataclasses.asdict(run)
    card = torch.cuda.get_device_properties(0)
    return {"format": FORMAT, "device": card.name, "total_memory": int(card.total_memory),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "recorded": datetime.date.today().isoformat(), "source": source,
            "B": B, "H": H, "c": c, "dtype": "float32", "block": block, "L_start": L_start,
            "factor": factor, "budget_s": budget_s, "methods": runs}


def load(path: Path = RUNS_FILE) -> list[dict]:
    return gpu_runs.load(path, FORMAT)


def append(record: dict, path: Path = RUNS_FILE) -> None:
    """Add a record to the file (created if missing); earlier records stay as they are."""
    gpu_runs.append(record, path, FORMAT)


def header(record: dict) -> str:
    return (f"{record['device']}, {record['total_memory'] / GB:.1f} GB; torch {record['torch']}, "
            f"CUDA {record['cuda']}; B = {record['B']}, H = {record['H']}, c = {record['c']}, "
            f"{record['dtype']}, tiles of {record['block']}; recorded {record['recorded']}: "
            f"{record['source']}")


def print_table(record: dict) -> None:
    print(header(record))
    print(f"{'method':7} {'mode':9} {'largest L':>10} {'peak GB':>9} {'seconds':>8}  stopped")
    for name, modes in record["methods"].items():
        for mode, fields in modes.items():
            run = BlowUp(**fields)
            if run.sizes:
                print(f"{name:7} {mode:9} {run.sizes[-1]:>10,} {run.peaks[-1] / GB:>9.3f} "
                      f"{run.seconds[-1]:>8.3f}  {run.stopped}")
            else:
                print(f"{name:7} {mode:9} {'-':>10} {'-':>9} {'-':>8}  {run.stopped}")


def plot(record: dict, ax=None):
    """Peak GB above the inputs against L: forward (solid), training (dashed); x = out of memory."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for name, modes in record["methods"].items():
        for mode, style in zip(MODES, ("o-", "s--")):
            run = BlowUp(**modes[mode])
            if run.sizes:
                ax.loglog(run.sizes, [p / GB for p in run.peaks], style,
                          color=COLOURS.get(name, "black"), label=f"{name}, {mode}")
            if run.out_of_memory_at:
                ax.loglog([run.out_of_memory_at], [record["total_memory"] / GB], "x",
                          color=COLOURS.get(name, "black"), ms=10, mew=2)
    ax.axhline(record["total_memory"] / GB, color="grey", lw=1)
    ax.set(xlabel="L (queries = keys)", ylabel="peak GB above the inputs",
           title=f"{record['device']}: naive vs tiled vs SDPA; x = out of memory")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, ncol=2)
    return ax


def show(record: dict) -> None:
    import matplotlib.pyplot as plt

    print_table(record)
    plot(record)
    plt.show()
