"""Chinese text in matplotlib figures: a CJK font behind matplotlib's own, where one is installed.

matplotlib's DejaVu Sans has no Chinese characters. `use_cjk_font()` appends the first CJK font
it finds (Noto Sans CJK / Source Han Sans, WenQuanYi, Microsoft YaHei, PingFang, SimHei...) to
`font.family`, so Latin text keeps its usual look and each Chinese character falls back to the
CJK font. Without any such font, Chinese characters show as boxes and matplotlib's
missing-glyph warnings are silenced, so a notebook prints the same text on every machine (on
Debian/Ubuntu `apt-get install fonts-noto-cjk` gives the real characters).
"""
from __future__ import annotations

import warnings

# family names as matplotlib reports them, best first
CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Source Han Sans CN",
                "WenQuanYi Micro Hei", "WenQuanYi Zen Hei", "Microsoft YaHei", "PingFang SC",
                "Hiragino Sans GB", "Heiti SC", "SimHei", "Droid Sans Fallback",
                "Noto Sans CJK JP", "Arial Unicode MS")
# file-name fragments of CJK fonts installed after matplotlib built its font cache
CJK_FILES = ("notosanscjk", "notoserifcjk", "sourcehansans", "wqy", "droidsansfallback")


def find_cjk_family() -> str | None:
    """The best CJK font family matplotlib can use here, or None."""
    from matplotlib import font_manager

    def known() -> set[str]:
        return {font.name for font in font_manager.fontManager.ttflist}

    names = known()
    if not any(family in names for family in CJK_FAMILIES):
        for path in font_manager.findSystemFonts():
            if any(part in path.lower().replace("-", "").replace("_", "") for part in CJK_FILES):
                try:
                    font_manager.fontManager.addfont(path)
                except (OSError, RuntimeError, ValueError):
                    continue
        names = known()
    return next((family for family in CJK_FAMILIES if family in names), None)


def use_cjk_font() -> str | None:
    """Let matplotlib draw Chinese text; return the CJK family used (None: none installed)."""
    import matplotlib

    family = find_cjk_family()
    if family is None:
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from (current )?font")
        return None
    current = matplotlib.rcParams["font.family"]
    current = [current] if isinstance(current, str) else list(current)
    if "sans-serif" in current:  # the default: name its first font, so the CJK one is a fallback
        current = [matplotlib.rcParams["font.sans-serif"][0] if f == "sans-serif" else f
                   for f in current]
    if family not in current:
        matplotlib.rcParams["font.family"] = current + [family]
    return family
