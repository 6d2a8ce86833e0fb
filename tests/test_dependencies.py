"""One bug, one failure: what each check declares it uses is what the reference really runs, and a
bug upstream is one FAIL with every exercise that calls it BLOCKED by it (right on its own),
while COURSE_ISOLATE=1 fails only the exercise with the bug."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from course import ROOT
from course.checks import all_checks
from course.checks.depends import closure
from course.checks.expected import record_calls
from course.progress import progress
from course.stubs import BEGIN, END, enclosing_function
from course.workspace import copy_course

SOLUTIONS = ROOT / "solutions"


# ------------------------------------------------------------------------------ declarations

def _blocks() -> dict[str, list[tuple[int, int, str, str]]]:
    """file -> [(first line, last line, lesson, qualname)] of every solution block."""
    import ast

    found = {}
    for path in sorted(SOLUTIONS.glob("*.py")):
        lines = path.read_text().splitlines()
        tree = ast.parse(path.read_text())
        blocks, start = [], None
        for number, line in enumerate(lines, 1):
            match = BEGIN.match(line)
            if match:
                start = (number, match["lesson"])
            elif END.match(line) and start:
                blocks.append((start[0], number, start[1], enclosing_function(tree, start[0])))
                start = None
        found[str(path.resolve())] = blocks
    return found


BLOCKS = _blocks()


def _owners(path: str, lesson: str, qualname: str) -> set[str]:
    """The checks whose exercise a block belongs to: its function or class, or the class that a
    given function of the same name wraps (lesson 09's tiled_attention calls TiledAttention)."""
    module = Path(path).stem
    owner = qualname.split(".")[0]
    return {c.id for c in all_checks().values() if c.lesson == lesson and c.module == module
            and (qualname == c.attribute or qualname.startswith(c.attribute + ".")
                 or owner.lower() == c.attribute.replace("_", "").lower())}


def _run_blocks(check) -> set[tuple[str, int]]:
    """(file, block start) of every solution block the reference runs on the check's cases."""
    ran: set[tuple[str, int]] = set()

    def tracer(frame, event, arg):
        blocks = BLOCKS.get(frame.f_code.co_filename)
        if blocks is None:
            return None
        if event == "line":
            for first, last, _, _ in blocks:
                if first <= frame.f_lineno <= last:
                    ran.add((frame.f_code.co_filename, first))
        return tracer

    impl = check.resolve("solutions")
    sys.settrace(tracer)
    try:
        with torch.no_grad():
            for case in check.cases:
                case.run(impl)
    finally:
        sys.settrace(None)
    return ran


@pytest.mark.parametrize("check_id", list(all_checks()))
def test_uses_are_what_the_reference_runs(check_id):
    """Every check a check declares to use has code that runs in its cases, and every exercise
    whose code runs is one it uses (directly or through another), or shares its own code."""
    check = all_checks()[check_id]
    ran = _run_blocks(check)
    owners: dict[str, set[str]] = {}
    for path, first in ran:
        _, _, lesson, qualname = next(b for b in BLOCKS[path] if b[0] == first)
        for owner in _owners(path, lesson, qualname):
            owners.setdefault(owner, set()).add(qualname)
    sharing = set().union(*(o for o in [_owners(p, b[2], b[3]) for p, f in ran
                                        for b in BLOCKS[p] if b[0] == f] if check.id in o))
    declared = {c.id for c in closure(check)}
    run_by_others = set(owners) - {check.id}
    assert run_by_others - sharing <= declared, (
        f"{check.id} runs code of {sorted(run_by_others - declared)} but does not declare it")
    for used in check.uses:
        assert used.id in owners, f"{check.id} declares it uses {used.id}, whose code never runs"


@pytest.mark.parametrize("check_id", list(all_checks()))
def test_provided_targets_exist_and_run(check_id):
    """What a check provides is a function or method of the solutions that its own cases call
    (so its recorded calls can stand in for it)."""
    check = all_checks()[check_id]
    calls = [c["target"] for case in check.cases for c in record_calls(check, case)]
    for target in check.provides:
        module, name = target.split(":")
        owner, _, method = name.partition(".")
        obj = getattr(__import__(f"solutions.{module}", fromlist=[owner]), owner)
        assert method == "" or callable(getattr(obj, method)), target
        if check.is_class or check.uses:
            assert target in calls or not check.is_class, f"{check.id}: {target} never called"


def test_the_dependency_table_of_the_issue():
    """A few lines of the table the issue asked for, as declared."""
    checks = all_checks()
    assert {c.id for c in checks["02.attention_weights"].uses} == {"01.scaled_scores",
                                                                    "01.stable_softmax"}
    assert {"07.rms_norm", "07.rope", "02.attention_forward", "02.causal_mask", "03.split_heads",
            "03.merge_heads"} <= {c.id for c in checks["07.decoder_block"].uses}
    assert checks["07.rms_norm"].provides == ("transformer:RMSNorm.forward",)
    assert checks["03.multi_head_attention"].provides == ("mha:MultiHeadAttention._attention",)
    assert checks["05.global_attention"].provides == ("mha:MultiHeadAttention._global_attention",)


# --------------------------------------------------------------------------------- cascades

BUGS = {  # one bug each, as a student would have it in exercises/
    "01.scaled_scores": ("softmax.py", "return q @ k.transpose(-2, -1) / math.sqrt(c)",
                         "return q @ k.transpose(-2, -1)"),
    "07.rope": ("transformer.py", "return x * cos + rotated * sin", "return x * sin + rotated * cos"),
    "07.rms_norm": ("transformer.py",
                    "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                    "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + self.eps"),
}


def _buggy_package(root: Path, name: str, bug: tuple[str, str, str]) -> str:
    package = root / name
    shutil.copytree(SOLUTIONS, package, ignore=shutil.ignore_patterns("__pycache__"))
    path = package / bug[0]
    text = path.read_text()
    assert text.count(bug[1]) == 1
    path.write_text(text.replace(bug[1], bug[2]))
    return name


def _dependents(check_id: str) -> set[str]:
    return {c.id for c in all_checks().values() if check_id in {u.id for u in closure(c)}}


@pytest.mark.parametrize("buggy", list(BUGS))
def test_one_bug_is_one_fail_and_blocks_its_dependents(buggy, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("COURSE_ISOLATE", raising=False)
    package = _buggy_package(tmp_path, f"cascade_{buggy.replace('.', '_')}", BUGS[buggy])
    rows = {r.check: r for r in progress(package)}
    assert [c for c, r in rows.items() if r.status == "FAIL"] == [buggy]
    blocked = {c for c, r in rows.items() if r.status == "BLOCKED"}
    assert blocked == _dependents(buggy) and blocked
    for check_id in blocked:
        assert rows[check_id].reason == f"by {buggy}; right on its own", rows[check_id].message
        assert rows[check_id].message.startswith(f"BLOCKED {check_id} by {buggy}:")
    assert all(r.status == "PASS" for c, r in rows.items() if c not in blocked | {buggy})


@pytest.mark.parametrize("buggy", list(BUGS))
def test_isolated_only_the_exercise_with_the_bug_fails(buggy, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("COURSE_ISOLATE", "1")
    package = _buggy_package(tmp_path, f"isolated_{buggy.replace('.', '_')}", BUGS[buggy])
    rows = {r.check: r for r in progress(package)}
    assert {c: r.status for c, r in rows.items() if r.status != "PASS"} == {buggy: "FAIL"}


@pytest.mark.slow
def test_make_check_in_a_course_with_one_bug(tmp_path):
    """The real `make check` (python -m course.progress) on a copy of the course whose
    exercises are the solutions with scaled_scores unscaled, and with a typo in batched_dot."""
    bugged = tmp_path / "bugged"
    _buggy_package(tmp_path, "bugged", BUGS["01.scaled_scores"])
    warmup = bugged / "warmup.py"
    warmup.write_text(warmup.read_text().replace("return (a * b).sum(dim=-1)",
                                                 "total = (a * b).sum(dim=-1)\n    return totl"))
    course = copy_course(tmp_path / "course", exercises_from=bugged)
    env = {k: v for k, v in os.environ.items() if k != "COURSE_ISOLATE"}
    done = subprocess.run([sys.executable, "-m", "course.progress"], cwd=course, text=True,
                          capture_output=True, timeout=600, env={**env, "PYTHONPATH": str(course)})
    assert done.returncode == 0, done.stderr
    table = done.stdout
    fails = re.findall(r"^FAIL +([\w.]+) {2,}", table, re.M)
    assert fails == ["00.batched_dot", "01.scaled_scores"], table
    assert len(re.findall(r"^BLOCKED +\S+ +by 01\.scaled_scores; right on its own", table, re.M)) == 14  # 02 (3), 03, 05, 06 (2), 07 (2), 08 (2), 09 (3)
    assert "at exercises/warmup.py, line 14, in batched_dot:\n      return totl" in table
    assert "hint: these scores match no scaling at all" in table
    assert "`totl` is not defined there" in table
