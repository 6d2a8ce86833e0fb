"""Setting up from nothing: scripts/system_packages.sh (chromium, bubblewrap and a CJK font for the tests),
the Makefile's set-up of `make test`, and the CPU-only PyTorch option of scripts/setup_venv.sh.

The apt-get runs here are fakes on a PATH of their own (the real ones would change this machine):
each fake logs how it was called and, for `apt-get install`, creates the files a real install
would. The real script on this machine (both programs present) is run as well.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import textwrap
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
    """A bin folder for the script's PATH, with fake id, sudo, apt-get and bwrap, and a font file."""

    def __init__(self, root: Path, *, uid=0, chromium=False, bwrap=False, apt=True,
                 sudo: str | None = None, install_fails=False, slurm=True, font=True):
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "calls.log"
        self.log.touch()
        self.chromium = root / "usr-bin" / "chromium"
        self.chromium.parent.mkdir()
        self.font = root / "fonts" / "NotoSansCJK-Regular.ttc"
        self.font.parent.mkdir()
        if font:
            self.font.touch()
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
    fonts-noto-cjk) : > {self.font} ;;
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
        env = {"PATH": str(self.bin), "COURSE_CHROMIUM": str(self.chromium),
               "COURSE_CJK_FONT": str(self.font), "HOME": "/nonexistent"}
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


def test_as_root_a_missing_cjk_font_is_installed(tmp_path):
    machine = FakeMachine(tmp_path, bwrap=True, chromium=True, font=False)
    done, _ = machine.run()
    assert done.returncode == 0, done.stderr
    installs = [c for c in machine.calls() if " install " in c]
    assert len(installs) == 1 and installs[0].endswith("install -y -qq fonts-noto-cjk")
    assert machine.font.exists() and "a CJK font" in done.stdout
    assert machine.run()[0].stdout == ""


def test_a_missing_font_is_named_with_the_fix(tmp_path):
    machine = FakeMachine(tmp_path, uid=1000, bwrap=True, chromium=True, font=False)
    done, _ = machine.run()
    assert done.returncode == 1
    assert "sudo apt-get install -y fonts-noto-cjk" in done.stderr and "Chinese figures" in done.stderr


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

SETUP = ROOT / "scripts" / "setup_venv.sh"


def without_uv_path() -> str:
    """This PATH without the folders that hold a `uv` (the test venv has one)."""
    return os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not (Path(d) / "uv").exists())


def setup_dry_run(venv: Path, **env: str) -> list[str]:
    """The commands scripts/setup_venv.sh would run (SETUP_DRY_RUN prints them). Unless told
    otherwise: this Python, and uv only where the test puts one (UV=...)."""
    env = {"PYTHON": sys.executable, "PATH": without_uv_path(), **env}
    done = subprocess.run([BASH, str(SETUP), str(venv)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "SETUP_DRY_RUN": "1", **env})
    assert done.returncode == 0, done.stderr
    return [line[2:] for line in done.stdout.splitlines() if line.startswith("+ ")]


def lock_pin(name: str) -> str:
    (pin,) = [line for line in (ROOT / "requirements.txt").read_text().splitlines()
              if line.startswith(f"{name}==")]
    return pin


def pinned_torch() -> str:
    return lock_pin("torch")


def test_by_default_pip_fetches_uv_from_pypi_and_uv_installs_the_lock(tmp_path):
    venv = tmp_path / "venv"
    commands = setup_dry_run(venv)
    assert commands[0] == f"{sys.executable} -m venv {venv}"
    assert commands[1] == f"{venv}/bin/pip install --quiet {lock_pin('uv')}"
    install = commands[2]
    # compiled at install: a read-only sandbox cannot cache bytecode (course/grading/bytecode.py)
    assert install.startswith(
        f"{venv}/bin/uv pip install --quiet --compile-bytecode --python {venv}/bin/python ")
    assert install.endswith(" -r requirements.txt")
    assert not [c for c in commands if "--upgrade pip" in c or " --index-url " in c]


