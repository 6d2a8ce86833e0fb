"""Checks for lesson 05 (global attention): the masked mean and the `is_global` option.

The global checks use ungated modules: the gate is lesson 06's exercise (its check runs gated
global attention too).
"""
from __future__ import annotations

import torch

from course.checks.core import Case, Check
from course.checks.inputs import fill_parameters, parameter_shapes, randn, with_gradients
from course.checks.kinds import (bfloat16_of, deterministic_of, float32_of, gradients_of,
                                 meta_of)
from course.checks.lesson02 import check_attention_forward
from course.checks.lesson03 import check_multi_head_attention
from course.i18n import N_, _


def _padded(shape, padded):
    """Bool mask of `shape`, True everywhere except at the index tuples in `padded`."""
    mask = torch.ones(shape, dtype=torch.bool)
    for index in padded:
        mask[index] = False
    return mask


def _with_loud_padding(x: torch.Tensor, mask: torch.Tensor, value: float = 50.0) -> torch.Tensor:
    """x with its padding positions set far from the real ones, so using them shows."""
    return x.masked_fill(~mask[..., None], value)


# ----------------------------------------------------------------------------- masked_mean

MASKED_HINT = ("count only positions where the mask is True: sum(x * mask[..., None]) over dim, "
               "divided by the number of True positions (not a plain mean over all of dim)")


UNMASKED_HINT = ("with mask=None, return x.mean(dim=dim), over the `dim` given (it may be "
                 "positive, or another negative axis than -2)")


def _mean_case(shape, dim, padded, seed):
    def run(f):
        mask = _padded(shape[:-1], padded)
        return f(_with_loud_padding(randn(*shape, seed=seed), mask), mask, dim)
    return run


def _empty_slice_is_zero(outputs) -> str | None:
    out = outputs["output"]
    if torch.isnan(out).any():
        return "a slice with no True position gave NaN (0 / 0)"
    if out[1].abs().max() > 0:
        return f"a slice with no True position gave {out[1].tolist()}, expected zeros"
    return None


WRONG_COUNT = N_("your mean is each slice's masked sum divided by a wrong count (the same wrong "
                 "factor for every channel of a slice): divide each slice's sum by the number of "
                 "True positions in that slice, weights.sum(dim=dim), clamped to at least 1")


def _count_evidence(outcomes) -> str | None:
    """The sum is right and the count is not: got / expected is one number per slice."""
    for outcome in outcomes:
        if outcome.status != "differs" or outcome.key != "output":
            continue
        want, have = outcome.expected["output"].double(), outcome.got["output"].double()
        if want.shape != have.shape or want.ndim < 2:
            continue
        ratio = torch.where(want.abs() > 1e-9, have / want, torch.nan)
        spread = (ratio.nan_to_num(-1e300).amax(-1) - ratio.nan_to_num(1e300).amin(-1))
        known = ~torch.isnan(ratio).all(-1)
        off = (ratio[known.unsqueeze(-1).expand_as(ratio)] - 1).abs().nan_to_num(0) > 1e-6
        if known.any() and (spread[known].abs() < 1e-6).all() and off.any():
            return _(WRONG_COUNT)
    return None


RAGGED_MEAN = Case("batch (2, 3): x (2, 3, 5, 4), dim=-2",
                   _mean_case((2, 3, 5, 4), -2, [(0, 0, 4), (1, 2, 0), (1, 2, 1)], seed=509),
                   hint=MASKED_HINT)


def _mean_gradients(shape, dim, padded, seed):
    """Gradients of a fixed loss w.r.t. x, with the padding of `padded` (a slice may be empty)."""
    mask = _padded(shape[:-1], padded)
    x = _with_loud_padding(randn(*shape, seed=seed), mask)
    return gradients_of(lambda f, x: f(x, mask, dim), {"x": x}, seed=seed)


