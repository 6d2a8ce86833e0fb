"""Every check fails, with its hint, on realistic bugs applied to the solutions; a bug in one
exercise makes the checks of the exercises that call it say BLOCKED, with the root cause first."""
import hashlib
import sys
from collections import Counter

import pytest

from course.checks import Blocked, CheckFailed, all_checks
from course.progress import run_check
from tests.mutation import (all_cascades, all_mutants, cascade_package, message_lines,
                            mutated_module, visible_only_mutants)

MIN_MUTANTS_PER_CHECK = 3


MUTANTS = all_mutants() + visible_only_mutants()


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.id)
def test_check_kills_mutant(mutant):
    check = all_checks()[mutant.check]
    assert mutant.file == f"{check.module}.py", "the mutant must change the checked module"
    buggy = getattr(mutated_module(mutant), check.attribute)
    with pytest.raises(CheckFailed) as failure:
        check(buggy, quiet=True)
    message = str(failure.value)
    assert not isinstance(failure.value, Blocked), f"a bug in its own exercise:\n{message}"
    assert mutant.hint in message, (
        f"check failed, but without the expected hint fragment {mutant.hint!r}:\n{message}")
    missing = [line for line in mutant.exact if line not in message_lines(message)]
    assert not missing, f"the message lacks the lines {missing}:\n{message}"


@pytest.mark.parametrize("cascade", all_cascades(), ids=lambda c: c.id)
def test_a_bug_upstream_blocks_with_its_root_cause(cascade, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    if cascade.isolate:
        monkeypatch.setenv("COURSE_ISOLATE", "1")
    else:
        monkeypatch.delenv("COURSE_ISOLATE", raising=False)
    name = "cascade_" + hashlib.sha1(cascade.id.encode()).hexdigest()[:10]
    package = cascade_package(cascade, tmp_path, name)
    try:
        row = run_check(all_checks()[cascade.check], package)
    finally:
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]
    assert row.status == cascade.status, row.message
    missing = [line for line in cascade.exact if line not in message_lines(row.message)]
    assert not missing, f"the message lacks the lines {missing}:\n{row.message}"


def test_every_check_has_enough_mutants():
    counts = Counter(m.check for m in MUTANTS)
    thin = {c: counts[c] for c in all_checks() if counts[c] < MIN_MUTANTS_PER_CHECK}
    assert not thin, f"checks with fewer than {MIN_MUTANTS_PER_CHECK} mutants: {thin}"


def test_solutions_pass_every_check():
    for check in all_checks().values():
        check(check.resolve("solutions"), quiet=True)


def test_every_class_of_bug_has_mutants_in_several_exercises():
    """dtype, device, modules built outside no_grad, gradients of edge rows, sizes, large scores
    with a mask, .T on batched tensors, the argument that differs: at least 3 mutants each."""
    from tests.mutation import KINDS

    counts = Counter(m.kind for m in MUTANTS if m.kind)
    assert set(counts) <= set(KINDS), set(counts) - set(KINDS)
    thin = {kind: counts[kind] for kind in KINDS if counts[kind] < 3}
    assert not thin, f"classes with fewer than 3 mutants: {thin}"
