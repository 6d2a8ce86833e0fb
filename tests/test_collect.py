"""make collect on downloads as Canvas and Moodle write them (tests/lms_downloads.py, from their own
code), and on what one student can put in them: the class is always collected to the end."""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from course.grading import collect as collecting
from course.grading import download
from course.grading.collect import collect
from course.grading.download import canvas_original, entry_name, moodle_clean
from tests.lms_downloads import (CanvasCourse, MoodleAssignment, make_unique_filename, plain_zip,
                                 powershell_zip)

EXERCISES = {"warmup", "softmax", "attention", "mha"}


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_canvas_names_a_name_handed_in_before_as_its_source_says():
    taken = {"softmax.py"}
    assert make_unique_filename("softmax.py", taken) == "softmax-1.py"
    assert make_unique_filename("softmax.py", taken | {"softmax-1.py"}) == "softmax-2.py"
    assert make_unique_filename("a.tar.gz", {"a.tar.gz"}) == "a-1.tar.gz"
    full = taken | {f"softmax-{i}.py" for i in range(1, 8)}
    assert make_unique_filename("softmax.py", full).startswith("softmax-0000")  # a uuid


@pytest.mark.parametrize("given, graded", [
    ("softmax-1.py", "softmax.py"), ("softmax-7.py", "softmax.py"),
    ("softmax-1-1.py", "softmax.py"),                       # a file downloaded from Canvas, resent
    ("softmax-123e4567-e89b-12d3-a456-426614174000.py", "softmax.py"),
    ("softmax.py", None), ("notes-1.py", None), ("softmax-1.txt", None), ("softmax-x.py", None),
    ("softmax-0.py", None)])
def test_canvas_renamings_are_undone_for_exercise_files_only(given, graded):
    assert canvas_original(given, EXERCISES) == graded


def test_a_canvas_term_is_collected_as_the_students_named_their_files(tmp_path):
    course = CanvasCourse()
    course.enrol(1, "Lovelace, Ada")
    course.enrol(2, "Curié, Marie")
    course.submit(1, {"softmax.py": "v1", "warmup.py": "w"})
    course.submit(2, {"exercises.zip": powershell_zip({"exercises/softmax.py": "m"})})
    course.submit(1, {"softmax.py": "v2"}, late=True)       # a resubmission, late
    _write(tmp_path / "a1.zip", course.download())
    handles = collect(tmp_path / "a1.zip", tmp_path / "subs")
    ada = tmp_path / "subs" / "lovelaceada"
    assert sorted(p.name for p in ada.iterdir()) == ["softmax.py"]
    assert (ada / "softmax.py").read_text() == "v2"
    assert handles["students"]["lovelaceada"]["renamed"] == [["softmax-1.py", "softmax.py"]]
    assert handles["students"]["lovelaceada"]["late"] is True
    marie = tmp_path / "subs" / "curiémarie"                 # UTF-8 without the flag, read as UTF-8
    assert (marie / "exercises" / "softmax.py").read_text() == "m"  # backslashes as folders
    assert handles["students"]["curiémarie"]["late"] is False
    assert oct((tmp_path / "subs").stat().st_mode & 0o777) == "0o700"
    assert oct((ada / "softmax.py").stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "subs" / ".lms.json").stat().st_mode & 0o777) == "0o600"


def test_two_copies_in_one_attempt_keep_the_one_canvas_stored_last(tmp_path):
    course = CanvasCourse()
    course.enrol(1, "Lovelace, Ada")
    course.submit(1, {"softmax.py": "old", "softmax (2).py": "x"})
    course.students[1].current.append((9999, "softmax-1.py", b"new"))  # attached twice
    _write(tmp_path / "d.zip", course.download())
    handles = collect(tmp_path / "d.zip", tmp_path / "subs")
    ada = tmp_path / "subs" / "lovelaceada"
    assert (ada / "softmax.py").read_text() == "new"
    assert (ada / "softmax (2).py").exists()  # not Canvas's: the grader names it to the student
    assert any("an earlier copy of softmax.py" in n for n in handles["students"]["lovelaceada"]["notes"])


def test_a_name_is_read_as_utf8_only_where_it_is_utf8():
    flagged = zipfile.ZipInfo("curié.py")
    flagged.flag_bits |= 0x800
    assert entry_name(flagged) == "curié.py"
    cp437 = zipfile.ZipInfo("\u00e9t\u00e9.py")  # a real cp437 name (bytes 0x82 't' 0x82), no UTF-8
    cp437.filename = b"\x82t\x82.py".decode("cp437")
    assert entry_name(cp437) == b"\x82t\x82.py".decode("cp437")
    assert entry_name(zipfile.ZipInfo("a\\b.py")) == "a/b.py"


