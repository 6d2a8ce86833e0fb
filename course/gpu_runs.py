"""Lesson 05's GPU blow-up kept as data: runs on real cards, shown beside the prediction from shapes.

A record is one JSON object: the card (name, total memory), the software (torch, CUDA), the
shapes (R, H, c, float32), how S grew (S_start, factor) and what stopped it on time (`budget_s`, the
seconds all methods share, or, in a run made before that budget, `step_limit_s`, the longest one
size might take), what was run and where (`source`; the date is `recorded`), and per method the fields of `course.memory.BlowUp` (the sizes that ran, the peak
bytes above the inputs at each, seconds, the size that ran out of memory, why it stopped).

    measure(...)      runs `blow_up_cuda` on this machine's card and returns its record
    load(), append()  the recorded runs in data/lesson05/gpu_runs.json
                      (`python scripts/record_gpu_run.py --source "..."` adds one)
    show(record)      prints measured / predicted per size and draws both on one figure

The lesson shows a live run and a recorded one with the same `show`, so a learner without a GPU
sees what a real card did. Predictions run on the `meta` device (course/memory.py): no memory,
any S.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import re
from pathlib import Path

import torch

from course import ROOT
from course.i18n import _
from course.memory import (GB, GPU_DEMO_BUDGET_S, BlowUp, blow_up_cuda, input_bytes, need_quadratic,
                           predict_peak_bytes)

RUNS_FILE = ROOT / "data" / "lesson05" / "gpu_runs.json"
FORMAT = 1
COLOURS = {"naive": "tab:red", "chunked": "tab:orange", "global": "tab:blue", "sdpa": "tab:green"}


def from_runs(runs: dict[str, BlowUp], *, R: int, H: int, c: int, S_start: int, factor: float,
              budget_s: float | None, source: str, device: str, total_memory: int,
              torch_version: str, cuda_version: str | None, recorded: str | None = None) -> dict:
    """The record of a `blow_up_cuda` result (plain JSON types only)."""
    return {
        "format": FORMAT, "device": device, "total_memory": int(total_memory),
        "torch": torch_version, "cuda": cuda_version,
        "recorded": recorded or datetime.date.today().isoformat(), "source": source,
        "R": R, "H": H, "c": c, "dtype": "float32", "S_start": S_start, "factor": factor,
        "budget_s": budget_s,
        "methods": {method: dataclasses.asdict(run) for method, run in runs.items()},
    }


def measure(R: int = 300, H: int = 8, c: int = 8, S_start: int = 256, factor: float = 2 ** 0.5,
            budget_s: float = GPU_DEMO_BUDGET_S, source: str = "", log=print) -> dict:
    """Blow up this machine's first CUDA card (see `blow_up_cuda`) and return the record."""
    runs = blow_up_cuda(R=R, H=H, c=c, S_start=S_start, factor=factor, budget_s=budget_s, log=log)
    card = torch.cuda.get_device_properties(0)
    return from_runs(runs, R=R, H=H, c=c, S_start=S_start, factor=factor, budget_s=budget_s,
                     source=source, device=card.name, total_memory=card.total_memory,
                     torch_version=torch.__version__, cuda_version=torch.version.cuda)


def runs_of(record: dict) -> dict[str, BlowUp]:
    return {method: BlowUp(**fields) for method, fields in record["methods"].items()}


def load(path: Path = RUNS_FILE, expected: int = FORMAT) -> list[dict]:
    """The runs recorded in a file of recorded GPU runs (lesson 05's, or another lesson's)."""
    data = json.loads(Path(path).read_text())
    if data.get("format") != expected:
        raise ValueError(f"{path}: format {data.get('format')!r}, expected {expected}")
    return data["runs"]


def append(record: dict, path: Path = RUNS_FILE, expected: int = FORMAT) -> None:
    """Add a record to the file (created if missing); earlier records stay as they are."""
    path = Path(path)
    runs = load(path, expected) if path.exists() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"format": expected, "runs": runs + [record]}, indent=1)
    # one line per list of numbers, so a run of 25 sizes stays readable
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)
    path.write_text(text + "\n")


def header(record: dict) -> str:
    cuda = f", CUDA {record['cuda']}" if record.get("cuda") else ""
    return (f"{record['device']}, {record['total_memory'] / 2**20:,.0f} MiB "
            f"({record['total_memory'] / GB:.1f} GB); torch {record['torch']}{cuda}; "
            f"R = {record['R']}, H = {record['H']}, c = {record['c']}, {record['dtype']}")


