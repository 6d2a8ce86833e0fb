"""Checks for lesson 06 (gating): AlphaFold's output gate, then the full MultiHeadAttention.

The trap this lesson's checks are built against: a check whose cases never exercise the gate
lets a student who forgot it pass. Here the gate's weights come from `fill_parameters` (random),
so a gated module computes something else than an ungated one, and targeted probes come first:
the gate is applied at all, before linear_o, through a sigmoid, from the input x. The mutation
suite (tests/mutants/lesson05.py, lesson06.py) proves each probe catches its bug.
"""
from __future__ import annotations

import torch

from course.checks.core import Case, Check
from course.checks.inputs import fill_parameters, parameter_shapes, randn, with_gradients
from course.checks.kinds import bfloat16_of, deterministic_of, float32_of, meta_of
from course.i18n import N_, _
from course.checks.lesson03 import check_multi_head_attention
from course.checks.lesson05 import check_global_attention

GATE_HINT = ("gate = sigmoid(linear_g(x)) from the module's input x (after the movedim), "
             "multiplied into o channel by channel before linear_o")


def _gated(c_in, c, N_head, x_shape, seed, attn_dim=-2, is_global=False, use_bias=False,
           bias=None, mask=None, set_to=None, gradients=False, scale=1.0):
    """Run a gated MultiHeadAttention with fixed weights; `set_to` overrides some parameters.

    With `gradients`, return the output and the gradients of a fixed loss with respect to x and
    every parameter instead of the parameter shapes.
    """
    def run(cls):
        module = cls(c_in, c, N_head, attn_dim=attn_dim, gated=True, is_global=is_global,
                     use_bias_for_embeddings=use_bias)
        fill_parameters(module, seed)
        with torch.no_grad():
            for name, value in (set_to or {}).items():
                parameter = module.get_parameter(name)
                parameter.copy_(torch.as_tensor(value, dtype=parameter.dtype).expand_as(parameter))
        x = randn(*x_shape, seed=seed + 1, scale=scale)
        if gradients:
            return with_gradients(lambda x: module(x, bias=bias, attention_mask=mask), {"x": x},
                                  module, seed=seed)
        out = module(x, bias=bias, attention_mask=mask)
        return {"output": out, **parameter_shapes(module)}
    return run


def _row_bias(N_head: int, L: int, value: float = -3000.0) -> torch.Tensor:
    """(N_head, L, L): 0, but `value` on query 0's row of every head."""
    bias = torch.zeros(N_head, L, L, dtype=torch.float64)
    bias[:, 0] = value
    return bias


GATE_FROM_O = N_("your output is the gate computed from the attention output o, "
                 "sigmoid(linear_g(o)) * o: the gate is a branch parallel to the attention, "
                 "computed from the module's input x (after the movedim), not from the "
                 "attention output o: o = sigmoid(linear_g(x)) * o, then linear_o")
NO_SIGMOID = N_("your gate multiplies o by linear_g(x) itself, without the sigmoid: squash it, "
                "o = sigmoid(linear_g(x)) * o, so that each gate lies in (0, 1)")
GLOBAL_UNGATED = N_("your global attention's output is not gated (the row and column paths "
                    "are): global attention shares one summary per slice, but the gate "
                    "sigmoid(linear_g(x)) comes from each position's own x: gate the global "
                    "output too, per position, before linear_o")
AFTER_O = N_("your gate multiplies linear_o's result: the gate acts on o (N_head*c channels) "
             "BEFORE linear_o, o = sigmoid(linear_g(x)) * o, then linear_o(o)")
NO_GATE = N_("your output is that of the ungated module: with gated=True, multiply o by "
             "sigmoid(linear_g(x)) before linear_o")
GATE_ADDED = N_("your gate is added to o: the gate multiplies o, channel by channel, "
                "o = sigmoid(linear_g(x)) * o, before linear_o")
ATTENTION = ("mha:MultiHeadAttention._attention", "mha:MultiHeadAttention._global_attention")


def _linear(t, state, name):
    return t @ state[f"{name}.weight"].T + state[f"{name}.bias"]


GATE_FORMULAS = [  # (hint, output from x (after movedim), o (before the gate) and the state)
    (GATE_FROM_O, lambda x, o, st: _linear(torch.sigmoid(_linear(o, st, "linear_g")) * o, st,
                                           "linear_o")),
    (NO_SIGMOID, lambda x, o, st: _linear(_linear(x, st, "linear_g") * o, st, "linear_o")),
    (AFTER_O, lambda x, o, st: torch.sigmoid(_linear(x, st, "linear_g")) *
     _linear(o, st, "linear_o")),
    (GATE_ADDED, lambda x, o, st: _linear(torch.sigmoid(_linear(x, st, "linear_g")) + o, st,
                                          "linear_o")),
    (NO_GATE, lambda x, o, st: _linear(o, st, "linear_o")),
]


