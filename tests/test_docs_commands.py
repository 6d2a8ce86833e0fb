"""docs/instructors.md and the README's instructor section, run as written: every command of the
guide, in its order, on a class of six in a class folder beside a course folder, then what each
step must have produced. A command the docs show that does not work fails here.

What cannot run on the course's build machine runs against stand-ins that check what they are
given: `docker` (the build context has a Dockerfile and holds the course's listed files only,
push names the image built), `kubectl` (`create secret` reads a seed file; `apply` validates the
manifest with kubernetes-validate),
`sbatch` (records its arguments; tests/test_slurm.py runs the same script on a real Slurm).
"""
from __future__ import annotations

import csv
import io
import re
import shlex
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from course import ROOT
from tests import term_class as term
from tests.lms_formats import canvas_reupload_target, moodle_import, read_canvas

DOC = ROOT / "docs" / "instructors.md"
CLUSTER = ROOT / "docs" / "cluster"
K8S_VERSIONS = ("1.30", "1.33", "1.37")
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap")


def blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return [(m[1], m[2]) for m in FENCE.finditer(text)]


def doc_commands() -> list[str]:
    """The guide's bash blocks that are commands to type (not script files, which start #!)."""
    return [body for lang, body in blocks(DOC.read_text(encoding="utf-8"))
            if lang == "bash" and not body.startswith("#!")]


def lines_of(block: str) -> list[str]:
    """A block's commands, one per line (comments and blank lines dropped)."""
    found = []
    for line in block.splitlines():
        line = re.sub(r"\s+#\s.*$", "", line).strip()
        if line and not line.startswith("#"):
            found.append(line)
    return found


def readme_commands(path: Path, heading: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    section = text[text.index(heading):]
    section = section[:section.index("\n## ", 1)]
    return [line for lang, body in blocks(section) if lang == "bash" for line in lines_of(body)]


# ------------------------------------------------------------------ files the guide shows


def test_the_guides_scripts_and_manifests_are_the_files_in_docs_cluster():
    """A script or manifest the guide shows is the file in docs/cluster/, byte for byte, and
    every file there is shown."""
    shown = {}
    for lang, body in blocks(DOC.read_text(encoding="utf-8")):
        first = body.splitlines()[1 if body.startswith("#!") else 0]
        named = re.match(r"# ([\w.-]+\.(?:yaml|sbatch|sh)):", first)
        if lang in ("bash", "yaml") and named:
            shown[named[1]] = body
    assert sorted(shown) == sorted(p.name for p in CLUSTER.iterdir())
    for name, body in shown.items():
        assert (CLUSTER / name).read_text() == body, name


def test_the_kubernetes_manifests_pass_kubernetes_schemas():
    """Strict schema checks (an unknown or misplaced field fails) for every supported version;
    backoffLimitPerIndex for the shards; the seed read from a Secret mounted as a file."""
    import kubernetes_validate

    for name in ("grade-job.yaml", "merge-job.yaml"):
        manifest = yaml.safe_load((CLUSTER / name).read_text())
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(manifest, version, strict=True)
    broken = yaml.safe_load((CLUSTER / "grade-job.yaml").read_text())
    broken["spec"]["backoffLimitPerShard"] = 1
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSIONS[-1], strict=True)
    job = yaml.safe_load((CLUSTER / "grade-job.yaml").read_text())
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["backoffLimitPerIndex"] >= 1
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    secret = next(v for v in pod["volumes"] if "secret" in v)
    mount = next(m for m in container["volumeMounts"] if m["name"] == secret["name"])
    assert mount["readOnly"] and f"--seed-file {mount['mountPath']}/seed" in container["args"][0]
    assert "env" not in container or all("valueFrom" not in e for e in container["env"])
    assert "--seed " not in container["args"][0]


