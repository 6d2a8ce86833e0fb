"""Checks for lesson 02 (single head): masks, attention weights, attention, the module."""
from __future__ import annotations

import math

import torch

from course.checks import candidates
from course.checks.core import Case, Check
from course.checks.hints import claims_nan
from course.checks.inputs import fill_parameters, parameter_shapes, randn, with_gradients
from course.checks.kinds import (bfloat16_of, deterministic_of, float32_of, gradients_of,
                                 meta_of)
from course.checks.lesson01 import check_scaled_scores, check_stable_softmax
from course.i18n import N_, _


def _qk(batch: tuple[int, ...], n_q: int, n_k: int, c: int, seed: int):
    return randn(*batch, n_q, c, seed=seed), randn(*batch, n_k, c, seed=seed + 1)


def _zero_rows_where_blind(outputs) -> str | None:
    """Probe for the fully masked row: query 1 sees no key, so its weights must be 0, not NaN."""
    out = outputs["output"]
    if torch.isnan(out).any():
        return "a query whose keys are all masked got NaN weights"
    if out[..., 1, :].abs().max() > 0:
        return f"the fully masked query got weights {out[..., 1, :].tolist()}, expected all 0"
    return None


def _finite(outputs) -> str | None:
    out = outputs["output"]
    if not torch.isfinite(out).all():
        return f"the weights hold {int((~torch.isfinite(out)).sum())} NaN/inf values"
    return None


WIDE_HINT = ("scores can be large (here up to about ±1000): use your stable_softmax (shift by "
             "each row's max), not exp(scores) / exp(scores).sum()")


def _lengths_mask():
    # sequence 0 has 5 real tokens, sequence 1 has 3: keys 3 and 4 of sequence 1 are padding
    return torch.tensor([[[True] * 5]], dtype=torch.bool).repeat(2, 1, 1).index_put_(
        (torch.tensor([1, 1]), torch.tensor([0, 0]), torch.tensor([3, 4])), torch.tensor(False))


check_causal_mask = Check(
    id="02.causal_mask",
    target="attention:causal_mask",
    lesson="02",
    cases=[
        Case("n=1", lambda f: f(1), hint="a single token may see itself: [[True]], a bool tensor"),
        Case("n=4", lambda f: f(4),
             hint="row i (query) may see columns j <= i (keys): lower triangle, diagonal included"),
        Case("n=6", lambda f: f(6),
             hint="row i (query) may see columns j <= i (keys): lower triangle, diagonal included"),
        Case("n=37: longer than any sequence the lesson shows", lambda f: f(37),
             hint="build the mask for the n asked for (torch.ones(n, n).tril(), or compare "
                  "positions), not by cutting a fixed-size mask: sequences can be of any length", tags=("size",)),
    ],
)

LENGTHS_AXIS = N_("give lengths its own axis before comparing: positions (max_len,) < "
                  "lengths[:, None] (B, 1) broadcasts to (B, max_len), one row per sequence; then "
                  "add the size-1 query axis in the middle: (B, 1, max_len)")

def _long_lengths(f):
    return f(torch.tensor([40, 17, 33]), 40)


check_padding_mask = Check(
    id="02.padding_mask",
    target="attention:padding_mask",
    lesson="02",
    error_hints=(("IndexError", r"too many indices", LENGTHS_AXIS),
                 ("RuntimeError", r"The size of tensor a", LENGTHS_AXIS)),
    cases=[
        Case("lengths [3], max_len 3: nothing padded", lambda f: f(torch.tensor([3]), 3),
             hint="True marks real tokens; the result is (B, 1, max_len)",
             shape_hint="keep the size-1 query axis in the middle: (B, 1, max_len)"),
        Case("lengths [5, 3, 1], max_len 5", lambda f: f(torch.tensor([5, 3, 1]), 5),
             hint="position p of sequence b is real when p < lengths[b]"),
        Case("lengths [2, 4], max_len 6", lambda f: f(torch.tensor([2, 4]), 6),
             hint="keep the size-1 query axis in the middle: (B, 1, max_len) broadcasts over queries"),
        Case("lengths [1], max_len 1: one sequence of one token", lambda f: f(torch.tensor([1]), 1),
             hint="even B = 1 and max_len = 1 give the full (B, 1, max_len) = (1, 1, 1)"),
        Case("lengths [40, 17, 33], max_len 40", _long_lengths,
             hint="position p of sequence b is real when p < lengths[b], for any max_len", tags=("size",)),
        meta_of(Case("lengths [40, 17, 33], max_len 40", _long_lengths, hint="")),
    ],
)


