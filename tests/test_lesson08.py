"""Lesson 08: data, the folding claims, the widget, and a shortened retrain of the sink effect."""
import itertools
import time

import pytest
import torch

from course import lesson08_experiment as experiment
from course import lm_training as lm
from course.widgets import lesson08 as widgets08
from solutions.gated_attention import (GatedCausalSelfAttention, fold_static_gate,
                                       linear_fold_residual, value_output_map)


def test_bigram_backcopy_copies_the_token_before_each_trigger():
    bb = lm.BigramBackcopy()
    tokens = bb.sample(50, torch.Generator().manual_seed(0))
    assert (tokens[:, 0] == lm.BOS).all() and (tokens[:, 1:] != lm.BOS).all()
    copies = bb.copy_positions(tokens)
    rows, cols = copies.nonzero(as_tuple=True)
    assert len(rows) > 50  # about 3 per sequence
    assert torch.equal(tokens[rows, cols], tokens[rows, cols - 2])
    assert torch.isin(tokens[rows, cols - 1], bb.trigger_ids).all()
    assert not torch.isin(tokens[:, 1], bb.trigger_ids).any()  # never a copy of BOS


def test_same_seed_same_data():
    bb = lm.BigramBackcopy()
    first = bb.sample(4, torch.Generator().manual_seed(5))
    assert torch.equal(first, bb.sample(4, torch.Generator().manual_seed(5)))
    text = lm.DocstringText()
    assert torch.equal(lm.validation_tokens(text), lm.validation_tokens(text))


def _random_module(gate, seed=0):
    torch.manual_seed(seed)
    module = GatedCausalSelfAttention(16, 4, gate).double()
    if gate == "static":
        with torch.no_grad():
            module.gate_logit.normal_()
    return module, torch.randn(32, 10, 16, dtype=torch.float64)


def test_static_gate_folds_into_w_o_and_input_dependent_gates_do_not():
    module, x = _random_module("static")
    assert torch.allclose(fold_static_gate(module)(x), module(x), atol=1e-12)
    for gate in ("none", "static"):
        module, x = _random_module(gate)
        assert max(linear_fold_residual(module, x, h) for h in range(4)) < 1e-8
    for gate in ("elementwise", "headwise"):
        module, x = _random_module(gate)
        assert min(linear_fold_residual(module, x, h) for h in range(4)) > 0.05


def test_value_output_map_has_rank_at_most_head_dim():
    module, _ = _random_module("none")
    assert all(torch.linalg.matrix_rank(value_output_map(module, h)) <= 4 for h in range(4))


def _random_lm(gate, arch="paper", seed=1, **options):
    from solutions.tiny_lm import TinyLM
    torch.manual_seed(seed)
    model = TinyLM(vocab_size=10, gate=gate, arch=arch, **options).double()
    with torch.no_grad():  # away from the initial values (RMSNorm weights 1, zero biases)
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def test_tiny_lm_layer_matches_the_exercise_module():
    x = torch.randn(3, 7, 64, dtype=torch.float64)
    for gate in lm.VARIANTS:
        attn = _random_lm(gate).blocks[0].attn
        module = lm.as_exercise_attention(attn, GatedCausalSelfAttention)
        assert torch.allclose(module(x) + attn.linear_o.bias, attn(x)[0], atol=1e-12)
    for gate in ("none", "static"):  # the GPT-2-style layer has the exercise's names
        attn = _random_lm(gate, arch="gpt2").blocks[0].attn
        module = GatedCausalSelfAttention(64, 4, gate).double()
        module.load_state_dict(attn.state_dict())
        assert torch.allclose(module(x), attn(x)[0], atol=1e-12)


def test_paper_block_is_lesson07s_decoder_block():
    """A baseline block of the paper-like model loads strictly into lesson 07's DecoderBlock
    (agreed API: same module and parameter names) and computes the same output."""
    transformer = pytest.importorskip("solutions.transformer")
    model = _random_lm("none")
    block = transformer.DecoderBlock(64, 4, 256, rope=True).double()
    block.load_state_dict(model.blocks[1].state_dict(), strict=True)
    h = torch.randn(2, 9, 64, dtype=torch.float64)
    assert torch.allclose(block(h), model.blocks[1](h)[0], atol=1e-10)


