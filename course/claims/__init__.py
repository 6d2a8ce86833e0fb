"""The claims ledger: every sentence a learner reads is checked like code.

    python -m course.claims               # claims per lesson by kind, uncovered factual sentences
    python -m course.claims --problems    # ... and every problem, lesson by lesson
    python -m course.claims --lesson 04 --sentences   # each factual sentence and the rows covering it
    python -m course.claims --lesson 04 --draft       # TOML rows for the uncovered ones, to fill in
    python -m course.claims --render      # write docs/claims/NN.md from docs/claims/NN.toml
    python -m course.claims --strict      # lessons of NOT_YET_LEDGERED judged too

Each lesson keeps `docs/claims/NN.toml` (format: `ledger.py`); `docs/claims/NN.md` is rendered
from it for readers. tests/test_claims.py runs `problems()` for every lesson present and fails on:

- drift: a row's `en` (or `zh`) no longer occurs in the lesson's markdown, or its `zh` sits in a
  Chinese cell whose English cell does not hold its `en`;
- an uncovered sentence: a sentence of the markdown (either language) that holds a number, a named
  paper, author, model or system, or a comparison, and no row's words overlap it
  (`prose.py` says exactly what counts, and what does not);
- a computed row whose `cell` is no longer in the notebook's code or committed outputs, or whose
  `test` no longer exists; an arithmetic row whose formula does not give the number it states;
- a number in prose that neither the notebook shows (its committed outputs, within the precision
  the prose quotes, or a literal of its code) nor a sourced or arithmetic row holds;
- a machine-dependent verdict (faster, slower, no speed-up...) typed in the prose of a lesson that
  times things, unless a `computed` row shows the cell that prints the verdict (or a `sourced` row
  says whose measurement it is): the message quotes the timing lines that can contradict it;
- numbers that differ between a row's `en` and `zh` (course/zh_numbers.py);
- a ledger without a review record, or one whose review leaves a wrong statement unfixed.
"""
from __future__ import annotations

from course import ROOT

CLAIMS = ROOT / "docs" / "claims"

# TEMPORARY: lessons whose ledger is being written with their rewrite. The claims test expects
# them to fail (strict xfail: the day one passes, the test says to remove it from here). The lead
# empties this at merge, when docs/claims/08.toml and 09.toml land.
NOT_YET_LEDGERED: dict[str, str] = {}
