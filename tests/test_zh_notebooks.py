"""The Chinese edition (notebooks/src/zh/, notebooks/zh/): in step with the English one.

Strict nbval of the Chinese notebooks runs in tests/test_notebooks.py with the English ones. Here:
the drift check (course/drift.py) passes; a Chinese source holds prose only and its notebook's
code cells are the English ones (course/zh_source.py), comments translated by the catalog; every
code span of the Chinese prose is one of the English lesson's; the committed notebooks are built
from their sources; the drift check really names a changed English cell and a changed message
(in a scratch copy); the converter turns a source of the old format into prose only.
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
from course.drift import (OLD_FORMAT, PENDING, READMES, Pair, cell_hash, code_without_comments,
                          notebook_problems, old_english, old_section, pair_problems, pairs,
                          readme_problems, sections, skeleton)
from course.playground import NOTEBOOKS as PLAYGROUND, render
from course.zh_numbers import zh_only
from course.zh_convert import convert
from course.zh_source import compose, is_prose_only

ZH_SOURCES = sources(lang="zh")


def test_every_english_lesson_has_its_chinese_source_in_step():
    found = notebook_problems()
    assert found == [], "out of date (see `python -m course.drift --old`):\n" + "\n".join(found)


def test_chinese_sources_hold_prose_only():
    """A Chinese source is its markdown cells; only lessons listed in OLD_FORMAT may still hold
    code of their own (the converter's next job)."""
    found, _missing = pairs()
    assert len(found) == len(ZH_SOURCES) + 1  # the lessons and the playground
    old = {pair.chinese.name[:2] for pair in found if not is_prose_only(pair.chinese)}
    assert old == OLD_FORMAT, "convert with `python -m course.zh_convert --convert NN`"


def test_code_cells_are_the_english_code():
    """The same code, strings and tags in both editions, by construction: a Chinese notebook's
    code cells are the English cells, their comments translated (the rest token for token)."""
    found, _missing = pairs()
    for pair in found:
        english = jupytext.read(pair.english).cells
        chinese = (compose(pair.chinese) if is_prose_only(pair.chinese) else jupytext.read(pair.chinese)).cells
        assert [c.cell_type for c in english] == [c.cell_type for c in chinese], pair.chinese.name
        for index, (en, zh) in enumerate(zip(english, chinese)):
            if en.cell_type == "code":
                where = f"{pair.chinese.name} cell {index}"
                assert code_without_comments(zh.source) == code_without_comments(en.source), where
                assert sorted(zh.metadata.get("tags", [])) == sorted(en.metadata.get("tags", [])), where
                if is_prose_only(pair.chinese):
                    assert zh.metadata == en.metadata, where


def test_the_comments_of_a_chinese_notebook_are_the_catalogs():
    """Lesson 03's code comments come from the catalog, in Chinese; its code is the English code
    to the byte once the comments are taken out."""
    english = ROOT / "notebooks" / "src" / "03_multi_head.py"
    cells = compose(ROOT / "notebooks" / "src" / "zh" / english.name).cells
    code = [c.source for c in cells if c.cell_type == "code"]
    assert any("# 还没写：在这里构造同样的掩码" in source for source in code)
    assert not any("not written yet" in source for source in code)
    for en, zh in zip([c.source for c in jupytext.read(english).cells if c.cell_type == "code"], code):
        strip = lambda text: [line.split("#")[0].rstrip() for line in text.splitlines()  # noqa: E731
                              if line.split("#")[0].strip()]
        assert strip(zh) == strip(en)


# a code span: a run of backticks, the text, the same run (Markdown's rule, no backtick inside)
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\1).)+?)(?<!`)\1(?!`)", re.S)
FENCED = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[^\n]*$", re.S | re.M)


def code_spans(markdown: str) -> list[str]:
    """The inline code spans of a markdown text, as Markdown renders them (a line break inside a
    span is a space; fenced code is no inline code)."""
    return [re.sub(r"\s*\n\s*", " ", m.group(0)) for m in CODE_SPAN.finditer(FENCED.sub("", markdown))]


def test_every_code_span_of_chinese_prose_is_one_of_the_english_lesson():
    """Code is code in both languages: a code span in a Chinese markdown cell is, byte for byte, a
    code span of its English lesson (a learner copies it). Text written for Chinese readers only
    (`<!-- zh-only -->`) has no English to match and is left out."""
    found, _missing = pairs()
    wrong = []
    for pair in found:
        english = {span for cell in jupytext.read(pair.english).cells if cell.cell_type == "markdown"
                   for span in code_spans(cell.source)}
        for index, cell in enumerate(jupytext.read(pair.chinese).cells):
            if cell.cell_type != "markdown":
                continue
            text = cell.source
            for _files, passage in zh_only(text):
                text = text.replace(passage, "")
            wrong += [f"{pair.chinese.name} cell {index}: {span}" for span in code_spans(text)
                      if span not in english]
    assert wrong == [], "code spans not in the English lesson:\n" + "\n".join(wrong)


