"""Checks for lesson 01 (Q, K, V by hand): stable softmax and scaled scores."""
from __future__ import annotations

import math

import torch

from course.checks import candidates, evidence
from course.checks.core import Case, Check
from course.checks.inputs import randn
from course.checks.kinds import bfloat16_of, float32_of, gradients_of, meta_of
from course.i18n import N_, _


def _finite(outputs) -> str | None:
    out = outputs["output"]
    if not torch.isfinite(out).all():
        return f"output holds {int((~torch.isfinite(out)).sum())} NaN/inf values"
    return None


def _sums_to_one(dim: int):
    def expect(outputs) -> str | None:
        sums = outputs["output"].sum(dim=dim)
        worst = (sums - 1).abs().max().item()
        return None if worst < 1e-12 else f"sums along dim={dim} are off from 1 by up to {worst:.3g}"
    return expect


WIDE_HINT = ("subtract each slice's MAX (amax): shifted by the min or the mean, a row that spans "
             "more than about 709 still overflows exp (exp(1600) = inf)")
# float64 softmax written any correct way agrees to about 1e-15; float32's rounding is 6e-8, so
# a tolerance of 1e-7 (the default) would let a float32 step inside pass here and fail later
EXACT = {"atol": 1e-12, "rtol": 1e-10}
def _shifted(x, dim):
    return (x - x.amax(dim=dim, keepdim=True)).exp()


# the normalisation and the axis of a softmax: the wrong ones it is easy to write, as formulas
NORMALISATION = [
    (N_("your result is exp(x - max) without the division: normalise each slice by its sum, "
        "exponentials / exponentials.sum(dim=dim, keepdim=True), so that it sums to 1 along "
        "`dim`"), lambda x, dim=-1: _shifted(x, dim)),
    (N_("your result is divided by the sum over the WHOLE tensor: the sum must run along `dim` "
        "only (sum(dim=dim, keepdim=True)), so that every slice sums to 1 on its own"),
     lambda x, dim=-1: _shifted(x, dim) / _shifted(x, dim).sum()),
    (N_("your softmax runs along the last axis whatever `dim` says: use the `dim` argument "
        "everywhere (the max and the sum), not a hard-coded -1"),
     lambda x, dim=-1: torch.softmax(x, dim=-1)),
    (N_("your result is divided by the max of the exponentials (which is 1), not by their sum: "
        "softmax divides by sum(dim=dim, keepdim=True)"),
     lambda x, dim=-1: _shifted(x, dim) / _shifted(x, dim).amax(dim=dim, keepdim=True)),
]


@evidence.equivalent("softmax:stable_softmax", "x")
def _same_scores(want, have, call) -> bool:
    """Scores that give one softmax are the same argument to stable_softmax (a constant shift
    per row; -1e9 where the reference hides a key with -inf; a row that hides every key)."""
    return evidence.same_softmax(want, have, call["args"].get("dim", -1))


MIDDLE = Case("(2, 4, 3) along dim=1", lambda f: f(randn(2, 4, 3, seed=12), dim=1),
              hint="use the `dim` argument everywhere (max and sum), not a hard-coded -1", **EXACT)

