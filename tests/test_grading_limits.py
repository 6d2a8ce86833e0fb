"""The grader's limits, piece by piece: deadlines no child can move, results read as
untrusted data, names that cannot inject, statuses from what was raised (not from text), and
sandboxes of a fixed size and CPU time that show no host path. The whole class is graded in
tests/test_grading_hostile.py; these tests take seconds."""
from __future__ import annotations

import json
import os
import pickle
import shutil
import signal
import stat
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
    if i == 1 and mode == "cpu":  # its CPU-time limit (1 s, the grader's _start sets it)
        while True:
            pass
    if i == 1 and mode in ("self-xcpu", "self-kill"):  # what the CPU-time limit sends, from inside
        os.killpg(0, signal.SIGXCPU if mode == "self-xcpu" else signal.SIGKILL)
    out.write(json.dumps({"done": i, "value": i * 10}) + "\n")
'''


def _start(mode: str, cpu_limit: int = 1):
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 2))

    def start(rest):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        proc = subprocess.Popen([sys.executable, "-c", CHILD, mode, ",".join(map(str, rest))],
                                stdout=out_w, stderr=err_w, start_new_session=True,
                                preexec_fn=limit)
        os.close(out_w)
        os.close(err_w)
        running = ExecRunning(proc, out_r, err_r, sandboxed=False)
        running.cpu_limit = cpu_limit
        return running
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
    run, _ = _supervise("cpu", tmp_path, item=60.0, deadline=150.0)
    assert run.results[1].cpu_limit and run.results[1].exit_code == -signal.SIGXCPU
    assert run.results[2].done["value"] == 20 and run.restarts == 2


@pytest.mark.parametrize("mode", ["self-kill", "self-xcpu"])
def test_a_kill_from_inside_is_no_cpu_limit(mode, tmp_path):
    """A process group that killed itself with SIGKILL was charged as a CPU timeout, and
    retried as one: the CPU-time limit's signals count only when the CPU-seconds were used."""
    from course.grading.visible import died_message

    run, _ = _supervise(mode, tmp_path, item=20.0, deadline=60.0)
    killed = run.results[1]
    assert not killed.cpu_limit and killed.exit_code in (-signal.SIGKILL, -signal.SIGXCPU)
    assert run.results[2].done["value"] == 20 and run.restarts == 1  # no second try
    assert died_message(killed.exit_code).startswith(
        f"the process was killed by {signal.Signals(-killed.exit_code).name}, sent from inside")


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


# ----------------------------------------------------- the sandbox as a whole, names, reads

STORM = r'''
import json, os, sys, time
print(json.dumps({"start": 0}), flush=True)
forked, error = 0, None
ready_r, ready_w = os.pipe()
for _ in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError as err:
        error = err.strerror
        break
    if pid == 0:
        if sys.argv[2] == "spin":
            while True:
                pass
        if sys.argv[2] == "eat":  # one after the other: memory, not a crowd, is what grows
            block = bytearray(200 << 20)  # touched: resident, private
            os.write(ready_w, b"x")
            time.sleep(30)
        time.sleep(2)
        os._exit(0)
    if sys.argv[2] == "eat":
        os.read(ready_r, 1)
    forked += 1
print(f"forked {forked} ({error})", file=sys.stderr, flush=True)
if sys.argv[2] == "sleep":
    print(json.dumps({"done": 0, "forked": forked, "error": error}), flush=True)
else:
    time.sleep(60)
