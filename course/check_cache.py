"""What `make check` found last time, so that it runs again only what changed.

`make check` runs every check of the course on `exercises/`; most of its time goes to checks of
exercises the student has not touched since the last run. Each result is stored here under a key
made of everything it depends on, and a check runs again only when its key changes:

- the student's files it can reach: its exercise's file in `exercises/`, the files of the
  exercises it calls (`uses`, through others too), every file of `exercises/` that these import
  (relative or `exercises.` imports, followed through), and `exercises/__init__.py`, by content.
  A file that can reach code or data imports do not name (importlib, `__import__`, exec, eval,
  open, a load from a file, a module of its own outside `exercises/`) makes the checks that reach
  it run every time: nothing is remembered for them;
- the course: every file under `course/` (the checks, their recorded reference results, the
  message catalogs), by content;
- the run: the learner's language, Python's and PyTorch's versions, the interpreter, and every
  COURSE_* environment variable.

So a stored PASS is shown only for files whose content is exactly what passed. Results that
depend on the moment (a crash of the machinery, out of memory) are never stored. The list of the
course's checks is stored too (keyed on the course's files), so a run with nothing changed
imports neither the checks nor PyTorch. The cache is `build/check-cache.json`;
COURSE_CHECK_CACHE=0 turns it off (`make clean` removes it).
"""
from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from course import ROOT

FILE = ROOT / "build" / "check-cache.json"
VERSION = 1  # of the file's layout
# what can reach code or data that an import statement does not name
OPAQUE_MODULES = {"importlib", "runpy", "pickle", "sys", "os", "pathlib", "io", "builtins",
                  "subprocess", "shelve", "marshal", "ctypes", "inspect", "glob", "shutil",
                  "tempfile", "zipimport", "pkgutil", "urllib", "socket", "solutions"}
OPAQUE_NAMES = {"__import__", "exec", "eval", "compile", "open", "globals", "vars", "locals",
                "breakpoint", "input", "__file__", "__loader__", "__spec__"}
OPAQUE_ATTRIBUTES = {"load", "loads", "loadtxt", "genfromtxt", "fromfile", "read_text",
                     "read_bytes", "open", "import_module", "modules", "from_file"}
KNOWN_PACKAGES = {"course"}  # part of the course's own key


@dataclass
class Entry:
    """One check of the course, as `make check` needs to know it without importing it."""

    id: str
    lesson: str
    target: str           # "module:attribute" in exercises/
    where: str            # "lessonNN:check_name": the module of course/checks and its name
    uses: list[str] = field(default_factory=list)  # ids of the checks it uses, through others too

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    @property
    def attribute(self) -> str:
        return self.target.split(":")[1]

    def check(self):
        """The Check object (imports its lesson's module of course/checks, and PyTorch)."""
        import importlib

        module, name = self.where.split(":")
        return getattr(importlib.import_module(f"course.checks.{module}"), name)


def catalog_of_checks() -> list[Entry]:
    """Every check of the course, in `make check`'s order (imports them all)."""
    from course.checks.depends import closure
    from course.checks.registry import _walk

    where = {id(check): f"{module}:{name}" for module, name, check in _walk()}
    checks = sorted({c.id: c for _, _, c in _walk()}.values(), key=lambda c: c.lesson)
    return [Entry(c.id, c.lesson, c.target, where[id(c)], [u.id for u in closure(c)])
            for c in checks]


def digest(*parts: bytes | str) -> str:
    hashed = hashlib.blake2b(digest_size=20)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        hashed.update(len(data).to_bytes(8, "little") + data)
    return hashed.hexdigest()


