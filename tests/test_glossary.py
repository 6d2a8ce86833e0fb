"""The Chinese glossary (docs/zh/TERMINOLOGY.md) is data, and every Chinese text follows it.

course/glossary.py reads the glossary's table (English | 中文 | 不用 (never) | why) and scans every
Chinese source: the lesson sources, both Chinese READMEs, docs/zh/ and every msgstr of the
catalog. Needs nothing beyond the course's own requirements (Babel reads the catalog).
"""
from __future__ import annotations

import re
import shutil

import pytest

from course import ROOT
from course.glossary import CATALOG, GLOSSARY, READMES, ascii_quotes, clashes, sources, terms


# Chinese sources whose prose is being rewritten as a whole: their clashes are known (the
# rewrite removes them) and checked apart, so that the rest of the edition stays held to the
# glossary meanwhile; once a source has none left, take it out of here
PENDING_REWRITE: tuple[str, ...] = ()


def settled(found: list[str]) -> list[str]:
    """The clashes outside the sources pending their rewrite."""
    return [line for line in found if not line.startswith(PENDING_REWRITE)]


def term(english: str):
    return next(t for t in terms() if t.english == english)


def test_the_glossary_table_is_data():
    rows = terms()
    assert len(rows) > 80
    assert all(t.english and t.chinese and t.why is not None for t in rows)
    for row in rows:
        for pattern in row.patterns():  # every never-word compiles ...
            assert not pattern.search(row.chinese), row  # ... and is not the chosen rendering
    assert len({t.english for t in rows}) == len(rows), "one row per English term"


def test_the_decided_terms_and_their_never_words():
    sink = term("attention sink")
    assert sink.chinese.startswith("注意力汇点") and "汇点" in sink.chinese
    assert {"汇聚", "注意力池", "注意力陷阱"} <= set(sink.never)
    assert "结论" in term("the paper's claim").never and term("the paper's claim").chinese.startswith("论断")
    assert "结论" in term("our verdict (reproduced or not)").never
    assert "评分器" in term("the grader").never and term("the grader").chinese == "评分程序"
    why = (ROOT / GLOSSARY).read_text()
    assert "d2l-zh" in why and "attention *pooling*" in why  # the reason is written down
    assert term("chunking (AF2's, lesson 05: a few columns or slices at a time)").chinese.startswith("分块")
    tiling = term("tiling, tiled attention (FlashAttention, lesson 09: the L × L scores in tiles inside one slice)")
    assert tiling.chinese.startswith("逐块") and "分块注意力" in tiling.never
    assert term("per head (each head its own)").chinese.startswith("各头独立")
    assert "逐头" in term("elementwise / headwise gate; static scalar").chinese
    assert term("paper-like / GPT-2-style build").chinese.startswith("类论文模型")
    for english, never in [("the rank rule (every gated seed below every baseline seed)", "秩规则"),
                           ("not shown (an effect the seeds do not show)", "未显示"),
                           ("functional test (does the model depend on it)", "功能测试"),
                           ("deep stack (of layers)", "深堆栈"), ("(notebook) cell", "单元格")]:
        assert never in term(english).never, english


def test_every_chinese_source_is_scanned():
    where = {t.where.split(":")[0] for t in sources()}
    lessons = {f"notebooks/src/zh/{p.name}" for p in (ROOT / "notebooks" / "src" / "zh").glob("*.py")}
    assert lessons <= where and len(lessons) >= 10
    assert {r.as_posix() for r in READMES} <= where
    assert GLOSSARY.as_posix() in where
    catalog = [t for t in sources() if t.where.startswith(CATALOG.as_posix())]
    assert len(catalog) > 500 and all(t.text for t in catalog)


def test_no_chinese_text_uses_a_never_word():
    found = settled(clashes())
    assert found == [], "\n".join(found)


def test_a_source_pending_its_rewrite_still_has_clashes():
    """Taken out of PENDING_REWRITE as soon as its rewrite leaves no clash."""
    found = clashes()
    for source in PENDING_REWRITE:
        assert any(line.startswith(source) for line in found), f"{source}: no clash left, unlist it"


