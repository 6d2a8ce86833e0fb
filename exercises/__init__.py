"""Reference implementations of every exercise: the single source of truth.

`exercises/` holds the student's copy, generated from these files by `make stubs`.
"""
