"""What the course runs on: versions, CUDA, Graphviz. Shown in lesson 00 and `python -m course.env_report`."""
from __future__ import annotations

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
    return (done.stderr or done.stdout).strip().splitlines()[0] + f" ({_shown_path(path)})"


def _shown_path(path: str) -> str:
    """`path` as the learner knows it: inside the course's environment, from the environment's
    folder on (.venv/bin/dot), not where the machine keeps it."""
    prefix = Path(sys.prefix)
    try:
        return Path(path).relative_to(prefix.parent).as_posix() if Path(path).is_relative_to(prefix) else path
    except ValueError:
        return path


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return _("not installed")


# printed labels of the report's rows (the package names stay as they are)
LABELS = {"CUDA GPU": N_("CUDA GPU"), "CPU threads torch uses": N_("CPU threads torch uses"),
          "graphviz dot": N_("graphviz dot")}


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
