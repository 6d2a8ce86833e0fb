"""What the course runs on: versions, CUDA, Graphviz, a font for Chinese. Shown in lesson 00 and
`python -m course.env_report`. It names no folder of this machine (a lesson's stored output is
read on every other one): a program in the course's Python environment is said to be there."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from course.i18n import N_, _


def graphviz_dot() -> str | None:
    """`dot -V` of the Graphviz the course would use, or None when there is none."""
    path = shutil.which("dot")
    if path is None:
        return None
    try:
        done = subprocess.run([path, "-V"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stderr or done.stdout).strip().splitlines()[0] + " " + where(path)


def where(program: str) -> str:
    """Where a program lives, in brackets, without this machine's folders: in the course's Python
    environment, or its path with the home folder written ~."""
    folder = Path(program).parent.resolve()
    if folder in {Path(sys.executable).parent.resolve(), (Path(sys.prefix) / "bin").resolve()}:
        return _("(in the course's Python environment)")
    home = str(Path.home())
    return "(" + ("~" + program[len(home):] if program.startswith(home + os.sep) else program) + ")"


def cjk_font() -> str:
    """The font that draws Chinese text in figures, or the one command that installs one."""
    from course.fonts import find_cjk_family

    family = find_cjk_family()
    if family is not None:
        return family
    if sys.platform.startswith("linux"):
        command = ("" if os.geteuid() == 0 else "sudo ") + "apt-get install fonts-noto-cjk"
        return _("none: Chinese text in figures shows as boxes; install one (Debian, Ubuntu) "
                 "with: {command}").format(command=command)
    return _("none: Chinese text in figures shows as boxes; install a font with Chinese "
             "characters (Noto Sans CJK)")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return _("not installed")


# printed labels of the report's rows (the package names stay as they are)
LABELS = {"CUDA GPU": N_("CUDA GPU"), "CPU threads torch uses": N_("CPU threads torch uses"),
          "graphviz dot": N_("graphviz dot"), "CJK font": N_("font for Chinese")}


def environment_report() -> dict[str, str]:
    import torch

    cuda = (_("yes: {name} (CUDA {version})").format(name=torch.cuda.get_device_name(0),
                                                      version=torch.version.cuda)
            if torch.cuda.is_available() else _("no (the course runs on CPU; GPU cells fall back)"))
    report = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "CUDA GPU": cuda,
        "CPU threads torch uses": str(torch.get_num_threads()),
        "graphviz dot": graphviz_dot() or _("not found (graphs are shown as DOT source instead)"),
        "CJK font": cjk_font(),
        "jupyterlab": _version("jupyterlab"),
        "ipywidgets": _version("ipywidgets"),
        "torchview": _version("torchview"),
        "nbval": _version("nbval"),
    }
    # the keys stay English (code may read them); the printed labels are the learner's language
    labels = {key: _(LABELS.get(key, key)) for key in report}
    width = max(_display_width(label) for label in labels.values())
    for key, value in report.items():
        padding = " " * (width - _display_width(labels[key]))
        print(f"{labels[key]}{padding}  {value}")
    return report


def _display_width(text: str) -> int:
    """Columns `text` takes in a monospaced font (a CJK character takes two)."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


if __name__ == "__main__":
    environment_report()
