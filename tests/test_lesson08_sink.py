"""Lesson 08's search for a strong attention sink: the model switches, the Bigram-Backcopy
variants, pool training, massive activations, the sink-search specs and the shipped set-up."""
import json

import pytest
import torch

from course import lm_training as lm
from solutions.tiny_lm import INIT_STD, TinyLM


def _model(seed=0, **options):
    torch.manual_seed(seed)
    return TinyLM(vocab_size=29, **options)


def test_normal_init_is_gpt2s_scheme():
    model = _model(init="normal", arch="paper")
    residual_std = INIT_STD / (2 * model.config["n_layers"]) ** 0.5
    for name, p in model.named_parameters():
        if p.dim() < 2:
            expected = 1.0 if "norm" in name else 0.0  # norm weights 1, biases 0
            assert torch.all(p == expected), name
        elif name.endswith(("linear_o.weight", "ffn.2.weight")):
            assert p.std().item() == pytest.approx(residual_std, rel=0.1), name
        else:
            assert p.std().item() == pytest.approx(INIT_STD, rel=0.1), name
    default = _model(arch="paper")
    assert default.blocks[0].attn.linear_q.weight.std() > 3 * INIT_STD  # PyTorch's default: wider


def test_bias_free_untied_model_has_no_biases_and_its_own_head():
    for arch in lm.ARCHS:
        model = _model(arch=arch, biases=False, tied=False)
        linear_biases = [n for n, p in model.named_parameters()
                         if n.endswith("bias") and "norm" not in n and "gate_proj" not in n]
        assert linear_biases == []
        assert model.lm_head.weight.shape == (29, 64)
        tokens = torch.randint(0, 29, (2, 7))
        with torch.no_grad():
            expected = model.lm_head(model.norm_out(_hidden(model, tokens)))
            assert torch.allclose(model(tokens), expected)
    tied = _model()
    assert not hasattr(tied, "lm_head") and "blocks.0.ffn.0.bias" in dict(tied.named_parameters())


def _hidden(model, tokens):
    h = model.embed(tokens)
    for block in model.blocks:
        h = block(h)[0]
    return h


def test_unknown_init_is_refused():
    with pytest.raises(ValueError, match="init"):
        TinyLM(vocab_size=5, init="xavier")


def test_trigger_token_copies_the_character_before_it():
    bb = lm.BigramBackcopy(trigger="token")
    assert bb.vocab[-1] == lm.TRIGGER_TOKEN and bb.vocab_size == 29
    tokens = bb.sample(400, torch.Generator().manual_seed(0))
    trigger = tokens == bb.trigger_ids[0]
    copies = bb.copy_positions(tokens)
    assert torch.equal(copies[:, 2:], trigger[:, 1:-1])  # a copy follows every trigger
    rows, cols = copies.nonzero(as_tuple=True)
    assert torch.equal(tokens[rows, cols], tokens[rows, cols - 2])
    assert not (trigger[:, :-1] & trigger[:, 1:]).any()  # never two triggers in a row
    assert not trigger[:, :2].any()  # BOS and the first character are never triggers
    # after any other character, a trigger with probability 0.1
    eligible = ~trigger[:, 1:-1] & (tokens[:, 1:-1] != lm.BOS)
    rate = trigger[:, 2:][eligible].double().mean().item()
    assert rate == pytest.approx(lm.TRIGGER_RATE, abs=0.01)


def test_letter_triggers_are_unchanged_by_default():
    bb = lm.BigramBackcopy()
    assert bb.vocab_size == 28 and bb.decode(bb.trigger_ids) == "fpw"


def test_first_character_and_raw_bigrams():
    uniform = lm.BigramBackcopy(first="uniform")
    first = uniform.sample(5000, torch.Generator().manual_seed(1))[:, 1]
    counts = torch.bincount(first, minlength=uniform.vocab_size)
    space = uniform.vocab.index(" ")
    assert counts[space] == 0 and counts[lm.BOS] == 0
    letters = counts[[i for i in range(1, uniform.vocab_size) if i != space]]
    assert letters.min() > 100 and letters.max() < 300  # about 5000 / 26 each
    raw = lm.BigramBackcopy(smoothed=False)
    q, u = raw.alphabet.index("q"), raw.alphabet.index("u")
    smoothed = lm.BigramBackcopy().probabilities[q, u]
    assert raw.probabilities[q, u] > max(0.8, smoothed)  # smoothing takes mass from q -> u
    assert (raw.probabilities == 0).any() and not (lm.BigramBackcopy().probabilities == 0).any()
    assert torch.allclose(raw.probabilities.sum(-1), torch.ones(27, dtype=torch.float64))