check_masked_mean = Check(
    id="05.masked_mean",
    target="mha:masked_mean",
    lesson="05",
    diagnose=_count_evidence,
    cases=[
        Case("mask=None: the plain mean over dim", lambda f: f(randn(4, 3, 5, seed=501), None, -2),
             hint="with mask=None, return x.mean(dim=dim)",
             shape_hint="dim is removed: x (4, 3, 5) averaged over dim=-2 is (4, 5)"),
        Case("x (6, 3), rows 4 and 5 are padding (and hold 50s)",
             _mean_case((6, 3), -2, [(4,), (5,)], seed=503), hint=MASKED_HINT),
        Case("a slice with no real position gives 0, not NaN",
             _mean_case((2, 4, 3), -2, [(1, 0), (1, 1), (1, 2), (1, 3), (0, 2)], seed=505),
             hint="divide by the count clamped to at least 1, so an all-padding slice gives 0 "
                  "instead of 0/0 = NaN",
             expect=_empty_slice_is_zero),
        Case("a slice with no real position, values",
             _mean_case((2, 4, 3), -2, [(1, 0), (1, 1), (1, 2), (1, 3), (0, 2)], seed=505),
             hint=MASKED_HINT),
        Case("MSA x (5, 4, 3) averaged over the sequences (dim=-3), ragged padding",
             _mean_case((5, 4, 3), -3, [(4, 0), (3, 0), (4, 2), (0, 3)], seed=507),
             hint="the mask has one flag per position, shape x.shape[:-1]; a trailing size-1 "
                  "axis lets it multiply every channel, and the sums run over `dim`"),
        RAGGED_MEAN,
        Case("mask=None over dim=-3", lambda f: f(randn(4, 3, 5, 2, seed=511), None, -3),
             hint=UNMASKED_HINT),
        Case("mask=None over dim=0 (positive)", lambda f: f(randn(4, 3, 5, seed=513), None, 0),
             hint=UNMASKED_HINT),
        Case("mask=None over dim=1 (positive)", lambda f: f(randn(4, 3, 5, seed=515), None, 1),
             hint=UNMASKED_HINT),
        Case("positive dim=1: x (2, 5, 3, 4) averaged over axis 1, ragged padding",
             _mean_case((2, 5, 3, 4), 1, [(0, 4, 0), (0, 3, 0), (1, 4, 2), (1, 0, 1)], seed=517),
             hint="a positive dim names the same axis of x and of the mask (the mask only lacks "
                  "the channel axis at the end): " + MASKED_HINT),
        Case("size-1 axes: x (1, 1, 3), dim=-2, its one position real",
             _mean_case((1, 1, 3), -2, [], seed=519),
             hint="averaging a length-1 axis removes it and keeps the others: (1, 3)"),
        Case("x (2, 40, 3) averaged over 40 positions, ragged padding",
             _mean_case((2, 40, 3), -2, [(0, 39), (1, 5), (1, 20), (1, 38)], seed=521),
             hint=MASKED_HINT, tags=("size",)),
        Case("gradients of a fixed loss w.r.t. x, ragged padding",
             _mean_gradients((2, 5, 3), -2, [(0, 4), (1, 1), (1, 3)], seed=523),
             hint="x reaches the mean through the masked sum: padding positions get gradient 0, "
                  "real ones 1/count (times the loss weight); no .detach() on the way"),
        Case("gradients with a slice that has no real position: numbers, not NaN",
             _mean_gradients((2, 4, 3), -2, [(1, 0), (1, 1), (1, 2), (1, 3), (0, 2)], seed=525),
             hint="the all-padding slice must be finite in every step, not only in the result: "
                  "divide by the count clamped to at least 1 (a 0/0 replaced afterwards by "
                  "torch.where or nan_to_num still sends NaN back to x)"),
        float32_of(RAGGED_MEAN),
        bfloat16_of(RAGGED_MEAN),
        meta_of(RAGGED_MEAN),
    ],
)


# ----------------------------------------------------------------------- global attention

SHARED_HINT = ("global attention has ONE key head and ONE value head shared by all query heads: "
               "linear_k and linear_v map c_in to c (not N_head*c); linear_q keeps N_head*c")


def _global(c_in, c, N_head, x_shape, seed, attn_dim=-2, mask=None, loud_padding=False,
            zero=(), gradients=False):
    """Run MultiHeadAttention(..., is_global=True) with fixed weights; `zero` names weights set to 0.

    With `gradients`, return the output and the gradients of a fixed loss with respect to x and
    every parameter instead of the parameter shapes.
    """
    def run(cls):
        module = fill_parameters(cls(c_in, c, N_head, attn_dim=attn_dim, is_global=True), seed)
        with torch.no_grad():
            for name in zero:
                module.get_parameter(name).zero_()
        x = randn(*x_shape, seed=seed + 1)
        if loud_padding:
            x = _with_loud_padding(x, mask, value=4.0)
        if gradients:
            return with_gradients(lambda x: module(x, attention_mask=mask), {"x": x}, module,
                                  seed=seed)
        out = module(x, attention_mask=mask)
        return {"output": out, **parameter_shapes(module)}
    return run


