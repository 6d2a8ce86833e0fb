"""Lesson 09's figures: peak memory against L (naive grows as L², tiled linearly) and the lesson's
run time on this machine.

    .venv/bin/python scripts/bench_lesson09.py              # memory, speed, then the notebook
    .venv/bin/python scripts/bench_lesson09.py --no-notebook --time-lengths   # memory only
    .venv/bin/python scripts/bench_lesson09.py --lengths 256 512 1024 2048
    .venv/bin/python scripts/bench_lesson09.py --record-sweep   # the cache sweep the lesson ships

Memory: q, k, v of shape (R, H, L, c) = (8, 4, L, 16), float32, on the CPU, measured by the
profiler's allocation events (course/lessons/lesson09/memory.py) in inference (forward under no_grad) and
in training (forward and backward), for naive attention and the solutions' tiled attention (tiles
of 128). It prints each peak, the bytes kept for the backward pass, and the factor by which each
grows when L doubles (naive: about 4; tiled: at most 2, its tiles have a fixed size). Speed: the
best of 3 timings (after an untimed call) of naive, tiled and SDPA at the lesson's shapes, forward
and training step (the notebook times each once). Time: the lesson notebook run once, cell by
cell, as scripts/bench_notebooks.py runs it (goal under 15 s on 2 CPU cores, 30 s at most), and
the CPU seconds that run used (user + system, every process it started): on a busy machine the
wall time grows with the load, the CPU seconds much less, and an idle machine's wall time is
about the CPU seconds or less (the lesson is CPU-bound; two threads share some of it). A
benchmark, not a test: it prints the load average beside its figures, and nothing fails because
a machine is slow. Cache sweep (--record-sweep): naive attention against the solutions' tiles of
16 to 512 for L = 256 to 2048 on (2, 4, L, 64) float32, the best of --repeats forward timings each
(course/lessons/lesson09/speed.py), written to data/lesson09/cache_sweep.json with the machine it
ran on: the table the lesson shows when its own sweep would not fit the lesson's time.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def memory_table(lengths: list[int]) -> None:
    import torch

    from course.memory import naive_column_attention
    from course.lessons.lesson09.memory import measure_call
    from solutions.tiled import tiled_attention

    torch.set_num_threads(min(2, torch.get_num_threads()))
    methods = {"naive": naive_column_attention,
               "tiled": lambda q, k, v: tiled_attention(q, k, v, None, None, 128, 128)}
    print(f"{'method':6} {'mode':9} {'L':>6} {'peak MB':>10} {'kept MB':>9} {'peak x':>7} {'kept x':>7}")
    for name, fn in methods.items():
        for train in (False, True):
            previous = None
            for L in lengths:
                measured = measure_call(fn, [(8, 4, L, 16)] * 3, train=train)
                growth = ("" if previous is None else
                          f"{measured.peak / previous.peak:7.2f} {measured.held_after / previous.held_after:7.2f}")
                print(f"{name:6} {'training' if train else 'inference':9} {L:>6} "
                      f"{measured.peak / 1e6:>10.2f} {measured.held_after / 1e6:>9.2f} {growth}")
                previous = measured


def time_table(lengths: list[int], repeats: int = 3) -> None:
    import torch

    from course.measure import best_time
    from course.memory import naive_column_attention
    from course.lessons.lesson09.memory import make_tensors
    from solutions.tiled import tiled_attention

    torch.set_num_threads(min(2, torch.get_num_threads()))
    methods = {"naive": naive_column_attention,
               "tiled": lambda q, k, v: tiled_attention(q, k, v, None, None, 128, 128),
               "sdpa": torch.nn.functional.scaled_dot_product_attention}
    print(f"\nbest of {repeats} (ms), (8, 4, L, 16) float32")
    print(f"{'method':6} {'L':>6} {'forward':>9} {'training':>9}")
    for L in lengths:
        inputs = make_tensors([(8, 4, L, 16)] * 3)
        leaves = make_tensors([(8, 4, L, 16)] * 3, requires_grad=True)
        for name, fn in methods.items():
            with torch.no_grad():
                forward = best_time(lambda: fn(*inputs), repeats=repeats)
            training = best_time(lambda: fn(*leaves).sum().backward(), repeats=repeats)
            print(f"{name:6} {L:>6} {forward * 1e3:>9.1f} {training * 1e3:>9.1f}")


def notebook_time() -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_notebooks.py"), "09",
                    "--cells", "6"], check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"the whole run (a scratch copy of the course, kernel start, every cell): "
          f"{time.perf_counter() - start:.1f} s wall, {cpu:.1f} CPU seconds")


def record_sweep(repeats: int) -> None:
    from course.lessons.lesson09 import speed
    from course.memory import naive_column_attention
    from solutions.tiled import tiled_attention_forward

    record = speed.sweep(naive_column_attention,
                         lambda q, k, v, b: tiled_attention_forward(q, k, v, block_q=b, block_k=b),
                         repeats=repeats)
    speed.save(record)
    print(f"written to {speed.SWEEP_FILE}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[256, 512, 1024, 2048])
    parser.add_argument("--time-lengths", type=int, nargs="*", default=[256, 512],
                        help="L for the speed table (none: no speed table)")
    parser.add_argument("--no-notebook", action="store_true", help="no notebook run")
    parser.add_argument("--record-sweep", action="store_true",
                        help="only the cache sweep, written to data/lesson09/cache_sweep.json")
    parser.add_argument("--repeats", type=int, default=5, help="timings per point of the sweep")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads for the sweep (default 1: on a shared machine, more "
                             "threads than free cores make every small operation wait)")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.record_sweep:
        import torch

        torch.set_num_threads(args.threads)
        record_sweep(args.repeats)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    memory_table(args.lengths)
    if args.time_lengths:
        time_table(args.time_lengths)
    if not args.no_notebook:
        notebook_time()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