def _gate_source(outcomes) -> str | None:
    """Where the gate comes from and where it acts: the one wrong formula that gives the
    student's output from the reference's own attention output o (recorded) in every case that
    differs."""
    found = []
    for outcome in outcomes:
        if outcome.status != "differs" or outcome.case.variant is not None or \
                outcome.key != "output":
            continue
        call = next((c for c in outcome.calls if c["target"] in ATTENTION), None)
        if call is None or not call.get("state") or "linear_g.weight" not in call["state"]:
            continue
        found.append((call["args"]["x"], call["output"], call["state"],
                      outcome.got["output"].double(), call["target"]))
    globals_only = found and all(target.endswith("_global_attention") for *_, target in found)
    for hint, formula in GATE_FORMULAS:
        matched = 0
        for x, o, state, got, _target in found:
            try:
                candidate = formula(x, o, state)
            except RuntimeError:
                break
            if candidate.shape != got.shape and candidate.movedim(-2, -3).shape == got.shape:
                candidate = candidate.movedim(-2, -3)
            if candidate.shape != got.shape or not torch.allclose(candidate, got, rtol=1e-6,
                                                                  atol=1e-9):
                break
            matched += 1
        if found and matched == len(found):
            return _(GLOBAL_UNGATED if hint == NO_GATE and globals_only else hint)
    return None


def _gated_and_ungated(cls):
    """The same weights (names and shapes decide them) with and without the gate."""
    x = randn(2, 5, 8, seed=603)
    gated = fill_parameters(cls(8, 4, 2, gated=True), seed=601)
    plain = fill_parameters(cls(8, 4, 2, gated=False), seed=601)
    return {"gated": gated(x), "ungated": plain(x)}


def _gate_changes_output(outputs) -> str | None:
    difference = (outputs["gated"] - outputs["ungated"]).abs().max().item()
    if difference < 1e-6:
        return ("the gated module returned the same output as the ungated one "
                f"(max difference {difference:.1e}): the gate is not applied")
    return None


def _gate_at_initialisation(cls):
    """A freshly built gated module (no fill_parameters): what linear_g starts from."""
    module = cls(8, 4, 2, gated=True)
    return {"linear_g.weight": module.linear_g.weight, "linear_g.bias": module.linear_g.bias}


GATE_FROM_X = Case("random gate weights: the gate is computed from x",
                   _gated(8, 4, 2, (2, 5, 8), seed=609),
                   hint="compute the gate from the module's input x, not from the attention "
                        "output o: it is a branch parallel to the attention. " + GATE_HINT)

check_gate = Check(
    id="06.gate",
    target="mha:MultiHeadAttention",
    lesson="06",
    uses=(check_multi_head_attention,),
    provides=(),  # the gate sits in forward, which every MultiHeadAttention check runs
    diagnose=_gate_source,
    cases=[
        Case("parameters of MultiHeadAttention(6, 4, 2, gated=True): c_in != N_head*c",
             lambda cls: parameter_shapes(cls(6, 4, 2, gated=True)),
             hint="gated=True adds linear_g = nn.Linear(c_in, N_head*c) WITH a bias: one gate "
                  "per channel of o"),
        Case("linear_g at initialisation: weight 0, bias 1", _gate_at_initialisation,
             hint="AlphaFold starts the gate open: linear_g.weight = 0 and linear_g.bias = 1, "
                  "so every gate starts at sigmoid(1) = 0.73 (not 0.5, not random)"),
        Case("the gate changes the output", _gated_and_ungated,
             hint="with gated=True multiply o by sigmoid(linear_g(x)) in forward: with random "
                  "linear_g weights the output must differ from the ungated module's",
             expect=_gate_changes_output),
        Case("values switched off (linear_v weight 0): the output is linear_o's bias",
             _gated(8, 4, 2, (2, 5, 8), seed=605, set_to={"linear_v.weight": 0.0}),
             hint="the gate multiplies o (N_head*c channels) BEFORE linear_o, never linear_o's "
                  "result: with o = 0 the output is linear_o's bias alone"),
        Case("constant gate logits (linear_g weight 0, bias -3 .. 3)",
             _gated(8, 4, 2, (2, 5, 8), seed=607,
                    set_to={"linear_g.weight": 0.0,
                            "linear_g.bias": torch.linspace(-3.0, 3.0, 8, dtype=torch.float64)}),
             hint="the gate is sigmoid(linear_g(x)), a number in (0, 1) per channel; without "
                  "the sigmoid it is an unbounded multiplier"),
        GATE_FROM_X,
        Case("columns (attn_dim=-3) of x (2, 4, 3, 6), 3 heads of width 2",
             _gated(6, 2, 3, (2, 4, 3, 6), seed=611, attn_dim=-3), hint=GATE_HINT),
        Case("gradients of a fixed loss: x (2, 5, 8), 2 heads",
             _gated(8, 4, 2, (2, 5, 8), seed=613, gradients=True),
             hint="the output is right, so look at the gradients: linear_g and x (through the "
                  "gate too) must be connected to the output, or the gate never learns"),
        Case("x (2, 24, 8): longer than the lesson's", _gated(8, 4, 2, (2, 24, 8), seed=615),
             hint="nothing in forward may depend on a fixed sequence length: the gate is per "
                  "position, sigmoid(linear_g(x)) of shape (*, L, N_head*c), for any L",
             tags=("size",)),
        Case("rows of large positive and large negative scores: x x 30, bias -3000 on query 0",
             _gated(8, 4, 2, (2, 5, 8), seed=617, bias=_row_bias(2, 5), scale=30.0),
             hint="scores of about ±1000 and a row far below 0: the attention's stable softmax "
                  "handles them, and the gate multiplies its output as it is"),
        float32_of(GATE_FROM_X),
        bfloat16_of(GATE_FROM_X),
        meta_of(GATE_FROM_X),
        deterministic_of(GATE_FROM_X),
    ],
)