'''


def _storm(tmp_path, server, mode, count, limits):
    """supervise() over one sandboxed storm: (its result, the log, seconds); `tmp_path` must be
    reachable by the uid the sandbox runs as."""
    from course.grading.sandbox import Layout, Sandbox, interpreter

    (tmp_path / "bin").mkdir(exist_ok=True)
    (tmp_path / "bin" / "storm.py").write_text(STORM)
    box = Sandbox(Layout(tmpfs={"/tmp": 8 << 20}, ro={"/probe": tmp_path / "bin"}), server=server)
    began = time.monotonic()
    run = supervise(lambda rest: box.start([interpreter(), "/probe/storm.py", str(count), mode],
                                           limits), [0], 60.0, began + 90, tmp_path / "log.txt")
    return run.results[0], (tmp_path / "log.txt").read_text(), time.monotonic() - began


@pytest.fixture
def as_job_slots():
    """Sandboxes started in this thread run as a job slot's unprivileged uid (root only); yields
    a working folder those uids reach, as the grader's own (under the system's tmp)."""
    import tempfile

    from course.grading import identity as ids
    from course.grading.sandbox import bwrap_problem, python_roots

    if os.geteuid() != 0:
        pytest.skip("job slots' uids are root's way; a normal user's sandboxes run as that user")
    work = Path(tempfile.mkdtemp(prefix="grade-"))
    slots = ids.Slots(work, python_roots())
    problem = ids.ids_free() or (None if ids.reachable(work, ids.SLOT_UID, ids.SLOT_GID) else
                                 f"{work.parent} is closed") or bwrap_problem(slots.identity(0))
    if problem:
        slots.close()
        shutil.rmtree(work)
        pytest.skip(f"job slots cannot run here: {problem}")
    ids.configure(slots)
    try:
        with ids.slot():
            yield work
    finally:
        ids.configure(None)
        slots.close()
        shutil.rmtree(work, ignore_errors=True)


@needs_bwrap
@pytest.mark.parametrize("how", ["exec", "fork"])
def test_a_job_slot_reaches_its_result_files_whatever_the_umask(how, request):
    """Under a umask of 077 (an instructor's, or make collect's in the same process) the
    folders of a student's result files were root's alone: as root, every hidden run failed to
    start ("bubblewrap did not start its sandbox") and every honest student lost its points."""
    from course.grading.sandbox import Layout, Limits, Sandbox, interpreter

    server = request.getfixturevalue("fork_server") if how == "fork" else None
    work = request.getfixturevalue("as_job_slots")
    (work / "bin").mkdir()
    (work / "bin" / "write.py").write_text("open('/results/0.pt', 'w').write('written')\n")
    (work / "bin").chmod(0o755)
    old = os.umask(0o077)
    try:
        result = work / "s0000" / "results" / "0.pt"
        result.parent.mkdir(parents=True)
        result.touch()
        box = Sandbox(Layout(tmpfs={"/tmp": 8 << 20, "/results": 1 << 20},
                             ro={"/probe": work / "bin"}, rw={"/results/0.pt": result}),
                      server=server)
        proc = box.start([interpreter(), "/probe/write.py"], Limits())
        _output(proc)
    finally:
        os.umask(old)
    assert proc.poll() == 0 and result.read_text() == "written"
    assert stat.S_IMODE((work / "s0000").stat().st_mode) & 0o007 == 0  # nothing for others


FORKS = ("import json, os, time\nforked, error = 0, None\nfor _ in range(100):\n    try:\n"
         "        pid = os.fork()\n    except OSError as err:\n        error = err.strerror\n"
         "        break\n    if pid == 0:\n        time.sleep(2)\n        os._exit(0)\n"
         "    forked += 1\nprint(json.dumps({'forked': forked, 'error': error}), flush=True)\n")


@needs_bwrap
@pytest.mark.parametrize("how", ["exec", "fork"])
def test_a_process_limit_holds_per_sandbox(how, tmp_path, request):
    """As root, the kernel ignores RLIMIT_NPROC (uid 0 is exempt even inside a user
    namespace): 100 of 100 forks; a job slot's uid makes it hold. (As a normal user: below.)"""
    from course.grading.sandbox import Limits

    server = request.getfixturevalue("fork_server") if how == "fork" else None
    if os.geteuid() == 0:
        _, reports = _sandboxed(tmp_path, server, FORKS, Limits(nproc=20))
        assert reports == [{"forked": 100, "error": None}], "root without a job slot: no limit"
        tmp_path = request.getfixturevalue("as_job_slots")
    _, reports = _sandboxed(tmp_path, server, FORKS, Limits(nproc=20))
    assert reports[0]["forked"] < 20 and reports[0]["error"] == "Resource temporarily unavailable"


@needs_bwrap
@pytest.mark.parametrize("kind", ["spin", "eat"])
def test_a_storm_is_stopped_as_a_whole(kind, tmp_path, fork_server):
    """A tree of spinners (each under its own CPU limit) or of forks that each hold 200 MiB
    (each under its own memory limit): the sandbox's watch kills the whole tree."""
    from course.grading.sandbox import Limits

    result, log, seconds = _storm(tmp_path, fork_server, kind, 12,
                                  Limits(memory_mib=2000, cpu_seconds=60, nproc=32))
    assert "the grader stopped the sandbox" in log, log
    assert result.done is None and result.cpu_limit == (kind == "spin")
    assert ("at once" if kind == "spin" else "MiB together") in log
    print(f"{kind}: stopped after {seconds:.1f} s")


@needs_bwrap
@pytest.mark.parametrize("how", ["exec", "fork"])
def test_dev_is_read_only_and_shm_small(how, tmp_path, request):
    """/dev/shm was a tmpfs of half the host's memory, outside every limit."""
    server = request.getfixturevalue("fork_server") if how == "fork" else None
    script = ("import json, ctypes\n"
              "def fill(path, n):\n    done = 0\n    try:\n"
              "        with open(path, 'wb') as f:\n            for _ in range(n):\n"
              "                f.write(b'x' * (1 << 20)); done += 1\n"
              "    except OSError as err:\n        return [done, err.strerror]\n    return [done, None]\n"
              "print(json.dumps({'dev': fill('/dev/x', 1), 'shm': fill('/dev/shm/x', 64),\n"
              "    'userns': ctypes.CDLL(None).unshare(0x10000000)}), flush=True)\n")
    proc, reports = _sandboxed(tmp_path, server, script)
    assert reports == [{"dev": [0, "Read-only file system"], "shm": [16, "No space left on device"],
                        "userns": -1}]


KERNEL_OBJECTS = r"""
import ctypes, json, mmap, os, platform, sys
sys.path.insert(0, "/probe")
libc = ctypes.CDLL(None, use_errno=True)
numbers = json.loads(sys.argv[1])
def call(name, *args):
    done = libc.syscall(ctypes.c_long(numbers[name]), *[ctypes.c_long(a) for a in args])
    return "allowed" if done >= 0 else os.strerror(ctypes.get_errno())
def attempt(make):
    try:
        make()
        return "allowed"
    except OSError as err:
        return err.strerror
found = {"add_key": call("add_key", 0, 0, 0, 0, -4), "keyctl": call("keyctl", 1, 0),
         "request_key": call("request_key", 0, 0, 0, 0), "shmget": call("shmget", 0, 4096, 0o600),
         "msgget": call("msgget", 0, 0o600), "semget": call("semget", 0, 1, 0o600),
         "memfd": attempt(lambda: os.memfd_create("x")),
         "shared": attempt(lambda: mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED)),
         "private": attempt(lambda: mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE)),
         "zero": attempt(lambda: os.open("/dev/zero", os.O_RDWR)),
         "keys": attempt(lambda: open("/proc/keys").read())}
if platform.machine() == "x86_64":  # i386's add_key by int 0x80, from this 64-bit process
    code = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE,
                     prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    code.write(bytes([0xB8, 0x1E, 0x01, 0, 0, 0xCD, 0x80, 0xC3]))  # mov eax,286; int 0x80; ret
    found["int 0x80"] = ctypes.CFUNCTYPE(ctypes.c_int)(
        ctypes.addressof(ctypes.c_char.from_buffer(code)))()
print(json.dumps(found), flush=True)
"""


@needs_bwrap
@pytest.mark.parametrize("how", ["exec", "fork"])
def test_a_sandbox_refuses_what_it_could_share_or_hide(how, tmp_path, request):
    """Keys of a job slot's uid outlived its sandbox (the next student on the slot read them),
    and System V segments, memfds and shared mappings held memory no limit counted."""
    from course.grading import seccomp

    if seccomp.program() is None:
        pytest.skip(seccomp.problem())
    server = request.getfixturevalue("fork_server") if how == "fork" else None
    numbers = seccomp.ABIS[seccomp.host_machine()][1]
    _, reports = _sandboxed(tmp_path, server, KERNEL_OBJECTS.replace(
        "json.loads(sys.argv[1])", repr(numbers)))
    refused = "Operation not permitted"
    expected = {"add_key": refused, "keyctl": refused, "request_key": refused, "shmget": refused,
                "msgget": refused, "semget": refused, "memfd": refused, "shared": refused,
                "private": "allowed", "zero": "Permission denied", "keys": "Permission denied"}
    if seccomp.host_machine() == "x86_64":
        expected["int 0x80"] = -1  # -EPERM: another ABI's calls are all refused
    assert reports == [expected]


def test_each_sandbox_leaves_the_graders_session_keyring():
    """A sandbox inherited the grader's session keyring (as a normal user: the user's keys)."""
    from course.grading import seccomp

    number = seccomp.keyctl_number()
    if number is None or not os.path.exists("/proc/keys"):
        pytest.skip("no keyrings here")
    script = ("import ctypes, sys\nsys.path.insert(0, sys.argv[1])\n"
              "from course.grading import seccomp\nlibc = ctypes.CDLL(None)\n"
              f"ring = lambda: libc.syscall(ctypes.c_long({number}), ctypes.c_long(0), "
              "ctypes.c_long(-3), ctypes.c_long(1))\n"  # KEYCTL_GET_KEYRING_ID of @s
              "before = ring(); seccomp.new_session_keyring(); print(before, ring())\n")
    before, after = subprocess.run([sys.executable, "-c", script, str(ROOT)], capture_output=True,
                                   text=True, check=True).stdout.split()
    assert int(before) > 0 and int(after) > 0 and before != after


@needs_bwrap
def test_the_watch_counts_a_sandboxs_files_in_memory(tmp_path, fork_server):
    """/tmp and /dev/shm are memory (tmpfs): with the processes' own, beyond the limit together,
    the sandbox is stopped as a memory death; under it, not."""
    from course.grading.sandbox import Layout, Limits, Sandbox, interpreter

    hoard = ("import json, sys, time\nprint(json.dumps({'start': 0}), flush=True)\n"
             "for n in range(int(sys.argv[1]) // 50):\n"
             "    open(f'/tmp/f{n}', 'wb').write(b'x' * (50 << 20))\n"
             "block = bytearray(int(sys.argv[2]) << 20)\nblock[::4096] = b'y' * len(block[::4096])\n"
             "time.sleep(15)\nprint(json.dumps({'done': 0}), flush=True)\n")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "hoard.py").write_text(hoard)
    results = {}
    for files, own in ((700, 0), (700, 250)):
        box = Sandbox(Layout(tmpfs={"/tmp": 800 << 20}, ro={"/probe": tmp_path / "bin"}),
                      server=fork_server)
        run = supervise(lambda rest: box.start([interpreter(), "/probe/hoard.py", str(files),
                                                str(own)], Limits(memory_mib=1000)),
                        [0], 90.0, time.monotonic() + 120, tmp_path / f"log{own}.txt")
        results[own] = (run.results[0], (tmp_path / f"log{own}.txt").read_text())
    assert results[0][0].done is not None and not results[0][0].memory_limit
    stopped, log = results[250]
    assert stopped.memory_limit and stopped.done is None and not stopped.cpu_limit
    assert "files in memory (/tmp, /dev/shm, ...) 7" in log, log


@needs_bwrap
def test_two_sandboxes_at_once_share_no_socket(tmp_path, fork_server):
    """An abstract unix socket belongs to a network namespace: each sandbox has its own."""
    import threading

    from course.grading.sandbox import Layout, Limits, Sandbox, interpreter

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "listen.py").write_text(
        "import socket, time\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0course-test')\n"
        "s.listen()\nprint('listening', flush=True)\ntime.sleep(20)\n")
    (tmp_path / "bin" / "connect.py").write_text(
        "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0course-test')\n"
        "    print('connected')\nexcept OSError as err:\n    print(err.strerror)\n")

    def box():
        return Sandbox(Layout(tmpfs={"/tmp": 8 << 20}, ro={"/probe": tmp_path / "bin"}),
                       server=fork_server)

    listener = box().start([interpreter(), "/probe/listen.py"], Limits())
    try:
        assert os.read(listener.out, 100) == b"listening\n"
        said = []
        thread = threading.Thread(target=lambda: said.append(_output(box().start(
            [interpreter(), "/probe/connect.py"], Limits()))))
        thread.start()
        thread.join(120)
        assert said == ["Connection refused\n"]
    finally:
        listener.close()


def _output(proc) -> str:
    data = b""
    while chunk := os.read(proc.out, 1 << 16):
        data += chunk
    proc.close()
    return data.decode()


NORMAL_USER = "attention-grader-test"
AS_USER = r'''
import json, os, sys, threading, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from course.grading.sandbox import Layout, Limits, Sandbox, interpreter
from course.grading.supervise import supervise
here = Path(sys.argv[2])
def box():
    return Sandbox(Layout(tmpfs={"/tmp": 8 << 20}, ro={"/probe": here}))
