"""The drift check: is the Chinese edition in step with the English one?

    python -m course.drift                  # what is out of date: cells, then messages (exit 1 if any)
    python -m course.drift --old            # ... with the English text each stale cell translated
    python -m course.drift --skeleton 08    # start notebooks/src/zh/08_*.py from the English source

Each cell of a Chinese source (notebooks/src/zh/NN_topic.py) names the English cell it translates
by a hash of that cell's text, in its jupytext header: `# %% [markdown] en="3f2a9c1b0d4e"`. The
Chinese cells follow the English ones in the same order, one for one. The check aligns the two
hash sequences and reports every English cell that changed since it was translated (the Chinese
cell still carries the old hash), every English cell with no translation, every Chinese cell left
over from a removed English cell, and every code cell whose code differs from its English cell.
Code cells are identical in both editions except for comments, which are translated (comments
are exempt from the comparison; code, strings and cell tags are not). The messages of the
catalog are checked by course/messages.py the same way (missing, untranslated, stale).
"""
from __future__ import annotations

import argparse
import difflib
import hashlib
import io
import subprocess
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

import jupytext

from course import ROOT

# English lessons not translated yet (part 2 of issue 24 translates lesson 08 once it is rewritten)
PENDING = {"08"}
ZH = Path("notebooks") / "src" / "zh"


def cell_hash(cell) -> str:
    """12 hex digits of the English cell's type and text (surrounding blank lines ignored)."""
    return hashlib.sha256(f"{cell.cell_type}\n{cell.source.strip()}".encode()).hexdigest()[:12]


