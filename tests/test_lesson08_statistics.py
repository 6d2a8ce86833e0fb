"""Lesson 08's statistics (course/lesson08_statistics.py), checked by brute force, and the
statistics the lesson prints, recomputed from the shipped metrics without the course's code."""
import itertools
import json
import math
import random

import numpy as np
import pytest

from course import ROOT
from course import lesson08_statistics as stats


def _brute_force(first, second):
    """U (pairs with first < second) and its exact two-sided p, by listing every way to split the
    pooled values into the two arms (no ties)."""
    pooled = [*first, *second]
    u = sum(x < y for x in first for y in second)
    counts = {}
    for chosen in itertools.combinations(range(len(pooled)), len(first)):
        rest = [pooled[i] for i in range(len(pooled)) if i not in chosen]
        value = sum(pooled[i] < y for i in chosen for y in rest)
        counts[value] = counts.get(value, 0) + 1
    total = sum(counts.values())
    lower = sum(c for v, c in counts.items() if v <= u) / total
    upper = sum(c for v, c in counts.items() if v >= u) / total
    return u, min(1.0, 2 * min(lower, upper)), upper


def test_the_u_distribution_counts_every_ordering():
    for n1 in range(1, 6):
        for n2 in range(1, 6):
            counts = stats.u_counts(n1, n2)
            assert sum(counts) == math.comb(n1 + n2, n1) and len(counts) == n1 * n2 + 1
            assert counts == counts[::-1]  # symmetric about n1 n2 / 2
    assert stats.u_counts(2, 2) == (1, 1, 2, 1, 1)


def test_exact_p_matches_brute_force():
    rng = random.Random(8)
    for _ in range(60):
        n1, n2 = rng.randint(1, 6), rng.randint(1, 6)
        first = [rng.gauss(0.3 * rng.random(), 1) for _ in range(n1)]
        second = [rng.gauss(0, 1) for _ in range(n2)]
        u, two_sided, one_sided = _brute_force(first, second)
        assert stats.mann_whitney(first, second) == pytest.approx((u, two_sided), abs=1e-12)
        assert stats.mann_whitney(first, second, "less") == pytest.approx((u, one_sided), abs=1e-12)


def _brute_force_with_ties(first, second):
    """U (ties count one half) and its exact p, two-sided and one-sided ("less"), by listing
    every split of the pooled values (ties kept) into arms of len(first) and len(second)."""
    def u_of(a, b):
        return sum(1.0 if x < y else 0.5 if x == y else 0.0 for x in a for y in b)
    pooled = [*first, *second]
    us = []
    for chosen in itertools.combinations(range(len(pooled)), len(first)):
        us.append(u_of([pooled[i] for i in chosen], [pooled[i] for i in range(len(pooled)) if i not in chosen]))
    u = u_of(first, second)
    lower = sum(v <= u for v in us) / len(us)
    upper = sum(v >= u for v in us) / len(us)
    return u, min(1.0, 2 * min(lower, upper)), upper


def test_exact_p_with_ties_counts_every_split_of_the_values_there_are():
    rng = random.Random(9)
    for _ in range(60):
        n1, n2 = rng.randint(1, 6), rng.randint(1, 6)
        first = [rng.choice([0.0, 0.5, 1.0, 1.5]) for _ in range(n1)]  # few values: many ties
        second = [rng.choice([0.5, 1.0, 1.5, 2.0]) for _ in range(n2)]
        u, two_sided, one_sided = _brute_force_with_ties(first, second)
        assert stats.mann_whitney(first, second) == pytest.approx((u, two_sided), abs=1e-12)
        assert stats.mann_whitney(first, second, "less") == pytest.approx((u, one_sided), abs=1e-12)
    # the distribution without ties is the same counted either way
    assert stats.u_counts_with_ties([1.0, 4.0, 5.0], [2.0, 3.0]) == {
        2 * u: c for u, c in enumerate(stats.u_counts(3, 2))}
    # [1, 2] against [2, 3]: all 6 splits of 1, 2, 2, 3 give U <= 3.5, two of them U = 3.5, so p = 2 x 2/6
    # (the distribution without ties would give 2 x 1/6)
    assert stats.mann_whitney([1.0, 2.0], [2.0, 3.0]) == (3.5, pytest.approx(2 / 3))


