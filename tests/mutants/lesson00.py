"""Realistic bugs for the checks of lesson 00 (the warm-up)."""
from tests.mutation import IN_PLACE, Mutant, SQUEEZED

MUTANTS = [
    # 00.batched_dot
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a * b).sum()",
           "sum over the last axis only", "sums over every axis"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a * b).sum(dim=0)",
           "sum over the last axis only", "sums over the first axis"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "a @ b.T",
           "last axis only", "uses a matrix product"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a + b).sum(dim=-1)",
           "multiply the vectors elementwise", "adds instead of multiplying"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a * b).sum(dim=-1).squeeze()",
           SQUEEZED, "squeeze() drops the batch axis of a batch of one pair"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "a.mul_(b).sum(dim=-1)",
           IN_PLACE, "multiplies in place (a *= b), overwriting the caller's a"),
]

# Issue 20: each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'out = torch.zeros(torch.broadcast_shapes(a.shape, b.shape)[:-1])\n    for i in range(a.shape[-1]):\n        out += a[..., i] * b[..., i]\n    return out', "", 'float32 accumulator from torch.zeros without dtype',
           exact=(
               'output dtype: expected torch.float64, got torch.float32 (the values agree)',
               "hint: your result is float32, the reference (like the inputs) float64: something in your code makes float32 (torch.zeros/ones/empty/tensor/arange without dtype=, or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) so that the result keeps the input's dtype",
           )),
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'result = (a * b).sum(dim=-1)\n    return reslt', "", 'a typo in the returned name',
           exact=(
               "raised NameError: name 'reslt' is not defined",
               'at solutions/warmup.mutant.py, line 14, in batched_dot:',
               'return reslt',
               'hint: `reslt` is not defined there: a typo, a name used before it is assigned, or a module not imported',
           )),
]
