"""Lesson 09: tiled attention equals naive attention (float64, 1e-12), its memory is linear and
predicted to the byte, the causal tiles compute at most L²/2 + L·block scores, the sliding window
equals an independent band (and three plausible errors in its given code do not), the widget's
slider follows the tile count, and the GPU record, the cache sweep and the FlexAttention record
hold."""
import math

import pytest
import torch

from course import ROOT

from course.lessons.lesson09 import flex, speed
from course.lessons.lesson09 import gpu as tiled_gpu
from course.lessons.lesson09.costs import attention_flops, count_scores, hbm_traffic
from course.memory import BlowUp, naive_column_attention
from course.lessons.lesson09.memory import (fit_line, fit_need, measure_call, predict_call,
                                 score_matrix_bytes, solve_need)
from course.widgets.lesson09 import (L, WINDOW, draw_tiles, tile_order, tile_walk,
                                     tiles_explorer, tiles_in_order)
from solutions.attention import scaled_dot_product_attention
from solutions.softmax import stable_softmax
from solutions.tiled import (causal_tiled_attention, key_blocks, online_softmax,
                             sliding_window_attention, tile, tiled_attention,
                             tiled_attention_forward)


def _inputs(seed=0, batch=(2, 3), L_q=37, L_k=29, c=8, c_v=5):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, L_q, c, generator=generator, dtype=torch.float64) * 3
    k = torch.randn(*batch, L_k, c, generator=generator, dtype=torch.float64)
    v = torch.randn(*batch, L_k, c_v, generator=generator, dtype=torch.float64)
    bias = torch.randn(batch[-1], L_q, L_k, generator=generator, dtype=torch.float64)
    mask = torch.rand(batch[0], 1, L_q, L_k, generator=generator) < 0.8
    mask[0, 0, 3] = False  # a query that sees no key
    return q, k, v, bias, mask


def test_key_blocks_and_tiles():
    assert key_blocks(10, 4) == [slice(0, 4), slice(4, 8), slice(8, 10)]
    assert key_blocks(3, 8) == [slice(0, 3)]
    t = torch.arange(12.0).view(1, 3, 4)
    assert tile(t, slice(1, 3), slice(0, 2)).tolist() == [[[4.0, 5.0], [8.0, 9.0]]]
    padding = torch.ones(2, 1, 4, dtype=torch.bool)
    assert tile(padding, slice(1, 3), slice(2, 4)).shape == (2, 1, 2)  # the query axis kept whole
    with pytest.raises(ValueError):
        key_blocks(5, 0)


@pytest.mark.parametrize("blocks", [(8, 8), (5, 7), (64, 64), (1, 3)])
def test_tiled_forward_and_backward_equal_naive_to_1e_12(blocks):
    q, k, v, bias, mask = _inputs()
    out, lse = tiled_attention_forward(q, k, v, bias, mask, *blocks)
    naive = scaled_dot_product_attention(q, k, v, bias=bias, mask=mask)
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8) + bias).masked_fill(~mask, -math.inf)
    assert (out - naive).abs().max() < 1e-12
    assert torch.equal(torch.isinf(lse), torch.isinf(torch.logsumexp(scores, -1)))
    assert (lse - torch.logsumexp(scores, -1)).nan_to_num(0).abs().max() < 1e-12
    assert out[0, :, 3].abs().max() == 0  # the blind query: zeros, as in lesson 02

    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    twins = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    weights = torch.randn_like(naive)
    mine = torch.autograd.grad((tiled_attention(*leaves, mask, *blocks) * weights).sum(), leaves)
    theirs = torch.autograd.grad((scaled_dot_product_attention(
        *twins[:3], bias=twins[3], mask=mask) * weights).sum(), twins)
    for a, b in zip(mine, theirs):
        assert a.shape == b.shape and (a - b).abs().max() < 1e-12


def test_gradcheck_with_a_broadcast_bias_and_a_padding_mask():
    q, k, v, _, _ = _inputs(batch=(2,), L_q=5, L_k=6, c=3, c_v=2)
    bias = torch.randn(5, 6, dtype=torch.float64)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])[:, None, :]
    inputs = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    assert torch.autograd.gradcheck(lambda *t: tiled_attention(*t, mask, 2, 4), inputs)


def test_online_softmax_equals_stable_softmax_on_wide_rows():
    x = torch.tensor([[-800.0, 0.0, 800.0, -30.0, 0.0, 10.0], [1000.0, 1001.0, 1002.0, -1e3, 5, 6]],
                     dtype=torch.float64)
    for dtype in (torch.float64, torch.float32):
        for block in (1, 2, 4, 6, 9):
            got = online_softmax(x.to(dtype), block)
            assert got.dtype == dtype
            torch.testing.assert_close(got, stable_softmax(x.to(dtype)), rtol=0,
                                       atol=1e-15 if dtype == torch.float64 else 1e-7)


