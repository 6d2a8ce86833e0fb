"""Make the shipped data of lesson 08: a natural-text corpus and the bigram table of the toy task.

    .venv/bin/python scripts/make_lesson08_data.py

1. data/lesson08/docstrings.txt: docstrings of the Python standard library (modules, classes,
   functions), taken with `ast` from the .py files of the running interpreter's stdlib, files in
   sorted order, tests and tools left out, non-ASCII characters dropped, cut at MAX_BYTES.
   The text is Python's own documentation, under the PSF License (Python Software Foundation
   License Version 2); the output depends on the Python version (the shipped file: 3.11.7).
2. data/lesson08/bigram_table.json: character bigram probabilities over 'a'-'z' and ' ', counted
   from that corpus (lower-cased, every other character read as a space, runs of spaces merged).
   The Bigram-Backcopy sequences of lesson 08 are drawn from this table (course/lm_training.py).
"""
from __future__ import annotations

import ast
import json
import re
import sys
import sysconfig
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "data" / "lesson08"
MAX_BYTES = 400_000
SKIP_PARTS = {"test", "tests", "idlelib", "lib2to3", "turtledemo", "site-packages", "ensurepip",
              "pydoc_data", "__phello__", "tkinter"}
BIGRAM_ALPHABET = "abcdefghijklmnopqrstuvwxyz "


def stdlib_docstrings() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = []
    for path in sorted(stdlib.rglob("*.py")):
        if SKIP_PARTS & set(path.relative_to(stdlib).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=True)
                if doc and len(doc) >= 40:  # one-liners like "Return x." teach little
                    texts.append(textwrap.dedent(doc).strip())
    return texts


def corpus_text(max_bytes: int = MAX_BYTES) -> str:
    pieces, size = [], 0
    for doc in stdlib_docstrings():
        doc = doc.encode("ascii", "ignore").decode()
        pieces.append(doc)
        size += len(doc) + 2
        if size >= max_bytes:
            break
    return "\n\n".join(pieces)[:max_bytes]


def bigram_table(text: str) -> dict:
    letters = re.sub(r"[^a-z]+", " ", text.lower())
    n = len(BIGRAM_ALPHABET)
    counts = [[0] * n for _ in range(n)]
    index = {ch: i for i, ch in enumerate(BIGRAM_ALPHABET)}
    for a, b in zip(letters, letters[1:]):
        counts[index[a]][index[b]] += 1
    rows = []
    for row in counts:
        total = sum(row) + n  # add-one smoothing: every transition stays possible
        rows.append([round((c + 1) / total, 5) for c in row])
    return {
        "alphabet": BIGRAM_ALPHABET,
        "probabilities": rows,
        "source": "character bigrams counted from data/lesson08/docstrings.txt "
                  "(lower-cased, non-letters read as one space, add-one smoothing) "
                  "by scripts/make_lesson08_data.py",
    }


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    text = corpus_text()
    (OUT / "docstrings.txt").write_text(text)
    (OUT / "bigram_table.json").write_text(json.dumps(bigram_table(text), indent=1) + "\n")
    print(f"wrote {len(text)} characters of docstrings (Python {sys.version.split()[0]}) "
          f"and the bigram table to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
