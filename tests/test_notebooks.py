"""The lesson notebooks: strict nbval against the solutions, check cells failing on the stubs.

Speed is measured, not asserted here (a busy machine would fail a timed test): each lesson's goal
is under 15 s on 2 CPU cores, 30 s at most; `scripts/bench_notebooks.py` prints the figures.

The Chinese notebooks (notebooks/zh/) run the English code (tests/test_zh_notebooks.py: the same
code cells, comments excepted) with the messages in Chinese. They are not run a second time:
while strict nbval runs an English lesson, tests/catalog_recorder.py writes down each message the
run renders with its Chinese rendering, and the Chinese notebook's committed outputs must be the
English ones with those renderings put in (tests/zh_outputs.py says what that proves and what
not). Two Chinese lessons run under real strict nbval instead: 00, for the Chinese set-up
(notebooks/zh/course_setup.py), and 08 (see ZH_REAL); `COURSE_ZH_NBVAL=all` runs every one.

The stubs test and the check-cell rules run on the English notebooks only.
"""
import ast
import builtins
import os
import re

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

from course import ROOT
from course.build import read_source, sources
from course.checks import all_checks
from course.workspace import solutions_workspace, stubs_workspace
from tests.notebook_runs import NOTEBOOKS, SANITIZE, cells_tagged, run_nbval
from tests.zh_outputs import chinese_problems

NAMES = [p.name for p in NOTEBOOKS]
ZH_NAMES = [f"zh/{p.name}" for p in sorted((ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))]
# the Chinese lessons run under real strict nbval (the others are checked from the English run):
# lesson 00 for the Chinese set-up; lesson 08, whose messages nest (a translated label passed to
# another translated message's format) and are padded after translation, which the recorded
# renderings cannot put back in place
ZH_REAL = ("00_", "08_")
ZH_NBVAL = ZH_NAMES if os.environ.get("COURSE_ZH_NBVAL") == "all" else \
    [name for name in ZH_NAMES if name.removeprefix("zh/").startswith(ZH_REAL)]


@pytest.fixture(scope="module")
def solutions_copy(tmp_path_factory):
    return solutions_workspace(tmp_path_factory.mktemp("with_solutions") / "course")


@pytest.fixture(scope="module")
def stubs_copy(tmp_path_factory):
    return stubs_workspace(tmp_path_factory.mktemp("with_stubs") / "course")


def test_every_source_has_its_notebook():
    built = {p.stem for p in NOTEBOOKS}
    assert {p.stem for p in sources()} == built, "run `make notebooks` after adding a lesson"


@pytest.mark.parametrize("source", sources(), ids=lambda p: p.stem)
def test_committed_notebook_matches_its_source(source):
    """The .ipynb was built from the current jupytext source (cells and tags)."""
    committed = jupytext.read(ROOT / "notebooks" / f"{source.stem}.ipynb")
    fresh = read_source(source)
    def cells(nb):
        return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]
    assert cells(committed) == cells(fresh), f"notebooks/{source.stem}.ipynb is stale: run `make notebooks`"


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NAMES)
def test_strict_nbval_against_solutions(solutions_copy, notebook, tmp_path):
    """Strict nbval of the English lesson; then its Chinese notebook's committed outputs are
    the English ones with the run's messages rendered in Chinese (tests/zh_outputs.py)."""
    record = tmp_path / "messages.jsonl"
    done, seconds = run_nbval(solutions_copy, notebook, record=record)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    print(f"{notebook}: strict nbval passed in {seconds:.1f} s")
    chinese = solutions_copy / "notebooks" / "zh" / notebook
    if chinese.exists() and f"zh/{notebook}" not in ZH_NBVAL:
        problems = chinese_problems(solutions_copy / "notebooks" / notebook, chinese, record,
                                    solutions_copy / SANITIZE)
        assert problems == [], "\n\n".join(problems)


def first_code_cells(path, count: int):
    """The notebook with its first `count` code cells only (markdown before them kept)."""
    notebook = nbformat.read(path, as_version=4)
    code = [i for i, c in enumerate(notebook.cells) if c.cell_type == "code"]
    notebook.cells = notebook.cells[:code[count - 1] + 1]
    return notebook


