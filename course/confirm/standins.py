"""Stand-ins: the reference's recorded calls, replayed in place of a student's function.

An exercise that calls another one (attention_weights calls scaled_scores) can be judged on its
own only if the one it calls is right. A stand-in takes that callee's place without its code: while
the reference ran a case, every call it made to an exercise target was recorded (arguments, the
module's parameters for a method, the output, and in a gradient case the vector-Jacobian products
that backward asked for); the stand-in looks the student's call up in that table and returns the
recorded output, through an autograd.Function that hands back the recorded gradients. A call the
table does not hold (other arguments than the reference's) runs the student's own function, and
is noted as a miss.

This module imports nothing but the standard library and torch: the grader copies it beside the
harness into the sandbox of the hidden run, where it replays tables recorded outside.

    table = []
    with Patch("solutions", targets, Recorder(table)):   # the reference runs a case
        ...
    with Patch("exercises", targets, Replay(table, replace=targets)) as patch:   # the student's
        ...
    patch.misses, patch.seen                               # what missed, what the student called

A target is "module:function" or "module:Class.method" inside the package. A call is a dict
(torch.save-able): target, args (the parameters by name, defaults filled in), state (a method's
module parameters by name), parent (the innermost target being called around it, or None),
output, vjps (list of {"grad": grad_output, "grads": {name: gradient}}).
"""
from __future__ import annotations

import gzip
import importlib
import inspect
import io
import sys
import types
import weakref
from pathlib import Path
from typing import Any, Iterable

import torch

TIGHT = {torch.float64: (1e-9, 1e-12), torch.float32: (1e-5, 1e-7), torch.float16: (1e-3, 1e-5),
         torch.bfloat16: (1e-2, 1e-4)}  # (rtol, atol) for matching a call's tensors


def split(target: str) -> tuple[str, str, str | None]:
    """"mha:MultiHeadAttention._attention" -> ("mha", "MultiHeadAttention", "_attention")."""
    module, name = target.split(":")
    owner, _, method = name.partition(".")
    return module, owner, method or None


def name_of(target: str) -> str:
    """What a student calls it: "scaled_scores", "MultiHeadAttention._attention"."""
    return target.split(":")[1]


# ------------------------------------------------------------------------------ matching calls

def same(a: Any, b: Any) -> bool:
    """Whether two recorded values are the same argument (tensors: close, for a tight tolerance)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and _close(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return abs(a - b) <= 1e-12 * max(1.0, abs(a))
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - an odd object: not the same argument
        return False


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.device.type == "meta" or b.device.type == "meta":
        return True  # a case on the meta device: shapes and dtypes are all there is to match
    a, b = a.detach(), b.detach()
    if torch.equal(a, b):  # the usual match, one cheap comparison (isclose would agree)
        return True
    if not a.dtype.is_floating_point:
        return False
    rtol, atol = TIGHT.get(a.dtype, (1e-5, 1e-7))
    return bool(torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).all())


def gap(a: Any, b: Any) -> float:
    """How far apart two same-shaped tensor arguments are (inf when not comparable)."""
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape:
        if a.device.type == "meta" or b.device.type == "meta":
            return 0.0 if a.dtype == b.dtype else float("inf")
        if not a.dtype.is_floating_point or not b.dtype.is_floating_point:
            return 0.0 if torch.equal(a, b.to(a.dtype)) else float("inf")
        difference = (a.detach().double() - b.detach().double()).abs().nan_to_num(float("inf"))
        return float(difference.max()) if difference.numel() else 0.0
    return 0.0 if same(a, b) else float("inf")


def find(table: list[dict], target: str, args: dict, state: dict | None) -> dict | None:
    """The first recorded call of `target` with these arguments (and module parameters)."""
    for call in table:
        if call["target"] == target and same(call["args"], args) and same(call.get("state"), state):
            return call
    return None


def closest(table: list[dict], target: str, args: dict, state: dict | None) -> tuple[str, float]:
    """For a miss: the argument that differs most from the nearest recorded call of `target`."""
    best = ("", float("inf"))
    for call in table:
        if call["target"] != target or call["args"].keys() != args.keys():
            continue
        gaps = {name: gap(call["args"][name], args[name]) for name in args}
        if state is not None and call.get("state") is not None:
            gaps.update({f"parameter {n}": gap(call["state"].get(n), v) for n, v in state.items()})
        name, worst = max(gaps.items(), key=lambda item: item[1], default=("", 0.0))
        if worst < best[1]:
            best = (name, worst)
    return best


# ------------------------------------------------------------------------ one call, as a record

_SIGNATURES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def signature_of(function) -> inspect.Signature:
    """inspect.signature(function), kept for a plain function while its code and defaults are
    the ones it was computed from: a stand-in names the arguments of every call it sees, and
    computing the signature each time was a fifth of a check cell's time."""
    if type(function) is not types.FunctionType or "__signature__" in vars(function) or \
            "__wrapped__" in vars(function):
        return inspect.signature(function)
    made_of = (function.__code__, function.__defaults__, function.__kwdefaults__)
    kept = _SIGNATURES.get(function)
    if kept is None or any(a is not b for a, b in zip(kept[0], made_of)):
        kept = _SIGNATURES[function] = (made_of, inspect.signature(function))
    return kept[1]


