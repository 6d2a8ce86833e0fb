"""Train lesson 08's tiny LMs (every architecture, variant and seed) and write checkpoints and metrics to data/.

    .venv/bin/python scripts/train_lesson08.py                    # both architectures, 2 threads
    .venv/bin/python scripts/train_lesson08.py --archs paper --datasets bb --threads 1   # a part
    .venv/bin/python scripts/train_lesson08.py --setup sink --datasets bb --threads 1    # the strong sink
    .venv/bin/python scripts/train_lesson08.py --ablations "gpt2 + RoPE" --datasets bb --variants none --seeds 0
    .venv/bin/python scripts/train_lesson08.py --remeasure        # recompute metrics from checkpoints
    .venv/bin/python scripts/train_lesson08.py --sink "trigger token,normal init" - --seeds 0 --threads 1
                                   # the sink search: each argument a comma-separated set of
                                   # lm.SINK_FACTORS ("-": the course's set-up), baselines unless --variants
    nice -n 19 .venv/bin/python scripts/train_lesson08.py --experiment --threads 1   # the many-seed
                                   # experiment (course/lesson08_experiment.py); start it twice to
                                   # train two runs side by side; it resumes where it stopped
    .venv/bin/python scripts/train_lesson08.py --experiment --device cuda   # on a GPU (the CPU
                                   # where torch finds none); start several: each takes the next run
    .venv/bin/python scripts/train_lesson08.py --experiment --collect   # ship its finished runs

Writes data/lesson08/checkpoints_<arch>_<dataset>.pt (float16 state dicts),
metrics_<arch>_<dataset>.json, with --ablations metrics_ablations.json, with --sink
metrics_sink_search.json (metrics only), with --experiment build/lesson08_experiment/ (one file
per run; --collect merges them into metrics_experiment.json and checkpoints_experiment.pt).
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


def remeasure(archs, datasets, folder, setup="course", only_missing=False):
    """Recompute the metrics of every run that has a checkpoint (the others keep theirs); with
    only_missing, add only the measurements a run lacks (the stored ones stay to the last bit)."""
    import torch
    for arch in archs:
        for name in datasets:
            dataset = lm.load_dataset(name, **lm.sink_spec(lm.SETUPS[setup], arch)["data"])
            stored = torch.load(lm.checkpoint_path(arch, name, folder, setup), weights_only=True)
            old = json.loads(lm.metrics_path(arch, name, folder, setup).read_text())
            for key, entry in stored.items():
                fresh = lm.measure(lm.load_model(entry["config"], entry["state"]), dataset)
                for kept in ("train_seconds", "steps"):
                    fresh[kept] = old["runs"][key][kept]
                old["runs"][key] = {**fresh, **old["runs"][key]} if only_missing else fresh
            lm.metrics_path(arch, name, folder, setup).write_text(json.dumps(old, indent=1) + "\n")
            print(f"remeasured {len(stored)} runs of {arch}/{name}")


def experiment(args) -> int:
    """Train (or with --collect, ship) the runs of course/lesson08_experiment.py."""
    from course import lesson08_experiment as ex
    if args.collect:
        print(f"shipped {ex.collect()} runs of the experiment to {ex.METRICS.relative_to(ROOT)}")
        return 0
    start = time.perf_counter()
    trained = ex.work(threads=args.threads, device=args.device)
    print(f"trained {trained} runs of the experiment in {time.perf_counter() - start:.0f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", nargs="+", default=list(lm.ARCHS), choices=lm.ARCHS)
    parser.add_argument("--datasets", nargs="+", default=list(lm.DATASETS), choices=lm.DATASETS)
    parser.add_argument("--variants", nargs="+", default=None, choices=lm.VARIANTS,
                        help="default: all four (with --sink: the baseline only)")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(lm.SEEDS))
    parser.add_argument("--steps", type=int, default=lm.STEPS)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=lm.DATA)
    parser.add_argument("--setup", default="course", choices=list(lm.SETUPS),
                        help="the course's model and data, or the set-up with a strong sink")
    parser.add_argument("--remeasure", action="store_true")
    parser.add_argument("--only-missing", action="store_true",
                        help="with --remeasure: add the measurements a run lacks, keep the rest")
    parser.add_argument("--ablations", nargs="*", choices=list(lm.ABLATIONS), default=None,
                        help="train the one-seed ablations (all when none named) instead")
    parser.add_argument("--sink", nargs="+", default=None, metavar="FACTORS",
                        help="sink-search runs: comma-separated factor sets, '-' for none")
    parser.add_argument("--sink-arch", default="paper", choices=lm.ARCHS)
    parser.add_argument("--experiment", action="store_true",
                        help="the many-seed experiment, every arm and set-up (resumes)")
    parser.add_argument("--collect", action="store_true",
                        help="with --experiment: merge the finished runs into data/")
    parser.add_argument("--device", default=None,
                        help="with --experiment: where to train, e.g. cuda (the CPU where torch "
                             "finds no GPU)")
    args = parser.parse_args(argv)
    if args.device and not args.experiment:
        parser.error("--device trains the experiment's runs (--experiment); the other sets train on the CPU")
    if args.experiment:
        return experiment(args)
    if args.variants is None:
        args.variants = ["none"] if args.sink is not None else list(lm.VARIANTS)
    if args.sink is not None:
        start = time.perf_counter()
        for item in args.sink:
            factors = [] if item == "-" else [f.strip() for f in item.split(",")]
            unknown = set(factors) - set(lm.SINK_FACTORS)
            if unknown:
                parser.error(f"unknown factors {sorted(unknown)}; known: {list(lm.SINK_FACTORS)}")
            lm.train_sink_search(factors, gates=args.variants, seeds=args.seeds, arch=args.sink_arch,
                                 threads=args.threads, folder=args.out)
        print(f"trained the sink-search runs in {time.perf_counter() - start:.0f} s")
        return 0
    if args.remeasure:
        remeasure(args.archs, args.datasets, args.out, args.setup, args.only_missing)
        return 0
    start = time.perf_counter()
    if args.ablations is not None:
        for dataset in args.datasets:  # --variants, --datasets, --seeds choose the runs
            for seed in args.seeds:
                lm.train_ablations(args.ablations or tuple(lm.ABLATIONS), gates=args.variants,
                                   seed=seed, dataset=dataset, threads=args.threads,
                                   folder=args.out)
        print(f"trained the ablations in {time.perf_counter() - start:.0f} s")
        return 0
    lm.train_all(args.archs, args.datasets, args.variants, args.seeds, steps=args.steps,
                 threads=args.threads, folder=args.out, setup=args.setup)
    print(f"trained {args.archs} x {args.datasets} in {time.perf_counter() - start:.0f} s "
          f"with {args.threads} thread(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
