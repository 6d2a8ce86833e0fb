"""How much memory column attention needs: predicted from shapes, measured on CPU, blown up on CUDA.

Lesson 05's memory demo. Four ways to run the attention core of MSA column attention on tensors
that are already projected, shape (R, H, S, c): R columns (residues), H heads, S sequences,
c channels per head.

    naive    softmax(q kᵀ / sqrt(c)) v for every column at once: S x S scores per column and head
    chunked  the same, `chunk` columns at a time (AlphaFold processes 4 at a time at inference)
    global   AF2's global column attention: one averaged query, one shared key/value head
    sdpa     torch.nn.functional.scaled_dot_product_attention (fused kernels on CUDA)

Three ways to know the memory:

    predict_peak_bytes   run on the `meta` device (shapes only, no data, no memory) and add up the
                         bytes of the tensors alive at each moment: the predicted peak
    measure_peak_cpu     run on the CPU under torch.profiler(profile_memory=True) and replay its
                         allocation and free events: the measured peak
    blow_up_cuda         on a GPU, grow S until torch.cuda.OutOfMemoryError (or a time budget
                         runs out), recording torch.cuda.max_memory_allocated at each size;
                         course/gpu_runs.py keeps such runs from real cards as data

Every number is the memory the attention call itself adds on top of its inputs (q, k, v), output
included. GB means 10⁹ bytes throughout.

This file is course machinery (it measures attention; it does not teach it): the attention code a
student writes lives in exercises/mha.py.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import time
import weakref
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from course.measure import best_time

GB = 1e9  # bytes; the course says GB for 10⁹ bytes and GiB for 2³⁰


# ---------------------------------------------------------------------------------------------
# the four attention cores, all on (R, H, S, c) tensors; attention runs along S


def naive_column_attention(q, k, v):
    """Every column's S x S scores at once. q, k, v: (R, H, S, c) -> (R, H, S, c)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (R, H, S, S)
    return torch.softmax(scores, dim=-1) @ v


def chunked_column_attention(q, k, v, chunk: int = 4):
    """Columns are independent: attend `chunk` of them at a time, so only their scores exist."""
    out = torch.empty_like(q)
    for start in range(0, q.shape[0], chunk):
        part = slice(start, start + chunk)
        out[part] = naive_column_attention(q[part], k[part], v[part])
    return out


def global_column_attention(q, k, v):
    """q: (R, H, S, c) averaged over S; k, v: (R, 1, S, c), one head shared by all H query heads.

    returns (R, H, 1, c): one summary per column and head (no mask here: every row is real).
    """
    q_mean = q.mean(dim=-2, keepdim=True)  # (R, H, 1, c)
    scores = q_mean @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (R, H, 1, S)
    return torch.softmax(scores, dim=-1) @ v


def sdpa_column_attention(q, k, v):
    """PyTorch's fused attention; on CUDA its kernels never hold the S x S scores."""
    return F.scaled_dot_product_attention(q, k, v)


METHODS: dict[str, Callable] = {
    "naive": naive_column_attention,
    "chunked": chunked_column_attention,
    "global": global_column_attention,
    "sdpa": sdpa_column_attention,
}


def make_inputs(method: str, R: int, H: int, S: int, c: int, device="cpu",
                dtype=torch.float32, requires_grad: bool = False, seed: int = 0):
    """q, k, v for `method`; global attention has a single key/value head (R, 1, S, c)."""
    kv_heads = 1 if method == "global" else H
    shapes = [(R, H, S, c), (R, kv_heads, S, c), (R, kv_heads, S, c)]
    if torch.device(device).type == "meta":
        tensors = [torch.empty(s, device="meta", dtype=dtype) for s in shapes]
    else:
        generator = torch.Generator(device=device).manual_seed(seed)
        tensors = [torch.randn(s, device=device, dtype=dtype, generator=generator) for s in shapes]
    return [t.requires_grad_(requires_grad) for t in tensors]


def input_bytes(method: str, R: int, H: int, S: int, c: int, dtype=torch.float32) -> int:
    """Bytes of q, k and v themselves."""
    kv_heads = 1 if method == "global" else H
    return (R * H * S * c + 2 * R * kv_heads * S * c) * torch.empty((), dtype=dtype).element_size()


def score_bytes(R: int, H: int, S_query: int, S_key: int, bytes_per_number: int = 4) -> int:
    """One score tensor (R, H, S_query, S_key): the number the lesson's cost table counts."""
    return R * H * S_query * S_key * bytes_per_number


# ---------------------------------------------------------------------------------------------
# prediction from shapes: run on `meta`, track which storages are alive


