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
import json
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
    blocks, what the guide tells the instructor to do by hand: write the roster, download each
    assignment's submissions from Canvas (as Canvas writes them, tests/lms_downloads.py), put a
    corrected file that came by mail in its folder, give an extension in the roster."""
    course, klass = term.course_copy(base), base / "class"
    _, downloads = term.canvas_term()
    env = term.make_env(stand_ins(base))
    ran, books = [], {}
    for block in doc_commands():
        if "collect FROM=../class/a1/download.zip" in block:
            term.roster(klass / "roster.csv")
            term.write_download(klass, "a1/download.zip", downloads["a1/download.zip"])
        if "a1/download-2.zip" in block:
            books["before the second download"] = term.rows(klass / "a1" / "grades")
            term.write_download(klass, "a1/download-2.zip", downloads["a1/download-2.zip"])
        if 'STUDENTS="Ann Lee"' in block and "ONLY=" not in block:
            books["before the regrade"] = term.rows(klass / "a1" / "grades")
            term.the_correction(klass / "a1" / "collected")
        if "collect FROM=../class/a2/download.zip" in block:
            term.write_download(klass, "a2/download.zip", downloads["a2/download.zip"],
                                term.A2_DOWNLOADED)
        if "OUT=../class/a2/grades ROSTER=" in block:
            books["a2 before the extension"] = term.rows(klass / "a2" / "grades")
            term.roster(klass / "roster.csv", {"liam": term.LIAM_EXTENSION})
        if "POINTS=../class/points.toml" in block:
            books["a1 before the points"] = term.rows(klass / "a1" / "grades")
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
    for check in (check_every_student_gets_the_grade_their_code_deserves,
                  check_collect_reads_canvas_as_canvas_wrote_it,
                  check_the_lms_files_follow_every_run,
                  check_points_and_extensions_change_from_the_records,
                  check_one_check_of_one_student_is_shown_whole,
                  check_a_renamed_file_reaches_the_students_own_feedback,
                  check_the_hand_back_zips_reach_each_student_in_canvas,
                  check_the_shards_by_hand_merge_into_the_one_machine_run,
                  check_the_cluster_commands_reach_their_tools_as_documented):
        check(ran)


def rescored(rows: dict[str, str], weight: int = 2) -> dict[str, str]:
    """The A1 rows once 01.scaled_scores is worth `weight` points (the guide's points file)."""
    found = {}
    for folder, row in rows.items():
        status, total, maximum, batched, stable, scaled, flags = row.split(",")
        extra = (weight - 1) * int(scaled)
        found[folder] = ",".join([status, str(int(total) + extra), str(int(maximum) + weight - 1),
                                  batched, stable, str(int(scaled) * weight), flags])
    return found


def check_every_student_gets_the_grade_their_code_deserves(the_term):
    _, klass, ran, books = the_term
    assert books["a1 before the points"] == term.EXPECTED
    assert term.rows(klass / "a1" / "grades") == rescored(term.EXPECTED)
    assert term.rows(klass / "a2" / "grades") == term.EXPECTED_A2
    first = books["before the second download"]
    assert "学生A" not in first and first["barbara"] == "ok,2,3,1,1,0,"
    before = books["before the regrade"]
    assert before["Ann Lee"] == "ok,2,3,1,1,0," and before["学生A"] == term.EXPECTED["学生A"]
    # the second download graded the late student and the resubmission, and kept every other row
    assert {k: v for k, v in first.items() if k != "barbara"} == \
        {k: v for k, v in before.items() if k not in ("barbara", "学生A")}
    again = next(done for block, done in ran if "a1/download-2.zip" in block and "make grade" in block)
    assert "regrading 1 student(s) whose files changed since they were graded: barbara" in again.stderr
    regrade = next(done for block, done in ran if 'STUDENTS="Ann Lee"' in block and "ONLY" not in block)
    assert "grading as" in regrade.stderr and "lessons 00, 01" in regrade.stderr
    assert re.search(r"set-up \d+\.\d s; grading 1 submission", regrade.stdout)
    emmy = (klass / "a2" / "grades" / "feedback" / "emmy.md").read_text()
    assert "this assignment does not grade that lesson" in emmy and "01.stable_softmax" in emmy


def check_collect_reads_canvas_as_canvas_wrote_it(the_term):
    """Canvas's renamings undone and said, its late flag kept, UTF-8 names read as UTF-8,
    PowerShell's backslashes read as folders; the collect reports say so."""
    _, klass, ran, _ = the_term
    a1 = klass / "a1" / "collected"
    assert sorted(p.name for p in (a1 / "barbara").iterdir()) == ["softmax.py", "warmup.py"]
    assert (a1 / "katherine" / "exercises" / "softmax.py").is_file()
    assert (a1 / "curiémarie" / "warmup.py").is_file()  # not cp437's curi├⌐marie
    handles = json.loads((a1 / ".lms.json").read_text(encoding="utf-8"))["students"]
    assert handles["barbara"]["renamed"] == [["warmup-1.py", "warmup.py"],
                                             ["softmax-1.py", "softmax.py"]]
    assert handles["学生A"]["late"] is True and handles["ada"]["late"] is False
    second = next(done for block, done in ran if "collect FROM=../class/a1/download-2.zip" in block)
    assert "1 new, 1 with new files" in second.stdout
    a2 = klass / "a2" / "collected"
    assert sorted(p.name for p in (a2 / "alan").iterdir()) == ["attention.py", "softmax.py"]
    assert (a2 / "ada" / "exercises" / "attention.py").is_file()  # from exercises-1.zip
    assert oct((a2 / "alan" / "softmax.py").stat().st_mode & 0o777) == "0o600"
    assert oct(a2.stat().st_mode & 0o777) == "0o700"
    feedback = (klass / "a2" / "grades" / "feedback" / "alan.md").read_text()
    assert "`softmax.py`: Canvas delivered it as `softmax-1.py`" in feedback


def check_the_lms_files_follow_every_run(the_term):
    """The LMS files hold every record, under each assignment's own title."""
    _, klass, _, _ = the_term
    for assignment, title, rows in (("a1", "Attention course, lessons 00-01",
                                     rescored(term.EXPECTED)),
                                    ("a2", "Attention course, lesson 02", term.EXPECTED_A2)):
        lms = klass / assignment / "grades" / "lms"
        canvas = read_canvas((lms / "canvas.csv").read_text())
        assert canvas["assignments"] == [title]
        totals = {s["id"]: s["scores"][title] for s in canvas["students"]}
        expected = {uid: float(rows[folder].split(",")[1]) if folder in rows else 0.0
                    for folder, uid, *_ in term.ROSTER}
        assert totals == expected
        users = [{"id": int(uid), "username": folder, "idnumber": uid, "email": email}
                 for folder, uid, _, email, _ in term.ROSTER]
        moodle = moodle_import((lms / "moodle.csv").read_text(), users, "ID number",
                               "useridnumber", [title])
        assert moodle["ok"] and {u: g[title] for u, g in moodle["grades"].items()} == \
            {int(k): v for k, v in totals.items()}
        summary = (lms / "summary.md").read_text()
        assert "Moodle's CSV import carries no maximum" in summary
    summary = (klass / "a1" / "grades" / "lms" / "summary.md").read_text()
    assert "curiémarie" in summary  # graded, in no roster
    for path in (klass / "a1" / "grades").rglob("*"):
        assert path.stat().st_mode & 0o077 == 0, path


def check_points_and_extensions_change_from_the_records(the_term):
    """New points and an extension given after grading, by a rescore: no student code ran."""
    _, klass, ran, books = the_term
    rescore = next(done for block, done in ran if "POINTS=../class/points.toml" in block)
    assert "no student code ran" in rescore.stdout and "set-up" not in rescore.stdout
    late = books["a2 before the extension"]["liam"]
    assert late == "ok,5,5,1,1,1,1,1,late"
    assert term.rows(klass / "a2" / "grades")["liam"].endswith(",extension")


def check_one_check_of_one_student_is_shown_whole(the_term):
    _, klass, ran, _ = the_term
    only = next(done for block, done in ran if "ONLY=01.scaled_scores" in block)
    assert "01.scaled_scores" in only.stdout and "01.stable_softmax" not in only.stdout
    assert "unchanged" in only.stderr


def check_a_renamed_file_reaches_the_students_own_feedback(the_term):
    _, klass, _, _ = the_term
    feedback = (klass / "a1" / "grades" / "feedback" / "dee.md").read_text()
    assert "## Files not graded" in feedback and "softmax (1).py" in feedback
    assert "did you mean exercises/softmax.py?" in feedback
    assert "Canvas may list the new file as `softmax-1.py`" in feedback  # what Canvas will do


def check_the_hand_back_zips_reach_each_student_in_canvas(the_term):
    _, klass, _, _ = the_term
    handback = klass / "a1" / "grades" / "handback"
    with zipfile.ZipFile(handback / "canvas-feedback.zip") as archive:
        names = archive.namelist()
        targets = {canvas_reupload_target(n): n for n in names}
        by_uid = {uid: (aid, n) for (uid, aid), n in targets.items()}
        assert sorted(by_uid) == ["4211", "4212", "4213", "4214", "4215", "4216", "4217",
                                  "4218", "4219", "4230"]
        assert by_uid["4219"][0] in ("7013", "7014")  # barbara's files of her last attempt
        inner = zipfile.ZipFile(io.BytesIO(archive.read(by_uid["4211"][1])))  # ada sent a zip
        assert inner.read("feedback.md").decode().startswith("# ada: 4 / 4 points")
        assert archive.read(by_uid["4214"][1]).decode().startswith("# dee: 1 / 4 points")
    with zipfile.ZipFile(handback / "feedback.zip") as archive:
        assert sorted(archive.namelist())[:2] == ["Ann Lee/feedback.md", "ada/feedback.md"]
        assert len(archive.namelist()) == 10
    for path in handback.iterdir():
        assert path.stat().st_mode & 0o077 == 0, path


def check_the_shards_by_hand_merge_into_the_one_machine_run(the_term):
    _, klass, _, _ = the_term
    one, merged = term.tree(klass / "a1" / "grades"), term.tree(klass / "a1" / "merged")
    assert sorted(one) == sorted(merged) and "lms/canvas.csv" in one
    for name in one:  # the merge was given the term's roster since (an extension was added)
        if name != "roster.csv":
            assert one[name] == merged[name], name
    assert merged["roster.csv"] == (klass / "roster.csv").read_text(encoding="utf-8")


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
    assert f"--output={klass}/a1/logs/shard-%a.log" in sbatch[0]
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