def test_chinese_prose_uses_full_width_quotation_marks():
    found = ascii_quotes()
    assert found == [], "\n".join(found)


@pytest.fixture
def scratch(tmp_path):
    """The files the glossary reads, copied."""
    for path in [GLOSSARY, CATALOG, *READMES]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    shutil.copytree(ROOT / "notebooks" / "src" / "zh", tmp_path / "notebooks" / "src" / "zh")
    return tmp_path


def test_a_never_word_is_found_and_a_gloss_naming_something_else_is_not(scratch):
    lesson = scratch / "notebooks" / "src" / "zh" / "00_start_here.py"
    text = lesson.read_text()
    lesson.write_text(text + "\n# %% [markdown]\n# 这里的注意力汇聚很强，结论是“降低约十倍”。\n"
                      "# d2l 的注意力汇聚（attention pooling）是另一回事；注意力汇聚（attention sink）不是。\n")
    readme = scratch / "README.zh-CN.md"
    readme.write_text(readme.read_text() + '\n评分器说"完成"。\n')
    found = settled(clashes(scratch))
    words = [re.search(r": '([^']+)' for", line)[1] for line in found]
    assert sorted(words) == sorted(["汇聚", "结论", "降低约十倍", "汇聚", "评分器"]), found
    assert sum("(attention pooling)" in line for line in found) == 0
    assert any(line.startswith("README.zh-CN.md:") and "评分器" in line for line in found)
    quotes = ascii_quotes(scratch)
    assert len(quotes) == 1 and quotes[0].startswith("README.zh-CN.md:"), quotes


SCORE_NOUNS = ["直接对原始打分取 exp", "打分只依赖 i - j", "训练时打分要算两遍", "偏置 (2, 3, 4, 4) 对打分 (2, 3, 4, 4)",
               "l = Σ exp(打分 − m)", "能与打分 (*, q, k) 广播", "一次拿到整行打分：", "每个打分的大小"]
SCORE_VERBS = ["用查询给每个键打分：点积 q·k", "给每一对序列打分，每层", "q_h 对共享的 k 打分，在 L 个键上",
               "让自己的 300 个残基两两打分", "只作动词：给每个键打分"]


@pytest.mark.parametrize("text", SCORE_NOUNS)
def test_score_as_a_noun_is_found_in_any_form(text):
    (score,) = [p for p in term("score (noun), logit").patterns() if p.unless is not None]
    assert score.search(text), text


@pytest.mark.parametrize("text", SCORE_VERBS)
def test_score_as_the_verb_after_its_object_is_allowed(text):
    found = [p.search(text) for p in term("score (noun), logit").patterns()]
    assert not any(found), (text, found)


def test_the_sink_glossing_pooling_is_found_and_the_right_warning_is_not():
    sink = term("attention sink")
    wrong = "不要与 d2l 的注意力汇点（attention pooling）混淆"
    right = "不要与 d2l 中的“注意力汇聚”（attention pooling，即对值的加权汇总）混淆"
    assert any(p.search(wrong) for p in sink.patterns())
    assert [line for line in clashes_of(right)] == []


def clashes_of(text: str) -> list[str]:
    """The clashes of one line of lesson prose (through the same rules, glosses included)."""
    from course.glossary import _glossed_as_other

    found = []
    for row in terms():
        for pattern in row.patterns():
            found += [m[0] for m in pattern.finditer(text) if not _glossed_as_other(row, text, m.end())]
    return found


def test_a_never_word_in_a_catalog_entry_is_found(scratch):
    po = scratch / CATALOG
    text = po.read_text()
    assert text.count('msgstr "论断"') == 1
    po.write_text(text.replace('msgstr "论断"', 'msgstr "结论"'))
    found = settled(clashes(scratch))
    assert len(found) == 1 and "msgid 'claim'" in found[0] and "'结论'" in found[0], found
