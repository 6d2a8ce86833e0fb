"""Lesson 09's text never states a timing verdict that the same notebook's outputs contradict.

Machine-dependent verdicts (tiles faster or slower than naive attention) are printed by cells,
computed from what they measured; the prose may explain why either can happen, not type one.
`contradictions` reads a notebook's markdown for verdicts about the tiles' speed and its outputs
for what was measured (the ratios and the verdict lines the cells print), in both languages, and
names every verdict the measurements contradict. It fails on the lesson as it stood before its
timing cells computed their verdict ("tiles bring no speed" beside a printed x0.6).
"""
from __future__ import annotations

import json
import re

import pytest

from course import ROOT

NOTEBOOKS = [ROOT / "notebooks" / "09_tiled_attention.ipynb",
             ROOT / "notebooks" / "zh" / "09_tiled_attention.ipynb"]

# verdicts that the tiles are never faster than naive attention (in pure PyTorch, on a CPU)
NEVER_FASTER = [
    r"tiles? (?:bring|brings|gain|gains|give|gives) no speed", r"gain no speed from tiling",
    r"the time does not fall", r"tiles? (?:are|is) (?:never|not) faster",
    r"its speed needs a compiler", r"没有因为(?:分块|逐块)而变快", r"(?:分块|逐块)(?:并)?不(?:会)?(?:带来|变)快",
    r"时间(?:并)?不会(?:下降|减少)", r"(?:分块|逐块)带不来(?:任何)?速度",
]
# verdicts that the tiles are faster whatever the size or machine
ALWAYS_FASTER = [r"tiles? (?:are|is) always faster", r"(?:分块|逐块)总是更快"]

# what the cells print: tiled / naive (< 1: tiles faster), naive / tiles (> 1: tiles faster),
# and the verdict lines they compute
TILED_OVER_NAIVE = re.compile(r"tiled / naive(?: forward)?:? (?:forward )?x(\d+(?:\.\d+)?)")
NAIVE_OVER_TILES = re.compile(r"(?:naive / best tiles|朴素 / 最好的(?:分块|逐块实现))[^\n]*")
RATIO = re.compile(r"x(\d+(?:\.\d+)?)")
PRINTED_FASTER = re.compile(r"(?:tiles are faster than naive|(?:分块|逐块实现)比朴素注意力快|the best tiles "
                            r"are faster than naive|最好的(?:分块|逐块实现)[^\n，]*比朴素注意力快)")


def _texts(notebook: dict) -> tuple[str, str]:
    markdown, outputs = [], []
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            markdown.append(source)
        for output in cell.get("outputs", []):
            outputs.append("".join(output.get("text", [])))
            data = output.get("data", {})
            outputs.append("".join(data.get("text/plain", [])))
    return "\n".join(markdown), "\n".join(outputs)


def measured_relations(outputs: str) -> set[str]:
    """'tiles faster' and/or 'tiles slower', as the printed ratios and verdict lines say."""
    found = set()
    for match in TILED_OVER_NAIVE.finditer(outputs):
        found.add("tiles faster" if float(match.group(1)) < 1 else "tiles slower")
    for line in NAIVE_OVER_TILES.findall(outputs):
        for ratio in RATIO.findall(line):
            found.add("tiles faster" if float(ratio) > 1 else "tiles slower")
    if PRINTED_FASTER.search(outputs):
        found.add("tiles faster")
    return found


def contradictions(markdown: str, outputs: str) -> list[str]:
    """Every verdict of the prose about the tiles' speed that the printed measurements contradict."""
    measured = measured_relations(outputs)
    text = " ".join(markdown.split())
    problems = []
    for pattern in NEVER_FASTER:
        for match in re.finditer(pattern, text, flags=re.IGNORECASE):
            if "tiles faster" in measured:
                problems.append(f"the text says {match.group(0)!r}; the outputs show tiles faster")
    for pattern in ALWAYS_FASTER:
        for match in re.finditer(pattern, text, flags=re.IGNORECASE):
            if "tiles slower" in measured:
                problems.append(f"the text says {match.group(0)!r}; the outputs show tiles slower")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_text_states_no_timing_verdict_its_outputs_contradict(path):
    markdown, outputs = _texts(json.loads(path.read_text(encoding="utf-8")))
    assert measured_relations(outputs), "the notebook prints no timing ratio to compare with"
    assert contradictions(markdown, outputs) == []


def test_the_lesson_as_it_stood_fails():
    """The prose and an output of the lesson before its verdicts were computed."""
    markdown = ("The algorithm you wrote is the real one; its speed needs a compiler or a "
                "hand-written kernel. The time does not fall. ... and in pure PyTorch tiles bring "
                "no speed: the speed of FlashAttention comes from fusion in a kernel.")
    outputs = "tiled / sdpa: forward x5.2, training x3.1;  tiled / naive: forward x0.6, training x0.7"
    found = contradictions(markdown, outputs)
    assert len(found) == 3 and all("tiles faster" in line for line in found)
    zh = "这里 CPU 上的逐块实现没有因为分块而变快，因为每个块都是十几个独立的操作。"
    assert contradictions(zh, outputs)


def test_a_verdict_computed_from_the_outputs_passes():
    outputs = ("naive / best tiles: L = 256: x0.18, L = 512: x0.83, L = 1024: x1.82\n"
               "so the best tiles are faster than naive at L = 1024 and slower at the others")
    assert measured_relations(outputs) == {"tiles faster", "tiles slower"}
    assert contradictions("Which effect wins depends on L, the block size and the machine.",
                          outputs) == []
