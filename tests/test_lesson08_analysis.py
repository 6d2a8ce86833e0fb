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
    # means 0.45 / 0.10; pairings from 0.4 / 0.15 to 0.5 / 0.05; 3 below 3: p = 1/20
    assert analysis.verdict_lower(yes, "paper", "bb", "first_token_share") == \
        "yes, 4.5x lower (2.7-10.0x), p = 0.05"
    overlap = _runs([0.5, 0.2, 0.45], [0.10, 0.05, 0.25])
    # U = 8 of 9 pairs: 2 of the 20 orderings reach it
    assert analysis.verdict_lower(overlap, "paper", "bb", "first_token_share") == \
        "not shown (seeds overlap), p = 0.1"
    higher = _runs([0.1, 0.1, 0.1], [0.2, 0.3, 0.2])
    assert analysis.verdict_lower(higher, "paper", "bb", "first_token_share") == "no"
    few = _runs([0.5, 0.4], [0.1, 0.1, 0.1])
    assert analysis.verdict_lower(few, "paper", "bb", "first_token_share") == \
        "direction only: lower (< 3 seeds)"
    assert analysis.verdict_lower(yes, "gpt2", "bb", "first_token_share") == "not measured"


def test_with_five_seeds_or_more_the_verdict_is_the_two_sided_exact_test():
    # 5 against 5, every gated seed below: two-sided p = 2 / C(10, 5) = 2/252
    runs = _runs([0.5, 0.4, 0.45, 0.42, 0.48], [0.10, 0.05, 0.15, 0.12, 0.08])
    ratio = analysis.stats.bootstrap_ratio([0.10, 0.05, 0.15, 0.12, 0.08], [0.5, 0.4, 0.45, 0.42, 0.48])
    assert analysis.verdict_lower(runs, "paper", "bb", "first_token_share") == \
        f"yes, ratio {ratio[0]:.2f} [{ratio[1]:.2f}, {ratio[2]:.2f}], two-sided p = 0.0079"
    # overlapping seeds: not shown, however the means lie
    runs = _runs([0.5, 0.1, 0.45, 0.12, 0.48], [0.10, 0.05, 0.55, 0.12, 0.5])
    assert analysis.verdict_lower(runs, "paper", "bb", "first_token_share").startswith("not shown, two-sided p = ")
    # significantly higher is a no
    runs = _runs([0.1, 0.05, 0.15, 0.12, 0.08], [0.5, 0.4, 0.45, 0.42, 0.48])
    assert analysis.verdict_lower(runs, "paper", "bb", "first_token_share") == "no (higher), two-sided p = 0.0079"


def test_loss_verdict_reports_the_difference():
    runs = {}
    for gate, losses in (("none", [2.0, 2.1, 2.05]), ("elementwise", [1.9, 1.95, 1.8])):
        for seed, loss in enumerate(losses):
            runs[f"paper/text/{gate}/seed{seed}"] = _run(0.1, loss=loss)
    assert analysis.verdict_lower(runs, "paper", "text", "val_loss") == "yes, -0.167, p = 0.05"
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
    assert lines[1].split("|")[0].strip() == "baseline"  # the variants' printed names
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
    # the claims, the input-independent gate, massive activations two ways, sparsity, two by algebra
    assert len(rows) == len(analysis.PAPER_CLAIMS) + 1 + 2 + 1 + 2
    # the GPT-2-style arms tie at 0.2: U = 5.5, and 8 of the 20 splits of the six values reach it
    assert rows[0][3].startswith("yes") and rows[0][4].endswith("not shown (seeds overlap), p = 0.4")
    assert rows[1][2].endswith("-") and rows[1][3] == "not measured"  # no functional tests here
    massive = {row[0]: row for row in rows}
    assert massive["largest |h| (M-Act)"][2] == "bb 30 -> 30" and massive["largest |h| (M-Act)"][1] == "M-Act 1053 -> 94"
    assert massive["max/median (Sun et al.)"][3] == "none form (< 1,000x)"
    assert "| claim" not in analysis.paper_comparison(runs, [("bb", "paper", "gpt2", "bb")])
    # a case of the paper-like build alone (the experiment) leaves the GPT-2-style column empty
    rows = analysis.paper_rows(runs, [("bb", "paper", None, "bb")])
    assert rows[0][4] == "" and rows[0][3].startswith("yes")


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


