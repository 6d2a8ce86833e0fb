"""Imported by the first cell of every Chinese lesson (`import course_setup`, the same cell as in
the English edition: a kernel started in notebooks/zh/ finds this file first).

It does what notebooks/course_setup.py does (the course on sys.path, autoreload, the kernel's
bin folder on PATH) and then switches the course's messages to simplified Chinese, for this
kernel and for anything it starts (COURSE_LANG=zh_CN), and lets matplotlib draw Chinese text.
"""
import importlib.util
import os
from pathlib import Path

_ENGLISH_SETUP = Path(__file__).resolve().parent.parent / "course_setup.py"
_spec = importlib.util.spec_from_file_location("_course_setup_en", _ENGLISH_SETUP)
_spec.loader.exec_module(importlib.util.module_from_spec(_spec))

from course.fonts import use_cjk_font  # noqa: E402  (importable once the setup above ran)
from course.i18n import CHINESE, set_language  # noqa: E402

os.environ["COURSE_LANG"] = CHINESE
set_language(CHINESE)
use_cjk_font()