def test_the_pods_commands_are_lines_the_grader_accepts(tmp_path, capsys):
    """Each pod's shell command, run with `python` recording its arguments, gives a command line
    the grader's own parser accepts: the shard of its index, the seed from the file."""
    from course.grading.cli import parser
    from course.grading.merge import main as merge_main

    job = yaml.safe_load((CLUSTER / "grade-job.yaml").read_text())
    (container,) = job["spec"]["template"]["spec"]["containers"]
    shards = job["spec"]["completions"]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["SHARDS"]) == shards == job["spec"]["parallelism"]
    for index in range(shards):
        (argv,) = recorded(container["args"][0], tmp_path, {**env, "JOB_COMPLETION_INDEX": str(index)})
        args = parser().parse_args(argv[2:])
        assert (args.shard, args.out) == (f"{index + 1}/{shards}", f"/class/grades/shard-{index + 1}")
        assert str(args.seed_file) == "/run/secrets/grading/seed" and args.seed is None
    merge_job = yaml.safe_load((CLUSTER / "merge-job.yaml").read_text())
    (merger,) = merge_job["spec"]["template"]["spec"]["containers"]
    for k in range(1, shards + 1):
        (tmp_path / "class" / "grades" / f"shard-{k}").mkdir(parents=True)
    (argv,) = recorded(merger["args"][0].replace("/class/", f"{tmp_path}/class/"), tmp_path, {})
    assert argv[2] == "merge"
    assert merge_main(argv[3:]) == 2  # parsed; then the parts are found empty, as they are here
    assert "cannot read the roster" in capsys.readouterr().err


def recorded(script: str, tmp_path: Path, env: dict) -> list[list[str]]:
    """Run `script` with `python` replaced by a recorder of its arguments."""
    bin_dir, log = tmp_path / "rec-bin", tmp_path / "rec-log"
    bin_dir.mkdir(exist_ok=True)
    log.mkdir(exist_ok=True)
    fake(bin_dir / "python", 'f=$(mktemp "$LOG/argv.XXXXXX"); printf "%s\\0" "$@" > "$f"\n')
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{bin_dir}:/usr/bin:/bin", "LOG": str(log), **env})
    assert done.returncode == 0, done.stderr
    found = [p.read_bytes().decode().split("\0")[:-1]
             for p in sorted(log.iterdir(), key=lambda p: p.stat().st_mtime_ns)]
    for path in log.iterdir():
        path.unlink()
    return found


def fake(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\nset -eu\n" + body)
    path.chmod(stat.S_IRWXU)


# ------------------------------------------------------------------------- stand-ins

DOCKER = """echo "docker $*" >> "$LOG/tools"
case "$1" in
  build) [ "$2" = -t ] && [ -f "$4/Dockerfile" ] && [ -f "$4/MANIFEST" ] \
      && PYTHONPATH="$PWD" "$PYTHON" -m course.handout --check-context "$4" \
      && echo "$3" > "$LOG/image" ;;
  push) [ "$(cat "$LOG/image")" = "$2" ] ;;
  *) exit 2 ;;
esac
"""
KUBECTL = """echo "kubectl $*" >> "$LOG/tools"
case "$1 $2" in
  "create secret")
    file=${5#--from-file=seed=}; grep -qE '^[0-9]+$' "$file" ;;
  "apply -f")
    "$PYTHON" -c 'import sys, yaml, kubernetes_validate
for v in ("1.30", "1.33", "1.37"):
    kubernetes_validate.validate(yaml.safe_load(open(sys.argv[1])), v, strict=True)' "$3" ;;
  "wait --for=condition=complete") ;;
  *) exit 2 ;;
esac
"""
SBATCH = """echo "sbatch $*" >> "$LOG/tools"
echo "4242"
"""


def stand_ins(base: Path) -> dict:
    bin_dir, log = base / "stand-ins", base / "stand-in-log"
    bin_dir.mkdir()
    log.mkdir()
    for name, body in (("docker", DOCKER), ("kubectl", KUBECTL), ("sbatch", SBATCH)):
        fake(bin_dir / name, body)
    import os

    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log), "PYTHON": sys.executable}


# ------------------------------------------------------------------------------ the term


