"""Hidden cases of lesson 00 (the warm-up): see course/grading/hidden/spec.py."""
from __future__ import annotations

from course.grading.hidden.spec import hidden


@hidden("00.batched_dot")
def _batched_dot(d):
    n = d.int(2, 7)
    b1, b2 = d.int(2, 4), d.int(2, 3)
    long = d.int(200, 400)
    return [
        d.call("vectors", d.randn(n), d.randn(n)),
        d.call("batch", d.randn(b1, b2, n), d.randn(b1, b2, n)),
        d.call("broadcast", d.randn(b1, 1, n), d.randn(b2, n)),
        d.call("length-1 vectors", d.randn(b1, 1), d.randn(b1, 1)),
        d.call("a batch of one pair", d.randn(1, n), d.randn(1, n)),
        d.call("long vectors", d.randn(b1, long), d.randn(b1, long)),
        d.grad(d.call("broadcast", d.randn(b1, 1, n), d.randn(b2, n))),
        d.float32(d.call("batch", d.randn(b1, b2, n), d.randn(b1, b2, n))),
        d.bfloat16(d.call("batch", d.randn(b1, b2, n), d.randn(b1, b2, n))),
        d.meta(d.call("batch", d.randn(b1, b2, n), d.randn(b1, b2, n))),
    ]