class LiveBytes(TorchDispatchMode):
    """Dispatch mode that adds up the bytes of every storage an op creates, while it lives.

    Each op's outputs are registered by their storage; a storage counts from its creation until
    the last tensor viewing it is garbage-collected (weakref finalizers), which is when the
    allocator would free it. Storages that exist before the mode starts (the inputs) are not
    counted. On the meta device nothing is allocated, so this runs at any S in microseconds.
    """

    def __init__(self, existing=()):
        super().__init__()
        self.views: dict[int, int] = {}   # storage id -> number of live tensors on it
        self.sizes: dict[int, int] = {}   # storage id -> bytes, for storages we count
        for tensor in existing:
            self.views[self._key(tensor)] = 1 << 60  # never freed, never counted
        self.current = 0
        self.peak = 0

    @staticmethod
    def _key(tensor: torch.Tensor) -> int:
        return tensor.untyped_storage()._cdata

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (tuple, list)) else [out]:
            if not isinstance(tensor, torch.Tensor):
                continue
            key = self._key(tensor)
            if key not in self.views:
                self.views[key] = 0
                self.sizes[key] = tensor.untyped_storage().nbytes()
                self.current += self.sizes[key]
                self.peak = max(self.peak, self.current)
            self.views[key] += 1
            weakref.finalize(tensor, self._release, key)
        return out

    def _release(self, key: int) -> None:
        self.views[key] -= 1
        if self.views[key] == 0:
            del self.views[key]
            self.current -= self.sizes.pop(key, 0)


def predict_peak_bytes(method: str, R: int, H: int, S: int, c: int, dtype=torch.float32,
                       train: bool = False) -> int:
    """Peak bytes the attention call adds (output included), from shapes alone (meta device).

    train=False: the forward pass only, as at inference. (For training, measure: see
    `measure_peak_cpu(..., train=True)`; autograd keeps tensors alive that this tracker cannot
    see from Python.)
    """
    if train:
        raise ValueError("predict_peak_bytes models inference; measure training on the CPU")
    inputs = make_inputs(method, R, H, S, c, device="meta", dtype=dtype)
    with torch.no_grad(), LiveBytes(existing=inputs) as live:
        out = METHODS[method](*inputs)
        del out
    return live.peak


def predicted_need(method: str, R: int, H: int, S: int, c: int, dtype=torch.float32) -> int:
    """Bytes a card must hold for one call: the inputs plus the predicted peak above them."""
    return input_bytes(method, R, H, S, c, dtype) + predict_peak_bytes(method, R, H, S, c, dtype)


@functools.lru_cache(maxsize=64)
def need_quadratic(method: str, R: int, H: int, c: int, dtype=torch.float32):
    """(a, b, d) with need(S) = a·S² + b·S + d, exact through predictions at S = 256, 512, 1024.

    Every tensor of these methods holds S or S² numbers, so three points determine the need.
    """
    points = [256, 512, 1024]
    needs = [predicted_need(method, R, H, S, c, dtype) for S in points]
    # divided differences: exact for a quadratic through the three points
    slope_1 = (needs[1] - needs[0]) / (points[1] - points[0])
    slope_2 = (needs[2] - needs[1]) / (points[2] - points[1])
    a = (slope_2 - slope_1) / (points[2] - points[0])
    b = slope_1 - a * (points[0] + points[1])
    d = needs[0] - a * points[0] ** 2 - b * points[0]
    return a, b, d


def predicted_wall(method: str, capacity_bytes: float, R: int, H: int, c: int,
                   dtype=torch.float32) -> int:
    """Largest S whose inputs plus predicted peak fit in `capacity_bytes`: where the card runs out.

    Solves the quadratic of `need_quadratic` for the capacity, then confirms the answer with
    predictions on meta right at it. (It says nothing of what else the card holds: weights, the
    rest of the network, the CUDA context.)
    """
    a, b, d = need_quadratic(method, R, H, c, dtype)
    if a > 0:
        S = int((-b + math.sqrt(b * b - 4 * a * (d - capacity_bytes))) / (2 * a))
    else:
        S = int((capacity_bytes - d) / b)
    while predicted_need(method, R, H, S + 1, c, dtype) <= capacity_bytes:
        S += 1
    while S > 1 and predicted_need(method, R, H, S, c, dtype) > capacity_bytes:
        S -= 1
    return S


# ---------------------------------------------------------------------------------------------
# measurement on the CPU: the profiler's allocation events


@contextlib.contextmanager
def _quiet_stderr():
    """The profiler's C++ side prints start/stop lines on file descriptor 2; hide them."""
    try:
        saved = os.dup(2)
    except OSError:  # no real file descriptor 2 (some embedded interpreters)
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


@dataclass
class Measured:
    peak: int            # highest bytes allocated during the call, above what existed before
    held_after: int      # bytes still allocated when the call returned (output + saved for backward)
    events: int = 0      # allocation and free events seen


