"""Record lesson 05's GPU blow-up on this machine's card, for learners without a GPU.

    .venv/bin/python scripts/record_gpu_run.py --source "what ran, on what machine"

Runs the lesson's own GPU cell (course.gpu_runs.measure: R = 300, H = 8, c = 8, float32, S grown
by √2 until out of memory or the time budget), prints measured / predicted per size, and appends
the record to data/lesson05/gpu_runs.json. Then rebuild the lesson (`make notebooks NB=05`), add
a line on the card to data/README.md, and commit the three.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere

from course import gpu_runs  # noqa: E402
from course.memory import GPU_DEMO_BUDGET_S  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True,
                        help="provenance kept with the record: what ran, on what machine (the date, card "
                             "and software are recorded with it)")
    parser.add_argument("--budget", type=float, default=GPU_DEMO_BUDGET_S,
                        help="seconds for all four methods (default: the lesson's, %(default)s)")
    parser.add_argument("--out", type=Path, default=gpu_runs.RUNS_FILE)
    parser.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("No CUDA GPU here: nothing to record.", file=sys.stderr)
        return 1
    record = gpu_runs.measure(budget_s=args.budget, source=args.source)
    gpu_runs.print_table(record)
    if not args.dry_run:
        gpu_runs.append(record, args.out)
        print(f"appended to {args.out}; now `make notebooks NB=05` and a line in data/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
