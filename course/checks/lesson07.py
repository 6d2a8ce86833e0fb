"""Checks for lesson 07 (the Transformer around attention): positions, RMSNorm, the decoder block,
cross-attention.

Each check compares with the recorded reference on small float64 cases (a size-1 axis, several
shapes, leading batch axes, a gradient case for modules with parameters) and adds probes of
behaviour that need no reference: RoPE scores depend on i - j only, the block is causal, padded
encoder positions are invisible (the engine itself fails a call that changes its inputs in
place). Cases are ordered so that the first one a classic bug fails names that bug
(tests/mutants/lesson07.py proves it).
"""
from __future__ import annotations

import re

import torch

from course.checks import evidence
from course.checks.core import Case, Check
from course.checks.inputs import fill_parameters, parameter_shapes, randn, with_gradients
from course.checks.kinds import (bfloat16_of, deterministic_of, float32_of, gradients_of,
                                 meta_of)
from course.checks.lesson02 import check_attention_forward, check_causal_mask
from course.checks.lesson03 import check_merge_heads, check_multi_head_attention, check_split_heads
from course.checks.hints import FLOAT32_INSIDE
from course.i18n import N_, _

# --- 07.sinusoidal_encoding -----------------------------------------------------------------

SIN_COS_HINT = ("PE[0] = [sin 0, cos 0, sin 0, cos 0, ...] = [0, 1, 0, 1, ...]: sin on the EVEN "
                "channels 0, 2, 4, ..., cos on the odd ones, interleaved (not sin in the first "
                "half and cos in the second), positions counting from 0")
FREQUENCY_HINT = ("channels 2i and 2i+1 share ONE angle pos / base**(2i/d_model), where i counts "
                  "pairs (0 .. d_model/2 - 1): the exponent is 2i/d_model, not i/d_model, and the "
                  "cos channel 2i+1 does not get an exponent of its own")
FIXED_SIZE_HINT = N_("a size is fixed somewhere: the encoding must work for any L and any even "
                     "d_model, so positions = arange(L) and 2i = arange(0, d_model, 2), never a "
                     "table or a slice of fixed length")
# what indexing or filling raises when a table of fixed length meets a longer L
FIXED_SIZE_ERRORS = (("RuntimeError", r"expanded size of the tensor|size of tensor a",
                      FIXED_SIZE_HINT),
                     ("IndexError", r"out of bounds", FIXED_SIZE_HINT))


def _encoding_dtype(f):
    pe = f(6, 4, dtype=torch.float32)
    return {"output": pe, "is float32": torch.tensor(pe.dtype == torch.float32)}


def _offset_is_linear(outputs) -> str | None:
    """PE(pos + k) = R_k PE(pos) with one matrix R_k for every pos: fit it, look at the residual."""
    pe = outputs["output"]
    for k in (1, 3):
        source, target = pe[:-k], pe[k:]
        solution = torch.linalg.lstsq(source, target).solution  # (d, d): target ≈ source @ R_k^T
        residual = (source @ solution - target).abs().max().item()
        if residual > 1e-8:
            return (f"no single matrix maps PE(pos) to PE(pos + {k}) for every pos "
                    f"(least-squares residual {residual:.2g}): each pair of channels must be "
                    f"[sin, cos] of one angle proportional to pos")
    return None


def _interleaved(angle: torch.Tensor) -> torch.Tensor:
    """(L, d/2) angles -> (L, d): sin on the even channels, cos on the odd ones."""
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(-2)


ANGLE_CANDIDATES = [  # (hint, the angle of pair i at position pos, as a wrong formula)
    (N_("the exponent lost its brackets: pos / base**2i / d_model computes base**2i first and "
        "divides by d_model after; write pos / base**(2i / d_model)"),
     lambda pos, two_i, d, base: pos / base ** two_i / d),
    (N_("the exponent counts pairs, not channels: pair i needs base**(2i / d_model), not "
        "base**(i / d_model)"), lambda pos, two_i, d, base: pos / base ** (two_i / 2 / d)),
    (N_("pos is multiplied by base**(2i / d_model) instead of divided: the angle is "
        "pos / base**(2i / d_model), slower and slower for later pairs"),
     lambda pos, two_i, d, base: pos * base ** (two_i / d)),
    (N_("positions count from 1 here: they start at 0, so PE[0] = [0, 1, 0, 1, ...]"),
     lambda pos, two_i, d, base: (pos + 1) / base ** (two_i / d)),
]


