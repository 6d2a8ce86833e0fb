"""Lesson 08's statistics for comparing two arms of seeds: the exact Mann-Whitney U test and the
ratio of the means with a bootstrap interval.

Seeds are few (3 to 10 per arm), so nothing here leans on a normal approximation: the U test's
null distribution is counted exactly, and the interval of the ratio comes from resampling the
seeds of each arm. Every function takes plain sequences of floats (one value per seed).

U counts the pairs (x of the first arm, y of the second) with x < y (a tie counts one half): U
= n1 n2 means every seed of the first arm lies below every seed of the second. Under the null
hypothesis (both arms draw from one continuous distribution) every one of the C(n1 + n2, n1)
orderings of the seeds is equally likely, and U's distribution is symmetric about n1 n2 / 2.
Where values tie, the test conditions on the values there are: every split of the pooled values
into arms of n1 and n2 is equally likely, and U's distribution is counted over those splits.
"""
from __future__ import annotations

import functools
import math

import numpy as np

BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 0
LEVEL = 0.95


@functools.lru_cache(maxsize=64)
def u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many of the C(n1 + n2, n1) orderings of two samples without ties give each value of
    U, U = 0 .. n1 n2."""
    counts = [[(1,) if i == 0 or j == 0 else None for j in range(n2 + 1)] for i in range(n1 + 1)]
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            # the largest value of all is either the first sample's (it lies below none of the
            # second's) or the second's (all i values of the first lie below it: + i)
            row = [0] * (i * j + 1)
            for u, c in enumerate(counts[i - 1][j]):
                row[u] += c
            for u, c in enumerate(counts[i][j - 1]):
                row[u + i] += c
            counts[i][j] = tuple(row)
    return counts[n1][n2]


def u_statistic(first, second) -> float:
    """The number of pairs (x in first, y in second) with x < y; ties count 1/2."""
    return sum(1.0 if x < y else 0.5 if x == y else 0.0 for x in first for y in second)


def has_ties(first, second) -> bool:
    """Whether a value occurs more than once over both samples (then mann_whitney counts U over
    the splits of the values there are, u_counts_with_ties)."""
    pooled = [*first, *second]
    return len(set(pooled)) < len(pooled)


def u_counts_with_ties(first, second) -> dict[int, int]:
    """How many of the C(n1 + n2, n1) splits of the pooled values into arms of n1 and n2 give each
    value of U, by 2U (an integer: a tie counts one half). Ties share their mid-rank, and U = n1 n2
    + n1 (n1 + 1) / 2 - (the first arm's rank sum), so counting the splits by their rank sum
    (subsets of n1 doubled mid-ranks, by dynamic programming) counts them by U."""
    pooled = sorted([*first, *second])
    n1, n2 = len(first), len(second)
    doubled = []  # 2 x mid-rank of every pooled value: ranks i + 1 .. j + 1 tie at (i + j + 2) / 2
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1] == pooled[i]:
            j += 1
        doubled += [i + j + 2] * (j - i + 1)
        i = j + 1
    top = sum(doubled)
    subsets = [[0] * (top + 1) for _ in range(n1 + 1)]  # subsets[k][s]: k values, doubled sum s
    subsets[0][0] = 1
    for taken, rank in enumerate(doubled):
        for k in range(min(n1, taken + 1), 0, -1):
            below, row = subsets[k - 1], subsets[k]
            for s in range(top, rank - 1, -1):
                if below[s - rank]:
                    row[s] += below[s - rank]
    base = 2 * n1 * n2 + n1 * (n1 + 1)
    return {base - s: c for s, c in enumerate(subsets[n1]) if c}


def mann_whitney(first, second, alternative: str = "two-sided") -> tuple[float, float]:
    """The exact Mann-Whitney U test of `first` against `second`: (U, p). alternative
    "two-sided": does either arm tend to lie below the other? p = 2 min(P(U' <= U), P(U' >= U)),
    at most 1. "less": does `first` tend to lie below `second`? p = P(U' >= U). Exact: from the
    distribution of every ordering without ties (u_counts), and where values tie, from every
    split of the values there are (u_counts_with_ties; a tie counts one half in U)."""
    first, second = list(first), list(second)
    u = u_statistic(first, second)
    if alternative not in ("two-sided", "less"):
        raise ValueError(f"alternative must be 'two-sided' or 'less', not {alternative!r}")
    if has_ties(first, second):  # counted by 2U
        counts, observed = u_counts_with_ties(first, second), round(2 * u)
    else:  # counted by U
        counts, observed = dict(enumerate(u_counts(len(first), len(second)))), u
    total = sum(counts.values())
    upper = sum(c for value, c in counts.items() if value >= observed) / total
    if alternative == "less":
        return u, upper
    lower = sum(c for value, c in counts.items() if value <= observed) / total
    return u, min(1.0, 2 * min(lower, upper))


def smallest_p(n1: int, n2: int, alternative: str = "two-sided") -> float:
    """The smallest p the exact test can give with n1 against n2 seeds (every seed of one arm
    below every seed of the other): 2 / C(n1 + n2, n1) two-sided, 1 / C(n1 + n2, n1) one-sided."""
    return min(1.0, (2 if alternative == "two-sided" else 1) / math.comb(n1 + n2, n1))


def ratio_of_means(first, second) -> float:
    return (sum(first) / len(first)) / (sum(second) / len(second))


def bootstrap_ratio(first, second, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                    level: float = LEVEL) -> tuple[float, float, float] | None:
    """mean(first) / mean(second) and its percentile bootstrap interval: each resample draws
    n1 seeds of the first arm and n2 of the second, with replacement, each arm on its own (numpy's
    PCG64 generator seeded with `seed`: first all the first arm's draws, resamples x n1, then the
    second's). None where the second arm's mean could be 0 or negative (a seed <= 0).
    With 5 to 10 seeds a percentile interval is somewhat too narrow: read it as the spread the
    seeds show, not as an exact 95 % guarantee."""
    a, b = np.asarray(list(first), dtype=float), np.asarray(list(second), dtype=float)
    if b.min() <= 0:
        return None
    rng = np.random.default_rng(seed)
    mean_a = a[rng.integers(0, len(a), (resamples, len(a)))].mean(axis=1)
    mean_b = b[rng.integers(0, len(b), (resamples, len(b)))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(mean_a / mean_b, [tail, 1 - tail])
    return float(a.mean() / b.mean()), float(low), float(high)
