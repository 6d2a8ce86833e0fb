"""Checks for lesson 04 (bias and broadcasting): lining a bias up with the scores, the pair bias."""
from __future__ import annotations

import torch

from course.checks.core import Case, Check
from course.checks.families import LAYER_NORM_EPS, fit, scaled_gap
from course.checks.inputs import fill_parameters, parameter_shapes, randn, with_gradients
from course.checks.kinds import (bfloat16_of, deterministic_of, float32_of, gradients_of,
                                 meta_of)
from course.confirm.explain import PairBiasWithEps  # the formula with another eps: same names
from course.i18n import N_, _

BROADCAST_HINT = ("insert the missing size-1 axes between the bias's batch axes and its last "
                  "three (N_head, q, k): (B, 1, N_head, q, k), not (1, B, N_head, q, k)")


def _aligned(bias_shape, scores_ndim, seed):
    return lambda f: f(randn(*bias_shape, seed=seed), scores_ndim)


ROW_BIAS = Case("pair bias (B=2, N_head=8, 5, 5) for row scores (2, 4, 8, 5, 5)",
                _aligned((2, 8, 5, 5), 5, 405), hint=BROADCAST_HINT,
                shape_hint=BROADCAST_HINT + "; count n = scores_ndim - bias.ndim")

check_broadcastable_bias = Check(
    id="04.broadcastable_bias",
    target="bias:broadcastable_bias",
    lesson="04",
    squeeze_hint=False,  # the exercise is to add the size-1 axes: too few is not a .squeeze()
    cases=[
        Case("bias (3, 4, 4) for scores of rank 3: nothing to insert", _aligned((3, 4, 4), 3, 401),
             hint="when the scores have no more axes than the bias, return the bias unchanged "
                  "(n = 0 size-1 axes)"),
        Case("bias (2, 3, 4, 4) for scores (2, 3, 4, 4): same rank", _aligned((2, 3, 4, 4), 4, 403),
             hint="when the scores have no more axes than the bias, return the bias unchanged "
                  "(n = 0 size-1 axes)"),
        ROW_BIAS,
        Case("bias (2, 3, 4, 4) for scores of rank 6: two axes after the batch",
             _aligned((2, 3, 4, 4), 6, 407), hint=BROADCAST_HINT,
             shape_hint=BROADCAST_HINT + "; count n = scores_ndim - bias.ndim"),
        Case("bias with two batch axes (2, 5, 3, 4, 4) for scores of rank 6",
             _aligned((2, 5, 3, 4, 4), 6, 409), hint=BROADCAST_HINT,
             shape_hint="keep every batch axis of the bias in front (bias.shape[:-3]), then the "
                        "size-1 axes, then (N_head, q, k)"),
        Case("bias (3, 4, 4) without batch axes for scores of rank 5",
             _aligned((3, 4, 4), 5, 411), hint=BROADCAST_HINT,
             shape_hint=BROADCAST_HINT + "; count n = scores_ndim - bias.ndim"),
        Case("size-1 axes everywhere: bias (1, 1, 1, 1) for scores of rank 6",
             _aligned((1, 1, 1, 1), 6, 413), hint=BROADCAST_HINT,
             shape_hint="keep the bias's own size-1 axes and add n = scores_ndim - bias.ndim "
                        "more: (1, 1, 1, 1, 1, 1)"),
        Case("q != k: bias (2, 3, 4, 7) for scores of rank 5 (cross-attention: 4 queries, 7 keys)",
             _aligned((2, 3, 4, 7), 5, 415),
             hint="the last three axes are (N_head, q, k) as they are, also when q != k "
                  "(cross-attention): take them from bias.shape[-3:], never as (N_head, L, L)",
             tags=("size",)),
        Case("bias (2, 8, 30, 37) for scores of rank 6: more queries and keys than the lesson's",
             _aligned((2, 8, 30, 37), 6, 419), hint=BROADCAST_HINT, tags=("size",),
             shape_hint=BROADCAST_HINT + "; count n = scores_ndim - bias.ndim"),
        Case("gradients of a fixed loss w.r.t. the bias (2, 3, 4, 4), scores of rank 6",
             gradients_of(lambda f, bias: f(bias, 6), {"bias": randn(2, 3, 4, 4, seed=417)}),
             hint="the result is a view of the bias (view, reshape, unsqueeze, [:, None]): its "
                  "gradient is the bias's, with no .detach() or copy on the way"),
        float32_of(ROW_BIAS),
        bfloat16_of(ROW_BIAS),
        meta_of(ROW_BIAS),
    ],
)


def _pair_bias(c_z, N_head, z_shape, seed, gradients=False):
    """PairBias(c_z, N_head) with fixed weights on a fixed z; with `gradients`, the gradients of a
    fixed loss with respect to z and every parameter instead of the parameter shapes."""
    def run(cls):
        module = fill_parameters(cls(c_z, N_head), seed=seed)
        z = randn(*z_shape, seed=seed + 1)
        if gradients:
            return with_gradients(module, {"z": z}, module, seed=seed)
        return {"output": module(z), **parameter_shapes(module)}
    return run


PAIR_HINT = ("LayerNorm(z) over c_z, then linear_z to one number per head, then move the head "
             "axis from last to in front of (i, j) with movedim(-1, -3), keeping i before j")

NO_LAYER_NORM = N_("your bias equals linear_z(z) without the LayerNorm: normalise z over its "
                   "c_z channels first (layer_norm_z), then project with linear_z")
NO_AFFINE = N_("your bias equals a LayerNorm without its learned weight and bias: use the "
               "module's layer_norm_z = nn.LayerNorm(c_z) (elementwise_affine on, as by default)")