def _angle_evidence(outcomes) -> str | None:
    """The one wrong angle formula that gives the student's encoding in every case that differs;
    before it, the linear-map probe failing only at float32's rounding: the structure is right and
    a float32 tensor (torch.empty/zeros without dtype=) rounds the table."""
    for outcome in outcomes:
        residual = re.search(r"least-squares residual ([0-9.e+-]+)", str(outcome.problem or ""))
        if outcome.failed and residual and float(residual.group(1)) <= 1e-6:
            return _(FLOAT32_INSIDE).format(gap=float(residual.group(1)))
    found = []
    for outcome in outcomes:
        if outcome.status != "differs" or not outcome.case.facts or outcome.key != "output":
            continue
        L, d, base = (outcome.case.facts[k] for k in ("L", "d_model", "base"))
        found.append((L, d, base, outcome.got["output"].double()))
    for hint, angle in ANGLE_CANDIDATES:
        if found and all(got.shape == (L, d) and torch.allclose(_interleaved(angle(
                torch.arange(L, dtype=torch.float64)[:, None],
                torch.arange(0, d, 2, dtype=torch.float64), d, base)), got, rtol=1e-6, atol=1e-9)
                for L, d, base, got in found):
            return _(hint)
    return None


def _pe(L: int, d_model: int, base: float | None = None):
    """The encoding of (L, d_model[, base]), with the facts a diagnosis needs."""
    run = (lambda f: f(L, d_model)) if base is None else (lambda f: f(L, d_model, base=base))
    return {"run": run, "facts": {"L": L, "d_model": d_model, "base": base or 10000.0}}


check_sinusoidal_encoding = Check(
    id="07.sinusoidal_encoding",
    target="transformer:sinusoidal_encoding",
    lesson="07",
    diagnose=_angle_evidence,
    error_hints=FIXED_SIZE_ERRORS,
    cases=[
        Case("one position (L=1), d_model=6", **_pe(1, 6), hint=SIN_COS_HINT,
             shape_hint="the result is (L, d_model): here (1, 6)"),
        Case("L=5, d_model=2: one pair, angle = pos", **_pe(5, 2),
             hint="with d_model=2 there is one pair and its angle is pos itself: "
                  "PE[pos] = [sin pos, cos pos], for pos = 0, 1, 2, ... " + SIN_COS_HINT),
        Case("L=6, d_model=8", **_pe(6, 8), hint=FREQUENCY_HINT,
             shape_hint="the result is (L, d_model): here (6, 8)"),
        Case("L=50, d_model=16", **_pe(50, 16), hint=FREQUENCY_HINT),
        Case("base=100: L=7, d_model=6", **_pe(7, 6, 100.0),
             hint="use the `base` argument (10000 is only its default) in pos / base**(2i/d_model)"),
        Case("dtype=torch.float32: L=6, d_model=4", _encoding_dtype,
             hint="return the encoding in the `dtype` asked for (compute in float64, then .to(dtype))"),
        Case("PE(pos + k) is a fixed linear map of PE(pos)", lambda f: f(20, 8),
             hint=FREQUENCY_HINT, expect=_offset_is_linear),
        Case("dtype=torch.bfloat16: L=6, d_model=4", lambda f: f(6, 4, dtype=torch.bfloat16),
             hint="return the encoding in the `dtype` asked for (compute in float64, then "
                  ".to(dtype))"),
        Case("dtype=torch.float32, L=4096, d_model=8: positions far past the lesson's",
             lambda f: f(4096, 8, dtype=torch.float32),
             hint="compute the angles in float64 and cast the table to `dtype` at the end: "
                  "float32 keeps about 7 digits, so an angle pos / base**(2i/d_model) computed "
                  "in float32 is off by about 1e-4 at pos 4096", tags=("size",)),
    ],
)

# --- 07.rope ----------------------------------------------------------------------------------

ROPE_CONVENTION = ("rotate-half: channel i pairs with channel i + c/2 (Llama/Qwen3), not with its "
                   "neighbour i + 1 (the interleaved convention of the RoPE paper); "
                   "out = x * cos + rotate_half(x) * sin")
ROPE_FREQUENCY = ("pair i (channels i and i + c/2) turns by the angle pos * base**(-2i/c), "
                  "for i = 0 .. c/2 - 1: the exponent is -2i/c, and the same angle serves both "
                  "halves (cat([angle, angle], -1))")


