"""What the course runs on: versions, CUDA, Graphviz. Shown in lesson 00 and `python -m course.env_report`."""
from __future__ import annotations

import platform
import shutil
import subprocess
from importlib import metadata


def graphviz_dot() -> str | None:
    """`dot -V` of the Graphviz the course would use, or None when there is none."""
    path = shutil.which("dot")
    if path is None:
        return None
    try:
        done = subprocess.run([path, "-V"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stderr or done.stdout).strip().splitlines()[0] + f" ({path})"


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment_report() -> dict[str, str]:
    import torch

    cuda = (f"yes: {torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
            if torch.cuda.is_available() else "no (the course runs on CPU; GPU cells fall back)")
    report = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "CUDA GPU": cuda,
        "CPU threads torch uses": str(torch.get_num_threads()),
        "graphviz dot": graphviz_dot() or "not found (graphs are shown as DOT source instead)",
        "jupyterlab": _version("jupyterlab"),
        "ipywidgets": _version("ipywidgets"),
        "torchview": _version("torchview"),
        "nbval": _version("nbval"),
    }
    width = max(map(len, report))
    for key, value in report.items():
        print(f"{key:<{width}}  {value}")
    return report


if __name__ == "__main__":
    environment_report()