def _rows_sum_to_one(outputs) -> str | None:
    sums = outputs["output"].sum(-1)
    if torch.allclose(sums, torch.ones_like(sums)):
        return None
    return _("rows (queries) do not sum to 1 over the keys")


TWICE = N_("these weights are softmax(q k^T / c): the scores were divided by sqrt(c) twice. "
           "scaled_scores already divides by sqrt(c); add the bias and mask to its result as it is")
UNSCALED = N_("these weights are softmax(q k^T), without the 1/sqrt(c): take the scores from your "
              "scaled_scores(q, k) (lesson 01), which divides by sqrt(c)")
MASK_AFTER = N_("your weights are the softmax of the unmasked scores, multiplied by the mask "
                "afterwards: each row then sums to less than 1 over the keys a query may see. "
                "The mask acts on the scores BEFORE the softmax (masked_fill(~mask, "
                "float('-inf'))), so that each row spreads over its visible keys only")
INVERTED = N_("your weights spread each query over the keys the mask hides and give the keys "
              "it may see weight 0: the mask's polarity is inverted. True in a mask means 'may "
              "attend': hide the keys where it is False, masked_fill(~mask, float('-inf'))")
IGNORED = N_("your weights are those of the scores without the mask: the mask is never applied. "
             "Hide the keys where the mask is False before the softmax: "
             "masked_fill(~mask, float('-inf'))")
UNIFORM_BLIND = N_("a query that may see no key got the same weight 1/n on every (masked) key "
                   "instead of zeros: a finite fill such as -1e9 makes such a row all equal, "
                   "and its softmax uniform. The other rows are right. Give a row that sees no "
                   "key zero weights: multiply the weights by mask.any(dim=-1, keepdim=True) "
                   "(or fill with -inf and zero that row, as the lesson does)")
NAN_BLIND = claims_nan(N_("a query that may see no key got NaN weights: its scores are all -inf, "
                          "and the softmax of a row of -inf is NaN ((-inf) - (-inf)). The other "
                          "rows are right. Give such a row finite scores before the softmax "
                          "(masked_fill(~sees_something, 0.0)) and multiply its weights by 0"))


def _weights(q, k, bias=None, mask=None, *, invert=False, fill_only=False, after=False,
             ignore=False):
    """Softmax attention weights written anew (never imported from solutions/), with one of the
    wrong turns a learner takes: the mask inverted (everywhere, or in the fill only), applied
    after the softmax, or not at all."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if mask is None or ignore:
        return torch.softmax(scores, dim=-1)
    hidden = mask if invert or fill_only else ~mask
    mask = ~mask if invert else mask
    if after:
        return torch.softmax(scores, dim=-1) * mask
    sees = mask.expand_as(scores).any(dim=-1, keepdim=True)
    scores = scores.masked_fill(hidden, float("-inf")).masked_fill(~sees, 0.0)
    return torch.softmax(scores, dim=-1) * sees


# the mask's polarity and place: each wrong turn as a formula, run through the failing cases
MASKING = [
    (INVERTED, lambda q, k, bias=None, mask=None: _weights(q, k, bias, mask, invert=True)),
    (INVERTED, lambda q, k, bias=None, mask=None: _weights(q, k, bias, mask, fill_only=True)),
    (MASK_AFTER, lambda q, k, bias=None, mask=None: _weights(q, k, bias, mask, after=True)),
    (IGNORED, lambda q, k, bias=None, mask=None: _weights(q, k, bias, mask, ignore=True)),
]


def _blind_rows(outcomes) -> str | None:
    """Rows the reference gives all zeros (a query that sees no key) are uniform or NaN in the
    student's weights, and every other row agrees."""
    for outcome in outcomes:
        if outcome.status != "differs" or outcome.key != "output":
            continue
        want, have = outcome.expected["output"].double(), outcome.got["output"].double()
        if want.shape != have.shape:
            continue
        blind = (want == 0).all(dim=-1)
        if not blind.any() or not torch.allclose(have[~blind], want[~blind], rtol=1e-6,
                                                 atol=1e-9):
            continue
        rows = have[blind]
        if torch.isnan(rows).all():
            return _(NAN_BLIND)
        if torch.allclose(rows, torch.full_like(rows, 1.0 / rows.shape[-1]), atol=1e-6):
            return _(UNIFORM_BLIND)
    return None


