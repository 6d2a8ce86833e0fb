"""Find tofu in a stored figure: Chinese characters drawn as matplotlib's missing-glyph box.

Without a CJK font, matplotlib draws every Chinese character with DejaVu Sans's stand-in glyph:
one and the same thick-framed box (a small 字 inside, the code-point range around it), whatever
the character. `tofu_boxes(png)` finds those boxes in a PNG: a dark blob about as wide as tall,
closed by a frame with ink inside, that looks like DejaVu Sans's box as matplotlib draws it at
that size (upright, or turned a quarter for a y-axis label), and that has at least two twins in
the same image (blobs of its size that are the same picture: every box is). A real glyph with a
frame (回, the 日 of 间) can look like the box at a few pixels' size, but is the same picture as
two others only where that character is drawn three times at one size.

Measured on the course's own images: all 27 stored images of the Chinese notebooks built without
a CJK font are found (5 to 52 boxes each); none of the 27 English ones, nor the Chinese ones
built with a font. Text smaller than 6 points at 100 dpi is not looked at.

    python -m course.tofu notebooks/zh/*.ipynb     # every stored image with boxes in it (exit 1)
"""
from __future__ import annotations

import base64
import io
import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

DARK = 140          # grey level below which a pixel is ink
SIZES = (8, 90)     # the heights in pixels of the boxes looked for (6-pt to 65-pt text at 100 dpi)
CANDIDATE = 0.75    # correlation with the drawn box from which a framed blob may be a box
TWIN = 0.9          # correlation of two boxes of one size: the same picture
TWINS = 2           # a box has at least this many twins in its figure (three boxes alike)
FRAMED = 0.8        # share of each edge of a blob's bounding box that must be ink
INSIDE = 0.08       # mean ink inside the frame (the box holds a small 字; a 0 holds nothing)
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@dataclass(frozen=True)
class Box:
    top: int
    left: int
    height: int
    width: int
    score: float  # correlation with matplotlib's box, scaled to this size (1: the same picture)


