"""Train lesson 08's tiny LMs (every variant and seed) and write checkpoints and metrics to data/.

    .venv/bin/python scripts/train_lesson08.py                    # everything, 2 threads
    .venv/bin/python scripts/train_lesson08.py --datasets bb --threads 1    # two at once: 1 thread each
    .venv/bin/python scripts/train_lesson08.py --remeasure        # recompute metrics from checkpoints

Writes data/lesson08/checkpoints_<dataset>.pt (float16 state dicts) and metrics_<dataset>.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course import lm_training as lm  # noqa: E402


def remeasure(datasets, folder):
    import torch
    for name in datasets:
        dataset = lm.load_dataset(name)
        stored = torch.load(lm.checkpoint_path(name, folder), weights_only=True)
        old = json.loads(lm.metrics_path(name, folder).read_text())
        for key, entry in stored.items():
            fresh = lm.measure(lm.load_model(entry["config"], entry["state"]), dataset)
            for kept in ("train_seconds", "steps"):
                fresh[kept] = old["runs"][key][kept]
            old["runs"][key] = fresh
        lm.metrics_path(name, folder).write_text(json.dumps(old, indent=1) + "\n")
        print(f"remeasured {len(stored)} runs of {name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(lm.DATASETS), choices=lm.DATASETS)
    parser.add_argument("--variants", nargs="+", default=list(lm.VARIANTS), choices=lm.VARIANTS)
    parser.add_argument("--seeds", nargs="+", type=int, default=list(lm.SEEDS))
    parser.add_argument("--steps", type=int, default=lm.RECIPE["steps"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=lm.DATA)
    parser.add_argument("--remeasure", action="store_true")
    args = parser.parse_args(argv)
    if args.remeasure:
        remeasure(args.datasets, args.out)
        return 0
    start = time.perf_counter()
    lm.train_all(args.datasets, args.variants, args.seeds, steps=args.steps,
                 threads=args.threads, folder=args.out)
    print(f"trained {args.datasets} in {time.perf_counter() - start:.0f} s "
          f"with {args.threads} thread(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
