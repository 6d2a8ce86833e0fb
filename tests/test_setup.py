"""Setting up from nothing: scripts/system_packages.sh (chromium and bubblewrap for the tests),
the Makefile's set-up of `make test`, and the CPU-only PyTorch option of scripts/setup_venv.sh.

The apt-get runs here are fakes on a PATH of their own (the real ones would change this machine):
each fake logs how it was called and, for `apt-get install`, creates the files a real install
would. The real script on this machine (both programs present) is run as well.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from course import ROOT

SCRIPT = ROOT / "scripts" / "system_packages.sh"
BASH = shutil.which("bash")


def write_exe(path: Path, text: str) -> None:
    path.write_text("#!" + BASH + "\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


class FakeMachine:
    """A bin folder for the script's PATH, with fake id, sudo, apt-get and bwrap."""

    def __init__(self, root: Path, *, uid=0, chromium=False, bwrap=False, apt=True,
                 sudo: str | None = None, install_fails=False, slurm=True):
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "calls.log"
        self.log.touch()
        self.chromium = root / "usr-bin" / "chromium"
        self.chromium.parent.mkdir()
        for tool in ("head", "chmod", "mkdir", "true"):  # what the script and the fakes use
            os.symlink(shutil.which(tool), self.bin / tool)
        write_exe(self.bin / "id", f'[ "$1" = -u ] && echo {uid}\n')
        fake_chromium = 'echo "Chromium 1.0 fake"\n'
        if chromium:
            write_exe(self.chromium, fake_chromium)
        if bwrap:
            write_exe(self.bin / "bwrap", "")
        slurm_tools = ("slurmctld", "slurmd", "sbatch", "munged")
        for tool in slurm_tools if slurm else ():
            write_exe(self.bin / tool, "")
        if apt:
            write_exe(self.bin / "apt-get", f"""
echo "apt-get $*" >> {self.log}
[ "$(id -u)" = 0 ] || {{ echo "E: not root" >&2; exit 100; }}
for a in "$@"; do
  case "$a" in
    install) {'exit 100' if install_fails else ':'} ;;
    chromium) printf '%s\\n' '#!{BASH}' '{fake_chromium.strip()}' > {self.chromium}; chmod +x {self.chromium} ;;
    bubblewrap) printf '%s\\n' '#!{BASH}' > {self.bin}/bwrap; chmod +x {self.bin}/bwrap ;;
    slurm-wlm) for t in slurmctld slurmd sbatch; do printf '%s\\n' '#!{BASH}' > {self.bin}/$t; chmod +x {self.bin}/$t; done ;;
    munge) printf '%s\\n' '#!{BASH}' > {self.bin}/munged; chmod +x {self.bin}/munged ;;
  esac
done
""")
        if sudo == "passwordless":  # runs the command as root (the fake id says 0 under it)
            write_exe(self.bin / "sudo", f"""
echo "sudo $*" >> {self.log}
[ "$1" = -n ] && shift
mkdir -p {root}/rootbin; printf '%s\\n' '#!{BASH}' 'echo 0' > {root}/rootbin/id
chmod +x {root}/rootbin/id; PATH={root}/rootbin:$PATH exec "$@"
""")
        elif sudo == "password":  # needs a terminal to ask
            write_exe(self.bin / "sudo", f'echo "sudo $*" >> {self.log}\n'
                      '[ "$1" = -n ] && { echo "sudo: a password is required" >&2; exit 1; }\n'
                      'exec "$@"\n')

    def run(self) -> tuple[subprocess.CompletedProcess, float]:
        env = {"PATH": str(self.bin), "COURSE_CHROMIUM": str(self.chromium), "HOME": "/nonexistent"}
        start = time.perf_counter()
        done = subprocess.run([BASH, str(SCRIPT)], env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=30)
        return done, time.perf_counter() - start

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()


def test_nothing_to_do_when_both_are_present(tmp_path):
    machine = FakeMachine(tmp_path, chromium=True, bwrap=True)
    done, _ = machine.run()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert machine.calls() == []