def arguments(function, args: tuple, kwargs: dict, method: bool) -> dict | None:
    """The call's arguments by parameter name, defaults filled in (self left out); None when
    the signature refuses the call."""
    try:
        bound = signature_of(function).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    values = dict(bound.arguments)
    if method:
        values.pop(next(iter(values)), None)
    return values


def plain(value: Any) -> Any:
    """A value as a recorded argument: tensors detached, tuples and sizes as lists; a tensor on
    the meta device (which has no values) as zeros of its shape and dtype on the CPU, a
    placeholder that matches any meta tensor of that shape and dtype."""
    if isinstance(value, torch.Tensor):
        if value.device.type == "meta":
            return torch.zeros(value.shape, dtype=value.dtype)
        return value.detach()
    if isinstance(value, (tuple, list, torch.Size)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def state_of(module) -> dict[str, torch.Tensor]:
    return {name: plain(p) for name, p in module.named_parameters()}


class Call:
    """One call as it happens: the function, its module (for a method) and its arguments."""

    def __init__(self, function, module, args: tuple, kwargs: dict):
        self.function, self.module, self.args, self.kwargs = function, module, args, kwargs
        method = module is not None
        self.named = arguments(function, ((module,) if method else ()) + args, kwargs, method)

    def record(self) -> tuple[dict, dict | None]:
        """(arguments, module parameters) as a table holds them."""
        named = self.named if self.named is not None else {"*args": self.args, **self.kwargs}
        return plain(named), (state_of(self.module) if self.module is not None else None)

    def inputs(self) -> list[tuple[str, torch.Tensor]]:
        """The floating tensors its gradient can flow to: arguments by name, then parameters."""
        if self.named is None:
            return []
        found = [(f"arg {n}", t) for n, t in self.named.items()
                 if isinstance(t, torch.Tensor) and t.is_floating_point()]
        if self.module is not None:
            found += [(f"parameter {n}", p) for n, p in self.module.named_parameters()]
        return found

    def on_meta(self) -> bool:
        """Whether the call's tensors are on the meta device."""
        values = list(self.args) + list(self.kwargs.values())
        return any(isinstance(v, torch.Tensor) and v.device.type == "meta" for v in values)

    def needs_grad(self) -> bool:
        return torch.is_grad_enabled() and any(t.requires_grad for _, t in self.inputs())

    def __call__(self, tensors=None):
        """Run the function; `tensors` (in the order of inputs()) replace its inputs."""
        if tensors is None:
            if self.module is None:
                return self.function(*self.args, **self.kwargs)
            return self.function(self.module, *self.args, **self.kwargs)
        given = dict(zip(self.names, tensors))
        named = {n: given.get(f"arg {n}", v) for n, v in self.named.items()}
        if self.module is None:
            return self.function(**named)
        from torch.nn.utils.stateless import _reparametrize_module

        parameters = {n.removeprefix("parameter "): t for n, t in given.items()
                      if n.startswith("parameter ")}
        with _reparametrize_module(self.module, parameters):
            return self.function(self.module, **named)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.inputs()]


class _Recorded(torch.autograd.Function):
    """The reference's call, its inner graph kept, so that backward can record each VJP."""

    @staticmethod
    def forward(ctx, run, entry, *tensors):
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(t.requires_grad) for t in tensors]
            output = run(leaves)
        ctx.inner, ctx.leaves, ctx.call, ctx.names = output, leaves, entry, run.names
        return output.detach().clone()

    @staticmethod
    def backward(ctx, grad):
        wanted = [leaf for leaf in ctx.leaves if leaf.requires_grad]
        found = iter(torch.autograd.grad(ctx.inner, wanted, grad, retain_graph=True,
                                         allow_unused=True) if ctx.inner.requires_grad else
                     [None] * len(wanted))
        grads = [next(found) if leaf.requires_grad else None for leaf in ctx.leaves]
        ctx.call["vjps"].append({"grad": grad.detach().clone(), "grads": {
            name: g.detach().clone() for name, g in zip(ctx.names, grads) if g is not None}})
        return (None, None, *grads)


