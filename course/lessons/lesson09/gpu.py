"""Lesson 09 on a GPU: naive attention, tiled attention and PyTorch's SDPA grown until the card
runs out, in inference and in training, and such runs kept as data for learners without a GPU.

SDPA runs with its backend named (torch.nn.attention.sdpa_kernel), so the record says which kernel
ran: in float32 the memory-efficient kernel (CUDA's FlashAttention kernel accepts only float16 and
bfloat16), in bfloat16 the FlashAttention kernel. Naive and tiled attention run in both dtypes.

A record is one JSON object, like lesson 05's (course/gpu_runs.py): the card (name, total
memory), the software (torch, CUDA), the shapes (B, H, c, the tiles' block size), how L grew
(L_start, factor, time budget), where the numbers come from (`source`), the SDPA backend of each
dtype, and per method ("naive float32", "sdpa bfloat16", ...) and mode ("forward" under no_grad,
"training" = forward and backward) the fields of `course.memory.BlowUp`: the sizes that ran, the
peak bytes above the inputs at each, seconds, the size that ran out of memory, why it stopped.

    measure(tiled, ...)   grows L on this machine's first CUDA card; `tiled` is a tiled attention
                          (q, k, v, bias, mask, block_q, block_k) -> out, the learner's or the
                          solutions'; SDPA float32 on the memory-efficient kernel, bfloat16 on
                          the FlashAttention kernel
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
FORMAT = 2
MODES = ("forward", "training")
COLOURS = {"naive": "tab:red", "tiled": "tab:purple", "sdpa": "tab:green"}
BUDGET_S = 60.0  # all methods, dtypes and modes together, on a large card
# the SDPA kernel each dtype runs on: CUDA's FlashAttention kernel takes float16 and bfloat16 only
BACKENDS = {"float32": "EFFICIENT_ATTENTION", "bfloat16": "FLASH_ATTENTION"}


def _sdpa(backend: str) -> Callable:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def call(q, k, v):
        with sdpa_kernel([getattr(SDPBackend, backend)]):  # raises if that kernel cannot run
            return F.scaled_dot_product_attention(q, k, v)
    return call


def methods(tiled: Callable, block: int) -> dict[str, tuple[Callable, torch.dtype]]:
    """Naive, tiled and SDPA (its backend named) in float32 and bfloat16, each a function of
    (q, k, v) of shape (B, H, L, c), with the dtype of its inputs."""
    found = {}
    for dtype_name, backend in BACKENDS.items():
        dtype = getattr(torch, dtype_name)
        found[f"naive {dtype_name}"] = (naive_column_attention, dtype)
        found[f"tiled {dtype_name}"] = (lambda q, k, v: tiled(q, k, v, None, None, block, block),
                                        dtype)
        found[f"sdpa {dtype_name}"] = (_sdpa(backend), dtype)
    return found


def _one_call(fn: Callable, shape, train: bool, dtype=torch.float32) -> tuple[int, float]:
    """(peak bytes above the inputs, seconds) of one call on the card (training: with backward)."""
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype).requires_grad_(train)
               for _ in range(3))
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
          factor: float, share: float, L_max: int, log, dtype=torch.float32) -> BlowUp:
    """Grow L from L_start until out of memory, out of its time share, or past L_max."""
    run, L, started = BlowUp(name), L_start, time.perf_counter()
    while True:
        if L > L_max:
            run.stopped = f"reached L_max = {L_max}"
            return run
        try:
            peak, seconds = _one_call(fn, shape_of(L), train, dtype)
        except torch.cuda.OutOfMemoryError:
            run.out_of_memory_at, run.stopped = L, f"torch.cuda.OutOfMemoryError at L = {L}"
            return run
        finally:
            torch.cuda.empty_cache()
        run.sizes.append(L)
        run.peaks.append(peak)
        run.seconds.append(seconds)
        log(f"{name:15} {'training' if train else 'forward':8} L = {L:7d}: {peak / GB:8.3f} GB, "
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
    ways = methods(tiled, block)
    shares = len(MODES) * len(ways)
    for name, (fn, dtype) in ways.items():
        runs[name] = {}
        for mode in MODES:
            run = _grow(name, fn, lambda L: (B, H, L, c), mode == "training", L_start, factor,
                        budget_s / shares, L_max, log, dtype)
            runs[name][mode] = dataclasses.asdict(run)
    card = torch.cuda.get_device_properties(0)
    return {"format": FORMAT, "device": card.name, "total_memory": int(card.total_memory),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "recorded": datetime.date.today().isoformat(), "source": source,
            "B": B, "H": H, "c": c, "dtypes": list(BACKENDS), "sdpa backends": dict(BACKENDS),
            "block": block, "L_start": L_start, "factor": factor, "budget_s": budget_s,
            "methods": runs}


def load(path: Path = RUNS_FILE) -> list[dict]:
    return gpu_runs.load(path, FORMAT)


def append(record: dict, path: Path = RUNS_FILE) -> None:
    """Add a record to the file (created if missing); earlier records stay as they are."""
    gpu_runs.append(record, path, FORMAT)


def header(record: dict) -> str:
    return (f"{record['device']}, {record['total_memory'] / GB:.1f} GB; torch {record['torch']}, "
            f"CUDA {record['cuda']}; B = {record['B']}, H = {record['H']}, c = {record['c']}, "
            f"tiles of {record['block']}; SDPA kernels: "
            + ", ".join(f"{d} {b}" for d, b in record["sdpa backends"].items())
            + f"; recorded {record['recorded']}: {record['source']}")


def print_table(record: dict) -> None:
    print(header(record))
    print(f"{'method':15} {'mode':9} {'largest L':>10} {'peak GB':>9} {'seconds':>8}  stopped")
    for name, modes in record["methods"].items():
        for mode, fields in modes.items():
            run = BlowUp(**fields)
            if run.sizes:
                print(f"{name:15} {mode:9} {run.sizes[-1]:>10,} {run.peaks[-1] / GB:>9.3f} "
                      f"{run.seconds[-1]:>8.3f}  {run.stopped}")
            else:
                print(f"{name:15} {mode:9} {'-':>10} {'-':>9} {'-':>8}  {run.stopped}")


def plot(record: dict, ax=None):
    """Peak GB above the inputs against L: forward (solid), training (dashed); x = out of memory."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    for name, modes in record["methods"].items():
        colour = COLOURS.get(name.split()[0], "black")
        for mode, style in zip(MODES, ("o-", "s--")):
            run = BlowUp(**modes[mode])
            if run.sizes:
                ax.loglog(run.sizes, [p / GB for p in run.peaks], style, color=colour,
                          alpha=1.0 if name.endswith("float32") else 0.5, label=f"{name}, {mode}")
            if run.out_of_memory_at:
                ax.loglog([run.out_of_memory_at], [record["total_memory"] / GB], "x",
                          color=colour, ms=10, mew=2)
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
