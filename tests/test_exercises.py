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
    from course.reference import verify_public

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


# ---------------------------------------------------------------------------- what a failure says

def test_a_crash_names_the_students_line_and_hides_the_course_frames(capsys):
    import traceback

    import pytest

    from course.checks import CheckFailed, show_traceback
    from course.checks.lesson00 import check_batched_dot

    def batched_dot(a, b):
        total = (a * b).sum(dim=-1)  # noqa: F841 - the student's typo is on the next line
        return totl  # noqa: F821

    with pytest.raises(CheckFailed) as failure:
        check_batched_dot(batched_dot)
    message = str(failure.value)
    assert "raised NameError: name 'totl' is not defined" in message
    assert "line " in message and "return totl" in message
    assert "hint: `totl` is not defined there" in message
    frames = traceback.extract_tb(failure.tb)
    assert len(frames) <= 3, [f.filename for f in frames]  # the caller, Check.__call__: no more
    assert failure.value.__cause__ is None and failure.value.__suppress_context__ is False
    show_traceback()
    assert "NameError" in capsys.readouterr().out


def test_a_float32_result_is_a_fail_with_a_hint_never_a_crash():
    """Lesson 02's probe once compared a float32 result with float64 ones through allclose."""
    import pytest
    import torch

    from course.checks import CheckFailed
    from course.checks.lesson02 import check_attention_weights
    from solutions.attention import attention_weights

    with pytest.raises(CheckFailed) as failure:
        check_attention_weights(lambda *a, **k: attention_weights(*a, **k).float(), quiet=True)
    assert "your result is float32" in str(failure.value)
    assert torch.get_default_dtype() == torch.float32  # nothing changed the default on the way


def test_a_float32_case_compares_with_float32_tolerances():
    import torch

    from course.checks.outputs import difference

    want = torch.tensor([1.0, 2.0, 3.0])
    assert difference("output", want, want + 1.2e-7, 1e-9, 1e-7) is None
    assert difference("output", want.double(), want.double() + 1.2e-7, 1e-9, 1e-7) is not None


def test_every_lesson_hint_is_listed_for_the_catalog():
    from course.checks.lesson01 import check_scaled_scores
    from course.checks.registry import learner_texts

    texts = learner_texts()
    assert check_scaled_scores.cases[0].hint in texts and len(texts) == len(set(texts))
