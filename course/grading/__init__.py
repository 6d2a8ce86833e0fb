"""The grader: sandboxed notebook checks and hidden confirmation (see cli.py)."""