def _only_pair_zero(L, c, seed):
    """x that is zero except in channels 0 and c/2: pair 0, whose angle is pos itself."""
    x = torch.zeros(L, c, dtype=torch.float64)
    values = randn(L, 2, seed=seed)
    x[:, 0], x[:, c // 2] = values[:, 0], values[:, 1]
    return x


def _rope_dtype(f):
    out = f(randn(4, 6, seed=721).float())
    return {"output": out, "is float32": torch.tensor(out.dtype == torch.float32)}


def _relative_scores(f):
    """Scores q·k of one q and one k placed at positions (i, j) and at (i + s, j + s)."""
    q, k = randn(1, 8, seed=723), randn(1, 8, seed=725)
    pairs = [(0, 0), (3, 1), (1, 3), (7, 2), (2, 9)]
    scores = {}
    for shift in (0, 5, 37):
        scores[shift] = torch.stack([
            (f(q, torch.tensor([i + shift])) * f(k, torch.tensor([j + shift]))).sum()
            for i, j in pairs])
    return {f"shift {s}": v for s, v in scores.items()}


def _depends_on_offset_only(outputs) -> str | None:
    base = outputs["shift 0"]
    for name, values in outputs.items():
        difference = (values - base).abs().max().item()
        if difference > 1e-9:
            return (f"the score of q at position i and k at position j changed when both moved "
                    f"by the same amount ({name}: max change {difference:.2g}); with RoPE it "
                    f"depends on i - j only")
    return None


def _norm_kept(outputs) -> str | None:
    x, out = outputs["x"], outputs["output"]
    change = (x.norm(dim=-1) - out.norm(dim=-1)).abs().max().item()
    if change > 1e-9:
        return (f"RoPE is a rotation, so every row keeps its length; here a length changed by "
                f"{change:.2g}: cos and sin must multiply x and rotate_half(x) with the same "
                f"angle, and rotate_half(x) = cat(-x2, x1) uses the other half of x")
    return None


ROPE_HEADS = Case("heads as batch axes: x (2, 3, 5, 8)", lambda f: f(randn(2, 3, 5, 8, seed=717)),
                  hint="positions run along axis -2 and channels along -1; every leading axis "
                       "(batch, heads) gets the same rotation: broadcast the (L, c) cos and sin")

check_rope = Check(
    id="07.rope",
    target="transformer:apply_rope",
    lesson="07",
    cases=[
        Case("position 0 leaves x unchanged: x (1, 4)", lambda f: f(randn(1, 4, seed=701)),
             hint="at position 0 the angle is 0: cos = 1 and sin = 0, so x comes back unchanged; "
                  "cos multiplies x, sin multiplies rotate_half(x)",
             shape_hint="RoPE returns a tensor of x's shape"),
        Case("c=2, one pair: x (4, 2) at positions 0..3", lambda f: f(randn(4, 2, seed=703)),
             hint="with c=2 the pair (x0, x1) turns by the angle pos: (x0 cos - x1 sin, "
                  "x1 cos + x0 sin), so rotate_half(x) = cat(-x[..., c/2:], x[..., :c/2]) "
                  "(minus on the second half, moved in front)"),
        Case("rows keep their length: x (5, 8)",
             lambda f: {"x": randn(5, 8, seed=705), "output": f(randn(5, 8, seed=705))},
             hint=ROPE_CONVENTION + "; channels i and i + c/2 turn together, so the same angle "
                  "serves both halves (cat([angle, angle], -1))", expect=_norm_kept),
        Case("only pair 0 (channels 0 and c/2) non-zero: x (5, 8)",
             lambda f: f(_only_pair_zero(5, 8, seed=707)), hint=ROPE_CONVENTION),
        Case("x (6, 8)", lambda f: f(randn(6, 8, seed=709)), hint=ROPE_FREQUENCY),
        Case("x (3, 16) at positions [4, 0, 100]",
             lambda f: f(randn(3, 16, seed=711), torch.tensor([4, 0, 100])),
             hint="use the `positions` given (one per row along axis -2); arange(L) is only the "
                  "default when positions is None"),
        Case("float positions [0.5, 2.25]", lambda f: f(randn(2, 4, seed=713),
                                                         torch.tensor([0.5, 2.25])),
             hint="positions may be floats: convert them to a float dtype, do not round them"),
        Case("base=500: x (4, 6)", lambda f: f(randn(4, 6, seed=715), base=500.0),
             hint="use the `base` argument (10000 is only its default) in pos * base**(-2i/c)"),
        ROPE_HEADS,
        Case("x in float32 comes back in float32", _rope_dtype,
             hint="return x's dtype: compute the angles in float64, then cast cos and sin to "
                  "x.dtype before multiplying"),
        Case("scores depend on i - j only", _relative_scores, hint=ROPE_FREQUENCY,
             expect=_depends_on_offset_only),
        Case("x (300, 8): positions up to 299", lambda f: f(randn(300, 8, seed=727)),
             hint="positions are arange(L) for any L, not a table of fixed size: " + ROPE_FREQUENCY, tags=("size",)),
        Case("gradients of a fixed loss w.r.t. x (2, 5, 8)",
             gradients_of(lambda f, x: f(x), {"x": randn(2, 5, 8, seed=729)}),
             hint="x reaches the output through x * cos and rotate_half(x) * sin: no .detach(), "
                  "and no in-place change of x or of a slice of it"),
        float32_of(ROPE_HEADS),
        bfloat16_of(ROPE_HEADS),
        meta_of(ROPE_HEADS),
    ],
)

# --- 07.rms_norm ------------------------------------------------------------------------------

RMS_FORMULA = ("RMSNorm(x) = x / sqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight: no mean "
               "subtracted (that is LayerNorm), eps inside the square root")


def _rms(d_model, x, seed, eps=None):
    """Run RMSNorm(d_model[, eps]) with fixed (non-trivial) weights on x."""
    def run(cls):
        module = cls(d_model) if eps is None else cls(d_model, eps=eps)
        fill_parameters(module, seed)
        return module(x.clone())  # a buggy in-place norm must not spoil x for later runs
    return run


def _rms_fresh(cls):
    module = cls(6)
    return {**parameter_shapes(module), "weight": module.weight}


def _rms_gradients(cls):
    module = fill_parameters(cls(6), seed=741)
    return with_gradients(module, {"x": randn(2, 3, 6, seed=743)}, module, seed=745)



EPS_INSIDE = N_("eps goes INSIDE the square root: x / sqrt(mean(x**2) + eps), not "
                "x / (sqrt(mean(x**2)) + eps)")
# one literal (the same text as "...: " + RMS_FORMULA), so that the catalog sees all of it
NOT_LAYER_NORM = N_("RMSNorm does NOT subtract the mean (LayerNorm does): RMSNorm(x) = x / "
                    "sqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight: no mean subtracted "
                    "(that is LayerNorm), eps inside the square root")
RMS_CANDIDATES = [  # (hint, the wrong formula as a function of x, weight, eps)
    (N_("you divide by sqrt(mean(x)**2 + eps), the square of the mean; RMSNorm takes the mean "
        "of the squares: x / sqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight"),
     lambda x, w, eps: x / torch.sqrt(x.mean(-1, keepdim=True) ** 2 + eps) * w),
    (N_("eps is missing: x / sqrt(mean(x**2) + eps) * weight, with eps inside the square root "
        "(without it a row of near-zeros divides by almost 0)"),
     lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True)) * w),
    (EPS_INSIDE, lambda x, w, eps: x / (torch.sqrt(x.pow(2).mean(-1, keepdim=True)) + eps) * w),
    (N_("you divide by mean(x**2) + eps itself: take its square root (the ROOT of the mean "
        "square)"), lambda x, w, eps: x / (x.pow(2).mean(-1, keepdim=True) + eps) * w),
    (N_("the learned scale is missing: multiply the normalised x by self.weight"),
     lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)),
    (NOT_LAYER_NORM, lambda x, w, eps: (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + eps) * w),
    (NOT_LAYER_NORM, lambda x, w, eps: (x - x.mean(-1, keepdim=True)) / torch.sqrt(
        x.pow(2).mean(-1, keepdim=True) + eps) * w),
    (NOT_LAYER_NORM, lambda x, w, eps: x / torch.sqrt(
        x.var(-1, unbiased=False, keepdim=True) + eps) * w),
    (N_("store the `eps` argument (self.eps) and use it, not a hard-coded 1e-6"),
     lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w),
    (N_("the mean runs over the last axis only (dim=-1, keepdim=True), not over every element"),
     lambda x, w, eps: x / torch.sqrt(x.pow(2).mean() + eps) * w),
    (N_("a mean, not a sum: mean(x**2, dim=-1) is the sum of the squares divided by d_model"),
     lambda x, w, eps: x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w),
    (N_("your mean runs over the positions (dim=-2), not over each row's channels: RMSNorm "
        "normalises every position on its own, mean(x**2, dim=-1, keepdim=True)"),
     lambda x, w, eps: x / torch.sqrt(x.pow(2).mean(-2, keepdim=True) + eps) * w),
]


