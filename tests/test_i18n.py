"""The message catalog (course/i18n.py, course/messages.py): every message translated, none
stale, the language chosen by COURSE_LANG or set_language, fuzzy entries never shown."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from course import ROOT
from course import i18n
from course.i18n import CHINESE, ENGLISH, _, _n, compile_catalog, language, set_language
from course.messages import PENDING, extract, is_pending, problems, source_files, update


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


def test_pending_sources_are_part_2bs_only():
    """The checks, `make check`, the grader's confirmation and lesson 08 (some of whose files are
    still on its branch), nothing else."""
    for entry in PENDING:
        assert re.match(r"course/(checks/|progress\.py|confirm/)|.*(lesson08|lm_training|/08_)",
                        entry), entry
    files = [p.relative_to(ROOT).as_posix() for p in source_files()]
    pending = [f for f in files if is_pending(f)]
    assert not any(re.search(r"widgets/lesson0[0-7]|grading/|env_report|plots|/0[0-7]_", f)
                   for f in pending), pending


def test_a_message_of_a_pending_source_waits_and_one_also_used_elsewhere_does_not(tmp_path):
    root = scratch_catalog(tmp_path)
    progress, report = root / "course" / "progress.py", root / "course" / "env_report.py"
    progress.write_text(progress.read_text() + '\nfrom course.i18n import _\n_("only in make check")\n'
                        '_("in make check and the report")\n')
    report.write_text(report.read_text() + '\n_("in make check and the report")\n')
    found = problems(root)
    assert found == ["message not in the catalog yet (course/env_report.py): "
                     "'in make check and the report': run `make messages`"], found
    assert [m.id for m in extract(root, pending=True) if m.id] == ["only in make check"]
    assert update(root) is True and extract(root).get("only in make check") is None


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