def test_as_root_a_missing_browser_is_installed(tmp_path):
    machine = FakeMachine(tmp_path, bwrap=True)
    done, _ = machine.run()
    assert done.returncode == 0, done.stderr
    update, install = machine.calls()
    assert " update" in update and install.endswith("install -y -qq chromium")
    assert machine.chromium.exists()
    assert "installed: Chromium 1.0 fake" in done.stdout
    # and a second run finds it
    assert machine.run()[0].stdout == ""


def test_as_root_both_missing_are_installed_in_one_apt_call(tmp_path):
    machine = FakeMachine(tmp_path)
    done, _ = machine.run()
    assert done.returncode == 0, done.stderr
    installs = [c for c in machine.calls() if " install " in c]
    assert len(installs) == 1 and installs[0].endswith("install -y -qq chromium bubblewrap")
    assert (machine.bin / "bwrap").exists() and machine.chromium.exists()


def test_as_root_a_missing_slurm_is_installed_with_the_rest(tmp_path):
    machine = FakeMachine(tmp_path, bwrap=True, chromium=True, slurm=False)
    done, _ = machine.run()
    assert done.returncode == 0, done.stderr
    installs = [c for c in machine.calls() if " install " in c]
    assert len(installs) == 1 and installs[0].endswith("install -y -qq slurm-wlm munge")
    assert machine.run()[0].stdout == ""


def test_not_root_slurm_is_left_alone(tmp_path):
    """tests/test_slurm.py needs root (slurmd runs jobs as their user): nothing to install."""
    machine = FakeMachine(tmp_path, uid=1000, bwrap=True, chromium=True, slurm=False)
    done, _ = machine.run()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_not_root_with_passwordless_sudo_installs_through_sudo(tmp_path):
    machine = FakeMachine(tmp_path, uid=1000, sudo="passwordless", bwrap=True)
    done, _ = machine.run()
    assert done.returncode == 0, done.stderr
    assert [c for c in machine.calls() if c.startswith("sudo -n apt-get")], machine.calls()
    assert machine.chromium.exists()


@pytest.mark.parametrize("sudo", [None, "password"])
def test_not_root_without_usable_sudo_stops_at_once_with_the_fix(tmp_path, sudo):
    machine = FakeMachine(tmp_path, uid=1000, sudo=sudo, bwrap=True)
    done, seconds = machine.run()
    assert done.returncode == 1
    assert "sudo apt-get update && sudo apt-get install -y chromium" in done.stderr
    assert not [c for c in machine.calls() if c.startswith("apt-get") or " apt-get" in c]
    assert seconds < 5


def test_without_apt_get_it_names_the_packages(tmp_path):
    machine = FakeMachine(tmp_path, apt=False, chromium=True)
    done, _ = machine.run()
    assert done.returncode == 1
    assert "no apt-get" in done.stderr and "bubblewrap" in done.stderr


def test_a_failed_install_stops_with_the_fix(tmp_path):
    machine = FakeMachine(tmp_path, install_fails=True)
    done, _ = machine.run()
    assert done.returncode == 1
    assert "apt-get install failed" in done.stderr
    assert "sudo apt-get install -y chromium bubblewrap" in done.stderr


def test_on_this_machine_it_is_silent_and_fast_once_installed():
    if not (Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")).exists()
            and shutil.which("bwrap")):
        pytest.skip("chromium or bwrap missing here: make test installs them before pytest")
    start = time.perf_counter()
    done = subprocess.run([BASH, str(SCRIPT)], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert time.perf_counter() - start < 2


# ------------------------------------------------------------------------------ the Makefile

def make_dry_run(*args: str) -> list[str]:
    """The commands `make -n` would run (with a venv path that exists, so no set-up step)."""
    done = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=30, env={**os.environ, "MAKEFLAGS": ""})
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_test_installs_the_system_packages_before_pytest():
    lines = make_dry_run("test")
    packages = [i for i, line in enumerate(lines) if "scripts/system_packages.sh" in line]
    pytest_at = [i for i, line in enumerate(lines) if "-m pytest" in line]
    assert packages and pytest_at and packages[0] < pytest_at[0], lines