def _weights_evidence(outcomes) -> str | None:
    """Scores scaled twice or not at all (from the cases without bias and mask); the mask
    inverted, applied after the softmax or not at all; a query that sees no key given uniform
    weights (a finite fill) or NaN."""
    for outcome in outcomes:
        if outcome.status != "differs" or "plain" not in outcome.case.tags:
            continue
        want, have = outcome.expected["output"].double(), outcome.got["output"].double()
        if want.shape != have.shape:
            continue
        c = outcome.case.facts["c"]
        for factor, hint in ((1 / math.sqrt(c), TWICE), (math.sqrt(c), UNSCALED)):
            candidate = torch.softmax(torch.log(want) * factor, dim=-1)
            if torch.allclose(have, candidate, rtol=1e-6, atol=1e-9):
                return _(hint)
    return candidates.matching(outcomes, MASKING, tags=("mask",)) or _blind_rows(outcomes)


PADDED = Case("padding mask (2, 1, 5): padded keys get weight 0",
               lambda f: f(*_qk((2,), 5, 5, 4, seed=41), mask=_lengths_mask()),
               hint="masked scores must become -inf (or a huge negative) before the softmax; "
                    "True in the mask means 'may attend'", tags=("mask",))
BATCHED = Case("batch (2, 3), 4 queries, 4 keys, c=8",
               lambda f: f(*_qk((2, 3), 4, 4, 8, seed=35)),
               hint="the softmax runs over the key axis (dim=-1), not the query axis",
               tags=("plain",), facts={"c": 8})
BLIND = torch.tensor([[True, False, True, True], [False, False, False, False],
                      [True, True, False, False]])


def _long_mask(n_q: int, n_k: int) -> torch.Tensor:
    """(2, 1, n_k): sequence 0 sees every key, sequence 1 the first n_k - 5."""
    mask = torch.ones(2, 1, n_k, dtype=torch.bool)
    mask[1, :, n_k - 5:] = False
    return mask


def _large_rows(call, n_q: int = 3, v: int = 0):
    """q and k scaled by 20 (scores of about ±1000: exp overflows) and a bias of -3000 on query
    0's row (every score of that row far below 0: exp underflows to 0 without the shift by the
    row's own max), with lesson 02's padding mask."""
    def run(f):
        q, k = randn(2, n_q, 4, seed=61, scale=20.0), randn(2, 5, 4, seed=62, scale=20.0)
        bias = torch.zeros(n_q, 5, dtype=torch.float64)
        bias[0] = -3000.0
        args = (q, k) + ((randn(2, 5, v, seed=63),) if v else ())
        return call(f, *args, bias, _lengths_mask())
    return run


LARGE_MASKED = N_("scores here reach about ±2000 and some keys are masked: hide the masked "
                  "scores before anything else (masked_fill(~mask, float('-inf'))), then use "
                  "your stable_softmax, which shifts each row by the max over the keys it may "
                  "see; exp of the raw scores overflows to inf, and a shift by a masked key's "
                  "score can turn every visible key's exp into 0")