RMS_FORWARD = "transformer:RMSNorm.forward"


def _rms_evidence(outcomes) -> str | None:
    """The one wrong formula that gives the student's output in every case that differs."""
    found = []
    for outcome in outcomes:
        if outcome.status != "differs" or outcome.key != "output" or not outcome.case.facts:
            continue
        call = next((c for c in outcome.calls if c["target"] == RMS_FORWARD), None)
        if call is None:
            continue
        found.append((call["args"]["x"], call["state"]["weight"], outcome.case.facts["eps"],
                      outcome.got["output"].double()))
    for hint, formula in RMS_CANDIDATES:
        if found and all(torch.allclose(formula(x, w, eps), got, rtol=1e-6, atol=1e-9)
                         for x, w, eps, got in found):
            return _(hint)
    return None


RMS_BATCH = Case("batch axes: x (2, 3, 4, 6)", _rms(6, randn(2, 3, 4, 6, seed=759), seed=761),
                 hint="normalise each row over the last axis only (dim=-1, keepdim=True); the "
                      "leading axes are batch axes", facts={"eps": 1e-6})

check_rms_norm = Check(
    id="07.rms_norm",
    target="transformer:RMSNorm",
    lesson="07",
    diagnose=_rms_evidence,
    cases=[
        Case("parameters of a fresh RMSNorm(6)", _rms_fresh,
             hint="one parameter, `weight`, of shape (d_model,), starting at ones "
                  "(nn.Parameter(torch.ones(d_model))); RMSNorm has no bias"),
        Case("constant rows [3, 3, 3, 3] and [-2, -2, -2, -2]",
             _rms(4, torch.tensor([[3.0] * 4, [-2.0] * 4], dtype=torch.float64), seed=731),
             hint="RMSNorm does NOT subtract the mean (LayerNorm does): a constant row c maps to "
                  "about sign(c) * weight, not to 0. " + RMS_FORMULA,
             atol=1e-5, facts={"eps": 1e-6}),  # loose enough that where eps sits does not matter
        Case("tiny x (scale 1e-4): eps = 1e-6 matters",
             _rms(8, randn(3, 8, seed=733, scale=1e-4), seed=735),
             hint=EPS_INSIDE, facts={"eps": 1e-6}),
        Case("eps=0.1 passed to the constructor: x (3, 4)",
             _rms(4, randn(3, 4, seed=737, scale=0.3), seed=739, eps=0.1),
             hint="store the `eps` argument (self.eps) and use it, not a hard-coded 1e-6",
             facts={"eps": 0.1}),
        Case("x (5, 8)", _rms(8, randn(5, 8, seed=751, scale=3.0), seed=753), hint=RMS_FORMULA,
             facts={"eps": 1e-6}),
        Case("d_model=1: x (4, 1)", _rms(1, randn(4, 1, seed=755), seed=757),
             hint="the mean runs over the last axis (channels) only, keepdim=True so it "
                  "broadcasts: with d_model=1 each value becomes about sign(x) * weight",
             facts={"eps": 1e-6}),
        RMS_BATCH,
        Case("gradients w.r.t. x and weight", _rms_gradients,
             hint="the gradient must flow through the root mean square too (no .detach() on "
                  "rms) and reach `weight`, which multiplies the normalised x. " + RMS_FORMULA),
        Case("x (2, 30, 48): wider and longer than the lesson's",
             _rms(48, randn(2, 30, 48, seed=763), seed=765),
             hint="nothing may depend on a fixed d_model: the mean runs over the last axis, "
                  "whatever its size", facts={"eps": 1e-6}, tags=("size",)),
        float32_of(RMS_BATCH),
        bfloat16_of(RMS_BATCH),
        meta_of(RMS_BATCH),
        deterministic_of(RMS_BATCH),
    ],
)