def worked_example(cls):
    """The lesson's mini example: 3 sequences, q = k = x, v = 2, 4, 6; one head, c = 2.

    The averaged query is [2/3, 2/3]; the scaled scores [0.47, 0.47, 0.94] give weights
    [0.28, 0.28, 0.44] and the summary 4.33 in channel 0 (4.48 without the 1/sqrt(c)).
    """
    module = cls(2, 2, 1, attn_dim=-2, is_global=True).double()
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.zero_()
        module.linear_q.weight.copy_(torch.eye(2))
        module.linear_k.weight.copy_(torch.eye(2))
        module.linear_v.weight.copy_(torch.tensor([[2.0, 4.0], [0.0, 0.0]]))
        module.linear_o.weight.copy_(torch.eye(2))
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    return module(x)


def _global_large(cls):
    """One head, q = mean(x) and k = -x (identity weights): in the first slice every x is about
    80 u, so its scores are all about -3200 (exp underflows to 0 without the shift by the row's
    max); in the second, x = (80 u, -240 u, 80 u) gives scores up to about +1070 (exp
    overflows)."""
    module = fill_parameters(cls(4, 4, 1, attn_dim=-2, is_global=True), seed=535)
    with torch.no_grad():
        module.linear_q.weight.copy_(torch.eye(4))
        module.linear_k.weight.copy_(-torch.eye(4))
    u = torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=torch.float64) / 2 ** 0.5
    x = 80.0 * torch.stack([torch.stack([u, u, u]), torch.stack([u, -3 * u, u])])
    x = x + randn(2, 3, 4, seed=537, scale=0.1)
    return {"output": module(x), **parameter_shapes(module)}


def _same_summary_everywhere(outputs) -> str | None:
    out = outputs["output"]  # (S, R, c_in), attention along S
    spread = (out - out[:1]).abs().max().item()
    if spread > 1e-9:
        return (f"the outputs of different sequences in one column differ by up to {spread:.3g}; "
                "without a gate they must be identical")
    return None


GLOBAL_PADDED = Case("batch (2,): MSA (2, 4, 3, 6), 3 heads, ragged padding per column",
                     _global(6, 2, 3, (2, 4, 3, 6), seed=519, attn_dim=-3,
                             mask=_padded((2, 4, 3), [(0, 3, 0), (0, 2, 0), (1, 3, 2), (0, 3, 1)])),
                     hint="leading axes are batch axes; the mask (*, L) after movedim serves both "
                          "the masked mean and the key mask")

