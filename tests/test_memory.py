"""course/memory.py: the shape-based prediction agrees with the profiler; the walls are consistent."""
import math
import types

import pytest
import torch

from course import memory
from course.memory import (METHODS, fit_slope, make_inputs, measure_peak_cpu, predict_peak_bytes,
                           predicted_need, predicted_wall, score_bytes)

SMALL = dict(R=4, H=2, c=4)


def test_the_four_methods_compute_the_same_attention():
    q, k, v = make_inputs("naive", 5, 2, 7, 4, dtype=torch.float64, seed=3)
    naive = memory.naive_column_attention(q, k, v)
    torch.testing.assert_close(memory.chunked_column_attention(q, k, v, chunk=2), naive)
    torch.testing.assert_close(memory.sdpa_column_attention(q, k, v), naive)
    # global: one averaged query and one key/value head, by hand
    qg, kg, vg = make_inputs("global", 5, 2, 7, 4, dtype=torch.float64, seed=3)
    q_mean = qg.mean(dim=-2, keepdim=True)
    weights = torch.softmax(q_mean @ kg.transpose(-2, -1) / 2.0, dim=-1)
    torch.testing.assert_close(memory.global_column_attention(qg, kg, vg), weights @ vg)
    assert kg.shape == (5, 1, 7, 4)


@pytest.mark.parametrize("method", ["naive", "chunked", "global"])
@pytest.mark.parametrize("S", [16, 48])
def test_prediction_from_shapes_matches_the_profiler_within_5_percent(method, S):
    predicted = predict_peak_bytes(method, S=S, **SMALL)
    measured = measure_peak_cpu(method, S=S, **SMALL)
    assert measured.events > 0
    assert abs(measured.peak - predicted) <= 0.05 * predicted, (predicted, measured)


def test_naive_peak_is_two_score_tensors_and_the_output():
    R, H, S, c = 3, 2, 40, 4
    # scores and scaled scores, then scaled scores and softmax weights: two S x S tensors at once
    expected = 2 * score_bytes(R, H, S, S) + R * H * S * c * 4
    assert predict_peak_bytes("naive", R, H, S, c) == expected


def test_chunking_lowers_the_inference_peak_but_not_what_training_keeps():
    R, H, S, c = 8, 2, 48, 4
    assert predict_peak_bytes("chunked", R, H, S, c) < predict_peak_bytes("naive", R, H, S, c) / 1.5
    naive = measure_peak_cpu("naive", R, H, S, c, train=True)
    chunked = measure_peak_cpu("chunked", R, H, S, c, train=True)
    # autograd keeps every chunk's softmax weights for backward: the same R x S x S as naive
    kept_weights = score_bytes(R, H, S, S)
    assert chunked.held_after >= kept_weights
    assert abs(chunked.held_after - naive.held_after) <= 0.05 * naive.held_after


def test_global_and_sdpa_stay_far_below_naive():
    R, H, S, c = 4, 2, 64, 4
    naive = predict_peak_bytes("naive", R, H, S, c)
    assert predict_peak_bytes("global", R, H, S, c) < naive / 20
    # on the CPU, SDPA runs a fused kernel: measured far below what meta (math path) predicts
    assert measure_peak_cpu("sdpa", R, H, S, c).peak < naive / 4


def test_peaks_grow_like_s_squared_and_s():
    sizes = [64, 128, 256, 512]
    naive = [predict_peak_bytes("naive", 4, 2, S, 4) for S in sizes]
    glob = [predict_peak_bytes("global", 4, 2, S, 4) for S in sizes]
    assert fit_slope(sizes, naive) == pytest.approx(2.0, abs=0.1)
    assert fit_slope(sizes, glob) == pytest.approx(1.0, abs=0.1)


def test_fit_slope_of_an_exact_power_law():
    assert fit_slope([1, 2, 4, 8], [3 * s ** 1.5 for s in [1, 2, 4, 8]]) == pytest.approx(1.5)


@pytest.mark.parametrize("method", ["naive", "chunked", "global"])
def test_wall_is_the_last_size_that_fits(method):
    capacity = 24e9
    S = predicted_wall(method, capacity, R=300, H=8, c=8)
    assert predicted_need(method, 300, 8, S, 8) <= capacity < predicted_need(method, 300, 8, S + 1, 8)


def test_naive_walls_for_the_lessons_cards():
    walls = [predicted_wall("naive", gb * 1e9, R=300, H=8, c=8) for gb in (24, 40, 80)]
    assert walls == sorted(walls)
    # need ≈ 2 * 300 * 8 * S² * 4 bytes: S ≈ sqrt(capacity / 19200)
    for gb, S in zip((24, 40, 80), walls):
        assert S == pytest.approx(math.sqrt(gb * 1e9 / 19200), rel=0.02)


def test_predict_refuses_training():
    with pytest.raises(ValueError):
        predict_peak_bytes("naive", 2, 2, 8, 4, train=True)


def test_meta_prediction_allocates_nothing():
    # S = 5120, R = 300: half a terabyte predicted, in a blink and without memory
    predicted = predict_peak_bytes("naive", 300, 8, 5120, 8)
    assert predicted == 2 * score_bytes(300, 8, 5120, 5120) + 300 * 8 * 5120 * 8 * 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_blow_up_needs_cuda():
    with pytest.raises(RuntimeError, match="CUDA"):
        memory.blow_up_cuda()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_blow_up_on_cuda_stops_at_out_of_memory_or_a_limit():
    results = memory.blow_up_cuda(methods=("naive", "global"), R=8, S_start=256, S_max=4096,
                                  budget_s=4.0, log=lambda *_: None)
    for run in results.values():
        assert run.sizes and run.stopped
        assert all(p > 0 for p in run.peaks)


def pretend_gpu(monkeypatch, capacity=1_000_000, seconds_per_S2=0.0):
    """torch.cuda on the CPU: a card of `capacity` bytes whose calls take seconds_per_S2 · S²
    seconds on a fake clock (course.memory's time.perf_counter); returns the clock."""
    allocated, peak, clock = [0], [0], [0.0]

    def fake_inputs(method, R, H, S, c, device="cpu", **kwargs):
        if torch.device(device).type != "cuda":  # the meta prediction itself
            return make_inputs(method, R, H, S, c, device=device, **kwargs)
        tensors = make_inputs(method, R, H, S, c)
        need = sum(t.numel() * 4 for t in tensors) + (predict_peak_bytes(method, R, H, S, c))
        if need > capacity:
            raise torch.cuda.OutOfMemoryError("pretend card is full")
        allocated[0] = sum(t.numel() * 4 for t in tensors)
        peak[0] = need
        return tensors

    def slow(method):
        def run(q, k, v):
            if q.device.type != "meta":  # the fake card's prediction of its need takes no time
                clock[0] += seconds_per_S2 * k.shape[-2] ** 2
            return method(q, k, v)
        return run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda *a: allocated[0])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a: peak[0])
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda *a: types.SimpleNamespace(name="Pretend GPU", total_memory=capacity))
    monkeypatch.setattr(memory, "make_inputs", fake_inputs)
    if seconds_per_S2:
        monkeypatch.setattr(memory, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
        for name, method in list(memory.METHODS.items()):
            monkeypatch.setitem(memory.METHODS, name, slow(method))
    return clock


def test_blow_up_loop_catches_out_of_memory_with_a_pretend_gpu(monkeypatch):
    """The CUDA branch's control flow, on the CPU: a fake card that runs out above 1 MB."""
    pretend_gpu(monkeypatch)

    lines = []
    runs = memory.blow_up_cuda(methods=("naive", "global"), R=2, H=2, c=4, S_start=16,
                               factor=2, S_max=4096, log=lines.append)
    naive, glob = runs["naive"], runs["global"]
    assert naive.out_of_memory_at is not None and naive.out_of_memory_at > naive.sizes[-1]
    assert "OutOfMemoryError" in naive.stopped
    assert naive.peaks == [predict_peak_bytes("naive", 2, 2, S, 4) for S in naive.sizes]
    assert glob.sizes[-1] > naive.sizes[-1]  # linear memory goes further
    assert any("OutOfMemoryError" in line for line in lines)


def test_methods_registry():
    assert set(METHODS) == {"naive", "chunked", "global", "sdpa"}


def test_blow_up_keeps_within_its_time_budget(monkeypatch):
    """Calls that take (S / 100)² seconds on a fake clock, on a card too big to fill: every method
    stops on time, all four together within the budget."""
    clock = pretend_gpu(monkeypatch, capacity=10 ** 15, seconds_per_S2=1e-4)
    runs = memory.blow_up_cuda(R=2, H=2, c=4, S_start=16, factor=2 ** 0.5, budget_s=8.0,
                               log=lambda *_: None)
    assert all("time budget" in run.stopped for run in runs.values()), runs
    assert all(len(run.sizes) >= 3 for run in runs.values())
    assert clock[0] <= 8.0
    # each run stopped because its next size (twice the compute) would not fit its share
    naive = runs["naive"]
    assert sum(naive.seconds) + 2 * naive.seconds[-1] > 8.0 / 4


def test_blow_up_without_a_budget_to_speak_of_still_measures_one_size(monkeypatch):
    pretend_gpu(monkeypatch, capacity=10 ** 15, seconds_per_S2=1.0)
    runs = memory.blow_up_cuda(methods=("naive",), R=2, H=2, c=4, S_start=16, budget_s=0.0,
                               log=lambda *_: None)
    assert runs["naive"].sizes == [16] and "time budget" in runs["naive"].stopped
