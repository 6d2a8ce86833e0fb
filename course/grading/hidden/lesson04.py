"""Hidden cases of lesson 04 (bias and broadcasting): see course/grading/hidden/spec.py."""
from __future__ import annotations

from course.grading.hidden.spec import hidden


@hidden("04.broadcastable_bias")
def _broadcastable_bias(d):
    N, q, k = d.int(1, 4), d.int(1, 4), d.int(1, 4)
    bias = d.randn(*d.batch(2, 1, 3), N, q, k)
    two = d.randn(d.int(2, 3), d.int(2, 3), d.int(2, 4), d.int(2, 4), d.int(2, 4))
    q_k = d.int(2, 4)
    not_square = d.randn(d.int(2, 3), d.int(1, 3), q_k, q_k + d.int(1, 3))
    return [
        d.call("same rank", bias, bias.ndim),
        d.call("extra axes", bias, bias.ndim + d.int(1, 3)),
        d.call("two batch axes, extra axes", two, two.ndim + d.int(1, 2)),
        d.call("one batch axis, extra axes", two[0], 4 + d.int(1, 2)),
        d.call("no batch axes", d.randn(N, q, k), 3 + d.int(1, 3)),
        d.call("q != k, extra axes", not_square, not_square.ndim + d.int(1, 2)),
        d.call("long, extra axes", d.randn(2, N, d.int(25, 40), d.int(25, 40)), 4 + d.int(1, 2)),
        d.grad(d.call("extra axes", bias, bias.ndim + d.int(1, 3))),
        d.float32(d.call("extra axes", bias, bias.ndim + d.int(1, 3))),
        d.bfloat16(d.call("extra axes", bias, bias.ndim + d.int(1, 3))),
        d.meta(d.call("extra axes", bias, bias.ndim + d.int(1, 3))),
    ]


# another LayerNorm eps in the accepted range is the same formula (course/confirm/explain.py)
EPS = {"explain": "pair bias, LayerNorm eps"}


@hidden("04.pair_bias")
def _pair_bias(d):
    c_z, N, R = d.int(2, 8), d.int(2, 4), d.int(2, 5)
    many = d.int(20, 30)
    return [
        d.init("initialisation", (c_z, N)),
        {**d.module("pair", (c_z, N), args=[d.randn(R, R, c_z)]), **EPS},
        {**d.module("batch", (c_z, N), args=[d.randn(*d.batch(2), R, R, c_z, scale=3.0)]), **EPS},
        {**d.module("gradients", (c_z, N), args=[d.randn(2, R, R, c_z)], grad=True), **EPS},
        {**d.module("one head, one residue, a batch of one", (c_z, 1),
                    args=[d.randn(1, 1, 1, c_z)]), **EPS},
        {**d.module("many residues", (c_z, N), args=[d.randn(1, many, many, c_z)]), **EPS},
        {**d.float32(d.module("batch", (c_z, N), args=[d.randn(2, R, R, c_z)])), **EPS},
        {**d.bfloat16(d.module("batch", (c_z, N), args=[d.randn(2, R, R, c_z)])), **EPS},
        d.meta(d.module("batch", (c_z, N), args=[d.randn(2, R, R, c_z)])),
        d.repeat(d.module("batch", (c_z, N), args=[d.randn(2, R, R, c_z)])),
    ]