check_global_attention = Check(
    id="05.global_attention",
    target="mha:MultiHeadAttention",
    lesson="05",
    uses=(check_masked_mean, check_attention_forward, check_multi_head_attention),
    provides=("mha:MultiHeadAttention._global_attention",),
    cases=[
        Case("parameters of MultiHeadAttention(6, 4, 3, is_global=True)",
             lambda cls: parameter_shapes(cls(6, 4, 3, is_global=True)), hint=SHARED_HINT),
        Case("the worked example: 1 head, c = 2, summary 4.33", worked_example,
             hint="divide the scores q_mean . k by sqrt(c), c = channels per head (the worked "
                  "example gives 4.33 with the scale, 4.48 without it)",
             shape_hint="the output has x's shape: every position along attn_dim receives the "
                        "summary, (*, L, N_head*c) before linear_o"),
        Case("columns of an MSA x (5, 3, 8): attn_dim=-3, 2 heads of width 4",
             _global(8, 4, 2, (5, 3, 8), seed=517, attn_dim=-3),
             hint="per head h: q_h (from the averaged x) against the shared k, softmax over the "
                  "L keys, times the shared v; merge the heads in order, then linear_o"),
        Case("ungated: every sequence of a column receives the same summary",
             _global(8, 4, 2, (4, 3, 8), seed=515, attn_dim=-3),
             hint="one query per slice: average over the attended axis first, so every position "
                  "along it gets the same summary",
             expect=_same_summary_everywhere),
        Case("queries switched off (linear_q weight 0): padding keys get no weight",
             _global(6, 4, 2, (5, 6), seed=511, mask=_padded((5,), [(1,), (4,)]),
                     zero=("linear_q.weight",)),
             hint="padding keys must get no weight: pass attention_mask to the attention as a key "
                  "mask of shape (*, 1, 1, L)"),
        Case("padding rows (holding 4s) are left out of the averaged query",
             _global(6, 4, 2, (5, 6), seed=513, mask=_padded((5,), [(3,), (4,)]),
                     loud_padding=True),
             hint="the query is linear_q of the MASKED mean of x over the attended axis "
                  "(masked_mean(x, attention_mask, dim=-2)): padding rows must not shift it"),
        GLOBAL_PADDED,
        Case("a column that is all padding gives linear_o's bias, not NaN",
             _global(6, 2, 2, (3, 2, 6), seed=521, attn_dim=-3,
                     mask=_padded((3, 2), [(0, 1), (1, 1), (2, 1)])),
             hint="an all-padding slice: masked_mean gives 0 and every key is masked, so the "
                  "attention output is 0 (no NaN anywhere)"),
        Case("positive attn_dim=1 with padding: MSA (2, 4, 3, 6), columns",
             _global(6, 2, 2, (2, 4, 3, 6), seed=523, attn_dim=1,
                     mask=_padded((2, 4, 3), [(0, 3, 0), (0, 2, 1), (1, 3, 2), (1, 1, 0)])),
             hint="attention_mask is x.shape[:-1] (no channel axis): a positive attn_dim names "
                  "the same axis of the mask, a negative one is attn_dim + 1 there"),
        Case("positive attn_dim=1 with padding: MSA (2, 4, 4, 6), S = R",
             _global(6, 2, 2, (2, 4, 4, 6), seed=525, attn_dim=1,
                     mask=_padded((2, 4, 4), [(0, 3, 0), (0, 2, 1), (1, 3, 2), (1, 1, 3)])),
             hint="attention_mask is x.shape[:-1] (no channel axis): a positive attn_dim names "
                  "the same axis of the mask, a negative one is attn_dim + 1 there"),
        Case("one head, one column, batch (1,): MSA (1, 4, 1, 6), attn_dim=-3",
             _global(6, 3, 1, (1, 4, 1, 6), seed=527, attn_dim=-3,
                     mask=_padded((1, 4, 1), [(0, 3, 0)])),
             hint="with N_head = 1 and size-1 batch or column axes, squeeze only the query axis "
                  "(squeeze(-2)): a .squeeze() without a dim drops those axes too"),
        Case("gradients of a fixed loss: MSA (4, 3, 6), columns, padding",
             _global(6, 2, 3, (4, 3, 6), seed=529, attn_dim=-3,
                     mask=_padded((4, 3), [(3, 0), (2, 0), (3, 2)]), gradients=True),
             hint="the output is right, so look at the gradients: x (through the averaged "
                  "query and through the keys and values) and every parameter must be connected "
                  "to the output (no .detach(), no torch.no_grad())"),
        Case("gradients with a column that is all padding: MSA (3, 2, 6)",
             _global(6, 2, 2, (3, 2, 6), seed=531, attn_dim=-3,
                     mask=_padded((3, 2), [(0, 1), (1, 1), (2, 1)]), gradients=True),
             hint="the all-padding column must be finite in every step: its averaged query is 0 "
                  "(masked_mean's count clamped to at least 1) and its keys are all masked, so "
                  "its output is linear_o's bias and every gradient is a number, never NaN"),
        Case("columns of an MSA (30, 3, 6), padding: more sequences than the lesson's",
             _global(6, 2, 2, (30, 3, 6), seed=533, attn_dim=-3,
                     mask=_padded((30, 3), [(29, 0), (5, 1), (17, 2)])),
             hint="nothing may depend on a fixed number of sequences: L comes from x", tags=("size",)),
        Case("rows of large positive and large negative scores: q = mean(x), k = -x, x of "
             "size about 80", _global_large,
             hint="the averaged query meets the keys in scores of about ±3000 here: take the "
                  "weights from your scaled_dot_product_attention (its stable softmax shifts each "
                  "row by its own max), never exp(scores) directly"),
        float32_of(GLOBAL_PADDED),
        bfloat16_of(GLOBAL_PADDED),
        meta_of(GLOBAL_PADDED),
        deterministic_of(GLOBAL_PADDED),
    ],
)
