"""Correct code written differently passes every check and the lessons' strict nbval.

tests/alt_exercises/<module>.py holds other correct implementations of the exercises (einsum,
torch.softmax, reshape/unflatten for view, torch.where masking). Each is appended to its solution
module, so the lesson's given code stays and these definitions replace the exercise ones, as in a
student's file. Lesson 08's exercise (the G1 gate) is a small variation of lesson 03's and has none.
"""
import importlib
import shutil
import sys

import pytest

from course import ROOT
from course.checks import all_checks
from course.workspace import solutions_workspace
from tests.notebook_runs import NOTEBOOKS, run_nbval

ALT = ROOT / "tests" / "alt_exercises"
# every lesson but 08 (its exercise, the G1 gate, has no alternative file)
LESSONS = tuple(p.name[:2] for p in NOTEBOOKS if p.name[:2] != "08")
PACKAGE = "alt_exercises_under_test"


def alt_modules() -> dict[str, str]:
    """File name -> the solution's source with the alternative definitions appended."""
    return {path.name: (ROOT / "solutions" / path.name).read_text()
            + f"\n\n# ---- correct but different: tests/alt_exercises/{path.name} ----\n\n"
            + path.read_text()
            for path in sorted(ALT.glob("*.py"))}


def write_alt_exercises(folder) -> None:
    for name, source in alt_modules().items():
        (folder / name).write_text(source)


def test_alt_files_replace_exercises():
    """Every alternative module redefines names its solution defines (nothing misspelt)."""
    import ast

    for path in sorted(ALT.glob("*.py")):
        defined = {n.name for n in ast.parse(path.read_text()).body
                   if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        solution = {n.name for n in ast.parse((ROOT / "solutions" / path.name).read_text()).body
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
        assert defined and defined <= solution, f"{path.name}: {sorted(defined - solution)}"


@pytest.fixture(scope="module")
def alt_package(tmp_path_factory):
    root = tmp_path_factory.mktemp("alt")
    package = root / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    write_alt_exercises(package)
    sys.path.insert(0, str(root))
    try:
        yield PACKAGE
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


@pytest.mark.parametrize("check_id", [c.id for c in all_checks().values() if c.lesson in LESSONS])
def test_alt_implementation_passes_check(alt_package, check_id):
    check = all_checks()[check_id]
    if not (ALT / f"{check.module}.py").exists():
        pytest.skip(f"no alternative for {check.module}")
    module = importlib.import_module(f"{alt_package}.{check.module}")
    check(getattr(module, check.attribute), quiet=True)


@pytest.fixture(scope="module")
def alt_workspace(tmp_path_factory):
    workspace = solutions_workspace(tmp_path_factory.mktemp("with_alt_exercises") / "course")
    write_alt_exercises(workspace / "exercises")
    return workspace


@pytest.mark.slow
@pytest.mark.parametrize("notebook", [p.name for p in NOTEBOOKS if p.name[:2] in LESSONS])
def test_strict_nbval_with_alt_exercises(alt_workspace, notebook):
    done, seconds = run_nbval(alt_workspace, notebook)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    print(f"{notebook}: strict nbval with the alternative exercises passed in {seconds:.1f} s")


# Correct code that once lost a point (float64 tolerances on a float32 case, an eps
# the checks did not allow): each is appended to its solution module like an alternative file.
VARIANTS = {
    "07.rope: through complex numbers": ("transformer.py", '''
def apply_rope(x, positions=None, base=10000.0):
    """Pair (x_i, x_{i+c/2}) as the complex number x_i + i x_{i+c/2}, turned by e^(i theta)."""
    L, c = x.shape[-2], x.shape[-1]
    half = c // 2
    if positions is None:
        positions = torch.arange(L, device=x.device)
    theta = positions.to(device=x.device, dtype=torch.float64)[:, None] * base ** (
        -torch.arange(half, dtype=torch.float64, device=x.device) * 2 / c)
    turn = torch.polar(torch.ones_like(theta), theta)  # (L, c/2) complex128
    z = torch.complex(x[..., :half].double(), x[..., half:].double()) * turn
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
'''),
    "07.rope: angles in x's dtype": ("transformer.py", '''
def apply_rope(x, positions=None, base=10000.0):
    """cos and sin computed in x's own dtype (float32 for a float32 x)."""
    L, c = x.shape[-2], x.shape[-1]
    half = c // 2
    if positions is None:
        positions = torch.arange(L, device=x.device)
    inv_freq = base ** (-torch.arange(half, dtype=x.dtype, device=x.device) * 2 / c)
    angle = positions.to(device=x.device, dtype=x.dtype)[:, None] * inv_freq
    angle = torch.cat([angle, angle], dim=-1)
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * angle.cos() + rotated * angle.sin()
'''),
    "04.pair_bias: LayerNorm with eps 1e-6": ("bias.py", '''
class PairBias(nn.Module):
    """The pair bias with the LayerNorm eps of many LLM codebases (1e-6, not PyTorch's 1e-5)."""

    def __init__(self, c_z: int, N_head: int):
        super().__init__()
        self.layer_norm_z = nn.LayerNorm(c_z, eps=1e-6)
        self.linear_z = nn.Linear(c_z, N_head, bias=False)

    def forward(self, z):
        return self.linear_z(self.layer_norm_z(z)).movedim(-1, -3)
'''),
    "02.attention_weights: -1e9 for masked scores": ("attention.py", '''
def attention_weights(q, k, bias=None, mask=None):
    """A huge negative number instead of -inf, and the fully masked rows zeroed after."""
    scores = scaled_scores(q, k) if bias is None else scaled_scores(q, k) + bias
    if mask is None:
        return stable_softmax(scores, dim=-1)
    weights = stable_softmax(scores.masked_fill(~mask, -1e9), dim=-1)
    return torch.where(mask.expand_as(scores).any(dim=-1, keepdim=True), weights, 0.0)
'''),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_correct_variant_passes(variant, tmp_path, monkeypatch):
    file, source = VARIANTS[variant]
    package = tmp_path / "variant_under_test"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / file).write_text((ROOT / "solutions" / file).read_text() + "\n" + source)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        check = all_checks()[variant.split(":")[0]]
        check(getattr(importlib.import_module(f"variant_under_test.{check.module}"),
                      check.attribute), quiet=True)
    finally:
        for name in [m for m in sys.modules if m.startswith("variant_under_test")]:
            del sys.modules[name]
