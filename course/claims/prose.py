"""A lesson's prose as the claims check reads it: sentences, and which of them state facts.

What is read: every markdown cell of the lesson source (notebooks/src/NN_*.py, or its Chinese
twin), split into sentences. A heading, a table row and a list item are sentences of their own;
self-check *answers* are read like any prose (a learner quotes them), self-check *questions*
(sentences ending in ? or ？) are not claims. Left out before reading: fenced code blocks (code,
checked by running it), HTML comments, the <details>/<summary> tags.

A sentence is *factual*, and needs a ledger row, when it holds (outside code spans and $math$):

- a number: any written number except 0 and 1 (the 0s and 1s of definitions: "weights sum to
  1"), and except what only names or counts course structure: "lesson 04", "section 7", "§1.2",
  "exercise 2", "seed 003", "第 05 课", a list's own numbering, names with digits (GPT-2,
  float16, Qwen3, AF2, H200, 2-D, x₁, 10⁹: a digit glued to letters, to superscripts or by a
  hyphen is part of a name);
- a named paper, author, model or system (NAMES: AlphaFold, PyTorch, GPT-2, ALiBi, T5, RoPE,
  "et al.", arXiv, the supplement, an Algorithm number, "the paper", the seed notes...);
- a comparison (COMPARISONS: faster, smaller, more than, grows, ×N, N times, %...; in Chinese
  更快, 倍, 降到, 增长...), or a verdict on speed (VERDICT: no speed, speed-up, 速度...).

Numbers inside code spans and math are code: checked by the notebook that runs it, not here.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import jupytext

from course import ROOT
from course.zh_numbers import NUMBER

SOURCES = ROOT / "notebooks" / "src"
NOTEBOOKS = ROOT / "notebooks"

FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1\s*$", re.S | re.M)
COMMENT = re.compile(r"<!--.*?-->", re.S)
SUMMARY = re.compile(r"<summary>.*?</summary>|</?details>", re.S)
LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
CODE_SPAN = re.compile(r"`[^`]*`")
MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.S)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
HEADING = re.compile(r"^\s*#{1,6}\s+")
TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}")
HEADING_MARK = "\x00"  # marks a heading block: one sentence, never split

# where a sentence ends: a Chinese 。！？, or an English . ! ? followed by a space and a capital, a
# digit, a quote, a bracket, a code span or a Chinese character (not after the abbreviations
# below); closing quotes and brackets right after the end belong to the sentence
SENTENCE_END = re.compile(r"(?:[。！？]|(?P<en>[.!?]))(?P<close>[\"”’')）\]」』]*)"
                          r"(?(en)\s+(?=[A-Z0-9\"“(`\[\u4e00-\u9fff])|\s*)")
ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "vs.", "cf.", "Fig.", "Eq.", "No.", "approx.", "resp.")

# course structure, not claims (removed before numbers are read)
STRUCTURE = [re.compile(p) for p in (
    r"\b[Ll]essons?[ -]\d\d(?:'s)?(?:\s*(?:[–-]|to|and|or|,)\s*\d\d)*",
    r"\b[Ss]ections?\s+\d+(?:\.\d+)*(?:\s*(?:[–-]|to|and|or|,)\s*\d+(?:\.\d+)*)*",
    r"§\s?\d+(?:\.\d+)*(?:\s*[–-]\s*\d+(?:\.\d+)*)?(?:\s*(?:and|,|、)\s*§?\d+(?:\.\d+)*)*",
    r"\b(?:[Ee]xercises?|[Ss]teps?|[Aa]nswers?|[Qq]uestions?|[Pp]art|[Cc]hapter)\s+\d+[ab]?",
    r"\b(?:[Ss]eeds?|[Nn]otes?)\s+00\d\b", r"笔记\s*00\d", r"原始笔记\s*00\d",
    r"第\s*\d+(?:\s*[–、，,-]\s*\d+)*\s*[课节部章题步]", r"(?:练习|答案|问题|步骤)\s*\d+",
    r"\b\d-?D\b", r"\b\d+(?:\.\d+)?-(?=[A-Za-z])",     # 2-D, 3D; 64-bit (a hyphenated adjective)
    r"[A-Za-z]+-\d+(?:\.\d+)?",                         # GPT-2, FlashAttention-2, model-1
)]
SMALL = {0.0, 1.0}

NAMES = re.compile("|".join((
    r"AlphaFold\d?", r"\bAF[23]\b", r"OpenFold", r"alphafold-decoded", r"PyTorch", r"\bGPT\b",
    r"GPT-\d", r"\bBERT\b", r"LLaMA|Llama", r"Qwen\d*", r"Mistral", r"\bT5\b", r"ALiBi",
    r"RoFormer", r"\bRoPE\b", r"FlashAttention", r"Longformer", r"BigBird", r"\bLSTM\b",
    r"\bGRU\b", r"SwiGLU", r"\bGLU\b", r"[Hh]ighway network", r"Hugging Face", r"Evoformer",
    r"the (?:original|2017) Transformer", r"\b2017\b", r"et al\.?", r"\barXiv\b",
    r"\b[Ss]upplement", r"\b[Aa]lgorithms? \d+", r"\bpapers?\b", r"NVIDIA", r"\bH200\b",
    r"\bA100\b", r"\bJAX\b", r"Zhang & Sennrich", r"\b[Ss]eed 00\d", r"\bseed note",
    r"\bsource notes?\b", r"\bthe notes\b", r"\bthe seed(?:'s)?\b", r"\bsome (?:widely read )?notes\b", r"notes on Transformers",
    r"原始 ?Transformer", r"原始笔记", r"笔记\s*00\d", r"论文", r"补充材料", r"算法\s*\d+", r"等\s*\(?\d{4}",
)))

COMPARISONS = re.compile("|".join((
    r"\b(?:faster|slower|quicker|cheaper|costlier|smaller|larger|bigger|fewer|greater|higher|lower|"
    r"better|worse|shorter|longer|more|less|most|grows?|growing|grew|shrinks?|shrinking|"
    r"falls?|rises?|doubles?|halves|outperforms?|exceeds?|beats?|saving|speed-?ups?|"
    r"twice|order of magnitude|cheap|expensive)\b",
    r"(?<!\d)×\d|\d×(?!\s?\d)|\bx\d", r"\d+(?:\.\d+)?\s?times\b", r"%",
    r"更[快慢小大少多高低省贵长短好差]", r"[快慢大小多少高低长短]于", r"[快慢大小多少高低长短]得多", r"倍", r"减半", r"增长|增大|增加",
    r"减小|减少|降低|降到|降为|下降|上升|超过|不如|胜过|节省|加速|提速|开销更|％",
)))

# comparison words in phrases that compare nothing
NOT_COMPARED = re.compile(r"\b(?:falls? back|lower-triangular|upper-triangular|no longer|any longer|"
                          r"(?:one|once|no) more|at (?:least|most)|half precision|more or less|on paper)\b", re.I)

VERDICT = re.compile("|".join((
    r"\b(?:faster|slower|quicker|speed(?:-?ups?)?|speeds? up|no speed|time does not fall|"
    r"time falls|takes? longer|fits? in (?:the )?cache)\b",
    r"更快|更慢|快于|慢于|加速|提速|速度|变快|变慢|耗时(?:更|不)",
)))
TIMING = re.compile(r"\bbest_time\(|\bbest_seconds\(|perf_counter|\btimeit\b")


@dataclass(frozen=True)
class Sentence:
    """One sentence of one markdown cell: its text (normalised) and where it sits in that text."""
    cell: int
    start: int
    end: int
    text: str

    @property
    def question(self) -> bool:
        return self.text.rstrip(" *_").endswith(("?", "？"))


def normalise(text: str) -> str:
    """What a ledger row's words are compared with: links as their text, no emphasis marks,
    whitespace collapsed (a row may quote across a line break)."""
    text = LINK.sub(r"\1", text).replace("*", "")
    return re.sub(r"\s+", " ", text).strip()


def masked(text: str) -> str:
    """The sentence without code spans and math, which hold code, not claims."""
    return MATH.sub(" ", CODE_SPAN.sub(" ", text))


def _without_questions(source: str) -> str:
    """The cell without its self-check questions: from the heading above a <details> to it."""
    while (start := source.find("<details>")) >= 0:
        headings = list(re.finditer(r"^\s*#{1,6}\s.*$", source[:start], re.M))
        cut = headings[-1].end() if headings else 0
        source = source[:cut] + "\n\n" + source[start + len("<details>"):]
    return source


def _pieces(source: str) -> list[str]:
    """A markdown cell cut into blocks: each heading, table row, list item and paragraph."""
    source = _without_questions(FENCE.sub("\n\n", COMMENT.sub("", source)))
    source = SUMMARY.sub("\n\n", source)
    blocks, paragraph = [], []
    for line in source.splitlines():
        starts_block = HEADING.match(line) or line.lstrip().startswith("|") or LIST_ITEM.match(line)
        if not line.strip() or starts_block:
            if paragraph:
                blocks.append(" ".join(paragraph))
                paragraph = []
        if not line.strip() or TABLE_RULE.match(line):
            continue
        if HEADING.match(line):
            blocks.append(HEADING_MARK + HEADING.sub("", line))
        elif line.lstrip().startswith("|"):
            blocks.append(line.strip().strip("|"))
        else:
            paragraph.append(LIST_ITEM.sub("", line) if LIST_ITEM.match(line) else line)
    if paragraph:
        blocks.append(" ".join(paragraph))
    return blocks


def _split(block: str) -> list[str]:
    """A block cut after each sentence end, closing quotes and brackets staying with their sentence."""
    pieces, start = [], 0
    for match in SENTENCE_END.finditer(block):
        if match["en"] and block[:match.start() + 1].endswith(ABBREVIATIONS):
            continue
        pieces.append(block[start:match.end("close")])
        start = match.end()
    pieces.append(block[start:])
    return [p.strip() for p in pieces if p.strip()]


def sentences(source: str, cell: int) -> tuple[str, list[Sentence]]:
    """The cell's normalised text (what rows are matched in) and its sentences, with spans."""
    blocks = [(block.startswith(HEADING_MARK), normalise(block.removeprefix(HEADING_MARK)))
              for block in _pieces(source)]
    text = " ".join(b for _, b in blocks if b)
    found, position = [], 0
    for heading, block in blocks:
        for piece in [block] if heading else _split(block):
            if not piece:
                continue
            start = text.find(piece, position)
            found.append(Sentence(cell, start, start + len(piece), piece))
            position = start + len(piece)
    return text, found


