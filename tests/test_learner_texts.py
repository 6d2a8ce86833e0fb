"""What a learner reads stays true as the course grows: no typed extent of the course ("lessons
00–08", "第 00–08 课", "`00_start_here.ipynb` to `08_...`", "nine lessons"), which the next lesson
makes wrong (the text lists the lessons or speaks of them without a count); and no folder of the
machine that built a notebook in its stored outputs (another machine's learner reads them)."""
from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest

from course import ROOT

# the READMEs, the lessons and the playground (both languages), the data's provenance, the
# learner's messages (the Chinese catalog holds each in both languages)
LEARNER_TEXTS = ["README.md", "README.zh-CN.md", "course/release/README.md",
                 "course/release/README.zh-CN.md", "notebooks/src/*.py", "notebooks/src/zh/*.py",
                 "data/README.md", "course/locale/zh_CN/LC_MESSAGES/course.po"]
# a range of lessons from the first (00 or 01) to another; a command's argument (LESSONS=00-01)
# is a choice, not the course's extent
RANGE = re.compile(r"(?<![=\w.-])(?<!--lessons )0[01]\s*(?:–|—|-|~|to|through|and|到|至)\s*\d\d(?![\d.])")
CHINESE_RANGE = re.compile(r"第\s*0[01]\s*(?:–|—|-|~|到|至)\s*(?:第\s*)?\d\d\s*课")
FILE_RANGE = re.compile(r"0[01]_\w+\.ipynb`?\s*(?:to|through|到|至)\s*`?(?:notebooks/)?\d\d_")
COUNT = re.compile(r"\b(?:\d+|[Nn]ine|[Tt]en|[Ee]leven|[Tt]welve)\s+lessons\b"
                   r"|(?:共|一共|全部)\s*[0-9一二三四五六七八九十]+\s*课")
TYPED = (RANGE, CHINESE_RANGE, FILE_RANGE, COUNT)


def learner_files() -> list[Path]:
    return sorted({path for pattern in LEARNER_TEXTS for path in ROOT.glob(pattern)})


def typed_extents(text: str) -> list[str]:
    return [match.group(0) for pattern in TYPED for match in pattern.finditer(text)]


def test_no_typed_count_of_the_lessons_where_a_learner_reads():
    found = []
    for path in learner_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{path.relative_to(ROOT)}:{number}: {hit!r} in {line.strip()[:100]}"
                      for hit in typed_extents(line)]
    assert found == [], ("a typed extent of the course (the next lesson makes it wrong): list the "
                         "lessons or speak of them without a count\n" + "\n".join(found))


@pytest.mark.parametrize("text", [
    "one for every lesson from 01 to 08", "Lessons 00–03 and 07–08", "lessons 00-09",
    "第 00–08 课和游乐场都有中文版", "第 01 到 08 课每课一个", "`00_start_here.ipynb` to `08_gated.ipynb`",
    "从 `00_start_here.ipynb` 到 `08_gated_attention_paper.ipynb`", "the course's ten lessons",
    "共 11 课"])
def test_a_typed_extent_is_caught(text):
    assert typed_extents(text), text


@pytest.mark.parametrize("text", [
    "Lessons 04–06 follow AlphaFold2", "LESSONS=00-01", "--lessons 00-02", "lesson 00", "第 00 课",
    "q=[1,0], keys [1,0]", "`notebooks/00_start_here.ipynb` to learn", "20,608 vs 13,440",
    "σ(1) = 0.73", "第 04–06 课"])
def test_what_is_not_an_extent_passes(text):
    assert typed_extents(text) == [], text


# -------------------------------------------------------------------- stored notebook outputs

def machine_folders() -> re.Pattern:
    """Folders that belong to one machine: this course's and the home, temporary and usual
    user, build and environment folders of any machine."""
    own = {str(ROOT.resolve()), str(ROOT), str(Path.home()), tempfile.gettempdir()}
    generic = [r"/home/", r"/Users/", r"/root/", r"/tmp/", r"/var/folders/", r"/private/var/",
               r"/work/", r"/mnt/", r"/content/", r"[A-Za-z]:\\\\?(?:Users|Documents and Settings)",
               r"site-packages", r"\.venv/", r"/opt/conda", r"miniconda", r"anaconda3"]
    return re.compile("|".join([re.escape(folder) for folder in own if len(folder) > 1]
                               + generic))


def stored_texts(path: Path):
    """(cell index, text) of every stored output of a notebook: streams, text, HTML, errors."""
    notebook = json.loads(path.read_text())
    for index, cell in enumerate(notebook.get("cells", [])):
        for output in cell.get("outputs", []):
            if "text" in output:
                yield index, "".join(output["text"])
            for mime, data in output.get("data", {}).items():
                if mime.startswith("text/") or mime.endswith("json"):
                    yield index, "".join(data) if isinstance(data, list) else json.dumps(data)
            if "traceback" in output:
                yield index, "\n".join(output["traceback"])


NOTEBOOK_FILES = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "notebooks" / "zh").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOK_FILES, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_stored_outputs_name_no_folder_of_the_machine_that_ran_them(path):
    folders = machine_folders()
    found = [f"cell {index}: {text[max(0, m.start() - 60):m.end() + 40]!r}"
             for index, text in stored_texts(path) for m in folders.finditer(text)]
    assert found == [], f"{path.relative_to(ROOT)}: " + "\n".join(found)


def test_a_machine_folder_is_caught():
    folders = machine_folders()
    for text in ("graphviz (/work/main/.venv/bin/dot)", "/home/ada/course/x.py", "C:\\Users\\ada",
                 "/Users/ada/attention/build", f"{ROOT}/exercises/warmup.py"):
        assert folders.search(text), text
    for text in ("graphviz (in the course's Python environment)", "/usr/bin/dot",
                 "notebooks/zh/00_start_here.ipynb", "exercises/warmup.py, line 14"):
        assert not folders.search(text), text


# ----------------------------------------------------------------- lesson 00's environment report

def test_the_environment_report_has_a_font_row_and_names_no_folder(capsys):
    from course.env_report import environment_report

    report = environment_report()
    printed = capsys.readouterr().out
    assert "CJK font" in report and "font for Chinese" in printed
    assert not machine_folders().search(printed), printed


def test_without_a_chinese_font_the_report_gives_the_command_that_installs_one(monkeypatch):
    import course.fonts
    from course import env_report

    monkeypatch.setattr(course.fonts, "find_cjk_family", lambda: None)
    monkeypatch.setattr(env_report.sys, "platform", "linux")
    row = env_report.cjk_font()
    assert "boxes" in row and row.endswith("apt-get install fonts-noto-cjk")
    monkeypatch.setattr(course.fonts, "find_cjk_family", lambda: "Noto Sans CJK SC")
    assert env_report.cjk_font() == "Noto Sans CJK SC"


def test_a_program_in_the_courses_environment_is_said_to_be_there():
    import sys

    from course.env_report import where

    beside = str(Path(sys.executable).parent / "dot")
    assert where(beside) == "(in the course's Python environment)"
    assert where("/usr/bin/dot") == "(/usr/bin/dot)"
    assert where(str(Path.home() / "bin" / "dot")) == "(~/bin/dot)"