def test_the_forward_never_holds_a_score_matrix_and_training_keeps_out_and_lse():
    shapes = [(2, 4, 512, 16)] * 3
    tiled = predict_call(lambda q, k, v: tiled_attention(q, k, v, None, None, 64, 64), shapes,
                         train=True)
    scores = score_matrix_bytes(2 * 4, 512, 512)
    assert tiled.peak < scores / 4
    assert tiled.held_after == 2 * 4 * 512 * (16 + 1) * 4  # output and logsumexp, exactly
    naive = predict_call(naive_column_attention, shapes, train=True)
    assert naive.held_after >= scores  # the softmax weights


@pytest.mark.parametrize("train", [False, True])
def test_prediction_on_meta_is_what_the_profiler_measures(train):
    fn = lambda q, k, v: tiled_attention(q, k, v, None, None, 32, 32)  # noqa: E731
    for length in (64, 96):
        predicted = predict_call(fn, [(2, 2, length, 8)] * 3, train=train)
        measured = measure_call(fn, [(2, 2, length, 8)] * 3, train=train)
        # a CPU run may allocate a few scalars more than meta sees (12 bytes here)
        assert predicted.peak == pytest.approx(measured.peak, rel=1e-3, abs=64)
        assert predicted.held_after == pytest.approx(measured.held_after, rel=1e-3, abs=64)


def test_the_tiled_need_is_linear_from_three_blocks_and_naive_quadratic():
    def need(L):
        return predict_call(lambda q, k, v: tiled_attention(q, k, v, None, None, 32, 32),
                            [(2, 2, L, 8)] * 3).peak
    line = fit_line(need, (96, 128))
    assert need(160) == pytest.approx(line[1] * 160 + line[2], rel=1e-12)
    a, b, d = fit_need(lambda L: predict_call(naive_column_attention, [(2, 2, L, 8)] * 3).peak)
    assert a > 0 and predict_call(naive_column_attention, [(2, 2, 300, 8)] * 3).peak == \
        pytest.approx(a * 300 ** 2 + b * 300 + d, rel=1e-12)
    assert solve_need((0.0, 2.0, 10.0), 30.0) == 10 and solve_need((1.0, 0.0, 0.0), 100.0) == 10


def _band_reference(q, k, v, window):
    """Sliding-window attention from its definition, not from the given code: dense float64
    attention with the mask |i - j| <= window written out."""
    i = torch.arange(q.shape[-2])
    mask = (i[:, None] - i[None, :]).abs() <= window
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~mask, -math.inf)
    return torch.softmax(scores, dim=-1) @ v


WINDOWS = [(1, 0, 4), (50, 1, 8), (65, 10, 16), (97, 13, 16), (130, 16, 16), (200, 40, 64),
           (200, 60, 4), (512, 16, 64)]


@pytest.mark.parametrize("L_, window, block", WINDOWS)
def test_sliding_window_equals_the_band_it_defines(L_, window, block):
    generator = torch.Generator().manual_seed(L_ + window)
    q, k, v = (torch.randn(2, L_, 4, generator=generator, dtype=torch.float64) for _ in range(3))
    out, tiles = sliding_window_attention(q, k, v, window, block)
    assert (out - _band_reference(q, k, v, window)).abs().max() < 1e-12
    # the tiles read are the grid's tiles that meet the band, as FlashAttention-2 rounds both ends
    n = len(key_blocks(L_, block))
    meets = sum(1 for a in range(n) for b in range(n)
                if b * block <= min((a + 1) * block, L_) - 1 + window
                and min((b + 1) * block, L_) - 1 >= a * block - window)
    assert tiles == meets


def test_sliding_window_computes_the_scores_it_counts():
    generator = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 512, 5, generator=generator) for _ in range(3))
    _, tiles = sliding_window_attention(q, k, v, 16, 64)
    assert count_scores(lambda: sliding_window_attention(q, k, v, 16, 64), 5) == tiles * 64 * 64
    assert tiles * 64 * 64 <= 512 * (64 + 2 * 64)  # L (B + 2 ceil(w / B) B)


# plausible errors in the given sliding-window code: each must fail the independent reference
BAND_ERRORS = [
    ("band_mask in tile-local indices",
     "i = torch.arange(rows.start, rows.stop, device=device)[:, None]",
     "i = torch.arange(0, rows.stop - rows.start, device=device)[:, None]"),
    ("the key range not widened to the window on the right",
     "last = min(-(-(rows.stop + window) // block) * block, L)",
     "last = min(-(-rows.stop // block) * block, L)"),
    ("a strict band: |i - j| < window", "return (i - j).abs() <= window",
     "return (i - j).abs() < window"),
]


