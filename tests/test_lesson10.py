"""Lesson 10: the three linear-attention forms and the two decayed forms agree (float64, 1e-12,
forward and backward), memory is predicted to the byte, the traps happen where the lesson says,
Nyström with one landmark is lesson 05's global attention, the recall experiment's model is the
lesson's code and its shipped results re-check, lesson 09's figures are read from its outputs, and
the widget's compute functions hold."""
import math

import pytest
import torch

from course.lessons import lesson10, lesson10_recall as recall
from course.widgets.lesson10 import (FORMS, SEQUENCE, draw_routes, routes_explorer, row_weights,
                                     state_numbers)
from solutions.linear import (decayed_attention, decayed_recurrent, feature_map,
                              iterative_pinv, landmark_means, linear_attention,
                              linear_attention_chunked, linear_attention_cumsum,
                              linear_attention_recurrent, nystrom_attention)
from solutions.mha import MultiHeadAttention, merge_heads, split_heads


def _qkv(L=200, d=8, e=5, batch=(2, 3), seed=0, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*batch, L, c, generator=generator, dtype=torch.float64) * s
                 for c, s in ((d, scale), (d, scale), (e, 1.0)))


def _relative(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def _forward_and_gradients(form, inputs, weights):
    leaves = [t.clone().requires_grad_(True) for t in inputs]
    out = form(*leaves)
    return (out.detach(), *torch.autograd.grad((out * weights).sum(), leaves))


@pytest.mark.parametrize("chunk", [1, 7, 64, 500])
def test_three_linear_forms_agree_to_1e_12_forward_and_backward(chunk):
    q, k, v = _qkv()
    weights = torch.randn(2, 3, 200, 5, dtype=torch.float64)
    reference = _forward_and_gradients(linear_attention, (q, k, v), weights)
    for form in (lambda *t: linear_attention_recurrent(*t)[0],
                 lambda *t: linear_attention_chunked(*t, chunk=chunk), linear_attention_cumsum):
        for mine, theirs in zip(_forward_and_gradients(form, (q, k, v), weights), reference):
            assert _relative(mine, theirs) < 1e-12


def test_linear_forms_at_1024_and_gradcheck():
    q, k, v = _qkv(L=1024, d=16, e=16, batch=(1,), seed=1)
    quadratic = linear_attention(q, k, v)
    assert (linear_attention_chunked(q, k, v, 64) - quadratic).abs().max() < 1e-12
    assert (linear_attention_recurrent(q, k, v)[0] - quadratic).abs().max() < 1e-12
    small = [t[:, :9, :3].clone().requires_grad_(True) for t in (q, k, v)]
    for form in (linear_attention, lambda *t: linear_attention_recurrent(*t)[0],
                 lambda *t: linear_attention_chunked(*t, chunk=4)):
        assert torch.autograd.gradcheck(form, small)


def test_two_decayed_forms_agree_to_1e_12_forward_and_backward():
    q, k, v = _qkv(seed=2)
    log_a = torch.log(0.3 + 0.7 * torch.rand(2, 3, 200, dtype=torch.float64,
                                             generator=torch.Generator().manual_seed(3)))
    weights = torch.randn(2, 3, 200, 5, dtype=torch.float64)
    mine = _forward_and_gradients(lambda *t: decayed_recurrent(*t)[0], (q, k, v, log_a), weights)
    theirs = _forward_and_gradients(decayed_attention, (q, k, v, log_a), weights)
    for a, b in zip(mine, theirs):
        assert _relative(a, b) < 1e-12
    small = [t[:1, :1, :8].clone().requires_grad_(True) for t in (q, k, v, log_a)]
    assert torch.autograd.gradcheck(decayed_attention, small)
    assert torch.autograd.gradcheck(lambda *t: decayed_recurrent(*t)[0], small)


def test_states_continue_across_calls():
    q, k, v = _qkv(L=12, batch=(2,))
    whole, (S, z) = linear_attention_recurrent(q, k, v)
    first, state = linear_attention_recurrent(q[:, :5], k[:, :5], v[:, :5])
    second, (S2, z2) = linear_attention_recurrent(q[:, 5:], k[:, 5:], v[:, 5:], state=state)
    assert (torch.cat([first, second], 1) - whole).abs().max() < 1e-12
    assert (S2 - S).abs().max() < 1e-12 and (z2 - z).abs().max() < 1e-12


def test_half_precision_outputs_stay_finite_and_follow_the_dtype():
    generator = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 1024, 64, generator=generator) for _ in range(3))
    exact = linear_attention(q, k, v)
    for dtype, tolerance in ((torch.float16, 1e-3), (torch.bfloat16, 1e-2)):
        for form in (linear_attention, lambda *t: linear_attention_recurrent(*t)[0],
                     lambda *t: linear_attention_chunked(*t, chunk=64)):
            out = form(*(t.to(dtype) for t in (q, k, v)))
            assert out.dtype == dtype and torch.isfinite(out).all()
            assert (out.float() - exact).abs().max() < tolerance + tolerance * exact.abs().max()