check_attention_weights = Check(
    id="02.attention_weights",
    target="attention:attention_weights",
    lesson="02",
    uses=(check_scaled_scores, check_stable_softmax),
    diagnose=_weights_evidence,
    tag_hints={"large": LARGE_MASKED},
    cases=[
        Case("each query's weights sum to 1 over the keys",
             lambda f: f(*_qk((2,), 4, 4, 8, seed=33)),
             hint="the softmax runs over the key axis (dim=-1), not the query axis",
             expect=_rows_sum_to_one, tags=("plain",), facts={"c": 8}),
        Case("3 queries, 5 keys, c=4",
             lambda f: f(*_qk((), 3, 5, 4, seed=31)),
             hint="weights = softmax(q k^T / sqrt(c)) with the softmax over the keys (last axis)",
             tags=("plain",), facts={"c": 4}),
        BATCHED,
        Case("with an additive bias (2, 3, 4) on batch (2,)",
             lambda f: f(*_qk((2,), 3, 4, 6, seed=37), bias=randn(2, 3, 4, seed=39, scale=2.0)),
             hint="add the bias to the scaled scores, unscaled, before the softmax",
             tags=("bias",)),
        PADDED,
        Case("causal mask and bias together",
             lambda f: f(*_qk((3,), 4, 4, 4, seed=43), bias=randn(4, 4, seed=45),
                         mask=torch.ones(4, 4, dtype=torch.bool).tril()),
             hint="apply bias first, then the mask, then the softmax over keys",
             tags=("mask", "bias")),
        Case("large scores (q and k scaled by 20) stay finite",
             lambda f: f(randn(2, 3, 4, seed=48, scale=20.0), randn(2, 5, 4, seed=49, scale=20.0)),
             hint=WIDE_HINT, expect=_finite),
        Case("large scores (q and k scaled by 20), values",
             lambda f: f(randn(2, 3, 4, seed=48, scale=20.0), randn(2, 5, 4, seed=49, scale=20.0)),
             hint=WIDE_HINT, tags=("plain",), facts={"c": 4}),
        Case("batch (1,), one query, padding mask (1, 1, 5)",
             lambda f: f(*_qk((1,), 1, 5, 4, seed=50), mask=_lengths_mask()[1:]),
             hint="a batch of one with one query still gives weights of shape (1, 1, 5)",
             tags=("mask",)),
        Case("a query that may see no key gets zeros, not NaN",
             lambda f: f(*_qk((2,), 3, 4, 4, seed=47),
                         mask=torch.tensor([[True, False, True, True],
                                            [False, False, False, False],
                                            [True, True, False, False]])),
             hint="a query that may see no key gets a row of zeros (see the lesson for why "
                  "zeros): neither the softmax of a row of -inf (NaN) nor the uniform weights a "
                  "finite fill such as -1e9 gives",
             expect=_zero_rows_where_blind),
        Case("fully masked row, values",
             lambda f: f(*_qk((2,), 3, 4, 4, seed=47), mask=BLIND),
             hint="rows with at least one visible key are an ordinary softmax over those keys",
             tags=("mask",)),
        Case("large scores (q and k scaled by 30) with a padding mask",
             lambda f: f(randn(2, 3, 4, seed=53, scale=30.0), randn(2, 5, 4, seed=54, scale=30.0),
                         mask=_lengths_mask()),
             hint=LARGE_MASKED, tags=("mask", "large")),
        Case("7 queries, 33 keys, c=4, a padding mask: longer than the lesson's",
             lambda f: f(*_qk((2,), 7, 33, 4, seed=55), mask=_long_mask(7, 33)),
             hint="nothing may depend on a fixed number of queries or keys: n_q = 7 and "
                  "n_k = 33 here", tags=("mask", "size")),
        Case("gradients of a fixed loss w.r.t. q, k and bias, with a fully masked row",
             gradients_of(lambda f, q, k, bias: f(q, k, bias=bias, mask=BLIND),
                          {"q": randn(2, 3, 4, seed=57), "k": randn(2, 4, 4, seed=58),
                           "bias": randn(3, 4, seed=59)}),
             hint="gradients flow through the scores, the bias and the softmax; the fully "
                  "masked row has weights 0 and gradient 0, never NaN", tags=("mask",)),
        Case("rows of large positive and large negative scores: bias -3000 on query 0, a "
             "padding mask", _large_rows(lambda f, q, k, bias, mask: f(q, k, bias=bias, mask=mask)),
             hint=LARGE_MASKED, tags=("mask", "large")),
        float32_of(BATCHED),
        float32_of(PADDED),
        bfloat16_of(PADDED),
        meta_of(PADDED),
    ],
)


