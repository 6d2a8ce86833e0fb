"""Run in parallel (`make test` runs pytest-xdist workers, one per core): each worker and what it
starts (notebook kernels, the grader's sandboxes) uses one thread, so two workers on two cores do
not fight over them (torch's own default, a thread per core in every process, made a training
test 10 times slower)."""
import os

if os.environ.get("PYTEST_XDIST_WORKER"):
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")
    import torch

    torch.set_num_threads(1)
