"""The Chinese edition (notebooks/src/zh/, notebooks/zh/): in step with the English one.

Strict nbval of the Chinese notebooks runs in tests/test_notebooks.py with the English ones. Here:
the drift check (course/drift.py) passes, code cells are the English code (comments excepted),
the committed notebooks are built from their sources, and the drift check really names a
changed English cell and a changed message (in a scratch copy).
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import jupytext
import pytest

from course import ROOT
from course.build import read_source, sources, target_of
from course.drift import main as drift_main
from course.drift import (PENDING, READMES, Pair, cell_hash, code_without_comments,
                          notebook_problems, old_english, old_section, pair_problems, pairs,
                          readme_problems, sections, skeleton)
from course.playground import NOTEBOOKS as PLAYGROUND, render

ZH_SOURCES = sources(lang="zh")


def test_every_english_lesson_has_its_chinese_source_in_step():
    found = notebook_problems()
    assert found == [], "out of date (see `python -m course.drift --old`):\n" + "\n".join(found)


def test_code_cells_are_the_english_code():
    """The same code, strings and tags in both editions; only comments are translated."""
    found, _missing = pairs()
    assert len(found) == len(ZH_SOURCES) + 1  # the lessons and the playground
    for pair in found:
        english, chinese = jupytext.read(pair.english).cells, jupytext.read(pair.chinese).cells
        assert [c.cell_type for c in english] == [c.cell_type for c in chinese], pair.chinese.name
        for index, (en, zh) in enumerate(zip(english, chinese)):
            if en.cell_type == "code":
                where = f"{pair.chinese.name} cell {index}"
                assert code_without_comments(zh.source) == code_without_comments(en.source), where
                assert sorted(zh.metadata.get("tags", [])) == sorted(en.metadata.get("tags", [])), where


def test_markdown_cells_are_translated():
    """No English prose left: every markdown cell of a Chinese source holds Chinese."""
    for path in ZH_SOURCES:
        for index, cell in enumerate(jupytext.read(path).cells):
            if cell.cell_type == "markdown":
                assert re.search(r"[\u4e00-\u9fff]", cell.source), f"{path.name} cell {index}"


def test_every_chinese_notebook_has_its_source():
    built = {p.stem for p in (ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb")}
    assert built == {p.stem for p in ZH_SOURCES}, "run `make notebooks LANG=zh` after adding a lesson"


@pytest.mark.parametrize("source", ZH_SOURCES, ids=lambda p: p.stem)
def test_committed_chinese_notebook_matches_its_source(source):
    target = target_of(source)
    assert target.exists(), f"{target.relative_to(ROOT)} missing: run `make notebooks LANG=zh`"
    committed, fresh = jupytext.read(target), read_source(source)

    def cells(nb):
        return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]
    assert cells(committed) == cells(fresh), f"{target.relative_to(ROOT)} is stale: run `make notebooks LANG=zh`"
    metadata = json.loads(target.read_text())["metadata"]
    assert metadata["course"]["language"] == "zh_CN"


def test_the_chinese_playground_page_is_written_from_its_source():
    assert json.loads(PLAYGROUND["zh"].read_text()) == json.loads(render("zh")), (
        "notebooks/zh/playground.ipynb is stale: run `python -m course.playground --write`")


def test_the_chinese_playground_links_each_lesson_to_its_chinese_notebook():
    """On the Chinese page "出自第 NN 课" opens notebooks/zh/ where the lesson is translated, and an
    English-only lesson says so; the English page links the English notebooks."""
    from course.i18n import CHINESE, set_language
    from course.widgets import playground

    entries = playground.entries()
    try:
        set_language(CHINESE)
        for entry in entries:
            link, translated = playground.lesson_link(entry), ROOT / "notebooks" / "zh" / entry.notebook
            assert link.startswith(f"第 {entry.lesson} 课："), link
            if translated.exists():
                assert link.count(f"/blob/main/notebooks/zh/{entry.notebook}\"") == 1, link
                assert f">notebooks/zh/{entry.notebook}</a>" in link and "英文版" not in link, link
            else:
                assert f"/blob/main/notebooks/{entry.notebook}\"" in link, link
                assert link.endswith("（目前只有英文版）"), link
        lesson02 = next(e for e in entries if e.lesson == "02")
        assert "出自第 02 课：<a " in playground.header(lesson02).value
        set_language("en")
        for entry in entries:
            link = playground.lesson_link(entry)
            assert "notebooks/zh/" not in link and "English only" not in link, link
            assert link.startswith(f"lesson {entry.lesson}: <a "), link
    finally:
        set_language(None)


def test_lessons_still_to_translate_are_only_the_pending_ones():
    translated = {p.name[:2] for p in ZH_SOURCES}
    english = {p.name[:2] for p in sources()}
    assert english - translated == PENDING


def test_nothing_chinese_sends_a_student_to_what_the_release_lacks():
    from tests.test_handout import ABSENT

    files = [*ZH_SOURCES, ROOT / "course" / "release" / "README.zh-CN.md"]
    found = [f"{path.name}:{n}: {line.strip()[:100]}" for path in files
             for n, line in enumerate(path.read_text().splitlines(), 1) if ABSENT.search(line)]
    assert found == [], "\n".join(found)


def scratch_course(tmp_path):
    """The parts of the course the drift check reads, copied."""
    for folder in ("course", "notebooks/src"):
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "reference_data"))
    for name in ("README.md", "README.zh-CN.md"):  # the release's READMEs came with course/
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def run_drift(root, capsys) -> subprocess.CompletedProcess:
    """`python -m course.drift --root ROOT`, in this process (a new one would spend its time
    importing; test_the_size_of_the_edition_is_a_count_anyone_can_rerun runs the command)."""
    capsys.readouterr()
    code = drift_main(["--root", str(root)])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["course.drift", "--root", str(root)], code, out, err)


def test_the_drift_check_names_a_changed_english_cell_and_a_changed_message(tmp_path, capsys):
    root = scratch_course(tmp_path)
    lesson = root / "notebooks" / "src" / "01_qkv_by_hand.py"
    text = lesson.read_text()
    assert text.count("## The smallest example") == 1
    lesson.write_text(text.replace("## The smallest example", "## The very smallest example"))
    report = root / "course" / "env_report.py"
    text = report.read_text()
    assert text.count('_("not installed")') == 1
    report.write_text(text.replace('_("not installed")', '_("not installed here")'))

    done = run_drift(root, capsys)
    assert done.returncode == 1, done.stdout + done.stderr
    cell = next(i for i, c in enumerate(jupytext.read(lesson).cells) if "very smallest" in c.source)
    assert f"notebooks/src/zh/01_qkv_by_hand.py cell {cell} is stale" in done.stdout
    assert "English cell" in done.stdout and "The very smallest example" in done.stdout
    assert "message not in the catalog yet (course/env_report.py): 'not installed here'" in done.stdout
    assert "stale entry, no longer in the code: 'not installed'" in done.stdout
    assert len(done.stdout.strip().splitlines()) == 4, done.stdout  # the three, and the count


def test_the_drift_check_names_a_cell_without_translation_and_code_that_differs(tmp_path):
    root = scratch_course(tmp_path)
    lesson = root / "notebooks" / "src" / "02_single_head.py"
    text = lesson.read_text()
    text = text.replace("# %% [markdown]\n# ## Shapes first",
                        "# %% [markdown]\n# A new English cell.\n\n# %% [markdown]\n# ## Shapes first", 1)
    lesson.write_text(text)
    chinese = root / "notebooks" / "src" / "zh" / "03_multi_head.py"
    chinese.write_text(chinese.read_text().replace("L, N_head, c = 4, 2, 3", "L, N_head, c = 4, 2, 5", 1))
    found = notebook_problems(root)
    assert any("02_single_head.py cell 2 (markdown 'A new English cell.') has no translation" in line
               for line in found), found
    assert any("zh/03_multi_head.py cell" in line and "code or tags differ" in line for line in found), found


def test_the_readmes_are_in_step_section_by_section():
    found = readme_problems()
    assert found == [], "out of date (see `python -m course.drift --old`):\n" + "\n".join(found)
    for english, chinese in READMES:
        en, zh = sections((ROOT / english).read_text()), sections((ROOT / chinese).read_text())
        assert len(en) == len(zh) > 1, chinese
        assert [s.en for s in zh] == [s.hash for s in en], chinese
        assert all(s.heading.split()[0] == z.heading.split()[0] for s, z in zip(en, zh)), chinese


def test_sections_start_at_headings_outside_fenced_code():
    text = ("# Title\nintro\n\n```bash\n# a shell comment, no heading\nmake lab\n```\n"
            "## Two\n<!-- en=\"0123456789ab\" -->\ntext\n### Three\n#not a heading\n")
    found = sections(text)
    assert [s.heading for s in found] == ["# Title", "## Two", "### Three"]
    assert "# a shell comment" in found[0].text and found[2].text.endswith("#not a heading")
    assert [s.en for s in found] == [None, "0123456789ab", None]
    edited = sections(text.replace("intro", "intro, edited"))
    assert edited[0].hash != found[0].hash and edited[1].hash == found[1].hash


def test_the_drift_check_names_an_edited_english_readme_section(tmp_path, capsys):
    """An edited section of README.md and one of the release's README, in a scratch copy."""
    root = scratch_course(tmp_path)
    readme, release = root / "README.md", root / "course" / "release" / "README.md"
    for path, old in [(readme, "caption and a link to its lesson"), (release, "Ask your instructor")]:
        text = path.read_text()
        assert text.count(old) == 1, (path, old)
        path.write_text(text.replace(old, old + " (edited)"))

    done = run_drift(root, capsys)
    assert done.returncode == 1, done.stdout + done.stderr
    playground = next(i for i, s in enumerate(sections(readme.read_text())) if s.heading == "## The playground")
    stuck = next(i for i, s in enumerate(sections(release.read_text())) if s.heading == "## When you are stuck")
    assert (f"README.zh-CN.md section {playground} is stale: English section {playground} of "
            f"README.md changed ('## The playground', now en=") in done.stdout
    assert (f"course/release/README.zh-CN.md section {stuck} is stale: English section {stuck} of "
            f"course/release/README.md changed ('## When you are stuck', now en=") in done.stdout
    assert len(done.stdout.strip().splitlines()) == 3, done.stdout  # the two, and the count


