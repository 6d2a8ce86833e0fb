"""The Chinese notebooks' committed outputs, checked against the English run instead of a second run.

A Chinese lesson runs the English lesson's code (tests/test_zh_notebooks.py: the same code cells,
token for token, comments excepted) with the course's messages in Chinese. So what its strict
nbval would prove beyond the English one is that every message the run prints renders in Chinese
and that the committed Chinese outputs are what that gives. This module proves that from the
English run: tests/catalog_recorder.py writes down, while strict nbval runs the English lesson,
each message the run renders and its Chinese rendering with the same values; here every cell's
committed English outputs (which that nbval run reproduced) get those Chinese renderings put in
and must then equal the committed Chinese outputs, compared as nbval compares (streams merged,
notebooks/nbval_sanitize.cfg applied, the same cells skipped or left unchecked).

Not proven here: what only a Chinese kernel does beyond the catalog (notebooks/zh/course_setup.py
sets the language and a CJK font; figures are never compared by nbval anyway) — the real strict
nbval of one Chinese lesson (tests/test_notebooks.py) covers that set-up. A widget's text/plain
(its repr, cut at 110 characters) is compared up to the last label the English cut leaves
whole.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbval.plugin import (coalesce_streams, find_comment_markers, find_metadata_tags,
                          get_sanitize_patterns, transform_streams_for_comparison)

# what nbval leaves out of a comparison (nbval/plugin.py: IPyNbFile.skip_compare, without nbdime)
SKIP_COMPARE = ("metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg")
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
CUT = "…"  # ipywidgets cuts a widget's text/plain at 110 characters and adds this


@dataclass
class RecordedCell:
    source: str
    renderings: list[tuple[str, str]] = field(default_factory=list)  # (English, Chinese)
    errors: list[str] = field(default_factory=list)
    # stream name -> what the cell wrote to it, in English and in Chinese
    streams: dict[str, tuple[str, str]] = field(default_factory=dict)


def read_record(path: Path) -> list[RecordedCell]:
    """The cells the recorded kernel ran, in order, with what each rendered."""
    cells: list[RecordedCell] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "cell" in entry:
            cells.append(RecordedCell(entry["cell"]))
        elif not cells:
            continue  # rendered while the kernel started, before any cell: nothing printed it
        elif "stream" in entry:
            english, chinese = cells[-1].streams.get(entry["stream"], ("", ""))
            cells[-1].streams[entry["stream"]] = (english + entry["en"],
                                                  chinese + entry.get("zh", entry["en"]))
        elif "error" in entry:
            cells[-1].errors.append(f"{entry['error']} (message {entry['msgid']!r}, "
                                    f"Chinese {entry['zh']!r})")
        else:
            cells[-1].renderings.append((entry["en"], entry["zh"]))
    return cells


def options(cell) -> dict:
    """nbval's options for a cell (its tags and comment markers): skip, check, check_exception."""
    found = dict(find_metadata_tags(cell.metadata))
    found.update(dict(find_comment_markers(cell.source)))
    found.setdefault("check", True)
    return found


class Translator:
    """English text -> Chinese, by the renderings of one cell (longest first, in one pass, so a
    Chinese rendering is never translated again; a later rendering of the same English wins).
    Only the cell's own: an earlier cell's label may be a word of this cell's plain text."""

    def __init__(self, renderings):
        self.table: dict[str, str] = {}
        for english, chinese in renderings:
            if english:
                self.table[english] = chinese
        keys = sorted(self.table, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, keys))) if keys else None

    def __call__(self, text: str) -> str:
        if self.pattern is None:
            return text
        return self.pattern.sub(lambda match: self.table[match.group(0)], text)


class Prefix(str):
    """An expected text of which only the start is known (a widget's repr, cut by ipywidgets)."""