def test_code_spans_are_read_as_markdown_reads_them():
    text = ("写 `arch=\"paper\"`，或 ``a `b` c``，`跨\n行` 也算。\n```python\n`not a span`\n```\n")
    assert code_spans(text) == ['`arch="paper"`', "``a `b` c``", "`跨 行`"]


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
    prose = [c for c in jupytext.read(lesson).cells if c.cell_type == "markdown"]
    cell = next(i for i, c in enumerate(prose) if "very smallest" in c.source)  # among the prose
    assert f"notebooks/src/zh/01_qkv_by_hand.py cell {cell} is stale" in done.stdout
    assert "English cell" in done.stdout and "The very smallest example" in done.stdout
    assert "message not in the catalog yet (course/env_report.py): 'not installed here'" in done.stdout
    assert "stale entry, no longer in the code: 'not installed'" in done.stdout
    assert len(done.stdout.strip().splitlines()) == 4, done.stdout  # the three, and the count


def test_the_drift_check_names_a_cell_without_translation_and_code_in_a_chinese_source(tmp_path):
    root = scratch_course(tmp_path)
    lesson = root / "notebooks" / "src" / "02_single_head.py"
    text = lesson.read_text()
    text = text.replace("# %% [markdown]\n# ## Shapes first",
                        "# %% [markdown]\n# A new English cell.\n\n# %% [markdown]\n# ## Shapes first", 1)
    lesson.write_text(text)
    chinese = root / "notebooks" / "src" / "zh" / "03_multi_head.py"
    chinese.write_text(chinese.read_text() + '\n# %% en="0123456789ab"\nL, N_head, c = 4, 2, 5\n')
    found = notebook_problems(root)
    assert any("02_single_head.py cell 2 (markdown 'A new English cell.') has no translation" in line
               for line in found), found
    assert any("zh/03_multi_head.py holds code cells" in line and "--convert 03" in line
               for line in found), found


# lesson 10 as it was first written in Chinese, in the old format (code cells of its own)
OLD_SOURCE = "6994c88"


def old_lesson10(folder, monkeypatch=None):
    """Lesson 10's English source and its old-format Chinese source, as they stood at OLD_SOURCE,
    written into `folder`/notebooks/src (and OLD_FORMAT naming lesson 10, when given monkeypatch)."""
    texts = []
    for path in ("notebooks/src/10_route_two.py", "notebooks/src/zh/10_route_two.py"):
        done = subprocess.run(["git", "show", f"{OLD_SOURCE}:{path}"], cwd=ROOT, capture_output=True,
                              text=True)
        if done.returncode != 0:
            pytest.skip("the old source is not in this checkout's history")
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(done.stdout)
        texts.append(done.stdout)
    if monkeypatch is not None:
        monkeypatch.setattr("course.drift.OLD_FORMAT", {"10"})
    return [folder / "notebooks/src/10_route_two.py", folder / "notebooks/src/zh/10_route_two.py"]


def test_a_lesson_still_in_the_old_format_has_its_code_compared(tmp_path, monkeypatch):
    """A lesson listed in OLD_FORMAT keeps its own code cells until converted: a changed line is
    named (lesson 10's first Chinese source, from git)."""
    root = scratch_course(tmp_path)
    _, chinese = old_lesson10(root, monkeypatch)
    text = chinese.read_text()
    assert text.count("import course_setup") == 1
    assert notebook_problems(root) == []
    chinese.write_text(text.replace("import course_setup", "import course_setup, os", 1))
    found = notebook_problems(root)
    assert len(found) == 1 and "code or tags differ" in found[0], found


def test_the_converter_turns_an_old_source_into_prose_and_its_comments_into_the_catalog(tmp_path):
    """Lesson 03 as it was written before (code cells with Chinese comments, from git), converted:
    the prose cells alone, and every comment's translation the catalog holds now."""
    old = subprocess.run(["git", "show", "ba369b9:notebooks/src/zh/03_multi_head.py"], cwd=ROOT,
                         capture_output=True, text=True)
    if old.returncode != 0:
        pytest.skip("the old source is not in this checkout's history")
    source = tmp_path / "zh" / "03_multi_head.py"
    source.parent.mkdir()
    source.write_text(old.stdout)
    english = tmp_path / "03_multi_head.py"  # the English source of the same commit
    english.write_text(subprocess.run(["git", "show", "ba369b9:notebooks/src/03_multi_head.py"],
                                      cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    done = convert(source, english)
    assert done.unmatched == []
    cells = jupytext.reads(done.source, fmt="py:percent").cells
    assert [c.source for c in cells] == [c.source for c in jupytext.reads(old.stdout, fmt="py:percent").cells
                                         if c.cell_type == "markdown"]
    assert all(c.cell_type == "markdown" and c.metadata["en"] for c in cells)
    from course.i18n import translations

    catalog = translations("zh_CN")
    assert len(done.translations) == 17
    assert all(catalog.gettext(en) == zh for en, zh in done.translations.items())


def test_the_converter_refuses_a_source_whose_code_differs(tmp_path):
    english, chinese = old_lesson10(tmp_path)
    chinese.write_text(chinese.read_text().replace("import course_setup", "import course_setup, os", 1))
    with pytest.raises(ValueError, match="its code differs"):
        convert(chinese, english)


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
    assert is_prose_only(chinese)


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