class _Replayed(torch.autograd.Function):
    """A recorded output in the student's graph; backward returns the recorded VJP, or on a
    miss the student's own function's."""

    @staticmethod
    def forward(ctx, call, own, misses, *tensors):
        ctx.call, ctx.own, ctx.misses = call, own, misses
        ctx.save_for_backward(*tensors)
        return call["output"].clone()

    @staticmethod
    def backward(ctx, grad):
        tensors = ctx.saved_tensors
        for vjp in ctx.call["vjps"]:
            if _close(vjp["grad"], grad):
                return (None, None, None, *[vjp["grads"].get(n) for n in ctx.own.names])
        ctx.misses.append({"target": ctx.call["target"], "why": "gradient", "gap": float("nan")})
        with torch.enable_grad():
            leaves = [t.detach().requires_grad_(t.requires_grad) for t in tensors]
            output = ctx.own(leaves)
            wanted = [leaf for leaf in leaves if leaf.requires_grad]
            found = iter(torch.autograd.grad(output, wanted, grad, allow_unused=True)
                         if output.requires_grad else [None] * len(wanted))
        return (None, None, None, *[next(found) if leaf.requires_grad else None for leaf in leaves])


# ------------------------------------------------------------------ what a wrapper does per call

class Recorder:
    """Record every call of the reference into `table` (with VJPs in gradient cases)."""

    def __init__(self, table: list):
        self.table = table

    def call(self, patch, target, call: Call):
        args, state = call.record()
        entry = {"target": target, "args": args, "state": state, "parent": patch.parent(),
                 "vjps": []}
        self.table.append(entry)
        with patch.inside(target):
            if call.needs_grad():
                output = _Recorded.apply(call, entry, *[t for _, t in call.inputs()])
            else:
                output = call()
        entry["output"] = plain(output).clone() if isinstance(output, torch.Tensor) else output
        return output