@pytest.mark.slow
def test_a_wrong_or_untranslated_chinese_output_is_caught(solutions_copy, tmp_path):
    """Mutants of the check above, on the first four code cells of lesson 00 (the set-up and a
    PASS printed by a check; its next cell, a FAIL listing translated case names, is lesson 00's
    real Chinese strict nbval's to check): the Chinese notebook as committed passes; one with
    a wrong number in a committed output, one with a message left in English, one with a
    message's Chinese changed and one with a line missing are each caught, by cell."""
    name = "zz_mutants.ipynb"
    english = solutions_copy / "notebooks" / name
    nbformat.write(first_code_cells(ROOT / "notebooks" / "00_start_here.ipynb", 4), english)
    record = tmp_path / "messages.jsonl"
    done, _ = run_nbval(solutions_copy, name, record=record)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]

    chinese = first_code_cells(ROOT / "notebooks" / "zh" / "00_start_here.ipynb", 4)
    passed = [c for c in chinese.cells if c.cell_type == "code"][3]
    pass_text = "".join(o.text for o in passed.outputs if o.output_type == "stream")
    english_text = "".join(o.text for o in [c for c in nbformat.read(english, as_version=4).cells
                                            if c.cell_type == "code"][3].outputs)
    english_line = next(line for line in english_text.splitlines() if "HIDDEN=1" in line)
    chinese_line = next(line for line in pass_text.splitlines() if "HIDDEN=1" in line)
    han = next(i for i, char in enumerate(chinese_line) if "\u4e00" <= char <= "\u9fff")
    count = re.search(r"\((\d+)", pass_text)
    assert count and english_line != chinese_line, pass_text
    mutants = {
        "as committed": pass_text,
        "a wrong number": pass_text.replace(count.group(0), f"({int(count.group(1)) + 1}", 1),
        "a message left in English": pass_text.replace(chinese_line, english_line),
        "a message's Chinese changed": pass_text.replace(
            chinese_line, chinese_line[:han] + chinese_line[han + 1:]),
        "a line missing": pass_text.replace(chinese_line + "\n", ""),
    }
    found = {}
    for mutant, text in mutants.items():
        assert mutant == "as committed" or text != pass_text, mutant
        passed.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        path = tmp_path / "zh" / name
        path.parent.mkdir(exist_ok=True)
        nbformat.write(chinese, path)
        found[mutant] = chinese_problems(english, path, record, solutions_copy / SANITIZE)
    assert found.pop("as committed") == []
    for mutant, problems in found.items():
        assert len(problems) == 1 and "code cell 3" in problems[0], (mutant, problems)


@pytest.mark.slow
@pytest.mark.parametrize("notebook", ZH_NBVAL)
def test_strict_nbval_of_a_chinese_lesson(solutions_copy, notebook):
    done, seconds = run_nbval(solutions_copy, notebook)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    print(f"{notebook}: strict nbval passed in {seconds:.1f} s")


def stands_alone(cell) -> bool:
    """The cell imports every name it uses (builtins aside)."""
    tree = ast.parse(cell.source)
    imported = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
                if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return not (used - imported - set(dir(builtins)))


def test_every_check_cell_imports_what_it_runs():
    """A check cell runs on its own after the set-up cell: it imports its check and the
    student's exercise (a learner who opens a lesson, runs the first cell and jumps to a check
    must not meet a NameError). Both languages."""
    for path in [*NOTEBOOKS, *(ROOT / "notebooks" / name for name in ZH_NAMES)]:
        for cell in cells_tagged(nbformat.read(path, as_version=4), "check"):
            assert stands_alone(cell), f"{path.relative_to(ROOT)}: a check cell uses a name it " \
                                       f"does not import:\n{cell.source}"


def stdout_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and o.name == "stdout")