def test_exact_mann_whitney_against_hand_counts():
    # 3 against 3, all below: 1 of C(6, 3) = 20 orderings
    assert analysis.mann_whitney([1, 2, 3], [4, 5, 6]) == (9.0, 0.05)
    # 2 against 2: U takes 0, 1, 2, 2, 3, 4 over the 6 orderings, so P(U >= 3) = 2/6
    assert analysis.stats.u_counts(2, 2) == (1, 1, 2, 1, 1)
    assert analysis.mann_whitney([1, 2], [1.5, 3]) == (3.0, 2 / 6)
    # the wrong direction: every ordering reaches U = 0
    assert analysis.mann_whitney([5, 6], [1, 2]) == (0.0, 1.0)
    # a tie counts one half
    assert analysis.mann_whitney([1, 2], [2, 3])[0] == 3.5
    # 10 against 10, all below: 1 / C(20, 10)
    assert abs(analysis.mann_whitney(range(10), range(10, 20))[1] - 1 / 184_756) < 1e-15
    # 1 against 3 (4 orderings): U = 2 is reached by 2 of them
    assert analysis.mann_whitney([2.5], [1, 3, 4]) == (2.0, 0.5)


def test_ratio_range_spans_the_seed_pairings():
    ratio, low, high = analysis.ratio_range([0.4, 0.6], [0.1, 0.2])
    assert abs(ratio - 0.5 / 0.15) < 1e-12 and abs(low - 2.0) < 1e-12 and abs(high - 6.0) < 1e-12


def _experiment_runs():
    """Runs of the experiment's two set-ups, with the functional tests measured: 5 seeds of the
    baseline and G1 elementwise, 3 of the static scalar."""
    runs = {}
    spec = {"none": ([0.5, 0.4, 0.45, 0.55, 0.35], [0.13, 0.12, 0.2, 0.3, 0.25]),
            "elementwise": ([0.05, 0.04, 0.06, 0.19, 0.03], [0.01, 0.0, 0.02, 0.15, 0.01]),
            "static": ([0.2, 0.3, 0.25], [0.15, 0.14, 0.2])}
    for arm, (shares, costs) in spec.items():
        for seed, (share, cost) in enumerate(zip(shares, costs)):
            run = _run(share, loss=2.0, sink_rate=0.5, loss_bos_blocked=2.0 + cost,
                       loss_bos_value_zeroed=2.0 + cost / 2, loss_window={"8": 2.0 + cost},
                       loss_window_bos={"8": 2.0}, value_drain=[[0.5] * 4, [1.0] * 4])
            runs[f"experiment/paper/bb/{arm}/seed{seed}"] = run
    return runs