@pytest.mark.parametrize("name, find, bug", BAND_ERRORS, ids=[e[0] for e in BAND_ERRORS])
def test_errors_in_the_given_window_code_fail_the_reference(name, find, bug):
    import types

    source = (ROOT / "solutions" / "tiled.py").read_text()
    assert source.count(find) == 1, name
    module = types.ModuleType("solutions._band_error")
    module.__package__ = "solutions"
    exec(compile(source.replace(find, bug), "tiled_band_error", "exec"), module.__dict__)
    generator = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 200, 4, generator=generator, dtype=torch.float64) for _ in range(3))
    out, _ = module.sliding_window_attention(q, k, v, 10, 16)
    assert (out - _band_reference(q, k, v, 10)).abs().max() > 1e-6, name


def test_causal_tiles_equal_lesson_02_and_skip_the_tiles_above_the_diagonal():
    generator = torch.Generator().manual_seed(10)
    L_, block = 200, 32
    leaves = [torch.randn(2, L_, 5, generator=generator, dtype=torch.float64, requires_grad=True)
              for _ in range(3)]
    mask = torch.ones(L_, L_, dtype=torch.bool).tril()
    mine, theirs = causal_tiled_attention(*leaves, block), scaled_dot_product_attention(
        *leaves, mask=mask)
    assert (mine - theirs).abs().max() < 1e-12
    w = torch.randn_like(mine)
    for a, b in zip(torch.autograd.grad((mine * w).sum(), leaves),
                    torch.autograd.grad((theirs * w).sum(), leaves)):
        assert (a - b).abs().max() < 1e-12
    q, k, v = (t.detach()[:1] for t in leaves)
    counted = count_scores(lambda: causal_tiled_attention(q, k, v, block), 5)
    assert counted <= L_ * L_ / 2 + L_ * block


def test_the_arithmetic():
    flops = attention_flops(1024, 1024, 64)
    assert flops["forward"] == 4 * 1024 ** 2 * 64
    assert flops["training recompute"] / flops["training naive"] == pytest.approx(3.5 / 3)
    assert attention_flops(1024, 1024, 64, causal=True)["forward"] == 2 * 1024 ** 2 * 64
    traffic = hbm_traffic(4096, 64, 50_000)
    assert traffic["standard"] == 4 * 4096 * 64 + 4 * 4096 ** 2
    assert traffic["tiled"] < traffic["standard"] / 3  # Θ(N² d² / M) against Θ(N²)


