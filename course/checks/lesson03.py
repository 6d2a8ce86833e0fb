"""Checks for lesson 03 (multi-head attention): splitting and merging heads, the module."""
from __future__ import annotations

import torch

from course.checks import evidence
from course.checks.core import Case, Check
from course.checks.inputs import fill_parameters, parameter_shapes, randn, with_gradients
from course.checks.kinds import (bfloat16_of, deterministic_of, float32_of, gradients_of,
                                 meta_of)
from course.checks.lesson02 import check_attention_forward
from course.i18n import N_, _

SPLIT_HINT = ("view the last axis as (N_head, c), so head h gets the channel block "
              "h*c .. (h+1)*c - 1, then transpose the head axis in front of L")
MERGE_HINT = ("undo split_heads: transpose back to (*, L, N_head, c), then reshape to "
              "(*, L, N_head*c), so head h fills the channel block h*c .. (h+1)*c - 1")


def _counting(*shape: int) -> torch.Tensor:
    """0, 1, 2, ... in the given shape: which channel lands where is readable in a failure."""
    return torch.arange(torch.Size(shape).numel(), dtype=torch.float64).view(*shape)


SPLIT_BATCH = Case("batch (2, 3): x (2, 3, 5, 8), 4 heads",
                   lambda f: f(randn(2, 3, 5, 8, seed=303), 4),
                   hint="leading axes are batch axes: keep them in front, split only the last "
                        "axis")
MERGE_BATCH = Case("batch (2, 3): x (2, 3, 4, 5, 2)", lambda f: f(randn(2, 3, 4, 5, 2, seed=313)),
                   hint="leading axes are batch axes: merge only the last three (N_head, L, c)")

check_split_heads = Check(
    id="03.split_heads",
    target="mha:split_heads",
    lesson="03",
    cases=[
        Case("x (5, 6), 2 heads of width 3", lambda f: f(_counting(5, 6), 2),
             hint=SPLIT_HINT,
             shape_hint="the result is (*, N_head, L, c): here (2, 5, 3)"),
        Case("x (4, 6), 3 heads of width 2", lambda f: f(randn(4, 6, seed=301), 3),
             hint=SPLIT_HINT),
        SPLIT_BATCH,
        Case("one head: x (3, 4)", lambda f: f(randn(3, 4, seed=305), 1),
             hint="with N_head=1 the result is x with a size-1 head axis: (1, L, c)"),
        Case("heads of width 1: x (2, 5, 4), 4 heads", lambda f: f(randn(2, 5, 4, seed=307), 4),
             hint=SPLIT_HINT),
        Case("batch (1,), one position: x (1, 1, 6), 3 heads",
             lambda f: f(randn(1, 1, 6, seed=309), 3),
             hint="a batch of one and a sequence of one keep their axes: (1, 3, 1, 2)"),
        Case("gradients of a fixed loss w.r.t. x (2, 5, 8), 4 heads",
             gradients_of(lambda f, x: f(x, 4), {"x": randn(2, 5, 8, seed=319)}),
             hint="split_heads only rearranges x (view, transpose): every entry's gradient "
                  "comes back to where it came from; no .detach(), no copy through numpy"),
        Case("x (2, 40, 24), 6 heads: longer and wider than the lesson's",
             lambda f: f(randn(2, 40, 24, seed=321), 6), hint=SPLIT_HINT, tags=("size",)),
        float32_of(Case("x (4, 6), 3 heads of width 2", lambda f: f(randn(4, 6, seed=301), 3),
                        hint=SPLIT_HINT)),
        bfloat16_of(SPLIT_BATCH),
        meta_of(SPLIT_BATCH),
    ],
)


check_merge_heads = Check(
    id="03.merge_heads",
    target="mha:merge_heads",
    lesson="03",
    cases=[
        Case("x (2, 5, 3): 2 heads, L=5, c=3", lambda f: f(_counting(2, 5, 3)),
             hint=MERGE_HINT,
             shape_hint="the result is (*, L, N_head*c): here (5, 6)"),
        Case("x (3, 4, 2): 3 heads, L=4, c=2", lambda f: f(randn(3, 4, 2, seed=311)),
             hint=MERGE_HINT),
        MERGE_BATCH,
        Case("undoes split_heads: x (2, 6, 12) split into 4 heads and merged again",
             lambda f: f(randn(2, 6, 12, seed=315).view(2, 6, 4, 3).transpose(-3, -2)),
             hint=MERGE_HINT),
        Case("batch (1,), one head, one position: x (1, 1, 1, 4)",
             lambda f: f(randn(1, 1, 1, 4, seed=317)),
             hint="a batch of one and a sequence of one keep their axes: (1, 1, 4)"),
        Case("gradients of a fixed loss w.r.t. x (2, 3, 5, 2)",
             gradients_of(lambda f, x: f(x), {"x": randn(2, 3, 5, 2, seed=319)}),
             hint="merge_heads only rearranges x (transpose, reshape): every entry's gradient "
                  "comes back to where it came from; no .detach(), no copy through numpy"),
        Case("x (2, 6, 40, 4): 6 heads, L=40: longer than the lesson's",
             lambda f: f(randn(2, 6, 40, 4, seed=323)), hint=MERGE_HINT, tags=("size",)),
        float32_of(Case("x (3, 4, 2): 3 heads, L=4, c=2", lambda f: f(randn(3, 4, 2, seed=311)),
                        hint=MERGE_HINT)),
        bfloat16_of(MERGE_BATCH),
        meta_of(MERGE_BATCH),
    ],
)


