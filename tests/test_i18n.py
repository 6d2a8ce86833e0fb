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
from course.messages import extract, problems, update


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