FORWARD_MASKED = Case("bias and padding mask are passed on",
                      lambda f: f(*_qk((2,), 5, 5, 4, seed=59), randn(2, 5, 3, seed=61),
                                  bias=randn(2, 5, 5, seed=63), mask=_lengths_mask()),
                      hint="pass bias and mask through to the weights")

check_attention_forward = Check(
    id="02.attention_forward",
    target="attention:scaled_dot_product_attention",
    lesson="02",
    uses=(check_attention_weights,),
    cases=[
        Case("3 queries, 5 keys, c=4, values of width 6",
             lambda f: f(*_qk((), 3, 5, 4, seed=51), randn(5, 6, seed=53)),
             hint="the output is weights @ v: shape (*, q, c_v), here (3, 6)"),
        Case("batch (2, 3), c=8, values of width 8",
             lambda f: f(*_qk((2, 3), 4, 6, 8, seed=55), randn(2, 3, 6, 8, seed=57)),
             hint="mix the values (v), weighted by softmax(q k^T / sqrt(c)) over the keys"),
        FORWARD_MASKED,
        Case("a query that may see no key gets a zero output",
             lambda f: f(*_qk((), 2, 3, 4, seed=65), randn(3, 2, seed=67),
                         mask=torch.tensor([[True, True, False], [False, False, False]])),
             hint="zero weights for a fully masked row give a zero output, not NaN"),
        Case("batch (1,), one query, one key: the output is v",
             lambda f: f(*_qk((1,), 1, 1, 4, seed=69), randn(1, 1, 3, seed=70)),
             hint="one key gets weight 1, so the output is v itself, shape (1, 1, 3): keep "
                  "every size-1 axis"),
        Case("7 queries, 33 keys, values of width 5, a padding mask",
             lambda f: f(*_qk((2,), 7, 33, 4, seed=71), randn(2, 33, 5, seed=72),
                         mask=_long_mask(7, 33)),
             hint="the output is weights @ v: (*, n_q, c_v), here (2, 7, 5), for any numbers of "
                  "queries and keys", tags=("size",)),
        Case("rows of large positive and large negative scores: bias -3000 on query 0, a "
             "padding mask",
             _large_rows(lambda f, q, k, v, bias, mask: f(q, k, v, bias=bias, mask=mask), v=3),
             hint=LARGE_MASKED),
        Case("gradients of a fixed loss w.r.t. q, k and v, with a fully masked row",
             gradients_of(lambda f, q, k, v: f(q, k, v, mask=BLIND),
                          {"q": randn(2, 3, 4, seed=73), "k": randn(2, 4, 4, seed=74),
                           "v": randn(2, 4, 3, seed=75)}),
             hint="q, k and v all reach the output: weights @ v with no .detach(); the fully "
                  "masked row's output and gradients are 0, never NaN"),
        float32_of(FORWARD_MASKED),
        bfloat16_of(FORWARD_MASKED),
        meta_of(FORWARD_MASKED),
    ],
)


