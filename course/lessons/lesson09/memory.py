"""Lesson 09's memory measurements: any attention call, in inference or in training.

Lesson 05 (course/memory.py) measures four fixed column-attention cores in inference. Here the
call is any function of tensors (the learner's tiled attention among them), and training counts
too: the forward pass, what it leaves for the backward pass, and the backward pass itself.

    predict_call(fn, shapes, train)   run on the `meta` device (shapes only, no data) and add up
                                      the bytes of the tensors alive at each moment
                                      (course.memory.LiveBytes): the predicted peak
    measure_call(fn, shapes, train)   run on the CPU under torch.profiler(profile_memory=True)
                                      and replay its allocation events: the measured peak
    fit_need, fit_line, solve_need    a need that is a polynomial in the size (quadratic for
                                      naive attention, from three predictions; linear for
                                      tiles, from two), and the largest size that fits a card

Both return a `Measured`: `peak`, the highest bytes above the inputs (output included), and
`held_after`, the bytes still allocated when the forward pass returns: the output, plus in
training everything autograd saved for the backward pass. With train=True the peak covers the
forward and the backward pass (the incoming gradient and the inputs' gradients included).
GB means 10⁹ bytes.
"""
from __future__ import annotations

import contextlib
import math
from typing import Callable, Sequence

import torch

from course.memory import LiveBytes, Measured, profile_bytes

Shapes = Sequence[Sequence[int]]


def make_tensors(shapes: Shapes, device="cpu", dtype=torch.float32, requires_grad: bool = False,
                 seed: int = 0) -> list[torch.Tensor]:
    """One standard-normal tensor per shape (empty on `meta`), from a seeded generator."""
    if torch.device(device).type == "meta":
        tensors = [torch.empty(tuple(s), device="meta", dtype=dtype) for s in shapes]
    else:
        generator = torch.Generator(device=device).manual_seed(seed)
        tensors = [torch.randn(tuple(s), device=device, dtype=dtype, generator=generator)
                   for s in shapes]
    return [t.requires_grad_(requires_grad) for t in tensors]


@contextlib.contextmanager
def _keep_saved_tensors_visible():
    """Autograd keeps the tensors it saves for backward in C++, where LiveBytes's finalizers
    cannot see them; packing each one as itself keeps a Python reference alive until the
    backward pass releases it, so it counts exactly as long as it lives."""
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        yield


def predict_call(fn: Callable, shapes: Shapes, dtype=torch.float32, train: bool = False) -> Measured:
    """Peak bytes of fn(*inputs) above its inputs, and bytes held when it returns (meta device).

    train=True: the inputs require grad; the peak then covers forward and backward (the incoming
    gradient of the output exists beforehand and is not counted; the inputs' gradients are), and
    held_after is what the forward leaves alive.
    """
    inputs = make_tensors(shapes, device="meta", dtype=dtype, requires_grad=train)
    grad = torch.empty(forward_shape(fn, inputs), device="meta", dtype=dtype)  # not counted
    mode = torch.enable_grad() if train else torch.no_grad()
    with mode, _keep_saved_tensors_visible(), LiveBytes(existing=inputs + [grad]) as live:
        out = fn(*inputs)
        held = live.current
        if train:
            out.backward(grad)
        del out
    return Measured(peak=live.peak, held_after=held)


def measure_call(fn: Callable, shapes: Shapes, dtype=torch.float32, train: bool = False,
                 seed: int = 0) -> Measured:
    """The same as `predict_call`, measured: CPU allocation events of the profiler.

    In training the call runs twice: once profiled up to the end of the forward pass (what it
    holds), once through the backward pass (the peak).
    """
    inputs = make_tensors(shapes, dtype=dtype, requires_grad=train, seed=seed)
    if not train:
        with torch.no_grad():
            return profile_bytes(lambda: fn(*inputs))
    forward = profile_bytes(lambda: fn(*inputs))
    grad = torch.ones(forward_shape(fn, inputs), dtype=dtype)

    def forward_and_backward():
        fn(*inputs).backward(grad)
        return None

    both = profile_bytes(forward_and_backward)
    for t in inputs:
        t.grad = None
    return Measured(peak=both.peak, held_after=forward.held_after, events=both.events)


def forward_shape(fn: Callable, inputs: list[torch.Tensor]) -> tuple[int, ...]:
    """The output's shape, found on `meta` (no memory, no time)."""
    meta = [torch.empty(t.shape, device="meta", dtype=t.dtype) for t in inputs]
    with torch.no_grad():
        return tuple(fn(*meta).shape)


def fit_need(need: Callable[[int], float], sizes=(256, 512, 1024)) -> tuple[float, float, float]:
    """(a, b, d) with need(n) = a n² + b n + d through three sizes (divided differences).

    Exact when every tensor of the call holds n or n² numbers times constants (naive attention:
    a > 0; tiled attention with fixed blocks, at multiples of the block: a = 0).
    """
    n0, n1, n2 = sizes
    y0, y1, y2 = (need(n) for n in sizes)
    slope_1, slope_2 = (y1 - y0) / (n1 - n0), (y2 - y1) / (n2 - n1)
    a = (slope_2 - slope_1) / (n2 - n0)
    b = slope_1 - a * (n0 + n1)
    return a, b, y0 - a * n0 ** 2 - b * n0


def fit_line(need: Callable[[int], float], sizes=(384, 512)) -> tuple[float, float, float]:
    """(0, b, d) with need(n) = b n + d through two sizes: for a need that is linear from some
    size on (tiled attention, once a row spans three blocks), from two sizes past that point."""
    (n0, n1), (y0, y1) = sizes, [need(n) for n in sizes]
    slope = (y1 - y0) / (n1 - n0)
    return 0.0, slope, y0 - slope * n0


def solve_need(coefficients: tuple[float, float, float], capacity: float) -> int:
    """The largest n with a n² + b n + d <= capacity (a >= 0, b > 0)."""
    a, b, d = coefficients
    if abs(a) < 1e-9 * max(abs(b), 1.0):  # linear: the quadratic term is rounding noise
        return int((capacity - d) / b)
    return int((-b + math.sqrt(b * b - 4 * a * (d - capacity))) / (2 * a))


def score_matrix_bytes(batch: int, L_q: int, L_k: int, bytes_per_number: int = 4) -> int:
    """One (batch, L_q, L_k) score tensor: what tiled attention never holds."""
    return batch * L_q * L_k * bytes_per_number