I_J = N_("i and j swapped: entry [..., h, i, j] must come from z[..., i, j, :], so move only the "
         "head axis, from last to in front of (i, j): movedim(-1, -3), keeping i before j")
EPS_OUTSIDE = N_("your PairBias computes LayerNorm then linear_z, the right formula, but with a "
                 "LayerNorm eps of about {eps}: use the module's layer_norm_z = "
                 "nn.LayerNorm(c_z) (eps 1e-5, as AlphaFold2). Any eps from {low} to {high} is "
                 "accepted; a smaller one (or none) no longer keeps a row of z whose channels "
                 "are (nearly) equal from dividing by about 0")
EPS_NONE = N_("your PairBias computes LayerNorm then linear_z, the right formula, but without "
              "the LayerNorm's eps (or with one too small to matter, such as 1e-12): use the "
              "module's layer_norm_z = nn.LayerNorm(c_z) (eps 1e-5, as AlphaFold2). Any eps "
              "from {low} to {high} is accepted; without one, a row of z whose channels are "
              "(nearly) equal divides by about 0")


def _power(value: float) -> str:
    """1e-06 -> '1e-6', 3.2e-05 -> '3e-5'."""
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _another_eps(case, got) -> tuple[bool, str] | None:
    """The same formula with another LayerNorm eps: accepted within LAYER_NORM_EPS, else named."""
    def distance(eps: float) -> float:
        with torch.enable_grad():
            formula = case.run(lambda c_z, N_head: PairBiasWithEps(c_z, N_head, eps))
        from course.checks.outputs import as_outputs

        return scaled_gap(as_outputs(formula), got, case.atol, case.rtol)
    eps = fit(distance, 1e-16, 1e-1)
    if eps is None:
        return None
    low, high = LAYER_NORM_EPS
    if low <= eps <= high:
        return True, ""
    words = {"eps": _power(eps), "low": _power(low), "high": _power(high)}
    return False, _(EPS_NONE if eps < 1e-9 else EPS_OUTSIDE).format(**words)


PAIR_TOLERANCE = {"accept": _another_eps}  # another LayerNorm eps: decided by what it is


def _pair_evidence(outcomes) -> str | None:
    """linear_z(z) without the LayerNorm, or with a LayerNorm that has no weight and bias."""
    for outcome in outcomes:
        if outcome.status != "differs" or "output" not in outcome.got:
            continue
        call = next((c for c in outcome.calls if c["target"] == "bias:PairBias.forward"), None)
        if call is None or call.get("state") is None:
            continue
        z, state = call["args"]["z"], call["state"]
        weight = state["linear_z.weight"]
        plain = torch.nn.functional.layer_norm(z, z.shape[-1:])
        for normed, hint in ((z, NO_LAYER_NORM), (plain, NO_AFFINE)):
            candidate = (normed @ weight.T).movedim(-1, -3)
            if candidate.shape == outcome.got["output"].shape and torch.allclose(
                    candidate, outcome.got["output"].double(), rtol=1e-6, atol=1e-8):
                return _(hint)
    return None


PAIR_BATCH = Case("z (2, 5, 5, 6), 4 heads: a batch axis in front",
                  _pair_bias(6, 4, (2, 5, 5, 6), seed=423), hint=PAIR_HINT,
                  shape_hint="keep the batch axes in front: (B, N_head, R, R), here (2, 4, 5, 5)",
                  **PAIR_TOLERANCE)

check_pair_bias = Check(
    id="04.pair_bias",
    target="bias:PairBias",
    lesson="04",
    diagnose=_pair_evidence,
    transposed_hint=I_J,
    cases=[
        Case("parameters of PairBias(8, 4)", lambda cls: parameter_shapes(cls(8, 4)),
             hint="layer_norm_z: nn.LayerNorm(c_z); linear_z: nn.Linear(c_z, N_head, bias=False) "
                  "(AF2's pair bias projection has no bias)"),
        Case("z (5, 5, 6), 3 heads", _pair_bias(6, 3, (5, 5, 6), seed=421), hint=PAIR_HINT,
             shape_hint="the result is (*, N_head, R, R): here (3, 5, 5)", **PAIR_TOLERANCE),
        PAIR_BATCH,
        Case("z (2, 3, 4, 4, 8), 2 heads", _pair_bias(8, 2, (2, 3, 4, 4, 8), seed=425),
             hint=PAIR_HINT,
             shape_hint="keep the batch axes in front: (*, N_head, R, R), here (2, 3, 2, 4, 4)",
             **PAIR_TOLERANCE),
        Case("one head, one residue, batch (1,): z (1, 1, 1, 6)",
             _pair_bias(6, 1, (1, 1, 1, 6), seed=427), hint=PAIR_HINT,
             shape_hint="N_head = 1, R = 1 and a batch of one keep their axes: (1, 1, 1, 1)",
             **PAIR_TOLERANCE),
        Case("gradients of a fixed loss: z (2, 4, 4, 6), 3 heads",
             _pair_bias(6, 3, (2, 4, 4, 6), seed=429, gradients=True),
             hint="the output is right, so look at the gradients: z, the LayerNorm and linear_z "
                  "must all be connected to the output (no .detach(), no torch.no_grad())",
             **PAIR_TOLERANCE),
        Case("z (1, 24, 24, 4), 2 heads: more residues than the lesson's",
             _pair_bias(4, 2, (1, 24, 24, 4), seed=431), hint=PAIR_HINT, **PAIR_TOLERANCE, tags=("size",)),
        float32_of(PAIR_BATCH),
        bfloat16_of(PAIR_BATCH),
        meta_of(PAIR_BATCH),
        deterministic_of(PAIR_BATCH),
    ],
)