def value(token: str) -> float:
    return float(token.replace(",", ""))


def numbers(text: str) -> list[str]:
    """The written numbers of a sentence, as the ledger reads them (see the module's docstring)."""
    text = masked(text)
    for pattern in STRUCTURE:
        text = pattern.sub(" ", text)
    return [m[0] for m in NUMBER.finditer(text) if value(m[0]) not in SMALL]


def reasons(text: str, literals: frozenset[float] = frozenset()) -> list[str]:
    """Why a sentence states a fact: its numbers, names and comparisons (empty: it does not).

    literals: the numbers written in the notebook's code. A sentence that only restates them
    ("L = 512, a window of 16") describes the code's set-up; it states no result, so they alone
    do not make it factual (the numbers check still reads them)."""
    bare = NOT_COMPARED.sub(" ", masked(text))
    return ([f"number {n}" for n in numbers(text) if value(n) not in literals]
            + [f"name {m[0].strip()}" for m in NAMES.finditer(bare)]
            + [f"comparison {m[0].strip()}" for m in COMPARISONS.finditer(bare)]
            + [f"verdict {v}" for v in verdicts(text) if not COMPARISONS.search(v)])


CODE_NUMBER = re.compile(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")


def literals(code: list[str]) -> frozenset[float]:
    """Every number written in the notebook's code cells (20_000 read as 20000)."""
    return frozenset(float(m[0].replace("_", "")) for source in code
                     for m in CODE_NUMBER.finditer(source))


def verdicts(text: str) -> list[str]:
    return [m[0] for m in VERDICT.finditer(masked(text))]


@dataclass
class Lesson:
    """One lesson in one language: its markdown cells (normalised) and sentences, and what its
    executed notebook shows (code and committed outputs)."""
    number: str
    lang: str
    source: Path
    cells: dict[int, str]           # markdown cell index -> normalised text
    sentences: list[Sentence]
    code: list[str]                 # the source of every code cell
    outputs: list[str]              # the text of every committed output, one per code cell
    hashes: dict[int, str]          # Chinese: the English cell each cell names (drift's en=)

    @property
    def literals(self) -> frozenset[float]:
        return literals(self.code)

    def factual(self) -> list[tuple[Sentence, list[str]]]:
        """The sentences that state a fact, each with why."""
        found = []
        for sentence in self.sentences:
            why = [] if sentence.question else reasons(sentence.text, self.literals)
            if why:
                found.append((sentence, why))
        return found

    @property
    def times_things(self) -> bool:
        """Whether the notebook measures time, so that typed speed verdicts can be contradicted."""
        return any(TIMING.search(code) for code in self.code)

    def timing_lines(self) -> list[str]:
        """The printed lines a typed verdict can be contradicted by: ratios first, then times."""
        lines = [" ".join(line.split()) for text in self.outputs for line in text.splitlines()]
        ratios = [line for line in lines if re.search(r"\bx\d|×\d|\d\s?x\b", line)]
        slopes = [line for line in lines if re.search(r"\bslope\b|\bfaster\b", line)
                  and line not in ratios]
        times = [line for line in lines if re.search(r"\d\s?(?:ms|s)\b", line)
                 and line not in ratios + slopes]
        return ratios + slopes + times


def lesson_numbers(root: Path = ROOT) -> list[str]:
    return sorted(p.name[:2] for p in (root / "notebooks" / "src").glob("[0-9][0-9]_*.py"))


def source_path(number: str, lang: str = "en", root: Path = ROOT) -> Path | None:
    folder = root / "notebooks" / "src" / ("zh" if lang == "zh" else "")
    found = sorted(folder.glob(f"{number}_*.py"))
    return found[0] if found else None


def notebook_outputs(path: Path) -> list[str]:
    """The text every code cell of a committed notebook printed (images and widgets left out)."""
    if not path.exists():
        return []
    texts = []
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts = []
        for output in cell.get("outputs", []):
            if "text" in output:
                parts.append("".join(output["text"]))
            elif "text/plain" in output.get("data", {}) and len(output["data"]) == 1:
                parts.append("".join(output["data"]["text/plain"]))
            elif output.get("output_type") == "error":
                parts.append(f"{output.get('ename', '')}: {output.get('evalue', '')}")
        texts.append("\n".join(parts))
    return texts


@lru_cache(maxsize=None)
def _read(path: Path, mtime: float, lang: str, number: str, root: Path) -> Lesson:
    from course.zh_source import compose, is_prose_only

    # a Chinese source of prose only is read as its notebook: the English cells with the Chinese
    # prose in place, so that a Chinese cell has its English cell's number
    notebook = compose(path) if lang == "zh" and is_prose_only(path) else jupytext.read(path)
    cells, found, code, hashes = {}, [], [], {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            cells[index], cell_sentences = sentences(cell.source, index)
            found += cell_sentences
        elif cell.cell_type == "code":
            code.append(cell.source)
        if "en" in cell.metadata:
            hashes[index] = cell.metadata["en"]
    built = root / "notebooks" / ("zh" if lang == "zh" else "") / path.with_suffix(".ipynb").name
    return Lesson(number, lang, path, cells, found, code, notebook_outputs(built), hashes)


def read_lesson(number: str, lang: str = "en", root: Path = ROOT) -> Lesson | None:
    path = source_path(number, lang, root)
    if path is None:
        return None
    built = root / "notebooks" / ("zh" if lang == "zh" else "") / path.with_suffix(".ipynb").name
    stamp = path.stat().st_mtime + (built.stat().st_mtime if built.exists() else 0)
    english = source_path(number, "en", root)
    if lang == "zh" and english is not None:  # its code is the English source's
        stamp += english.stat().st_mtime
    return _read(path, stamp, lang, number, root)