# --- 07.decoder_block -------------------------------------------------------------------------

BLOCK_PARAMETERS = ("four submodules with exactly these names: norm_attn = RMSNorm(d_model), "
                    "attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads), "
                    "norm_ffn = RMSNorm(d_model), ffn = nn.Sequential(nn.Linear(d_model, d_ff), "
                    "nn.GELU(), nn.Linear(d_ff, d_model))")
PRE_NORM = ("pre-norm: h = h + attention(norm_attn(h)), then h = h + ffn(norm_ffn(h)); the norm "
            "sits inside each branch and the residual h itself is added back un-normalised")
BLOCK_FORWARD = ("x = norm_attn(h); q, k, v = split_heads(attn.linear_q/k/v(x), n_heads); "
                 "scaled_dot_product_attention(q, k, v, mask=causal_mask(L)); merge_heads; "
                 "attn.linear_o; add to h; then h + ffn(norm_ffn(h)) (the FFN reads norm_ffn(h), "
                 "not norm_attn's output; ffn = Linear, nn.GELU(), Linear)")
BLOCK_ROPE = ("with rope=True apply_rope to q and k (not to v, not to x), after split_heads, so "
              "the positions 0..L-1 run along axis -2 of (*, n_heads, L, c)")


def _block(d_model, n_heads, d_ff, h_shape, seed, rope=True, set_to=None):
    """Run DecoderBlock with fixed weights on a fixed h; `set_to` overrides some parameters."""
    def run(cls):
        module = fill_parameters(cls(d_model, n_heads, d_ff, rope=rope), seed)
        with torch.no_grad():
            for name, value in (set_to or {}).items():
                module.get_parameter(name).fill_(value)
        return {"output": module(randn(*h_shape, seed=seed + 1)), **parameter_shapes(module)}
    return run


def _branches_off(cls):
    """linear_o and the FFN's last layer set to zero: both branches add nothing."""
    zeros = {"attn.linear_o.weight": 0.0, "attn.linear_o.bias": 0.0,
             "ffn.2.weight": 0.0, "ffn.2.bias": 0.0}
    h = randn(2, 5, 8, seed=771, scale=3.0)
    module = fill_parameters(cls(8, 2, 16), seed=773)
    with torch.no_grad():
        for name in zeros:
            module.get_parameter(name).zero_()
    return {"h": h, "output": module(h)}


def _identity_when_branches_off(outputs) -> str | None:
    difference = (outputs["output"] - outputs["h"]).abs().max().item()
    if difference > 1e-12:
        return (f"with both branches switched off (linear_o and ffn.2 all zero) the block must "
                f"return h unchanged; it differs by {difference:.3g}")
    return None


