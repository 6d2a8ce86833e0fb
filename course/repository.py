"""The course's public repository: one setting for the README's badges and every lesson's
Colab cell.

    python -m course.repository                 # print it, and whether every place agrees
    python -m course.repository OWNER/NAME      # set it everywhere

The setting lives in `COURSE_REPO_URL` of `notebooks/src/_header.py` (the Colab cell must know
it before the course is cloned, so it cannot import it). Setting it rewrites that line, the same
line in every lesson notebook's first cell (no re-execution needed: outside Colab the cell does
nothing), and the READMEs' Binder and Colab badges and `git clone` line.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from course import ROOT

HEADER = ROOT / "notebooks" / "src" / "_header.py"
URL = re.compile(r"https://github\.com/(?P<repo>[\w.-]+/[\w.-]+?)\.git")
BADGES = re.compile(r"(mybinder\.org/v2/gh/|colab\.research\.google\.com/github/)(?P<repo>[\w.-]+/[\w.-]+)(?=/)")
NAME = re.compile(r"[\w.-]+/[\w.-]+")


def current(root: Path = ROOT) -> str:
    """'owner/name' as set in notebooks/src/_header.py."""
    found = URL.search((root / "notebooks" / "src" / "_header.py").read_text())
    if not found:
        raise ValueError("notebooks/src/_header.py holds no COURSE_REPO_URL = https://github.com/OWNER/NAME.git")
    return found["repo"]


def blob_url(path: str, root: Path = ROOT) -> str:
    """A file of the course on its repository's web page (GitHub renders notebooks)."""
    return f"https://github.com/{current(root)}/blob/main/{path}"


def places(root: Path = ROOT) -> list[Path]:
    return [root / "notebooks" / "src" / "_header.py", root / "README.md", root / "README.zh-CN.md",
            *sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb")),
            *sorted((root / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))]


def patterns(path: Path) -> list[re.Pattern]:
    """How `path` names the repository: a README by its badges and its clone URL."""
    return [BADGES, URL] if path.name.startswith("README") else [URL]


def disagreements(root: Path = ROOT) -> list[str]:
    """Every place that names another repository than the setting."""
    repo = current(root)
    found = []
    for path in places(root):
        if not path.exists():
            continue
        text = path.read_text()
        for match in (m for pattern in patterns(path) for m in pattern.finditer(text)):
            if match["repo"] != repo:
                found.append(f"{path.relative_to(root)} names {match['repo']}, the setting is {repo}")
    return found


def set_repository(repo: str, root: Path = ROOT) -> list[Path]:
    """Write `repo` ('owner/name') into every place; return the files changed."""
    if not NAME.fullmatch(repo):
        raise ValueError(f"expected OWNER/NAME, got {repo!r}")
    changed = []
    for path in places(root):
        if not path.exists():
            continue
        text = new = path.read_text()
        for pattern in patterns(path):
            new = pattern.sub(lambda m: m.group(0).replace(m["repo"], repo, 1), new)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="show or set the course's GitHub repository")
    parser.add_argument("repo", nargs="?", help="OWNER/NAME to set everywhere")
    args = parser.parse_args(argv)
    if args.repo:
        for path in set_repository(args.repo):
            print(f"updated {path.relative_to(ROOT)}")
    print(f"repository: {current()}")
    problems = disagreements()
    for problem in problems:
        print("disagrees:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
