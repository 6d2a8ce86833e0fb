"""The mutation suite: realistic bugs per lesson (`lessonNN.py`, a list `MUTANTS` each)."""
