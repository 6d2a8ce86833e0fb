"""The engine's hints fire only on their evidence (course/checks/hints.py): NaN is named only
where a case has it, a gradient that never arrived is named as missing, a hint about gradients
names only those that differ, and the `where:` line does not flag what the callee takes as the
same (a -1e9 fill against the lesson's -inf)."""
import pytest

from course.checks import CheckFailed, all_checks
from tests.mutation import Mutant, mutated_module

MASKING = ('    scores = scores.masked_fill(~mask, float("-inf"))\n'
           "    # a row that is all -inf would give (-inf) - (-inf) = NaN; zero it instead\n"
           "    sees_something = mask.expand_as(scores).any(dim=-1, keepdim=True)\n"
           "    scores = scores.masked_fill(~sees_something, 0.0)\n"
           "    return stable_softmax(scores, dim=-1) * sees_something")


def message(check_id, file, find, replace) -> str:
    check = all_checks()[check_id]
    buggy = getattr(mutated_module(Mutant(check_id, file, find, replace, "", "probe")),
                    check.attribute)
    with pytest.raises(CheckFailed) as failure:
        check(buggy, quiet=True)
    return str(failure.value)


def line(text: str, start: str) -> str:
    return next((s.strip() for s in text.splitlines() if s.strip().startswith(start)), "")


@pytest.mark.parametrize("fill", ["-1e9", "torch.finfo(scores.dtype).min"])
def test_a_finite_fill_is_not_told_about_nan_nor_flagged_as_inf(fill):
    text = message("02.attention_weights", "attention.py", MASKING,
                   f"    scores = scores.masked_fill(~mask, {fill})\n"
                   "    return stable_softmax(scores, dim=-1)")
    assert "NaN" not in line(text, "hint:"), text
    assert "uniform" in line(text, "hint:") or "1/n" in line(text, "hint:"), text
    assert not line(text, "where:"), text  # -1e9 and -inf give the same softmax


def test_an_inverted_mask_is_not_called_zeroing_after_the_softmax():
    text = message("02.attention_weights", "attention.py",
                   'scores = scores.masked_fill(~mask, float("-inf"))',
                   'scores = scores.masked_fill(mask, float("-inf"))')
    assert "polarity" in line(text, "hint:") and "after the softmax" not in text, text
    assert "differs by up to inf" not in text, text


def test_a_gradient_that_never_arrives_is_missing_not_nan():
    text = message("02.attention_forward", "attention.py",
                   "return attention_weights(q, k, bias=bias, mask=mask) @ v",
                   "return attention_weights(q, k.detach(), bias=bias, mask=mask) @ v")
    assert "NaN" not in text, text
    assert "no gradient arrived" in text and "reaches k:" in line(text, "hint:"), text
    assert " q" not in line(text, "hint:") and " v" not in line(text, "hint:"), text


def test_nan_is_named_only_where_a_case_holds_it():
    text = message("02.attention_weights", "attention.py",
                   "    scores = scores.masked_fill(~sees_something, 0.0)\n"
                   "    return stable_softmax(scores, dim=-1) * sees_something",
                   "    return stable_softmax(scores, dim=-1)")
    assert "NaN" in line(text, "hint:") and "NaN" in text.splitlines()[1], text


def test_a_none_return_is_named_when_nothing_raised():
    text = message("07.rope", "transformer.py", "return x * cos + rotated * sin",
                   "out = x * cos + rotated * sin")
    assert "returned None" in line(text, "hint:"), text


def test_randomness_is_named_before_the_causal_probe():
    text = message("07.decoder_block", "transformer.py", "return h + self.ffn(self.norm_ffn(h))",
                   "return h + torch.nn.functional.dropout(self.ffn(self.norm_ffn(h)), p=0.1)")
    assert "random" in line(text, "hint:") and "causal" not in line(text, "hint:"), text
    assert ", called twice" in text.splitlines()[0], text