def forks(found, key):  # the process limit alone: no supervisor
    proc = box().start([interpreter(), "/probe/forks.py"], Limits(nproc=20))
    data = b""
    while chunk := os.read(proc.out, 1 << 16):
        data += chunk
    proc.close()
    found[key] = json.loads(data)
def storm(found):
    began = time.monotonic()
    run = supervise(lambda rest: box().start([interpreter(), "/probe/storm.py", "12", "spin"],
                                             Limits(cpu_seconds=60, nproc=32)),
                    [0], 60.0, began + 90, here / "spin.log")
    found["spin"] = [run.results[0].done, run.results[0].cpu_limit, (here / "spin.log").read_text()]
found = {}
threads = [threading.Thread(target=forks, args=(found, k)) for k in ("a", "b")]  # at once
threads.append(threading.Thread(target=storm, args=(found,)))
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps(found))
'''


@pytest.fixture(scope="module")
def normal_user():
    """A user of this machine with no privilege, made for these tests (root only)."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("the tests run as a normal user already: the tests above are that user's")
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 the test user can run (the environment's lives under "
                    f"{sys.base_prefix}, which may be closed to other users)")
    made = False
    try:
        pwd.getpwnam(NORMAL_USER)
    except KeyError:
        if subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/false",
                           NORMAL_USER], capture_output=True).returncode != 0:
            pytest.skip("useradd failed: cannot make a normal user to test as")
        made = True
    yield pwd.getpwnam(NORMAL_USER), python
    if made:
        subprocess.run(["userdel", NORMAL_USER], capture_output=True)


@needs_bwrap
def test_as_a_normal_user_the_limits_hold_per_sandbox(normal_user):
    """The same limits for an instructor who is no root: the process limit counts each
    sandbox's own processes (two at once reach it each), the watch stops a storm."""
    import tempfile

    user, python = normal_user
    for folder in [*ROOT.parents, ROOT]:
        if not os.stat(folder).st_mode & 0o001:
            pytest.skip(f"{folder} (on the way to the course) is closed to other users")
    here = Path(tempfile.mkdtemp(prefix="grade-as-user-"))
    request_cleanup = here
    (here / "storm.py").write_text(STORM)
    (here / "forks.py").write_text(FORKS)
    (here / "as_user.py").write_text(AS_USER)
    os.chown(here, user.pw_uid, user.pw_gid)
    done = subprocess.run([python, str(here / "as_user.py"), str(ROOT), str(here)], cwd=here,
                          user=user.pw_uid, group=user.pw_gid, extra_groups=[],
                          env={"PATH": "/usr/bin:/bin", "HOME": str(here)}, capture_output=True,
                          text=True, timeout=300)
    shutil.rmtree(request_cleanup, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout)
    for key in ("a", "b"):  # two sandboxes of one user at once: each its own count
        assert 10 < found[key]["forked"] < 20 and found[key]["error"], found[key]
    assert found["spin"][0] is None and found["spin"][1], found["spin"]
    assert "stopped the sandbox" in found["spin"][2]


# ------------------------------------------------------------ names that are no UTF-8, reads

def test_names_are_bytes_until_shown(tmp_path):
    from course.grading import records as rec
    from course.grading.records import CheckRecord, StudentRecord

    latin1 = os.fsdecode(b"caf\xe9")
    assert shown(latin1) == "caf\\xe9" and csv_cell(latin1) == "caf\\xe9"
    assert report_name(latin1) == "caf_~dafd66c0b989" != report_name("café") == "café"
    (tmp_path / rec.SEED_FILE).write_text("12345\n")
    record = StudentRecord(latin1, report_name(latin1), "ok", 1.0, 1.0,
                           [CheckRecord("00.batched_dot", "00", 1.0, 1.0, True, "PASS")],
                           ignored=[f"{latin1}.py (not a module name)"])
    path = rec.save_student(tmp_path, record)
    path.read_bytes().decode("utf-8")  # every file in OUT is UTF-8
    assert rec.load_students(tmp_path)[report_name(latin1)] == record  # and reads back the same
    data = json.loads(path.read_text(encoding="utf-8"))
    assert rec.verify(data, rec.mac_key(12345)) and not rec.verify(data, rec.mac_key(12346))
    assert not rec.verify({**data, "total": 999.0}, rec.mac_key(12345))


def test_a_record_the_grader_did_not_write_is_left_out_of_a_resumed_run(tmp_path, capsys):
    """OUT's records are read back on every resumed run and regrade: one edited (999 points, or
    naming another student's report) or damaged is left out, so that student is graded again."""
    from course.grading import records as rec
    from course.grading.records import CheckRecord, StudentRecord

    (tmp_path / rec.SEED_FILE).write_text("12345\n")
    for name in ("ann", "bob", "cy", "dan"):
        rec.save_student(tmp_path, StudentRecord(name, name, "ok", 1.0, 1.0, [
            CheckRecord("00.batched_dot", "00", 1.0, 1.0, True, "PASS")]))
    folder = tmp_path / rec.STUDENTS_DIR
    edited = json.loads((folder / "bob.json").read_text())
    (folder / "bob.json").write_text(json.dumps({**edited, "total": 999.0}))
    (folder / "cy.json").write_text((folder / "ann.json").read_text())  # a valid record, moved
    (folder / "dan.json").write_text("{not json")
    assert sorted(rec.load_students(tmp_path)) == ["ann"]
    err = capsys.readouterr().err
    assert "bob.json left out: its MAC does not verify" in err
    assert "cy.json left out: it names another report" in err
    assert "dan.json left out: it cannot be read (JSONDecodeError)" in err


def test_submitted_files_are_stated_then_read_with_a_bound(tmp_path):
    """A sparse 300 MB exercises/__init__.py was read whole (+300 MB resident)."""
    import tracemalloc

    from course.grading import submission

    folder = tmp_path / "exercises"
    folder.mkdir()
    with open(folder / "__init__.py", "wb") as handle:
        handle.truncate(300 << 20)
    with open(folder / "warmup.py", "wb") as handle:
        handle.truncate(300 << 20)
    (folder / "softmax.py").write_text("X = 1\n")
    (folder / os.fsdecode(b"r\xe9sum\xe9.py")).write_text("Y = 2\n")
    tracemalloc.start()
    taken, ignored = submission.take_files(folder, ["warmup", "softmax"], b"")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert taken == {"softmax.py": b"X = 1\n"} and peak < 4 << 20, peak
    assert ignored == ["__init__.py (the course's own is used)", "r\\xe9sum\\xe9.py (not a module "
                       "name)", "warmup.py (over 1024 KiB)"]
    crowded = tmp_path / "crowded"
    crowded.mkdir()
    for i in range(submission.MAX_ENTRIES + 1):
        (crowded / f"f{i}.txt").touch()
    with pytest.raises(submission.TooLarge, match="holds more than 2000 entries"):
        submission.find_exercises(crowded)


def test_two_runs_as_root_never_share_a_slots_uid(tmp_path):
    """Each grading run's job slots take a block of uids no other run on the host holds (an
    flock): two runs at once would otherwise share uids, and the kernel's per-user count."""
    from course.grading import identity as ids

    if os.geteuid() != 0:
        pytest.skip("job slots' uids are root's way")
    for name in "abc":
        (tmp_path / name).mkdir()
    first, second = ids.Slots(tmp_path / "a", []), None
    try:
        second = ids.Slots(tmp_path / "b", [])
        uids = {first.identity(k).uid for k in range(ids.BLOCK)}
        assert not uids & {second.identity(k).uid for k in range(ids.BLOCK)}
        with pytest.raises(OSError, match="more than 64 job slots"):
            first.identity(ids.BLOCK)
        again = first.first
        first.close()
        third = ids.Slots(tmp_path / "c", [])  # a block given back is taken again
        assert third.first == again
        third.close()
    finally:
        first.close()
        if second is not None:
            second.close()


def test_the_environments_bytecode_is_compiled_before_any_sandbox(tmp_path):
    """A sandbox cannot cache bytecode: the grader's set-up compiles the environment's modules
    (an environment installed without it cost each sandboxed stage 2.8 CPU-seconds, not 0.8)."""
    import importlib.util

    from course.grading.bytecode import compile_environment, site_packages

    module = tmp_path / "site" / "pkg" / "mod.py"
    module.parent.mkdir(parents=True)
    module.write_text("X = 1\n")
    (module.parent / "other_python.py").write_text("match = ] not python\n")  # skipped, quietly
    assert compile_environment([tmp_path / "site", tmp_path / "missing"])
    assert Path(importlib.util.cache_from_source(str(module))).exists()
    if os.geteuid() != 0:  # root writes anywhere
        closed = tmp_path / "closed" / "mod.py"
        closed.parent.mkdir()
        closed.write_text("X = 1\n")
        closed.parent.chmod(0o555)
        assert not compile_environment([closed.parent])
        assert not Path(importlib.util.cache_from_source(str(closed))).exists()
    assert Path(sys.prefix).resolve() in [p.resolve().parents[2] for p in site_packages()]
