"""`make grade` on a hostile class (tests/hostile/): cheats, crashes, and students who attack the
grader and the other students, the instructor's files and the sandbox as a whole. Graded once
(lessons 00-02, two students at a time) from a class folder beside a git checkout of the course;
inside the checkout lies a copy of the class as an old layout put it (collected/, roster.csv,
seed, a shard's log, an OUT under build/), which no sandbox and no handout may see. The whole
gradebook is compared with the one expected,
checksums show that nothing outside each student's own sandbox changed, a spy shows what a
sandbox sees, and the OUT is merged as a shard (its records verified). Timings are printed (run
with -s to see them).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from course import ROOT
from course.grading.names import md_text, shown
from course.handout import build as build_handout
from tests.hostile.classroom import (CLASS_FILES, COLUMNS, CSV_NAMES, EXPECTED, FAKE_LINE, LATIN1,
                                     LESSONS, TMP_MIB, build_class, course_checkout)

CELL_TIMEOUT = 30     # seconds; the endless loop and the keepalives cost one of these. Wall
# time: an honest check cell takes a few seconds idle, and under a busy suite (the other worker's
# browser tests) more than 10, which made honest students time out
CPU_LIMIT = 15        # CPU-seconds per process: the endless loop reaches it before the cell's
# wall time on a free core. Not less: an honest row here costs 0.8-1.3 CPU-seconds beside the
# rest of this class on a loaded machine (2.4-3.3 before the environment's bytecode was compiled
# for the sandboxes), and a slower machine charges more: on a slow CI machine a limit of 4 failed
# every honest row. The spinners are stopped by the grader's watch on the sandbox first
MEMORY_MIB = 3000     # the huge allocation asks for 6 GiB
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800), pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap")]


def tree_digest(folder: Path, skip=("__pycache__",)) -> dict[str, str]:
    """Relative path -> sha256 (symlinks by their target), for every entry under folder."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if any(part in skip for part in path.relative_to(folder).parts):
            continue
        if path.is_symlink():
            found[relative] = "link:" + os.readlink(path)
        elif path.is_file():
            with open(path, "rb") as handle:
                found[relative] = hashlib.file_digest(handle, "sha256").hexdigest()
    return found


def _pwned_in_root(course: Path) -> list[Path]:
    return [p for root in (ROOT, course) for p in (
        root / "PWNED.txt", root / "solutions" / "PWNED.txt", root / "reports" / "PWNED.md")
        if p.exists()]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    course = course_checkout(base / "course")
    subs, out, work = base / "class" / "collected", base / "class" / "grades", base / "work"
    work.mkdir()
    build_class(subs, out, work, course)
    seed = base / "class" / "seed"
    shutil.copy2(course / "seed", seed)
    # the same class inside the course, as an old layout put it: what no sandbox may see
    shutil.copytree(subs, course / "collected", symlinks=True)
    (course / "build" / "grades").mkdir(parents=True)
    (course / "build" / "grades" / "gradebook.csv").write_text("student,total\nperfect,24\n")
    before = tree_digest(subs, skip=())
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(subs), "--out", str(out),
         "--jobs", "2", "--lessons", *LESSONS, "--cell-timeout", str(CELL_TIMEOUT),
         "--cpu-limit", str(CPU_LIMIT), "--memory-limit", str(MEMORY_MIB), "--tmp-limit",
         str(TMP_MIB), "--workdir", str(work), "--keep", "--seed-file", str(seed)],
        cwd=course, env={**os.environ, "PYTHONPATH": str(course)}, capture_output=True,
        text=True, timeout=1800)
    seconds = time.perf_counter() - start
    print(done.stdout[-6000:], done.stderr[-3000:])
    print(f"hostile class of {len(EXPECTED)} graded in {seconds:.0f} s with --jobs 2")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    time.sleep(2)  # anything a student left running would keep writing now
    pwned = _pwned_in_root(course)
    for path in pwned:
        path.unlink()
    records = {json.loads(p.read_text(encoding="utf-8"))["student"]: json.loads(
        p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")}
    yield {"out": out, "subs": subs, "work": work, "before": before, "pwned_root": pwned,
           "stdout": done.stdout, "stderr": done.stderr, "records": records, "course": course,
           "seed": seed}
    shutil.rmtree(work, ignore_errors=True)


def _report(hostile, student: str) -> str:
    name = hostile["records"][student]["report_name"]
    return (hostile["out"] / "reports" / f"{name}.md").read_text(encoding="utf-8")


def test_hostile_gradebook(hostile):
    with open(hostile["out"] / "gradebook.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", "status", "total", "max", *COLUMNS, "flags"]
    got = {r["student"]: (r["status"], [int(r[c]) for c in COLUMNS], r["flags"]) for r in rows}
    assert got == {CSV_NAMES.get(k, k): v for k, v in EXPECTED.items()}
    for r in rows:
        assert r["total"] == str(sum(got[r["student"]][1])) and r["max"] == "8"
    assert "symlinked_student (a symlink)" in hostile["stderr"]


def test_names_cannot_collide_or_inject(hostile):
    """Harms 3 to 5: one report per folder; no formula and no escape sequence leaves the grader."""
    records, out = hostile["records"], hostile["out"]
    names = [r["report_name"] for r in records.values()]
    assert len(set(names)) == len(names) == len(EXPECTED)
    assert len({n.casefold() for n in names}) == len(names)
    for student, record in records.items():  # each report, record and raw folder is its own
        assert _report(hostile, student).startswith(f"# {md_text(student)}: ")
        assert (out / "raw" / record["report_name"]).is_dir()
    assert sorted(p.name for p in (out / "raw").iterdir()) == sorted(names)
    book = (out / "gradebook.csv").read_text(encoding="utf-8")
    for line in book.splitlines()[1:]:
        assert not re.match(r'^"?[=+\-@\t\r]', line), line
    assert "\x1b" not in book and "\x1b" not in hostile["stdout"] + hostile["stderr"]
    assert shown(FAKE_LINE) in hostile["stdout"]  # printed, escaped
    assert not any("\x1b" in p.read_text(encoding="utf-8") for p in (out / "reports").iterdir())


def test_judge_bomb_and_keepalives_are_stopped(hostile):
    """Harms 1 and 2, and the two limits; the seconds each student cost are printed."""
    bomb = _report(hostile, "judge_bomb")
    assert "output has 4611686018427387904 elements, expected" in bomb
    for student in ("keepalive_fast", "keepalive_slow"):
        assert "TIMEOUT" in _report(hostile, student), student
    assert "the hidden run of this check ran past" in _report(hostile, "keepalive_hidden")
    assert "CPU-time limit" in _report(hostile, "cpu_spinner")
    filled = re.search(r"filled /tmp with (\d+) MiB and the working folder with (\d+) MiB",
                       (hostile["out"] / "raw" / hostile["records"]["fills_tmp"]["report_name"]
                        / "sandbox-output.txt").read_text(errors="replace"))
    assert filled and 0 < int(filled[1]) <= TMP_MIB and 0 < int(filled[2]) <= TMP_MIB, filled
    seconds = {s: r["seconds"] for s, r in hostile["records"].items()}
    for student in ("perfect", "judge_bomb", "keepalive_fast", "keepalive_slow",
                    "keepalive_hidden", "cpu_spinner", "fills_tmp", "protocol_garbage"):
        print(f"{student:>18}: {seconds[student]:6.1f} s")


def test_nothing_outside_a_sandbox_changed(hostile):
    out, subs = hostile["out"], hostile["subs"]
    assert tree_digest(subs, skip=()) == hostile["before"], "a file under SUBMISSIONS changed"
    assert not hostile["pwned_root"], f"a student wrote into the repository: {hostile['pwned_root']}"
    for path in out.rglob("*"):
        assert "PWNED" not in path.name, path
        if path.is_file() and path.suffix in (".md", ".csv", ".json"):
            assert "PWNED = 1" not in path.read_text(encoding="utf-8"), path
    pristine = next(hostile["work"].glob("grade-*/pristine"))
    fresh = build_handout(hostile["work"] / "fresh", source=hostile["course"])
    fresh_digest = {k: v for k, v in tree_digest(fresh).items() if not k.startswith("course/grading")}
    assert tree_digest(pristine) == fresh_digest, "the pristine copy changed"
    assert not list(hostile["work"].glob("PWNED*"))


def test_hostile_reports_say_why(hostile):
    def report(student):
        return _report(hostile, student)

    records = hostile["records"]
    assert report("perfect").count("confirmed on hidden inputs): 1 / 1") == 8
    assert records["先生A"]["report_name"] != records["学生A"]["report_name"]
    assert records["perfect"]["report_name"] == "perfect"
    assert "NOT IMPLEMENTED YET: 00.batched_dot" in report("untouched_stubs")
    bugs = report("one_bug_per_lesson")
    assert "FAIL 00.batched_dot, case" in bugs and "hint:" in bugs
    assert "SyntaxError" in report("syntax_error") and "exercises/softmax.py" in report("syntax_error")
    assert "TIMEOUT" in report("infinite_loop")
    assert "IndexError" in report("import_exception")
    assert "allocate" in report("huge_allocation")
    assert "NaN" in report("nan_outputs")
    assert "kernel died" in report("kills_kernel")
    misnamed = report("misnamed_files")
    assert "Softmax.py (taken as a helper module" in misnamed
    assert "softmax (1).py (not a module name; did you mean exercises/softmax.py?)" in misnamed
    fake = report("ships_fake_solutions")
    assert "softmax.py (a symlink)" in fake and "solutions/ (only exercises/*.py count)" in fake
    for cheat in ("cheat_patch_check", "cheat_patch_torch"):
        assert "PASS in the notebook, not confirmed on hidden inputs" in report(cheat), cheat
    # recorded outputs replayed: no gradient reaches the inputs, so the notebook's check fails
    assert "FAIL 00.batched_dot, case 'gradients" in report("cheat_reference_data")
    assert "no solutions found" in report("cheat_walk_to_solutions")
    assert "kernel died" in report("cheat_pass_then_exit")
    assert len(report("flood_of_output")) < 20_000
    assert (hostile["out"] / "raw" / "flood_of_output" / "sandbox-output.txt").stat().st_size < 2 << 20
    assert "UNSAFE" not in report("perfect")


# ----------------------------------------------------- the instructor's files, the sandbox

def _spy(hostile) -> dict:
    log = (hostile["out"] / "raw" / "spy" / "sandbox-output.txt").read_text(errors="replace")
    line = next(line for line in log.splitlines() if line.startswith("SPY "))
    return json.loads(line[len("SPY "):])


def test_the_spy_finds_no_classmate_no_roster_no_seed(hostile):
    """The grader's pristine copy came from whatever lay in the course folder, so
    every sandbox's /course held the collected class, the roster and the seed."""
    seen, course = _spy(hostile), hostile["course"]
    text = json.dumps(seen, ensure_ascii=False)
    seed = (course / "seed").read_text().strip()
    secrets = [seed, "roster", "collected", "shard-1", "grades", str(course), str(hostile["work"]),
               "cheat_harm_others", "keepalive_fast", "先生A", "fork_storm", "Ann_Lee"]
    assert [s for s in secrets if s in text] == []
    pristine = next(hostile["work"].glob("grade-*/pristine"))
    handout = sorted(p.relative_to(pristine).as_posix() for p in pristine.rglob("*")
                     if p.is_file() and "__pycache__" not in p.parts)
    assert seen["release"] == handout  # the release and the student's exercises/, nothing else
    assert not {"collected", "roster.csv", "seed", "shard-1.log", "build"} & set(
        seen["parents"].get("/course", []))
    assert len(seen["proc"]) <= 4, seen["proc"]  # its own sandbox's processes only
    assert seen["dev_write"][1] == "Read-only file system"              # /dev is read-only
    assert seen["shm"][0] <= 16 and seen["shm"][1] == "No space left on device", seen["shm"]


def test_a_class_inside_the_course_is_refused_and_left_out(hostile):
    """The class lives beside the course: a grading run pointed inside it is refused before
    anything is graded, with the fix; a handout made from a course folder that holds a class
    holds none of it."""
    course = hostile["course"]
    refused = subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(course / "collected"),
         "--out", str(hostile["work"] / "never"), "--seed-file", str(course / "seed")],
        cwd=course, env={**os.environ, "PYTHONPATH": str(course)}, capture_output=True, text=True,
        timeout=300)
    assert refused.returncode != 0 and "lies inside the course" in refused.stderr, refused.stderr
    assert "SUBMISSIONS=../class/collected" in refused.stderr
    assert not (hostile["work"] / "never").exists()
    handout = build_handout(hostile["work"] / "handout-from-a-class-folder", source=course)
    names = {p.relative_to(handout).parts[0] for p in handout.rglob("*")}
    assert not names & {"collected", "seed", "build", *CLASS_FILES}, names


def test_a_name_that_is_no_utf8_is_one_row(hostile):
    """A Latin-1 folder name crashed the class (every student after it lost), and its sparse
    300 MB __init__.py was read whole."""
    record = hostile["records"][LATIN1]
    assert record["report_name"] == "caf_~dafd66c0b989"
    report = _report(hostile, LATIN1)
    assert report.startswith("# caf\\\\xe9: 8 / 8 points")  # the backslash escaped in Markdown
    assert "exercises/r\\xe9sum\\xe9.py (not a module name)" in report
    assert "exercises/__init__.py (the course's own is used)" in report
    assert "caf\\xe9,ok,8,8," in (hostile["out"] / "gradebook.csv").read_text(encoding="utf-8")


def test_a_process_storm_is_bounded(hostile):
    """As root, RLIMIT_NPROC was ignored (100 of 100 forks) and a tree of spinners
    had no bound but each process's own CPU time."""
    log = (hostile["out"] / "raw" / "fork_storm" / "sandbox-output.txt").read_text(errors="replace")
    forked = re.search(r"STORM forked (\d+) of 400 \((.*)\)", log)
    if forked:  # (a machine busy enough may see the crowd of fresh forks, and stop it, first)
        assert int(forked[1]) < 64 and forked[2] == "Resource temporarily unavailable", log
    assert "the grader stopped the sandbox" in log or "TIMEOUT" in _report(hostile, "fork_storm")
    print(f"fork_storm: {forked and forked[1]} forks, {hostile['records']['fork_storm']['seconds']} s")


def test_merge_verifies_what_a_shard_says(hostile, tmp_path):
    """An edited record (999 points) merged as 999/8, and a report name such as
    ../../../X wrote outside OUT."""
    from course.grading.merge import MergeError, merge

    part = tmp_path / "part"
    shutil.copytree(hostile["out"], part, symlinks=True)
    merged = merge([part], tmp_path / "merged", seed_file=hostile["seed"])
    assert len(merged) == len(EXPECTED)
    assert (tmp_path / "merged" / "gradebook.csv").read_text(encoding="utf-8") == \
        (hostile["out"] / "gradebook.csv").read_text(encoding="utf-8")
    record = part / "students" / "perfect.json"
    honest = record.read_text(encoding="utf-8")
    forged = json.loads(honest)
    forged["total"] = 999.0  # the MAC it carries is the honest record's
    record.write_text(json.dumps(forged), encoding="utf-8")
    with pytest.raises(MergeError, match="perfect.json .fails its MAC"):
        merge([part], tmp_path / "merged")
    escape = json.loads(honest)
    escape["report_name"] = "../../../X"
    from course.grading import records as rec

    record.write_text(rec.dumps(rec.signed(escape, rec.out_key(part))), encoding="utf-8")
    with pytest.raises(MergeError, match="perfect.json .its report name is not its folder's"):
        merge([part], tmp_path / "merged")
    assert not (tmp_path / "X.json").exists() and not (tmp_path / "X.md").exists()


# --------------------------------------------------- the seed's full strength (no grading run)

SEEDS = (738105292638472651, 2**62 - 12345, 4242424242)


def _plain(value):
    """A draw as plain data: tensors as shape, dtype and values (meta tensors: no values)."""
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), str(value.dtype), None if value.is_meta else value.tolist())
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _same_cases(first: list[dict], second: list[dict]) -> bool:
    return _plain(first) == _plain(second)


def test_every_bit_of_the_seed_changes_every_checks_hidden_cases():
    """The hidden cases had 32 bits of the seed: (seed * 1000003 + crc32(id)) mod 2**63, of
    which torch's generator keeps the low 32 bits, so seeds 2**32 apart drew the same cases
    (and 2**30 of the 62-bit seeds the grader draws drew the public ones)."""
    from course.checks import all_checks
    from course.grading.hidden import confirm as hidden

    first, second = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5 + 2**32)
    assert torch.equal(torch.randn(4, generator=first), torch.randn(4, generator=second))
    checks = all_checks()
    for seed in SEEDS:
        derived = {c: hidden.generator_seed(seed, c) for c in checks}
        for bit in range(63):
            flipped = seed ^ (1 << bit)
            assert all(hidden.generator_seed(flipped, c) != derived[c] for c in checks), (seed, bit)
    drawn = {c: hidden.draw_cases(check, SEEDS[0]) for c, check in checks.items()}
    for bit in (0, 31, 32, 61):  # the bits the old derivation dropped, and the top ones
        for c, check in checks.items():
            assert not _same_cases(drawn[c], hidden.draw_cases(check, SEEDS[0] ^ (1 << bit))), (c, bit)


def test_no_seed_the_grader_accepts_draws_the_public_cases(monkeypatch):
    """The public rehearsal's cases ship with the course; a seed whose generators meet theirs is
    refused (shown with the hash cut to 8 bits, where such a seed is found at once)."""
    from course.checks import all_checks
    from course.confirm.public import PUBLIC_SEED, load
    from course.grading.hidden import confirm as hidden
    from course.grading.outdir import OutError, check_seed

    checks, public = all_checks(), {e["id"]: e["cases"] for e in load()}
    assert all(_same_cases(hidden.draw_cases(checks[c], PUBLIC_SEED), cases)  # the comparison
               for c, cases in public.items())
    for seed in (PUBLIC_SEED + 2**32, PUBLIC_SEED + 2**40, *SEEDS):  # the first two drew them
        check_seed(seed)
        for c, cases in public.items():
            assert not _same_cases(hidden.draw_cases(checks[c], seed), cases), (seed, c)
    with pytest.raises(OutError, match="no secret"):
        check_seed(PUBLIC_SEED)
    real = hidden.generator_seed
    monkeypatch.setattr(hidden, "generator_seed", lambda seed, check: real(seed, check) & 0xFF)
    colliding = next(s for s in range(10_000) if hidden.public_collisions(s))
    with pytest.raises(OutError, match=r"no secret: it draws the hidden cases of \S+"):
        check_seed(colliding)


# ----------------------------------- a class graded on one job slot (tests/hostile/kernel.py)

def _grade(subs: Path, out: Path, *extra: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "course.grading", "--submissions", str(subs), "--out", str(out),
         *extra], cwd=cwd, env={**os.environ, "PYTHONPATH": str(cwd)}, capture_output=True,
        text=True, timeout=1800)


def _rows(out: Path) -> dict[str, tuple[str, int]]:
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as handle:
        return {r["student"]: (r["status"], int(float(r["total"]))) for r in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def slot_class(tmp_path_factory):
    """Graded one student at a time: every sandbox on one job slot (as root: one uid)."""
    from tests.hostile import kernel

    base = tmp_path_factory.mktemp("slot-class")
    subs, out, work = base / "class" / "collected", base / "class" / "grades", base / "work"
    work.mkdir()
    kernel.build(subs)
    roster = base / "class" / "roster.csv"
    roster.write_text("folder,lms_id,email,name\nada,4211,ada@example.edu,Ada\n"
                      "b_replay,4212,b@example.edu,Bea\n")
    seed = base / "class" / "seed"
    seed.write_text("738105292638472651\n")
    seed.chmod(0o600)
    options = ["--jobs", "1", "--lessons", "00", "--memory-limit", str(kernel.MEMORY_MIB),
               "--tmp-limit", str(kernel.TMP_MIB), "--workdir", str(work), "--seed-file",
               str(seed)]
    start = time.perf_counter()
    done = _grade(subs, out, *options, "--roster", str(roster))
    print(done.stdout[-4000:], done.stderr[-3000:])
    print(f"slot class of {len(kernel.EXPECTED)} graded in {time.perf_counter() - start:.0f} s")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    records = {json.loads(p.read_text(encoding="utf-8"))["student"]: json.loads(
        p.read_text(encoding="utf-8")) for p in (out / "students").glob("*.json")}
    yield {"subs": subs, "out": out, "work": work, "seed": seed, "roster": roster,
           "records": records, "options": options, "stderr": done.stderr, "kernel": kernel}
    shutil.rmtree(work, ignore_errors=True)


def _raw(found, student: str, name: str = "sandbox-output.txt") -> str:
    folder = found["out"] / "raw" / found["records"][student]["report_name"]
    return (folder / name).read_text(errors="replace")


def _said(log: str, tag: str) -> list[dict]:
    return [json.loads(line[len(tag) + 1:]) for line in log.splitlines() if line.startswith(tag + " ")]


def test_slot_class_gradebook(slot_class):
    assert _rows(slot_class["out"]) == slot_class["kernel"].EXPECTED


def test_a_pair_on_one_slot_shares_nothing(slot_class):
    """A key left in the job slot's uid keyring by one student's sandbox was read by the
    next student graded on that slot (its payload, and its description in /proc/keys)."""
    stashed = _said(_raw(slot_class, "a_stash"), "STASH")
    assert stashed, "the stash ran"
    for said in stashed:  # the keyring and System V IPC refused, the files private
        assert said["key"] == said["shm"] == said["msg"] == "Operation not permitted", said
    found = _said(_raw(slot_class, "b_replay"), "REPLAY")
    assert found and all(f == found[0] for f in found)
    assert found[0] == {"/proc/keys": "Permission denied", "keyctl": "Operation not permitted",
                        "keys": [], "shm": "Operation not permitted",
                        "msg": "Operation not permitted",
                        "/dev/shm/pair": "No such file or directory",
                        "/tmp/pair": "No such file or directory",
                        "pair": "No such file or directory",
                        "abstract socket": "Connection refused"}
    assert slot_class["records"]["b_replay"]["total"] == 0


def test_memory_outside_every_limit_is_refused_or_counted(slot_class):
    """Two students held 3 GiB each under a 1 GiB limit (System V segments and memfds, counted
    by nothing), and scored."""
    held = _said(_raw(slot_class, "c_hoards_kernel"), "HOARD")
    assert held and held[0] == {"memfd": "Operation not permitted",
                                "sysv": "Operation not permitted",
                                "shared": "Operation not permitted",
                                "/dev/zero": "Permission denied"}, held
    log = _raw(slot_class, "d_hoards_files")
    assert "the grader stopped the sandbox" in log and "files in memory" in log, log[-2000:]
    report = (slot_class["out"] / "reports" / "d_hoards_files.md").read_text(encoding="utf-8")
    assert "status memory-limit" in report and "more memory than its limit" in report


def test_a_kill_from_inside_is_reported_as_what_it_is(slot_class):
    """A process group that killed itself was reported as a CPU timeout and tried again."""
    record = slot_class["records"]["e_kills_its_group"]
    assert record["status"] == "crashed"
    message = record["checks"][0]["message"]
    assert "killed by SIGKILL, sent from inside its sandbox" in message, message
    assert "TIMEOUT" not in message and "CPU" not in message


def _rendered(text: str):
    """markdown-it's tokens of `text` (CommonMark, raw HTML on: what an instructor's viewer
    does), flattened."""
    from markdown_it import MarkdownIt

    found = []

    def walk(tokens):
        for token in tokens:
            found.append(token)
            walk(token.children or [])
    walk(MarkdownIt("commonmark").parse(text))
    return found


def _inert(text: str, headings: int) -> list:
    tokens = _rendered(text)
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")], text
    assert not [t for t in tokens if t.type == "link_open"], text
    assert len([t for t in tokens if t.type == "heading_open"]) == headings, text
    return tokens


def test_student_text_cannot_forge_the_instructors_files(slot_class):
    """An exception message closed the report's code fence and injected a heading and raw HTML;
    a folder name with backticks injected HTML into lms/summary.md and the hand-back README."""
    from course.grading.handback import build as handback

    kernel = slot_class["kernel"]
    name = slot_class["records"][kernel.FORGER]["report_name"]
    report = (slot_class["out"] / "reports" / f"{name}.md").read_text(encoding="utf-8")
    tokens = _inert(report, headings=2)  # the student's heading, "Lesson 00"
    texts = "".join(t.content for t in tokens if t.type in ("text", "code_inline"))
    assert kernel.FORGER in texts and kernel.FORGED_FILE in texts
    fences = [t.content for t in tokens if t.type == "fence"]
    assert any(kernel.FORGED_MESSAGE.strip("`\n") in fence for fence in fences), fences
    summary = (slot_class["out"] / "lms" / "summary.md").read_text(encoding="utf-8")
    assert kernel.FORGER in "".join(t.content for t in _inert(summary, headings=6)
                                    if t.type == "code_inline")
    handback(slot_class["out"])
    readme = (slot_class["out"] / "handback" / "README.md").read_text(encoding="utf-8")
    assert kernel.FORGER in "".join(t.content for t in _inert(readme, headings=2)
                                    if t.type == "code_inline")


def _sign(out: Path, record: dict, **changes) -> dict:
    """`record` changed and signed with OUT's seed, as the grader signs: what a record of another
    class (or one planted by someone who has the seed file) looks like."""
    from course.grading import records as rec

    return rec.signed({**record, **changes}, rec.out_key(out))


def test_records_belong_to_one_class_and_one_submission(slot_class, tmp_path):
    """Resume took a record of another class graded with the same seed, a record of a student
    with no folder and a record older than the student's files, and an edited class.json (its
    limits gone) was taken over and signed again; an edited roster sent grades to the wrong
    students. Each is refused with a line, and the class is graded to the end."""
    from course.grading import records as rec

    subs, out = tmp_path / "collected", tmp_path / "grades"
    for name in ("ada", "a_stash", "b_replay"):  # the other four: graded from another folder
        shutil.copytree(slot_class["subs"] / name, subs / name)  # (as a late student may be)
    shutil.copytree(slot_class["out"], out)
    students = out / "students"
    honest = json.loads((students / "b_replay.json").read_text(encoding="utf-8"))
    other_class = _sign(out, honest, class_id="0" * 32, total=1.0, status="ok",
                        checks=[{**honest["checks"][0], "earned": 1.0, "passed": True}])
    (students / "b_replay.json").write_text(rec.dumps(other_class), encoding="utf-8")
    (students / "ghost.json").write_text(rec.dumps(_sign(
        out, json.loads((students / "ada.json").read_text(encoding="utf-8")), student="ghost",
        report_name="ghost")), encoding="utf-8")
    with open(subs / "a_stash" / "exercises" / "warmup.py", "a") as handle:
        handle.write("\n# handed in again\n")
    roster = out / "roster.csv"
    roster.write_text(roster.read_text().replace("4211", "X").replace("4212", "4211")
                      .replace("X", "4212"))
    done = _grade(subs, out, "--jobs", "1")  # as OUT's class was graded: its lessons, limits
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stderr
    assert "b_replay.json left out: it belongs to another class" in said
    assert "students/ghost.json left out: no folder 'ghost' in SUBMISSIONS or in any run" in said
    assert "regrading 1 student(s) whose files changed since they were graded: a_stash" in said
    assert said.count("left out") == 2  # the class's other students are kept
    assert "roster.csv is not used: it is not the roster the grader stored" in said
    assert _rows(out) == slot_class["kernel"].EXPECTED
    assert not (out / "lms").exists()
    edited = json.loads((out / rec.CLASS_FILE).read_text(encoding="utf-8"))
    old_id = edited["class_id"]
    edited["settings"].update(cell_timeout=99999, memory_mib=0, cpu_seconds=99999)
    (out / rec.CLASS_FILE).write_text(json.dumps(edited), encoding="utf-8")
    done = _grade(subs, out, "--jobs", "1", "--lessons", "00")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "class.json fails its MAC" in done.stderr and "graded again, as a new class" in done.stderr
    info = rec.load_class(out)  # nothing taken from the edited one: the defaults
    assert info.class_id != old_id and info.settings["memory_mib"] == 4096
    assert info.settings["cell_timeout"] == 60  # its records: of no class OUT holds now
    assert _rows(out) == {"a_stash": ("ok", 1), "ada": ("ok", 1), "b_replay": ("ok", 0)}


def test_merge_refuses_records_of_another_class_or_of_no_folder(slot_class, tmp_path):
    from course.grading import records as rec
    from course.grading.merge import MergeError, merge

    part = tmp_path / "part"
    shutil.copytree(slot_class["out"], part)
    students = part / "students"
    honest = json.loads((students / "ada.json").read_text(encoding="utf-8"))
    (students / "ada.json").write_text(rec.dumps(_sign(part, honest, class_id="1" * 32)),
                                       encoding="utf-8")
    (students / "ghost.json").write_text(rec.dumps(_sign(part, honest, student="ghost",
                                                         report_name="ghost")), encoding="utf-8")
    with pytest.raises(MergeError) as refused:
        merge([part], tmp_path / "merged")
    assert "ada.json (it belongs to another class" in str(refused.value)
    assert "ghost.json (a student with no folder in that part's class)" in str(refused.value)
    assert not (tmp_path / "merged").exists()


def test_out_inside_submissions_is_refused_before_the_set_up(slot_class, tmp_path):
    """OUT inside a student's folder dropped that student silently (exported with 0)."""
    subs = tmp_path / "collected"
    shutil.copytree(slot_class["subs"] / "ada", subs / "ada")
    began = time.perf_counter()
    done = _grade(subs, subs / "ada" / "grades")
    assert done.returncode != 0 and time.perf_counter() - began < 60
    assert "lies inside SUBMISSIONS (in the folder of the student 'ada'" in done.stderr, done.stderr
    assert not (subs / "ada" / "grades").exists()


def test_a_class_committed_into_the_course_is_refused(tmp_path):
    """`make handout` shipped a class folder committed into the course: its seed, roster and
    submissions, in every handout, sandbox and image."""
    from course.handout import ReleaseError, release_files

    course = tmp_path / "course"
    for name in ("Makefile", "course/__init__.py", "class/seed", "class/roster.csv",
                 "class/collected/ada/exercises/warmup.py", "data/term/gradebook.csv"):
        (course / name).parent.mkdir(parents=True, exist_ok=True)
        (course / name).write_text("x\n")
    subprocess.run(["git", "init", "-q", str(course)], check=True)
    subprocess.run(["git", "-C", str(course), "add", "-A"], check=True)
    with pytest.raises(ReleaseError) as refused:
        release_files(course)
    said = str(refused.value)
    assert "class/collected/ada/exercises/warmup.py" in said and "class/seed" in said
    assert "data/term/gradebook.csv" in said and "git rm -r --cached class data/term/gradebook.csv" in said
    with pytest.raises(ReleaseError):
        build_handout(tmp_path / "handout", source=course)
    assert not (tmp_path / "handout").exists()


def test_job_slot_locks_no_other_user_can_hold_or_redirect(tmp_path, monkeypatch, capsys):
    """The locks lay in the world-writable /run/lock: a user holding them stopped every root
    grading run with a traceback, and a link there made root create a file of the user's
    choice."""
    from course.grading import identity as ids
    from course.grading import prepare

    if os.geteuid() != 0:
        pytest.skip("job slots are root's")
    locks = tmp_path / "locks"
    block, held = ids.claim_block(locks)  # the folder made root's own, mode 0700
    assert block == 0 and (locks.stat().st_uid, locks.stat().st_mode & 0o777) == (0, 0o700)
    victim = tmp_path / "victim"
    (locks / "attention-course-slots-1.lock").symlink_to(victim)  # never followed
    monkeypatch.setattr(ids, "BLOCKS", 2)
    with pytest.raises(ids.SlotsExhausted, match=r"2 grading runs as root hold every block"):
        ids.claim_block(locks)
    os.close(held)
    assert not victim.exists()
    os.chown(locks, 65534, 65534)  # another user's folder
    with pytest.raises(OSError, match="is not root's own .owner uid 65534"):
        ids.claim_block(locks)
    os.chown(locks, 0, 0)
    locks.chmod(0o777)
    with pytest.raises(OSError, match="is not root's own .owner uid 0, mode 777"):
        ids.claim_block(locks)
    monkeypatch.setattr(ids, "LOCK_FOLDER", locks)
    monkeypatch.setattr(ids, "ids_free", lambda: None)
    work = tmp_path / "work"
    work.mkdir()
    assert prepare.job_slots(work) is None  # graded as root, and said why
    assert "is not root's own" in capsys.readouterr().err
