"""Build the hostile class: one folder per student, as an instructor collects them; and the
course it is graded with: a git checkout of the course in which the class lies as the
instructors' guide once laid it out (collected/, roster.csv, seed, shard logs, OUT inside the
course folder), so that nothing of it may reach a sandbox."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from course import ROOT
from course.handout import build as build_handout
from course.stubs import generate
from tests.hostile import attacks

GIB6 = 6 * 1024 ** 3
LESSONS = ["00", "01", "02"]
COLUMNS = ["00.batched_dot", "01.stable_softmax", "01.scaled_scores", "02.causal_mask",
           "02.padding_mask", "02.attention_weights", "02.attention_forward", "02.single_head"]
ALL = [1] * 8
BUT_00 = [0, 1, 1, 1, 1, 1, 1, 1]
# softmax.py's two exercises lost; lesson 02's weights, attention and module call them and are
# right on their own, so they keep their points (one bug costs one point)
NO_SOFTMAX = [1, 0, 0, 1, 1, 1, 1, 1]
FAKE_LINE = "\x1b[1A\x1b[2K\x1b[32mperfect: ok, 8\u22158\x1b[0m"
LATIN1 = os.fsdecode(b"caf\xe9")   # a folder name an old zip tool writes: no UTF-8
SPARSE_BYTES = 300 * 1024 * 1024  # its exercises/__init__.py: sparse, read by nobody
TMP_MIB = 64          # the hostile run's --tmp-limit: what fills_tmp may fill

# student -> (status, points per check in COLUMNS order, flags)
EXPECTED = {
    # honest students
    "perfect": ("ok", ALL, ""),
    "先生A": ("ok", ALL, ""),                          # differs from the next only in non-ASCII
    "学生A": ("ok", BUT_00, ""),
    "untouched_stubs": ("ok", [0] * 8, ""),             # a whole handout, stubs untouched
    "one_bug_per_lesson": ("ok", [0, 0, 1, 1, 0, 1, 1, 1], ""),
    "syntax_error": ("syntax-error", [1, 0, 0, 0, 0, 0, 0, 0], ""),
    "infinite_loop": ("timeout", BUT_00, ""),
    "import_exception": ("import-error", [1, 1, 1, 0, 0, 0, 0, 0], ""),
    "huge_allocation": ("memory-limit", BUT_00, ""),
    # its unshifted softmax overflows on scores near 1000 (01.stable_softmax lost); lesson 02's
    # exercises that call it are right on their own (one bug, one point)
    "nan_outputs": ("ok", [1, 0, 1, 1, 1, 1, 1, 1], ""),
    "kills_kernel": ("crashed", BUT_00, "exits-process"),
    "misnamed_files": ("ok", NO_SOFTMAX, "misnamed-files"),  # Softmax.py, softmax (1).py
    "nested_course_copy": ("ok", ALL, "ships-solutions"),
    "empty": ("no-submission", [0] * 8, ""),
    "ada..\\escape": ("ok", ALL, ""),                      # an odd folder name
    "--out=evil": ("ok", ALL, ""),
    # cheaters: 0 on what they cheated, whatever their kernel printed
    "ships_fake_solutions": ("ok", [0] * 8, "ships-solutions"),
    "cheat_patch_check": ("ok", [0] * 8, "dynamic-import imports-course unconfirmed"),
    # the recorded outputs carry no gradient and no meta case: it fails in the notebook already
    "cheat_reference_data": ("ok", BUT_00, "imports-course mentions-reference-data"),
    "cheat_walk_to_solutions": ("ok", NO_SOFTMAX, "dynamic-import mentions-solutions"),
    "cheat_pass_then_exit": ("crashed", BUT_00, "exits-process"),
    # its forged PASS earns nothing: its batched_dot is wrong on the hidden cases, and its
    # patched Tensor.any (False everywhere) breaks its own attention_weights on the hidden masked
    # cases (one process runs its hidden checks, warmup.py's patch in place); the exercises
    # calling that one run again with the reference's in place, without the patch, and are right
    "cheat_patch_torch": ("ok", [0, 1, 1, 1, 1, 0, 1, 1], "patches-builtins unconfirmed"),
    # nothing to gain, harm meant for others: graded on its (correct) code, harms nobody
    "cheat_harm_others": ("ok", ALL, "exits-process reads-proc runs-processes"),
    "flood_of_output": ("ok", ALL, ""),
    # one student may not stop, slow or confuse the grading of the others
    "judge_bomb": ("ok", [0] * 8, "unconfirmed"),        # every hidden result claims 2**62 elements
    "keepalive_fast": ("timeout", BUT_00, ""),
    "keepalive_slow": ("timeout", BUT_00, ""),
    "keepalive_hidden": ("timeout", BUT_00, "unconfirmed"),
    "protocol_garbage": ("ok", ALL, ""),
    "cpu_spinner": ("timeout", BUT_00, ""),
    "fills_tmp": ("ok", ALL, ""),
    "Ann Lee": ("ok", ALL, ""),                         # three folders, one cleaned name
    "Ann_Lee-a36e143c": ("ok", BUT_00, ""),
    "Ann_Lee~a36e143c5359": ("ok", [0] * 8, ""),
    '=HYPERLINK("https:x")': ("ok", ALL, ""),          # formulas in a spreadsheet
    "+1+1": ("ok", ALL, ""),
    "-2+3": ("ok", ALL, ""),
    "@SUM(A1)": ("ok", ALL, ""),
    FAKE_LINE: ("ok", [0] * 8, ""),                     # erases a line, prints a green "ok" line
    # the instructor's files, names that are no UTF-8, the sandbox as a whole
    "spy": ("ok", ALL, "reads-proc"),                   # finds no classmate, roster or seed
    LATIN1: ("ok", ALL, ""),                            # and r\xe9sum\xe9.py, a sparse __init__.py
    # hundreds of spinning forks in its check cell: the process limit stops the forks, the
    # sandbox's watch the spinning (or the cell's time limit, on a machine too busy to notice)
    "fork_storm": ("timeout", BUT_00, "exits-process runs-processes"),
}
# how the gradebook shows a folder name: formulas neutralised (OWASP), control characters escaped
CSV_NAMES = {'=HYPERLINK("https:x")': '\'=HYPERLINK("https:x")', "+1+1": "'+1+1", "-2+3": "'-2+3",
             "@SUM(A1)": "'@SUM(A1)", "--out=evil": "'--out=evil",
             FAKE_LINE: "\\x1b[1A\\x1b[2K\\x1b[32mperfect: ok, 8\u22158\\x1b[0m",
             LATIN1: "caf\\xe9"}
# what the documented layout put in the course folder besides the class's submissions
CLASS_FILES = {"roster.csv": "name,email,folder\nAda Lovelace,ada@example.edu,perfect\n",
               "shard-1.log": "grading 14 submission(s)\n"}


def course_checkout(dest: Path) -> Path:
    """A git checkout of the course as it is now (the working tree's tracked files), with the
    class laid out inside it: collected/ (filled by build_class), roster.csv, seed, a shard's
    log and an OUT under build/. Returns the checkout; its seed is in `seed`."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                            check=True).stdout.split(b"\0")
    for name in filter(None, map(os.fsdecode, listed)):
        if (ROOT / name).is_file() and not (ROOT / name).is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)
    subprocess.run(["git", "-C", str(dest), "add", "-A"], check=True)
    for name, text in CLASS_FILES.items():
        (dest / name).write_text(text)
    (dest / "seed").write_text("738105292638472651\n")
    (dest / "seed").chmod(0o600)
    return dest


def solution(name: str) -> str:
    return (ROOT / "solutions" / name).read_text()


def mutate(text: str, find: str, replace: str) -> str:
    assert text.count(find) == 1, f"{find!r} found {text.count(find)} times"
    return text.replace(find, replace)


def write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def build_class(subs: Path, out: Path, workdir: Path, course: Path = ROOT) -> None:
    stubs = generate()
    perfect = {p.name: p.read_text() for p in (ROOT / "solutions").glob("*.py")}
    warmup_body = "    return (a * b).sum(dim=-1)\n"

    for name in ("perfect", "先生A", "ada..\\escape", "--out=evil"):
        write(subs / name / "exercises", perfect)
    write(subs / "学生A" / "exercises", {
        **perfect, "warmup.py": mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()")})
    build_handout(subs / "untouched_stubs")
    write(subs / "one_bug_per_lesson" / "exercises", {
        **perfect,
        "warmup.py": mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()"),
        "softmax.py": mutate(solution("softmax.py"),
                             "exponentials / exponentials.sum(dim=dim, keepdim=True)",
                             "exponentials / exponentials.sum(dim=-1, keepdim=True)"),
        "attention.py": mutate(solution("attention.py"), "(positions < lengths[:, None])[:, None, :]",
                               "(positions <= lengths[:, None])[:, None, :]"),
    })
    write(subs / "syntax_error" / "exercises", {
        **perfect, "softmax.py": mutate(solution("softmax.py"), "c = q.shape[-1]", "c = q.shape[-1")})
    write(subs / "infinite_loop" / "exercises", {
        **perfect, "warmup.py": mutate(solution("warmup.py"), warmup_body,
                                       "    total, i = 0, 0\n"
                                       "    while i < a.shape[-1]:  # forgot i += 1\n"
                                       "        total = total + a[..., i] * b[..., i]\n"
                                       "    return total\n")})
    write(subs / "import_exception" / "exercises", {
        **perfect, "attention.py": solution("attention.py") + "\nDEFAULT_MASK = causal_mask(4)[5]\n"})
    write(subs / "huge_allocation" / "exercises", {
        **perfect, "warmup.py": mutate(solution("warmup.py"), warmup_body,
                                       f"    scratch = torch.empty({GIB6}, dtype=torch.uint8)\n"
                                       "    return (a * b).sum(dim=-1) + scratch[0] * 0\n")})
    write(subs / "nan_outputs" / "exercises", {
        **perfect, "softmax.py": mutate(solution("softmax.py"),
                                        "shifted = x - x.amax(dim=dim, keepdim=True)", "shifted = x")})
    write(subs / "kills_kernel" / "exercises", {
        **perfect, "warmup.py": mutate(solution("warmup.py"), warmup_body,
                                       "    import os\n    os._exit(3)\n")})
    misnamed = {k: v for k, v in perfect.items() if k != "softmax.py"}
    write(subs / "misnamed_files" / "exercises",
          {**misnamed, "Softmax.py": perfect["softmax.py"], "softmax (1).py": perfect["softmax.py"]})
    nested = subs / "nested_course_copy" / "attention-course-main"
    shutil.copytree(ROOT, nested, ignore=shutil.ignore_patterns(
        ".venv", ".git", "build", "__pycache__", ".pytest_cache", "out"))
    write(nested / "exercises", perfect)
    (subs / "empty").mkdir()
    (subs / "empty" / "README.txt").write_text("I will hand it in next week\n")
    (subs / ".DS_Store").write_text("not a student")
    (subs / "symlinked_student").symlink_to(subs / "perfect")   # skipped: a symlink

    fake = subs / "ships_fake_solutions"
    write(fake / "exercises", stubs)
    (fake / "exercises" / "softmax.py").unlink()
    (fake / "exercises" / "softmax.py").symlink_to(ROOT / "solutions" / "softmax.py")
    write(fake / "solutions", perfect)
    write(fake / "course" / "checks", {
        "lesson00.py": "check_batched_dot = lambda f: print('PASS 00.batched_dot (4 cases)')\n"})

    write(subs / "cheat_patch_check" / "exercises",
          {**stubs, "warmup.py": attacks.PATCH_CHECK_CALL + stubs["warmup.py"]})
    write(subs / "cheat_reference_data" / "exercises",
          {**perfect, "warmup.py": attacks.FROM_REFERENCE})
    write(subs / "cheat_walk_to_solutions" / "exercises",
          {**perfect, "softmax.py": attacks.WALK_TO_SOLUTIONS})
    write(subs / "cheat_pass_then_exit" / "exercises",
          {**perfect, "warmup.py": attacks.PASS_THEN_EXIT})
    write(subs / "cheat_patch_torch" / "exercises",
          {**perfect, "warmup.py": attacks.PATCH_TORCH.replace(
              "return (a * b).sum()", "return (a * b).sum(dim=-1) + 0.5")})
    targets = {
        "folders": [str(out), str(out / "reports"), str(subs), str(subs / "perfect" / "exercises"),
                    str(course), str(course / "solutions"), str(workdir)],
        "files": [str(out / "reports" / "perfect.md"), str(subs / "perfect" / "exercises" / "softmax.py"),
                  str(subs / "untouched_stubs" / "exercises" / "warmup.py")],
        "pristine_glob": str(workdir / "grade-*" / "pristine" / "exercises" / "*.py"),
    }
    write(subs / "cheat_harm_others" / "exercises",
          {**perfect, "warmup.py": attacks.HARM_OTHERS.format(targets=targets) + perfect["warmup.py"]})
    write(subs / "flood_of_output" / "exercises",
          {**perfect, "warmup.py": attacks.FLOOD + perfect["warmup.py"]})
    build_issue21(subs, perfect, stubs)
    build_issue29(subs, perfect)


def build_issue21(subs: Path, perfect: dict[str, str], stubs: dict[str, str]) -> None:
    """The students who attack the grader and the other students' grades."""
    bodies = {"keepalive_fast": attacks.KEEPALIVE_FAST, "keepalive_slow": attacks.KEEPALIVE_SLOW,
              "keepalive_hidden": attacks.KEEPALIVE_HIDDEN, "cpu_spinner": attacks.CPU_SPINNER}
    for name, body in bodies.items():
        write(subs / name / "exercises", {**perfect, "warmup.py": body})
    for name, attack in (("judge_bomb", attacks.JUDGE_BOMB), ("fills_tmp", attacks.FILLS_TMP),
                         ("protocol_garbage", attacks.PROTOCOL_GARBAGE)):
        write(subs / name / "exercises", {**perfect, "warmup.py": attack + perfect["warmup.py"]})
    one_bug = mutate(solution("warmup.py"), "(a * b).sum(dim=-1)", "(a * b).sum()")
    write(subs / "Ann Lee" / "exercises", perfect)
    write(subs / "Ann_Lee-a36e143c" / "exercises", {**perfect, "warmup.py": one_bug})
    write(subs / "Ann_Lee~a36e143c5359" / "exercises", stubs)
    for name in ('=HYPERLINK("https:x")', "+1+1", "-2+3", "@SUM(A1)"):
        write(subs / name / "exercises", perfect)
    write(subs / FAKE_LINE / "exercises", stubs)


def build_issue29(subs: Path, perfect: dict[str, str]) -> None:
    """The students who test the sandbox as a whole: a spy, a name that is no UTF-8, a process storm."""
    write(subs / "spy" / "exercises", {**perfect, "warmup.py": attacks.SPY + perfect["warmup.py"]})
    latin1 = Path(os.fsdecode(os.fsencode(subs) + b"/caf\xe9/exercises"))
    write(latin1, perfect)
    (latin1 / os.fsdecode(b"r\xe9sum\xe9.py")).write_text("NOTES = 'mine'\n")
    with open(latin1 / "__init__.py", "wb") as handle:  # 300 MB of nothing, costing no disk
        handle.truncate(SPARSE_BYTES)
    write(subs / "fork_storm" / "exercises", {**perfect, "warmup.py": attacks.FORK_STORM})
