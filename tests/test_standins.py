"""Stand-ins (course/confirm/standins.py): recorded reference calls replayed in place of a
student's functions, gradients included; in check cells, in the harness's hidden run, and in
`make check HIDDEN=1`'s rehearsal on the public seed."""
from __future__ import annotations

import shutil

import pytest
import torch

from course import ROOT
from course.checks import all_checks
from course.checks.expected import RecordedReference, record_calls
from course.checks.running import run_all
from course.confirm import standins
from course.confirm.entries import hidden_entry
from course.confirm.harness import run_case, stand_ins
from course.confirm.public import PUBLIC_SEED, load, rehearse
from course.workspace import copy_course

WITH_STAND_INS = [c.id for c in all_checks().values() if c.stand_in_targets()]


@pytest.mark.parametrize("check_id", ["02.single_head", "06.full_module", "07.decoder_block",
                                      "07.cross_attention", "08.gate_headwise"])
def test_recording_changes_nothing_the_reference_computes(check_id):
    """The recorder's autograd.Function (which keeps each call's graph for its VJPs) computes
    what the reference computes without it."""
    check = all_checks()[check_id]
    impl = check.resolve("solutions")
    assert any(record_calls(check, case) for case in check.cases)
    for case in check.cases:
        if case.expect is not None:
            continue
        with torch.no_grad():
            plain = case.run(impl)
        with standins.Patch("solutions", check.observed_targets(), standins.Recorder([])), \
                torch.no_grad():
            recorded = case.run(check.resolve("solutions"))
        plain = plain if isinstance(plain, dict) else {"output": plain}
        recorded = recorded if isinstance(recorded, dict) else {"output": recorded}
        for key in plain:  # the same numbers, up to the order gradients are summed in
            assert torch.allclose(plain[key], recorded[key], rtol=1e-10, atol=1e-13), (
                check_id, case.name, key)


@pytest.mark.parametrize("check_id", WITH_STAND_INS)
def test_every_stand_in_replays_the_reference_exactly(check_id):
    """The solutions with everything they call replaced by stand-ins still pass every case,
    gradient cases included, and every stand-in answered at least once."""
    check = all_checks()[check_id]
    outcomes = run_all(check, check.resolve("solutions"), RecordedReference(),
                       replace=check.stand_in_targets())
    failed = [(o.case.name, o.problem) for o in outcomes if o.failed]
    assert not failed, failed
    assert not [m for o in outcomes for m in o.misses], "a stand-in found no recorded call"
    assert any(o.replaced for o in outcomes)


def test_a_miss_runs_the_students_own_function_and_is_noted():
    check = all_checks()["02.attention_weights"]
    case = check.cases[1]
    table = record_calls(check, case)
    for call in table:  # a table recorded for other inputs: nothing matches
        call["args"] = {k: v + 1 if isinstance(v, torch.Tensor) and v.is_floating_point() else v
                        for k, v in call["args"].items()}
    with standins.Patch("solutions", check.stand_in_targets(),
                        standins.Replay(table, replace=check.stand_in_targets())) as patch, \
            torch.no_grad():
        got = case.run(check.resolve("solutions"))
    assert not patch.replaced and {m["target"] for m in patch.misses} == {
        "softmax:scaled_scores", "softmax:stable_softmax"}
    with torch.no_grad():  # what the function gives unpatched, on this machine: bit for bit
        own = case.run(check.resolve("solutions"))
    assert torch.equal(got, own)
    # and the recorded reference (made on another CPU: its float64 rounding may differ)
    assert torch.allclose(got, RecordedReference().outputs(check, case)["output"], rtol=1e-12,
                          atol=0)


def test_tables_survive_a_file(tmp_path):
    check = all_checks()["07.decoder_block"]
    tables = {case.name: record_calls(check, case) for case in check.cases[:3]}
    standins.save(standins.pack(tables), tmp_path / "t.pt.gz")
    back = standins.unpack(standins.load(tmp_path / "t.pt.gz"))
    assert back.keys() == tables.keys()
    for name in tables:
        for old, new in zip(tables[name], back[name]):
            assert old["target"] == new["target"] and torch.equal(old["output"], new["output"])


def _buggy_softmax(tmp_path, monkeypatch) -> str:
    package = tmp_path / "hidden_bug"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    path = package / "softmax.py"
    path.write_text(path.read_text().replace("/ math.sqrt(c)", ""))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "hidden_bug"


def test_the_harness_judges_one_exercise_when_the_entry_has_tables(tmp_path, monkeypatch):
    """A hidden entry of 02.attention_forward run on a student whose scaled_scores is unscaled:
    with the entry's stand-ins the exercise agrees with the reference, without them it does not."""
    from course.grading.hidden import confirm as hidden

    package = _buggy_softmax(tmp_path, monkeypatch)
    check = all_checks()["02.attention_forward"]
    cases = hidden.draw_cases(check, 7)
    entry = hidden_entry(check, cases)
    assert entry["stand_ins"] and len(entry["calls"]) == len(cases)
    expected = hidden.expected_outputs(check, cases)
    impl = check.resolve(package)

    def results(with_tables: bool):
        got = []
        for number, case in enumerate(cases):
            context = stand_ins(entry if with_tables else {}, number, package)
            with context:
                got.append({"outputs": run_case(impl, case)})
        return got

    assert hidden.judge(check.id, cases, expected, results(True)) is None
    assert hidden.judge(check.id, cases, expected, results(False)) is not None


def test_the_public_seed_is_recorded_for_every_check():
    entries = load()
    assert [e["id"] for e in entries] == list(all_checks())
    assert PUBLIC_SEED == 20
    for entry in entries:
        assert len(entry["expected"]) == len(entry["cases"])


@pytest.mark.slow
def test_make_check_hidden_rehearses_on_the_public_seed(tmp_path):
    """The solutions are confirmed on every public hidden case; the stubs on none."""
    solved = copy_course(tmp_path / "solved", exercises_from=ROOT / "solutions")
    verdicts = rehearse(package_root=solved)
    assert verdicts == {c: None for c in all_checks()}
    stubs = copy_course(tmp_path / "stubs")
    from course.stubs import write

    write(exercises=stubs / "exercises", solutions=stubs / "solutions")
    verdicts = rehearse(["00.batched_dot", "07.decoder_block"], package_root=stubs)
    assert all("NotImplementedError" in why for why in verdicts.values()), verdicts


def test_a_module_first_imported_under_a_patch_keeps_no_wrapper(tmp_path, monkeypatch):
    """A Patch imports every target module before it wraps anything: a module imported while
    wrappers are in place would bind them into its names and keep them after the Patch."""
    package = tmp_path / "fresh_import"
    shutil.copytree(ROOT / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    import sys

    importlib.import_module("fresh_import.attention")  # mha.py not imported yet
    targets = ["attention:scaled_dot_product_attention", "mha:split_heads"]
    with standins.Patch("fresh_import", targets, standins.Recorder([])):
        pass
    mha = sys.modules["fresh_import.mha"]
    assert mha.scaled_dot_product_attention is sys.modules[
        "fresh_import.attention"].scaled_dot_product_attention
    assert not hasattr(mha.scaled_dot_product_attention, "__wrapped__")
    for name in [m for m in sys.modules if m.startswith("fresh_import")]:
        del sys.modules[name]
