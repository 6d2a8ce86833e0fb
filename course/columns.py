"""Text in columns as a terminal or a notebook's monospaced output draws it: a Chinese character
takes two columns, so padding by `len` (as str.format does) pushes the columns of a translated
table to the right. `pad` pads by display width (wcwidth, the library terminals follow)."""
from __future__ import annotations

from wcwidth import wcswidth


def width(text: str) -> int:
    """Display columns of `text` (its length where wcwidth finds unprintable characters)."""
    columns = wcswidth(text)
    return columns if columns >= 0 else len(text)


def pad(text: str, size: int, align: str = "<") -> str:
    """`text` padded with spaces to `size` columns: align "<" left, ">" right, "^" centred
    (str.format's rule: the odd space goes to the right). Longer text is left as it is."""
    gap = max(size - width(text), 0)
    if align == ">":
        return " " * gap + text
    if align == "^":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap
