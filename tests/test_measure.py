"""course/measure.py: parameter counts of real modules, and the best-of-N timer."""
import pytest
import torch
from torch import nn

from course.measure import best_time, n_parameters


def test_counts_every_weight_and_bias():
    assert n_parameters(nn.Linear(64, 8)) == 64 * 8 + 8
    assert n_parameters(nn.Linear(64, 8, bias=False)) == 64 * 8
    assert n_parameters(nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3))) == 4 * 3 + 3 + 2 * 3
    assert n_parameters(nn.ReLU()) == 0


def test_a_shared_weight_counts_once():
    shared = nn.Linear(5, 5)
    assert n_parameters(nn.Sequential(shared, shared)) == 30


def test_best_time_is_the_fastest_call_and_warms_up_first(monkeypatch):
    clock = iter([0.0, 3.0, 10.0, 11.0, 20.0, 22.0])  # calls of 3 s, 1 s, 2 s
    monkeypatch.setattr("course.measure.time.perf_counter", lambda: next(clock))
    calls = []
    assert best_time(lambda: calls.append(1), repeats=3) == 1.0
    assert len(calls) == 4  # one untimed warm-up call, then three timed ones


def test_best_time_without_warm_up_and_its_bounds():
    calls = []
    seconds = best_time(lambda: calls.append(torch.ones(3).sum()), repeats=2, warmup=False)
    assert len(calls) == 2 and 0 <= seconds < 1
    with pytest.raises(ValueError):
        best_time(lambda: None, repeats=0)
