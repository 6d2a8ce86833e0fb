"""Chinese figures never show tofu: every Chinese label has a glyph, no stored image holds a
missing-glyph box, and a Chinese build without a CJK font stops and says how to install one.

A CJK font is part of the course's set-up for tests (`make test` installs Debian's
fonts-noto-cjk, scripts/system_packages.sh); without one the glyph tests fail with the command
that installs it.
"""
from __future__ import annotations

import io
import warnings

import matplotlib
import nbformat
import pytest

from course import ROOT
from course import build as course_build
from course import fonts
from course.fonts import INSTALL, NoCJKFont, missing_glyphs, use_cjk_font
from course.glossary import catalog_texts
from course.tofu import notebook_images, notebook_problems, tofu_boxes

ZH_NOTEBOOKS = sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))


@pytest.fixture
def rc():
    """matplotlib's settings and the warning filters, restored after the test."""
    with matplotlib.rc_context(), warnings.catch_warnings():
        yield


def figure_png(labels: list[str], size: float = 10, dpi: int = 100) -> bytes:
    """A small plot with `labels` as title, axis labels and legend, as a lesson draws them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6, 3), dpi=dpi)
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    for n, label in enumerate(labels):
        ax.plot([0, 1], [n, n + 1], label=label)
    ax.set_title(labels[0], fontsize=size)
    ax.set_xlabel(labels[-1], fontsize=size)
    ax.set_ylabel(labels[len(labels) // 2], fontsize=size)
    ax.legend(fontsize=size * 0.8)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        figure.savefig(buffer, format="png")
    return buffer.getvalue()


LABELS = ["维度 c", "分数的方差", "softmax 饱和", "梯度消失", "层", "头", "峰值内存 (GB)"]


def test_every_chinese_text_the_course_prints_has_a_glyph(rc):
    """Each character of every translation in the catalog (figure titles, axis labels, legends,
    widget captions: every Chinese label of every lesson's figures is one of them) is drawn by a
    font, through matplotlib's fallback from DejaVu Sans to the CJK font."""
    if use_cjk_font() is None:
        pytest.fail(f"no CJK font here: Chinese figures would show boxes. {INSTALL}")
    texts = [text.text for text in catalog_texts()]
    assert len(texts) > 1000
    assert missing_glyphs(texts) == []


def test_without_a_cjk_font_every_chinese_character_is_missing(rc):
    """The same check fails where no CJK font is behind DejaVu Sans."""
    matplotlib.rcParams["font.family"] = ["DejaVu Sans"]
    assert missing_glyphs(["峰值内存 (GB)", "层 / 头"]) == sorted("峰值内存层头")


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stored_chinese_image_shows_missing_glyph_boxes(path):
    """Every figure and widget image stored in a Chinese notebook, searched for tofu."""
    assert notebook_problems(path) == [], "rebuild with a CJK font: `make notebooks LANG=zh NB=...`"


def test_the_chinese_notebooks_store_images():
    assert sum(len(notebook_images(path)) for path in ZH_NOTEBOOKS) >= 20


def test_the_tofu_finder_finds_boxes_and_only_boxes(rc):
    """Labels drawn without a CJK font: boxes, one per Chinese character drawn large enough; the
    same labels with the font, and the same figure in English: none."""
    matplotlib.rcParams["font.family"] = ["DejaVu Sans"]
    boxes = tofu_boxes(figure_png(LABELS))
    assert len(boxes) >= 5
    use_cjk_font()
    assert tofu_boxes(figure_png(LABELS)) == []
    assert tofu_boxes(figure_png(["dimension c", "variance of the scores", "layer", "head"])) == []


def test_every_chinese_character_of_the_catalog_drawn_with_the_font_is_no_box(rc):
    """No character the course prints is taken for a box, at the sizes the lessons draw (a glyph
    with a frame, or a part of one such as the 日 of 间, may look like a box; it is never taken
    for one unless the same picture is drawn three times at one size)."""
    if use_cjk_font() is None:
        pytest.fail(f"no CJK font here. {INSTALL}")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    characters = sorted({c for text in catalog_texts() for c in text.text if "\u4e00" <= c <= "\u9fff"})
    assert len(characters) > 500
    lines = ["".join(characters[i:i + 50]) for i in range(0, len(characters), 50)]
    for size in (7, 10, 14):
        figure = Figure(figsize=(13, len(lines) * size / 36), dpi=100)
        FigureCanvasAgg(figure)
        for n, line in enumerate(lines):
            figure.text(0.005, 1 - (n + 1) / (len(lines) + 1), line, fontsize=size)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        assert tofu_boxes(buffer.getvalue()) == [], size


def test_a_chinese_build_without_a_cjk_font_stops_with_the_command_that_installs_one(
        monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(fonts, "find_cjk_family", lambda: None)
    target = ROOT / "notebooks" / "zh" / "00_start_here.ipynb"
    before = target.read_bytes()
    with pytest.raises(NoCJKFont, match="apt-get install fonts-noto-cjk"):
        course_build.build(["00"], scratch=tmp_path / "course", languages=("zh",))
    assert not (tmp_path / "course").exists()  # nothing ran
    assert course_build.main(["notebooks", "00", "--lang", "zh"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sudo apt-get install fonts-noto-cjk" in err[0] and "conda" in err[0], err
    assert target.read_bytes() == before


def test_in_a_build_kernel_a_missing_glyph_is_an_error(monkeypatch, rc):
    """course_setup's use_cjk_font() in a kernel the build starts (STRICT): a character no font
    has raises matplotlib's warning; without STRICT it is shown, not silenced."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    def draw():
        figure = Figure()
        FigureCanvasAgg(figure)
        figure.text(0.1, 0.5, "\ue000")  # a private-use character: in no font
        figure.canvas.draw()

    monkeypatch.setenv(fonts.STRICT, "1")
    use_cjk_font()
    with pytest.raises(UserWarning, match="missing from font"):
        draw()
    monkeypatch.setattr(fonts, "find_cjk_family", lambda: None)
    with pytest.raises(NoCJKFont):
        use_cjk_font()


def test_without_strict_no_font_is_said_once_and_nothing_is_silenced(monkeypatch, rc, capsys):
    monkeypatch.delenv(fonts.STRICT, raising=False)
    monkeypatch.setattr(fonts, "find_cjk_family", lambda: None)
    assert use_cjk_font() is None
    assert "fonts-noto-cjk" in capsys.readouterr().err
    ignored = [f for f in warnings.filters if f[0] == "ignore" and f[1] is not None
               and "missing from" in f[1].pattern]
    assert ignored == []


def test_the_build_names_an_error_output_and_an_image_with_boxes(rc):
    matplotlib.rcParams["font.family"] = ["DejaVu Sans"]
    import base64

    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("plot()")
    cell.outputs = [nbformat.v4.new_output("error", ename="UserWarning", evalue="Glyph 23618 missing from font(s) DejaVu Sans.", traceback=[]),
                    nbformat.v4.new_output("display_data", data={"image/png": base64.b64encode(figure_png(LABELS)).decode()})]
    notebook.cells = [cell]
    found = course_build.glyph_problems(notebook, "x.ipynb")
    assert len(found) == 2 and "UserWarning" in found[0] and "missing-glyph box" in found[1], found
