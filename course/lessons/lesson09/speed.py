"""Lesson 09's cache sweep: naive attention against tiles of 16 to 512, for L from 256 to 2048,
on the CPU, the best of several timings each, and what the table says, computed from it.

The CPU's caches play the part of a GPU's on-chip SRAM, its DRAM that of the GPU's HBM: naive
attention writes and reads (B, H, L, L) scores, which leave the caches once L is large enough;
a tile of (B, H, block, block) scores stays in them. Whether that makes tiles faster here depends
on the machine (its caches, its threads, the per-operator cost of PyTorch), so the lesson never
types a verdict: `findings(record)` computes one from the measured table.

    sweep(...)            measure on this machine (minutes); returns a record
    load(), save()        the record shipped in data/lesson09/cache_sweep.json
    findings(record)      the facts the lesson prints: where naive's time per score jumps, the
                          scores' size there against the caches, the best tile, and its ratio
    cache_sizes()         this machine's data caches, from /sys (Linux; {} elsewhere)
"""
from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
from pathlib import Path
from typing import Callable

import torch

from course import ROOT
from course.measure import best_time

SWEEP_FILE = ROOT / "data" / "lesson09" / "cache_sweep.json"
FORMAT = 1
LENGTHS = (256, 512, 1024, 2048)
BLOCKS = (16, 32, 64, 128, 256, 512)
BATCH, CHANNELS = (2, 4), 64  # (B, H) and c of q, k, v: float32


