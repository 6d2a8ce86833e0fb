"""Lesson 10's measurements: memory of the forms of linear attention, the numeric traps, the
Nyström error, the recall experiment's shipped results (re-checked on load), and lesson 09's
figures read from its executed notebook for the table of the two routes.

    memory_of(forms, lengths, shapes)   predicted (meta) and measured (profiler) peaks, lesson 09's
                                        tools (course/lessons/lesson09/memory.py), in inference
    first_overflow(lengths, d)          the first L at which a float16 normaliser is inf
    cumulative_product_trap(a, L)       where prod(a) reaches 0 and the ratio turns NaN or 1.0
    nystrom_errors(q, k, v, ms)         relative error of Nyström against softmax, per m
    load_recall(), recheck_recall()     data/lesson10/recall.json and its seed-0 weights
    lesson09_figures(path)              numbers lesson 09 printed (its committed outputs)
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import torch

from course import ROOT
from course.lessons.lesson09.memory import predict_call, measure_call

NOTEBOOK_09 = ROOT / "notebooks" / "09_tiled_attention.ipynb"


# --------------------------------------------------------------------------------------- memory

def memory_of(forms: dict[str, Callable], lengths, shape: Callable[[int], tuple]) -> dict:
    """{(form, L): (predicted, measured)} for q, k, v of shape(L) each, float32, inference.
    Each `Measured` has `peak` (bytes above the inputs, output included)."""
    table = {}
    for name, fn in forms.items():
        for L in lengths:
            shapes = [shape(L)] * 3
            table[name, L] = (predict_call(fn, shapes), measure_call(fn, shapes))
    return table


def agree(table: dict, within: float = 0.01) -> bool:
    """Predicted and measured peaks within `within` (relative) everywhere in the table."""
    return all(abs(p.peak - m.peak) <= within * m.peak for p, m in table.values())


# ------------------------------------------------------------------------------------ the traps

def feature_map(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = elu(x) + 1 (the lesson's, given in exercises/linear.py too)."""
    return torch.nn.functional.elu(x) + 1


def normaliser_float16(L: int, d: int = 64, seed: int = 0) -> torch.Tensor:
    """phi(q_i)ᵀ z_i for every query of random q, k (L, d), computed in float16 (the largest
    value is what overflows)."""
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(L, d, generator=generator).half() for _ in range(2))
    z = torch.cumsum(feature_map(k), dim=0)
    return (feature_map(q) * z).sum(dim=-1)


def first_overflow(lengths, d: int = 64, seeds=range(5)) -> list[int | None]:
    """Per seed, the first L of `lengths` whose float16 normaliser holds inf (None: none does)."""
    found = []
    for seed in seeds:
        found.append(next((L for L in lengths
                           if torch.isinf(normaliser_float16(L, d, seed)).any()), None))
    return found


def cumulative_product_trap(a: float, L: int, dtype=torch.float32) -> dict:
    """A constant decay a written as cumulative products P_t = a^t (t = 1 .. L, in dtype):
    the first t (1-based) where P_t is 0, where a ratio P_t / P_(t-1) is exactly 1.0 (the decay
    gone), and where the decay matrix P_t / P_s first holds NaN (0 / 0)."""
    P = torch.cumprod(torch.full((L,), a, dtype=dtype), dim=0)
    ratio = P[1:] / P[:-1]
    decay = (P[:, None] / P[None, :]).tril()

    def first(mask):
        hits = mask.nonzero()
        return int(hits[0]) + 1 if len(hits) else None
    return {"zero": first(P == 0), "ratio one": (lambda t: t + 1 if t else None)(first(ratio == 1.0)),
            "nan row": first(torch.isnan(decay).any(dim=-1)),
            "smallest": float(P[P > 0].min()) if (P > 0).any() else 0.0}


# ------------------------------------------------------------------------------------- Nyström

def nystrom_errors(nystrom: Callable, q, k, v, ms, **kwargs) -> dict[int, float]:
    """Relative error ||nystrom - softmax|| / ||softmax|| (Frobenius) for each m of `ms`;
    nystrom(q, k, v, m, **kwargs) is the learner's nystrom_attention."""
    exact = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, dim=-1) @ v
    return {m: float((nystrom(q, k, v, m, **kwargs) - exact).norm() / exact.norm()) for m in ms}


def smooth_sequence(L: int, c: int, seed: int, noise: float = 0.5) -> torch.Tensor:
    """(L, c) float64: a random walk (neighbours alike) plus noise: the structure segment means
    rely on; noise = inf gives plain independent tokens."""
    generator = torch.Generator().manual_seed(seed)
    walk = torch.cumsum(torch.randn(L, c, generator=generator, dtype=torch.float64), dim=0)
    return walk / L ** 0.5 * 2 + noise * torch.randn(L, c, generator=generator,
                                                      dtype=torch.float64)