def test_the_float16_normaliser_overflows_between_512_and_1024():
    found = lesson10.first_overflow(range(64, 1025, 64), d=64)
    assert all(found) and all(512 < L <= 1024 for L in found)
    assert all(torch.isfinite(lesson10.normaliser_float16(512, 64, s)).all() for s in range(5))


def test_the_cumulative_product_trap():
    half = lesson10.cumulative_product_trap(0.5, 1200)
    assert half["zero"] == 150 and half["nan row"] == 150  # 0.5^150 = 2^-150 rounds to 0
    nine = lesson10.cumulative_product_trap(0.9, 1200)
    assert nine["ratio one"] < nine["zero"]  # the silent 1.0 comes first
    assert lesson10.cumulative_product_trap(0.5, 1200, torch.float64)["zero"] == 1075
    # and the log-space form stays finite there, in float32
    q, k, v = (t[:1, :1].float() for t in _qkv(L=200, d=4, e=3))
    log_a = torch.full((1, 1, 200), math.log(0.5))
    assert torch.isfinite(decayed_attention(q, k, v, log_a)).all()


def test_memory_recurrence_and_chunks_flat_cumsum_linear_predicted_equals_measured():
    forms = {"recurrence": lambda q, k, v: linear_attention_recurrent(q, k, v)[0],
             "chunked": lambda q, k, v: linear_attention_chunked(q, k, v, chunk=8),
             "cumsum": linear_attention_cumsum}
    table = lesson10.memory_of(forms, [16, 32, 64], lambda L: (4, L, 32))
    assert lesson10.agree(table, within=0.01)
    beyond = {name: [table[name, L][0].peak - 4 * L * 32 * 4 for L in (16, 32, 64)]
              for name in forms}
    assert beyond["recurrence"][0] == beyond["recurrence"][1] == beyond["recurrence"][2]
    assert beyond["chunked"][1] == beyond["chunked"][2]
    assert beyond["cumsum"][1] == 2 * beyond["cumsum"][0] and \
        beyond["cumsum"][2] == 2 * beyond["cumsum"][1]


def test_one_landmark_is_lesson_05_global_attention():
    torch.manual_seed(14)
    x = torch.randn(2, 10, 16, dtype=torch.float64)
    padding = torch.ones(2, 10, dtype=torch.bool)
    padding[1, 7:] = False
    module = MultiHeadAttention(16, 4, 4, is_global=True).double()
    with torch.no_grad():
        q = split_heads(module.linear_q(x), 4)
        k = module.linear_k(x).unsqueeze(-3).expand(2, 4, 10, 4)
        v = module.linear_v(x).unsqueeze(-3).expand(2, 4, 10, 4)
        mine = module.linear_o(merge_heads(nystrom_attention(q, k, v, 1, padding.unsqueeze(-2))))
        assert (mine - module(x, attention_mask=padding)).abs().max() < 1e-12


def test_nystrom_is_softmax_at_m_equal_l_with_an_exact_inverse_and_padding_is_invisible():
    q, k, v = _qkv(L=24, d=4, e=3, batch=(2,))
    exact = torch.softmax(q @ k.transpose(-2, -1) / 2, dim=-1) @ v
    assert (nystrom_attention(q, k, v, 24, inverse=torch.linalg.pinv) - exact).abs().max() < 1e-9
    mask = torch.ones(2, 24, dtype=torch.bool)
    mask[:, 18:] = False
    padded = nystrom_attention(q, k, v, 3, mask)
    assert (padded[:, :18] - nystrom_attention(q[:, :18], k[:, :18], v[:, :18], 3)).abs().max() \
        < 1e-12
    assert (landmark_means(q, 3, mask) - landmark_means(q[:, :18], 3)).abs().max() < 1e-12
    # the iterative inverse of a matrix that has one is close to it
    a = torch.softmax(torch.randn(5, 5, dtype=torch.float64), dim=-1) + torch.eye(5)
    assert (iterative_pinv(a, 30) @ a - torch.eye(5)).abs().max() < 1e-9


