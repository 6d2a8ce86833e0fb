"""Hidden cases of lesson 01 (Q, K, V by hand): see course/grading/hidden/spec.py."""
from __future__ import annotations

import torch

from course.grading.hidden.spec import hidden


@hidden("01.stable_softmax", atol=1e-12, rtol=1e-10)  # as the visible check: float64 is exact
def _stable_softmax(d):
    a, b, c = d.int(2, 5), d.int(2, 5), d.int(2, 4)
    return [
        d.call("default dim", d.randn(a, b)),
        d.call("middle dim", d.randn(a, b, c), dim=1),
        d.call("dim=0", d.randn(a, b, scale=20.0), dim=0),
        d.call("dim=-2", d.randn(c, a, b), dim=-2),
        d.call("huge values", d.randn(a, b, scale=5.0) + 1000.0, dim=-1),
        d.call("rows on different scales",
               torch.stack([d.randn(b) - 1000.0, d.randn(b) + 1000.0]), dim=-1),
        d.call("size-1 axis along dim", d.randn(a, 1), dim=-1),
        # every row spans 1800: exp overflows after any shift but the row max
        d.call("rows spanning a wide range",
               d.randn(a, b + 1) + torch.linspace(-900.0, 900.0, b + 1, dtype=torch.float64), dim=-1),
        d.call("one row", d.randn(1, b), dim=-1),
        d.call("long rows", d.randn(a, d.int(300, 600), scale=10.0), dim=-1),
        d.grad(d.call("rows spanning a wide range",
                      d.randn(a, b + 1) + torch.linspace(-900.0, 900.0, b + 1,
                                                         dtype=torch.float64), dim=-1)),
        d.grad(d.call("middle dim", d.randn(a, b, c), dim=1)),
        d.float32(d.call("middle dim", d.randn(a, b, c), dim=1)),
        {**d.call("middle dim, in bfloat16", d.randn(a, b, c), dim=1), "dtype": "bfloat16"},
        d.meta(d.call("middle dim", d.randn(a, b, c), dim=1)),
    ]


@hidden("01.scaled_scores")
def _scaled_scores(d):
    n_q, n_k = d.int(2, 5), d.int(2, 6)
    c = n_q + n_k + d.int(0, 3)  # never equal to a sequence length
    batch = d.batch(2, low=2, min_axes=1)
    return [
        d.call("queries and keys", d.randn(n_q, c), d.randn(n_k, c)),
        d.call("batch", d.randn(*batch, n_q, c), d.randn(*batch, n_k, c)),
        d.call("c=1, one query", d.randn(1, 1), d.randn(n_k, 1)),
        d.call("many queries and keys", d.randn(d.int(30, 50), c), d.randn(d.int(20, 40), c)),
        d.grad(d.call("batch", d.randn(*batch, n_q, c), d.randn(*batch, n_k, c))),
        d.float32(d.call("batch", d.randn(*batch, n_q, c), d.randn(*batch, n_k, c))),
        d.bfloat16(d.call("batch", d.randn(*batch, n_q, c), d.randn(*batch, n_k, c))),
        d.meta(d.call("batch", d.randn(*batch, n_q, c), d.randn(*batch, n_k, c))),
    ]
