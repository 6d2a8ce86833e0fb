"""Lesson 08's functional tests of the sink (course/lesson08_functional.py) and the many-seed
experiment's training (course/lesson08_experiment.py): masks, interventions, resumption."""
import json

import pytest
import torch
import torch.nn.functional as F

from course import lesson08_experiment as experiment
from course import lesson08_functional as functional
from course import lm_training as lm
from solutions.tiny_lm import TinyLM


def _model_and_tokens(arch="paper", seed=0):
    torch.manual_seed(seed)
    model = TinyLM(vocab_size=12, max_len=16, gate="none", arch=arch).eval()
    tokens = torch.randint(1, 12, (4, 16), generator=torch.Generator().manual_seed(seed))
    tokens[:, 0] = lm.BOS
    return model, tokens


def test_key_masks():
    blocked = functional.key_mask(5, block_bos=True)
    assert blocked[0, 0] and not blocked[1:, 0].any() and blocked[1:, 1:].all()
    window = functional.key_mask(6, window=2)
    assert window[3].tolist() == [False, False, True, True, True, True]  # keys 2, 3 (and later,
    # which causality hides)
    assert window[1].tolist()[:2] == [True, True]
    kept = functional.key_mask(6, window=2, keep_bos=True)
    assert kept[:, 0].all() and kept[5].tolist() == [True, False, False, False, True, True]


def test_no_mask_and_an_all_true_mask_are_the_model():
    model, tokens = _model_and_tokens()
    plain = F.cross_entropy(model(tokens)[:, :-1].flatten(0, 1), tokens[:, 1:].flatten()).item()
    assert functional.loss_with(model, tokens) == plain
    assert functional.loss_with(model, tokens, torch.ones(16, 16, dtype=torch.bool)) == plain


def test_blocked_bos_gets_no_weight_and_windows_see_only_recent_keys():
    for arch in ("paper", "gpt2"):
        model, tokens = _model_and_tokens(arch)
        with torch.no_grad():
            _logits, record = model(tokens, details=True, allowed=functional.key_mask(16, block_bos=True))
            for weights in record["weights"]:
                assert weights[:, :, 1:, 0].abs().max() == 0
                assert torch.allclose(weights.sum(-1), torch.ones(()))
            _logits, record = model(tokens, details=True, allowed=functional.key_mask(16, window=3))
            assert record["weights"][0][:, :, 10, :8].abs().max() == 0
            assert record["weights"][0][:, :, 10, 8:11].sum(-1).allclose(torch.ones(()))


def test_zeroing_bos_value_changes_only_what_is_read_at_bos():
    for arch in ("paper", "gpt2"):
        model, tokens = _model_and_tokens(arch, seed=1)
        with torch.no_grad():
            _logits, before = model(tokens, details=True)
            with functional.bos_value_zeroed(model):
                _logits, after = model(tokens, details=True)
            # layer 0's weights depend on q and k only: unchanged; its output changes
            assert torch.equal(before["weights"][0], after["weights"][0])
            assert not torch.allclose(before["hidden"][0], after["hidden"][0])
            # a query that can only see BOS reads exactly zero: position 0's attention output
            attn = model.blocks[0].attn
            with functional.bos_value_zeroed(model):
                v = functional._values(attn, model.blocks[0].norm_attn(model.embed(tokens)))
            assert v[:, 0].abs().max() == 0 and v[:, 1:].abs().max() > 0
        # the hooks are gone afterwards
        assert torch.equal(model(tokens), model(tokens)) and not any(
            m._forward_hooks for m in model.modules())


def test_value_drain_and_sink_rate():
    model, tokens = _model_and_tokens()
    drains = functional.value_drain(model, tokens)
    assert len(drains) == 2 and len(drains[0]) == 4 and all(d > 0 for d in drains[0])
    with torch.no_grad():
        model.token_embedding.weight[lm.BOS] *= 0  # BOS's normalised input is 0: its value too
    assert max(functional.value_drain(model, tokens)[0]) < 1e-3
    assert functional.sink_rate([[0.9, 0.1], [0.31, 0.3]]) == 0.5


