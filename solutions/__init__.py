"""Reference implementations of every exercise: the single source of truth.

`exercises/` holds the student's copy, generated from these files by `make stubs` (each
`# BEGIN SOLUTION lesson NN` ... `# END SOLUTION` block becomes a `raise NotImplementedError`).
"""