def test_uv_on_path_is_used_as_it_is(tmp_path):
    fake = tmp_path / "bin" / "uv"
    fake.parent.mkdir()
    write_exe(fake, "")
    commands = setup_dry_run(tmp_path / "venv", PATH=f"{fake.parent}{os.pathsep}{without_uv_path()}")
    assert not [c for c in commands if " install --quiet uv==" in c]
    assert commands[-2].startswith(f"{fake} pip install ") and commands[-2].endswith("-r requirements.txt")


def pip_configured(tmp_path: Path, config: str, **env: str) -> dict[str, str]:
    """An environment whose only pip configuration is `config` (a site-wide pip.conf) and `env`."""
    (tmp_path / "xdg" / "pip").mkdir(parents=True)
    (tmp_path / "xdg" / "pip" / "pip.conf").write_text(textwrap.dedent(config))
    base = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "SSL_CERT_FILE"}
    # PIP_CONFIG_FILE too: pip also reads /etc/pip.conf wherever XDG points, after the XDG
    # folders (a host's own `cert = ...` there would win); the file it names is read last
    return {**base, "XDG_CONFIG_DIRS": str(tmp_path / "xdg"), "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PIP_CONFIG_FILE": str(tmp_path / "xdg" / "pip" / "pip.conf"), **env}


CONFIG = """
    [global]
    index-url = https://mirror.invalid/simple
    extra-index-url = file:///a/simple
        file:///b/simple
    find-links = /global/wheels
    constraint = /c/constraints.txt
    cert = /c/ca.pem
    [install]
    find-links = /install/wheels
"""