def test_moodle_names_are_matched_as_moodle_cleans_them(tmp_path):
    assert moodle_clean("Liam O'Brien") == "Liam OBrien" and moodle_clean("A_B") == "A B"
    assert moodle_clean('Zoë "Z" <z> & co|x') == "Zoë Z z  cox"
    moodle = MoodleAssignment()
    moodle.submit("Liam O'Brien", 2000001, {"softmax.py": "l"})
    moodle.submit("Ada_Lovelace", 2000002, {"exercises.zip": powershell_zip({"exercises/warmup.py": "a"})})
    _write(tmp_path / "m.zip", moodle.download())
    roster = _write(tmp_path / "roster.csv", "folder,lms_id,name\nliam,L1,Liam O'Brien\n"
                                              "ada,A1,Ada_Lovelace\n".encode())
    collect(tmp_path / "m.zip", tmp_path / "subs", roster)
    assert (tmp_path / "subs" / "liam" / "softmax.py").read_text() == "l"
    assert (tmp_path / "subs" / "ada" / "exercises" / "warmup.py").read_text() == "a"


def test_two_moodle_students_of_one_name_need_participant_ids(tmp_path, capsys):
    moodle = MoodleAssignment()
    moodle.submit("Wei Zhang", 2000001, {"softmax.py": "one"})
    moodle.submit("Wei Zhang", 2000002, {"softmax.py": "two"})
    _write(tmp_path / "m.zip", moodle.download())
    roster = _write(tmp_path / "roster.csv", "folder,lms_id,name\nwz1,W1,Wei Zhang\n"
                                              "wz2,W2,Wei Zhang\n".encode())
    code = collecting.main(["--from", str(tmp_path / "m.zip"), "--submissions",
                            str(tmp_path / "subs"), "--roster", str(roster)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("NEEDS YOU") == 2 and "participant" in err
    assert not (tmp_path / "subs" / "wz1").exists()  # neither is given a roster row's folder
    with_ids = _write(tmp_path / "roster2.csv", (
        "folder,lms_id,name,Identifier\nwz1,W1,Wei Zhang,Participant 2000002\n"
        "wz2,W2,Wei Zhang,Participant 2000001\n").encode())
    assert collecting.main(["--from", str(tmp_path / "m.zip"), "--submissions",
                            str(tmp_path / "subs2"), "--roster", str(with_ids)]) == 0
    assert (tmp_path / "subs2" / "wz1" / "softmax.py").read_text() == "two"
    assert (tmp_path / "subs2" / "wz2" / "softmax.py").read_text() == "one"
    # the line that resolves it, followed into the same folder: the guesses are set aside
    assert collecting.main(["--from", str(tmp_path / "m.zip"), "--submissions",
                            str(tmp_path / "subs"), "--roster", str(with_ids)]) == 0
    assert sorted(p.name for p in (tmp_path / "subs").iterdir()) == [".lms.json", ".replaced",
                                                                       "wz1", "wz2"]
    assert sorted(json.loads((tmp_path / "subs" / ".lms.json").read_text())["students"]) == [
        "wz1", "wz2"]


def test_blind_marking_is_matched_by_participant_id(tmp_path):
    moodle = MoodleAssignment(blind=True, folders=False)
    moodle.submit("Ada Lovelace", 2000007, {"warmup.py": "a"})
    _write(tmp_path / "m.zip", moodle.download())
    roster = _write(tmp_path / "roster.csv", b"folder,lms_id,name,participant\nada,A1,Ada Lovelace,2000007\n")
    collect(tmp_path / "m.zip", tmp_path / "subs", roster)
    assert (tmp_path / "subs" / "ada" / "warmup.py").read_text() == "a"


def test_no_student_can_stop_the_class(tmp_path, monkeypatch):
    """A file where a folder is needed, a name past the file system's limit, an entry larger than
    a student may hand in (left out before it is read), a zip that is no zip: each is that
    student's line, and every other student is collected."""
    monkeypatch.setattr(download, "MAX_STUDENT_BYTES", 4000)
    read = []
    original = zipfile.ZipFile.read
    monkeypatch.setattr(zipfile.ZipFile, "read", lambda self, name, pwd=None: (
        read.append(getattr(name, "filename", name)), original(self, name, pwd))[1])
    course = CanvasCourse()
    for uid, name in enumerate(["A, Ann", "B, Bo", "C, Cy", "D, Di", "E, Ed"], start=1):
        course.enrol(uid, name)
    course.submit(1, {"e.zip": plain_zip({"exercises": "a file", "exercises/softmax.py": "s"})})
    course.submit(2, {"e.zip": plain_zip({"x" * 300 + ".py": "long", "softmax.py": "s"})})
    course.submit(3, {"huge.py": "0" * 5000})
    course.submit(4, {"e.zip": b"PK\x03\x04 not a zip"})
    course.submit(5, {"softmax.py": "fine"})
    _write(tmp_path / "d.zip", course.download())
    handles = collect(tmp_path / "d.zip", tmp_path / "subs")
    subs = tmp_path / "subs"
    assert (subs / "eed" / "softmax.py").read_text() == "fine"
    assert (subs / "aann" / "exercises").is_file() and any(
        "already where a folder is needed" in n for n in handles["students"]["aann"]["notes"])
    long_names = [p.name for p in (subs / "bbo").iterdir()]
    assert "softmax.py" in long_names and any(len(n.encode()) <= 255 and "~" in n for n in long_names)
    assert not (subs / "ccy").exists() or not list((subs / "ccy").iterdir())
    assert any("huge.py (over" in n for n in handles["students"]["ccy"]["notes"])
    assert not any("huge.py" in name for name in read)  # left out before it was read
    assert any("not a readable zip" in n for n in handles["students"]["ddi"]["notes"])


def test_a_failure_midway_leaves_no_half_written_class(tmp_path, monkeypatch):
    course = CanvasCourse()
    course.enrol(1, "A, Ann")
    course.enrol(2, "B, Bo")
    course.submit(1, {"softmax.py": "a"})
    course.submit(2, {"softmax.py": "b"})
    _write(tmp_path / "d.zip", course.download())
    calls = []

    def failing(target, files):
        calls.append(target)
        if len(calls) == 2:
            raise OSError("disk full")
        collecting.__dict__["_real_write_folder"](target, files)

    monkeypatch.setitem(collecting.__dict__, "_real_write_folder", collecting._write_folder)
    monkeypatch.setattr(collecting, "_write_folder", failing)
    with pytest.raises(OSError):
        collect(tmp_path / "d.zip", tmp_path / "subs")
    assert not (tmp_path / "subs").exists() or not any((tmp_path / "subs").iterdir())
    assert not list(tmp_path.glob(".collect-*"))


def test_a_second_download_adds_replaces_and_keeps(tmp_path):
    course = CanvasCourse()
    for uid, name in ((1, "A, Ann"), (2, "B, Bo"), (3, "C, Cy")):
        course.enrol(uid, name)
    course.submit(1, {"softmax.py": "a1"})
    course.submit(2, {"softmax.py": "b1"})
    _write(tmp_path / "d1.zip", course.download())
    first = collect(tmp_path / "d1.zip", tmp_path / "subs")
    assert [r.state for r in first["report"]] == ["new", "new"]
    course.submit(2, {"softmax.py": "b2"})                  # softmax-1.py in the download
    course.submit(3, {"softmax.py": "c1"}, late=True)
    course.students[1].current = []                         # not in the second download
    _write(tmp_path / "d2.zip", course.download())
    second = collect(tmp_path / "d2.zip", tmp_path / "subs")
    assert {r.folder: r.state for r in second["report"]} == {"bbo": "updated", "ccy": "new"}
    subs = tmp_path / "subs"
    assert (subs / "aann" / "softmax.py").read_text() == "a1"    # kept
    assert (subs / "bbo" / "softmax.py").read_text() == "b2"
    assert [p.read_text() for p in (subs / ".replaced").glob("bbo~*/softmax.py")] == ["b1"]
    handles = json.loads((subs / ".lms.json").read_text())
    assert handles["students"]["bbo"]["attachments"] == [["7003", "softmax-1.py"]]
    assert handles["students"]["ccy"]["late"] is True and len(handles["collects"]) == 2
    third = collect(tmp_path / "d2.zip", subs)
    assert {r.state for r in third["report"]} == {"unchanged"}


def test_an_unpacked_download_with_a_latin1_name_keeps_its_handles(tmp_path):
    folder = tmp_path / "download"
    folder.mkdir()
    name = os.fsdecode(b"caf\xe9_1001_assignsubmission_file")
    (folder / name).mkdir()
    (folder / name / "softmax.py").write_text("s")
    handles = collect(folder, tmp_path / "subs")
    text = (tmp_path / "subs" / ".lms.json").read_text(encoding="utf-8")
    assert json.loads(text)["students"] and handles["students"]


def test_a_zip_inside_the_download_is_read_within_its_limits():
    files, left_out = download.unpacked([("a.zip", plain_zip({"exercises/a.py": "a",
                                                             "../evil.py": "e",
                                                             "__MACOSX/._a.py": "m"}))])
    assert files == [("exercises/a.py", b"a")]
    assert left_out == ["../evil.py (a path outside the student's folder)"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("link.py")
        info.external_attr = 0o120777 << 16
        archive.writestr(info, "/etc/passwd")
    assert download.unpacked([("l.zip", buffer.getvalue())])[1] == ["l.zip: link.py (a link)"]
