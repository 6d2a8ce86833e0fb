"""The limits of one grading run, and the limits each kind of sandbox gets from them."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from course.grading.sandbox import MIB, START_CPU, Limits

RESULT_FILE_MIB = 16   # a hidden check's result file (course/grading/untrusted.py reads no more)


@dataclass
class Settings:
    cell_timeout: float = 60      # wall seconds: one check cell, one import, one hidden check
    student_timeout: float = 600  # wall seconds: everything for one student
    hidden_timeout: float = 60
    memory_mib: int = 4096        # address space per process
    fsize_mib: int = 64           # largest file a process may write
    tmp_mib: int = 256            # the private /tmp, and the scratch copy, each
    cpu_seconds: float = 0        # CPU time per process; 0: the cell timeout
    full: bool = False
    unsafe: bool = False
    keep: bool = False

    def cpu(self) -> float:
        return self.cpu_seconds or self.cell_timeout

    def limits(self, kind: str = "cells", forked: bool = True) -> Limits:
        """"cells" and "hidden": one process runs many short items, so a CPU-time limit the
        size of one item's time limit (plus what starting Python and torch costs, for a
        process that is no copy of the fork server); "full": one kernel runs a notebook."""
        if kind == "full":
            return Limits(self.memory_mib, self.fsize_mib, self.student_timeout)
        fsize = min(self.fsize_mib, RESULT_FILE_MIB) if kind == "hidden" else self.fsize_mib
        return Limits(self.memory_mib, fsize, self.cpu() + (0 if forked else START_CPU))

    def tmp_bytes(self) -> int:
        return self.tmp_mib * MIB

    def line(self) -> str:
        return (f"limits: {self.cell_timeout:g} s per cell, {self.student_timeout:g} s per "
                f"student, {self.memory_mib} MiB of memory and {self.cpu():g} CPU-seconds per "
                f"process, {self.tmp_mib} MiB of /tmp; " +
                ("full notebooks (strict nbval)" if self.full else "check cells only") +
                ("; UNSAFE, no sandbox" if self.unsafe else "; bubblewrap sandbox"))

    def to_json(self) -> dict:
        return asdict(self)