def _causality(cls):
    """The same block on two inputs that differ only in their last position."""
    module = fill_parameters(cls(8, 2, 16), seed=775)
    h = randn(2, 6, 8, seed=777)
    changed = h.clone()
    changed[:, -1] = randn(2, 8, seed=779, scale=5.0)
    return {"original": module(h), "last token changed": module(changed)}


def _is_causal(outputs) -> str | None:
    early = (outputs["original"][:, :-1] - outputs["last token changed"][:, :-1]).abs().max().item()
    if early > 1e-12:
        return (f"changing only the LAST token changed the outputs at earlier positions (by up "
                f"to {early:.3g}): position i must see positions j <= i only")
    return None


def _block_large(cls):
    """Scores of about ±1000 and a row far below 0: norm_attn's weight 30 makes x large, and
    linear_k = -linear_q makes q_i . k_j = -q_i . q_j, so that query 0, which sees key 0 only,
    scores about -|q_0|^2 / sqrt(c), and queries that meet an opposite key score far above 0."""
    module = fill_parameters(cls(8, 2, 16, rope=False), seed=801)
    with torch.no_grad():
        module.norm_attn.weight.fill_(30.0)
        module.attn.linear_k.weight.copy_(-module.attn.linear_q.weight)
    return {"output": module(randn(2, 6, 8, seed=803)), **parameter_shapes(module)}


def _block_gradients(cls):
    module = fill_parameters(cls(8, 2, 12), seed=781)
    return with_gradients(module, {"h": randn(2, 4, 8, seed=783)}, module, seed=785)



SDPA = "attention:scaled_dot_product_attention"
BLOCK_ARGUMENTS = {
    ("q",): BLOCK_ROPE, ("k",): BLOCK_ROPE, ("v",): BLOCK_ROPE,
    ("mask",): N_("self-attention in a decoder is causal: mask=causal_mask(L), True where key "
                  "j <= query i"),
}


def _block_evidence(outcomes) -> str | None:
    hint = evidence.argument_hint(check_decoder_block, outcomes, SDPA, BLOCK_ARGUMENTS)
    return _(hint) if hint else None


BLOCK_ROPE_CASE = Case("rope=True: h (6, 8), 2 heads, d_ff 16", _block(8, 2, 16, (6, 8), seed=793),
                       hint=BLOCK_ROPE)

check_decoder_block = Check(
    id="07.decoder_block",
    target="transformer:DecoderBlock",
    lesson="07",
    diagnose=lambda outcomes: _block_evidence(outcomes),
    error_hints=(("RuntimeError", r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and",
                  N_("a Linear got a last axis of {1} channels where it takes d_model: after the "
                     "attention, o is (*, n_heads, L, c); merge_heads(o) gives the (*, L, "
                     "d_model) that attn.linear_o takes")),),
    uses=(check_rms_norm, check_rope, check_split_heads, check_merge_heads, check_causal_mask,
          check_attention_forward, check_multi_head_attention),
    cases=[
        Case("parameters of DecoderBlock(8, 2, 16)",
             lambda cls: parameter_shapes(cls(8, 2, 16)), hint=BLOCK_PARAMETERS),
        Case("the block is causal", _causality,
             hint="self-attention in a decoder is causal: mask=causal_mask(L), True where "
                  "key j <= query i", expect=_is_causal),
        Case("both branches off (linear_o, ffn.2 = 0): the block returns h", _branches_off,
             hint=PRE_NORM, expect=_identity_when_branches_off),
        Case("rope=False: h (5, 8), 2 heads, d_ff 16", _block(8, 2, 16, (5, 8), seed=791, rope=False),
             hint=PRE_NORM + ". " + BLOCK_FORWARD),
        BLOCK_ROPE_CASE,
        Case("one position: h (2, 1, 8)", _block(8, 4, 8, (2, 1, 8), seed=795),
             hint="with L=1 the only key is the position itself; causal_mask(1) = [[True]]. "
                  + BLOCK_FORWARD),
        Case("batch axes: h (2, 3, 5, 12), 3 heads, d_ff 24",
             _block(12, 3, 24, (2, 3, 5, 12), seed=797),
             hint="leading axes are batch axes: L = h.shape[-2], heads come from the last axis. "
                  + BLOCK_ROPE),
        Case("gradients w.r.t. h and every parameter", _block_gradients,
             hint="every parameter must be used in forward, with no .detach() on the way: "
                  + PRE_NORM),
        Case("h (2, 20, 8): longer than the lesson's", _block(8, 2, 16, (2, 20, 8), seed=799),
             hint="nothing in forward may depend on a fixed sequence length: L = h.shape[-2], "
                  "causal_mask(L) and the positions 0 .. L-1 of that length", tags=("size",)),
        Case("rows of large positive and large negative scores: norm_attn.weight 30, "
             "linear_k = -linear_q", _block_large,
             hint="scores of about ±1000 and a row far below 0 reach your "
                  "scaled_dot_product_attention: pass q, k, v and the causal mask to it as they "
                  "are (its stable softmax shifts each row by its own max)"),
        float32_of(BLOCK_ROPE_CASE),
        bfloat16_of(BLOCK_ROPE_CASE),
        meta_of(BLOCK_ROPE_CASE),
        deterministic_of(BLOCK_ROPE_CASE),
    ],
)

