"""The message catalog (course/i18n.py, course/messages.py): every message translated, none
stale, the language chosen by COURSE_LANG or set_language, fuzzy entries never shown."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from course import ROOT
from course import i18n
from course.i18n import CHINESE, ENGLISH, _, _n, compile_catalog, language, set_language
from course.messages import (LESSON_HINTS, PENDING, extract, in_f_strings, is_pending, problems,
                             source_files, update)


@pytest.fixture
def chinese():
    set_language(CHINESE)
    yield
    set_language(None)


def test_every_message_is_translated_and_no_entry_is_stale():
    found = problems()
    assert found == [], "run `make messages` and translate:\n" + "\n".join(found)


def test_the_catalog_is_what_make_messages_writes(tmp_path):
    """Running the extraction again changes nothing (the committed .po is up to date)."""
    for folder in ("course", "notebooks/src"):
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "reference_data"))
    assert update(tmp_path) is False, "course.po is not what `make messages` writes: run it"


def scratch_catalog(tmp_path):
    for folder in ("course", "notebooks/src"):
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "reference_data"))
    return tmp_path


def test_no_source_is_pending():
    """Every lesson, lesson 08's widgets, analysis and notebook included, is translated: nothing
    waits outside the catalog."""
    assert PENDING == ()
    assert not [f for f in (p.relative_to(ROOT).as_posix() for p in source_files()) if is_pending(f)]
    assert not [m.id for m in extract(pending=True) if m.id]


def test_a_message_of_a_pending_source_waits_and_one_also_used_elsewhere_does_not(tmp_path,
                                                                                  monkeypatch):
    """The mechanism for a new lesson (here a lesson 99's widget) whose sources wait for their
    translation."""
    monkeypatch.setattr("course.messages.PENDING", ("course/widgets/lesson99.py",))
    root = scratch_catalog(tmp_path)
    widget, report = root / "course" / "widgets" / "lesson99.py", root / "course" / "env_report.py"
    widget.write_text('from course.i18n import _\n_("only in lesson 99")\n'
                      '_("in lesson 99 and the report")\n')
    report.write_text(report.read_text() + '\n_("in lesson 99 and the report")\n')
    found = problems(root)
    assert found == ["message not in the catalog yet (course/env_report.py): "
                     "'in lesson 99 and the report': run `make messages`"], found
    assert [m.id for m in extract(root, pending=True) if m.id] == ["only in lesson 99"]
    assert update(root) is True and extract(root).get("only in lesson 99") is None


def test_the_checks_hints_written_as_plain_strings_are_in_the_catalog():
    """A case's `hint=` is no `_()` call: learner_texts() brings every one to the catalog."""
    from course.checks.lesson01 import check_scaled_scores
    from course.checks.registry import learner_texts

    found = {message.id: {file for file, _line in message.locations} for message in extract()
             if message.id}
    assert all(text in found for text in learner_texts())
    assert LESSON_HINTS in found[check_scaled_scores.cases[0].hint]


def test_a_message_inside_an_f_string_is_extracted():
    assert in_f_strings('x = f"  {_(\'hint\')}: {hint}"\ny = _("plain")\n') == ["hint"]
    assert "course/stub_text.py" in {file for file, _ in extract().get("hint").locations}


def test_a_failing_check_speaks_chinese_and_keeps_its_id_and_words(chinese):
    from course.checks import CheckFailed
    from course.checks.lesson01 import check_scaled_scores

    with pytest.raises(CheckFailed) as failure:
        check_scaled_scores(lambda q, k: q @ k.transpose(-2, -1), quiet=True)
    lines = str(failure.value).splitlines()
    assert lines[0] == "FAIL 01.scaled_scores, case '原始笔记的例子 q=[1,0]，键 [1,0]、[0,1]':"
    assert "  提示：这些分数相当于完全没有缩放：应除以 sqrt(c) = sqrt(2)，其中 c = q.shape[-1]" \
           "（通道数，不是序列长度）" in lines
    assert "  11 个用例中有 10 个失败：'原始笔记的例子 q=[1,0]，键 [1,0]、[0,1]'、'3 个查询、5 个键，" \
           "c=4：形状 (3, 5)'、'缩放探针：q = k = ones(16)，分数 16/sqrt(16) = 4'，还有 7 个" \
           in lines
    assert not any("{" in line for line in lines)


def test_make_check_wraps_chinese_at_80_columns(chinese):
    """A Chinese character takes two columns; a line breaks between characters, never before a
    closing mark."""
    from course.progress import wrap

    message = ("  提示：这些分数相当于完全没有缩放：应除以 sqrt(c) = sqrt(2)，其中 c = q.shape[-1]"
               "（通道数，不是序列长度）" + "，还有很多很多很多个字" * 8)
    wrapped = wrap(message).splitlines()
    columns = [sum(2 if "\u4e00" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef" else 1
                   for ch in line) for line in wrapped]
    assert len(wrapped) > 2 and max(columns) <= 80, (columns, wrapped)
    assert all(line.startswith("      ") and not line.strip()[0] in "，。：；）" for line in wrapped[1:])
    assert "".join(line.strip() for line in wrapped).replace(" ", "") == message.replace(" ", "")


def test_chinese_is_served_and_english_is_the_message_itself(chinese):
    assert _("not installed") == "未安装"
    assert _("a message nobody translated") == "a message nobody translated"
    set_language(ENGLISH)
    assert _("not installed") == "not installed"


def test_placeholders_are_filled_after_translation(chinese):
    text = _("yes: {name} (CUDA {version})").format(name="H200", version="12.8")
    assert text == "有：H200（CUDA 12.8）"


def test_plural_forms(chinese):
    assert _n("{n} case", "{n} cases", 3) == "{n} cases"  # untranslated: English plural rule
    set_language(ENGLISH)
    assert _n("{n} case", "{n} cases", 1) == "{n} case"


def test_course_lang_chooses_the_language(monkeypatch):
    set_language(None)
    for value, expected in [("zh_CN", CHINESE), ("zh", CHINESE), ("zh-CN.UTF-8", CHINESE),
                            ("en", ENGLISH), ("", ENGLISH), ("fr_FR", ENGLISH)]:
        monkeypatch.setenv("COURSE_LANG", value)
        assert language() == expected, value
    monkeypatch.setenv("COURSE_LANG", "zh_CN")
    assert _("not installed") == "未安装"


def test_a_fuzzy_translation_is_not_shown(tmp_path):
    po = tmp_path / "course.po"
    po.write_text('msgid ""\nmsgstr "Content-Type: text/plain; charset=utf-8\\n"\n\n'
                  '#, fuzzy\nmsgid "old English"\nmsgstr "旧的译文"\n\n'
                  'msgid "kept"\nmsgstr "保留"\n', encoding="utf-8")
    catalog = compile_catalog(po)
    assert catalog.gettext("old English") == "old English"
    assert catalog.gettext("kept") == "保留"


def test_extraction_finds_messages_of_course_and_of_the_lesson_sources():
    found = {message.id: {file for file, _line in message.locations} for message in extract() if message.id}
    assert "course/env_report.py" in found["not installed"]
    assert "notebooks/src/01_qkv_by_hand.py" in found["softmax saturates"]
    assert not any("notebooks/src/zh" in file for files in found.values() for file in files)


def test_the_environment_report_speaks_chinese(chinese, capsys):
    from course.env_report import environment_report

    report = environment_report()
    printed = capsys.readouterr().out
    assert "torch 使用的 CPU 线程数" in printed
    assert "CPU threads torch uses" in report  # the keys stay English for code that reads them


def test_the_catalog_is_compiled_once_per_language():
    i18n.translations.cache_clear()
    first = i18n.translations(CHINESE)
    assert i18n.translations(CHINESE) is first
    assert type(i18n.translations(ENGLISH)).__name__ == "NullTranslations"


def test_a_kernel_started_in_notebooks_zh_speaks_chinese():
    """The identical first cell `import course_setup` picks notebooks/zh/course_setup.py there."""
    code = ("import course_setup; from course.i18n import language, _; "
            "import os; print(language(), os.environ['COURSE_LANG'], _('not installed'))")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("COURSE_LANG", "PYTHONPATH")}
    zh = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "notebooks" / "zh", env=env,
                        capture_output=True, text=True, timeout=120)
    assert zh.stdout.split() == [CHINESE, CHINESE, "未安装"], zh.stderr
    code_en = "import course_setup; from course.i18n import language; print(language())"
    en = subprocess.run([sys.executable, "-c", code_en], cwd=ROOT / "notebooks", env=env,
                        capture_output=True, text=True, timeout=120)
    assert en.stdout.split() == [ENGLISH], en.stderr


