"""Where a check's expected outputs come from: recorded results shipped with the course, or the
live solutions.

Recorded results (`course/reference_data/<check id>.pt`, written by `make reference`) let checks
run where `solutions/` is absent: the student release and the grader's sandbox. Beside each,
`<check id>.calls.pt.gz` holds the calls the reference made to other exercises while it ran each
case (the stand-ins' tables, course/confirm/standins.py). The live solutions (COURSE_REFERENCE=live)
serve the course's own developers.
"""
from __future__ import annotations

import os
from pathlib import Path

import torch

from course import ROOT
from course.checks.outputs import Outputs, as_outputs
from course.checks.targets import resolve
from course.confirm.flat import load_recorded
from course.confirm.standins import Patch, Recorder, unpack

REFERENCE_DIR = ROOT / "course" / "reference_data"


class Reference:
    """Where expected outputs come from: `outputs(check, case)` gives the reference's outputs of
    one case of a course.checks Check (the engine imports this module, never the reverse)."""

    def outputs(self, check, case) -> Outputs:  # pragma: no cover - interface
        raise NotImplementedError

    def calls(self, check, case) -> list[dict]:
        """The calls the reference made to the check's observed targets in this case."""
        return []


class LiveReference(Reference):
    """Run the case on the reference implementation in `solutions/`."""

    def __init__(self):
        self._calls: dict[tuple[str, str], list[dict]] = {}

    def outputs(self, check, case) -> Outputs:
        impl = resolve(check.target, "solutions")
        with torch.no_grad():
            return as_outputs(case.run(impl))

    def calls(self, check, case) -> list[dict]:
        key = (check.id, case.name)
        if key not in self._calls:
            self._calls[key] = record_calls(check, case)
        return self._calls[key]


def record_calls(check, case, package: str = "solutions") -> list[dict]:
    """Run one case on the reference with every observed target recorded; return the calls."""
    table: list[dict] = []
    resolve(check.target, package)  # imported before the patch, so that every name is there
    with Patch(package, check.observed_targets(), Recorder(table)), torch.no_grad():
        case.run(resolve(check.target, package))
    return table


class RecordedReference(Reference):
    """Expected outputs recorded from the solutions (`make reference`), one file per check."""

    def __init__(self, folder: Path | None = None):
        self.folder = folder or REFERENCE_DIR
        self._cache: dict[str, dict] = {}
        self._calls: dict[str, dict] = {}

    def outputs(self, check, case) -> Outputs:
        if check.id not in self._cache:
            path = self.folder / f"{check.id}.pt"
            if not path.exists():
                raise FileNotFoundError(
                    f"no recorded reference for {check.id} at {path}; run `make reference`"
                )
            self._cache[check.id] = load_recorded(path)
        recorded = self._cache[check.id]
        if case.name not in recorded:
            raise KeyError(f"{check.id}: case '{case.name}' not recorded; run `make reference`")
        return recorded[case.name]

    def calls(self, check, case) -> list[dict]:
        if check.id not in self._calls:
            path = self.folder / f"{check.id}.calls.pt.gz"
            self._calls[check.id] = unpack(load_recorded(path)) if path.exists() else {}
        return self._calls[check.id].get(case.name, [])


def default_reference() -> Reference:
    """Recorded results unless COURSE_REFERENCE=live asks for the solutions themselves."""
    if os.environ.get("COURSE_REFERENCE", "recorded") == "live":
        return LiveReference()
    return RecordedReference()
