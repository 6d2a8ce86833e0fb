"""The learner's language for every message the course prints (English or simplified Chinese).

    from course.i18n import _, N_
    hint = N_("divide by sqrt(c)")            # marked for the catalog, translated where shown
    print(_("{n} of {total} exercises pass").format(n=3, total=24))

`_` translates now, in the current language; `N_` only marks a string for extraction (a hint
stored in a Case is translated when the message is built, so the language can change at run
time). Placeholders are filled after translation, so a catalog entry keeps them. Check ids and
the words PASS, FAIL, BLOCKED and TODO are never translated: the grader and instructors read them.

The language: COURSE_LANG (`zh_CN`, `zh`, `en`), else English. Catalog loading lands with the
Chinese edition; until then `_` returns its argument.
"""
from __future__ import annotations

import os

ENGLISH = "en"
CHINESE = "zh_CN"
_ALIASES = {"zh": CHINESE, "zh_cn": CHINESE, "zh-cn": CHINESE, "zh_hans": CHINESE,
            "en": ENGLISH, "en_us": ENGLISH, "en_gb": ENGLISH, "c": ENGLISH}
_forced: str | None = None


def normalise(value: str | None) -> str:
    """'zh', 'zh-CN', 'zh_CN.UTF-8' -> 'zh_CN'; anything unknown -> 'en'."""
    if not value:
        return ENGLISH
    key = value.split(".")[0].strip().lower()
    return _ALIASES.get(key, CHINESE if key.startswith("zh") else ENGLISH)


def language() -> str:
    """The language messages are printed in now."""
    return _forced or normalise(os.environ.get("COURSE_LANG"))


def set_language(value: str | None) -> None:
    """Force a language for this process (None: back to COURSE_LANG)."""
    global _forced
    _forced = normalise(value) if value else None


def _(message: str) -> str:
    """`message` in the current language."""
    return message


def N_(message: str) -> str:
    """Mark `message` for the catalog without translating it yet."""
    return message