def expected_outputs(outputs, run: RecordedCell, patterns) -> tuple[list, str | None]:
    """(the Chinese outputs the English ones give, a problem or None).

    Streams are what the run wrote, with the messages in Chinese (the recorder watched the
    writes); what it wrote in English must be the committed English stream, else the recorder
    missed a write. Other outputs (a repr, an HTML table, an error) are the committed English
    ones, the cell's renderings put in wherever their English occurs. A widget's text/plain is
    its repr cut at 110 characters: the Chinese repr is cut elsewhere, so only the repr up to
    the last label the English cut leaves whole (labels are quoted) is expected, as the start
    of the Chinese text."""
    translate = Translator(run.renderings)
    done = []
    committed = {o.name: o.text for o in coalesce_streams(
        [nbformat.from_dict(json.loads(json.dumps(o))) for o in outputs]) if o.output_type == "stream"}
    for name in set(committed) | set(run.streams):
        english, chinese = run.streams.get(name, ("", ""))
        english = coalesce_streams([nbformat.v4.new_output("stream", name=name, text=english)])[0].text
        if sanitized(english, patterns) != sanitized(committed.get(name, ""), patterns):
            return [], (f"the recorder saw a different {name} from the committed English one:\n"
                        f"--- recorded\n{english}\n--- committed\n{committed.get(name, '')}")
        done.append(nbformat.v4.new_output("stream", name=name, text=chinese))
    for output in outputs:
        if output.output_type == "stream":
            continue
        output = nbformat.from_dict(json.loads(json.dumps(output)))
        if output.output_type == "error":
            output.evalue = translate(output.evalue)
        elif "data" in output:
            for key, value in output.data.items():
                if key in SKIP_COMPARE or not isinstance(value, str):
                    continue
                if WIDGET_MIME in output.data and key == "text/plain" and value.endswith(CUT):
                    output.data[key] = Prefix(translate(value[:max(value.rfind("'"), 0)]))
                else:
                    output.data[key] = translate(value)
        done.append(output)
    return done, None


def sanitized(text: str, patterns) -> str:
    kind = type(text)
    for regex, replace in patterns:
        text = re.sub(regex, replace, text)
    return kind(text)


def flatten(outputs, patterns) -> dict[str, list]:
    """nbval's form of a cell's outputs: each compared key (a data key flattened) -> its values,
    sanitized."""
    flat: dict[str, list] = {}
    for output in transform_streams_for_comparison(coalesce_streams(outputs)):
        for key, value in output.items():
            if key in SKIP_COMPARE:
                continue
            items = value.items() if key == "data" else [(key, value)]
            for item_key, item in items:
                if item_key in SKIP_COMPARE:
                    continue
                if isinstance(item, str):
                    item = sanitized(item, patterns)
                flat.setdefault(item_key, []).append(item)
    return flat


def compare_cell(expected_outputs, chinese_outputs, patterns) -> str | None:
    """None if the outputs agree as nbval would judge them, else what differs."""
    expected, chinese = flatten(expected_outputs, patterns), flatten(chinese_outputs, patterns)
    if set(expected) != set(chinese):
        return f"output fields differ: expected {sorted(expected)}, committed {sorted(chinese)}"
    for key, values in expected.items():
        if len(values) != len(chinese[key]):
            return f"{key}: {len(values)} outputs expected, {len(chinese[key])} committed"
        for value, committed in zip(values, chinese[key]):
            if value == committed or (isinstance(value, Prefix) and committed.startswith(value)):
                continue
            return (f"{key}:\n--- expected (the English output, its messages in Chinese)"
                    f"{' (the start)' if isinstance(value, Prefix) else ''}\n{value}\n"
                    f"--- committed in the Chinese notebook\n{committed}")
    return None


def chinese_problems(english: Path, chinese: Path, record: Path, sanitize: Path) -> list[str]:
    """What differs between the Chinese notebook's committed outputs and the English ones with
    the recorded Chinese renderings put in; [] when they agree."""
    en = nbformat.read(english, as_version=4)
    zh = nbformat.read(chinese, as_version=4)
    patterns = get_sanitize_patterns(Path(sanitize).read_text())
    en_cells = [c for c in en.cells if c.cell_type == "code"]
    zh_cells = [c for c in zh.cells if c.cell_type == "code"]
    if len(en_cells) != len(zh_cells):
        return [f"{chinese.name}: {len(zh_cells)} code cells, the English has {len(en_cells)}"]
    recorded = iter(read_record(record))
    problems = []
    for index, (en_cell, zh_cell) in enumerate(zip(en_cells, zh_cells)):
        found = options(zh_cell)
        if found.get("skip"):
            continue
        run = next(recorded, None)
        if run is None or run.source != en_cell.source:
            return problems + [f"{chinese.name} cell {index}: the recorded run is out of step "
                               "with the English notebook"]
        problems += [f"{chinese.name} cell {index}: the Chinese message cannot be rendered: {e}"
                     for e in run.errors]
        if not found["check"] or zh_cell.execution_count is None:
            continue
        expected, differs = expected_outputs(en_cell.outputs, run, patterns)
        differs = differs or compare_cell(expected, zh_cell.outputs, patterns)
        if differs:
            problems.append(f"{chinese.name} code cell {index} (stale? run `make notebooks "
                            f"NB={chinese.name[:2]} LANG=zh`): {differs}")
    return problems