def _tensors_only(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and bool(value) and \
        all(isinstance(t, torch.Tensor) for t in value)


class Replay:
    """Calls to targets in `replace` come from `table` (the student's own function on a miss);
    every call is noted in patch.seen, so a check can compare them with the reference's."""

    def __init__(self, table: list, replace: Iterable[str] = ()):
        self.table, self.replace = table, set(replace)

    def call(self, patch, target, call: Call):
        args, state = call.record()
        patch.seen.append({"target": target, "args": args, "state": state,
                           "parent": patch.parent()})
        if target in self.replace:
            found = find(self.table, target, args, state)
            if found is not None and isinstance(found.get("output"), torch.Tensor):
                patch.replaced.append(target)
                if call.needs_grad() and found["vjps"]:
                    return _Replayed.apply(found, call, patch.misses,
                                           *[t for _, t in call.inputs()])
                if call.on_meta():  # the recorded output is a placeholder of its shape
                    return torch.empty_like(found["output"], device="meta")
                return found["output"].clone()
            if found is not None and _tensors_only(found.get("output")) and not call.needs_grad():
                # a tuple of tensors (lesson 09's output and logsumexp), outside autograd
                patch.replaced.append(target)
                return type(found["output"])(t.clone() for t in found["output"])
            name, distance = closest(self.table, target, args, state)
            patch.misses.append({"target": target, "why": name, "gap": distance})
        with patch.inside(target):
            return call()


# ---------------------------------------------------------------------- putting wrappers in place

_MODULES: dict[str, tuple[int, list[tuple[str, Any]]]] = {}  # package -> (len(sys.modules), found)


def package_modules(package: str) -> list:
    """The modules of `package` (itself and its submodules) in sys.modules. A check enters a
    patch for every case, and looking through the thousand modules torch brings cost a tenth of
    its time: the entries found are kept, and looked through again only when sys.modules has
    changed size or one of them is no longer what it was."""
    size, kept = _MODULES.get(package, (-1, []))
    if size != len(sys.modules) or any(sys.modules.get(name, _MODULES) is not value
                                       for name, value in kept):
        prefix = package + "."
        kept = [(name, value) for name, value in list(sys.modules.items())
                if name == package or name.startswith(prefix)]
        _MODULES[package] = (len(sys.modules), kept)
    return [value for _, value in kept if value is not None]

class Patch:
    """Put a wrapper around each target of `package` (its modules' names and its classes'
    methods, plus any extra namespaces, and the methods of extra classes of the same name) while
    the `with` block runs; undo it afterwards."""

    def __init__(self, package: str, targets: Iterable[str], action,
                 namespaces: Iterable[dict] = (), classes: Iterable[type] = ()):
        self.package, self.targets, self.action = package, sorted(set(targets)), action
        self.namespaces, self.classes = list(namespaces), list(classes)
        self.stack: list[str] = []
        self.seen: list[dict] = []
        self.misses: list[dict] = []
        self.replaced: list[str] = []
        self._undo: list = []

    def parent(self) -> str | None:
        return self.stack[-1] if self.stack else None

    def inside(self, target: str):
        patch = self

        class Inside:
            def __enter__(self):
                patch.stack.append(target)

            def __exit__(self, *exc):
                patch.stack.pop()

        return Inside()

    def __enter__(self) -> "Patch":
        # every module first: one imported while wrappers are in place would keep them for good
        for target in self.targets:
            try:
                importlib.import_module(f"{self.package}.{split(target)[0]}")
            except ImportError:
                continue
        index: dict[int, list[tuple[dict, str]]] = {}  # filled by the first function target
        for target in self.targets:
            try:
                self._install(target, index)
            except (ImportError, AttributeError):
                continue  # the student's package lacks it: nothing to stand in for
        return self

    def __exit__(self, *exc) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()

    def _install(self, target: str, index: dict[int, list[tuple[dict, str]]]) -> None:
        """Wrap one target: a function under every name of the package that holds it (`index`:
        id of a value -> the names holding it, in the order of the namespaces and their keys,
        kept up to date as names get wrappers), a method in its class."""
        module_name, owner, method = split(target)
        module = importlib.import_module(f"{self.package}.{module_name}")
        if method is None:
            original = getattr(module, owner)
            wrapper = self._function_wrapper(target, original)
            if not index:  # every module is imported now: one look through their names
                for namespace in self._namespaces():
                    for key, value in list(namespace.items()):
                        index.setdefault(id(value), []).append((namespace, key))
            for namespace, key in index.get(id(original), []):
                if namespace.get(key, wrapper) is original:
                    namespace[key] = wrapper
                    index.setdefault(id(wrapper), []).append((namespace, key))
                    self._undo.append(lambda ns=namespace, k=key, v=original: ns.__setitem__(k, v))
            return
        found = [getattr(module, owner)] + [c for c in self.classes if c.__name__ == owner]
        for cls in dict.fromkeys(found):
            original = cls.__dict__.get(method)
            if original is None or not callable(original):
                continue
            setattr(cls, method, self._method_wrapper(target, original))
            self._undo.append(lambda cls=cls, original=original: setattr(cls, method, original))

    def _namespaces(self) -> list[dict]:
        found = [vars(m) for m in package_modules(self.package)]
        return found + [ns for ns in self.namespaces if all(ns is not f for f in found)]

    def _function_wrapper(self, target, original):
        patch = self

        def wrapper(*args, **kwargs):
            return patch.action.call(patch, target, Call(original, None, args, kwargs))

        wrapper.__wrapped__ = original
        wrapper.__name__ = getattr(original, "__name__", "wrapper")
        wrapper.__signature__ = signature_of(original)
        return wrapper

    def _method_wrapper(self, target, original):
        patch = self

        def wrapper(module, *args, **kwargs):
            return patch.action.call(patch, target, Call(original, module, args, kwargs))

        wrapper.__wrapped__ = original
        wrapper.__name__ = getattr(original, "__name__", "wrapper")
        return wrapper


# ------------------------------------------------------------------------- tables in files

def pack(tables: dict[str, list[dict]]) -> dict:
    """Tables (name -> calls) for torch.save, every distinct tensor stored once."""
    pool: list[torch.Tensor] = []
    index: dict[tuple, int] = {}

    def ref(value):
        if isinstance(value, torch.Tensor):
            tensor = value.detach().contiguous()
            key = (tensor.dtype, tuple(tensor.shape), tensor.numpy().tobytes()
                   if tensor.dtype != torch.bfloat16 else tensor.float().numpy().tobytes())
            if key not in index:
                index[key] = len(pool)
                pool.append(tensor.clone())
            return {"tensor": index[key]}
        if isinstance(value, list):
            return [ref(v) for v in value]
        if isinstance(value, dict):
            return {k: ref(v) for k, v in value.items()}
        return value

    return {"tensors": pool, "tables": {name: ref(calls) for name, calls in tables.items()}}


def unpack(packed: dict) -> dict[str, list[dict]]:
    """The tables of `pack`, tensors back in place."""
    pool = packed["tensors"]

    def resolve(value):
        if isinstance(value, dict):
            if value.keys() == {"tensor"} and isinstance(value["tensor"], int):
                return pool[value["tensor"]]
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    return {name: resolve(calls) for name, calls in packed["tables"].items()}


def save(value, path: Path) -> None:
    """torch.save, gzipped (the tables are mostly float64 noise that compresses to about 40%)."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    Path(path).write_bytes(gzip.compress(buffer.getvalue(), compresslevel=9, mtime=0))


def load(path: Path):
    """What `save` wrote (weights_only: tensors, numbers, strings, lists and dicts only)."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return torch.load(io.BytesIO(data), weights_only=True)