def test_comparisons_give_u_the_two_sided_exact_p_and_the_ratio():
    runs = _experiment_runs()
    c = analysis.compare(runs, "experiment/paper", "bos_cost", "elementwise", "none")
    # 5 against 5: G1 elementwise's 0.15 lies above two baseline seeds, so U = 25 - 2 = 23; the
    # 252 orderings reach U >= 23 in 1 + 1 + 2 ways, and two-sided doubles it
    assert c["n"] == (5, 5) and c["u"] == 23 and not c["rule"] and c["above"] == 1 and c["tested"]
    assert abs(c["p"] - 8 / 252) < 1e-12
    assert abs(c["ratio"][0] - 0.038 / 0.2) < 1e-12 and c["ratio"][1] < c["ratio"][0] < c["ratio"][2]
    c = analysis.compare(runs, "experiment/paper", "first_token_share", "elementwise", "static")
    assert c["rule"] and c["n"] == (5, 3) and not c["tested"] and c["p"] is None and c["ratio"] is None
    assert analysis.compare(runs, "experiment/sink/paper", "first_token_share", "elementwise", "none") is None
    lines = analysis.comparison_table(runs, analysis.PRIMARY + analysis.CONTROLS, family=4).splitlines()
    assert "p < 0.0125" in lines[0]
    # set-ups and arms without seeds are left out: 2 primary comparisons and 4 controls (static
    # against the baseline, elementwise against static, for both measures) in the course's set-up
    assert len(lines) == 1 + 6
    share, cost = lines[1], lines[2]
    assert "25/25" in share and "7.9e-03" in share and share.rstrip().endswith("yes")  # 2/252 < 0.0125
    assert "23/25" in cost and "3.2e-02" in cost and cost.rstrip().endswith("no")
    assert all(line.rstrip().endswith("< 5 seeds") for line in lines[3:])  # 3 static seeds: no test
    # the family's size counts every planned comparison, shipped or not: 2 and 10 tests, 2 set-ups
    assert analysis.family_size(analysis.PRIMARY) == 4 and analysis.family_size(analysis.CONTROLS) == 20
    assert "p < 0.0025" in analysis.comparison_table(runs, analysis.CONTROLS).splitlines()[0]
    assert analysis.smallest_p(3, 3) == 2 / 20 and analysis.smallest_p(5, 5, "less") == 1 / 252


def test_too_few_seeds_give_no_p():
    runs = {k: v for k, v in _experiment_runs().items() if k.endswith("seed0")}
    line = analysis.comparison_table(runs, analysis.PRIMARY).splitlines()[1]
    assert "e-0" not in line and "e+0" not in line and line.rstrip().endswith("< 5 seeds")
    text = analysis.headline(runs)
    assert "G1 elementwise vs baseline, 1 against 1 seeds: too few seeds for a comparison" in text
    assert "p = " not in text


def test_experiment_and_functional_tables():
    runs = _experiment_runs()
    lines = analysis.experiment_table(runs, "course").splitlines()
    assert len(lines) == 1 + 3 and lines[1].startswith("baseline ")
    assert lines[1].rstrip().endswith("5")
    assert "0.200 [0.120, 0.300]" in lines[1]  # the cost of blocking BOS
    table = analysis.functional_table(runs, [("course", "experiment/paper", "bb")], variants=("none", "elementwise"))
    assert table.splitlines()[1].split()[-1] == "+0.000"  # the window with BOS costs nothing
    assert "+0.130" in table.splitlines()[1] and "+0.065" in table.splitlines()[1]
    text = analysis.headline(runs).splitlines()
    # the 3-seed runs and the experiment's strong-sink set-up have no run here; the course's does
    assert text[0] == "the strong-sink set-up, the 3-seed runs: no run shipped yet"
    assert text[1] == "the strong-sink set-up, the experiment: no run shipped yet"
    assert text[2] == "the course's set-up, the experiment: share on BOS"
    assert text[3].split() == ["baseline", "0.450", "[0.350,", "0.550]", "n", "=", "5"]
    share = text.index("    G1 elementwise vs baseline, 5 against 5 seeds:")
    assert "U = 25 of 25, two-sided exact p = 0.0079" in text[share + 1]
    assert text[share + 2].strip() == ("every seed below every seed: yes; below 0.0125 (4 comparisons): "
                                       "yes: the arms differ")
    cost = text.index("    G1 elementwise vs baseline, 5 against 5 seeds:", share + 1)
    assert "U = 23 of 25, two-sided exact p = 0.032" in text[cost + 1]
    assert text[cost + 2].strip() == ("every seed below every seed: no (1 of 5 above the lowest of the "
                                      "second); below 0.0125 (4 comparisons): no: these seeds do not "
                                      "separate the arms")
    # the static scalar has 3 seeds: the rank rule, no test
    static = text.index("    G1 elementwise vs static scalar, 5 against 3 seeds:")
    assert text[static + 2].strip().endswith("fewer than 5 seeds per arm: no test")
