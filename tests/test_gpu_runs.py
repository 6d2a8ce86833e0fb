"""course/gpu_runs.py: lesson 05's recorded GPU runs (shown everywhere) and the live GPU branch.

The recorded branch runs everywhere on the shipped data; the live branch runs on a pretend card
here (tests.test_memory.pretend_gpu) and on the real one where CUDA is present.
"""
import importlib.util
import json

import matplotlib
import pytest
import torch

from course import ROOT, gpu_runs
from course.memory import GB, predict_peak_bytes
from tests.test_memory import pretend_gpu

matplotlib.use("Agg")

H200 = gpu_runs.load()[0]


def test_the_h200_run_is_shipped_with_its_provenance():
    assert H200["device"] == "NVIDIA H200" and H200["total_memory"] == 143_771 * 2 ** 20
    assert (H200["torch"], H200["cuda"]) == ("2.11", "13")
    # provenance: what ran, where and when, and what stopped it on time (a 5 s limit per step)
    assert "NVIDIA H200" in H200["source"] and H200["recorded"] == "2026-11-30"
    assert (H200["budget_s"], H200["step_limit_s"]) == (None, 5.0)
    assert "(no total budget)" in gpu_runs.growth(H200)
    assert (H200["R"], H200["H"], H200["c"], H200["dtype"]) == (300, 8, 8, "float32")
    runs = gpu_runs.runs_of(H200)
    assert {m: (r.sizes[-1], r.out_of_memory_at) for m, r in runs.items()} == {
        "naive": (2048, 2896), "chunked": (16386, None), "global": (524364, 741563),
        "sdpa": (23173, None)}
    # the sizes are those blow_up_cuda steps through from S = 256 by √2
    grid = gpu_runs.size_grid(H200, 10 ** 6)
    assert all(S in grid for r in runs.values() for S in r.sizes + [r.out_of_memory_at or 256])


def test_the_card_confirms_the_prediction():
    rows = gpu_runs.rows(H200)
    ratio = {r["method"]: r["ratio"] for r in rows if "ratio" in r}
    assert ratio["naive"] == pytest.approx(1, abs=1e-3)  # 80.688 GB measured and predicted
    assert ratio["chunked"] == pytest.approx(1, abs=2e-3)
    assert ratio["global"] == pytest.approx(1, abs=2e-3)
    assert ratio["sdpa"] < 1e-3  # fused kernel on CUDA, math path on meta
    assert predict_peak_bytes("naive", 300, 8, 2048, 8) / GB == pytest.approx(80.69, abs=0.005)
    out = {r["method"]: r for r in rows if r.get("out_of_memory")}
    assert set(out) == {"naive", "global"}
    assert out["naive"]["need"] > H200["total_memory"]  # predicted: does not fit
    # global's predicted need fits on paper: the real wall comes before the predicted one
    assert 0.9 * H200["total_memory"] < out["global"]["need"] < H200["total_memory"]


def test_show_prints_measured_over_predicted_per_size_and_draws_both(capsys):
    ax = gpu_runs.plot(H200)
    gpu_runs.print_table(H200)
    text = capsys.readouterr().out
    assert "NVIDIA H200, 143,771 MiB (150.8 GB); torch 2.11, CUDA 13" in text
    assert "naive        2,048       80.688        80.688" in text
    assert "OutOfMemoryError; predicted need (inputs + peak) 161.9 GB of 150.8 GB" in text
    labels = [line.get_label() for line in ax.get_lines()]
    for method in ["naive", "chunked", "global", "sdpa"]:
        assert f"{method}: predicted" in " ".join(labels) and f"{method}: measured" in labels
    crosses = [line for line in ax.get_lines() if line.get_marker() == "x"]
    assert sorted(int(line.get_xdata()[0]) for line in crosses) == [2896, 741563]


def test_a_live_run_on_a_pretend_card_makes_a_record_that_round_trips(monkeypatch, tmp_path, capsys):
    pretend_gpu(monkeypatch, capacity=2_000_000)
    record = gpu_runs.measure(R=2, H=2, c=4, S_start=16, factor=2, budget_s=60,
                              source="pretend card", log=lambda *_: None)
    assert record["device"] == "Pretend GPU" and record["torch"] == torch.__version__
    assert record["methods"]["naive"]["out_of_memory_at"] is not None
    path = tmp_path / "runs.json"
    gpu_runs.append(H200, path)
    gpu_runs.append(record, path)
    assert gpu_runs.load(path) == [H200, record]
    assert json.loads(path.read_text())["format"] == gpu_runs.FORMAT
    # measured on the pretend card = its predicted peak, so every ratio is 1
    assert all(r["ratio"] == pytest.approx(1) for r in gpu_runs.rows(record) if "ratio" in r)
    gpu_runs.show(record)
    shown = capsys.readouterr().out
    assert "Pretend GPU" in shown and "the methods shared a budget of 60 s" in shown


def load_script():
    spec = importlib.util.spec_from_file_location("record_gpu_run", ROOT / "scripts" / "record_gpu_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_the_recording_script_refuses_without_a_gpu(tmp_path, capsys):
    assert load_script().main(["--source", "x", "--out", str(tmp_path / "r.json")]) == 1
    assert "No CUDA GPU" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_the_recording_script_appends_one_record(monkeypatch, tmp_path):
    pretend_gpu(monkeypatch, capacity=2_000_000)
    real_measure = gpu_runs.measure
    monkeypatch.setattr(gpu_runs, "measure", lambda **kw: real_measure(
        R=2, H=2, c=4, S_start=16, factor=2, log=lambda *_: None, **kw))
    out = tmp_path / "r.json"
    assert load_script().main(["--source", "a test", "--out", str(out), "--budget", "30"]) == 0
    (record,) = gpu_runs.load(out)
    assert (record["source"], record["budget_s"]) == ("a test", 30.0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_live_branch_on_this_card(capsys):
    record = gpu_runs.measure(R=8, H=8, c=8, budget_s=4.0, source="test", log=lambda *_: None)
    assert record["total_memory"] == torch.cuda.get_device_properties(0).total_memory
    runs = gpu_runs.runs_of(record)
    assert all(run.sizes and run.stopped for run in runs.values())
    rows = gpu_runs.rows(record)
    naive = [r for r in rows if r["method"] == "naive" and "ratio" in r]
    # at sizes of a few MB and more the allocator's rounding is negligible
    big = [r for r in naive if r["predicted"] > 50e6]
    assert all(r["ratio"] == pytest.approx(1, rel=0.05) for r in big), big
    gpu_runs.show(record)
    assert torch.cuda.get_device_name(0) in capsys.readouterr().out