def run_the_term(base: Path):
    """Every command block of the guide, run in order in the course copy's folder; between two
    blocks, what the guide tells the instructor to do by hand (download the submissions, write
    the roster, put a corrected or a late submission in its folder)."""
    course, klass = term.course_copy(base), base / "class"
    klass.mkdir()
    term.canvas_download(klass / "download.zip")
    term.roster(klass / "roster.csv")
    env = term.make_env(stand_ins(base))
    ran, books = [], {}
    for block in doc_commands():
        if 'STUDENTS="Ann Lee"' in block:
            books["before the regrade"] = term.rows(klass / "grades")
            term.the_correction(klass / "collected")
        if "make grade " in block and any(block == earlier for earlier, _ in ran):
            term.the_late_student(klass / "collected")  # the first command, run again
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=course, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{block}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        ran.append((block, done))
    return base, klass, ran, books


@needs_bwrap
@pytest.mark.slow
def test_the_term_as_documented(tmp_path):
    """One test, so that the term runs once whichever worker takes it (pytest-xdist)."""
    ran = run_the_term(tmp_path)
    for check in (check_the_term_gives_every_student_their_grade, check_the_lms_files_follow_every_run,
                  check_a_renamed_file_reaches_the_students_own_feedback,
                  check_the_hand_back_zips_reach_each_student_in_canvas,
                  check_the_shards_by_hand_merge_into_the_one_machine_run,
                  check_the_cluster_commands_reach_their_tools_as_documented):
        check(ran)


def check_the_term_gives_every_student_their_grade(the_term):
    _, klass, ran, books = the_term
    assert term.rows(klass / "grades") == term.EXPECTED
    before = books["before the regrade"]
    assert before["Ann Lee"] == "ok,2,3,1,1,0," and "学生A" not in before
    # the regrade changed Ann Lee's row alone; the late student added a row
    assert {k: v for k, v in before.items() if k != "Ann Lee"} == \
        {k: v for k, v in term.EXPECTED.items() if k not in ("Ann Lee", "学生A")}
    regrade = next(done for block, done in ran if 'STUDENTS="Ann Lee"' in block)
    assert "grading as" in regrade.stderr and "lessons 00, 01" in regrade.stderr
    assert re.search(r"set-up \d+\.\d s; grading 1 submission", regrade.stdout)
    assert re.search(r"graded 1 submission\(s\) in \d+\.\d s after \d+\.\d s of set-up",
                     regrade.stdout)


def check_the_lms_files_follow_every_run(the_term):
    """After the late student's run, the LMS files hold every record: 学生A's 3 points too."""
    _, klass, _, _ = the_term
    lms = klass / "grades" / "lms"
    canvas = read_canvas((lms / "canvas.csv").read_text())
    totals = {s["id"]: s["scores"]["Attention course, lessons 00-01"] for s in canvas["students"]}
    assert totals == {"4211": 3.0, "4212": 0.0, "4213": 2.0, "4214": 1.0, "4215": 3.0, "4216": 3.0}
    users = [{"id": int(uid), "username": folder, "idnumber": uid, "email": email}
             for folder, uid, _, email, _ in term.ROSTER]
    moodle = moodle_import((lms / "moodle.csv").read_text(), users, "ID number", "useridnumber",
                           ["Attention course, lessons 00-01"])
    assert moodle["ok"] and {u: g["Attention course, lessons 00-01"] for u, g in moodle["grades"].items()} == \
        {int(k): v for k, v in totals.items()}
    assert "## In the roster without a submission (0 points): 0" in (lms / "summary.md").read_text()


def check_a_renamed_file_reaches_the_students_own_feedback(the_term):
    _, klass, _, _ = the_term
    feedback = (klass / "grades" / "feedback" / "dee.md").read_text()
    assert "## Files not graded" in feedback and "softmax (1).py" in feedback
    assert "did you mean exercises/softmax.py?" in feedback and "hand it in again" in feedback