def test_the_extremes_and_the_smallest_p():
    assert stats.mann_whitney(range(10), range(10, 20)) == (100.0, pytest.approx(2 / 184_756))
    assert stats.mann_whitney(range(10, 20), range(10)) == (0.0, pytest.approx(2 / 184_756))
    assert stats.mann_whitney([1, 2, 3], [4, 5, 6], "less") == (9.0, pytest.approx(0.05))
    assert stats.smallest_p(3, 3) == pytest.approx(0.1) and stats.smallest_p(5, 10) == pytest.approx(2 / 3003)
    assert stats.smallest_p(1, 1) == 1.0  # never above 1
    assert stats.mann_whitney([1.0, 2.0], [2.0, 3.0])[0] == 3.5  # a tie counts one half
    assert stats.has_ties([1.0, 2.0], [2.0, 3.0]) and not stats.has_ties([1.0], [2.0])
    with pytest.raises(ValueError):
        stats.mann_whitney([1], [2], "greater")


def test_the_bootstrap_interval_of_a_ratio_of_means():
    first, second = [0.1, 0.2, 0.15, 0.05, 0.12], [0.4, 0.5, 0.45, 0.6, 0.38]
    ratio, low, high = stats.bootstrap_ratio(first, second)
    assert ratio == pytest.approx(np.mean(first) / np.mean(second))
    assert low < ratio < high
    # every resampled mean of the first lies within its range, so the ratio's interval does too
    assert min(first) / max(second) <= low and high <= max(first) / min(second)
    assert stats.bootstrap_ratio(first, second) == (ratio, low, high)  # seeded: the same every time
    assert stats.bootstrap_ratio(first, second, seed=1) != (ratio, low, high)
    assert stats.bootstrap_ratio(first, [0.0, 0.1]) is None  # the second arm's mean could be 0
    same = stats.bootstrap_ratio([1.0] * 5, [2.0] * 5)
    assert same == pytest.approx((0.5, 0.5, 0.5))


# ------------------------------------------------- the lesson's printed statistics, recomputed
NOTEBOOK = ROOT / "notebooks" / "08_gated_attention_paper.ipynb"
METRICS = ROOT / "data" / "lesson08" / "metrics_experiment.json"
LABELS = {"none": "baseline", "elementwise": "G1 elementwise", "headwise": "G1 headwise",
          "static": "static scalar", "wider": "wider baseline"}
MEASURES = {"first_token_share": ("share on BOS", lambda m: m["first_token_share"]),
            "bos_cost": ("cost of blocking BOS", lambda m: m["loss_bos_blocked"] - m["val_loss"])}
SETUPS = {"course": ("the course's set-up", "experiment/paper/bb/"),
          "sink": ("the strong-sink set-up", "experiment/sink/paper/bb/")}
# (first, second, the Bonferroni divisor of its family: 2 tests x 2 set-ups, 10 tests x 2 set-ups)
COMPARISONS = [("elementwise", "none", 4), ("elementwise", "wider", 20), ("wider", "none", 20),
               ("static", "none", 20), ("elementwise", "static", 20), ("headwise", "none", 20)]


def _outputs() -> str:
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    return "\n".join("".join(o.get("text", "")) for c in cells if c["cell_type"] == "code"
                     for o in c.get("outputs", []))


def _arm(runs, prefix, arm, measure):
    return [MEASURES[measure][1](m) for k, m in runs.items() if k.startswith(f"{prefix}{arm}/seed")]


