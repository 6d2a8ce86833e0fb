"""Lesson 07: the measurements behind the lesson's statements (course/transformer_demos.py)."""
import pytest
import torch

from course.transformer_demos import (VARIANTS, deep_stack, offset_map, operation_counts,
                                      predicted_offset_map, rnn_vs_attention, timing_verdict)
from solutions.mha import MultiHeadAttention
from solutions.transformer import DecoderBlock, sinusoidal_encoding


@pytest.mark.parametrize("d_model, base", [(8, 10.0), (16, 10000.0), (2, 10000.0)])
def test_predicted_rotation_maps_every_position(d_model, base):
    pe = sinusoidal_encoding(300, d_model, base=base)
    for k in (1, 3, 40):
        rotation = predicted_offset_map(d_model, k, base=base)
        torch.testing.assert_close(pe[:-k] @ rotation.T, pe[k:], atol=1e-12, rtol=0)
        # block-diagonal 2x2 rotations: orthogonal, nothing outside the blocks
        torch.testing.assert_close(rotation @ rotation.T, torch.eye(d_model, dtype=torch.float64))
        blocks = torch.block_diag(*[torch.ones(2, 2)] * (d_model // 2)).bool()
        if d_model > 2:
            assert rotation[~blocks].abs().max() == 0


def test_fitted_offset_map_is_the_rotation_where_the_data_determine_it():
    pe = sinusoidal_encoding(64, 8, base=10.0)
    fitted, residual = offset_map(pe[:31], 3)
    assert residual < 1e-10
    torch.testing.assert_close(fitted, predicted_offset_map(8, 3, base=10.0), atol=1e-10, rtol=0)


def test_deep_stack_shows_what_the_lesson_says():
    stacks = {v: deep_stack(v, depth=16, d=32) for v in VARIANTS}
    for result in stacks.values():
        assert len(result["activation rms"]) == 17 and len(result["gradient norm"]) == 16
    plain, residual = stacks["plain"], stacks["residual"]
    pre, post = stacks["pre-norm residual"], stacks["post-norm residual"]
    assert plain["activation rms"][-1] < 1e-3 * plain["activation rms"][0]  # fades
    assert plain["gradient norm"][0] < 1e-3 * pre["gradient norm"][0]
    assert residual["activation rms"][-1] > 10 * pre["activation rms"][-1]  # grows geometrically
    assert 1 < pre["activation rms"][-1] < 5  # grows slowly
    assert post["activation rms"][-1] == pytest.approx(1.0, abs=1e-3)  # pinned by the norm


def test_deep_stack_is_deterministic_and_refuses_unknown_wiring():
    assert deep_stack("pre-norm residual", depth=4, d=8) == deep_stack("pre-norm residual", depth=4, d=8)
    with pytest.raises(ValueError):
        deep_stack("sandwich", depth=2)


def test_operation_counts():
    counts = operation_counts(128, 64)
    assert counts["rnn sequential steps"] == 128 and counts["attention sequential steps"] == 1
    assert counts["rnn multiply-adds"] == 2 * 128 * 64 ** 2
    assert counts["attention multiply-adds"] == 4 * 128 * 64 ** 2 + 2 * 128 ** 2 * 64
    assert counts["score entries"] == 128 ** 2


def test_rnn_vs_attention_times_every_length():
    seconds = rnn_vs_attention(MultiHeadAttention(16, 4, 4), [4, 8], d=16, repeats=1)
    assert seconds["L"] == [4, 8]
    assert all(t > 0 for t in seconds["rnn"] + seconds["attention"])


@pytest.mark.parametrize("attention, peak, verdict", [
    ([1, 0.5, 2, 16], 64, "the RNN loop is faster there"),   # a run where the L² scores catch up
    ([1, 1, 1, 1], 256, "attention is faster there"),         # one where they never do
])
def test_timing_verdict_reads_the_measurement(attention, peak, verdict):
    """The lesson's verdict on RNN vs attention comes from the timings, whichever way they go."""
    lengths, rnn = [32, 64, 128, 256], [1, 2, 4, 8]
    ratio_line, slope_line = timing_verdict(lengths, rnn, attention)
    assert f"largest at L = {peak}" in ratio_line and ratio_line.endswith(verdict)
    assert slope_line.startswith("slope of log time against log L: RNN 1.00, attention for L >= 256")


def test_block_loads_a_state_dict_with_the_tiny_lm_names():
    """Lesson 08 loads trained blocks by these names: a round trip through state_dict works."""
    source, target = DecoderBlock(16, 2, 32), DecoderBlock(16, 2, 32)
    target.load_state_dict(source.state_dict())
    h = torch.randn(2, 5, 16)
    torch.testing.assert_close(target(h), source(h))
    assert set(source.state_dict()) == {
        "norm_attn.weight", "attn.linear_q.weight", "attn.linear_k.weight", "attn.linear_v.weight",
        "attn.linear_o.weight", "attn.linear_o.bias", "norm_ffn.weight", "ffn.0.weight",
        "ffn.0.bias", "ffn.2.weight", "ffn.2.bias"}
