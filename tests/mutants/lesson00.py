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
