"""Run in parallel (`make test` runs pytest-xdist workers, one per core and one more): each worker and what it
starts (notebook kernels, the grader's sandboxes) uses one thread, so two workers on two cores do
not fight over them (torch's own default, a thread per core in every process, made a training
test 10 times slower).

Every test's CPU seconds (its own process and the children it waited for: nbval runs, kernels,
servers) are recorded as the JUnit property `cpu_s`; `scripts/suite_time.py` lists them. Unlike
wall seconds they hardly change with the machine's load.
"""
import os
import resource

import pytest

# `make check` leaves a warm process for the next run (course/check_server.py): a test's runs are
# no student's session, so none outlives them (tests/test_progress.py starts and stops its own)
os.environ.setdefault("COURSE_CHECK_SERVER", "0")

if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    import torch

    torch.set_num_threads(1)


def cpu_seconds() -> float:
    """User + system seconds of this process and of its children that were waited for."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[CPU_START] = cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the teardown report (made after this) carries the property to the JUnit file
    item.user_properties.append(("cpu_s", round(cpu_seconds() - item.stash[CPU_START], 2)))


CPU_START = pytest.StashKey[float]()
