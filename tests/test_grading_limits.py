"""The grader's limits, piece by piece (issue 21): deadlines no child can move, results read as
untrusted data, names that cannot inject, statuses from what was raised (not from text), and
sandboxes of a fixed size and CPU time that show no host path. The whole class is graded in
tests/test_grading_hostile.py; these tests take seconds."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch

from course import ROOT
from course.grading.names import csv_cell, report_name, shown
from course.grading.processes import ExecRunning
from course.grading.supervise import LOG_CAP, supervise
from course.grading.untrusted import Untrusted, load_results

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap")

# A child speaking the grader's protocol: item i is done after it, except `mode`'s item 1.
CHILD = r'''
import json, os, signal, sys, time
mode, items = sys.argv[1], [int(i) for i in sys.argv[2].split(",") if i]
out = os.fdopen(os.dup(1), "w", buffering=1)
for i in items:
    out.write(json.dumps({"start": i}) + "\n")
    if i == 0 and mode == "keepalive-first":  # the start-up allowance must end at "start"
        while True:
            out.write("still working\n"); time.sleep(0.01)
    if i == 1 and mode == "fast-keepalive":
        while True:
            out.write("still working\n"); time.sleep(0.01)
    if i == 1 and mode == "slow-keepalive":
        while True:
            out.write("".join(json.dumps({"start": j}) + "\n" for j in range(9))); time.sleep(0.3)
    if mode == "slow-items":
        time.sleep(0.8)
    if i == 1 and mode == "flood":
        os.write(2, b"x" * (8 * 1024 * 1024)); out.write("[" * 100000 + "\n" + "y" * (3 << 20) + "\n")
    if i == 1 and mode == "cpu":
        os.kill(os.getpid(), signal.SIGXCPU)
    out.write(json.dumps({"done": i, "value": i * 10}) + "\n")
'''


def _start(mode: str):
    def start(rest):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, ",".join(map(str, rest))],
                                stdout=out_w, stderr=err_w, start_new_session=True)
        os.close(out_w)
        os.close(err_w)
        return ExecRunning(proc, out_r, err_r, sandboxed=False)
    return start


def _supervise(mode, tmp_path, item=1.0, deadline=3.0):
    began = time.monotonic()
    run = supervise(_start(mode), [0, 1, 2], item, began + deadline, tmp_path / "log.txt",
                    startup=5.0)
    return run, time.monotonic() - began


@pytest.mark.parametrize("mode", ["fast-keepalive", "slow-keepalive"])
def test_a_keepalive_cannot_move_the_item_deadline(mode, tmp_path):
    """The issue's supervisor: a 1 s item limit and a 3 s deadline returned after 8.3 s."""
    run, seconds = _supervise(mode, tmp_path)
    assert run.results[0].done["value"] == 0 and run.results[2].done["value"] == 20
    assert run.results[1].timed_out and run.results[1].done is None
    assert not run.deadline_hit and seconds < 3.0, seconds


def test_the_start_up_allowance_ends_when_the_first_item_starts(tmp_path):
    run, seconds = _supervise("keepalive-first", tmp_path, item=1.0, deadline=8.0)
    assert run.results[0].timed_out and run.results[1].done["value"] == 10
    assert seconds < 3.0, seconds  # not the 5 s start-up allowance plus the item's 1 s


def test_the_student_deadline_ends_everything(tmp_path):
    run, seconds = _supervise("slow-items", tmp_path, item=1.0, deadline=2.0)
    assert run.deadline_hit and 2 not in run.results and seconds < 3.0, seconds


def test_floods_and_garbage_are_read_capped_and_ignored(tmp_path):
    run, _ = _supervise("flood", tmp_path, item=20.0, deadline=60.0)
    assert [run.results[i].done["value"] for i in range(3)] == [0, 10, 20]
    assert LOG_CAP <= (tmp_path / "log.txt").stat().st_size < LOG_CAP + 200
    assert "more bytes of output not kept" in (tmp_path / "log.txt").read_text()


def test_a_cpu_limit_death_gets_one_more_try_then_charges_the_item(tmp_path):
    run, _ = _supervise("cpu", tmp_path, item=20.0, deadline=60.0)
    assert run.results[1].cpu_limit and run.results[1].exit_code == -signal.SIGXCPU
    assert run.results[2].done["value"] == 20 and run.restarts == 2


# --------------------------------------------------------------- results are untrusted data

WANT = [{"output": torch.zeros(2, 5, dtype=torch.float64), "inputs modified": torch.tensor([False])}]


def _saved(tmp_path, obj, name="r.pt") -> Path:
    torch.save(obj, tmp_path / name)
    return tmp_path / name


def test_an_honest_result_is_read(tmp_path):
    honest = [{"outputs": {"output": torch.randn(2, 5, dtype=torch.float64),
                           "inputs modified": torch.tensor([False]),
                           "grad arg 0": torch.randn(2, 5, 3).permute(2, 0, 1).clone()}}]
    got = load_results(_saved(tmp_path, honest), WANT)
    assert torch.equal(got[0]["outputs"]["output"], honest[0]["outputs"]["output"])
    assert torch.equal(got[0]["outputs"]["grad arg 0"], honest[0]["outputs"]["grad arg 0"])
    assert load_results(_saved(tmp_path, [{"error": "raised X"}]), WANT) == [{"error": "raised X"}]