def course_key(root: Path = ROOT) -> str:
    """The content of every file under course/ (bytecode aside)."""
    parts = []
    for path in sorted((root / "course").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            parts += [path.relative_to(root).as_posix(), path.read_bytes()]
    return digest(*parts)


def run_key() -> str:
    """The language, the interpreter, Python's and PyTorch's versions, the COURSE_* variables."""
    from importlib import metadata

    from course.i18n import language

    versions = []
    for package in ("torch", "numpy"):
        try:
            versions.append(f"{package}=={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} absent")
    settings = sorted(f"{k}={v}" for k, v in os.environ.items()
                      if k.startswith("COURSE_") and k not in ("COURSE_CHECK_CACHE",
                                                               "COURSE_CHECK_SERVER"))
    return digest(language(), sys.executable, sys.version, *versions, *settings)


def _installed(name: str, root: Path) -> bool:
    """Whether a top-level module comes with Python or an installed package (not a file of the
    course folder that the key would not cover)."""
    if name in sys.stdlib_module_names or name in KNOWN_PACKAGES:
        return True
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = spec.origin if spec is not None else None
    if spec is None or origin is None:
        return False
    try:
        Path(origin).resolve().relative_to(root.resolve())
    except ValueError:
        return True  # outside the course folder: installed
    return ".venv" in Path(origin).resolve().relative_to(root.resolve()).parts


def imports_of(source: str, root: Path = ROOT) -> tuple[set[str], bool]:
    """(the modules of exercises/ that this file imports, whether it can reach code or data
    that its imports do not name). A file that does not parse imports nothing: its own checks
    fail on its content alone."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set(), False
    found: set[str] = set()
    opaque = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "exercises":
                    found.add(parts[1] if len(parts) > 1 else "__init__")
                elif parts[0] in OPAQUE_MODULES or not _installed(parts[0], root):
                    opaque = True
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            if node.level == 1 or (node.level == 0 and parts[0] == "exercises"):
                inner = parts if node.level == 1 else parts[1:]
                if inner and inner[0]:
                    found.add(inner[0])
                else:  # from . import softmax / from exercises import softmax
                    found.update(alias.name for alias in node.names)
                    found.add("__init__")
            elif node.level > 1 or parts[0] in OPAQUE_MODULES or not _installed(parts[0], root):
                opaque = True
        elif isinstance(node, ast.Name) and node.id in OPAQUE_NAMES:
            opaque = True
        elif isinstance(node, ast.Attribute) and node.attr in OPAQUE_ATTRIBUTES:
            opaque = True
    return found, opaque


class Cache:
    """The stored results of one course folder's `make check`."""

    def __init__(self, root: Path = ROOT, path: Path | None = None):
        self.root = root
        self.path = path or root / "build" / "check-cache.json"
        self.enabled = os.environ.get("COURSE_CHECK_CACHE", "1") != "0"
        self.course = course_key(root)
        self.run = run_key()
        self._files: dict[str, tuple[str, set[str], bool]] = {}
        self.data = {"version": VERSION, "course": self.course, "catalog": None, "results": {}}
        if self.enabled:
            try:
                stored = json.loads(self.path.read_text())
            except (OSError, ValueError):
                stored = None
            if isinstance(stored, dict) and stored.get("version") == VERSION \
                    and stored.get("course") == self.course:
                self.data = stored
        self.changed = False

    def server_key(self) -> str:
        """What a warm server (course/check_server.py) must have been started with to answer."""
        return digest(self.course, self.run, os.fspath(self.root.resolve()))

    # ------------------------------------------------------------------------ the checks

    def catalog(self) -> list[Entry] | None:
        stored = self.data.get("catalog")
        return [Entry(**entry) for entry in stored] if stored else None

    def keep_catalog(self, entries: list[Entry]) -> None:
        if self.enabled:
            self.data["catalog"] = [asdict(entry) for entry in entries]
            self.changed = True

    # ----------------------------------------------------------------------- the results

    def _file(self, module: str) -> tuple[str, set[str], bool]:
        """(content digest, modules it imports, opaque) of exercises/<module>.py."""
        if module not in self._files:
            path = self.root / "exercises" / f"{module}.py"
            try:
                source = path.read_bytes()
            except OSError:
                self._files[module] = ("absent", set(), False)
            else:
                imported, opaque = imports_of(source.decode("utf-8", "replace"), self.root)
                self._files[module] = (digest(source), imported, opaque)
        return self._files[module]

    def key(self, entry: Entry, catalog: dict[str, Entry]) -> str | None:
        """The key of this check's result, or None when it must run every time."""
        if not self.enabled:
            return None
        todo = ["__init__", entry.module] + [catalog[u].module for u in entry.uses if u in catalog]
        seen: dict[str, str] = {}
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            content, imported, opaque = self._file(module)
            if opaque:
                return None
            seen[module] = content
            todo += sorted(imported - set(seen))
        return digest(self.course, self.run, entry.id,
                      *(f"{m}={c}" for m, c in sorted(seen.items())))

    def get(self, check_id: str, key: str | None) -> dict | None:
        stored = self.data["results"].get(check_id)
        return stored if key is not None and stored and stored.get("key") == key else None

    def put(self, check_id: str, key: str | None, result: dict) -> None:
        if key is not None:
            self.data["results"][check_id] = {"key": key, **result}
            self.changed = True

    def save(self) -> None:
        """Write the cache (atomically: two runs at once leave one whole file)."""
        if not (self.enabled and self.changed):
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            scratch = self.path.with_name(f"{self.path.name}.{os.getpid()}")
            scratch.write_text(json.dumps(self.data))
            os.replace(scratch, self.path)
        except OSError:
            pass  # a read-only course folder: nothing remembered, nothing wrong