def rows(record: dict) -> list[dict]:
    """Per method and size: measured and predicted peak (bytes above the inputs) and their ratio;
    for the size that ran out of memory, the predicted need (inputs + peak) against the card."""
    R, H, c = record["R"], record["H"], record["c"]
    table = []
    for method, run in runs_of(record).items():
        for S, peak in zip(run.sizes, run.peaks):
            predicted = predict_peak_bytes(method, R, H, S, c)
            table.append({"method": method, "S": S, "measured": peak, "predicted": predicted,
                          "ratio": peak / predicted})
        if run.out_of_memory_at is not None:
            S = run.out_of_memory_at
            table.append({"method": method, "S": S, "out_of_memory": True,
                          "need": input_bytes(method, R, H, S, c) + predict_peak_bytes(method, R, H, S, c)})
    return table


def growth(record: dict) -> str:
    """How S grew and what stopped it on time."""
    if record.get("budget_s"):
        limit = _("the methods shared a budget of {seconds:g} s").format(seconds=record["budget_s"])
    elif record.get("step_limit_s"):
        limit = _("one size took more than {seconds:g} s (no total budget)").format(
            seconds=record["step_limit_s"])
    else:
        limit = _("no time limit")
    return _("S grown by x{factor:.4g} from {start} until out of memory or out of time: "
             "{limit}").format(factor=record["factor"], start=record["S_start"], limit=limit)


def print_table(record: dict) -> None:
    print(header(record))
    print(_("recorded {date}: {source}").format(date=record["recorded"], source=record["source"]))
    print(growth(record))
    print(f"{_('method'):8} {'S':>9} {_('measured GB'):>12} {_('predicted GB'):>13} "
          f"{_('measured/predicted'):>19}")
    for row in rows(record):
        if row.get("out_of_memory"):
            print(f"{row['method']:8} {row['S']:>9,}   " + _(
                "OutOfMemoryError; predicted need (inputs + peak) {need:.1f} GB of {card:.1f} GB").format(
                need=row["need"] / GB, card=record["total_memory"] / GB))
        else:
            print(f"{row['method']:8} {row['S']:>9,} {row['measured'] / GB:>12.3f} "
                  f"{row['predicted'] / GB:>13.3f} {row['ratio']:>19.4f}")
    for method, run in runs_of(record).items():
        print(f"{method:8} " + _("stopped: {why}").format(why=run.stopped))


def size_grid(record: dict, last: int) -> list[int]:
    """The sizes blow_up_cuda steps through, from S_start up to `last`."""
    sizes, S = [], record["S_start"]
    while S <= last:
        sizes.append(S)
        S = int(round(S * record["factor"]))
    return sizes


def plot(record: dict, ax=None):
    """Measured need (dots), predicted need (lines) and out-of-memory sizes (crosses), in GB."""
    import matplotlib.pyplot as plt

    if ax is None:
        _figure, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    R, H, c = record["R"], record["H"], record["c"]
    card = record["total_memory"] / GB

    def need(method, S, peak=None):
        """GB of inputs + peak: measured if `peak` is given, else predicted. (The prediction is
        exactly quadratic in S, so need_quadratic's three meta runs serve every S.)"""
        if peak is not None:
            return (input_bytes(method, R, H, S, c) + peak) / GB
        a, b, d = need_quadratic(method, R, H, c)
        return (a * S * S + b * S + d) / GB

    for method, run in runs_of(record).items():
        colour = COLOURS.get(method, "black")
        last = max(run.sizes + [run.out_of_memory_at or 0])
        grid = size_grid(record, last)
        note = _(" (math path on meta)") if method == "sdpa" else ""
        ax.loglog(grid, [need(method, S) for S in grid], ":" if method == "sdpa" else "--",
                  color=colour, lw=1.5 if method == "sdpa" else 1,
                  label=_("{method}: predicted{note}").format(method=method, note=note))
        ax.loglog(run.sizes, [need(method, S, p) for S, p in zip(run.sizes, run.peaks)], "o",
                  color=colour, label=_("{method}: measured").format(method=method))
        if run.out_of_memory_at is not None:
            ax.loglog([run.out_of_memory_at], [need(method, run.out_of_memory_at)], "x",
                      color=colour, ms=10, mew=2)
    ax.axhline(card, color="grey", lw=1)
    ax.text(record["S_start"], card * 1.1, _("card: {card:.1f} GB").format(card=card), fontsize=8,
            color="grey")
    bottom = min(min(line.get_ydata()) for line in ax.get_lines())
    ax.set_ylim(bottom / 2, card * 4)  # sdpa's math-path prediction runs off the top
    ax.set(xlabel=_("S (sequences)"), ylabel=_("GB on the card (inputs + peak)"),
           title=_("{device}: measured (dots) vs predicted from shapes (dashes); x = out of "
                   "memory").format(device=record["device"]))
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    return ax


def show(record: dict) -> None:
    """The lesson's view of one run: the table, then the figure."""
    import matplotlib.pyplot as plt

    print_table(record)
    plot(record)
    plt.show()

