"""`make lab` serves JupyterLab with lesson 00: start it on loopback, fetch the page, stop it."""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from course import ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


@contextmanager
def make_lab(folder: Path, tmp_path: Path, *make_options: str):
    """`make lab` in `folder` on a free loopback port, without token; yields the base URL once
    lesson 00 is served, and ends make and JupyterLab afterwards."""
    port = free_port()
    args = (f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.port_retries=0 "
            "--IdentityProvider.token= --ServerApp.password=")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTER_DATA_DIR": str(tmp_path / "data")}  # notebook signatures: this test's own
    log = open(tmp_path / "lab.log", "w+")
    server = subprocess.Popen(["make", *make_options, "lab", f"LAB_ARGS={args}"], cwd=folder,
                              env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                fetch(f"{base}/api/contents/notebooks/00_start_here.ipynb")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"JupyterLab did not come up in {folder}:\n{log.read()[-3000:]}")
                time.sleep(0.5)
        yield base
    finally:
        stop(server)
        log.close()


@pytest.mark.slow
def test_make_lab_serves_lesson_zero(tmp_path):
    with make_lab(ROOT, tmp_path) as base:
        status, page = fetch(f"{base}/lab/tree/notebooks/00_start_here.ipynb")
        assert status == 200 and "JupyterLab" in page
        status, body = fetch(f"{base}/api/contents/notebooks/00_start_here.ipynb")
        notebook = json.loads(body)["content"]
        assert status == 200
        assert notebook["cells"][0]["source"].startswith("# Lesson 00")
        status, body = fetch(f"{base}/api/kernelspecs")
        assert "python3" in json.loads(body)["kernelspecs"]
        # the lessons are trusted, so JupyterLab draws their widgets from the stored state
        for lesson in ("05_global_attention", "zh/05_global_attention"):
            status, body = fetch(f"{base}/api/contents/notebooks/{lesson}.ipynb")
            cells = json.loads(body)["content"]["cells"]
            widget = [c for c in cells if "memory_explorer()" in c["source"]]
            assert widget and widget[0]["metadata"]["trusted"] is True, lesson


def stop(process: subprocess.Popen) -> None:
    """End the make process and the JupyterLab under it (one process group)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue


# the Chinese quick start first makes the Chinese handout (its stubs and messages in Chinese)
ZH_HANDOUT = ["make handout OUT=../attention-zh LANG=zh", "cd ../attention-zh"]


@pytest.mark.parametrize("readme,first", [("README.md", ["make lab", "make check"]),
                                          ("README.zh-CN.md", [*ZH_HANDOUT, "make lab LANG=zh",
                                                               "make check LANG=zh"])])
def test_each_readme_opens_with_a_students_quick_start(readme, first):
    """Clone, `make lab` (lesson 00 opens), `make check`: the first commands a reader meets (in
    Chinese, in the Chinese handout)."""
    text = (ROOT / readme).read_text()
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()]
    assert commands[0].startswith("git clone https://github.com/") and commands[0].endswith(
        "attention-course && cd attention-course"), commands
    assert commands[1:] == first
    lab_line = first_block.splitlines()[1 + first.index(next(c for c in first if "make lab" in c))]
    assert "00" in lab_line  # make lab's comment names lesson 00
    assert len(text[:text.index("```bash")].splitlines()) <= 8, "the quick start comes first"
