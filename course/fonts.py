"""Chinese text in matplotlib figures: a CJK font behind matplotlib's own, and never tofu.

matplotlib's DejaVu Sans has no Chinese characters. `use_cjk_font()` appends the first CJK font
it finds (Noto Sans CJK / Source Han Sans, WenQuanYi, Microsoft YaHei, PingFang, SimHei...) to
`font.family`, so Latin text keeps its usual look and each Chinese character falls back to the
CJK font. Where none is installed, a Chinese character would be drawn as a box (tofu): the
learner's kernel then says once how to install a font, and matplotlib's own missing-glyph warning
is shown, never silenced. A build of the Chinese notebooks (course/build.py sets STRICT for its
kernels) does not start without a font (`require_cjk_font`), and in its kernels a missing glyph is
an error, so no committed figure can hold tofu.

Where a font comes from: Debian/Ubuntu `apt-get install fonts-noto-cjk` (`make test` installs it,
scripts/system_packages.sh), conda `conda install -c conda-forge font-ttf-noto-cjk` (found in the
environment's fonts/ folder), Fedora `dnf install google-noto-sans-cjk-fonts`; Windows and macOS
have one already. `missing_glyphs(texts)` names every character matplotlib cannot draw here.
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

# family names as matplotlib reports them, best first
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
                "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Microsoft YaHei", "PingFang SC",
                "Hiragino Sans GB", "Heiti SC", "SimHei", "Droid Sans Fallback",
                "Noto Sans CJK JP", "Arial Unicode MS")
# file-name fragments of CJK fonts installed after matplotlib built its font cache
CJK_FILES = ("notosanscjk", "notoserifcjk", "notosanssc", "sourcehansans", "wqy", "droidsansfallback")
# matplotlib's warning for a character no font of the figure has (matplotlib/_text_helpers.py)
MISSING_GLYPH = r"Glyph \d+ .*missing from (current )?font"
STRICT = "COURSE_STRICT_GLYPHS"  # "1": no font is an error, and so is a missing glyph (builds)
INSTALL = ("sudo apt-get install fonts-noto-cjk  (conda: conda install -c conda-forge "
           "font-ttf-noto-cjk; Fedora: sudo dnf install google-noto-sans-cjk-fonts)")


class NoCJKFont(RuntimeError):
    """No font here draws Chinese: figures would show boxes."""


def _font_folders() -> list[str]:
    """Folders a conda environment keeps fonts in (conda-forge's font packages install there)."""
    prefixes = {sys.prefix, os.environ.get("CONDA_PREFIX", "")}
    return [str(Path(p) / "fonts") for p in prefixes if p and (Path(p) / "fonts").is_dir()]


def find_cjk_family() -> str | None:
    """The best CJK font family matplotlib can use here, or None."""
    from matplotlib import font_manager

    def known() -> set[str]:
        return {font.name for font in font_manager.fontManager.ttflist}

    names = known()
    if not any(family in names for family in CJK_FAMILIES):
        paths = font_manager.findSystemFonts() + font_manager.findSystemFonts(_font_folders())
        for path in paths:
            if any(part in path.lower().replace("-", "").replace("_", "") for part in CJK_FILES):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        names = known()
    return next((family for family in CJK_FAMILIES if family in names), None)


def require_cjk_font() -> str:
    """The CJK family matplotlib will use; NoCJKFont, with the command that fixes it, if none."""
    family = find_cjk_family()
    if family is None:
        raise NoCJKFont("the Chinese figures need a CJK font and matplotlib finds none here "
                        f"(Chinese would be drawn as boxes); install one: {INSTALL}")
    return family


def strict() -> bool:
    return os.environ.get(STRICT) == "1"


def use_cjk_font() -> str | None:
    """Let matplotlib draw Chinese text; return the CJK family used (None: none installed).

    Where STRICT is set (a build), no font raises NoCJKFont and a missing glyph raises
    matplotlib's warning as an error. Elsewhere, without a font, one line says how to get one and
    matplotlib's warnings show which characters are boxes."""
    import matplotlib

    if strict():
        warnings.filterwarnings("error", message=MISSING_GLYPH)
        family = require_cjk_font()
    else:
        family = find_cjk_family()
    if family is None:
        from course.i18n import _

        print(_("Chinese in the figures needs a CJK font, and this machine has none: it shows as "
                "boxes. Install one: {install}").format(install=INSTALL), file=sys.stderr)
        return None
    current = matplotlib.rcParams["font.family"]
    current = [current] if isinstance(current, str) else list(current)
    if "sans-serif" in current:  # the default: name its first font, so the CJK one is a fallback
        current = [matplotlib.rcParams["font.sans-serif"][0] if f == "sans-serif" else f
                   for f in current]
    if family not in current:
        matplotlib.rcParams["font.family"] = current + [family]
    return family


def missing_glyphs(texts) -> list[str]:
    """The characters of `texts` that matplotlib, as set up now, draws as a box: each text is
    drawn (Agg, upright and turned as a y label) and matplotlib's missing-glyph warnings read."""
    import re

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    characters = sorted({c for text in texts for c in text if not c.isspace()})
    lines = ["".join(characters[i:i + 60]) for i in range(0, len(characters), 60)]
    figure = Figure(figsize=(8, 2))
    FigureCanvasAgg(figure)
    for n, line in enumerate(lines):
        figure.text(0.01, n / max(len(lines), 1), line, fontsize=9, parse_math=False)
        figure.text(0.99, 0.5, line, fontsize=9, rotation=90, parse_math=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        figure.canvas.draw()
    missing = set()
    for warning in caught:
        found = re.match(r"Glyph (\d+) ", str(warning.message))
        if found and re.search(MISSING_GLYPH, str(warning.message)):
            missing.add(chr(int(found[1])))
    return sorted(missing)
