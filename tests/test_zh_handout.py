"""The Chinese handout (`make handout LANG=zh`): the same code and the same grades as the English
one, with what the exercises say (docstrings, comments, hints, stub messages) in Chinese."""
from __future__ import annotations

import ast
import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course import ROOT
from course.handout import build, problems
from course.stub_text import pieces
from course.stub_message import parse_stub_message, stub_left, stub_message
from course.stubs import BEGIN, END, generate

HAN = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"(?<![\w.])[A-Za-z]{2,}(?![\w(])")  # an English word, not a code name


def wordy(text: str) -> bool:
    return len(WORD.findall(text)) >= 3


@pytest.fixture(scope="module")
def stubs() -> tuple[dict[str, str], dict[str, str]]:
    return generate(), generate(lang="zh")


def program(source: str) -> str:
    """The code of a stub: docstrings emptied, each stub message read back as (lesson, function,
    module) in whatever language it is written (comments are not in the AST at all)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0].value.value = ""
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                and isinstance(node.exc.args[0], ast.Constant) and isinstance(node.exc.args[0].value, str):
            stub = parse_stub_message(node.exc.args[0].value)  # NotImplementedError's, read back
            node.exc.args[0].value = repr(stub) if stub else "an error's message"
        elif isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args \
                and isinstance(node.exc.args[0], ast.JoinedStr):  # its {expressions}, in any order
            node.exc.args[0] = ast.Tuple([ast.Constant(e) for e in sorted(
                ast.dump(v) for v in node.exc.args[0].values if isinstance(v, ast.FormattedValue))])
    return ast.dump(tree)


def docstring_lines(source: str) -> list[tuple[str, int]]:
    """Each docstring of a stub (the module's, each function's and class's) and its line count."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
            text = ast.get_docstring(node, clean=False)
            found.append((getattr(node, "name", "module"), text.count("\n") if text else 0))
    return found


def test_a_chinese_stub_is_the_english_program(stubs):
    english, chinese = stubs
    assert english.keys() == chinese.keys()
    for name in english:
        assert program(chinese[name]) == program(english[name]), name
        # same shape: no docstring much shorter in Chinese (a paragraph left out), nor the rest
        # (Chinese is denser: a long docstring may take a line or two fewer)
        for (where, en_lines), (_, zh_lines) in zip(docstring_lines(english[name]),
                                                    docstring_lines(chinese[name]), strict=True):
            assert en_lines <= zh_lines + 3, (name, where, en_lines, zh_lines)
        en_rest = english[name].count("\n") - sum(n for _, n in docstring_lines(english[name]))
        zh_rest = chinese[name].count("\n") - sum(n for _, n in docstring_lines(chinese[name]))
        assert en_rest <= zh_rest + 5, name


def test_what_a_chinese_stub_says_is_chinese(stubs):
    """Every docstring, comment, hint and stub message (a text with three English words or more
    in the English stub) has Han characters in the Chinese one."""
    english, chinese = stubs
    for name, text in chinese.items():
        english_texts = [p for p in pieces(english[name]) if wordy(p.message)]
        chinese_texts = [p for p in pieces(text) if wordy(p.message) or HAN.search(p.message)]
        assert len(chinese_texts) >= len(english_texts) - 1, name
        left = [p.message[:70] for p in chinese_texts if not HAN.search(p.message)]
        assert left == [], f"{name}: still English: {left}"
        assert "# Hint:" not in text and ("# 提示：" in text) == ("# Hint:" in english[name]), name
        for message in re.findall(r'NotImplementedError\("([^"]*)"\)', text):
            assert HAN.search(message) and parse_stub_message(message), message


def test_the_errors_a_chinese_stub_raises_are_chinese(stubs):
    """The 8 errors the stubs' given code raises (a wrong gate, arch or init, a lesson-02 mask the
    helper cannot read, a block of 0...), in Chinese, their {expressions} unchanged."""
    english, chinese = stubs
    found = []
    for name in english:
        en = [p for p in pieces(english[name]) if p.kind == "error"]
        zh = [p for p in pieces(chinese[name]) if p.kind == "error"]
        assert len(en) == len(zh), name
        for a, b in zip(en, zh):
            assert HAN.search(b.message), (name, a.message)
            assert sorted(re.findall(r"\{[^{}]*\}", a.message)) == sorted(re.findall(r"\{[^{}]*\}", b.message))
            found.append(b.message)
        compile(chinese[name], name, "exec")
    assert len(found) == 8, found


def test_the_checks_read_a_stub_in_either_language():
    for lang in ("en", "zh"):
        message = stub_message("03", "MultiHeadAttention._attention", "mha.py", lang)
        assert parse_stub_message(f"it raised ({message})") == ("03", "MultiHeadAttention._attention", "mha")
        source = f'    raise NotImplementedError("{message}")\n'
        assert stub_left(source, "03", "MultiHeadAttention")
        assert stub_left(source, "03", "MultiHeadAttention._attention")
        assert not stub_left(source, "05", "MultiHeadAttention") and not stub_left(source, "03", "Multi")
    assert stub_message("03", "split_heads", "mha.py", "zh") == "第 03 课：在 exercises/mha.py 中写出 split_heads"


def test_the_chinese_handout(tmp_path):
    release = build(tmp_path / "release", lang="zh")
    assert problems(release) == []
    readme, english = (release / "README.md").read_text(), (release / "README.en.md").read_text()
    assert readme.startswith("# 注意力") and "[English](README.en.md)" in readme
    assert english.startswith("# Attention") and "[简体中文](README.md)" in english
    assert not (release / "README.zh-CN.md").exists()
    assert (release / "exercises" / "mha.py").read_text() == generate(lang="zh")["mha.py"]
    assert not (release / "solutions").exists()


def test_make_handout_lang_zh():
    done = subprocess.run(["make", "-n", "--no-print-directory", "handout", "OUT=/tmp/x", "LANG=zh"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().splitlines()[-1].endswith('--out "/tmp/x" --lang zh'), done.stdout
    done = subprocess.run(["make", "-n", "--no-print-directory", "handout", "OUT=/tmp/x"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "--lang" not in done.stdout


def partly_solved(tmp_path: Path, solved: set[str], bug: tuple[str, str] | None = None) -> Path:
    """A copy of solutions/ whose blocks of the lessons in `solved` are plain code (kept by the
    stub generator); `bug` replaces one line of code."""
    folder = tmp_path / "solutions"
    folder.mkdir(parents=True)
    for path in (ROOT / "solutions").glob("*.py"):
        out, keep = [], False
        for line in path.read_text().splitlines(keepends=True):
            begin = BEGIN.match(line)
            if begin and begin["lesson"] in solved:
                keep = True
                continue
            if keep and END.match(line):
                keep = False
                continue
            out.append(line)
        text = "".join(out)
        if bug and bug[0] in text:
            text = text.replace(*bug)
        (folder / path.name).write_text(text)
    return folder


def write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_a_class_graded_from_the_chinese_handout_gets_the_english_gradebook(tmp_path):
    """Four students, each handing in the same work twice, once from each handout: all done, a
    stub left in an exercise that others call, a bug, nothing. Lessons 00-02 (the grader and the
    checks read the stubs' messages to tell TODO, FAIL and BLOCKED apart)."""
    work = {"done": ({"00", "01", "02"}, None),
            "half": ({"00", "02"}, None),  # 01 left as stubs: 02's exercises call them
            "bug": ({"00", "01", "02"}, ("return (a * b).sum(dim=-1)", "return (a * b).sum()")),
            "none": (set(), None)}
    subs = tmp_path / "subs"
    for student, (solved, bug) in work.items():
        solutions = partly_solved(tmp_path / student, solved, bug)
        for lang in ("en", "zh"):
            write(subs / f"{student}-{lang}" / "exercises", generate(solutions, lang=lang))
    done = subprocess.run([sys.executable, "-m", "course.grading", "--submissions", str(subs),
                           "--out", str(tmp_path / "out"), "--lessons", "00-02"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    with open(tmp_path / "out" / "gradebook.csv", newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert len(rows) == 8
    for student in work:
        english, chinese = dict(rows[f"{student}-en"]), dict(rows[f"{student}-zh"])
        english.pop("student"), chinese.pop("student")
        assert chinese == english, student
    assert rows["done-en"]["total"] == rows["done-en"]["max"] != "0"
    assert rows["none-en"]["total"] == "0"
    assert 0 < float(rows["half-en"]["total"]) < float(rows["done-en"]["total"])
    assert rows["bug-en"]["00.batched_dot"] == "0" and rows["bug-en"]["01.stable_softmax"] == "1"


def quick_start(readme: Path) -> list[str]:
    """The commands of a README's quick start (its first ```bash block), comments left out."""
    block = re.search(r"```bash\n(.*?)```", readme.read_text(), re.S)[1]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def progress(folder: Path, *args: str) -> str:
    """What `make check LANG=zh` prints in `folder` (the command it runs, in this Python)."""
    done = subprocess.run([sys.executable, "-m", "course.progress", *args], cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(folder), "COURSE_LANG": "zh_CN",
                               "LANG": "C.UTF-8"},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_the_chinese_readme_quick_start_leads_to_a_first_pass_in_chinese(tmp_path):
    """README.zh-CN.md's quick start, followed: clone, `make handout OUT=... LANG=zh`, go there,
    `make lab LANG=zh` (the Chinese lesson 00) and `make check LANG=zh`; the exercise files say
    what they want in Chinese, and lesson 00's warm-up, once written, is the first PASS, reported
    in Chinese."""
    commands = quick_start(ROOT / "README.zh-CN.md")
    assert commands[0].startswith("git clone ") and commands[0].endswith("&& cd attention-course")
    handout = re.fullmatch(r"make handout OUT=(\S+) LANG=zh", commands[1])
    assert handout, commands
    assert commands[2] == f"cd {handout[1]}" and commands[3:] == ["make lab LANG=zh", "make check LANG=zh"]

    clone = tmp_path / "attention-course"
    clone.mkdir()
    out = (clone / handout[1]).resolve()  # beside the clone, as the README has it
    done = subprocess.run(["make", "--no-print-directory", "handout", f"OUT={out}", "LANG=zh"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    warmup = out / "exercises" / "warmup.py"
    assert HAN.search(warmup.read_text()) and 'NotImplementedError("第 00 课：' in warmup.read_text()
    assert not (out / "solutions").exists()

    def dry(*args: str) -> str:
        made = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=out,
                              capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        return made.stdout.strip().splitlines()[-1]
    assert dry("lab", "LANG=zh").endswith("notebooks/zh/00_start_here.ipynb")
    assert "COURSE_LANG=zh_CN" in dry("lab", "LANG=zh")
    assert re.search(r"COURSE_LANG=zh_CN \.venv/bin/python -m course\.progress( --warm)?$", dry("check", "LANG=zh"))

    before = progress(out, "--only", "00.batched_dot")
    assert "TODO" in before and "00.batched_dot" in before and HAN.search(before), before
    solved = generate(partly_solved(tmp_path / "work", {"00"}), lang="zh")["warmup.py"]
    warmup.write_text(solved)  # the student writes the warm-up
    after = progress(out, "--only", "00.batched_dot")
    assert re.search(r"^PASS +00\.batched_dot", after, re.M), after
    assert re.search(r"个练习中 1 个通过", after), after
