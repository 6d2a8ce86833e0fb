"""The learner's language for every message the course prints (English or simplified Chinese).

    from course.i18n import _, N_
    hint = N_("divide by sqrt(c)")            # marked for the catalog, translated where shown
    print(_("{n} of {total} exercises pass").format(n=3, total=24))

`_` translates now, in the current language; `N_` only marks a string for extraction (a hint
stored in a Case is translated when the message is built, so the language can change at run
time); `_n(singular, plural, n)` picks the form for a count. Placeholders are filled after
translation, so a catalog entry keeps them. Check ids and the words PASS, FAIL, BLOCKED and TODO
are never translated: the grader and instructors read them.

The language: `set_language()` (the Chinese notebooks' `course_setup` calls it), else
COURSE_LANG (`zh_CN`, `zh`, `en`), else English. The catalog is Python's gettext:
course/locale/zh_CN/LC_MESSAGES/course.po, written by `make messages` (Babel extracts every
`_`, `_n` and `N_` of course/ and notebooks/src/; see course/messages.py), compiled in memory
with Babel the first time a Chinese message is needed, so a compiled file can never be stale.
"""
from __future__ import annotations

import gettext
import io
import os
from functools import lru_cache
from pathlib import Path

ENGLISH = "en"
CHINESE = "zh_CN"
DOMAIN = "course"
LOCALE = Path(__file__).resolve().parent / "locale"
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


def catalog_path(lang: str = CHINESE, root: Path = LOCALE) -> Path:
    return root / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def compile_catalog(po_path: Path) -> gettext.GNUTranslations:
    """The .po file compiled with Babel into a gettext catalog (fuzzy entries left out, as
    msgfmt does: a translation marked stale is not shown)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with open(po_path, "rb") as handle:
        catalog = read_po(handle)
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


@lru_cache(maxsize=None)
def translations(lang: str) -> gettext.NullTranslations:
    """The catalog of `lang`; English (and a language without a catalog) translates nothing."""
    path = catalog_path(lang)
    if lang == ENGLISH or not path.exists():
        return gettext.NullTranslations()
    return compile_catalog(path)


def _(message: str) -> str:
    """`message` in the current language."""
    return translations(language()).gettext(message)


def _n(singular: str, plural: str, n: int) -> str:
    """The form of `singular`/`plural` for `n`, in the current language (fill {n} afterwards)."""
    return translations(language()).ngettext(singular, plural, n)


def N_(message: str) -> str:
    """Mark `message` for the catalog without translating it yet."""
    return message


def listed(items) -> str:
    """`items` as a list in a sentence, in the current language ("a, b" / "a、b")."""
    # TRANSLATORS: what separates the items of a list of names in a sentence
    return _(", ").join(items)
