"""Hidden cases of lesson 08 (the gated-attention paper): see course/grading/hidden/spec.py."""
from __future__ import annotations

from course.grading.hidden.spec import hidden


def _gated_paper(d, gate):
    heads, head_dim, L = d.int(2, 3), d.int(2, 3), d.int(2, 6)
    init = (heads * head_dim, heads, gate)
    D = heads * head_dim
    return [
        d.module("one head", (head_dim, 1, gate), args=[d.randn(L, head_dim)]),
        d.init("initialisation", init),
        d.module("forward", init, args=[d.randn(L, D)]),
        d.module("batch", init, args=[d.randn(*d.batch(2), L, D)]),
        d.module("gate_scores", init, args=[d.randn(2, L, D)], method="gate_scores"),
        d.module("gradients", init, args=[d.randn(2, L, D)], grad=True),
        d.module("one token", init, args=[d.randn(2, 1, D)]),
        d.module("gate_scores, a batch of one", init, args=[d.randn(1, L, D)], method="gate_scores"),
        d.module("long", init, args=[d.randn(2, d.int(20, 40), D)]),
        d.float32(d.module("batch", init, args=[d.randn(2, L, D)])),
        d.bfloat16(d.module("batch", init, args=[d.randn(2, L, D)])),
        d.meta(d.module("batch", init, args=[d.randn(2, L, D)])),
        d.repeat(d.module("batch", init, args=[d.randn(2, L, D)])),
        d.module("rows of large positive and large negative scores", init,
                 args=[d.randn(2, L, D, scale=40.0)], edit=lambda m: _keys_against_queries(m, D)),
    ]


def _keys_against_queries(module, D: int) -> None:
    """The key rows of qkv set to minus its query rows (q_i . k_j = -q_i . q_j)."""
    module.qkv.weight[D:2 * D] = -module.qkv.weight[:D]


@hidden("08.gate_elementwise")
def _gate_elementwise(d):
    return _gated_paper(d, "elementwise")


@hidden("08.gate_headwise")
def _gate_headwise(d):
    return _gated_paper(d, "headwise")