MASK_AXIS_HINT = ("attention_mask is x.shape[:-1] (no channel axis): a positive attn_dim names "
                  "the same axis of the mask, a negative one is attn_dim + 1 there; move both "
                  "x's and the mask's attention axis to -2 and -1")


def _pair_bias(N_head, R, seed):
    return randn(N_head, R, R, seed=seed, scale=2.0)


def _per_sequence_gate(outputs) -> str | None:
    out = outputs["output"]  # (S, R, c_in); attention along S, sequences 0-2 real in column 0
    spread = (out[0, 0] - out[1, 0]).abs().max().item()
    if spread < 1e-6:
        return ("two real sequences of one column got identical outputs: the shared summary "
                "was not gated per sequence")
    return None


ROW_FULL = Case("row attention with pair bias, padding mask and gate: MSA (3, 5, 8), 2 heads",
                _gated(8, 4, 2, (3, 5, 8), seed=621, bias=_pair_bias(2, 5, seed=623),
                       mask=torch.tensor([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]],
                                         dtype=torch.bool)),
                hint="row attention (attn_dim=-2): the bias (N_head, R, R) is added to every "
                     "sequence's scores, the mask hides padded keys, then the gate from x")
GLOBAL_FULL = Case("gated global attention with padding: MSA (2, 4, 3, 8), 2 heads",
                   _gated(8, 4, 2, (2, 4, 3, 8), seed=629, attn_dim=-3, is_global=True,
                          mask=torch.ones(2, 4, 3, dtype=torch.bool).index_put_(
                              (torch.tensor([0, 0, 1]), torch.tensor([3, 2, 3]),
                               torch.tensor([0, 0, 2])), torch.tensor(False))),
                   hint="is_global and gated together: masked-mean query, shared K/V, the "
                        "summary broadcast to every sequence, then each sequence's gate, then "
                        "linear_o")

