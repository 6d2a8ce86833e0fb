"""Correct code that a check of another kind could wrongly fail passes: tests/alt_exercises/variants/
holds each (kept in float64 and cast back, made on the input's device by other means, another
LayerNorm eps in the accepted range, a branch on the mask's values that the meta device cannot
run). Each file is appended to the solution module of the check its first line names."""
from __future__ import annotations

import importlib
import shutil
import sys

import pytest

from course import ROOT
from course.checks import all_checks

VARIANTS = ROOT / "tests" / "alt_exercises" / "variants"


def variants() -> dict[str, str]:
    """file name -> the check id its first line names."""
    found = {}
    for path in sorted(VARIANTS.glob("*.py")):
        first = path.read_text().splitlines()[0]
        assert first.startswith("# check: "), f"{path.name}: first line `# check: <id>`"
        found[path.name] = first.removeprefix("# check: ").strip()
    return found


@pytest.mark.parametrize("name", list(variants()))
def test_benign_variant_passes(name, tmp_path, monkeypatch):
    check = all_checks()[variants()[name]]
    package = tmp_path / "benign_variant"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    module = package / f"{check.module}.py"
    module.write_text(module.read_text() + "\n\n" + (VARIANTS / name).read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        impl = getattr(importlib.import_module(f"benign_variant.{check.module}"), check.attribute)
        check(impl, quiet=True)
    finally:
        for loaded in [m for m in sys.modules if m.startswith("benign_variant")]:
            del sys.modules[loaded]


def test_every_variant_names_a_check():
    assert set(variants().values()) <= set(all_checks())