def check_the_hand_back_zips_reach_each_student_in_canvas(the_term):
    _, klass, _, _ = the_term
    handback = klass / "grades" / "handback"
    with zipfile.ZipFile(handback / "canvas-feedback.zip") as archive:
        names = archive.namelist()
        targets = {canvas_reupload_target(n): n for n in names}
        by_uid = {uid: (aid, n) for (uid, aid), n in targets.items()}
        assert sorted(by_uid) == ["4211", "4212", "4213", "4214", "4215"]  # 学生A came late
        assert by_uid["4214"][0] in ("90004", "90104")  # one of the files dee submitted
        inner = zipfile.ZipFile(io.BytesIO(archive.read(by_uid["4211"][1])))  # ada sent a zip
        assert inner.read("feedback.md").decode().startswith("# ada: 3 / 3 points")
        assert archive.read(by_uid["4214"][1]).decode().startswith("# dee: 1 / 3 points")
    with zipfile.ZipFile(handback / "feedback.zip") as archive:
        assert len(archive.namelist()) == 6
    assert "学生A" in (handback / "README.md").read_text()


def check_the_shards_by_hand_merge_into_the_one_machine_run(the_term):
    _, klass, _, _ = the_term
    one, merged = term.tree(klass / "grades"), term.tree(klass / "merged")
    assert sorted(one) == sorted(merged) and "lms/canvas.csv" in one
    for name in one:
        assert one[name] == merged[name], name


def check_the_cluster_commands_reach_their_tools_as_documented(the_term):
    base, klass, _, _ = the_term
    tools = (base / "stand-in-log" / "tools").read_text().splitlines()
    assert tools[:2] == ["docker build -t registry.example.edu/attention-course-grader:2025 "
                         "../class/grader-image",
                         "docker push registry.example.edu/attention-course-grader:2025"]
    kubectl = [t for t in tools if t.startswith("kubectl")]
    assert kubectl[0] == "kubectl create secret generic attention-grading-seed " \
        "--from-file=seed=../class/seed" and len(kubectl) == 4
    sbatch = [shlex.split(t) for t in tools if t.startswith("sbatch")]
    assert sbatch[0][-1] == "docs/cluster/grade-array.sbatch"
    assert f"--output={klass}/logs/shard-%a.log" in sbatch[0]
    assert "--dependency=afterok:4242" in sbatch[1]
    assert not any("seed" in arg for call in sbatch for arg in call if "--seed-file" not in arg)


def test_every_readme_command_is_one_the_term_runs():
    """The README's instructor commands (both languages) are lines of the guide's blocks, which
    the term above runs; so they are run too, in exactly their form."""
    guide = {line for block in doc_commands() for line in lines_of(block)}
    for path, heading in ((ROOT / "README.md", "## For instructors"),
                          (ROOT / "README.zh-CN.md", "## 教师")):
        commands = readme_commands(path, heading)
        assert commands and set(commands) <= guide, (path, set(commands) - guide)
    assert readme_commands(ROOT / "README.md", "## For instructors") == \
        readme_commands(ROOT / "README.zh-CN.md", "## 教师")


def test_the_commands_use_a_class_folder_outside_the_course():
    """No command of the guide puts the class inside the course, nor a seed on a command line."""
    for block in doc_commands():
        for line in lines_of(block):
            for word in shlex.split(line):
                value = word.rsplit("=", 1)[-1]
                if value.startswith(("collected", "grades", "roster", "seed", "shards")):
                    raise AssertionError(f"inside the course: {line}")
            assert "--seed " not in line and "$(cat" not in line, line


def test_csv_block_is_a_roster_the_grader_reads(tmp_path):
    from course.grading.roster import read_roster

    (body,) = [b for lang, b in blocks(DOC.read_text(encoding="utf-8")) if lang == "csv"]
    (tmp_path / "roster.csv").write_text(body)
    assert [e.folder for e in read_roster(tmp_path / "roster.csv")] == ["ada", "bob"]
    assert list(csv.reader(io.StringIO(body)))[0] == ["folder", "lms_id", "email", "name", "section"]