def test_bigram_counts_read_non_letters_as_one_space():
    counts = lm.bigram_counts("Ab, c!", "abc ")
    index = {ch: i for i, ch in enumerate("abc ")}
    assert counts[index["a"]][index["b"]] == 1
    assert counts[index["b"]][index[" "]] == 1 and counts[index[" "]][index["c"]] == 1
    assert sum(map(sum, counts)) == 4  # "ab c " has 4 pairs


def test_pool_batches_come_from_one_fixed_pool():
    bb = lm.BigramBackcopy()
    recipe = {"batch_size": 4, "pool": 10}
    first = lm._training_batches(bb, recipe, 50, torch.Generator().manual_seed(0))
    other_seed = lm._training_batches(bb, recipe, 50, torch.Generator().manual_seed(1))
    assert first.shape == (50, 4, lm.SEQ_LEN)
    pool = {tuple(row.tolist()) for row in first.flatten(0, 1)}
    assert len(pool) <= 10
    assert pool == {tuple(row.tolist()) for row in other_seed.flatten(0, 1)}  # same pool
    assert not torch.equal(first, other_seed)  # batches drawn differently


def test_massive_activations_are_relative_to_the_median():
    hidden = torch.ones(2, 5, 4)
    hidden[1, 3, 2] = -500.0
    found = lm.massive_activations(hidden)
    assert found["top"][0] == 500.0 and found["median"] == 1.0 and found["ratio"] == 500.0
    assert (found["position"], found["channel"]) == (3, 2)


def test_sink_spec_merges_factors():
    spec = lm.sink_spec(["trigger token", "uniform first", "no biases", "fixed pool"])
    assert spec == {"arch": "paper", "data": {"trigger": "token", "first": "uniform"},
                    "biases": False, "pool": 40_000}
    assert lm.sink_spec([], "gpt2") == {"arch": "gpt2", "data": {}}
    key = lm.sink_search_key(["uniform first", "trigger token"], "none", 2)
    assert key == "paper: trigger token + uniform first/bb/none/seed2"  # factors in a fixed order
    assert lm.sink_search_key([], "none", 0) == "paper: the course's set-up/bb/none/seed0"


def test_run_keys_and_files_of_a_set_up():
    assert lm.run_key("paper", "bb", "none", 0) == "paper/bb/none/seed0"
    assert lm.run_key("gpt2", "bb", "static", 1, "sink") == "sink/gpt2/bb/static/seed1"
    assert lm.metrics_path("paper", "bb").name == "metrics_paper_bb.json"
    assert lm.checkpoint_path("gpt2", "bb", setup="sink").name == "checkpoints_sink_gpt2_bb.pt"


def test_a_short_training_of_the_sink_set_up_runs_and_measures(tmp_path):
    """Two steps of one run of each set-up: the files, keys and measurements are complete."""
    for setup in lm.SETUPS:
        lm.train_all(archs=("paper",), datasets=("bb",), variants=("elementwise",), seeds=(0,),
                     steps=2, threads=1, folder=tmp_path, progress=False, setup=setup)
        key = lm.run_key("paper", "bb", "elementwise", 0, setup)
        stored = json.loads(lm.metrics_path("paper", "bb", tmp_path, setup).read_text())
        assert list(stored["runs"]) == [key]
        assert len(stored["runs"][key]["massive_activations_per_layer"]) == 2
        model = lm.load_checkpoint("bb", "elementwise", 0, folder=tmp_path, setup=setup)
        expected = lm.sink_spec(lm.SETUPS[setup])
        for option in ("init", "biases", "tied"):
            if option in expected:
                assert model.config[option] == expected[option]
    assert stored["setup"] == list(lm.SETUPS["sink"])


def test_shipped_sink_search_and_set_up_are_complete():
    search = lm.load_sink_search()
    assert all(key.startswith(("paper: ", "gpt2: ")) for key in search)
    runs = lm.load_metrics(setups=("sink",))
    for arch in lm.ARCHS:
        for gate in lm.VARIANTS:
            assert {lm.run_key(arch, "bb", gate, s, "sink") for s in lm.SEEDS} <= set(runs)
        model = lm.load_checkpoint("bb", "none", 0, arch=arch, setup="sink")
        assert model.config["tied"] is False and model.config["biases"] is False
