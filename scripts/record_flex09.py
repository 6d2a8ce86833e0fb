"""Record lesson 09's FlexAttention comparison on this machine's CPU, for the lesson to show.

    .venv/bin/python scripts/record_flex09.py            # compiled FlexAttention (minutes)
    .venv/bin/python scripts/record_flex09.py --eager    # the unfused reference only (values)

FlexAttention (torch.nn.attention.flex_attention) with the pair bias as a score_mod and causal
and sliding-window BlockMasks (course/lessons/lesson09/flex.py), against the solutions' tiles:
the tiled forward with the bias, `causal_tiled_attention` and `sliding_window_attention`. Writes
the largest differences, the best of 3 forward timings, the profiler's peak bytes, how long the
first (compiling) call took, and what a backward on the CPU raises, to
data/lesson09/flex_cpu.json. Then rebuild the lesson (`make notebooks NB=09`).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# compile from scratch, as a learner's first run does: the recorded first call is a cold compile
os.environ.setdefault("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "1")

from course.lessons.lesson09 import flex  # noqa: E402
from solutions.tiled import (causal_tiled_attention, sliding_window_attention,  # noqa: E402
                             tiled_attention_forward)

TILES = {
    "pair bias": lambda q, k, v, bias: tiled_attention_forward(q, k, v, bias, None, 64, 64)[0],
    "causal": lambda q, k, v, bias: causal_tiled_attention(q, k, v, flex.BLOCK),
    "sliding window": lambda q, k, v, bias: sliding_window_attention(q, k, v, flex.WINDOW,
                                                                     flex.BLOCK)[0],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eager", action="store_true", help="the unfused reference, no compile")
    parser.add_argument("--out", type=Path, default=flex.FLEX_FILE)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on a shared machine, more threads than "
                             "free cores make every small operation of the tiles wait)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    record = flex.run(TILES, compiled=not args.eager)
    record["load average"] = [round(x, 2) for x in os.getloadavg()]
    flex.save(record, args.out)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