def code_without_comments(source: str) -> list[tuple[int, str]]:
    """The tokens of a code cell without comments and blank lines: what must match across editions."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source.strip() + "\n").readline)
        return [(t.type, t.string) for t in tokens
                if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENDMARKER)]
    except (tokenize.TokenError, SyntaxError, IndentationError):  # magics: compare lines
        lines = (line.split("#", 1)[0].rstrip() for line in source.splitlines())
        return [(0, line) for line in lines if line]


def tags(cell) -> list[str]:
    return sorted(cell.metadata.get("tags", []))


def first_line(cell, width: int = 60) -> str:
    text = next((line.strip(" #") for line in cell.source.splitlines() if line.strip(" #")), "")
    return repr(text if len(text) <= width else text[:width - 3] + "...")


@dataclass(frozen=True)
class Pair:
    english: Path
    chinese: Path


def pairs(root: Path = ROOT) -> tuple[list[Pair], list[str]]:
    """(English source, Chinese source) of every lesson and the playground; and the problems of
    English sources without a Chinese one (lessons in PENDING excepted)."""
    found, missing = [], []
    english = sorted((root / "notebooks" / "src").glob("[0-9][0-9]_*.py"))
    english.append(root / "notebooks" / "src" / "playground.py")
    for path in english:
        chinese = root / ZH / path.name
        if chinese.exists():
            found.append(Pair(path, chinese))
        elif path.name[:2] not in PENDING:
            missing.append(f"{path.relative_to(root)} has no Chinese source {ZH / path.name}: "
                           f"start one with `python -m course.drift --skeleton {path.stem}`")
    return found, missing


def pair_problems(pair: Pair, root: Path = ROOT) -> list[str]:
    """Every way the Chinese source of `pair` is out of step with its English source."""
    en_cells, zh_cells = jupytext.read(pair.english).cells, jupytext.read(pair.chinese).cells
    zh_name = pair.chinese.relative_to(root).as_posix()
    en_name = pair.english.relative_to(root).as_posix()
    found = [f"{zh_name} cell {j}: no en=\"...\" hash naming the English cell it translates"
             for j, cell in enumerate(zh_cells) if not cell.metadata.get("en")]
    if found:
        return found
    en_hashes = [cell_hash(c) for c in en_cells]
    zh_hashes = [c.metadata["en"] for c in zh_cells]
    matcher = difflib.SequenceMatcher(a=en_hashes, b=zh_hashes, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                en, zh = en_cells[i], zh_cells[j]
                if en.cell_type == "code" and (code_without_comments(en.source)
                                               != code_without_comments(zh.source) or tags(en) != tags(zh)):
                    found.append(f"{zh_name} cell {j}: its code or tags differ from {en_name} cell {i} "
                                 f"(only comments may differ): copy the English code")
            continue
        for offset, i in enumerate(range(i1, i2)):
            cell = en_cells[i]
            j = j1 + offset
            if op == "replace" and j < j2:
                found.append(f"{zh_name} cell {j} is stale: English cell {i} of {en_name} changed "
                             f"({cell.cell_type} {first_line(cell)}, now en=\"{en_hashes[i]}\")")
            else:
                found.append(f"{en_name} cell {i} ({cell.cell_type} {first_line(cell)}) has no "
                             f"translation in {zh_name} (en=\"{en_hashes[i]}\")")
        for j in range(j1 + (i2 - i1), j2):
            found.append(f"{zh_name} cell {j} ({first_line(zh_cells[j])}) translates no current "
                         f"English cell (en=\"{zh_hashes[j]}\"): remove it or update its hash")
    return found


def notebook_problems(root: Path = ROOT) -> list[str]:
    found, missing = pairs(root)
    problems = list(missing)
    for pair in found:
        problems += pair_problems(pair, root)
    return problems


def problems(root: Path = ROOT) -> list[str]:
    """Everything out of date: lesson cells first, then catalog messages."""
    from course.messages import problems as message_problems

    return notebook_problems(root) + message_problems(root)


def old_english(pair: Pair, wanted: str, root: Path = ROOT) -> str | None:
    """The English cell whose hash is `wanted`, from the git history of the English source."""
    relative = pair.english.relative_to(root).as_posix()
    try:
        commits = subprocess.run(["git", "log", "--format=%H", "--", relative], cwd=root,
                                 capture_output=True, text=True, check=True).stdout.split()
        for commit in commits:
            text = subprocess.run(["git", "show", f"{commit}:{relative}"], cwd=root,
                                  capture_output=True, text=True, check=True).stdout
            for cell in jupytext.reads(text, fmt="py:percent").cells:
                if cell_hash(cell) == wanted:
                    return cell.source
    except (OSError, subprocess.CalledProcessError):
        return None
    return None


def show_old(root: Path = ROOT) -> None:
    """For each stale Chinese cell, a diff from the English it translated to the English now."""
    found, _missing = pairs(root)
    for pair in found:
        en_cells, zh_cells = jupytext.read(pair.english).cells, jupytext.read(pair.chinese).cells
        current = {cell_hash(c): c for c in en_cells}
        for j, cell in enumerate(zh_cells):
            wanted = cell.metadata.get("en")
            if not wanted or wanted in current:
                continue
            old = old_english(pair, wanted, root)
            index = j if j < len(en_cells) else len(en_cells) - 1
            new = en_cells[index].source
            print(f"--- {pair.chinese.relative_to(root)} cell {j}: English then (en=\"{wanted}\") "
                  f"and now (English cell {index}, en=\"{cell_hash(en_cells[index])}\")")
            if old is None:
                print("(the old English text is not in this repository's history)")
                continue
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       "then", "now"))
            print()


def skeleton(english: Path) -> str:
    """A Chinese source to translate: every cell with its en= hash, code copied, English prose kept."""
    notebook = jupytext.read(english)
    for cell in notebook.cells:
        cell.metadata = {**({"tags": cell.metadata["tags"]} if cell.metadata.get("tags") else {}),
                         "en": cell_hash(cell)}
    notebook.metadata = {}
    return without_header(jupytext.writes(notebook, fmt="py:percent"))


def without_header(text: str) -> str:
    """A percent-format source without jupytext's YAML header (the course's sources have none)."""
    if text.startswith("# ---\n"):
        end = text.index("\n# ---\n", 1) + len("\n# ---\n")
        text = text[end:].lstrip("\n")
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="what of the Chinese edition is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the course to check (default: this one)")
    parser.add_argument("--old", action="store_true", help="show what each stale cell's English was")
    parser.add_argument("--skeleton", metavar="LESSON", help="write notebooks/src/zh/LESSON*.py to translate")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if args.skeleton:
        english = sorted((root / "notebooks" / "src").glob(f"{args.skeleton}*.py"))
        if len(english) != 1:
            parser.error(f"no single English source starts with {args.skeleton!r}")
        target = root / ZH / english[0].name
        if target.exists():
            parser.error(f"{target.relative_to(root)} exists; edit it instead")
        target.write_text(skeleton(english[0]))
        print(f"wrote {target.relative_to(root)}: translate its prose and comments, then "
              f"remove {english[0].name[:2]!r} from PENDING in course/drift.py")
        return 0
    found = problems(root)
    for line in found:
        print(line)
    if args.old:
        show_old(root)
    print(f"{len(found)} thing(s) out of date" if found else "the Chinese edition is in step")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
