"""Lesson 09's production path on the CPU: FlexAttention (torch.nn.attention.flex_attention) with
the lesson's pair bias as a `score_mod` and its causal and sliding-window tile skipping as a
`BlockMask`, compared with tiled attention in values, time and memory.

FlexAttention computes softmax(score_mod(q kᵀ / sqrt(c)) masked by mask_mod) v: `score_mod(score,
b, h, q_idx, kv_idx)` changes one score from its indices (here: adds bias[h, q_idx, kv_idx]);
`mask_mod(b, h, q_idx, kv_idx)` says whether a key is seen, and `create_block_mask` turns it into
a BlockMask: which (query block, key block) tiles hold any seen key (the others are skipped) and
which of those need the mask applied inside (the partial ones), as the lesson's causal exercise
and sliding window do by hand.

With torch 2.13 on the CPU, flex_attention without torch.compile runs an unfused reference that
builds the whole score matrix (it warns so), and even that imports and runs TorchDynamo on its
first call (seconds); compiled, its CPU kernel is generated and built by Inductor (about a minute
and a half on the machine that recorded data/lesson09/flex_cpu.json); and it has no backward on
the CPU (NotImplementedError). So the lesson shows a recorded run (`scripts/record_flex09.py`)
and offers a switch to repeat it.

    cases(generator)          the three settings: inputs, a score_mod or a mask_mod, and the same
                              attention as the lesson's tiles compute it
    run(tiled, compiled=...)  max |flex - tiles| per setting; with timings and profiler peaks
    load(), save()            data/lesson09/flex_cpu.json
"""
from __future__ import annotations

import datetime
import json
import time
import warnings
from pathlib import Path
from typing import Callable

import torch

from course import ROOT
from course.i18n import N_
from course.measure import best_time
from course.memory import profile_bytes

FLEX_FILE = ROOT / "data" / "lesson09" / "flex_cpu.json"
FORMAT = 1
S, H, R, C = 8, 4, 256, 16  # row attention with pair bias: (S, H, R, c), bias (H, R, R)
L, WINDOW, BLOCK = 1024, 64, 128  # causal and sliding window: (1, H, L, c); FlexAttention's tiles


def pair_bias_score_mod(bias: torch.Tensor) -> Callable:
    """score_mod adding the pair bias (H, R, R) to the scaled score of head h, query i, key j."""
    def score_mod(score, b, h, q_idx, kv_idx):
        return score + bias[h, q_idx, kv_idx]
    return score_mod


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(window: int) -> Callable:
    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx <= window) & (kv_idx - q_idx <= window)
    return mask_mod


def cases(seed: int = 9) -> dict[str, dict]:
    """The three settings, float32: "pair bias" (row attention (S, H, R, c), bias (H, R, R), no
    mask), "causal" and "sliding window" ((1, H, L, c), a BlockMask each)."""
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randn(S, H, R, C, generator=generator) for _ in range(3)]
    bias = torch.randn(H, R, R, generator=generator)
    seq = [torch.randn(1, H, L, C, generator=generator) for _ in range(3)]
    return {
        N_("pair bias"): {"qkv": rows, "bias": bias, "score_mod": pair_bias_score_mod(bias),
                      "mask_mod": None},
        N_("causal"): {"qkv": seq, "bias": None, "score_mod": None, "mask_mod": causal},
        N_("sliding window"): {"qkv": seq, "bias": None, "score_mod": None,
                           "mask_mod": sliding_window(WINDOW)},
    }


def _flex_call(setting: dict, flex: Callable) -> Callable:
    from torch.nn.attention.flex_attention import create_block_mask

    q, k, v = setting["qkv"]
    block_mask = None
    if setting["mask_mod"] is not None:
        block_mask = create_block_mask(setting["mask_mod"], None, None, q.shape[-2], k.shape[-2],
                                       device="cpu", BLOCK_SIZE=BLOCK)
    return lambda: flex(q, k, v, score_mod=setting["score_mod"], block_mask=block_mask)


