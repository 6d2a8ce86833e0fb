"""Record lesson 09's GPU run on this machine's card, for learners without a GPU.

    .venv/bin/python scripts/record_gpu_run09.py --source "who ran it, on what machine"

Runs the lesson's GPU cell (course.lessons.lesson09.gpu.measure with the solutions' tiled
attention): naive, tiled and SDPA attention on (B, H, L, c) = (1, 8, L, 64), in float32 (SDPA on
its memory-efficient kernel, named with sdpa_kernel: CUDA's FlashAttention kernel takes no
float32) and in bfloat16 (SDPA on its FlashAttention kernel), L doubled from 1,024 until out of
memory or the time budget, in inference and in training. Prints the table and appends the record,
with the kernel each dtype ran on, to data/lesson09/gpu_runs.json. Then rebuild the lesson
(`make notebooks NB=09`), add a line on the card to data/README.md, and commit the three.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere

from course.lessons.lesson09 import gpu as tiled_gpu  # noqa: E402
from solutions.tiled import tiled_attention  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True,
                        help="provenance, kept with the record: who ran it, where, why")
    parser.add_argument("--budget", type=float, default=tiled_gpu.BUDGET_S,
                        help="seconds for all methods and modes (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=tiled_gpu.RUNS_FILE)
    parser.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("No CUDA GPU here: nothing to record.", file=sys.stderr)
        return 1
    record = tiled_gpu.measure(tiled_attention, budget_s=args.budget, source=args.source)
    tiled_gpu.print_table(record)
    if not args.dry_run:
        tiled_gpu.append(record, args.out)
        print(f"appended to {args.out}; now `make notebooks NB=09` and a line in data/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