def _mha(c_in, c, N_head, x_shape, seed, attn_dim=-2, use_bias=False, bias=None, mask=None,
         gradients=False, scale=1.0):
    """Run MultiHeadAttention(c_in, c, N_head, attn_dim, ...) with fixed weights on a fixed x.

    With `gradients`, return the output and the gradients of a fixed loss with respect to x and
    every parameter instead of the parameter shapes.
    """
    def run(cls):
        module = cls(c_in, c, N_head, attn_dim=attn_dim, use_bias_for_embeddings=use_bias)
        fill_parameters(module, seed=seed)
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


MASK_AXIS_HINT = ("attention_mask is x.shape[:-1] (no channel axis): a positive attn_dim names "
                  "the same axis of the mask, a negative one is attn_dim + 1 there; move it to -1")


def _padding(shape, padded):
    """Bool mask of `shape`, True everywhere except at the index tuples in `padded`."""
    mask = torch.ones(shape, dtype=torch.bool)
    for index in padded:
        mask[index] = False
    return mask


PARAMETER_HINT = ("linear_q, linear_k, linear_v: nn.Linear(c_in, N_head*c, "
                  "bias=use_bias_for_embeddings); linear_o: nn.Linear(N_head*c, c_in) with bias")
FORWARD_HINT = ("per head h: softmax over the keys (last axis) of q_h k_h^T / sqrt(c), times v_h; "
                "then merge the heads in order and apply linear_o")

SDPA = "attention:scaled_dot_product_attention"
PROJECTIONS = {
    ("q",): N_("the queries q passed to scaled_dot_product_attention differ while k and v agree: "
               "q = split_heads(linear_q(x), N_head)"),
    ("k",): N_("the keys k passed to scaled_dot_product_attention differ while q and v agree: "
               "k = split_heads(linear_k(x), N_head)"),
    ("v",): N_("the values v passed to scaled_dot_product_attention differ while q and k agree: "
               "v = split_heads(linear_v(x), N_head)"),
    ("mask",): N_("attention_mask (*, L) marks keys: pass it to the attention as a key mask of "
                  "shape (*, 1, 1, L), broadcasting over heads and queries"),
    ("bias",): N_("pass `bias` on to the attention: it is added to the scores (*, N_head, L, L)"),
}


def _projections(outcomes) -> str | None:
    hint = evidence.argument_hint(check_multi_head_attention, outcomes, SDPA, PROJECTIONS)
    return _(hint) if hint else None


MASKED_MHA = Case("attention_mask (2, 5): padded keys are ignored",
                  _mha(4, 2, 2, (2, 5, 4), seed=331,
                       mask=_padding((2, 5), [(0, 4), (1, 1), (1, 3)])),
                  hint="attention_mask (*, L) marks keys: pass it to the attention as a key mask "
                       "of shape (*, 1, 1, L), broadcasting over heads and queries")
COLUMNS_MHA = Case("attn_dim=-3: columns of x (2, 4, 3, 6)",
                   _mha(6, 2, 3, (2, 4, 3, 6), seed=327, attn_dim=-3),
                   hint="attention runs along attn_dim: forward moves that axis to -2 and back "
                        "(x.movedim(attn_dim, -2)); do not assume the rows")

