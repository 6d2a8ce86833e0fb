# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 00 warm-up: the one operation attention is built on."""
import torch


def batched_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Dot product of matching vectors along the last axis.

    a: (*, n), b: (*, n) (leading axes broadcast against each other)
    returns (*): one number per pair of vectors.
    """
    # Hint: multiply elementwise, then sum over the last axis only.
    raise NotImplementedError("lesson 00: write batched_dot in exercises/warmup.py")