@pytest.mark.slow
@pytest.mark.parametrize("language", ["en", "zh"])
def test_check_cells_pass_alone_right_after_the_set_up_cell(solutions_copy, language):
    """Each lesson's set-up cell and then its check cells, exactly as committed, nothing else,
    in a namespace reset before each lesson (one kernel per language: a check cell that uses a
    name it does not import or set up fails, as in a fresh kernel): each prints what the
    committed notebook shows (the exercises are the solutions). Both languages: a Chinese
    learner runs these cells too."""
    names = NAMES if language == "en" else ZH_NAMES
    cells, runs = [], []
    for notebook in names:
        committed = nbformat.read(solutions_copy / "notebooks" / notebook, as_version=4)
        code = [c for c in committed.cells if c.cell_type == "code"]
        assert code[1].source.startswith("import course_setup"), f"{notebook}: no set-up cell"
        cells += [nbformat.v4.new_code_cell("%reset -f"), nbformat.v4.new_code_cell(code[1].source)]
        for check in cells_tagged(committed, "check"):
            runs.append((notebook, check, len(cells)))
            cells.append(nbformat.v4.new_code_cell(check.source))
    run = nbformat.v4.new_notebook(cells=cells)
    run.metadata = {"kernelspec": {"name": "python3", "language": "python",
                                   "display_name": "Python 3"}}
    folder = solutions_copy / "notebooks" / ("zh" if language == "zh" else "")
    NotebookClient(run, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    for notebook, check, index in runs:
        ran = run.cells[index]
        errors = [o for o in ran.outputs if o.output_type == "error"]
        assert not errors, f"{notebook}: {errors[0].ename}: {errors[0].evalue}\n{check.source}"
        assert stdout_of(ran) == stdout_of(check), (notebook, check.source)


def cells_for_the_stubs(path):
    """(cells to run, check cells among them): the lesson's set-up cell (its second code cell:
    `import course_setup` and the lesson's imports), every cell up to the last check cell that
    uses a name an earlier cell defines, and the other check cells."""
    notebook = nbformat.read(path, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[1].source.startswith("import course_setup"), f"{path.name}: no set-up cell"
    checks = [i for i, c in enumerate(code) if "check" in c.metadata.get("tags", [])]
    needs_context = [i for i in checks if not stands_alone(code[i])]
    prefix = range(1, max(needs_context, default=1) + 1)
    chosen = [*prefix, *(i for i in checks if i not in prefix)]
    return [code[i] for i in chosen], [code[i] for i in checks]


@pytest.mark.slow
def test_check_cells_fail_on_untouched_stubs(stubs_copy):
    """Every check cell, run with untouched stubs as a student meets it, fails with the stub's
    message. One kernel for all lessons, its namespace reset between them; of each lesson only
    the set-up cell and the check cells run (a check cell that uses what an earlier cell
    defined runs after all the cells before it): the lessons' own code on stubs proves nothing."""
    runs, cells = [], []
    for name in NAMES:
        chosen, checks = cells_for_the_stubs(stubs_copy / "notebooks" / name)
        assert checks, f"{name}: no check cell"
        cells.append(nbformat.v4.new_code_cell("%reset -f"))
        for cell in chosen:
            if cell in checks:
                runs.append((name, cell, len(cells)))
            cells.append(nbformat.v4.new_code_cell(cell.source))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": {"name": "python3", "language": "python",
                                        "display_name": "Python 3"}}
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(stubs_copy / "notebooks")}}).execute()
    for name, cell, index in runs:
        errors = [o for o in notebook.cells[index].outputs if o.output_type == "error"]
        assert errors, f"{name}: check cell passed on the stubs:\n{cell.source}"
        assert "NOT IMPLEMENTED YET" in errors[0].evalue, f"{name}: {errors[0].evalue}"
        assert "exercises/" in errors[0].evalue, f"{name}: {errors[0].evalue}"


def test_one_check_per_check_cell():
    """The grader gives points per check cell; a first failing check would hide a second one."""
    for path in NOTEBOOKS:
        for cell in cells_tagged(jupytext.read(path), "check"):
            calls = re.findall(r"\b(check_\w+)\(", cell.source)
            assert len(calls) == 1, f"{path.name}: a check cell calls {calls}"


def test_every_check_runs_in_a_check_cell():
    called = set()
    for path in NOTEBOOKS:
        notebook = jupytext.read(path)
        for cell in cells_tagged(notebook, "check"):
            called |= set(re.findall(r"\b(check_\w+)\(", cell.source))
    names = {name for name in _check_names()}
    missing = names - called
    assert not missing, f"checks no notebook runs in a cell tagged 'check': {sorted(missing)}"


def _check_names():
    import importlib
    import pkgutil

    import course.checks as package
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("lesson"):
            module = importlib.import_module(f"course.checks.{info.name}")
            for name, value in vars(module).items():
                if value in all_checks().values() and name.startswith("check_"):
                    yield name
