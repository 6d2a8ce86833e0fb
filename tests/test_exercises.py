"""exercises/ mirrors solutions/, and the recorded reference results match the solutions."""
import ast

from course import ROOT
from course.reference import verify
from course.stubs import differences


def test_exercises_are_the_generated_stubs():
    assert differences() == [], "run `make stubs` (and commit exercises/)"


def _api(path):
    """Public names with their signatures and docstrings."""
    tree = ast.parse(path.read_text())
    api = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            signature = ast.unparse(node.args) if isinstance(node, ast.FunctionDef) else ""
            api[node.name] = (signature, ast.get_docstring(node))
    return api


def test_same_names_signatures_and_docstrings():
    for solution in sorted((ROOT / "solutions").glob("*.py")):
        exercise = ROOT / "exercises" / solution.name
        assert exercise.exists(), f"exercises/{solution.name} missing"
        assert _api(exercise) == _api(solution), solution.name


def test_recorded_reference_matches_solutions():
    assert verify() == [], "run `make reference`"


def test_recorded_public_hidden_cases_match_solutions():
    from course.confirm.public import verify as verify_public

    assert verify_public() == [], "run `make reference`"


def test_check_reports_a_missing_return():
    import pytest

    from course.checks import CheckFailed
    from course.checks.lesson00 import check_batched_dot

    def forgot_return(a, b):
        (a * b).sum(dim=-1)

    with pytest.raises(CheckFailed, match="return"):
        check_batched_dot(forgot_return)


def test_check_reports_a_crash_with_case_and_hint():
    import pytest

    from course.checks import CheckFailed
    from course.checks.lesson00 import check_batched_dot

    with pytest.raises(CheckFailed, match=r"(?s)case 'two vectors.*raised ZeroDivisionError.*hint"):
        check_batched_dot(lambda a, b: 1 / 0)


# ---------------------------------------------------------------- the engine's automatic probes

class _Linear(__import__("torch").nn.Module):
    """A tiny module for engine tests: y = linear(x), masked; `bug` selects a mistake."""

    def __init__(self, bug=None):
        import torch

        super().__init__()
        self.bug = bug
        self.linear = torch.nn.Linear(3, 2).double()

    def forward(self, x, mask=None):
        if self.bug == "in place mask":
            mask.logical_not_().logical_not_()  # back to the same values: not a change
            mask.unsqueeze_(0)
        if self.bug == "detached":
            return (self.linear(x) * mask[..., None]).detach() + x.sum() * 0.0
        return self.linear(x) * mask[..., None]


class _InPlaceMask(_Linear):
    def __init__(self):
        super().__init__("in place mask")


class _Detached(_Linear):
    def __init__(self):
        super().__init__("detached")


def _module_check():
    import torch

    from course.checks import Case, Check
    from course.checks.inputs import fill_parameters, randn, with_gradients

    def run(cls):
        module = fill_parameters(cls(), seed=1)
        mask = torch.tensor([True, False, True, True])
        return with_gradients(lambda x: module(x, mask=mask), {"x": randn(4, 3, seed=2)}, module)

    return Check(id="xx.module", target="m:_Linear", lesson="xx",
                 cases=[Case("gradients", run, hint="the case's own hint")])


class _Live:
    """A reference computed from a given implementation."""

    def __init__(self, impl):
        self.impl = impl

    def outputs(self, check, case):
        import torch

        from course.checks.outputs import as_outputs
        with torch.no_grad():
            return as_outputs(case.run(self.impl))


def test_engine_catches_a_module_changing_a_keyword_argument_in_place():
    import pytest

    from course.checks import CheckFailed

    check = _module_check()
    check(_Linear, reference=_Live(_Linear), quiet=True)
    with pytest.raises(CheckFailed, match=r"(?s)input `mask` in place.*now has shape"):
        check(_InPlaceMask, reference=_Live(_Linear), quiet=True)


def test_engine_names_a_cut_gradient():
    import pytest

    from course.checks import CheckFailed

    with pytest.raises(CheckFailed, match=r"no gradient reaches linear\.weight, linear\.bias"):
        _module_check()(_Detached, reference=_Live(_Linear), quiet=True)


def test_engine_names_squeezed_size1_axes():
    import pytest

    from course.checks import CheckFailed
    from course.checks.lesson00 import check_batched_dot

    with pytest.raises(CheckFailed, match="size-1 axes were dropped"):
        check_batched_dot(lambda a, b: (a * b).sum(dim=-1).squeeze())


def test_engine_accepts_a_view_of_an_input():
    """Returning the input itself, or a view of it, is not modifying it."""
    from course.checks.lesson04 import check_broadcastable_bias

    def aligned(bias, scores_ndim):
        for _ in range(scores_ndim - bias.ndim):
            bias = bias.unsqueeze(-4)
        return bias

    check_broadcastable_bias(aligned, quiet=True)