def _exact_two_sided(first, second):
    """U and the two-sided p by the ranks of every split of the pooled seeds (no ties)."""
    pooled = sorted([*first, *second])
    assert len(set(pooled)) == len(pooled), "the exact test assumes no ties"
    rank = {v: i + 1 for i, v in enumerate(pooled)}
    n1, n2 = len(first), len(second)
    # pairs (x in first, y in second) with x < y = n1 n2 - (rank sum of first - n1 (n1 + 1) / 2)
    u = n1 * n2 - (sum(rank[x] for x in first) - n1 * (n1 + 1) // 2)
    sums = np.fromiter((sum(c) for c in itertools.combinations(range(1, n1 + n2 + 1), n1)), dtype=np.int64)
    us = n1 * n2 - (sums - n1 * (n1 + 1) // 2)
    return u, min(1.0, 2 * min((us <= u).mean(), (us >= u).mean()))


def _bootstrap(first, second, resamples=10_000, seed=0):
    """The lesson's interval, written again: numpy's PCG64 seeded with 0, the first arm's draws
    (resamples x n1), then the second's; the 2.5 % and 97.5 % quantiles of the ratios."""
    a, b = np.array(first), np.array(second)
    rng = np.random.default_rng(seed)
    ratios = a[rng.integers(0, len(a), (resamples, len(a)))].mean(1) / \
        b[rng.integers(0, len(b), (resamples, len(b)))].mean(1)
    return a.mean() / b.mean(), *np.quantile(ratios, [0.025, 0.975])


def test_the_lessons_printed_statistics_follow_from_the_shipped_metrics():
    runs = json.loads(METRICS.read_text())["runs"]
    printed = _outputs()
    lines = printed.splitlines()
    assert "{:,} resamples".format(stats.BOOTSTRAP_RESAMPLES) == "10,000 resamples"
    assert "10,000 resamples" in printed
    checked = 0
    for setup, (setup_label, prefix) in SETUPS.items():
        for measure, (measure_label, _value) in MEASURES.items():
            for first, second, family in COMPARISONS:
                a, b = _arm(runs, prefix, first, measure), _arm(runs, prefix, second, measure)
                if not a or not b:
                    continue
                name = f"{LABELS[first]} vs {LABELS[second]}"
                row = [line for line in lines if line.startswith(setup_label) and measure_label in line
                       and f" {name} " in line]
                assert len(row) == 1, (setup, measure, name, row)
                row = row[0]
                u = sum(x < y for x in a for y in b)
                assert f" {len(a)}/{len(b)} " in row and f" {u}/{len(a) * len(b)} " in row, row
                if min(len(a), len(b)) < 5:
                    assert row.rstrip().endswith("< 5 seeds"), row
                    continue
                u_ranks, p = _exact_two_sided(a, b)
                ratio, low, high = _bootstrap(a, b)
                assert u_ranks == u
                assert f" {p:.1e} " in row and f"{ratio:.2f} [{low:.2f}, {high:.2f}]" in row, (row, p, ratio)
                verdict = "yes" if p <= 0.05 / family else "no"
                assert row.rstrip().endswith(" " + verdict), row
                if (first, second) != ("headwise", "none"):
                    # the answer at the top of the lesson prints the same comparison in words
                    words = (f"ratio of the means {ratio:.2f} (95 % bootstrap interval {low:.2f}-{high:.2f}); "
                             f"U = {u} of {len(a) * len(b)}, two-sided exact p = {p:.2g}")
                    assert words in printed, words
                    said = "yes: the arms differ" if verdict == "yes" else "no: these seeds do not separate the arms"
                    assert f"below {0.05 / family:.4g} ({family} comparisons): {said}" in printed
                checked += 1
    # the course's set-up has G1 elementwise, the baseline and the wider baseline on 10 seeds each:
    # 3 comparisons of 2 measures at least
    assert checked >= 6