def test_the_drift_check_names_an_untranslated_section_and_a_heading_without_its_hash(tmp_path):
    root = scratch_course(tmp_path)
    readme = root / "README.md"
    text = readme.read_text()
    readme.write_text(text.replace("## The playground", "## A new section\n\nNew text.\n\n## The playground", 1))
    release = root / "course" / "release" / "README.zh-CN.md"
    lines = release.read_text().splitlines(True)
    heading = next(n for n, line in enumerate(lines) if line.startswith("## 卡住的时候"))
    assert lines[heading + 1].startswith("<!-- en=")
    release.write_text("".join(lines[:heading + 1] + lines[heading + 2:]))
    found = readme_problems(root)
    new = next(i for i, s in enumerate(sections(readme.read_text())) if s.heading == "## A new section")
    assert any(line.startswith(f"README.md section {new} ('## A new section') has no translation in "
                               "README.zh-CN.md") for line in found), found
    assert any("course/release/README.zh-CN.md section" in line and "'## 卡住的时候': no <!-- en=" in line
               for line in found), found
    assert not any("is stale" in line for line in found), found  # the other sections still align


def test_the_old_english_of_a_readme_section_is_found_in_the_history():
    section = sections((ROOT / "README.md").read_text())[1]
    found = old_section(ROOT / "README.md", section.hash)
    assert found is None or found.strip() == section.text.strip()  # None outside a git checkout


