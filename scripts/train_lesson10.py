"""Train lesson 10's recall experiment (course/lessons/lesson10_recall.py) and ship its results.

    nice -n 19 .venv/bin/python scripts/train_lesson10.py --threads 1   # every run; resumes
    .venv/bin/python scripts/train_lesson10.py --collect                # build/ -> data/lesson10/

Each run (a kind of attention and a seed) trains for the same number of steps on the same
batches, one thread, and checkpoints every 250 steps into build/lesson10_recall/, so a stopped
job resumes where it stopped. --collect merges the finished runs into data/lesson10/recall.json
and the seed-0 weights (float16) into data/lesson10/recall_weights.pt.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from course.lessons import lesson10_recall as recall  # noqa: E402


def collect(folder: Path = recall.BUILD, out: Path = recall.RESULTS) -> int:
    """Merge the finished runs into `out`, and the seed-0 weights (float32) into recall.WEIGHTS:
    the lesson rebuilds those models and measures them again when it loads the results."""
    import torch

    runs, weights = {}, {}
    for path in sorted(folder.glob("*.json")):
        result = json.loads(path.read_text())
        runs[path.stem] = result
        if result["config"]["seed"] == 0:
            state = torch.load(folder / f"{path.stem}.weights.pt", weights_only=True)
            weights[path.stem] = {k: v.half() for k, v in state.items()}  # float16: half the bytes
    # what the lesson measures again on load: the shipped (float16) seed-0 weights at N = 48 on the
    # first 128 validation sequences
    recheck = {"pairs": 48, "sequences": 128,
               "accuracy": {name: recall.evaluate(recall.load_model(runs[name]["config"], state),
                                                  48, sequences=128)
                            for name, state in weights.items()}}
    shipped = {"task": {"keys": recall.KEYS, "values": recall.VALUES,
                        "pairs_train": list(recall.PAIRS_TRAIN),
                        "pairs_eval": list(recall.PAIRS_EVAL), "window": recall.WINDOW,
                        "validation_sequences": 512},
               "recheck": recheck, "runs": runs}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(shipped, indent=1) + "\n")
    torch.save(weights, recall.WEIGHTS)
    return len(runs)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixers", nargs="+", default=list(recall.MIXERS), choices=recall.MIXERS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--steps", type=int, default=recall.Config.steps)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--folder", type=Path, default=recall.BUILD)
    parser.add_argument("--collect", action="store_true")
    args = parser.parse_args(argv)
    if args.collect:
        print(f"shipped {collect(args.folder)} runs to {recall.RESULTS.relative_to(ROOT)}")
        return 0
    start = time.perf_counter()
    for seed in args.seeds:  # every kind once before the next seed: a partial job is balanced
        for mixer in args.mixers:
            config = recall.Config(mixer=mixer, seed=seed, steps=args.steps)
            result = recall.train(config, folder=args.folder, threads=args.threads)
            print(f"{recall.run_name(config)}: accuracy {result['accuracy']}, "
                  f"{result['cpu_seconds']:.0f} CPU-s", flush=True)
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