@contextlib.contextmanager
def threads(n: int):
    """torch uses `n` threads inside the block (the timings of the lesson use one: several
    threads on a machine busy with other work wait for each other at every small operation)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cache_sizes() -> dict[str, int]:
    """{"L1d": bytes, "L2": bytes, "L3": bytes} of CPU 0 (per core for L1 and L2, shared L3), read
    from /sys/devices/system/cpu/cpu0/cache; {} where that does not exist."""
    found = {}
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    for index in sorted(root.glob("index*")) if root.exists() else []:
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        units = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}
        found["L1d" if level == "1" else f"L{level}"] = int(size[:-1]) * units.get(size[-1], 1) \
            if size[-1] in units else int(size)
    return found


def machine() -> dict:
    """What the timings depend on: the processor, the threads torch uses, the caches."""
    name = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return {"cpu": name, "threads": torch.get_num_threads(), "cores": os.cpu_count(),
            "caches": cache_sizes(), "torch": torch.__version__}


def _time(fn: Callable, L: int, repeats: int) -> float:
    generator = torch.Generator().manual_seed(L)
    q, k, v = (torch.randn(*BATCH, L, CHANNELS, generator=generator) for _ in range(3))
    with torch.no_grad():
        return best_time(lambda: fn(q, k, v), repeats=repeats)


def sweep(naive: Callable, tiled: Callable, lengths=LENGTHS, blocks=BLOCKS, repeats: int = 3,
          log=print) -> dict:
    """The best of `repeats` forward timings (after an untimed call) of naive(q, k, v) and of
    tiled(q, k, v, block) for every L and block on (B, H, L, c) = (2, 4, L, 64) float32."""
    record = {"format": FORMAT, "machine": machine(), "recorded": datetime.date.today().isoformat(),
              "load average": [round(x, 2) for x in os.getloadavg()], "repeats": repeats, "batch": list(BATCH), "c": CHANNELS, "naive": {}, "tiled": {}}
    for L in lengths:
        record["naive"][str(L)] = _time(naive, L, repeats)
        record["tiled"][str(L)] = {str(b): _time(lambda q, k, v, b=b: tiled(q, k, v, b), L, repeats)
                                   for b in blocks}
        log(f"L = {L}: naive {record['naive'][str(L)] * 1e3:.1f} ms, tiles "
            + ", ".join(f"{b}: {s * 1e3:.1f}" for b, s in record["tiled"][str(L)].items()))
    return record


def load(path: Path = SWEEP_FILE) -> dict:
    return json.loads(Path(path).read_text())


def save(record: dict, path: Path = SWEEP_FILE) -> None:
    Path(path).write_text(json.dumps(record, indent=1) + "\n")


def findings(record: dict) -> dict:
    """Computed from the table: per L the nanoseconds per score of naive and of the best tile
    smaller than L,
    the L at which naive's time per score grows most from the L before (its jump), the bytes of
    naive's (B, H, L, L) scores on both sides of it, the largest cache, and the ratio naive /
    best tiles at every L."""
    heads = record["batch"][0] * record["batch"][1]
    lengths = sorted(int(L) for L in record["naive"])
    per_score, best, ratio = {}, {}, {}
    for L in lengths:
        naive = record["naive"][str(L)]
        # tiles as large as L are one tile: naive attention, not tiles
        tiles = {b: s for b, s in record["tiled"][str(L)].items() if int(b) < L} or \
            record["tiled"][str(L)]
        block, seconds = min(tiles.items(), key=lambda item: item[1])
        per_score[L] = naive / (heads * L * L) * 1e9
        best[L] = (int(block), seconds / (heads * L * L) * 1e9)
        ratio[L] = naive / seconds
    growth = {L: per_score[L] / per_score[prev] for prev, L in zip(lengths, lengths[1:])}
    jump = max(growth, key=growth.get) if growth else lengths[0]
    before = lengths[lengths.index(jump) - 1] if jump != lengths[0] else jump
    caches = record["machine"].get("caches", {})
    largest = max(caches.items(), key=lambda item: item[1]) if caches else None
    return {"lengths": lengths, "ns per score": per_score, "best tile": best, "ratio": ratio,
            "jump": jump, "before": before, "growth": growth.get(jump, 1.0),
            "bytes before": heads * before * before * 4, "bytes at jump": heads * jump * jump * 4,
            "largest cache": largest, "faster": [L for L in lengths if ratio[L] > 1.0]}


def _size(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes / 2**10:.0f} KiB"


def table(record: dict) -> list[str]:
    """The sweep as lines: per L, naive's time and each tile size's, in ms."""
    from course.i18n import _

    blocks = list(next(iter(record["tiled"].values())))
    lines = [_("forward, best of {repeats} (ms), (B, H, L, c) = ({B}, {H}, L, {c}), float32").format(
        repeats=record["repeats"], B=record["batch"][0], H=record["batch"][1], c=record["c"]),
        f"{'L':>6} {_('naive'):>9} " + " ".join(f"{_('tiles') + ' ' + b:>10}" for b in blocks)]
    for L in sorted(record["naive"], key=int):
        lines.append(f"{L:>6} {record['naive'][L] * 1e3:>9.1f} " +
                     " ".join(f"{record['tiled'][L][b] * 1e3:>10.1f}" for b in blocks))
    return lines


def describe(record: dict, live: bool) -> list[str]:
    """What the table shows, in sentences computed from it: where naive's time per score jumps
    and by how much, its scores' size there, the caches, and where tiles are faster."""
    from course.i18n import _

    found, machine = findings(record), record["machine"]
    where = _("on this machine") if live else _("on the machine that recorded it")
    lines = [_("{where}: {cpu}, {threads} thread(s), torch {torch}, recorded {date}, load "
               "average {load}").format(where=where, cpu=machine["cpu"],
                                        threads=machine["threads"], torch=machine["torch"],
                                        date=record["recorded"],
                                        load=record.get("load average", ["?"])[0])]
    caches = machine.get("caches") or {}
    if caches:
        lines.append(_("its data caches: {caches}").format(
            caches=", ".join(f"{name} {_size(size)}" for name, size in caches.items())))
    lines.append(_("naive, nanoseconds per score: {values}").format(values=", ".join(
        f"L = {L}: {found['ns per score'][L]:.1f}" for L in found["lengths"])))
    lines.append(_("its largest jump: x{growth:.1f} from L = {before} to L = {jump}, where its "
                   "(B, H, L, L) scores grow from {a} to {b}").format(
        growth=found["growth"], before=found["before"], jump=found["jump"],
        a=_size(found["bytes before"]), b=_size(found["bytes at jump"])))
    lines.append(_("the best tiles, nanoseconds per score: {values}").format(values=", ".join(
        f"L = {L}: {found['best tile'][L][1]:.1f} ({_('block')} {found['best tile'][L][0]})"
        for L in found["lengths"])))
    faster = found["faster"]
    ratios = ", ".join(f"L = {L}: x{found['ratio'][L]:.2f}" for L in found["lengths"])
    lines.append(_("naive / best tiles: {ratios}").format(ratios=ratios))
    if faster:
        lines.append(_("so the best tiles are faster than naive at L = {lengths} and slower at "
                       "the others").format(lengths=", ".join(map(str, faster)))
                     if len(faster) < len(found["lengths"])
                     else _("so the best tiles are faster than naive at every L of the table"))
    else:
        lines.append(_("so naive is faster than the best tiles at every L of the table"))
    return lines