@lru_cache(maxsize=None)
def _templates() -> dict[int, list[np.ndarray]]:
    """DejaVu Sans's box for a Chinese character as matplotlib draws it, at every font size from
    4 to 70 points in quarter points: {height in pixels: [ink (0-1) cut to the box's frame]}."""
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties

    found: dict[int, list[np.ndarray]] = {}
    sizes = np.arange(4, 70.25, 0.25)
    figure = Figure(figsize=(len(sizes) * 0.5, 1.4), dpi=72)
    FigureCanvasAgg(figure)
    for n, size in enumerate(sizes):
        figure.text((n + 0.2) / len(sizes), 0.2, "\u5b57",
                    fontproperties=FontProperties(family="DejaVu Sans", size=float(size)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the missing glyph is the point here
        figure.canvas.draw()
    ink = _ink(np.asarray(figure.canvas.buffer_rgba()))
    for top, left, bottom, right in _blobs(ink > DARK_INK):
        box = ink[top:bottom, left:right]
        if bottom - top >= SIZES[0] - 1:
            found.setdefault(bottom - top, []).append(box)
    return found


DARK_INK = 1 - DARK / 255


def _ink(rgba: np.ndarray) -> np.ndarray:
    """How dark each pixel is, 0 (paper, or transparent) to 1 (black)."""
    rgba = rgba.astype(np.float64) / 255
    rgb, alpha = rgba[..., :3], rgba[..., 3:4] if rgba.shape[-1] == 4 else 1.0
    grey = (rgb * alpha + (1 - alpha)).mean(axis=-1)  # over white
    return 1 - grey


def _blobs(dark: np.ndarray):
    """The bounding boxes (top, left, bottom, right) of the 8-connected blobs of `dark`."""
    height, width = dark.shape
    seen = np.zeros_like(dark, dtype=bool)
    for start in zip(*np.nonzero(dark)):
        if seen[start]:
            continue
        seen[start] = True
        stack, top, left, bottom, right = [start], start[0], start[1], start[0], start[1]
        while stack:
            y, x = stack.pop()
            top, bottom, left, right = min(top, y), max(bottom, y), min(left, x), max(right, x)
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    ny, nx = y + dy, x + dx
                    if 0 <= ny < height and 0 <= nx < width and dark[ny, nx] and not seen[ny, nx]:
                        seen[ny, nx] = True
                        stack.append((ny, nx))
        yield top, left, bottom + 1, right + 1


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    norm = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / norm) if norm else 0.0


def _scaled(template: np.ndarray, height: int, width: int) -> np.ndarray:
    from PIL import Image

    image = Image.fromarray((template * 255).astype(np.uint8))
    return np.asarray(image.resize((width, height), Image.Resampling.BOX), dtype=np.float64) / 255


def score(patch: np.ndarray) -> float:
    """How much `patch` (ink, 0-1) looks like the box drawn at its size, upright or turned a
    quarter either way: -1 to 1."""
    height, width = patch.shape
    best = 0.0
    for turn in (0, 1, -1):
        tall = height if turn == 0 else width
        for size in (tall - 1, tall, tall + 1):
            for template in _templates().get(size, []):
                turned = np.rot90(template, turn) if turn else template
                best = max(best, _correlation(patch, _scaled(turned, height, width)))
    return best


def framed(patch: np.ndarray) -> bool:
    """Is `patch` a frame with something inside: ink along all four edges of its bounding box,
    and ink within (a 0 or an o is a frame with nothing inside)?"""
    sides = (patch[:2].max(0), patch[-2:].max(0), patch[:, :2].max(1), patch[:, -2:].max(1))
    height, width = patch.shape
    edge = max(1, round(0.12 * min(height, width)))
    inside = patch[edge + 1:height - edge - 1, edge + 1:width - edge - 1]
    return (min(float((side[1:-1] > 0.5).mean()) for side in sides) >= FRAMED
            and inside.size > 0 and float(inside.mean()) >= INSIDE)


def tofu_boxes(png: bytes) -> list[Box]:
    """Every missing-glyph box drawn in the PNG image `png`.

    A box is a framed blob with ink inside, about as wide as tall, that looks like matplotlib's
    box at its size (score at least CANDIDATE) and has TWINS twins: other such blobs of the same
    size that are the same picture (correlation at least TWIN). Every Chinese character drawn
    without a CJK font is the same box, so a figure with tofu has many twins; a real glyph or
    part of one with a frame (回, the 日 of 间) looks like the box only roughly, at small sizes,
    and has twins only where the same character is drawn three times at one size.
    """
    from PIL import Image

    ink = _ink(np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")))
    candidates = []
    for top, left, bottom, right in _blobs(ink > DARK_INK):
        height, width = bottom - top, right - left
        if not (SIZES[0] <= height <= SIZES[1] and 0.7 <= width / height <= 1.45):
            continue
        patch = ink[top:bottom, left:right]
        if framed(patch):
            value = score(patch)
            if value >= CANDIDATE:
                candidates.append((Box(top, left, height, width, round(value, 3)), patch))
    found = []
    for n, (box, patch) in enumerate(candidates):
        twins = sum(1 for m, (other, other_patch) in enumerate(candidates)
                    if m != n and abs(other.height - box.height) <= 1
                    and abs(other.width - box.width) <= 1
                    and _correlation(patch, _scaled(other_patch, box.height, box.width)) >= TWIN)
        if twins >= TWINS:
            found.append(box)
    return found


def notebook_images(notebook: Path | dict) -> list[tuple[str, bytes]]:
    """(where, PNG) of every image a notebook (a file, or one read) stores: cell outputs and
    widgets' image models."""
    if not isinstance(notebook, dict):
        notebook = json.loads(Path(notebook).read_text(encoding="utf-8"))
    found = []
    for index, cell in enumerate(notebook["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get("image/png")
            if data:
                found.append((f"cell {index}", base64.b64decode(data)))
    state = notebook["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for model_id, model in state.items():
        for buffer in model.get("buffers", []):
            data = base64.b64decode(buffer.get("data", ""))
            if buffer.get("path") == ["value"] and data[:8] == b"\x89PNG\r\n\x1a\n":
                found.append((f"widget {model_id[:8]}", data))
    return found


def notebook_problems(notebook: Path | dict, name: str | None = None) -> list[str]:
    """One line for each stored image of a notebook (a file, or one read) that shows boxes."""
    name = name or Path(notebook).name
    found = []
    for where, png in notebook_images(notebook):
        boxes = tofu_boxes(png)
        if boxes:
            found.append(f"{name} {where}: {len(boxes)} missing-glyph box(es), the first "
                         f"at ({boxes[0].left}, {boxes[0].top}), {boxes[0].height} px high")
    return found


def main(argv=None) -> int:
    paths = [Path(p) for p in (sys.argv[1:] if argv is None else argv)]
    found = [line for path in paths for line in notebook_problems(path)]
    images = sum(len(notebook_images(path)) for path in paths)
    for line in found:
        print(line)
    print(f"{len(found)} of {images} stored image(s) show missing-glyph boxes")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