def test_uv_gets_pips_configured_sources(tmp_path):
    """uv reads no pip configuration: the script passes what `pip config list` reports (here: a
    site-wide pip.conf whose [install] section and an environment variable override [global])."""
    env = pip_configured(tmp_path, CONFIG, PIP_FIND_LINKS="/env/wheels", UV="/fake/uv")
    done = subprocess.run([BASH, str(SETUP), str(tmp_path / "venv")], cwd=ROOT, text=True,
                          capture_output=True, timeout=60,
                          env={**env, "SETUP_DRY_RUN": "1", "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr
    commands = [line[2:] for line in done.stdout.splitlines() if line.startswith("+ ")]
    assert "export SSL_CERT_FILE=/c/ca.pem" in commands
    (install,) = [c for c in commands if c.startswith("/fake/uv pip install")]
    assert install.split(" -r ")[0].endswith(
        " --index-url https://mirror.invalid/simple --extra-index-url file:///a/simple"
        " --extra-index-url file:///b/simple --find-links /env/wheels"
        " --constraint /c/constraints.txt --index-strategy unsafe-best-match"), install


def test_with_no_pip_configuration_uv_gets_no_source_options(tmp_path):
    env = pip_configured(tmp_path, "", UV="/fake/uv")
    done = subprocess.run([BASH, str(SETUP), str(tmp_path / "venv")], cwd=ROOT, text=True,
                          capture_output=True, timeout=60,
                          env={**env, "SETUP_DRY_RUN": "1", "PYTHON": sys.executable})
    (install,) = [line for line in done.stdout.splitlines() if "/fake/uv pip install" in line]
    assert install.endswith(f"--python {tmp_path}/venv/bin/python -r requirements.txt")


def test_installer_pip_installs_requirements_txt_as_pip_resolves_it(tmp_path):
    commands = setup_dry_run(tmp_path / "venv", INSTALLER="pip", UV="/fake/uv")
    assert commands[0].endswith(f"-m venv {tmp_path / 'venv'}")
    installs = [c for c in commands if " install " in c]
    assert installs[0].endswith("install --quiet --upgrade pip")
    assert installs[-1].endswith("/bin/pip install --quiet -r requirements.txt")
    assert not [c for c in commands if "uv" in c.split()[0] or "--index-url" in c]


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_torch_cpu_takes_torch_alone_from_pytorchs_cpu_index_first(tmp_path, installer):
    env = pip_configured(tmp_path, CONFIG, UV="/fake/uv", INSTALLER=installer)
    run = functools.partial(subprocess.run, [BASH, str(SETUP), str(tmp_path / "venv")], cwd=ROOT,
                            text=True, capture_output=True, timeout=60)
    done = run(env={**env, "SETUP_DRY_RUN": "1", "PYTHON": sys.executable, "TORCH": "cpu"})
    installs = [c for c in done.stdout.splitlines() if " install " in c and "--upgrade pip" not in c]
    cpu = [i for i, c in enumerate(installs) if "--index-url https://download.pytorch.org/whl/cpu" in c]
    assert len(cpu) == 1 and installs[cpu[0]].endswith(" " + pinned_torch())
    # the CPU index replaces a configured one (uv takes a single --index-url)
    assert "mirror.invalid" not in installs[cpu[0]]
    # then the rest: torch==2.13.0 is satisfied by 2.13.0+cpu, so nothing replaces it
    assert installs[cpu[0] + 1].endswith("-r requirements.txt")
    # the index can be pointed elsewhere (a mirror)
    mirror = run(env={**env, "SETUP_DRY_RUN": "1", "PYTHON": sys.executable, "TORCH": "cpu",
                      "TORCH_CPU_INDEX": "https://mirror.invalid/cpu"}).stdout
    assert "--index-url https://mirror.invalid/cpu" in mirror


# ------------------------------------------------------------ a download that fails, explained

def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens: an index that cannot be reached."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def set_up(tmp_path: Path, venv: Path, **env: str) -> subprocess.CompletedProcess:
    """scripts/setup_venv.sh for real (no dry run) into `venv`, with no pip configuration but
    `env`, one try per download."""
    env = pip_configured(tmp_path, "", PYTHON=sys.executable, UV_HTTP_RETRIES="0",
                         PIP_RETRIES="1", PIP_TIMEOUT="2", **env)
    return subprocess.run([BASH, str(SETUP), str(venv)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)


def course_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("The set-up stopped: ")]


@pytest.mark.parametrize("index", ["http://127.0.0.1:{port}/whl/cpu", "https://download.invalid/whl/cpu"],
                         ids=["connection refused", "no such host"])
def test_an_unreachable_cpu_only_index_is_explained_in_one_line(tmp_path, index):
    """`make lab TORCH=cpu` where PyTorch's CPU-only index cannot be reached (a proxy, a closed
    network): uv's own error, then one line that says what to try."""
    uv = find_uv()
    if uv is None:
        pytest.skip("no uv here (make venv installs it)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    index = index.format(port=closed_port())
    done = set_up(tmp_path, venv, UV=uv, TORCH="cpu", TORCH_CPU_INDEX=index)
    assert done.returncode != 0
    assert "error" in done.stderr.lower()  # the installer's own words come first
    (line,) = course_lines(done.stderr)
    assert f"PyTorch's CPU-only index ({index}) cannot be reached" in line
    for advice in ("without TORCH=cpu", "TORCH_CPU_INDEX=", "INSTALLER=pip"):
        assert advice in line, line


def test_with_pip_an_unreachable_cpu_only_index_is_explained_too(tmp_path):
    """INSTALLER=pip: pip's words (its retry warnings name the failed connection), then the line."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    closed = f"http://127.0.0.1:{closed_port()}"
    done = set_up(tmp_path, venv, INSTALLER="pip", TORCH="cpu", TORCH_CPU_INDEX=f"{closed}/cpu",
                  PIP_INDEX_URL=f"{closed}/simple")
    assert done.returncode != 0
    (line,) = course_lines(done.stderr)
    assert f"PyTorch's CPU-only index ({closed}/cpu) cannot be reached" in line


def test_an_unreachable_package_index_is_explained_in_one_line(tmp_path):
    """The index pip is configured with (a mirror), unreachable: named, and what to try."""
    uv = find_uv()
    if uv is None:
        pytest.skip("no uv here (make venv installs it)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    mirror = f"http://127.0.0.1:{closed_port()}/simple"
    done = set_up(tmp_path, venv, UV=uv, PIP_INDEX_URL=mirror)
    assert done.returncode != 0
    (line,) = course_lines(done.stderr)
    assert f"the package index ({mirror}) cannot be reached" in line and "INSTALLER=pip" in line


@pytest.mark.parametrize("error,expected", [
    ("error: invalid peer certificate: UnknownIssuer", "certificate of"),
    ("error: No solution found when resolving dependencies", None),
])
def test_a_failed_download_is_explained_by_what_went_wrong(tmp_path, error, expected):
    """A refused certificate gets its own line; a failure that is not the network gets none
    (the installer's message is the explanation)."""
    fake = tmp_path / "bin" / "uv"
    fake.parent.mkdir()
    write_exe(fake, f'echo "{error}" >&2\nexit 2\n')
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    done = set_up(tmp_path, venv, UV=str(fake))
    assert done.returncode == 2 and error in done.stderr
    lines = course_lines(done.stderr)
    assert (lines == []) if expected is None else (len(lines) == 1 and expected in lines[0])


@pytest.mark.parametrize("name,value", [("TORCH", "rocm"), ("INSTALLER", "conda")])
def test_an_unknown_option_is_refused(tmp_path, name, value):
    done = subprocess.run([BASH, str(SETUP), str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, name: value})
    assert done.returncode == 2 and f"{name}={value}: unknown" in done.stderr


def test_a_python_outside_the_supported_range_is_refused_by_name(tmp_path):
    fake = tmp_path / "python3.9"
    write_exe(fake, 'case "$2" in *platform*) echo 3.9.18 ;; *) exit 1 ;; esac\n')
    done = subprocess.run([BASH, str(SETUP), str(tmp_path / "venv")], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHON": str(fake)}, timeout=60)
    assert done.returncode == 1
    assert f"needs Python {SUPPORTED[0]} to {SUPPORTED[-1]} as '{fake}' (found: 3.9.18)" in done.stderr
    assert not (tmp_path / "venv").exists()


def test_make_passes_the_torch_and_installer_options_to_the_set_up(tmp_path):
    lines = make_dry_run("lab", "TORCH=cpu", "INSTALLER=pip", f"VENV={tmp_path / 'v'}")
    assert any("TORCH=cpu INSTALLER=pip bash scripts/setup_venv.sh" in line for line in lines), lines
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
                      "importlib-resources"}
    # make clean never deletes a conda environment
    assert str(env_dir) not in subprocess.run(
        ["make", "-n", "clean"], cwd=ROOT, capture_output=True, text=True,
        env={**os.environ, "CONDA_DEFAULT_ENV": "attention-course", "CONDA_PREFIX": str(env_dir)}).stdout


# ------------------------------------------------------------ the lock, for every Python it names

def script_setting(name: str) -> str:
    return re.search(rf"^{name}=(\S+)$", SETUP.read_text(), re.M).group(1)


SUPPORTED = [f"3.{minor}" for minor in range(int(script_setting("min_python").split(".")[1]),
                                             int(script_setting("max_python").split(".")[1]) + 1)]
PLATFORMS = {  # marker values of a typical machine of each platform PyTorch 2.13 has wheels for
    "linux": {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
              "os_name": "posix"},
    "macos": {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64",
              "os_name": "posix"},
    "windows": {"sys_platform": "win32", "platform_system": "Windows", "platform_machine": "AMD64",
                "os_name": "nt"},
}


def lock_for(environment: dict[str, str]) -> dict[str, str]:
    """requirements.txt's pins whose markers hold in `environment`: {name: version}."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if not line or line[0] in "# ":
            continue
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            name = canonicalize_name(requirement.name)
            assert name not in pins, f"two pins of {name} hold in {environment}"
            (spec,) = requirement.specifier
            pins[name] = spec.version
    return pins


def marker_environment(python: str, platform: str) -> dict[str, str]:
    return {"python_version": ".".join(python.split(".")[:2]), "python_full_version": python,
            "implementation_name": "cpython", "platform_python_implementation": "CPython",
            **PLATFORMS[platform]}


def wanted() -> list[str]:
    """The names requirements.in asks for."""
    from packaging.utils import canonicalize_name

    lines = [line.split("#")[0].strip() for line in (ROOT / "requirements.in").read_text().splitlines()]
    return [canonicalize_name(re.split(r"[=<>!~ ;\[]", line)[0]) for line in lines if line]


# an early and a late release of each Python, and the ones of Debian 12 and this machine
PYTHONS = [f"{v}.0" for v in SUPPORTED] + [f"{v}.20" for v in SUPPORTED] + ["3.11.2", "3.11.7"]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_the_lock_pins_every_package_once_for_every_supported_python(platform):
    for python in PYTHONS:
        pins = lock_for(marker_environment(python, platform))
        missing = [name for name in wanted() if name not in pins]
        assert not missing, f"Python {python} on {platform}: no pin for {missing}"
        assert pins["torch"] == pinned_torch().split("==")[1], python


def test_the_lock_leaves_pytorchs_cuda_libraries_to_the_installer():
    """A CPU torch (TORCH=cpu, a local wheel) must not drag in GBs of NVIDIA libraries: `make
    lock` leaves them out (requirements-excludes.txt), PyPI's CUDA torch pins them itself."""
    text = (ROOT / "requirements.txt").read_text()
    found = re.findall(r"^((?:nvidia-|cuda-|triton)\S*)==", text, re.M)
    assert not found, f"add {found} to requirements-excludes.txt, then `make lock`"


def test_the_versions_the_readmes_name_are_the_ones_set_up_and_locked():
    lowest, highest = SUPPORTED[0], SUPPORTED[-1]
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(rf"^LOCK_PYTHON := {re.escape(lowest)}$", makefile, re.M)
    for readme in ("README.md", "README.zh-CN.md"):
        assert f"Python {lowest}–{highest}" in (ROOT / readme).read_text(), readme


def test_this_environment_is_the_lock_for_this_python():
    """The tests run on exactly the pins that `make lock` chose for this Python."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.markers import default_environment

    if (Path(sys.prefix) / "conda-meta").exists():
        pytest.skip("a conda environment: environment.yml pins the course's packages")
    wrong = {}
    for name, pin in lock_for(default_environment()).items():
        try:
            found = version(name)
        except PackageNotFoundError:
            found = None
        if found is None or found.split("+")[0] != pin:
            wrong[name] = (pin, found)
    assert not wrong, f"(pinned, installed): {wrong}; `make venv` installs the lock"


def find_uv() -> str | None:
    """uv on PATH, or the one `make venv` put beside this Python."""
    beside = Path(sys.executable).parent / "uv"
    return shutil.which("uv") or (str(beside) if beside.exists() else None)


def uv_compile(python: str, platform: str) -> subprocess.Popen:
    """uv resolves the lock for one Python and platform from PyPI, wheels only."""
    return subprocess.Popen(
        [find_uv(), "pip", "compile", "requirements.txt", "--python-version", python, "--python-platform",
         platform, "--only-binary", ":all:", "--no-python-downloads", "--quiet", "-o", os.devnull],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "MACOSX_DEPLOYMENT_TARGET": "14.0"})


@pytest.mark.slow
def test_uv_resolves_the_lock_with_wheels_for_every_supported_python():
    """Each Python the README names on Linux, and the oldest and newest on macOS (Apple silicon)
    and Windows: every pin has a wheel there on PyPI (uv, in parallel: about 10 s idle)."""
    if not find_uv():
        pytest.skip("no uv here (make venv installs it)")
    jobs = {(python, "x86_64-manylinux_2_28"): None for python in SUPPORTED + ["3.11.2"]}
    jobs |= {(python, platform): None for python in (SUPPORTED[0], SUPPORTED[-1])
             for platform in ("aarch64-apple-darwin", "x86_64-pc-windows-msvc")}
    for key in jobs:
        jobs[key] = uv_compile(*key)
    results = {key: (job.wait(timeout=300), job.stdout.read()) for key, job in jobs.items()}
    failed = {key: out for key, (code, out) in results.items() if code}
    if failed and all("No solution found" not in out for out in failed.values()):
        pytest.skip(f"PyPI not reachable: {next(iter(failed.values()))[-300:]}")
    assert not failed, failed


OLDEST_PYTHON = os.environ.get("COURSE_OLDEST_PYTHON", "/usr/bin/python3")


@pytest.mark.slow
def test_a_real_install_on_the_operating_systems_own_python(tmp_path):
    """What a new user of Debian 12 does (its python3 is 3.11.2): `make venv PYTHON=/usr/bin/python3`
    installs the lock's pins for that Python, and a lesson passes strict nbval on it. (Another
    interpreter: COURSE_OLDEST_PYTHON=/path/to/python.) The script's default installer (uv: the
    test environment's own) with pip's configured sources; pip's path is the dry runs above."""
    python = Path(OLDEST_PYTHON)
    if not python.exists():
        pytest.skip(f"no {python} here")
    found = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                           capture_output=True, text=True).stdout.strip()
    if ".".join(found.split(".")[:2]) not in SUPPORTED:
        pytest.skip(f"{python} is Python {found}, outside {SUPPORTED[0]}-{SUPPORTED[-1]}")
    venv = tmp_path / "venv"
    done = subprocess.run([BASH, str(SETUP), str(venv)], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200, env={**os.environ, "PYTHON": str(python)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = subprocess.run([venv / "bin" / "python", "-c", textwrap.dedent("""
        import json, importlib.metadata as m
        from packaging.markers import default_environment
        print(json.dumps([default_environment(), {d.name.lower(): d.version for d in m.distributions()}]))
    """)], capture_output=True, text=True, check=True).stdout
    environment, installed = json.loads(report)
    from packaging.utils import canonicalize_name

    installed = {canonicalize_name(k): v.split("+")[0] for k, v in installed.items()}
    wrong = {name: (pin, installed.get(name)) for name, pin in lock_for(environment).items()
             if installed.get(name) != pin}
    assert not wrong, f"Python {found}: (pinned, installed) {wrong}"
    # bytecode compiled at install, before anything imports it: a grading sandbox cannot cache it
    uncompiled = subprocess.run([venv / "bin" / "python", "-c", textwrap.dedent("""
        import importlib.util, os, sysconfig
        site = sysconfig.get_paths()["purelib"]
        sources = [os.path.join(site, *p.split("/")) for p in (
            "torch/nn/modules/transformer.py", "numpy/linalg/_linalg.py", "torch/testing/_comparison.py")]
        print([s for s in sources if not os.path.exists(importlib.util.cache_from_source(s))])
    """)], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert uncompiled.stdout.strip() == "[]", uncompiled.stdout
    from course.workspace import solutions_workspace

    workspace = solutions_workspace(tmp_path / "course")
    lesson = subprocess.run(
        [venv / "bin" / "python", "-m", "pytest", "--nbval", "notebooks/00_start_here.ipynb",
         "--nbval-sanitize-with", "notebooks/nbval_sanitize.cfg", "-p", "no:cacheprovider", "-q",
         "--rootdir", str(workspace), "-c", os.devnull],
        cwd=workspace, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(workspace), "PATH": f"{venv}/bin{os.pathsep}{os.environ['PATH']}"})
    assert lesson.returncode == 0, lesson.stdout[-4000:]
