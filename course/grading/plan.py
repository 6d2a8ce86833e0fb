"""What is graded: the lessons' check cells (read from the notebooks), their setup, the points."""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from course import ROOT
from course.grading.cells import setup_source

POINTS_FILE = ROOT / "course" / "grading" / "points.toml"
CHECK_CALL = re.compile(r"\b(check_\w+)\s*\(")


@dataclass
class CheckCell:
    notebook: str
    cell: int              # the index among the notebook's code cells (nbval's number)
    checks: list[str]      # check ids, in the order the cell calls them
    source: str = ""
    setup: str = ""        # the lesson's imports this cell may rely on


@dataclass
class Lesson:
    number: str
    notebook: str
    cells: list[CheckCell]

    @property
    def checks(self) -> list[str]:
        return [c for cell in self.cells for c in cell.checks]


def parse_lessons(values: list[str] | None) -> list[str] | None:
    """'00-02', '0,1', '3' -> ['00', '01', '02'] ...; None means every lesson."""
    if not values:
        return None
    found: list[str] = []
    for value in values:
        for part in filter(None, re.split(r"[,\s]+", value)):
            if "-" in part:
                low, high = part.split("-", 1)
                found += [f"{n:02d}" for n in range(int(low), int(high) + 1)]
            else:
                found.append(f"{int(part):02d}")
    return sorted(set(found))


def notebook_cells(path: Path) -> list[dict]:
    """A notebook's cells as {"cell_type", "source", "tags"}, read as plain JSON: the course's
    notebooks are nbformat 4, and nbformat itself costs seconds to import (its schema checker
    builds a grammar), more than reading every notebook of the course."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("nbformat") != 4:
        raise SystemExit(f"{path}: nbformat {data.get('nbformat')}, the grader reads version 4")
    cells = []
    for cell in data.get("cells", []):
        source = cell.get("source", "")
        cells.append({"cell_type": cell.get("cell_type"),
                      "source": "".join(source) if isinstance(source, list) else source,
                      "tags": cell.get("metadata", {}).get("tags", [])})
    return cells


def lesson_plan(course_dir: Path, lessons: list[str] | None = None) -> list[Lesson]:
    """The notebooks to grade and the checks their check cells call, read from the notebooks."""
    from course.checks.registry import by_function_name  # imports torch: not for a usage error

    named = by_function_name()
    notebooks = sorted((course_dir / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    present = {p.name[:2] for p in notebooks}
    if lessons is not None:
        missing = sorted(set(lessons) - present)
        if missing:
            raise SystemExit(f"no notebook for lesson(s) {', '.join(missing)} in {course_dir / 'notebooks'}")
        notebooks = [p for p in notebooks if p.name[:2] in lessons]
    plan = []
    for path in notebooks:
        number = path.name[:2]
        cells, code_index, others = [], 0, []
        for cell in notebook_cells(path):
            if cell["cell_type"] != "code":
                continue
            if "check" in cell["tags"]:
                ids = []
                for name in CHECK_CALL.findall(cell["source"]):
                    owners = named.get(name)
                    if not owners:
                        print(f"warning: {path.name}, code cell {code_index}: {name} is no Check "
                              "in course/checks/lesson*.py; not graded", file=sys.stderr)
                        continue
                    check = owners.get(number) or next(iter(owners.values()))
                    ids.append(check.id)
                if ids:
                    cells.append(CheckCell(path.name, code_index, ids, cell["source"],
                                           setup_source(others)))
            else:
                others.append(cell["source"])
            code_index += 1
        plan.append(Lesson(number, path.name, cells))
    return plan


class PointsError(SystemExit):
    """A points file that cannot be used as it is."""


def load_points(check_ids: list[str], path: Path | None = None) -> dict[str, float]:
    """Points per check from the TOML file: `default = 1` and a [points] table of id = points.

    A key that is no check's id (nor an old id kept in course/checks/registry.py's ALIASES) is
    an error that lists the ids: a typo would otherwise silently leave a check at the default."""
    import tomllib

    from course.checks.registry import ALIASES, all_checks, canonical

    path = POINTS_FILE if path is None else Path(path)
    config = tomllib.loads(path.read_text()) if path.exists() else {}
    default = float(config.get("default", 1))
    known = set(all_checks())
    unknown = sorted(str(k) for k in config.get("points", {}) if canonical(str(k)) not in known)
    if unknown:
        raise PointsError(f"{path}: no check is called {', '.join(map(repr, unknown))}. The "
                          f"checks are: {', '.join(sorted(known))} (and the old ids "
                          f"{', '.join(sorted(ALIASES))})")
    table = {canonical(str(k)): float(v) for k, v in config.get("points", {}).items()}
    for check_id, value in table.items():
        if value < 0:
            raise PointsError(f"{path}: negative points for {check_id}")
        if check_id not in check_ids:
            print(f"note: {path.name} gives points to {check_id}, which is not graded in this "
                  "run (its lesson is not among the chosen ones)", file=sys.stderr)
    return {check_id: table.get(check_id, default) for check_id in check_ids}


def warn_unrun(plan: list[Lesson]) -> None:
    from course.checks.registry import all_checks

    run = {c for lesson in plan for c in lesson.checks}
    numbers = {lesson.number for lesson in plan}
    for check in all_checks().values():
        if check.lesson in numbers and check.id not in run:
            print(f"warning: no check cell of lesson {check.lesson} runs {check.id}; not graded",
                  file=sys.stderr)