check_stable_softmax = Check(
    id="01.stable_softmax",
    target="softmax:stable_softmax",
    lesson="01",
    diagnose=lambda outcomes: candidates.matching(outcomes, NORMALISATION),
    cases=[
        Case("[0.1, 0.3, 1.0, 0.8]",
             lambda f: f(torch.tensor([0.1, 0.3, 1.0, 0.8], dtype=torch.float64)),
             hint="softmax(x)_i = exp(x_i) / sum_j exp(x_j)", **EXACT),
        Case("rows of a (3, 5) matrix sum to 1",
             lambda f: f(randn(3, 5, seed=11), dim=-1),
             hint="normalise each slice along `dim`: sum(dim=dim, keepdim=True)",
             expect=_sums_to_one(-1)),
        MIDDLE,
        Case("huge inputs [1000, 1001, 1002] stay finite",
             lambda f: f(torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)),
             hint="exp(1000) overflows to inf and inf/inf is NaN: subtract the max before exp",
             expect=_finite),
        Case("huge inputs [1000, 1001, 1002]",
             lambda f: f(torch.tensor([1000.0, 1001.0, 1002.0], dtype=torch.float64)),
             hint="exp(1000) overflows to inf and inf/inf is NaN: subtract the max before exp",
             **EXACT),
        Case("rows on different scales [[-1000, -999], [1000, 1001]] stay finite",
             lambda f: f(torch.tensor([[-1000.0, -999.0], [1000.0, 1001.0]], dtype=torch.float64)),
             hint="subtract each row's own max (amax(dim, keepdim=True)), not one global max",
             expect=_finite),
        Case("wide rows [[-800, 0, 800], [0, 1, 2]] stay finite",
             lambda f: f(torch.tensor([[-800.0, 0.0, 800.0], [0.0, 1.0, 2.0]],
                                      dtype=torch.float64)),
             hint=WIDE_HINT, expect=_finite),
        Case("wide rows [[-800, 0, 800], [-30, 0, 10]]",
             lambda f: f(torch.tensor([[-800.0, 0.0, 800.0], [-30.0, 0.0, 10.0]],
                                      dtype=torch.float64)),
             hint=WIDE_HINT, **EXACT),
        Case("one row (1, 5)", lambda f: f(randn(1, 5, seed=14)),
             hint="a single row keeps its size-1 axis: the result has x's shape (1, 5)", **EXACT),
        Case("(4, 1) along dim=-1: one entry per slice gets weight 1",
             lambda f: f(randn(4, 1, seed=15), dim=-1),
             hint="a slice of one entry has softmax 1; keep x's shape (4, 1)", **EXACT),
        Case("(3, 6) with spread x 30 along dim=0",
             lambda f: f(randn(3, 6, seed=13, scale=30.0), dim=0),
             hint="the max must be taken along `dim` with keepdim=True so it broadcasts back",
             **EXACT),
        Case("long rows: (2, 500) with spread x 10",
             lambda f: f(randn(2, 500, seed=16, scale=10.0), dim=-1),
             hint="normalise over the whole slice along `dim`, whatever its length", **EXACT, tags=("size",)),
        Case("gradients of a fixed loss, wide rows [[-800, 0, 800], [0, 1, 2]] and (2, 4, 3)",
             gradients_of(lambda f, x, y: torch.cat([f(x).flatten(), f(y, dim=1).flatten()]),
                          {"x": torch.tensor([[-800.0, 0.0, 800.0], [0.0, 1.0, 2.0]],
                                             dtype=torch.float64),
                           "y": randn(2, 4, 3, seed=17)}),
             hint="the gradient flows back through the shift, exp and the division: compute "
                  "into new tensors (an in-place `/=` or `exp_()` overwrites what backward "
                  "needs), with no .detach() on the way", **EXACT),
        float32_of(MIDDLE),
        bfloat16_of(MIDDLE),
        meta_of(MIDDLE),
    ],
)


TRANSPOSED_HINT = N_("the result is (queries, keys): q @ k.transpose(-2, -1), not k @ q^T")


def _which_scale(c: int, q_shape: tuple[int, ...] = ()):
    """Diagnosis for scaled_scores: name the wrong scale the scores match, if any.

    The expected scores are S / sqrt(c) (S = q @ k^T), so S = expected * sqrt(c), and the usual
    wrong scales are easy to compute from it. Any other single number the scores were divided by
    is named too, with the axis of q whose size it is.
    """
    def diagnose(expected, got) -> str | None:
        want, have = expected["output"], got["output"]
        if have.shape != want.shape:
            transposed = want.transpose(-2, -1)
            if have.shape == transposed.shape and torch.allclose(have.double(), transposed):
                return _(TRANSPOSED_HINT)
            return None
        n_q, n_k = want.shape[-2], want.shape[-1]
        raw = want * math.sqrt(c)
        candidates = [
            (N_("no scaling at all"), raw),
            (N_("a division by c = {c} instead of its square root (sqrt(c) twice?)"), raw / c),
            (N_("a division by sqrt(number of keys) = sqrt({n_k})"), raw / math.sqrt(n_k)),
            (N_("a division by the number of keys = {n_k}"), raw / n_k),
            (N_("a division by sqrt(number of queries) = sqrt({n_q})"), raw / math.sqrt(n_q)),
        ]
        for label, candidate in candidates:
            if torch.allclose(candidate, want, rtol=1e-9, atol=1e-12):
                continue  # here this wrong scale equals the right one: it cannot be told apart
            if torch.allclose(have.double(), candidate, rtol=1e-6, atol=1e-9):
                return _(SCALE_MATCH).format(label=_(label).format(c=c, n_k=n_k, n_q=n_q), c=c)
        return _other_divisor(raw, have, c, q_shape)
    return diagnose


