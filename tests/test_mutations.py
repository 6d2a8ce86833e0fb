"""Every check fails, with its hint, on realistic bugs applied to the solutions."""
from collections import Counter

import pytest

from course.checks import CheckFailed, all_checks
from tests.mutation import all_mutants, mutated_module

MIN_MUTANTS_PER_CHECK = 3


MUTANTS = all_mutants()


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_check_kills_mutant(mutant):
    check = all_checks()[mutant.check]
    assert mutant.file == f"{check.module}.py", "the mutant must change the checked module"
    buggy = getattr(mutated_module(mutant), check.attribute)
    with pytest.raises(CheckFailed) as failure:
        check(buggy, quiet=True)
    assert mutant.hint in str(failure.value), (
        f"check failed, but without the expected hint fragment {mutant.hint!r}:\n{failure.value}")


def test_every_check_has_enough_mutants():
    counts = Counter(m.check for m in MUTANTS)
    thin = {c: counts[c] for c in all_checks() if counts[c] < MIN_MUTANTS_PER_CHECK}
    assert not thin, f"checks with fewer than {MIN_MUTANTS_PER_CHECK} mutants: {thin}"


def test_solutions_pass_every_check():
    for check in all_checks().values():
        check(check.resolve("solutions"), quiet=True)
