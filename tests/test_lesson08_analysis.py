"""Lesson 08's analysis module: seed counting, the strict verdict rule and the printed tables."""
import torch

from course import lesson08_analysis as analysis
from course import lm_training as lm


def _run(share, loss=2.0, layer0=None, gate_mean=None, ratio=30.0, at_bos=False, **extra):
    layer = {"top": [ratio, 1.0, 1.0], "median": 1.0, "ratio": ratio,
             "position": 0 if at_bos else 5, "channel": 3}
    return {"first_token_share": share, "val_loss": loss,
            "first_token_share_per_layer": [layer0 if layer0 is not None else share, share],
            "gate_mean": gate_mean, "gate_below_0.1": None if gate_mean is None else 0.9,
            "massive_activations_per_layer": [layer, layer], "copy_accuracy": 1.0, **extra}


def _runs(base_shares, gated_shares, prefix="paper", dataset="bb"):
    runs = {}
    for gate, shares in (("none", base_shares), ("elementwise", gated_shares)):
        for seed, share in enumerate(shares):
            runs[f"{prefix}/{dataset}/{gate}/seed{seed}"] = _run(
                share, gate_mean=None if gate == "none" else 0.05)
    return runs


def test_seeds_are_counted_per_prefix_dataset_and_variant():
    runs = {**_runs([0.5, 0.4, 0.45], [0.1, 0.1]), **_runs([0.3], [0.2], prefix="sink/paper")}
    assert analysis.n_seeds(runs, "paper", "bb", "none") == 3
    assert analysis.n_seeds(runs, "paper", "bb", "elementwise") == 2
    assert analysis.n_seeds(runs, "sink/paper", "bb", "none") == 1
    assert analysis.n_seeds(runs, "paper", "text", "none") == 0
    assert analysis.seeds_listed(runs, "paper", "bb", "none") == "0, 1, 2"


def test_verdict_is_yes_only_when_every_gated_seed_is_below_every_baseline_seed():
    yes = _runs([0.5, 0.4, 0.45], [0.10, 0.05, 0.15])
    assert analysis.verdict_lower(yes, "paper", "bb", "first_token_share") == "yes, 4.5x lower"
    overlap = _runs([0.5, 0.2, 0.45], [0.10, 0.05, 0.25])
    assert analysis.verdict_lower(overlap, "paper", "bb", "first_token_share") == "no (within seed noise)"
    higher = _runs([0.1, 0.1, 0.1], [0.2, 0.3, 0.2])
    assert analysis.verdict_lower(higher, "paper", "bb", "first_token_share") == "no"
    few = _runs([0.5, 0.4], [0.1, 0.1, 0.1])
    assert analysis.verdict_lower(few, "paper", "bb", "first_token_share") == \
        "direction only: lower (< 3 seeds)"
    assert analysis.verdict_lower(yes, "gpt2", "bb", "first_token_share") == "not measured"


def test_loss_verdict_reports_the_difference():
    runs = {}
    for gate, losses in (("none", [2.0, 2.1, 2.05]), ("elementwise", [1.9, 1.95, 1.8])):
        for seed, loss in enumerate(losses):
            runs[f"paper/text/{gate}/seed{seed}"] = _run(0.1, loss=loss)
    assert analysis.verdict_lower(runs, "paper", "text", "val_loss") == "yes, -0.167"
    assert analysis.pair(runs, "paper", "text", "val_loss", ".2f") == "2.05 -> 1.88"


def test_sparsity_and_massive_activations():
    runs = _runs([0.5, 0.4, 0.45], [0.1, 0.1, 0.1])
    assert analysis.sparse(runs, "paper", "bb") == "mean 0.05, 90% < 0.1"
    assert analysis.sparse_verdict(runs, "paper", "bb") == "yes"
    runs["paper/bb/none/seed0"]["massive_activations_per_layer"][1] = {
        "top": [2000.0, 1.0, 1.0], "median": 2.0, "ratio": 1000.0, "position": 0, "channel": 1}
    assert analysis.massive_ratios(runs, "paper", "bb", "none") == [1000.0, 30.0, 30.0]
    assert analysis.values(runs, "paper", "bb", "none", "massive_ratio")[0] == 1000.0
    table = analysis.massive_table(runs, "paper", "bb")
    assert "1/3" in table.splitlines()[1]  # one seed of three has its top activation at BOS


def test_tables_have_one_row_per_variant_and_say_what_is_missing():
    runs = _runs([0.5, 0.4, 0.45], [0.1, 0.12, 0.1])
    lines = analysis.results_table(runs, "paper", "bb").splitlines()
    assert len(lines) == 1 + len(lm.VARIANTS)
    assert lines[1].split("|")[1].strip() == "0.45 [0.40, 0.50]" and lines[1].endswith("| 3")
    assert lines[3].split("|")[1].strip() == "-"  # headwise: no seed
    runs.update({k.replace("elementwise", g): v for k, v in list(runs.items())
                 for g in ("headwise", "static") if "elementwise" in k})
    text = analysis.side_by_side(runs, {"paper": "paper-like"}, "bb")
    assert "0.450   0.45, 0.45" in text.splitlines()[2]


