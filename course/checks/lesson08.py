"""Checks for lesson 08 (the gated-attention paper): the G1 gate, elementwise and headwise.

The gate is bias-free, as in the paper's code (extra rows of the bias-free q_proj)."""
from __future__ import annotations

import torch

from course.checks.core import Case, Check
from course.checks.inputs import (fill_parameters, inputs_unchanged, no_input_modified,
                                  parameter_shapes, randn, with_gradients)
from course.checks.kinds import bfloat16_of, deterministic_of, float32_of, meta_of
from course.checks.lesson02 import check_attention_weights, check_causal_mask
from course.confirm.standins import same
from course.i18n import N_, _

D_MODEL, N_HEADS = 8, 2


def _module(cls, gate: str, seed: int):
    return fill_parameters(cls(D_MODEL, N_HEADS, gate), seed=seed)


def _gate_scores(gate: str, x_shape, seed: int):
    def run(cls):
        return _module(cls, gate, seed).gate_scores(randn(*x_shape, seed=seed + 1))
    return run


def _forward(gate: str, x_shape, seed: int):
    def run(cls):
        module = _module(cls, gate, seed)
        return {"output": module(randn(*x_shape, seed=seed + 1)), **parameter_shapes(module)}
    return run


def _scores_and_output(gate: str, x_shape, seed: int):
    def run(cls):
        module = _module(cls, gate, seed)
        x = randn(*x_shape, seed=seed + 1)
        return {"gate scores": module.gate_scores(x), "output": module(x)}
    return run


def _unmodified(gate: str, seed: int):
    def run(cls):
        module = _module(cls, gate, seed)
        return inputs_unchanged(module.gate_scores, randn(2, 5, D_MODEL, seed=seed + 1))
    return run


def _gradients(gate: str, seed: int):
    def run(cls):
        module = _module(cls, gate, seed)
        return with_gradients(module, {"x": randn(2, 5, D_MODEL, seed=seed + 1)}, module=module,
                              seed=seed + 2)
    return run


def _large(gate: str, seed: int):
    """The key rows of qkv set to minus the query rows and x scaled by 40: q_i . k_j =
    -q_i . q_j, so query 0 (which sees key 0 only) scores about -|q_0|^2 / sqrt(head_dim), far
    below 0, and queries that meet an opposite key score far above 0."""
    def run(cls):
        module = _module(cls, gate, seed)
        with torch.no_grad():
            module.qkv.weight[D_MODEL:2 * D_MODEL] = -module.qkv.weight[:D_MODEL]
        return {"output": module(randn(2, 5, D_MODEL, seed=seed + 1, scale=40.0)),
                **parameter_shapes(module)}
    return run


def _scores_vary_over_tokens(outputs) -> str | None:
    scores = outputs["output"]
    if (scores - scores[:1]).abs().max() < 1e-9:
        return "every token got the same gate scores: the gate ignores x"
    return None


def _scores_in_unit_interval(outputs) -> str | None:
    scores = outputs["output"]
    if scores.min() <= 0 or scores.max() >= 1:
        return f"gate scores range from {scores.min():.3g} to {scores.max():.3g}, outside (0, 1)"
    return None


def _causal_run(gate: str, seed: int):
    def run(cls):
        module = _module(cls, gate, seed)
        x = randn(5, D_MODEL, seed=seed + 1)
        changed = x.clone()
        changed[-1] += 3.0  # only the last token differs
        return {"original": module(x), "last token changed": module(changed)}
    return run


def _earlier_tokens_unchanged(outputs) -> str | None:
    before, after = outputs["original"][:-1], outputs["last token changed"][:-1]
    if not torch.allclose(before, after, atol=1e-12):
        return "changing the last token changed the outputs of earlier tokens"
    return None


GATE_SCORES = "gated_attention:GatedCausalSelfAttention.gate_scores"
GATE_FROM_X = N_("G1: compute the gate from the layer's input x (the normalised hidden state), "
                 "not from the attention output: forward must call gate_scores(x) with its own x")
GATE_APPLIED = N_("your gate_scores is right (its cases pass), so the bug is in how forward "
                  "applies it: y = y * gate_scores(x), with y the SDPA output per head (*, L, "
                  "n_heads, head_dim), before the output projection W_O (self.out(y.flatten(-2)));"
                  " gating after W_O is position G5. The scores broadcast over each head's "
                  "channels by themselves: repeating or reshaping them mixes up the heads")


def _gate_evidence(outcomes) -> str | None:
    """gate_scores right, forward wrong: what forward passes to gate_scores, how it uses it."""
    scores = [o for o in outcomes if "gate_scores" in o.case.tags]
    forward = [o for o in outcomes if "forward" in o.case.tags and o.failed]
    if not forward or not scores or any(o.failed for o in scores) or \
            any((o.key or "").startswith("gate scores") for o in forward):
        return None
    for outcome in forward:
        theirs = [c for c in outcome.seen if c["target"] == GATE_SCORES]
        ours = [c for c in outcome.calls if c["target"] == GATE_SCORES]
        if theirs and ours and not same(ours[0]["args"], theirs[0]["args"]):
            return _(GATE_FROM_X)
    return _(GATE_APPLIED)