# --- 07.cross_attention -----------------------------------------------------------------------

CROSS_HINT = ("queries from x (the decoder), keys AND values from memory (the encoder): "
              "q = linear_q(x), k = linear_k(memory), v = linear_v(memory); then split_heads, "
              "your scaled_dot_product_attention, merge_heads, linear_o")
MEMORY_MASK_HINT = ("memory_mask (*, L_k) marks encoder KEYS: pass memory_mask[..., None, None, :] "
                    "(*, 1, 1, L_k), which broadcasts over heads and queries; never mask the "
                    "queries, and no causal mask here")


def _cross(d_model, n_heads, x_shape, memory_shape, seed, mask=None):
    def run(cls):
        module = fill_parameters(cls(d_model, n_heads), seed)
        out = module(randn(*x_shape, seed=seed + 1), randn(*memory_shape, seed=seed + 2),
                     memory_mask=mask)
        return {"output": out, **parameter_shapes(module)}
    return run


def _lengths_mask(lengths, L_k):
    """(B, L_k) bool: True for the first lengths[b] positions of sequence b."""
    return torch.arange(L_k) < torch.tensor(lengths)[:, None]


def _padding_hidden(cls):
    """Padded encoder positions overwritten with other values: the output must not move."""
    module = fill_parameters(cls(8, 2), seed=811)
    x, memory = randn(2, 4, 8, seed=813), randn(2, 6, 8, seed=815)
    mask = _lengths_mask([3, 5], 6)
    changed = memory.clone()
    changed[~mask] = randn(int((~mask).sum()), 8, seed=817, scale=10.0)
    return {"original": module(x, memory, memory_mask=mask),
            "padding changed": module(x, changed, memory_mask=mask)}


def _padding_invisible(outputs) -> str | None:
    difference = (outputs["original"] - outputs["padding changed"]).abs().max().item()
    if difference > 1e-12:
        return (f"changing the encoder outputs at PADDED positions (memory_mask False) changed "
                f"the result by up to {difference:.3g}: padded keys must get zero weight")
    return None


def _all_keys_seen(cls):
    """The LAST real encoder position changed: every query, the first included, must see it."""
    module = fill_parameters(cls(8, 2), seed=819)
    x, memory = randn(1, 3, 8, seed=821), randn(1, 5, 8, seed=823)
    changed = memory.clone()
    changed[:, -1] = randn(1, 8, seed=825, scale=5.0)
    return {"original": module(x, memory), "last key changed": module(x, changed)}


def _first_query_sees_last_key(outputs) -> str | None:
    first = (outputs["original"][:, 0] - outputs["last key changed"][:, 0]).abs().max().item()
    if first < 1e-9:
        return ("the first decoder position did not react to the last encoder position: "
                "cross-attention sees the whole source sentence, with no causal mask")
    return None


def _cross_gradients(cls):
    module = fill_parameters(cls(8, 4), seed=827)
    inputs = {"x": randn(2, 3, 8, seed=829), "memory": randn(2, 5, 8, seed=831),
              "memory_mask": _lengths_mask([5, 2], 5)}
    return with_gradients(module, inputs, module, seed=833)



CROSS_ARGUMENTS = {
    ("q",): N_("the queries passed to scaled_dot_product_attention differ while k and v agree: "
               "q = split_heads(linear_q(x)), from the decoder's x"),
    ("k",): CROSS_HINT, ("v",): CROSS_HINT, ("k", "v"): CROSS_HINT,
}
MASK_WRONG = N_("the cases without a memory_mask pass, so q, k and v are right and the mask is "
                "what goes wrong: memory_mask (*, L_k) marks encoder KEYS, to be hidden BEFORE "
                "the softmax (their scores become -inf, so each query's weights still sum to 1 "
                "over the real keys): pass memory_mask[..., None, None, :] (*, 1, 1, L_k) as the "
                "mask of scaled_dot_product_attention; never mask the queries, and no causal "
                "mask here")


def _cross_evidence(outcomes) -> str | None:
    hint = evidence.argument_hint(check_cross_attention, outcomes, SDPA, CROSS_ARGUMENTS)
    return _(hint) if hint else None


CROSS_MASKED = Case("memory_mask (2, 6), lengths 6 and 3: x (2, 4, 8), memory (2, 6, 8)",
                    _cross(8, 2, (2, 4, 8), (2, 6, 8), seed=803, mask=_lengths_mask([6, 3], 6)),
                    hint=MEMORY_MASK_HINT, tags=("mask",))


