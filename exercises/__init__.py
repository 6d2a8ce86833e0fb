"""Your code: one file per topic, each exercise a function or class whose body raises
NotImplementedError until you write it. The lessons import these files (with autoreload), their
check cells test them, and `make check` shows where you stand on every exercise.
"""