# -------------------------------------------------------------------------------------- recall

def load_recall(path: Path | None = None) -> dict:
    """data/lesson10/recall.json: the task and every run's result (course/lessons/
    lesson10_recall.py, scripts/train_lesson10.py)."""
    from course.lessons import lesson10_recall as recall

    return json.loads((path or recall.RESULTS).read_text())


def recall_table(shipped: dict) -> dict[str, dict]:
    """Per kind of attention: mean accuracy per N over the seeds, the seeds, the state numbers
    per N, the mean CPU-seconds of a run."""
    table: dict[str, dict] = {}
    for run in shipped["runs"].values():
        mixer = run["config"]["mixer"]
        entry = table.setdefault(mixer, {"runs": [], "state": run["state_numbers"]})
        entry["runs"].append(run)
    for entry in table.values():
        runs = entry["runs"]
        entry["seeds"] = sorted(r["config"]["seed"] for r in runs)
        entry["accuracy"] = {n: sum(r["accuracy"][n] for r in runs) / len(runs)
                             for n in runs[0]["accuracy"]}
        entry["lowest"] = {n: min(r["accuracy"][n] for r in runs) for n in runs[0]["accuracy"]}
        entry["highest"] = {n: max(r["accuracy"][n] for r in runs) for n in runs[0]["accuracy"]}
        entry["cpu_seconds"] = sum(r["cpu_seconds"] for r in runs) / len(runs)
    return table


def recheck_recall(shipped: dict, weights: Path | None = None) -> dict[str, tuple]:
    """Rebuild each shipped model (seed 0) from data/lesson10/recall_weights.pt (float16 weights,
    used in float32) and measure it again as `scripts/train_lesson10.py --collect` measured it
    when it shipped them (shipped["recheck"]: N and the number of validation sequences):
    {mixer: (shipped accuracy, measured now)}."""
    from course.lessons import lesson10_recall as recall

    states = torch.load(weights or recall.WEIGHTS, weights_only=True)
    check = shipped["recheck"]
    found = {}
    for name, state in states.items():
        run = shipped["runs"][name]
        model = recall.load_model(run["config"], state)
        found[run["config"]["mixer"]] = (check["accuracy"][name],
                                         recall.evaluate(model, check["pairs"],
                                                         sequences=check["sequences"]))
    return found


# ------------------------------------------------------------------------------------ lesson 09

def _outputs_text(path: Path) -> str:
    notebook = json.loads(Path(path).read_text())
    return "\n".join("".join(output.get("text", "")) for cell in notebook["cells"]
                     for output in cell.get("outputs", []))


def lesson09_figures(path: Path = NOTEBOOK_09) -> dict:
    """What lesson 09 printed about its tiled attention, from its committed outputs: how the peak
    and what training keeps grow when L doubles (naive and tiled), and one layer of lesson 05's
    column attention at S = 5,120 (inference need and training's kept bytes).

    figures[name, mode] = (comparison, bound, holds, kept): lesson 09 prints the peak's growth
    against a bound ("peak x > 3.5 at each doubling: True") and the kept bytes' growth as a
    number ("kept x 3.88")."""
    text = _outputs_text(path)
    figures = {}
    for name in ("naive", "tiled"):
        for mode in ("inference", "training"):
            found = re.search(rf"^{name}\s+{mode}\s+peak x ([<>]) ([\d.]+) at each doubling: "
                              rf"(True|False), kept x ([\d.]+)\s*$", text, re.M)
            if found is None:
                raise ValueError(f"lesson 09's outputs no longer print the growth of {name} "
                                 f"({mode}) in {Path(path).name}")
            comparison, bound, holds, kept = found.groups()
            figures[name, mode] = (comparison, float(bound), holds == "True", float(kept))
    need = re.search(r"at S = 5,120, one layer: naive needs ([\d.]+) GB, chunked ([\d.]+) GB, "
                     r"tiled ([\d.]+) GB", text)
    kept = re.search(r"kept for training, per layer: naive and chunked ([\d.]+) GB of weights, "
                     r"tiled ([\d.]+) GB", text)
    if need is None or kept is None:
        raise ValueError(f"lesson 09's outputs no longer print its S = 5,120 figures in "
                         f"{Path(path).name}")
    figures["need GB"] = dict(zip(("naive", "chunked", "tiled"), map(float, need.groups())))
    figures["kept GB"] = dict(zip(("naive", "tiled"), map(float, kept.groups())))
    return figures