def test_the_widget_replays_the_online_softmax():
    walk = tile_walk(block=4, row=10, step=10_000)
    scores = walk["scores"][10]
    m, l = walk["final"]
    assert walk["history"][-1][1] == pytest.approx(m) and walk["history"][-1][2] == pytest.approx(l)
    assert m == pytest.approx(float(scores.max()))
    assert len(walk["visited"]) == walk["tiles"] == walk["all_tiles"] == (L // 4) ** 2
    assert any(later[2] < earlier[2] for earlier, later in zip(walk["history"], walk["history"][1:]))
    banded = tile_walk(block=4, row=10, step=10_000, window=WINDOW)
    assert banded["tiles"] < banded["all_tiles"] and banded["tiles"] == len(tile_order(4, WINDOW))
    assert tile_walk(block=4, row=10, step=0)["visited"] == tile_order(4)[:1]


def test_the_widget_draws_and_redraws():
    from course.widgets.base import render_png

    assert render_png(draw_tiles, step=3, block=6, row=23, window=True)[:4] == b"\x89PNG"
    box = tiles_explorer()
    before = box.children[1].value
    box.children[0].children[1].value = 8
    assert box.children[1].value != before


def test_the_slider_runs_over_the_tiles_the_walk_visits():
    """Its maximum is the tile count for the block size and the window, so no part of its track
    does nothing and its readout is the tile the figure shows."""
    box = tiles_explorer()
    step, block, _row, window = box.children[0].children
    for size in (3, 4, 6, 8):
        for banded in (False, True):
            block.value, window.value = size, banded
            assert step.max == tiles_in_order(size, banded) == len(tile_order(size, WINDOW if
                                                                               banded else None))
            assert step.value <= step.max


def _record():
    run = BlowUp("naive", sizes=[1024, 2048], peaks=[10**9, 4 * 10**9], seconds=[0.1, 0.4],
                 out_of_memory_at=4096, stopped="torch.cuda.OutOfMemoryError at L = 4096")
    import dataclasses

    fields = dataclasses.asdict(run)
    return {"format": 2, "device": "a test card", "total_memory": 8 * 10**9, "torch": "x",
            "cuda": "y", "recorded": "2026-01-01", "source": "a test", "B": 1, "H": 8, "c": 64,
            "dtypes": ["float32", "bfloat16"], "sdpa backends": dict(tiled_gpu.BACKENDS),
            "block": 256, "L_start": 1024, "factor": 2.0, "budget_s": 1.0,
            "methods": {"naive float32": {"forward": fields, "training": fields}}}


def test_gpu_records_round_trip_and_show(tmp_path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    assert tiled_gpu.load() == []  # the shipped file: no run recorded yet
    path = tmp_path / "runs.json"
    tiled_gpu.append(_record(), path)
    tiled_gpu.append(_record(), path)
    runs = tiled_gpu.load(path)
    assert len(runs) == 2 and runs[0]["methods"]["naive float32"]["forward"]["sizes"] == [1024, 2048]
    tiled_gpu.show(runs[0])
    assert "a test card" in capsys.readouterr().out


def test_gpu_measure_refuses_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("a CUDA card is here")
    with pytest.raises(RuntimeError):
        tiled_gpu.measure(tiled_attention)


def test_gpu_methods_name_their_sdpa_kernel():
    """float32 on the memory-efficient kernel, bfloat16 on FlashAttention's: CUDA's flash kernel
    takes float16 and bfloat16 only."""
    ways = tiled_gpu.methods(tiled_attention, 64)
    assert tiled_gpu.BACKENDS == {"float32": "EFFICIENT_ATTENTION", "bfloat16": "FLASH_ATTENTION"}
    assert {name: dtype for name, (_fn, dtype) in ways.items() if name.startswith("sdpa")} == {
        "sdpa float32": torch.float32, "sdpa bfloat16": torch.bfloat16}


def test_the_recorded_sweep_and_what_it_says():
    record = speed.load()
    assert sorted(map(int, record["naive"])) == list(speed.LENGTHS)
    assert all(sorted(map(int, row)) == list(speed.BLOCKS) for row in record["tiled"].values())
    assert record["repeats"] >= 3
    found = speed.findings(record)
    lines = speed.describe(record, live=False)
    # the sentence about where tiles are faster follows the numbers of the table
    assert found["faster"] == [L_ for L_ in found["lengths"] if found["ratio"][L_] > 1]
    assert any(f"x{found['growth']:.1f}" in line for line in lines)


def test_the_recorded_flex_comparison():
    record = flex.load()
    assert set(record["settings"]) == {"pair bias", "causal", "sliding window"}
    for entry in record["settings"].values():  # float32's rounding, relative to the output
        assert entry["max |flex - tiles|"] / entry["max |flex|"] < 1e-6
        assert entry["max |eager flex - tiles|"] / entry["max |flex|"] < 1e-6
    assert "NotImplementedError" in record["backward on the CPU"]
    assert flex.table(record)


@pytest.mark.slow
def test_flex_attention_eager_equals_the_tiles():
    """FlexAttention's unfused path with the pair bias as a score_mod and the causal and sliding
    window BlockMasks equals the solutions' tiles to 1e-6 of the output's size in float32."""
    record = flex.run({
        "pair bias": lambda q, k, v, bias: tiled_attention_forward(q, k, v, bias, None, 64, 64)[0],
        "causal": lambda q, k, v, bias: causal_tiled_attention(q, k, v, flex.BLOCK),
        "sliding window": lambda q, k, v, bias: sliding_window_attention(
            q, k, v, flex.WINDOW, flex.BLOCK)[0]}, compiled=False, timings=False,
        log=lambda line: None)
    for name, entry in record["settings"].items():
        assert entry["max |flex - tiles|"] < 1e-6 * entry["max |flex|"], name


def test_a_bias_row_of_minus_inf_is_where_lesson_02_differs():
    """A query whose scores are all -inf after the bias (no mask) sees no key: the tiles give it
    zeros and lse -inf; lesson 02's rule keys on the mask, and its softmax of the row is NaN."""
    q, k, v = (torch.randn(1, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(i))
               for i in range(3))
    bias = torch.zeros(4, 4, dtype=torch.float64)
    bias[1] = -math.inf
    out, lse = tiled_attention_forward(q, k, v, bias, None, 2, 2)
    assert out[0, 1].abs().max() == 0 and lse[0, 1] == -math.inf
    assert torch.isnan(scaled_dot_product_attention(q, k, v, bias=bias)[0, 1]).all()