check_multi_head_attention = Check(
    id="03.multi_head_attention",
    target="mha:MultiHeadAttention",
    lesson="03",
    uses=(check_split_heads, check_merge_heads, check_attention_forward),
    provides=("mha:MultiHeadAttention._attention",),
    diagnose=lambda outcomes: _projections(outcomes),
    tag_hints={"positive": MASK_AXIS_HINT},
    cases=[
        Case("parameters of MultiHeadAttention(6, 4, 3)",
             lambda cls: parameter_shapes(cls(6, 4, 3)), hint=PARAMETER_HINT),
        Case("parameters with use_bias_for_embeddings=True",
             lambda cls: parameter_shapes(cls(6, 4, 3, use_bias_for_embeddings=True)),
             hint="use_bias_for_embeddings decides whether linear_q/k/v have a bias: "
                  "bias=use_bias_for_embeddings (linear_o always has one)"),
        Case("x (5, 6): 3 heads of width 4", _mha(6, 4, 3, (5, 6), seed=321),
             hint=FORWARD_HINT),
        Case("batch (2, 3): x (2, 3, 5, 8), 4 heads of width 2",
             _mha(8, 2, 4, (2, 3, 5, 8), seed=323),
             hint="leading axes are batch axes; the heads come from the last axis only"),
        Case("use_bias_for_embeddings=True: x (2, 4, 6)",
             _mha(6, 3, 2, (2, 4, 6), seed=325, use_bias=True),
             hint="with use_bias_for_embeddings=True, q, k and v include their biases"),
        COLUMNS_MHA,
        Case("attn_dim=-2: rows of x (2, 4, 3, 6)",
             _mha(6, 2, 3, (2, 4, 3, 6), seed=329, attn_dim=-2),
             hint=FORWARD_HINT),
        MASKED_MHA,
        Case("attention_mask with attn_dim=-3: x (2, 5, 3, 4)",
             _mha(4, 2, 2, (2, 5, 3, 4), seed=333, attn_dim=-3,
                  mask=_padding((2, 5, 3), [(0, 4, 0), (0, 3, 2), (1, 0, 1)])),
             hint="attention_mask (*, L) marks keys: pass it to the attention as a key mask of "
                  "shape (*, 1, 1, L), broadcasting over heads and queries"),
        Case("bias (3, 4, 4) added to every head's scores",
             _mha(6, 2, 3, (2, 4, 6), seed=335, bias=randn(3, 4, 4, seed=337, scale=2.0)),
             hint="pass `bias` on to the attention: it is added to the scores (*, N_head, L, L)"),
        Case("positive attn_dim=1 with a mask: x (2, 4, 3, 6), S=4 != R=3",
             _mha(6, 2, 3, (2, 4, 3, 6), seed=339, attn_dim=1,
                  mask=_padding((2, 4, 3), [(0, 3, 0), (0, 2, 1), (1, 3, 2)])),
             hint=MASK_AXIS_HINT, tags=("positive",)),
        Case("positive attn_dim=1 with a mask: x (2, 4, 4, 6), S = R",
             _mha(6, 2, 3, (2, 4, 4, 6), seed=341, attn_dim=1,
                  mask=_padding((2, 4, 4), [(0, 3, 0), (0, 2, 1), (1, 3, 2), (1, 0, 3)])),
             hint=MASK_AXIS_HINT, tags=("positive",)),
        Case("positive attn_dim=2 (rows) with a mask: x (2, 3, 5, 4)",
             _mha(4, 2, 2, (2, 3, 5, 4), seed=343, attn_dim=2,
                  mask=_padding((2, 3, 5), [(0, 0, 4), (1, 2, 3), (1, 2, 4)])),
             hint=MASK_AXIS_HINT, tags=("positive",)),
        Case("one head, batch (1,), one position: x (1, 1, 4)",
             _mha(4, 3, 1, (1, 1, 4), seed=345),
             hint="N_head = 1, a batch of one and a sequence of one keep their axes: the output "
                  "has x's shape (1, 1, 4)"),
        Case("gradients of a fixed loss: x (2, 5, 6), 3 heads, padding mask and bias",
             _mha(6, 2, 3, (2, 5, 6), seed=347, use_bias=True,
                  bias=randn(3, 5, 5, seed=349), mask=_padding((2, 5), [(0, 4), (1, 3), (1, 4)]),
                  gradients=True),
             hint="the output is right, so look at the gradients: x and every parameter must be "
                  "connected to the output (no .detach(), no torch.no_grad() in forward)"),
        Case("gradients with a sequence that is all padding: x (2, 4, 6), 2 heads",
             _mha(6, 3, 2, (2, 4, 6), seed=351,
                  mask=_padding((2, 4), [(1, 0), (1, 1), (1, 2), (1, 3)]), gradients=True),
             hint="a sequence whose every position is padding sees no key: its attention output "
                  "is 0 (linear_o adds its bias), and its gradients are numbers, never NaN"),
        Case("x (2, 20, 8), 4 heads, attention_mask: longer than the lesson's",
             _mha(8, 2, 4, (2, 20, 8), seed=353,
                  mask=_padding((2, 20), [(0, 19), (1, 3), (1, 15)])),
             hint="nothing in forward may depend on a fixed sequence length: L comes from x", tags=("size",)),
        Case("rows of large positive and large negative scores: x x 30, bias -3000 on query 0",
             _mha(4, 4, 2, (2, 5, 4), seed=355, bias=_row_bias(2, 5), scale=30.0,
                  mask=_padding((2, 5), [(1, 4)])),
             hint="scores of about ±1000 and a row far below 0 reach your "
                  "scaled_dot_product_attention: pass q, k, v, bias and the key mask to it as "
                  "they are (its stable softmax shifts each row by its own max)"),
        float32_of(MASKED_MHA),
        float32_of(COLUMNS_MHA),
        bfloat16_of(MASKED_MHA),
        meta_of(MASKED_MHA),
        meta_of(COLUMNS_MHA),  # no mask: the path without one makes no tensor on a fixed device
        deterministic_of(MASKED_MHA),
    ],
)