def _cross_large(cls):
    """Scores of about ±1500 and a row far below 0: linear_k = -linear_q, x = (80 u, -80 u) and
    every memory position about 80 u, so that query 0 scores about -6400 u.W u / sqrt(c) on every
    key and query 1 as much above 0."""
    module = fill_parameters(cls(8, 2), seed=845)
    with torch.no_grad():
        module.linear_k.weight.copy_(-module.linear_q.weight)
    u = randn(8, seed=847)
    u = u / u.norm()
    x = 80.0 * torch.stack([u, -u])[None] + randn(1, 2, 8, seed=849, scale=0.1)
    memory = 80.0 * u.expand(1, 3, 8) + randn(1, 3, 8, seed=851, scale=0.1)
    return {"output": module(x, memory), **parameter_shapes(module)}


def _cross_gradients_empty(cls):
    """A source sentence that is all padding: its queries see no key (output: linear_o's bias)."""
    module = fill_parameters(cls(8, 2), seed=835)
    inputs = {"x": randn(2, 3, 8, seed=837), "memory": randn(2, 4, 8, seed=839),
              "memory_mask": _lengths_mask([4, 0], 4)}
    return with_gradients(module, inputs, module, seed=841)


check_cross_attention = Check(
    id="07.cross_attention",
    target="transformer:CrossAttention",
    lesson="07",
    diagnose=lambda outcomes: _cross_evidence(outcomes),
    # the lengths disagree in the product of the weights with v: with L_q != L_k, keys taken from
    # x (the self-attention habit) meet values of the memory's length
    error_hints=(("RuntimeError", r"Expected size for first two dimensions of batch2 tensor",
                  N_("queries and keys disagree on a length (L_q != L_k here): the queries come "
                     "from the decoder states x (linear_q(x)), the keys and the values from the "
                     "encoder's memory (linear_k(memory), linear_v(memory))")),),
    tag_hints={"mask": MASK_WRONG},
    uses=(check_split_heads, check_merge_heads, check_attention_forward),
    cases=[
        Case("parameters of CrossAttention(8, 2)", lambda cls: parameter_shapes(cls(8, 2)),
             hint="linear_q, linear_k, linear_v: nn.Linear(d_model, d_model, bias=False); "
                  "linear_o: nn.Linear(d_model, d_model) with a bias"),
        Case("every query sees every encoder position (no causal mask)", _all_keys_seen,
             hint="the decoder reads the whole encoded source: keys AND values from memory, and "
                  "every query sees every encoder position: mask only the encoder's padding, "
                  "never with causal_mask", expect=_first_query_sees_last_key),
        Case("x (4, 8) attends to memory (6, 8), no mask", _cross(8, 2, (4, 8), (6, 8), seed=801),
             hint=CROSS_HINT,
             shape_hint="the output has one row per decoder position: (*, L_q, d_model)"),
        Case("padded encoder positions are invisible", _padding_hidden, hint=MEMORY_MASK_HINT,
             expect=_padding_invisible, tags=("mask",)),
        CROSS_MASKED,
        Case("one query, one key: x (1, 4), memory (1, 4)", _cross(4, 2, (1, 4), (1, 4), seed=805),
             hint="with one key every query's weight on it is 1: the output is "
                  "linear_o(merge_heads(v)). " + CROSS_HINT),
        Case("batch axes: x (2, 3, 4, 6), memory (2, 3, 5, 6), mask (2, 3, 5)",
             _cross(6, 3, (2, 3, 4, 6), (2, 3, 5, 6), seed=807,
                    mask=torch.arange(5) < torch.tensor([[5, 4, 1], [3, 5, 2]])[..., None]),
             hint="leading axes are batch axes for x, memory and memory_mask alike. "
                  + MEMORY_MASK_HINT, tags=("mask",)),
        Case("gradients w.r.t. x, memory and every parameter", _cross_gradients,
             hint="every projection must be used, with no .detach(): " + CROSS_HINT,
             tags=("mask",)),
        Case("gradients with a source that is all padding (memory_mask all False)",
             _cross_gradients_empty,
             hint="a query that sees no encoder position gets attention output 0 (so linear_o's "
                  "bias), and every gradient is a number, never NaN. " + MEMORY_MASK_HINT,
             tags=("mask",)),
        Case("x (2, 3, 8) attends to memory (2, 30, 8): a longer source",
             _cross(8, 2, (2, 3, 8), (2, 30, 8), seed=843, mask=_lengths_mask([30, 11], 30)),
             hint="L_q and L_k differ and may be of any size: " + CROSS_HINT, tags=("mask", "size")),
        Case("rows of large positive and large negative scores: linear_k = -linear_q, x and "
             "memory of size about 80", _cross_large,
             hint="scores of about ±1500 and a row far below 0 reach your "
                  "scaled_dot_product_attention: pass q, k, v and the key mask to it as they "
                  "are (its stable softmax shifts each row by its own max). " + CROSS_HINT),
        float32_of(CROSS_MASKED),
        bfloat16_of(CROSS_MASKED),
        meta_of(CROSS_MASKED),
        deterministic_of(CROSS_MASKED),
    ],
)