def test_ci_runs_exactly_the_readme_command():
    commands = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == "make test"
    assert not [c for c in commands if re.search(r"\b(apt-get|pip|sudo)\b", c)]
    assert "make test" in (ROOT / "README.md").read_text()


# ------------------------------------------------------- the venv, CPU-only torch, and conda

def setup_dry_run(venv: Path, **env: str) -> list[str]:
    """The commands scripts/setup_venv.sh would run (SETUP_DRY_RUN prints them)."""
    done = subprocess.run([BASH, str(ROOT / "scripts" / "setup_venv.sh"), str(venv)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SETUP_DRY_RUN": "1", **env})
    assert done.returncode == 0, done.stderr
    return [line[2:] for line in done.stdout.splitlines() if line.startswith("+ ")]


def pinned_torch() -> str:
    (pin,) = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
              if line.startswith("torch==")]
    return pin


def test_default_set_up_installs_requirements_txt_as_pip_resolves_it(tmp_path):
    commands = setup_dry_run(tmp_path / "venv")
    assert commands[0].endswith(f"-m venv {tmp_path / 'venv'}")
    installs = [c for c in commands if " install " in c]
    assert installs[-1].endswith("install --quiet -r requirements.txt")
    assert not [c for c in commands if "--index-url" in c]


def test_torch_cpu_takes_torch_alone_from_pytorchs_cpu_index_first(tmp_path):
    commands = setup_dry_run(tmp_path / "venv", TORCH="cpu")
    installs = [c for c in commands if " install " in c]
    cpu = [i for i, c in enumerate(installs) if "--index-url https://download.pytorch.org/whl/cpu" in c]
    assert len(cpu) == 1 and installs[cpu[0]].endswith(" " + pinned_torch())
    # then the rest: torch==2.13.0 is satisfied by 2.13.0+cpu, so nothing replaces it
    assert installs[cpu[0] + 1].endswith("-r requirements.txt")
    # the index can be pointed elsewhere (a mirror)
    mirror = setup_dry_run(tmp_path / "venv", TORCH="cpu", TORCH_CPU_INDEX="https://mirror.invalid/cpu")
    assert any("--index-url https://mirror.invalid/cpu" in c for c in mirror)


def test_an_unknown_torch_flavour_is_refused(tmp_path):
    done = subprocess.run([BASH, str(ROOT / "scripts" / "setup_venv.sh"), str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "TORCH": "rocm"})
    assert done.returncode == 2 and "TORCH=cpu" in done.stderr


def test_make_passes_the_torch_option_to_the_set_up_and_stamps_it_apart(tmp_path):
    lines = make_dry_run("lab", "TORCH=cpu", f"VENV={tmp_path / 'v'}")
    assert any("TORCH=cpu bash scripts/setup_venv.sh" in line for line in lines), lines
    assert any(line.startswith("touch ") and line.endswith(".installed-cpu") for line in lines)


def test_in_the_conda_environment_make_uses_it_and_pip_adds_only_the_test_extras(tmp_path):
    env_dir = tmp_path / "envs" / "attention-course"
    (env_dir / "conda-meta").mkdir(parents=True)
    done = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "MAKEFLAGS": "", "CONDA_DEFAULT_ENV": "attention-course",
                               "CONDA_PREFIX": str(env_dir)})
    assert f"bash scripts/setup_venv.sh {env_dir}" in done.stdout
    assert f"{env_dir}/bin/python -m pytest" in done.stdout
    (command,) = setup_dry_run(env_dir)
    assert "--no-deps" in command
    extras = {word.split("==")[0] for word in command.split() if "==" in word}
    assert extras == {"playwright", "greenlet", "pytest-xdist", "execnet", "kubernetes-validate",
                      "importlib_resources"}
    # make clean never deletes a conda environment
    assert str(env_dir) not in subprocess.run(
        ["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "CONDA_DEFAULT_ENV": "attention-course", "CONDA_PREFIX": str(env_dir)}).stdout