def test_rope_and_rms_norm_follow_the_agreed_formulas():
    from solutions.tiny_lm import RMSNorm, apply_rope
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    rotated = apply_rope(x)
    assert torch.equal(rotated[:, 0], x[:, 0])  # position 0 is not rotated
    # rotate-half: channel i pairs with i + c/2, angle pos * 10000**(-2i/c)
    pos, i, c = 3, 1, 8
    angle = torch.tensor(pos * 10000.0 ** (-2 * i / c), dtype=torch.float64)
    a, b = x[:, pos, i], x[:, pos, i + c // 2]
    assert torch.allclose(rotated[:, pos, i], a * angle.cos() - b * angle.sin())
    assert torch.allclose(rotated[:, pos, i + c // 2], b * angle.cos() + a * angle.sin())
    # scores of rotated q and k depend on the offset only
    q, k = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    q_rot, k_rot = apply_rope(q.expand(6, 8)), apply_rope(k.expand(6, 8))
    assert torch.allclose(q_rot[4] @ k_rot[2], q_rot[3] @ k_rot[1])
    norm = RMSNorm(8).double()
    with torch.no_grad():
        norm.weight.normal_()
    expected = x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + 1e-6) * norm.weight
    assert torch.allclose(norm(x), expected)


def test_gate_bias_is_a_switch_and_architectures_differ_where_stated():
    paper, biased = _random_lm("elementwise"), _random_lm("elementwise", gate_bias=True)
    assert paper.blocks[0].attn.gate_proj.bias is None
    assert biased.blocks[0].attn.gate_proj.bias is not None
    names = dict(_random_lm("none").named_parameters())
    assert "position_embedding.weight" not in names and "blocks.0.attn.linear_q.weight" in names
    gpt2 = dict(_random_lm("elementwise", arch="gpt2").named_parameters())
    assert "position_embedding.weight" in gpt2 and "blocks.0.attn.gate_proj.bias" in gpt2
    assert "blocks.0.norm_attn.bias" in gpt2  # LayerNorm


def _fake_runs():
    runs = {}
    for setup, arch, dataset, gate, seed in itertools.product(
            lm.SETUPS, lm.ARCHS, lm.DATASETS, lm.VARIANTS, lm.SEEDS):
        share = (0.5 if gate == "none" else 0.05) + (0.2 if setup == "sink" else 0.0)
        runs[lm.run_key(arch, dataset, gate, seed, setup)] = {
            "first_token_share_per_layer": [share + 0.1 * seed, share],
            "first_token_share_per_head": [[share] * 4, [share] * 4],
            "gate_histogram": [1.0] * lm.GATE_BINS, "gate_mean": 0.1}
    return runs


def test_first_token_share_per_layer_averages_seeds():
    shares = widgets08.first_token_share_per_layer(_fake_runs(), "bb")
    assert shares["none"] == pytest.approx([0.6, 0.5])
    assert widgets08.first_token_share_per_layer(_fake_runs(), "bb", "2")["none"] == \
        pytest.approx([0.7, 0.5])


def test_sink_explorer_redraws():
    box = widgets08.sink_explorer(_fake_runs())
    which, arch, seed = box.children[0].children
    for control, value in ((which, ("course", "text")), (arch, "gpt2"), (seed, "1")):
        before = box.children[1].value
        control.value = value
        assert box.children[1].value != before


def test_sink_explorer_caption_explains_what_a_self_learner_sees():
    caption = widgets08.sink_explorer(_fake_runs()).children[2].value
    for words in ("BOS", "G1 elementwise", "G1 headwise", "static scalar", "Bigram-Backcopy",
                  "trigger", "Try"):
        assert words in caption, words
    assert caption.count(".") >= 5  # sentences, not a label


def test_shipped_metrics_are_complete():
    runs = lm.load_metrics(setups=("course",))
    assert len(runs) == len(lm.ARCHS) * len(lm.DATASETS) * len(lm.VARIANTS) * len(lm.SEEDS)
    for arch in lm.ARCHS:
        model = lm.load_checkpoint("bb", "elementwise", 0, arch=arch)
        assert model.config["gate"] == "elementwise" and model.config["arch"] == arch
    ablations = lm.load_ablations()
    assert {key.split("/")[0] for key in ablations} == set(lm.ABLATIONS)


@pytest.mark.slow
def test_shortened_retrain_shows_the_sink_and_its_removal():
    """A shortened retrain: baseline vs G1 elementwise of the GPT-2-style build on the docstring
    text, one seed, 500 steps instead of 2500 (the shipped runs of that build show the effect
    on text; the paper-like build has almost no sink on text to begin with, see the lesson)."""
    start = time.perf_counter()
    shares = {}
    for gate in ("none", "elementwise"):
        _, _, metrics = lm.train_and_measure("text", gate, seed=0, steps=500, threads=1,
                                             progress=False, model_options={"arch": "gpt2"})
        shares[gate] = metrics["first_token_share"]
    print(f"first-token share after 500 steps: {shares}, {time.perf_counter() - start:.0f} s")
    assert shares["none"] > 0.1
    assert shares["none"] > 1.4 * shares["elementwise"]


def test_the_dropdown_shows_its_longest_choice_whole():
    box = widgets08.sink_explorer(_fake_runs())
    which = box.children[0].children[0]
    assert which.layout.width == widgets08.dropdown_width(label for label, _key in which.options)
    assert float(which.layout.width.removesuffix("em")) >= 0.6 * max(
        len(label) for label, _key in which.options)
    # a Chinese character takes two columns, so the width grows with it
    assert widgets08.dropdown_width(["强汇点设置"]) > widgets08.dropdown_width(["abcde"])


def _curve_runs():
    runs = {}
    for arm, share in (("none", 0.5), ("elementwise", 0.05)):
        for seed in range(2):
            curve = [{"step": step, "first_token_share": share * step / 200, "val_loss": 2.5 - step / 1000,
                      "loss_bos_blocked": 2.6 - step / 1000} for step in (0, 100, 200)]
            runs[experiment.run_key("course", arm, seed)] = {"curve": curve}
    return runs


def test_training_curves_are_drawn_from_the_logged_points():
    steps, seeds = widgets08.curves_of(_curve_runs(), "experiment/paper", "elementwise", "share")
    assert steps == [0, 100, 200] and seeds == [[0.0, 0.025, 0.05]] * 2
    _steps, costs = widgets08.curves_of(_curve_runs(), "experiment/paper", "none", "bos_cost")
    assert costs[0] == pytest.approx([0.1, 0.1, 0.1])
    assert widgets08.curves_of(_curve_runs(), "experiment/sink/paper", "none", "share") == ([], [])
    fig = widgets08.training_curves(_curve_runs())
    assert len(fig.axes) == 3  # share, loss with BOS blocked, cost; the strong-sink set-up has no run
    lines = fig.axes[0].get_lines()  # the course's set-up, the share: 2 seeds + 1 mean per arm
    assert len(lines) == 2 * 3 and lines[2].get_ydata().tolist() == pytest.approx([0.0, 0.25, 0.5])
    assert lines[2].get_linewidth() > 3 * lines[0].get_linewidth()  # the mean bold, the seeds thin
    # the loss with BOS blocked: per arm 2 seeds, their mean and the dashed mean loss with every key
    blocked = fig.axes[1].get_lines()
    assert len(blocked) == 2 * 4 and blocked[3].get_linestyle() == "--"
    assert blocked[2].get_ydata().tolist() == pytest.approx([2.6, 2.5, 2.4])
    assert blocked[3].get_ydata().tolist() == pytest.approx([2.5, 2.4, 2.3])
    # the stage-1 arms only, unless asked for others
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["baseline (n = 2)", "G1 elementwise (n = 2)"]


def test_shipped_runs_carry_the_functional_tests():
    runs = lm.load_metrics()
    for key, run in runs.items():
        if key.endswith("seed0"):
            for name in ("loss_bos_blocked", "loss_bos_value_zeroed", "loss_window", "loss_window_bos",
                         "value_drain", "sink_rate"):
                assert name in run, (key, name)
    shipped = experiment.load()
    for key, run in shipped.items():
        assert run["curve"][0]["step"] == 0 and run["curve"][-1]["step"] == run["steps"]
        assert key == experiment.run_key(run["setup"], run["arm"], run["seed"])