def _single_head(c_in: int, c: int, x_shape, seed: int, mask=None, gradients=False,
                 bias=None, scale: float = 1.0):
    """Run SingleHeadAttention(c_in, c) with fixed weights; with `gradients`, also the gradients
    of a fixed loss with respect to x and every parameter."""
    def run(cls):
        module = fill_parameters(cls(c_in, c), seed=seed)
        x = randn(*x_shape, seed=seed + 7, scale=scale)
        if gradients:
            return with_gradients(lambda x: module(x, bias=bias, mask=mask), {"x": x}, module,
                                  seed=seed)
        return {"output": module(x, bias=bias, mask=mask), **parameter_shapes(module)}
    return run


def _blind_causal(L: int, blind: int) -> torch.Tensor:
    """A causal mask (L, L) in which query `blind` sees no key."""
    mask = torch.ones(L, L, dtype=torch.bool).tril()
    mask[blind] = False
    return mask


def _row_bias(L: int, row: int, value: float = -3000.0) -> torch.Tensor:
    bias = torch.zeros(L, L, dtype=torch.float64)
    bias[row] = value
    return bias


GRADIENT_HINT = ("the output is right, so look at the gradients: every parameter and x must be "
                 "connected to the output (no .detach(), no torch.no_grad() in forward)")


SINGLE_MASKED = Case("with a causal mask",
                     _single_head(4, 4, (2, 5, 4), seed=75,
                                  mask=torch.ones(5, 5, dtype=torch.bool).tril()),
                     hint="forward(x, bias, mask) must pass the mask on to the attention")

check_single_head = Check(
    id="02.single_head",
    target="attention:SingleHeadAttention",
    lesson="02",
    uses=(check_attention_forward,),
    cases=[
        Case("parameters of SingleHeadAttention(6, 4)",
             lambda cls: parameter_shapes(cls(6, 4)),
             hint="linear_q, linear_k, linear_v: Linear(c_in, c, bias=False); "
                  "linear_o: Linear(c, c_in) with bias"),
        Case("x (5, 6), c=4", _single_head(6, 4, (5, 6), seed=71),
             hint="q, k, v = linear_q(x), linear_k(x), linear_v(x); attend; then linear_o"),
        Case("x (2, 3, 5, 8), c=3", _single_head(8, 3, (2, 3, 5, 8), seed=73),
             hint="attention mixes along the sequence axis (-2); leading axes are batch"),
        SINGLE_MASKED,
        Case("x (1, 1, 6): a batch of one sequence of one token", _single_head(6, 4, (1, 1, 6), seed=77),
             hint="with one token, attention returns its own value: keep the shape (1, 1, 6)"),
        Case("gradients of a fixed loss: x (2, 5, 4), causal mask",
             _single_head(4, 3, (2, 5, 4), seed=79, mask=torch.ones(5, 5, dtype=torch.bool).tril(),
                          gradients=True),
             hint=GRADIENT_HINT),
        Case("x (2, 24, 6) with a causal mask: longer than the lesson's",
             _single_head(6, 4, (2, 24, 6), seed=81,
                          mask=torch.ones(24, 24, dtype=torch.bool).tril()),
             hint="nothing in forward may depend on a fixed sequence length: L = x.shape[-2]", tags=("size",)),
        Case("gradients where a query sees no key: x (2, 5, 4), its weights 0, never NaN",
             _single_head(4, 3, (2, 5, 4), seed=83, mask=_blind_causal(5, 2), gradients=True),
             hint="a query that sees no key gets attention output 0 (and linear_o's bias): its "
                  "gradients are numbers, never NaN (lesson 02's attention_weights gives that "
                  "row zero weights)"),
        Case("rows of large positive and large negative scores: x x 30, bias -3000 on query 0",
             _single_head(4, 4, (2, 5, 4), seed=85, bias=_row_bias(5, 0), scale=30.0,
                          mask=torch.ones(5, 5, dtype=torch.bool).tril()),
             hint="scores of about ±1000 and a row far below 0: take the weights from your "
                  "attention (its stable_softmax shifts each row by its own max), never "
                  "exp(scores) directly"),
        float32_of(SINGLE_MASKED),
        bfloat16_of(SINGLE_MASKED),
        meta_of(SINGLE_MASKED),
        deterministic_of(SINGLE_MASKED),
    ],
)