def _cases(gate: str, width_text: str, seed: int) -> list[Case]:
    batched = Case("x (2, 3, 6, 8): leading batch axes", _forward(gate, (2, 3, 6, D_MODEL), seed + 50),
                   hint="leading axes are batch axes; the gate multiplies y of shape "
                        "(*, L, n_heads, head_dim) before out(y.flatten(-2))", tags=("forward",))
    own_gates = (f"gate_proj = Linear(d_model, {width_text}, bias=False): each head has its "
                 "own gate columns, and the paper's gate has no bias of its own (its logits are "
                 "extra rows of the bias-free q_proj)")
    return [
        Case(f"parameters of GatedCausalSelfAttention({D_MODEL}, {N_HEADS}, '{gate}')",
             lambda cls: parameter_shapes(cls(D_MODEL, N_HEADS, gate)),
             hint=own_gates, shape_hint=own_gates),
        Case("gate_scores(x) leaves x as it was", _unmodified(gate, seed + 5),
             hint="the gate reads x and must not change it: no in-place operations on x "
                  "(x /= ..., x.sub_(...)); the caller's tensor is the residual stream",
             expect=no_input_modified, tags=("gate_scores",)),
        Case("gate scores change from token to token", _gate_scores(gate, (6, D_MODEL), seed),
             hint="the gate is input-dependent, computed from each token's x by gate_proj, "
                  "not a learned constant per head",
             expect=_scores_vary_over_tokens, tags=("gate_scores",)),
        Case("gate scores lie in (0, 1)", _gate_scores(gate, (2, 6, D_MODEL), seed + 10),
             hint="squash the gate logits with a sigmoid: scores lie in (0, 1)",
             expect=_scores_in_unit_interval, tags=("gate_scores",)),
        Case("gate_scores(x) for x (2, 6, 8)", _gate_scores(gate, (2, 6, D_MODEL), seed + 20),
             hint="gate_scores(x) = sigmoid(gate_proj(x)) with the last axis split as "
                  "(n_heads, gate width): channel block h belongs to head h",
             shape_hint="gate_scores returns (*, L, n_heads, "
                        f"{'head_dim' if gate == 'elementwise' else '1'})",
             tags=("gate_scores",)),
        Case("x (5, 8): the gate is computed from x, and sits before W_O",
             _forward(gate, (5, D_MODEL), seed + 40),
             hint="G1: compute the gate from the layer's input x (the normalised hidden state), "
                  "not from the attention output, and multiply each head's SDPA output by it "
                  "before the output projection W_O (gating after W_O is position G5)",
             tags=("forward",)),
        batched,
        Case("a batch of one sequence of one token, x (1, 1, 8)",
             _scores_and_output(gate, (1, 1, D_MODEL), seed + 55),
             hint="axes of size 1 are real axes: gate_scores of x (1, 1, 8) is "
                  "(1, 1, n_heads, width); do not squeeze them away",
             shape_hint="axes of size 1 are real axes: gate_scores of x (1, 1, 8) is "
                        "(1, 1, n_heads, width); do not squeeze them away",
             tags=("forward",)),
        Case("causal: a later token does not change earlier outputs", _causal_run(gate, seed + 60),
             hint="the gate of token i must use x_i only; attention keeps its causal mask",
             expect=_earlier_tokens_unchanged, tags=("forward",)),
        Case("gradients of a loss w.r.t. x and every parameter", _gradients(gate, seed + 70),
             hint="the gate must pass gradients: no .detach() or torch.no_grad() around the "
                  "gate, or gate_proj never learns (its gradient is missing: NaN here)",
             tags=("forward",)),
        Case("x (2, 24, 8): longer than the lesson's", _forward(gate, (2, 24, D_MODEL), seed + 80),
             hint="nothing may depend on a fixed sequence length: the gate scores are per "
                  "token, (*, L, n_heads, width), for any L", tags=("forward", "size")),
    ] + _kinds(gate, batched, seed)


def _kinds(gate: str, batched: Case, seed: int) -> list[Case]:
    """Rows of large scores, and the kinds derived from the batched case (course/checks/kinds.py)."""
    return [
        Case("rows of large positive and large negative scores: k = -q, x x 40",
             _large(gate, seed + 90),
             hint="scores of about ±1000 and a row far below 0: the attention's stable softmax "
                  "handles them (attend() is given); the gate multiplies its output as it is",
             tags=("forward",)),
        float32_of(batched),
        bfloat16_of(batched),
        meta_of(batched),
        deterministic_of(batched),
    ]


check_gate_elementwise = Check(
    id="08.gate_elementwise",
    target="gated_attention:GatedCausalSelfAttention",
    lesson="08",
    uses=(check_attention_weights, check_causal_mask),
    provides=(GATE_SCORES,),  # watched, so that a diagnosis sees what forward gates with
    diagnose=_gate_evidence,
    cases=_cases("elementwise", "n_heads * head_dim", seed=700),
)

check_gate_headwise = Check(
    id="08.gate_headwise",
    target="gated_attention:GatedCausalSelfAttention",
    lesson="08",
    # the two gates share gate_scores and forward: a bug there fails the elementwise check first
    uses=(check_attention_weights, check_causal_mask, check_gate_elementwise),
    provides=(GATE_SCORES,),
    diagnose=_gate_evidence,
    cases=_cases("headwise", "n_heads", seed=800),
)