@pytest.mark.parametrize("result, reason", [
    ([{"outputs": {"output": torch.zeros(1).expand(2 ** 32)}}],
     "output has 4294967296 elements, expected (2, 5)"),
    ([{"outputs": {"output": torch.zeros(()).expand(2 ** 62)}}],
     "output has 4611686018427387904 elements, expected (2, 5)"),
    ([{"outputs": {"output": torch.zeros(100, 100)}}], "output has 10000 elements, expected (2, 5)"),
    ([{"outputs": {f"o{i}": torch.zeros(1) for i in range(100)}}], "not a small set of named tensors"),
    ([{"outputs": {"output": torch.zeros(4, 10, dtype=torch.float64)[:2, :5]}}],
     "not a plain dense tensor"),
    ([{"outputs": {"output": torch.zeros(2, 5, dtype=torch.complex128)}}], "ComplexDoubleStorage"),
    ([{"error": "a"}, {"error": "b"}], "the result holds 2 cases, expected 1"),
    ({"outputs": {}}, "holds no list of cases"),
])
def test_a_hostile_result_is_refused_from_its_header(result, reason, tmp_path):
    with pytest.raises(Untrusted, match=reason.replace("(", r"\(").replace(")", r"\)")):
        load_results(_saved(tmp_path, result), WANT)


def test_a_pickle_that_names_anything_else_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo PWNED",))

    path = _saved(tmp_path, [{"outputs": {}}])
    with zipfile.ZipFile(path) as archive:
        records = {n: archive.read(n) for n in archive.namelist()}
    data_pkl = next(n for n in records if n.endswith("data.pkl"))
    records[data_pkl] = pickle.dumps([Evil()], protocol=2)
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in records.items():
            archive.writestr(name, data)
    with pytest.raises(Untrusted, match="names posix.system"):
        load_results(path, WANT)


def test_files_that_are_no_results_are_refused(tmp_path):
    (tmp_path / "garbage.pt").write_bytes(b"\0" * 100)
    (tmp_path / "empty.pt").write_bytes(b"")
    (tmp_path / "huge.pt").write_bytes(b"\0" * (17 << 20))
    os.symlink("/etc/passwd", tmp_path / "link.pt")
    os.mkfifo(tmp_path / "fifo.pt")
    for name, reason in [("garbage", "not a file torch.save writes"), ("empty", "wrote no result"),
                         ("huge", "more than the"), ("link", "no readable result"),
                         ("fifo", "not a plain file")]:
        with pytest.raises(Untrusted, match=reason):
            load_results(tmp_path / f"{name}.pt", WANT)


# ------------------------------------------------------------------------------------ names

def test_names_are_neutralised_for_spreadsheets_and_terminals():
    for formula in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert csv_cell(formula).startswith(("'", "\\x")), formula
    assert csv_cell("ada") == "ada" and csv_cell("Lee, Ann") == "Lee, Ann"
    fake = "\x1b[1A\x1b[2K\x1b[32mperfect: ok\u202e"
    assert shown(fake) == "\\x1b[1A\\x1b[2K\\x1b[32mperfect: ok\\u202e"
    assert "\x1b" not in csv_cell(fake) and shown("学生A") == "学生A"
    assert report_name("Ann Lee") != report_name("Ann_Lee-a36e143c") != report_name(
        report_name("Ann Lee"))


# ----------------------------------------------------- statuses come from what was raised

def _one_check_context():
    from course.grading.plan import CheckCell, Lesson
    from course.grading.prepare import ClassContext, GradedCheck

    cell = CheckCell("05_x.ipynb", 3, ["05.masked_mean"])
    return ClassContext(Path("."), Path("."), Path("."), [Lesson("05", "05_x.ipynb", [cell])],
                        {"05.masked_mean": GradedCheck("05.masked_mean", "05", 1.0,
                                                       "bias:masked_mean", 2, 0)}, {})


def _record(text="", raised=(), message=""):
    return {"outputs": [{"type": "stream", "name": "stdout", "text": text}], "message": message,
            "kernel_exit": None, "raised": [list(r) for r in raised], "outcome": "passed"}


def test_printed_out_of_memory_text_is_no_memory_limit():
    """FULL=1 gave every student memory-limit: lesson 05 prints a recorded H200 run's
    torch.cuda.OutOfMemoryError, and nbval's diff quotes it."""
    from course.grading.classify import classify
    from course.grading.settings import Settings
    from course.grading.visible import Visible

    ctx = _one_check_context()
    text = "L=65536: torch.cuda.OutOfMemoryError: CUDA out of memory (recorded on an H200)\n"
    quiet = Visible(cells={("05_x.ipynb", 3): _record(text + "PASS 05.masked_mean (2 cases)\n",
                                                      message="Cell outputs differ: " + text),
                           ("05_x.ipynb", 2): _record(text)})
    found = classify(ctx, quiet, Settings())
    assert found.statuses == set() and found.verdicts["05.masked_mean"][0]
    for raised in (("MemoryError", ""), ("OutOfMemoryError", "CUDA out of memory"),
                   ("RuntimeError", "DefaultCPUAllocator: can't allocate memory: you tried")):
        loud = Visible(cells={("05_x.ipynb", 3): _record(raised=[("CheckFailed", "FAIL"), raised])})
        assert classify(ctx, loud, Settings()).statuses == {"memory-limit"}, raised


