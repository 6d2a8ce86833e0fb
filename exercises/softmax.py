# Your code for the course's exercises: replace each `raise NotImplementedError` below with your code.
"""Lesson 01: softmax that cannot overflow, and scaled dot-product scores."""
import math

import torch


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(x) along `dim`, safe for inputs of any size.

    x: any shape. returns: same shape; the entries along `dim` are >= 0 and sum to 1.

    exp(1000) overflows to inf, and inf / inf is NaN. softmax(x) = softmax(x - m) for any m
    constant along `dim`, so shifting each slice by its own maximum makes the largest exponent
    exp(0) = 1: nothing overflows, and at least one term of the sum is 1, so nothing divides by 0.
    """
    # Hint: subtract the maximum along `dim` (keepdim=True) before exponentiating.
    raise NotImplementedError("lesson 01: write stable_softmax in exercises/softmax.py")


def scaled_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Attention scores q·k / sqrt(c) for every query-key pair.

    q: (*, q, c), k: (*, k, c)
    returns (*, q, k): entry [..., i, j] is the dot product of query i and key j over sqrt(c).
    """
    # Hint: q @ k.transpose(-2, -1), divided by sqrt of the last axis of q.
    raise NotImplementedError("lesson 01: write scaled_scores in exercises/softmax.py")