check_full_module = Check(
    id="06.full_module",
    target="mha:MultiHeadAttention",
    lesson="06",
    uses=(check_multi_head_attention, check_global_attention, check_gate),
    provides=(),
    diagnose=_gate_source,
    cases=[
        ROW_FULL,
        Case("column attention (attn_dim=-3) with padding and gate: MSA (2, 5, 3, 6)",
             _gated(6, 2, 3, (2, 5, 3, 6), seed=625, attn_dim=-3,
                    mask=torch.ones(2, 5, 3, dtype=torch.bool).index_put_(
                        (torch.tensor([0, 1, 1]), torch.tensor([4, 3, 4]), torch.tensor([1, 2, 2])),
                        torch.tensor(False))),
             hint="attn_dim=-3: forward moves the sequence axis to -2 (x and mask), attends, "
                  "gates, applies linear_o and moves the axis back"),
        Case("gated global attention: each sequence gets its own gate",
             _gated(8, 4, 2, (4, 3, 8), seed=627, attn_dim=-3, is_global=True,
                    mask=torch.ones(4, 3, dtype=torch.bool).index_put_(
                        (torch.tensor([3]), torch.tensor([0])), torch.tensor(False))),
             hint="global attention shares one summary per column, but the gate "
                  "sigmoid(linear_g(x)) comes from each sequence's own x: gate the global "
                  "output too, per position",
             expect=_per_sequence_gate),
        GLOBAL_FULL,
        Case("use_bias_for_embeddings=True, global and gated",
             _gated(6, 3, 2, (4, 2, 6), seed=631, attn_dim=-3, is_global=True, use_bias=True),
             hint="use_bias_for_embeddings puts a bias on linear_q, linear_k and linear_v, the "
                  "global single-head linear_k and linear_v included"),
        Case("use_bias_for_embeddings=True, row attention with pair bias",
             _gated(6, 3, 2, (2, 4, 6), seed=633, use_bias=True, bias=_pair_bias(2, 4, seed=635)),
             hint="use_bias_for_embeddings puts a bias on linear_q, linear_k and linear_v; "
                  "linear_o and linear_g always have one"),
        Case("positive attn_dim=1 on a batch of MSAs (2, 4, 3, 6)",
             _gated(6, 2, 2, (2, 4, 3, 6), seed=637, attn_dim=1),
             hint="attn_dim may be positive: movedim(attn_dim, -2) there, and back at the end"),
        Case("positive attn_dim=1 with padding: MSAs (2, 4, 4, 6), S = R",
             _gated(6, 2, 2, (2, 4, 4, 6), seed=639, attn_dim=1,
                    mask=torch.ones(2, 4, 4, dtype=torch.bool).index_put_(
                        (torch.tensor([0, 0, 1]), torch.tensor([3, 2, 3]), torch.tensor([0, 1, 3])),
                        torch.tensor(False))),
             hint=MASK_AXIS_HINT),
        Case("positive attn_dim=1, global, with padding: MSAs (2, 4, 3, 6)",
             _gated(6, 2, 2, (2, 4, 3, 6), seed=641, attn_dim=1, is_global=True,
                    mask=torch.ones(2, 4, 3, dtype=torch.bool).index_put_(
                        (torch.tensor([0, 1, 1]), torch.tensor([3, 2, 3]), torch.tensor([0, 1, 1])),
                        torch.tensor(False))),
             hint=MASK_AXIS_HINT),
        Case("one head, batch (1,), one sequence of one residue: x (1, 1, 1, 6)",
             _gated(6, 2, 1, (1, 1, 1, 6), seed=643, attn_dim=-3),
             hint="N_head = 1 and size-1 batch and sequence axes keep their place: the output "
                  "has x's shape (1, 1, 1, 6)"),
        Case("gradients of a fixed loss: gated global attention with padding, MSA (4, 3, 6)",
             _gated(6, 2, 2, (4, 3, 6), seed=645, attn_dim=-3, is_global=True,
                    mask=torch.ones(4, 3, dtype=torch.bool).index_put_(
                        (torch.tensor([3, 2]), torch.tensor([0, 2])), torch.tensor(False)),
                    gradients=True),
             hint="the output is right, so look at the gradients: x and every parameter "
                  "(linear_g included) must be connected to the output"),
        Case("gradients of a fixed loss: row attention with pair bias and padding, MSA (2, 4, 6)",
             _gated(6, 3, 2, (2, 4, 6), seed=647, use_bias=True, bias=_pair_bias(2, 4, seed=649),
                    mask=torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool),
                    gradients=True),
             hint="the output is right, so look at the gradients: x and every parameter "
                  "(linear_g included) must be connected to the output"),
        Case("gradients with a column that is all padding: gated global attention, MSA (4, 3, 6)",
             _gated(6, 2, 2, (4, 3, 6), seed=651, attn_dim=-3, is_global=True,
                    mask=torch.ones(4, 3, dtype=torch.bool).index_put_(
                        (torch.arange(4), torch.tensor([1, 1, 1, 1])), torch.tensor(False)),
                    gradients=True),
             hint="a column that is all padding sees no key: its attention output is 0, so its "
                  "output is linear_o's bias, and every gradient is a number, never NaN"),
        Case("row attention with pair bias and padding, MSA (2, 24, 8): longer than the lesson's",
             _gated(8, 4, 2, (2, 24, 8), seed=653, bias=_pair_bias(2, 24, seed=655),
                    mask=torch.ones(2, 24, dtype=torch.bool).index_put_(
                        (torch.tensor([0, 1]), torch.tensor([23, 7])), torch.tensor(False))),
             hint="nothing in forward may depend on a fixed sequence length: L comes from x",
             tags=("size",)),
        Case("rows of large positive and large negative scores: x x 30, pair bias -3000 on "
             "query 0", _gated(8, 4, 2, (3, 5, 8), seed=657, bias=_row_bias(2, 5), scale=30.0,
                               mask=torch.ones(3, 5, dtype=torch.bool)),
             hint="scores of about ±1000 and a row far below 0: the attention's stable softmax "
                  "handles them, and the gate multiplies its output as it is"),
        float32_of(ROW_FULL),
        float32_of(GLOBAL_FULL),
        bfloat16_of(ROW_FULL),
        meta_of(ROW_FULL),
        meta_of(GLOBAL_FULL),
        deterministic_of(ROW_FULL),
    ],
)