def test_ablation_table_counts_seeds_of_each_source():
    runs = _runs([0.5, 0.4, 0.45], [0.1, 0.12, 0.1])
    ablations = _runs([0.3], [0.2], prefix="gpt2 + RoPE")
    text = analysis.ablation_table({"build": (runs, "paper"), "gpt2 + RoPE": (ablations, "gpt2 + RoPE"),
                                    "absent": (ablations, "nothing")}, "bb")
    lines = text.splitlines()
    assert len(lines) == 3  # the header, two sources; a source without runs is left out
    assert lines[1].rstrip().endswith("3") and lines[2].rstrip().endswith("1")


def test_search_table_marks_the_factors_of_each_run():
    factors = lm.SINK_FACTORS
    search = {}
    for seed, share in enumerate([0.6, 0.5]):
        search[lm.sink_search_key(list(factors), "none", seed)] = _run(share, layer0=0.9)
    search[lm.sink_search_key(["uniform first"], "none", 0)] = _run(0.2, layer0=0.3)
    search[lm.sink_search_key(["uniform first"], "elementwise", 0)] = _run(0.1)  # not a baseline
    rows = analysis.search_rows(search, factors)
    assert [len(r["shares"]) for r in rows] == [2, 1]
    assert rows[1]["on"] == ["uniform first"]
    lines = analysis.search_table(search, factors).splitlines()
    assert lines[2].startswith("x x x x x x x |") and "0.550 [0.500, 0.600]" in lines[2]
    assert lines[3].startswith(". . . . . x . |")


def test_paper_comparison_has_every_claim_for_every_case():
    runs = {**_runs([0.5, 0.4, 0.45], [0.1, 0.12, 0.1]),
            **_runs([0.2, 0.25, 0.22], [0.2, 0.1, 0.3], prefix="gpt2")}
    rows = analysis.paper_rows(runs, [("bb", "paper", "gpt2", "bb")])
    assert len(rows) == len(analysis.PAPER_CLAIMS) + 1 + 2
    assert rows[0][3].startswith("yes") and rows[0][4].endswith("no (within seed noise)")
    assert "| claim" not in analysis.paper_comparison(runs, [("bb", "paper", "gpt2", "bb")])


def test_trained_layer_and_value_at_bos_on_a_small_model():
    from solutions.gated_attention import GatedCausalSelfAttention
    from solutions.tiny_lm import TinyLM
    tokens = torch.randint(1, 10, (3, 9))
    tokens[:, 0] = lm.BOS
    for biases in (True, False):
        torch.manual_seed(0)
        model = TinyLM(vocab_size=10, gate="elementwise", biases=biases).double().eval()
        if biases:
            with torch.no_grad():
                model.blocks[1].attn.linear_o.bias.normal_()
        module, x, reference = analysis.trained_layer(model, tokens, GatedCausalSelfAttention, layer=1)
        assert torch.allclose(module(x), reference, atol=1e-12)
    ratios = analysis.value_at_bos(model, tokens)
    assert len(ratios) == 4 and all(r > 0 for r in ratios)


def test_search_with_setups_puts_the_set_ups_baselines_first():
    factors = lm.SINK_FACTORS
    search = {lm.sink_search_key(["uniform first"], "none", 0): _run(0.2),
              lm.sink_search_key(list(factors), "none", 0): _run(0.6)}
    runs = {lm.run_key("paper", "bb", "none", s, "sink"): _run(0.6 - 0.1 * s) for s in range(3)}
    runs.update({lm.run_key("paper", "bb", "none", s): _run(0.2) for s in range(3)})
    merged = analysis.search_with_setups(search, runs, {"course": (), "sink": tuple(factors)})
    rows = analysis.search_rows(merged, factors)
    assert [r["on"] for r in rows] == [[], list(factors), ["uniform first"]]
    assert [len(r["shares"]) for r in rows] == [3, 3, 1]


def test_massive_extremes_cover_every_layer_of_every_run():
    runs = {"a/bb/none/seed0": _run(0.1, ratio=20.0), "b/bb/none/seed0": _run(0.1, ratio=90.0, at_bos=True),
            "c/bb/none/seed0": {"first_token_share": 0.1}}  # no massive activations measured
    found = analysis.massive_extremes(runs)
    assert found == {"lowest": (20.0, "a/bb/none/seed0"), "highest": (90.0, "b/bb/none/seed0"),
                     "at_bos": 2, "layers": 4}
