"""An IPython extension for the English strict nbval run: what each cell prints, and the same
text with the course's messages in Chinese.

tests/test_notebooks.py loads it into the kernel of an English lesson (COURSE_CATALOG_RECORD
names the file to write); tests/zh_outputs.py then checks the Chinese notebook's committed
outputs against what it wrote.

How: course.i18n's `_` and `_n` are wrapped. They return what they returned before (in English,
the message itself), as a `Message`: a str that also knows its Chinese. Rendering a Message
(`.format`, `%`, a format spec in an f-string, course.columns.pad, which pads by display width)
renders the Chinese with the same values (values that are messages in their Chinese form) and
returns the English text as a plain str, as before. sys.stdout's and sys.stderr's writes are
watched: each write shows in Chinese the renderings of the cell that are pending, made before
it and not yet shown or put into a longer rendering. So a label made after a print (for a
figure), or shown once in a table's header, does not translate the same words in plain text
printed later. The record, one JSON object a line:

    {"cell": source}                                   before each cell runs
    {"en": English, "zh": Chinese}                     a rendering whose two texts differ
    {"stream": "stdout", "en": text[, "zh": text]}     a write, and its Chinese where it differs
    {"error": ..., "msgid": ..., "zh": ...}            a Chinese template that cannot take the
                                                       values (the Chinese notebook would raise)

The kernel's outputs stay the English ones, which nbval compares as always.
"""
from __future__ import annotations

import json
import os
import re
import sys

from course import columns, i18n

_record = None
_chinese = None
_rendered: dict[str, str] = {}  # English text -> Chinese text, of every rendering so far
# [English, Chinese] of this cell's renderings not printed yet; a write uses up those it shows
_pending: list[list[str]] = []


def _write(**entry) -> None:
    _record.write(json.dumps(entry, ensure_ascii=False) + "\n")
    _record.flush()


def _note(english: str, chinese: str) -> list[str] | None:
    """Write the rendering down; its pending entry (None if both texts are the same)."""
    if english == chinese:
        return None
    _rendered[english] = chinese
    entry = [english, chinese]
    _pending.append(entry)
    _write(en=english, zh=chinese)
    return entry


def _use_up(entry) -> None:
    """A rendering went into a longer one: it is not printed on its own."""
    for index, pending in enumerate(_pending):
        if pending is entry:
            del _pending[index]
            return


def _in_chinese(value):
    """A value put into a Chinese template: a message (or a rendering of one) in Chinese."""
    if isinstance(value, Message):
        _use_up(value.entry)
        return value.zh
    if isinstance(value, str):
        _use_up(next((e for e in _pending if e[0] == value), None))
        return _rendered.get(value, value)
    return value


def _translated(text: str) -> str:
    """`text` with the pending renderings it shows in Chinese (longest first, in one pass; each
    rendering used once, and then no longer pending)."""
    found = [entry for entry in _pending if entry[0] in text]
    if not found:
        return text
    used = []

    def chinese(match):
        entry = next((e for e in found if e[0] == match.group(0)
                      and not any(e is u for u in used)), None)
        if entry is None:  # shown more often than rendered
            return match.group(0)
        used.append(entry)
        return entry[1]

    keys = sorted({entry[0] for entry in found}, key=len, reverse=True)
    text = re.sub("|".join(map(re.escape, keys)), chinese, text)
    for entry in used:
        _use_up(entry)
    return text


class Message(str):
    """The English text of a message, which also knows its Chinese (`zh`) and its pending
    rendering as it is (`entry`)."""

    zh: str
    entry: list[str] | None

    def _render(self, english: str, render_chinese) -> str:
        _use_up(self.entry)
        try:
            chinese = render_chinese()
        except Exception as error:  # the Chinese template does not fit the values
            _write(error=f"{type(error).__name__}: {error}", msgid=str(self), zh=self.zh)
            return english
        _note(english, chinese)
        return english

    def format(self, *args, **kwargs) -> str:
        english = str.format(self, *args, **kwargs)
        return self._render(english, lambda: self.zh.format(
            *map(_in_chinese, args), **{k: _in_chinese(v) for k, v in kwargs.items()}))

    def format_map(self, mapping) -> str:
        english = str.format_map(self, mapping)
        return self._render(english, lambda: self.zh.format_map(
            {k: _in_chinese(v) for k, v in mapping.items()}))

    def __mod__(self, values) -> str:
        english = str.__mod__(self, values)
        if isinstance(values, tuple):
            chinese_values = tuple(map(_in_chinese, values))
        elif isinstance(values, dict):
            chinese_values = {k: _in_chinese(v) for k, v in values.items()}
        else:
            chinese_values = _in_chinese(values)
        return self._render(english, lambda: self.zh % chinese_values)

    def __format__(self, spec: str) -> str:  # f"{message:<12}": padded in its own language
        english = str.__format__(self, spec)
        if spec:
            return self._render(english, lambda: format(self.zh, spec))
        return english

    def __reduce__(self):  # pickled (sent to another process) as the plain str it is
        return str, (str(self),)


def _message(english: str, chinese: str) -> Message:
    message = Message(english)
    message.zh = chinese
    message.entry = _note(english, chinese)  # pending as it is (printed, put into an f-string)
    return message


def _recorded_pad(pad):
    """course.columns.pad, which pads by display width: a message, or a rendering of one (a
    plain str by then, e.g. `_("yes, {ratio:.1f}x lower").format(...)`), is padded in each
    language (the Chinese is wider or narrower than the English: its own padding)."""
    def recorded(text, size, align="<"):
        english = pad(text, size, align)
        if isinstance(text, Message):
            return text._render(english, lambda: pad(text.zh, size, align))
        if isinstance(text, str) and text in _rendered:
            _use_up(next((e for e in _pending if e[0] == text), None))
            _note(english, pad(_rendered[text], size, align))
        return english
    recorded.__doc__ = pad.__doc__
    return recorded


def _watch(stream, name: str) -> None:
    """Record each write to `stream` with its Chinese, for this cell (IPython puts its own
    write, which keeps the cell's output in its history, around each cell, and takes it away
    after: so this is done before each cell, inside IPython's)."""
    write = getattr(stream.write, "__wrapped__", stream.write)  # never wrapped twice

    def recorded_write(text, *args, **kwargs):
        if isinstance(text, str) and text:
            chinese = _translated(text)
            _write(stream=name, en=text, **({"zh": chinese} if chinese != text else {}))
        return write(text, *args, **kwargs)

    recorded_write.__wrapped__ = write
    stream.write = recorded_write


def _before_cell(info) -> None:
    _pending.clear()
    _watch(sys.stdout, "stdout")
    _watch(sys.stderr, "stderr")
    _write(cell=info.raw_cell)


def load_ipython_extension(ipython) -> None:
    global _record, _chinese
    _record = open(os.environ["COURSE_CATALOG_RECORD"], "a", encoding="utf-8")
    _chinese = i18n.translations(i18n.CHINESE)
    english_, english_n = i18n._, i18n._n

    def _(message: str) -> str:
        return _message(english_(message), _chinese.gettext(message))

    def _n(singular: str, plural: str, n: int) -> str:
        return _message(english_n(singular, plural, n), _chinese.ngettext(singular, plural, n))

    _.__doc__, _n.__doc__ = english_.__doc__, english_n.__doc__
    i18n._, i18n._n = _, _n
    columns.pad = _recorded_pad(columns.pad)
    ipython.events.register("pre_run_cell", _before_cell)