def run(tiles: dict[str, Callable], compiled: bool = True, timings: bool = True,
        repeats: int = 3, log=print) -> dict:
    """Each setting through FlexAttention (compiled, or the unfused eager reference) and through
    the lesson's tiles, `tiles[name](q, k, v, bias)` (the tiled forward with the pair bias, the
    causal exercise, the sliding window): max |flex - tiles|, and with timings the best of
    `repeats` calls and the profiler's peak bytes above the inputs of each, under no_grad."""
    from torch.nn.attention.flex_attention import flex_attention

    flex = torch.compile(flex_attention) if compiled else flex_attention
    record = {"format": FORMAT, "torch": torch.__version__, "compiled": compiled,
              "threads": torch.get_num_threads(),
              "recorded": datetime.date.today().isoformat(), "block": BLOCK, "settings": {}}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the eager path warns that it is unfused
        for name, setting in cases().items():
            call = _flex_call(setting, flex)
            started = time.perf_counter()
            out = call()  # compiled: the first call builds the kernel
            first = time.perf_counter() - started
            q, k, v = setting["qkv"]
            mine = lambda: tiles[name](q, k, v, setting["bias"])  # noqa: E731
            entry = {"shape": list(q.shape), "max |flex - tiles|": float((out - mine()).abs().max()),
                     "max |flex|": float(out.abs().max()), "first call s": first}
            if compiled:  # the unfused reference too: the same formula, unfused
                eager = _flex_call(setting, flex_attention)()
                entry["max |eager flex - tiles|"] = float((eager - mine()).abs().max())
            if timings:
                entry.update({"flex s": best_time(call, repeats=repeats),
                              "tiles s": best_time(mine, repeats=repeats),
                              "flex peak bytes": profile_bytes(call).peak,
                              "tiles peak bytes": profile_bytes(mine).peak})
            record["settings"][name] = entry
            log(f"{name}: {entry}")
    record["backward on the CPU"] = _backward_on_cpu(flex_attention)
    return record


def _backward_on_cpu(flex_attention: Callable) -> str:
    q, k, v = (torch.randn(1, 1, 16, 4, requires_grad=True) for _ in range(3))
    try:
        flex_attention(q, k, v).sum().backward()
    except (NotImplementedError, RuntimeError) as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return "supported"


def load(path: Path = FLEX_FILE) -> dict:
    return json.loads(Path(path).read_text())


def save(record: dict, path: Path = FLEX_FILE) -> None:
    Path(path).write_text(json.dumps(record, indent=1) + "\n")


def table(record: dict) -> list[str]:
    """The comparison as lines: per setting, max |flex - tiles|, the best times and the peaks."""
    from course.i18n import _

    mode = _("compiled") if record["compiled"] else _("eager (unfused)")
    lines = [_("FlexAttention ({mode}, torch {torch}, {threads} thread(s), recorded {date}, tiles "
               "of {block}) against the tiles, float32, forward:").format(
                   mode=mode, torch=record["torch"], threads=record.get("threads", "?"),
                   date=record["recorded"], block=record["block"]),
             f"{_('setting'):15} {_('shape'):>17} {_('max |flex - tiles|'):>19} {_('of max |out|'):>13} "
             f"{_('flex ms'):>9} {_('tiles ms'):>9} {_('flex peak MB'):>13} {_('tiles peak MB'):>14}"]
    for name, entry in record["settings"].items():
        timed = "flex s" in entry
        lines.append(
            f"{_(name):15} {str(tuple(entry['shape'])):>17} {entry['max |flex - tiles|']:>19.1e} "
            f"{entry['max |flex - tiles|'] / entry['max |flex|']:>13.1e} "
            + (f"{entry['flex s'] * 1e3:>9.1f} {entry['tiles s'] * 1e3:>9.1f} "
               f"{entry['flex peak bytes'] / 1e6:>13.2f} {entry['tiles peak bytes'] / 1e6:>14.2f}"
               if timed else ""))
    eager = [entry["max |eager flex - tiles|"] for entry in record["settings"].values()
             if "max |eager flex - tiles|" in entry]
    if eager:
        lines.append(_("unfused (eager) FlexAttention against the tiles: at most {gap:.1e}").format(
            gap=max(eager)))
    first = max(entry["first call s"] for entry in record["settings"].values())
    lines.append(_("the first call of each setting (compiling) took up to {seconds:.0f} s; a "
                   "backward on the CPU: {backward}").format(seconds=first,
                                                              backward=record["backward on the CPU"]))
    return lines
