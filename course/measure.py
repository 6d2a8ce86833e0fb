"""What a lesson measures about a module or a call: its parameter count and its best time.

    from course.measure import best_time, n_parameters
    n_parameters(MultiHeadAttention(256, 32, 8))     # 262,400: every weight and bias
    best_time(lambda: module(x), repeats=5)           # seconds of the least disturbed call

Lessons 03, 05 and 06 count parameters of real modules; lesson 03 times two attention paths
(lesson 05 and lesson 07's demos time through `course.memory.best_seconds`, which calls this).
"""
from __future__ import annotations

import math
import time
from typing import Callable

from torch import nn


def n_parameters(module: nn.Module) -> int:
    """The number of numbers a module learns: sum of p.numel() over module.parameters().

    Shared tensors count once (module.parameters() yields each one once).
    """
    return sum(p.numel() for p in module.parameters())


def best_time(run: Callable[[], object], repeats: int = 5, warmup: bool = True) -> float:
    """Shortest wall time in seconds of `repeats` calls of run().

    The minimum, not the mean: other programs on the machine only ever add time, so the fastest
    call is the one closest to the code's own cost. warmup: one untimed call first, since the
    first call may allocate memory or pick a kernel.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, not {repeats}")
    if warmup:
        run()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best
