"""The guide's Slurm recipe on a real one-node Slurm: docs/cluster/submit.sh run as documented
(`WORK=../class/a1 LESSONS=00-01 bash docs/cluster/submit.sh`) submits the array of shards and
the merge; the merged assignment must equal a one-machine run of it, file by file, timings apart.

The cluster is this test's own: munged with a fresh key, slurmctld and slurmd (Debian's
`slurm-wlm` and `munge`, which `make test` installs through scripts/system_packages.sh) with a
configuration in a temporary folder (SlurmctldHost=localhost, NodeAddr=127.0.0.1, free ports),
started before and stopped after. The node is declared with more CPUs than the machine has
(`SlurmdParameters=config_overrides`) so that the three shards run at once, as on a cluster.
The test skips, saying why, only where Slurm cannot start: not root (slurmd runs jobs as their
user), the programs missing, or a daemon that does not come up.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests import term_class as term

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")]
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "scancel")
CONF = """ClusterName=course
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
AuthType=auth/munge
AuthInfo=socket={dir}/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=8 RealMemory=32000 State=UNKNOWN
PartitionName=course Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _until(what: str, ready, deadline_s: float, alive) -> None:
    """Wait for `ready()` (an event, polled), failing at once when `alive()` says a daemon died."""
    deadline = time.monotonic() + deadline_s
    while not ready():
        problem = alive()
        if problem or time.monotonic() > deadline:
            pytest.skip(f"Slurm cannot start here: {what}: {problem or 'not within the time'}")
        time.sleep(0.2)


class Cluster:
    """munged, slurmctld and slurmd in `folder`, as this process's children."""

    def __init__(self, folder: Path):
        self.dir, self.procs = folder, {}
        folder.mkdir(mode=0o700)
        for sub in ("munge", "state", "spool"):
            (folder / sub).mkdir(mode=0o700)
        key = folder / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        (folder / "slurm.conf").write_text(CONF.format(dir=folder, ctld_port=_free_port(),
                                                       d_port=_free_port()))
        self.env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}

    def start(self) -> None:
        munge = self.dir / "munge"
        self._run("munged", ["munged", "-F", "--force", f"--socket={munge}/munge.socket",
                             f"--key-file={munge}/munge.key", f"--pid-file={munge}/munged.pid",
                             f"--log-file={munge}/munged.log", f"--seed-file={munge}/munged.seed"])
        _until("munged", (munge / "munge.socket").exists, 30, self.dead)
        self._run("slurmctld", ["slurmctld", "-D", "-i"])
        self._run("slurmd", ["slurmd", "-D", "-N", "localhost"])
        _until("the node", lambda: self.query(["sinfo", "-h", "-o", "%T"]) == "idle", 60,
               self.dead)

    def _run(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / f"{name}.out", "wb")
        self.procs[name] = subprocess.Popen(argv, env=self.env, stdout=log, stderr=log,
                                            stdin=subprocess.DEVNULL)

    def dead(self) -> str | None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.dir / f"{name}.out").read_text(errors="replace")[-800:]
                return f"{name} exited with {proc.returncode}: {tail}"
        return None

    def query(self, argv: list[str]) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        return done.stdout.strip()

    def state(self, job: str) -> str:
        line = self.query(["scontrol", "show", "job", "-o", job])
        found = [w.split("=", 1)[1] for w in line.split() if w.startswith("JobState=")]
        return found[0] if found else "GONE"

    def stop(self) -> None:
        subprocess.run(["scancel", "--full", "--user=root"], env=self.env, capture_output=True,
                       timeout=60)
        for proc in reversed(list(self.procs.values())):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def cluster(tmp_path):
    missing = [p for p in PROGRAMS if shutil.which(p) is None]
    if missing:
        pytest.skip(f"Slurm cannot start here: {', '.join(missing)} not installed "
                    "(apt-get install slurm-wlm munge; make test does it)")
    if os.geteuid() != 0:
        pytest.skip("Slurm cannot start here: slurmd runs jobs as their user, so it needs root")
    started = Cluster(tmp_path / "slurm")
    try:
        started.start()
        yield started
    finally:
        started.stop()


def small_class(klass: Path) -> None:
    """Three students (one perfect, one with a bug, one with the stubs) and their roster."""
    from course.stubs import generate

    for folder, files in (("ada", term.PERFECT), ("bob", {**term.PERFECT, "warmup.py": term.WARMUP_BUG}),
                          ("cy", generate())):
        (klass / "a1" / "collected" / folder / "exercises").mkdir(parents=True)
        for name, text in files.items():
            (klass / "a1" / "collected" / folder / "exercises" / name).write_text(text)
    (klass / "roster.csv").write_text("folder,lms_id,email\nada,1,a@x\nbob,2,b@x\ncy,3,c@x\n")
    (klass / "seed").write_text("735171908\n")
    (klass / "seed").chmod(0o600)


def test_the_documented_array_job_and_merge_give_the_one_machine_gradebook(cluster, tmp_path):
    course, klass = term.course_copy(tmp_path), tmp_path / "class"
    small_class(klass)
    env = {**term.make_env(), "SLURM_CONF": cluster.env["SLURM_CONF"]}
    submitted = subprocess.run(["bash", "-c", "WORK=../class/a1 LESSONS=00-01 bash docs/cluster/submit.sh"],
                               cwd=course, env=env, capture_output=True, text=True, timeout=120)
    assert submitted.returncode == 0, submitted.stderr
    merge_job = submitted.stdout.split()[-1].split(";")[0]
    one = subprocess.run(  # meanwhile, the same class on one machine
        ["make", "grade", "SUBMISSIONS=../class/a1/collected", "OUT=../class/a1/grades", "JOBS=2",
         "LESSONS=00-01", "ROSTER=../class/roster.csv", "SEED_FILE=../class/seed"],
        cwd=course, env=env, capture_output=True, text=True, timeout=900)
    assert one.returncode == 0, one.stderr[-3000:]
    _until("the merge job", lambda: cluster.state(merge_job) in (
        "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "GONE"), 900, cluster.dead)
    work = klass / "a1"
    logs = {p.name: p.read_text(errors="replace") for p in (work / "logs").iterdir()}
    assert cluster.state(merge_job) == "COMPLETED", logs
    assert sorted(logs) == ["merge.log", "shard-1.log", "shard-2.log", "shard-3.log"]
    assert sorted(p.name for p in (work / "shards").iterdir()) == ["1", "2", "3"]
    merged, single = term.tree(work / "merged"), term.tree(work / "grades")
    assert sorted(merged) == sorted(single) and "lms/moodle.csv" in merged
    for name in single:
        assert merged[name] == single[name], name
    assert term.rows(work / "merged") == {"ada": "ok,3,3,1,1,1,", "bob": "ok,2,3,0,1,1,",
                                           "cy": "ok,0,3,0,0,0,"}
    assert not list(course.glob("*.log")) and not list(course.glob("slurm-*.out"))