def test_make_check_shows_the_whole_message_of_a_blocked_row_also_wrong_on_its_own(chinese):
    from course.progress import Row, table

    reason = _("by {roots}; {alone}").format(roots="01.scaled_scores",
                                             alone=_("also wrong on its own"))
    assert reason == "被 01.scaled_scores 阻塞；单独看也不对"
    rows = [Row("02", "02.attention_forward", "attention.py: scaled_dot_product_attention",
                "BLOCKED", reason, "BLOCKED 02.attention_forward by 01.scaled_scores:\n  ..."),
            Row("02", "02.single_head", "attention.py: SingleHeadAttention", "BLOCKED",
                _("by {roots}; {alone}").format(roots="01.scaled_scores",
                                                alone=_("right on its own")),
                "BLOCKED 02.single_head by 01.scaled_scores:\n  ...")]
    text = table(rows)
    assert "BLOCKED 02.attention_forward by 01.scaled_scores:" in text
    assert "BLOCKED 02.single_head by" not in text


def test_a_changed_lesson_hint_is_named_by_the_catalog_check(tmp_path):
    """A scratch copy whose lesson module changes a case's hint: its hints are read in a fresh
    process, and the new one waits for its translation while the old entry is stale."""
    root = scratch_catalog(tmp_path)
    lesson = root / "course" / "checks" / "lesson00.py"
    old = "multiply the vectors elementwise and add up the products"
    assert old in lesson.read_text()
    lesson.write_text(lesson.read_text().replace(old, "multiply elementwise, then sum"))
    found = problems(root)
    assert "message not in the catalog yet (course/checks/lesson*.py): 'multiply elementwise, " \
           "then sum': run `make messages`" in found, found
    assert f"stale entry, no longer in the code: {old!r}: run `make messages`" in found, found
