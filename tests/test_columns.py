"""course/columns.py: padding by display width, as str.format pads by length."""
from course.columns import pad, width


def test_english_pads_as_str_format_does():
    for text in ("", "a", "variant", "share on BOS"):
        for size in (0, 5, 12, 13):
            assert pad(text, size, ">") == f"{text:>{size}}"
            assert pad(text, size, "<") == f"{text:<{size}}"
            assert pad(text, size, "^") == f"{text:^{size}}"


def test_a_chinese_character_takes_two_columns():
    assert width("变体") == 4 and width("变体 a") == 6
    assert pad("变体", 6, ">") == "  变体" and pad("变体", 7, "^") == " 变体  "
    assert pad("一个很长的标题", 4) == "一个很长的标题"