def test_an_experiment_run_resumes_where_it_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(experiment, "CURVE_EVERY", 2)
    monkeypatch.setattr(experiment, "CURVE_SEQUENCES", 4)
    monkeypatch.setattr(lm, "VAL_SEQUENCES", 8)  # the end-of-run measurements, on fewer sequences
    whole = experiment.train_run("course", "wider", 0, tmp_path / "whole", steps=6, progress=False)
    assert experiment.train_run("course", "wider", 0, tmp_path / "split", steps=6, progress=False,
                                stop_after=3) is None
    assert (tmp_path / "split" / "course_wider_seed0.state.pt").exists()
    resumed = experiment.train_run("course", "wider", 0, tmp_path / "split", steps=6, progress=False)
    for key in ("val_loss", "first_token_share", "loss_bos_blocked"):
        assert resumed[key] == whole[key]
    assert [p["step"] for p in resumed["curve"]] == [0, 2, 4, 6] and resumed["curve"] == whole["curve"]
    assert resumed["config"]["d_ff"] == lm.D_FF["paper"] + experiment.WIDER
    assert not (tmp_path / "split" / "course_wider_seed0.state.pt").exists()
    # a finished run is read back, not trained again; collect ships it under the run key
    assert experiment.train_run("course", "wider", 0, tmp_path / "split", steps=6) == resumed
    shipped = experiment.collect(tmp_path / "split", tmp_path / "m.json", tmp_path / "c.pt")
    assert shipped == 1
    assert list(json.loads((tmp_path / "m.json").read_text())["runs"]) == ["experiment/paper/bb/wider/seed0"]
    assert experiment.load_model("course", "wider", 0, tmp_path / "c.pt").config["d_ff"] == 288


def test_the_wider_baseline_matches_the_gates_parameters():
    for biases in (False,):  # the strong-sink set-up: exactly; with biases: within 2 x 32
        sizes = [sum(p.numel() for p in TinyLM(29, d_ff=d_ff, gate=gate, biases=biases).parameters())
                 for gate, d_ff in (("elementwise", 256), ("none", 256 + experiment.WIDER))]
        assert sizes[0] == sizes[1]


def test_the_queue_trains_in_the_order_the_claims_need():
    order = experiment.queue()
    assert len(order) == len(experiment.ARMS) * len(experiment.SEEDS) * 2 == len(set(order))
    # stage 1: baseline against G1 elementwise on every seed of the course's set-up, seed by seed
    assert order[:20] == [("course", arm, seed) for seed in experiment.SEEDS
                          for arm in ("none", "elementwise")]
    # stage 2: the wider baseline (the control for the gate's parameters), every seed
    assert order[20:30] == [("course", "wider", seed) for seed in experiment.SEEDS]
    # stage 3: the static scalar and headwise on five seeds; the strong-sink set-up comes last
    assert order[30:40] == [("course", arm, seed) for seed in range(5)
                            for arm in ("static", "headwise")]
    assert {setup for setup, _arm, _seed in order[:50]} == {"course"}
    assert {setup for setup, _arm, _seed in order[50:]} == {"sink"}


def test_a_run_prepared_on_the_meta_device_trains_there():
    # every tensor a training step and a curve point's masks make must follow the model's device
    # (a mask made on the CPU breaks a run on a GPU): the meta device finds them without one
    meta = torch.device("meta")
    model, optimizer, _schedule, _recipe, stream, curve_tokens, _data = experiment.prepare(
        "course", "elementwise", 0, steps=3, device=meta)
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert stream.device == meta and curve_tokens.device == meta and stream.shape == (3, 32, lm.SEQ_LEN)
    loss = lm.lm_loss(model, stream[0])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    assert loss.device == meta and {p.grad.device.type for p in model.parameters()} == {"meta"}
    blocked = model(curve_tokens, allowed=functional.key_mask(lm.SEQ_LEN, block_bos=True, device=meta))
    assert blocked.device == meta
    _logits, record = model(curve_tokens, details=True)
    assert record["weights"][0].device == meta
    # the shipped state comes back to the CPU in float16
    state = lm.compact_state(torch.nn.Linear(2, 2))
    assert {t.device.type for t in state.values()} == {"cpu"} and {t.dtype for t in state.values()} == {torch.float16}


def test_a_run_asked_for_cuda_falls_back_to_the_cpu_where_there_is_none(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(experiment, "CURVE_EVERY", 2)
    monkeypatch.setattr(experiment, "CURVE_SEQUENCES", 4)
    monkeypatch.setattr(lm, "VAL_SEQUENCES", 8)
    on_cpu = experiment.train_run("course", "none", 0, tmp_path / "cpu", steps=4, progress=False)
    asked = experiment.train_run("course", "none", 0, tmp_path / "cuda", steps=4, progress=False,
                                 device="cuda")
    assert "no CUDA device found: training on the CPU" in capsys.readouterr().out
    assert asked["device"] == on_cpu["device"] == "cpu"
    for key in ("val_loss", "first_token_share", "loss_bos_blocked", "curve"):
        assert asked[key] == on_cpu[key]
    assert experiment.resolve_device("meta") == torch.device("meta")  # other devices as asked


def test_the_script_takes_a_device_for_the_experiment_only(monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_lesson08", lm.ROOT / "scripts" / "train_lesson08.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    asked = {}
    monkeypatch.setattr(experiment, "work", lambda threads, device: asked.update(threads=threads, device=device) or 0)
    assert script.main(["--experiment", "--device", "cuda", "--threads", "1"]) == 0
    assert asked == {"threads": 1, "device": "cuda"}
    with pytest.raises(SystemExit):
        script.main(["--device", "cuda"])
