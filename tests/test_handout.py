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
    assert re.search(r"\d+ passed", done.stdout) and not re.search(r"\d+ failed", done.stdout)


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


# -------------------------------------------------------------- the release is an allow-list

def _git_course(folder: Path) -> Path:
    """A tiny git checkout with the class lying in it, as the guide once laid it out."""
    import subprocess

    for name, text in {"course/a.py": "A = 1\n", "notebooks/00.ipynb": "{}\n", "Makefile": ""}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "-C", str(folder), "add", "-A"], check=True)
    for name in ("collected/ada/exercises/softmax.py", "roster.csv", "seed", "shard-1.log",
                 "grades/gradebook.csv", "course/notes.txt"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("the class's\n")
    (folder / "course" / "link.py").symlink_to(folder / "seed")
    return folder


def test_the_release_is_what_git_tracks(tmp_path):
    """After grading, `make handout` wrote 468 files instead of 193: the deny-list
    let every submission, the roster and the seed through."""
    from course.handout import MANIFEST, grader_context, release_files, unlisted

    course = _git_course(tmp_path / "course")
    assert release_files(course) == ["Makefile", "course/a.py", "notebooks/00.ipynb"]
    context = grader_context(tmp_path / "context", source=course)
    copied = sorted(p.relative_to(context).as_posix() for p in context.rglob("*") if p.is_file())
    assert copied == [".handout", MANIFEST, "Makefile", "course/a.py", "notebooks/00.ipynb"]
    assert unlisted(context) == []
    # a copy without git: its MANIFEST is the list; something dropped in is not in the list
    again = grader_context(tmp_path / "again", source=context)
    assert (again / MANIFEST).read_text() == (context / MANIFEST).read_text()
    (context / "roster.csv").write_text("dropped in later\n")
    assert release_files(context) == [".handout", "Makefile", "course/a.py", "notebooks/00.ipynb"]
    assert unlisted(context) == ["roster.csv"]


def test_a_folder_with_no_list_is_refused(tmp_path):
    from course.handout import MANIFEST, ReleaseError, main, release_files

    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.py").write_text("A = 1\n")
    with pytest.raises(ReleaseError, match="neither a git checkout of the course nor a copy"):
        release_files(tmp_path / "loose")
    (tmp_path / "loose" / MANIFEST).write_text("a.py\n../../etc/passwd\n")
    with pytest.raises(ReleaseError, match="no path inside the course"):
        release_files(tmp_path / "loose")
    assert main(["--check-context", str(tmp_path / "loose")]) != 0  # the Dockerfile's guard
    (tmp_path / "loose" / MANIFEST).unlink()
    assert main(["--check-context", str(tmp_path / "loose")]) == 1


def test_the_handout_of_this_course_is_its_tracked_files(release):
    """The release: the tracked files less what it leaves out, the stubs, its README and
    pytest.ini, its marker and MANIFEST; nothing git does not track."""
    from course.handout import MANIFEST, left_out, release_files

    made = sorted(p.relative_to(release).as_posix() for p in release.rglob("*")
                  if p.is_file() and not p.is_symlink() and ".venv" not in p.parts
                  and "__pycache__" not in p.parts
                  # what runs in the release write there (make check's cache): ignored output
                  and p.relative_to(release).parts[0] != "build")
    assert made == sorted({n for n in release_files(ROOT) if not left_out(n)}
                          | {".handout", MANIFEST, "exercises/__init__.py"}
                          | {p.relative_to(release).as_posix() for p in release.glob("exercises/*.py")})
    assert (release / MANIFEST).read_text().splitlines() == [m for m in made if m != MANIFEST]
