"""Checks for lesson 00 (start here): the warm-up exercise."""

from course.checks import candidates
from course.checks.core import Case, Check
from course.checks.inputs import randn
from course.checks.kinds import bfloat16_of, float32_of, gradients_of, meta_of
from course.i18n import N_

# the axis a batched dot product reduces: the wrong ones it is easy to write, as formulas
AXIS = [
    (N_("your result sums every product into one number: (a * b).sum() has no dim; sum over "
        "the last axis only, (a * b).sum(dim=-1): one number per pair"),
     lambda a, b: (a * b).sum()),
    (N_("your result sums over the first axis (dim=0), across the pairs: sum over the last axis "
        "only (dim=-1), within each pair, so that leading axes are batch axes"),
     lambda a, b: (a * b).sum(dim=0)),
    (N_("your result keeps the summed axis as a size-1 axis (keepdim=True): one number per "
        "pair is shape (*), not (*, 1)"), lambda a, b: (a * b).sum(dim=-1, keepdim=True)),
]

BATCH = Case("batch (2, 4) of vectors of length 3",
             lambda f: f(randn(2, 4, 3, seed=5), randn(2, 4, 3, seed=6)),
             hint="leading axes are batch axes: keep them, reduce only dim=-1")

check_batched_dot = Check(
    id="00.batched_dot",
    target="warmup:batched_dot",
    lesson="00",
    diagnose=lambda outcomes: candidates.matching(outcomes, AXIS),
    cases=[
        Case("two vectors of length 5",
             lambda f: f(randn(5, seed=1), randn(5, seed=2)),
             hint="multiply the vectors elementwise and add up the products"),
        Case("4 pairs of vectors, shape (4, 3)",
             lambda f: f(randn(4, 3, seed=3), randn(4, 3, seed=4)),
             hint="sum over the last axis only (dim=-1): one number per pair, shape (4,)"),
        BATCH,
        Case("a batch of one pair, shape (1, 3)",
             lambda f: f(randn(1, 3, seed=9), randn(1, 3, seed=10)),
             hint="a batch of one pair still has its batch axis: shape (1,), not ()"),
        Case("batch (2, 1) of vectors of length 1",
             lambda f: f(randn(2, 1, 1, seed=11), randn(2, 1, 1, seed=12)),
             hint="leading axes are batch axes, even of size 1: reduce only dim=-1"),
        Case("broadcast (2, 1, 3) against (4, 3)",
             lambda f: f(randn(2, 1, 3, seed=7), randn(4, 3, seed=8)),
             hint="let the leading axes broadcast, as torch's elementwise product does"),
        Case("3 pairs of vectors of length 300", lambda f: f(randn(3, 300, seed=13),
                                                             randn(3, 300, seed=14)),
             hint="sum over the whole last axis, whatever its length: (a * b).sum(dim=-1)", tags=("size",)),
        Case("gradients of a fixed loss w.r.t. a and b",
             gradients_of(lambda f, a, b: f(a, b), {"a": randn(2, 4, 3, seed=15),
                                                     "b": randn(2, 4, 3, seed=16)}),
             hint="the gradient w.r.t. a is b (times the loss weight), and w.r.t. b is a: "
                  "compute with torch operations, with no .detach(), .item() or numpy on the way"),
        float32_of(BATCH),
        bfloat16_of(BATCH),
        meta_of(BATCH),
    ],
)
