"""One formula with a free constant: which value of the constant a result was computed with.

A correct answer may use another value of a small constant than the reference (LayerNorm's eps:
1e-5 in PyTorch and AlphaFold2, 1e-6 in many language models). Widening the comparison's
tolerance to let it through would let real bugs through too; instead a check finds the constant
the student's result was computed with (the same formula, evaluated at that value, gives the
result to the case's tolerance) and decides by a documented range:

    found = fit(lambda eps: distance_at(eps), low=1e-16, high=1e-1)   # None or the best eps
    if found and ACCEPTED[0] <= found <= ACCEPTED[1]: ...            # the same formula

`distance_at(value)` is how far the formula's outputs at that value are from the result (in units
of the tolerance: <= 1 is a match). The search is a grid over powers of ten, refined by golden
sections in log space around the best point; it costs a few dozen evaluations of a small case and
runs only for a result that already differs.
"""
from __future__ import annotations

import math
from typing import Callable


def fit(distance: Callable[[float], float], low: float, high: float,
        steps: int = 40) -> float | None:
    """The value in [low, high] at which `distance` is smallest, if it is at most 1 there."""
    grid = [10.0 ** k for k in range(math.ceil(math.log10(low)), math.floor(math.log10(high)) + 1)]
    scored = sorted((distance(v), v) for v in grid)
    best_distance, best = scored[0]
    if best_distance <= 1.0:
        return best
    if best_distance > 1e6:  # nowhere near: another formula, not another constant
        return None
    a, b = math.log10(best) - 1.0, math.log10(best) + 1.0
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = distance(10.0 ** c), distance(10.0 ** d)
    for _ in range(steps):
        if fc <= 1.0:
            return 10.0 ** c
        if fd <= 1.0:
            return 10.0 ** d
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = distance(10.0 ** c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = distance(10.0 ** d)
    return None


# LayerNorm's eps: what a check of a LayerNorm accepts. 1e-5 (PyTorch's default, AlphaFold2's)
# and 1e-6 (many language models) are common; below 1e-6 (BERT's 1e-12, or none at all) the eps no
# longer keeps a row of (nearly) equal channels from dividing by about 0.
LAYER_NORM_EPS = (1e-6, 1e-4)


def scaled_gap(formula: dict, result: dict, atol: float, rtol: float) -> float:
    """max over outputs of |formula - result| / (atol + rtol * |formula|): at most 1 is a match
    (inf when the outputs do not line up). Each output is measured with the tolerance its dtype
    gets in the comparison itself (outputs.tolerances: a float32 case cannot agree to 1e-7), so
    a constant is judged as the comparison judges a result."""
    import torch

    from course.checks.outputs import tolerances

    worst = 0.0
    for key, want in formula.items():
        have = result.get(key)
        if have is None or have.shape != want.shape:
            return math.inf
        if not want.dtype.is_floating_point:
            if not torch.equal(want, have.to(want.dtype)):
                return math.inf
            continue
        want64, have64 = want.detach().double(), have.detach().double()
        a, r = tolerances(want, atol, rtol)
        limit = a + r * want64.abs()
        ratio = ((want64 - have64).abs() / limit).nan_to_num(math.inf)
        if ratio.numel():
            worst = max(worst, float(ratio.max()))
    return worst
