"""The student release (`make handout`): in a fresh one, `make check` and `make test` work and
nothing a student reads mentions a file the release does not have."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from course import ROOT
from course.handout import build, problems, student_makefile

pytestmark = pytest.mark.slow

# what only the instructors' copy has; a student's copy must not send them looking for it
ABSENT = re.compile(r"solutions/|instructors\.md|CONTRIBUTING|make (stubs|reference|notebooks|grade|"
                    r"handout|screenshots|lock)\b|docs/|\.ci/|tests/test_")
STUDENT_FACING = ["README.md", "Makefile", "notebooks/*.ipynb", "notebooks/src/*.py",
                  "exercises/*.py", "data/**/*.md", "course/release/tests/*.py"]


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    dest = build(tmp_path_factory.mktemp("handout") / "attention-course")
    # the release's `make` reuses the course's environment instead of building one (a minute and
    # a download); -o keeps make from re-running the set-up because the copy's files are newer
    (dest / ".venv").symlink_to((ROOT / ".venv").resolve())
    return dest


def make(release: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", *args],
                          cwd=release, capture_output=True, text=True, timeout=timeout)


def test_the_release_is_complete(release):
    assert problems(release) == []
    assert not (release / "solutions").exists() and not (release / "docs").exists()
    assert (release / "README.md").read_text() == (ROOT / "course/release/README.md").read_text()


def test_nothing_in_the_release_mentions_what_it_lacks(release):
    found = []
    for pattern in STUDENT_FACING:
        for path in sorted(release.glob(pattern)):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if ABSENT.search(line):
                    found.append(f"{path.relative_to(release)}:{number}: {line.strip()[:120]}")
    assert found == [], "\n".join(found)


def test_make_check_in_the_release(release):
    done = make(release, "check", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "00.batched_dot" in done.stdout and "TODO" in done.stdout
    assert "0 of" in done.stdout.splitlines()[-1]  # untouched stubs: nothing passes yet


def test_make_test_in_the_release(release):
    done = make(release, "test", "PYTEST_ARGS=-q -p no:cacheprovider")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"\d+ passed", done.stdout) and "failed" not in done.stdout


def test_the_release_keeps_the_students_targets_only(release):
    text = (release / "Makefile").read_text()
    for target in ("lab", "test", "check", "playground", "venv", "clean"):
        assert re.search(rf"^{target}:", text, re.M), target
    assert not re.search(r"^(stubs|reference|notebooks|grade|handout|screenshots):", text, re.M)


def test_make_lab_in_the_release_serves_lesson_zero(release, tmp_path):
    import json

    from tests.test_lab import fetch, make_lab

    with make_lab(release, tmp_path, "-o", ".venv/.installed") as base:
        status, body = fetch(f"{base}/api/contents/notebooks/00_start_here.ipynb")
        assert status == 200
        assert json.loads(body)["content"]["cells"][0]["source"].startswith("# Lesson 00")


def test_student_makefile_drops_a_rule_with_its_comment():
    text = ("# about a\n.PHONY: a b\na: x\n\tdo a\n\n# about b\nb: a\n\tdo b\n\tmore b\n\n"
            "# tail\nc:\n\tdo c\n")
    assert student_makefile(text, drop={"b"}) == "# about a\n.PHONY: a\na: x\n\tdo a\n\n# tail\nc:\n\tdo c\n"