SCALE_MATCH = N_("these scores match {label}: divide by sqrt(c) = sqrt({c}), with c = q.shape[-1] "
                 "(the channels, not a sequence length)")


def _other_divisor(raw: torch.Tensor, have: torch.Tensor, c: int, q_shape) -> str | None:
    """Scores q.k divided by some other number: which, and which axis of q has that size."""
    flat_raw, flat_have = raw.flatten().double(), have.flatten().double()
    if float(flat_raw @ flat_raw) == 0.0:
        return None
    alpha = float(flat_raw @ flat_have / (flat_raw @ flat_raw))
    if alpha <= 0 or not torch.allclose(alpha * flat_raw, flat_have, rtol=1e-6, atol=1e-9):
        return None
    n = round(1 / alpha ** 2)
    if n < 1 or abs(1 / alpha ** 2 - n) > 1e-6 * n or n == c:
        return None
    axes = [f"q.shape[{i}]" for i, size in enumerate(q_shape[:-1]) if size == n]
    where = _(", the size of {axes}").format(axes=" and ".join(axes)) if axes else ""
    return _("these scores are q @ k^T divided by sqrt({n}){where}: divide by sqrt(c) = "
             "sqrt({c}), with c = q.shape[-1], the last axis (also when q has batch axes)").format(
        n=n, where=where, c=c)


BATCHED_SCORES = Case("batch (2, 3), 4 queries, 6 keys, c=8",
                      lambda f: f(randn(2, 3, 4, 8, seed=25), randn(2, 3, 6, 8, seed=26)),
                      hint="transpose only the last two axes of k (k.transpose(-2, -1)), keep "
                           "the batch axes", diagnose=_which_scale(8, (2, 3, 4, 8)))

check_scaled_scores = Check(
    id="01.scaled_scores",
    target="softmax:scaled_scores",
    lesson="01",
    cases=[
        Case("seed example q=[1,0], keys [1,0], [0,1]",
             lambda f: f(torch.tensor([[1.0, 0.0]], dtype=torch.float64),
                         torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)),
             hint="scores are q @ k^T, then divide by sqrt(c) (c = q.shape[-1]): here [[1/sqrt(2), 0]]",
             shape_hint=TRANSPOSED_HINT, diagnose=_which_scale(2)),
        Case("3 queries, 5 keys, c=4: shape (3, 5)",
             lambda f: f(randn(3, 4, seed=21), randn(5, 4, seed=22)),
             hint="scores[i, j] = q_i . k_j / sqrt(c): " + TRANSPOSED_HINT,
             diagnose=_which_scale(4)),
        Case("scale probe: q = k = ones(16), score 16/sqrt(16) = 4",
             lambda f: f(torch.ones(1, 16, dtype=torch.float64), torch.ones(1, 16, dtype=torch.float64)),
             hint="divide by sqrt(c), with c = q.shape[-1] (not by c, not by the sequence length)",
             diagnose=_which_scale(16)),
        Case("scale probe: 2 queries, 7 keys, c=9",
             lambda f: f(randn(2, 9, seed=23), randn(7, 9, seed=24)),
             hint="divide by sqrt(c), with c = q.shape[-1] (not by c, not by the sequence length)",
             diagnose=_which_scale(9)),
        BATCHED_SCORES,
        Case("batch (1,), 1 query, 1 key, c=3",
             lambda f: f(randn(1, 1, 3, seed=27), randn(1, 1, 3, seed=28)),
             hint="a batch of one, one query and one key still give shape (1, 1, 1)",
             diagnose=_which_scale(3, (1, 1, 3))),
        Case("40 queries, 33 keys, c=16",
             lambda f: f(randn(40, 16, seed=29), randn(33, 16, seed=30)),
             hint="scores[i, j] = q_i . k_j / sqrt(c) for every query i and key j, whatever "
                  "their numbers: (n_q, n_k) = (40, 33)", diagnose=_which_scale(16), tags=("size",)),
        Case("gradients of a fixed loss w.r.t. q and k: batch (2,), 3 queries, 5 keys, c=4",
             gradients_of(lambda f, q, k: f(q, k), {"q": randn(2, 3, 4, seed=31),
                                                     "k": randn(2, 5, 4, seed=32)}),
             hint="q and k both reach the scores through the matrix product: no .detach(), "
                  ".item() or numpy on the way"),
        float32_of(BATCHED_SCORES),
        bfloat16_of(BATCHED_SCORES),
        meta_of(BATCHED_SCORES),
    ],
)