def test_a_skeleton_is_in_step_and_keeps_the_english_prose(tmp_path):
    root = scratch_course(tmp_path)
    english = next((root / "notebooks" / "src").glob("08_*.py"))
    chinese = root / "notebooks" / "src" / "zh" / english.name
    chinese.write_text(skeleton(english))
    assert pair_problems(Pair(english, chinese), root) == []
    assert jupytext.read(chinese).cells[0].source == jupytext.read(english).cells[0].source


def test_the_old_english_of_a_cell_is_found_in_the_history():
    english = ROOT / "notebooks" / "src" / "00_start_here.py"
    cell = jupytext.read(english).cells[0]
    pair = Pair(english, ROOT / "notebooks" / "src" / "zh" / english.name)
    found = old_english(pair, cell_hash(cell))
    assert found is None or found.strip() == cell.source.strip()  # None outside a git checkout


def dry_run(*args: str) -> str:
    done = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_make_lab_make_check_and_make_playground_switch_to_chinese():
    assert dry_run("lab", "LANG=zh").endswith("notebooks/zh/00_start_here.ipynb")
    assert "COURSE_LANG=zh_CN" in dry_run("lab", "LANG=zh")
    assert "COURSE_LANG=zh_CN" in dry_run("lab", "COURSE_LANG=zh_CN")
    english = dry_run("lab", "LANG=C.UTF-8")
    assert english.endswith(" notebooks/00_start_here.ipynb") and "COURSE_LANG" not in english
    assert "--lang zh" in dry_run("playground", "LANG=zh")
    assert "--lang" not in dry_run("playground")
    assert "COURSE_LANG=zh_CN" in dry_run("check", "LANG=zh", "ONLY=01.scaled_scores")
    assert "COURSE_LANG" not in dry_run("check") and "--only" not in dry_run("check")
    assert dry_run("notebooks", "NB=02 03", "LANG=zh").endswith("notebooks 02 03 --lang zh")
    assert dry_run("notebooks", "NB=02").endswith("notebooks 02")  # both editions