# ------------------------------------------------------------------- bounded sandboxes

PROBE = r'''
import json, os, sys, threading
def fill(folder):
    written = 0
    try:
        for n in range(1000):
            with open(os.path.join(folder, f"f{n}"), "wb") as handle:
                handle.write(b"\0" * (1 << 20))
            written += 1
    except OSError:
        pass
    return written
report = {"cmdline1": open("/proc/1/cmdline", "rb").read().decode(errors="replace"),
          "cmdline": open("/proc/self/cmdline", "rb").read().decode(errors="replace"),
          "environ": dict(os.environ), "path": sys.path, "cwd": os.getcwd(), "argv": sys.argv,
          "root": sorted(os.listdir("/")), "files": sorted(os.listdir("/work")),
          "caps": [l.split()[1] for l in open("/proc/self/status") if l.startswith("Cap")],
          "tmp_mib": fill("/tmp"), "work_mib": fill("/work")}
print(json.dumps(report), flush=True)
'''


def _sandboxed(tmp_path, server, script=PROBE, limits=None):
    from course.grading.sandbox import Layout, Limits, Sandbox, interpreter
    from course.grading.supervise import Lines

    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "bin" / "probe.py").write_text(script)
    layout = Layout(tmpfs={"/tmp": 8 << 20, "/work": 4 << 20}, ro={"/probe": tmp_path / "bin"},
                    files={"/work/exercises/x.py": b"X = 1\n"}, cwd="/work")
    proc = Sandbox(layout, server=server).start([interpreter(), "/probe/probe.py"],
                                               limits or Limits(fsize_mib=64))
    try:
        deadline, data = time.monotonic() + 120, b""
        while proc.poll() is None and time.monotonic() < deadline:
            data += os.read(proc.out, 1 << 20) if select_ready(proc.out) else b""
        data += os.read(proc.out, 1 << 20) if select_ready(proc.out) else b""
        return proc, [json.loads(line) for line in Lines().feed(data)]
    finally:
        proc.close()


def select_ready(fd) -> bool:
    import select

    return bool(select.select([fd], [], [], 0.1)[0])


@pytest.fixture(scope="module")
def fork_server(tmp_path_factory):
    from course.grading.sandbox import fork_server

    server = fork_server(tmp_path_factory.mktemp("server") / "log.txt")
    assert server.wait_ready()
    yield server
    server.close()


@needs_bwrap
@pytest.mark.parametrize("how", ["exec", "fork"])
def test_a_sandbox_is_bounded_and_shows_no_host_path(how, tmp_path, request):
    server = request.getfixturevalue("fork_server") if how == "fork" else None
    proc, reports = _sandboxed(tmp_path, server)
    assert proc.poll() == 0 and len(reports) == 1, reports
    seen = reports[0]
    assert 0 < seen["tmp_mib"] <= 8 and 0 < seen["work_mib"] <= 4   # the tmpfs sizes hold
    assert seen["files"][:1] == ["exercises"] and seen["cwd"] == "/work"
    text = json.dumps({k: v for k, v in seen.items() if k not in ("root",)})
    assert str(tmp_path) not in text and "/tmp/pytest" not in text
    venv = str(Path(sys.prefix).resolve())
    assert str(ROOT) not in text.replace(venv, "") and "/work/wt" not in text.replace(venv, "")
    if how == "fork":
        assert set(seen["caps"]) == {"0000000000000000"}


@needs_bwrap
@pytest.mark.parametrize("how", ["exec", "fork"])
def test_a_spinning_process_is_stopped_by_its_cpu_time(how, tmp_path, request):
    from course.grading.sandbox import Limits

    server = request.getfixturevalue("fork_server") if how == "fork" else None
    spin = ("import threading, torch\n"
            "def spin():\n    x = torch.randn(64, 64)\n    while True:\n        x = torch.mm(x, x).clamp(-1, 1)\n"
            "for _ in range(3):\n    threading.Thread(target=spin, daemon=True).start()\nspin()\n")
    began = time.monotonic()
    proc, _ = _sandboxed(tmp_path, server, spin, Limits(cpu_seconds=2 if how == "fork" else 8))
    assert proc.poll() in (-signal.SIGXCPU, -signal.SIGKILL) and not proc.killed
    print(f"{how}: stopped after {time.monotonic() - began:.1f} s of wall time")


@needs_bwrap
def test_without_its_fork_server_a_sandbox_starts_by_exec(tmp_path):
    from course.grading.sandbox import fork_server

    server = fork_server(tmp_path / "log.txt")
    server.close()  # as if it had died during the run
    proc, reports = _sandboxed(tmp_path, server)
    assert proc.poll() == 0 and len(reports) == 1 and not server.alive