def test_the_recall_model_mixes_with_the_lessons_code():
    generator = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 4, 20, 16, generator=generator) for _ in range(3))
    log_a = -torch.rand(2, 4, 20, generator=generator)
    causal = torch.ones(20, 20, dtype=torch.bool).tril()
    from solutions.attention import scaled_dot_product_attention

    assert torch.equal(recall.linear_attention(q, k, v), linear_attention(q, k, v))
    assert torch.equal(recall.decayed_attention(q, k, v, log_a), decayed_attention(q, k, v, log_a))
    assert torch.equal(recall.softmax_attention(q, k, v, causal),
                       scaled_dot_product_attention(q, k, v, mask=causal))


def test_recall_batches_and_state_sizes():
    tokens, targets = recall.make_batch(5, 3, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (3, 15)
    assert (targets[:, :10] == -100).all() and (targets[:, 10:] >= recall.KEYS).all()
    for row in range(3):  # each question's answer is the value that followed that key
        pairs = dict(zip(tokens[row, 0:10:2].tolist(), tokens[row, 1:10:2].tolist()))
        assert [pairs[key] for key in tokens[row, 10:].tolist()] == targets[row, 10:].tolist()
    config = recall.Config()
    assert recall.state_numbers(recall.Config(mixer="linear"), 144) == 4 * (16 * 16 + 16)
    assert recall.state_numbers(config, 144) == 2 * 144 * 64


def test_shipped_recall_results_recheck():
    shipped = lesson10.load_recall()
    for kind, (stored, now) in lesson10.recheck_recall(shipped).items():
        assert stored == now, kind
    table = lesson10.recall_table(shipped)
    assert set(table) == set(recall.MIXERS)
    steps = {run["config"]["steps"] for run in shipped["runs"].values()}
    assert len(steps) == 1  # every run trained for the same number of steps


def test_lesson09_figures_are_read_from_its_outputs():
    figures = lesson10.lesson09_figures()
    assert figures["tiled", "training"][3] == pytest.approx(2.0)
    assert figures["tiled", "training"][:3] == ("<", 2.0, True)
    assert figures["naive", "training"][:3] == (">", 3.5, True)
    assert figures["naive", "training"][3] > 3.5
    assert figures["kept GB"]["naive"] > 100 * figures["kept GB"]["tiled"]


def test_widget_compute_functions():
    assert state_numbers("linear: recurrence", 10, 64) == state_numbers("linear: recurrence",
                                                                        100_000, 64)
    assert state_numbers("softmax: scores", 1024) == 1024 ** 2
    assert state_numbers("linear: cumsum", 2000) == 2 * state_numbers("linear: cumsum", 1000)
    assert set(FORMS) >= {"softmax: scores", "linear: recurrence", "Nyström"}
    one = row_weights(20, 1)
    assert torch.allclose(one["nystrom"], row_weights(3, 1)["nystrom"])  # one landmark: one row
    for weights in (one["softmax"], one["linear"]):
        assert weights.shape == (SEQUENCE,) and (weights > 0).all()
        assert abs(float(weights.sum()) - 1) < 1e-12
    many = row_weights(20, SEQUENCE, sharpness=1.5)
    assert (many["nystrom"] - many["softmax"]).abs().max() < 0.05
    box = routes_explorer()
    box.redraw()
    from course.widgets.base import render_png
    assert render_png(draw_routes, figsize=(10, 4), L=4096, d=64, m=8, row=20, sharpness=1.5)


def test_phi_is_positive_and_is_exp_below_zero():
    x = torch.linspace(-5, 5, 101, dtype=torch.float64)
    assert (feature_map(x) > 0).all()
    below = x < 0
    assert torch.allclose(feature_map(x)[below], torch.exp(x[below]))
