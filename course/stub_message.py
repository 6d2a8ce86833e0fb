"""The message a stub raises, in the learner's language, and how the checks read it back.

A stub's body raises `NotImplementedError("lesson 03: write split_heads in exercises/mha.py")`
(in a Chinese handout: "第 03 课：在 exercises/mha.py 中写出 split_heads"). The checks read the
lesson, the function and the file back from it (course/checks/depends.py: which exercise is still
a stub, and whether a failing check only meets the stub of an exercise it calls), in whichever
language of the catalog the stub was written.
"""
from __future__ import annotations

import re

from course.i18n import CHINESE, ENGLISH, N_, normalise, translations

# what a stub raises: the checks read the lesson, the function and the file back from it
STUB_MESSAGE = N_("lesson {lesson}: write {function} in exercises/{filename}")


def stub_message(lesson: str, function: str, filename: str, lang: str = ENGLISH) -> str:
    """What the stub of `function` raises, in `lang`."""
    return translations(normalise(lang)).gettext(STUB_MESSAGE).format(
        lesson=lesson, function=function, filename=filename)


def _pattern(template: str) -> re.Pattern:
    pattern = re.escape(template)
    for name, group in (("lesson", r"(?P<lesson>\d\d)"), ("function", r"(?P<function>[\w.]+)"),
                        ("filename", r"(?P<module>\w+)\.py")):
        pattern = pattern.replace(re.escape("{" + name + "}"), group)
    return re.compile(pattern)


def parse_stub_message(text: str) -> tuple[str, str, str] | None:
    """(lesson, function, module) of a stub's message in any language of the catalog, or None."""
    for lang in (ENGLISH, CHINESE):
        match = _pattern(translations(lang).gettext(STUB_MESSAGE)).search(text)
        if match:
            return match["lesson"], match["function"], match["module"]
    return None


def stub_left(source: str, lesson: str, attribute: str) -> bool:
    """Whether `source` still raises the stub of `attribute` (or of one of its methods) for
    `lesson`, in any language."""
    for message in re.findall(r'NotImplementedError\("([^"]*)"\)', source):
        found = parse_stub_message(message)
        if found and found[0] == lesson and (found[1] == attribute or found[1].startswith(attribute + ".")):
            return True
    return False