def test_the_release_carries_both_readmes_and_the_chinese_notebooks(tmp_path):
    from course.handout import build

    release = build(tmp_path / "release")
    assert (release / "README.zh-CN.md").read_text() == (
        ROOT / "course" / "release" / "README.zh-CN.md").read_text()
    assert "README.zh-CN.md" in (release / "README.md").read_text()
    assert {p.name for p in (release / "notebooks" / "zh").glob("*.ipynb")} == {
        p.name for p in (ROOT / "notebooks" / "zh").glob("*.ipynb")}
    assert (release / "notebooks" / "zh" / "course_setup.py").exists()
    assert "messages:" not in (release / "Makefile").read_text()


def test_a_wrong_number_in_chinese_only_text_is_found(tmp_path):
    """Lesson 00's note for Chinese readers quotes a check line (marked zh-only, its numbers taken
    from README.md): the tolerance of the hidden cases there instead of the visible ones is
    named, and so is a number a translated cell adds to its English."""
    root = scratch_course(tmp_path)
    chinese = root / "notebooks" / "src" / "zh" / "00_start_here.py"
    text = chinese.read_text()
    assert text.count("<!-- zh-only: README.md -->") == 1 and text.count("容差 1e-09 + 1e-07") == 1
    text = text.replace("容差 1e-09 + 1e-07", "容差 1e-08 + 1e-06")
    text = text.replace("热身练习是 `batched_dot(a, b)`", "热身练习（约 5 分钟）是 `batched_dot(a, b)`")
    chinese.write_text(text)
    found = notebook_problems(root)
    note = next(i for i, c in enumerate(jupytext.read(chinese).cells) if "zh-only" in c.source)
    warmup = next(i for i, c in enumerate(jupytext.read(chinese).cells) if "约 5 分钟" in c.source)
    named = sorted(re.match(r"notebooks/src/zh/00_start_here.py cell (\d+): (\S+) (in a zh-only|is not)",
                            line).groups() for line in found)
    assert named == sorted([(str(note), "1e-06", "in a zh-only"), (str(note), "1e-08", "in a zh-only"),
                            (str(warmup), "5", "is not")]), found
    assert all("nor in README.md" in line for line in found if "zh-only passage" in line), found


def test_numbers_are_read_alike_in_both_languages():
    from course.zh_numbers import english_numbers, numbers, zh_only

    assert numbers("20,608 个参数，容差 1e-09，降为 1/11") == {20608.0, 1e-9, 1.0, 11.0}
    assert numbers("20608 and 1e-9") == {20608.0, 1e-9}
    assert {1.0, 2.0} <= english_numbers("a weight of ones, two heads")
    assert numbers('<!-- en="3f2a9c1b0d45" -->') == set()
    marked = zh_only("甲 <!-- zh-only: README.md, course/checks/core.py -->乙 1\n\n丙 2 <!-- zh-only -->丁 3<!-- /zh-only --> 戊")
    assert marked == [(["README.md", "course/checks/core.py"], "乙 1"), ([], "丁 3")]


def test_the_size_of_the_edition_is_a_count_anyone_can_rerun():
    done = subprocess.run([sys.executable, "-m", "course.drift", "--count"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = [line.split(None, 1) for line in done.stdout.strip().splitlines()]
    counts = {part: int(n.replace(",", "")) for n, part in rows}
    assert rows[-1][1] == "total" and counts["total"] == sum(n for p, n in counts.items() if p != "total")
    assert all(counts[f"notebooks/src/zh/{p.name} (markdown)"] > 100 for p in ZH_SOURCES)
    assert counts["course/locale/zh_CN/LC_MESSAGES/course.po (msgstr)"] > 5000