def profile_bytes(fn: Callable[[], object]) -> Measured:
    """Run fn() under torch.profiler(profile_memory=True) and replay the CPU allocation events."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
    # each allocation and free is a "[memory]" record with a time stamp and signed byte count
    cpu = torch.autograd.DeviceType.CPU
    records = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                     if e.name() == "[memory]" and e.device_type() == cpu)
    current = peak = 0
    for _, nbytes in records:
        current += nbytes
        peak = max(peak, current)
    del result
    return Measured(peak=peak, held_after=current, events=len(records))


def measure_peak_cpu(method: str, R: int, H: int, S: int, c: int, dtype=torch.float32,
                     train: bool = False) -> Measured:
    """Measured peak of one attention call on the CPU (forward only; train=True keeps the graph).

    With train=True the inputs require grad, so autograd keeps what backward will need (the
    softmax weights of every column) alive after the forward: that shows in `held_after`.
    """
    inputs = make_inputs(method, R, H, S, c, dtype=dtype, requires_grad=train)
    context = contextlib.nullcontext() if train else torch.no_grad()
    with context:
        return profile_bytes(lambda: METHODS[method](*inputs))


# ---------------------------------------------------------------------------------------------
# the blow-up on CUDA


@dataclass
class BlowUp:
    method: str
    sizes: list[int] = field(default_factory=list)        # S that ran
    peaks: list[int] = field(default_factory=list)        # max_memory_allocated above inputs
    seconds: list[float] = field(default_factory=list)
    out_of_memory_at: int | None = None                   # first S that raised OutOfMemoryError
    stopped: str = ""                                     # why the growth stopped


# the lesson's GPU cell: seconds for all four methods together, measured on an H200 (a small card
# runs out of memory sooner and finishes sooner). tests/test_notebooks.py allows for it.
GPU_DEMO_BUDGET_S = 20.0


def blow_up_cuda(methods=("naive", "chunked", "global", "sdpa"), R: int = 300, H: int = 8,
                 c: int = 8, S_start: int = 256, factor: float = 2 ** 0.5, S_max: int = 1 << 21,
                 budget_s: float = GPU_DEMO_BUDGET_S, log=print) -> dict[str, BlowUp]:
    """Grow S by `factor` for each method until torch.cuda.OutOfMemoryError (caught).

    All methods together keep within about `budget_s` seconds: each gets an equal share of what
    is left (time one method leaves unused passes to the next), and stops growing when the next
    size would overrun its share. Compute grows at most like S², so the next step is expected to
    take (next S / S)² times the last one. (Quadratic compute outlasts any demo before linear memory
    runs out, so `chunked` and `sdpa` usually stop on time, not on memory.) Also stops at S_max.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("blow_up_cuda needs a CUDA GPU")
    device = torch.device("cuda")
    results = {}
    started = time.perf_counter()
    for position, method in enumerate(methods):
        share = (budget_s - (time.perf_counter() - started)) / (len(methods) - position)
        method_started = time.perf_counter()
        run = BlowUp(method)
        S = S_start
        while True:
            if S > S_max:
                run.stopped = f"reached S_max = {S_max}"
                break
            inputs = out = None
            try:
                inputs = make_inputs(method, R, H, S, c, device=device)
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
                before = torch.cuda.memory_allocated()
                start = time.perf_counter()
                with torch.no_grad():
                    out = METHODS[method](*inputs)
                torch.cuda.synchronize()
                seconds = time.perf_counter() - start
                peak = torch.cuda.max_memory_allocated() - before
            except torch.cuda.OutOfMemoryError:
                run.out_of_memory_at = S
                run.stopped = f"torch.cuda.OutOfMemoryError at S = {S}"
                break
            finally:
                del inputs, out
                torch.cuda.empty_cache()
            run.sizes.append(S)
            run.peaks.append(peak)
            run.seconds.append(seconds)
            log(f"{method:8s} S = {S:8d}: peak {peak / GB:8.3f} GB, {seconds:7.3f} s")
            used = time.perf_counter() - method_started
            next_S = int(round(S * factor))
            expected = seconds * (next_S / S) ** 2
            if used + expected > share:
                run.stopped = (f"time budget: S = {next_S} would take about {expected:.1f} s "
                               f"more ({used:.1f} s of {share:.1f} s used)")
                break
            S = next_S
        log(f"{method:8s} {run.stopped}")
        results[method] = run
    return results


def fit_slope(sizes, values) -> float:
    """Slope of log(values) against log(sizes), least squares: the exponent of a power law."""
    x = torch.tensor([math.log(s) for s in sizes], dtype=torch.float64)
    y = torch.tensor([math.log(v) for v in values], dtype=torch.float64)
    x_centred = x - x.mean()
    return float((x_centred * (y - y.mean())).sum() / (x_centred ** 2).sum())


def best_seconds(run: Callable[[], object], repeats: int = 3) -> float:
    """Shortest wall time of `repeats` calls of run() (the least disturbed by other work)."""
    return best_time(run, repeats, warmup=False)
