"""The case-kind matrix: which kinds of case every check must carry, from what its exercise does.

What an exercise does is read from a traced run of the reference (solutions/) on the check's own
float64 cases, never from a hand-kept list: the arguments every call receives (tensors, their
dtypes, devices and shapes, bool masks), the aten operations it runs (a softmax's max, a random
draw), whether its output carries a gradient, and the names in its signature. What a check
carries is read from the same run: the dtype and device of each case's inputs and outputs, the
cases that call the exercise with autograd on, the rows its softmax sees.

    properties(check) -> the set of PROPERTIES the exercise has
    required(props)   -> the KINDS those properties call for (RULES)
    carried(check)    -> the KINDS the check's cases hold
    missing(check)    -> required - carried

tests/test_case_kinds.py holds every check of every lesson to it; `python -m course.checks.matrix
[NN. ...]` prints the table, and `--write` puts it into docs/CONTRIBUTING.md (a test keeps that
current).
"""
from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# kind -> what a case of that kind is (the words of the table)
KINDS = {
    "meta": "a case on the `meta` device (tensors made inside follow the input's device)",
    "float32": "the case in float32, compared with the reference's float32 (the dtype follows "
               "the input's)",
    "bfloat16": "the case in bfloat16, within bfloat16's tolerance",
    "gradients": "the gradients of a fixed loss, compared with the reference's",
    "edge gradients": "gradients where a mask hides a whole row or slice (never NaN)",
    "size": "a case tagged `size` whose inputs are larger than any other case's (and >= 20)",
    "large scores": "scores with a row whose max is >= 710 (exp overflows) and a row whose "
                    "every entry is <= -746 (exp underflows to 0)",
    "determinism": "the same input twice (a module in training mode): the same output",
    "q != k": "a case with a different number of queries and keys",
}

# property -> (what it means, the kinds it calls for)
RULES = {
    "tensor input": ("receives a tensor (its results must follow its device)", ("meta",)),
    "floating input": ("receives floating tensors (or holds floating parameters), or takes a "
                       "`dtype`", ("float32", "bfloat16")),
    "backward": ("its output carries a gradient to a floating input or parameter",
                 ("gradients",)),
    "masked": "receives a bool mask, or scores holding -inf",
    "size": ("takes a length: a tensor with an axis of free size, or an int size",
             ("size",)),
    "softmax": ("takes scores: runs a softmax (a max, a softmax or a logsumexp along an axis)",
                ("large scores",)),
    "random": ("a module (it may hold dropout) or draws random numbers", ("determinism",)),
    "queries and keys": ("its signature takes queries and keys (q, k) or a decoder's x and an "
                         "encoder's memory", ("q != k",)),
}
# a property that calls for a kind only with another one
JOINT = {("backward", "masked"): ("edge gradients",)}
PROPERTIES = tuple(RULES)

OVERFLOW, UNDERFLOW = 710.0, -746.0  # exp(710) = inf, exp(-746) = 0 in float64
QUERY_KEY_NAMES = (("q", "k"), ("x", "memory"))
_RANDOM_OPS = {"bernoulli", "bernoulli_", "rand", "rand_like", "randn", "randn_like", "randint",
               "randint_like", "normal", "normal_", "uniform", "uniform_", "native_dropout",
               "randperm", "multinomial", "exponential_", "geometric_", "cauchy_",
               "log_normal_", "random_"}
_SOFTMAX_OPS = {"amax", "max", "_softmax", "_log_softmax", "logsumexp"}
_FACTORY_OPS = {"empty", "zeros", "ones", "full", "arange", "scalar_tensor", "lift_fresh",
                "eye", "linspace", "empty_strided", "new_empty", "new_zeros", "new_ones",
                "new_full", "zeros_like", "ones_like", "full_like", "empty_like"}


@dataclass
class Trace:
    """One case's run of the reference: what the exercise received and did."""

    calls: list = field(default_factory=list)      # (args, kwargs) of each call of the exercise
    ops: set = field(default_factory=set)          # aten op names run inside it
    rows: list = field(default_factory=list)       # (max over a row) of every softmax input row
    grad_calls: int = 0                            # calls made with autograd on and inputs that need it
    outputs: dict = field(default_factory=dict)    # the case's outputs
    module: bool = False
    failed: str = ""


class _Recorder(TorchDispatchMode):
    def __init__(self, trace: Trace):
        super().__init__()
        self.trace, self.depth = trace, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.depth > 0:
            name = func.overloadpacket.__name__
            self.trace.ops.add(name)
            if name in _SOFTMAX_OPS and args and isinstance(args[0], torch.Tensor):
                self._rows(func, args, kwargs)
        return func(*args, **kwargs)

    def _rows(self, func, args, kwargs):
        x = args[0]
        if x.device.type == "meta" or not x.dtype.is_floating_point or x.ndim == 0:
            return
        dim = args[1] if len(args) > 1 else kwargs.get("dim", -1)
        if isinstance(dim, (list, tuple)):
            dim = dim[0] if dim else -1
        if not isinstance(dim, int):
            return
        with torch._C.DisableTorchFunctionSubclass():
            finite = torch.where(torch.isfinite(x), x, torch.full_like(x, -math.inf)).detach()
            top = finite.double().amax(dim=dim).flatten().tolist()
        self.trace.rows += [t for t in top if t != -math.inf]


def _wrap(impl, trace: Trace, recorder: _Recorder):
    """The reference, watched: every call's arguments, and the aten ops run inside it."""
    if isinstance(impl, type) and issubclass(impl, torch.nn.Module):
        trace.module = True

        @functools.wraps(impl, updated=())
        def build(*args, **kwargs):
            module = impl(*args, **kwargs)

            # the case's own pre-hooks (another dtype or device: kinds.Variant) run after this
            # one: what forward received is read again after it ran
            def before(_module, a, kw):
                trace.calls.append((a, kw))
                recorder.depth += 1

            def after(_module, a, kw, out):
                trace.calls[-1] = (a, kw)
                trace.grad_calls += _needs_grad(a, kw, _module)
                recorder.depth -= 1

            module.register_forward_pre_hook(before, with_kwargs=True)
            module.register_forward_hook(after, with_kwargs=True)
            return module
        return build

    @functools.wraps(impl)
    def call(*args, **kwargs):
        trace.calls.append((args, kwargs))
        trace.grad_calls += _needs_grad(args, kwargs)
        recorder.depth += 1
        try:
            return impl(*args, **kwargs)
        finally:
            recorder.depth -= 1
    del call.__wrapped__  # a case that unwraps the engine's guard (f.__wrapped__) keeps this one
    return call


def _tensors(value, found=None):
    found = [] if found is None else found
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors(item, found)
    return found


def _needs_grad(args, kwargs, module=None) -> bool:
    if not torch.is_grad_enabled():
        return False
    tensors = _tensors([args, kwargs]) + (list(module.parameters()) if module is not None else [])
    return any(t.requires_grad for t in tensors)


def trace_case(check, case, impl=None) -> Trace:
    """Run one case on the reference (or `impl`) with the exercise watched."""
    from course.checks.outputs import as_outputs

    impl = impl if impl is not None else check.resolve("solutions")
    trace = Trace()
    recorder = _Recorder(trace)
    try:
        with recorder, torch.no_grad():
            trace.outputs = as_outputs(case.run(_wrap(impl, trace, recorder)))
    except Exception as error:  # noqa: BLE001 - a case the trace cannot run says nothing
        trace.failed = f"{type(error).__name__}: {error}"
    return trace


@functools.lru_cache(maxsize=None)
def traces(check_id: str) -> tuple[tuple[object, Trace], ...]:
    """Every case of the check (but those that measure memory: the profiler is not traced), with
    its trace on the reference."""
    from course.checks.registry import get_check

    check = get_check(check_id)
    return tuple((case, trace_case(check, case)) for case in check.cases
                 if "memory" not in case.tags)


# ------------------------------------------------------------------------------ properties

def _signature(check) -> list[str]:
    impl = check.resolve("solutions")
    function = impl.forward if isinstance(impl, type) else impl
    function = getattr(function, "forward", function)
    try:
        return list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return []


def _all_false_line(mask: torch.Tensor) -> bool:
    """Some line of the bool tensor along some axis of size > 1 is all False."""
    if mask.device.type == "meta":
        return False
    return any(mask.shape[d] > 1 and bool((~mask.any(dim=d)).any()) for d in range(mask.ndim))


def properties(check) -> set[str]:
    """What the exercise does, from its float64 cases' traces on the reference."""
    found = set()
    plain = [(c, t) for c, t in traces(check.id) if c.variant is None and not t.failed]
    for case, trace in plain:
        tensors = [t for args, kwargs in trace.calls for t in _tensors([args, kwargs])]
        ints = [v for args, kwargs in trace.calls for v in list(args) + list(kwargs.values())
                if isinstance(v, int) and not isinstance(v, bool)]
        if tensors:
            found.add("tensor input")
        if any(t.is_floating_point() for t in tensors) or trace.module or \
                "dtype" in _signature(check):
            found.add("floating input")
        if any(t.dtype == torch.bool for t in tensors) or any(
                t.is_floating_point() and t.device.type != "meta" and bool(torch.isneginf(t).any())
                for t in tensors):
            found.add("masked")
        if any(t.ndim >= 1 for t in tensors) or ints:
            found.add("size")
        if trace.ops & _SOFTMAX_OPS and trace.rows:
            found.add("softmax")
        if trace.module or trace.ops & _RANDOM_OPS:
            found.add("random")
        if trace.grad_calls:
            found.add("backward")
    if "floating input" in found and "backward" not in found and _has_backward(check, plain):
        found.add("backward")
    names = _signature(check)
    if any(a in names and b in names for a, b in QUERY_KEY_NAMES) and \
            _other_lengths(check, plain):
        found.add("queries and keys")
    return found


def _other_lengths(check, plain) -> bool:
    """Whether the exercise's queries are independent of the keys' positions, so that a query
    may come without its own key: some traced call has q ≠ k already, or the reference, given a
    copy of query 0 as an extra last query, gives that query query 0's output. A recurrence (one
    query and one key per token) raises there, and causal self-attention gives the extra query
    every key: they call for no q ≠ k case."""
    names = [n for n in _signature(check) if n != "self"]
    impl = check.resolve("solutions")
    for _case, trace in plain:
        if trace.module:
            return True  # a module's queries and keys come from its own inputs (x, memory)
        if any(_queries_differ(check, Trace(calls=[call])) for call in trace.calls):
            return True
    for _case, trace in plain:
        for args, kwargs in trace.calls:
            bound = dict(zip(names, args))
            bound.update(kwargs)
            q, k = bound.get("q"), bound.get("k")
            if not isinstance(q, torch.Tensor) or q.ndim < 2 or q.device.type == "meta" or \
                    min(q.shape[-2], getattr(k, "shape", (2, 2))[-2]) < 2:
                continue  # one key: every query sees the same, causal or not
            bound["q"] = torch.cat([q, q[..., :1, :]], dim=-2)
            try:
                with torch.no_grad():
                    out = _tensors([impl(**bound)])
            except Exception:  # noqa: BLE001 - the reference does not take other lengths here
                continue
            if out and out[0].ndim >= 2 and out[0].shape[-2] == q.shape[-2] + 1 and \
                    torch.allclose(out[0][..., -1, :], out[0][..., 0, :], equal_nan=True):
                return True
    return False


def _has_backward(check, plain) -> bool:
    """Whether the reference's output carries a gradient: one call of the first plain case run
    again with autograd on."""
    impl = check.resolve("solutions")
    for case, trace in plain:
        if not trace.calls:
            continue
        args, kwargs = trace.calls[0]
        if trace.module:
            return True  # its parameters take gradients
        leaves = [t for t in _tensors([args, kwargs]) if t.is_floating_point()
                  and t.device.type != "meta"]
        if not leaves:
            continue
        with torch.enable_grad():
            copies = {id(t): t.detach().clone().requires_grad_(True) for t in leaves}

            def swap(value):
                if isinstance(value, torch.Tensor):
                    return copies.get(id(value), value)
                if isinstance(value, (list, tuple)):
                    return type(value)(swap(v) for v in value)
                if isinstance(value, dict):
                    return {k: swap(v) for k, v in value.items()}
                return value
            try:
                out = impl(*swap(list(args)), **swap(dict(kwargs)))
            except Exception:  # noqa: BLE001
                continue
        return any(t.requires_grad for t in _tensors([out]))
    return False


def required(found: set[str]) -> set[str]:
    kinds = {kind for prop in found if prop in RULES and isinstance(RULES[prop], tuple)
             for kind in RULES[prop][1]}
    for props, extra in JOINT.items():
        if set(props) <= found:
            kinds |= set(extra)
    return kinds


# ------------------------------------------------------------------------------ carried kinds

def carried(check) -> set[str]:
    """The kinds the check's cases hold, read from their traces."""
    found = set()
    all_traces = [(c, t) for c, t in traces(check.id) if not t.failed]
    plain = [(c, t) for c, t in all_traces if c.variant is None]
    sizes = {}
    for case, trace in all_traces:
        tensors = [t for args, kwargs in trace.calls for t in _tensors([args, kwargs])]
        outputs = [v for k, v in trace.outputs.items() if not str(k).startswith("param ")]
        if any(t.device.type == "meta" for t in tensors):
            found.add("meta")
        for dtype, kind in ((torch.float32, "float32"), (torch.bfloat16, "bfloat16")):
            floats = [t for t in tensors if t.is_floating_point()]
            if (floats and all(t.dtype == dtype for t in floats)) or (
                    not floats and any(o.dtype == dtype for o in outputs)):
                found.add(kind)
        if "random" in case.tags and case.expect is not None:
            found.add("determinism")
    for case, trace in plain:
        tensors = [t for args, kwargs in trace.calls for t in _tensors([args, kwargs])]
        if trace.grad_calls:
            found.add("gradients")
            if any(t.dtype == torch.bool and _all_false_line(t) for t in tensors) or any(
                    t.is_floating_point() and t.device.type != "meta"
                    and bool(torch.isneginf(t).any()) for t in tensors):
                found.add("edge gradients")
        if trace.rows and max(trace.rows) >= OVERFLOW and min(trace.rows) <= UNDERFLOW:
            found.add("large scores")
        if _queries_differ(check, trace):
            found.add("q != k")
        sizes[case.name] = _largest(trace)
    tagged = [c.name for c, _ in plain if "size" in c.tags]
    others = [s for name, s in sizes.items() if name not in tagged]
    if tagged and max(sizes.get(n, 0) for n in tagged) > max(others, default=0) and \
            max(sizes.get(n, 0) for n in tagged) >= 20:
        found.add("size")
    return found


def _largest(trace: Trace) -> int:
    sizes = [0]
    for args, kwargs in trace.calls:
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, int) and not isinstance(value, bool):
                sizes.append(value)
        sizes += [max(t.shape, default=0) for t in _tensors([args, kwargs])]
    return max(sizes)


def _queries_differ(check, trace: Trace) -> bool:
    names = _signature(check)
    for args, kwargs in trace.calls:
        bound = dict(zip([n for n in names if n != "self"], args))
        bound.update(kwargs)
        for q, k in QUERY_KEY_NAMES:
            a, b = bound.get(q), bound.get(k)
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.ndim >= 2 \
                    and b.ndim >= 2 and a.shape[-2] != b.shape[-2]:
                return True
    return False


def missing(check) -> set[str]:
    return required(properties(check)) - carried(check)


# ---------------------------------------------------------------------------------- the table

ORDER = tuple(KINDS)


def table(checks=None) -> list[tuple[str, set[str], set[str], set[str]]]:
    """(check id, its properties, the kinds required, the kinds carried) for every check."""
    from course.checks.registry import all_checks

    rows = []
    for check in (checks or all_checks().values()):
        found = properties(check)
        rows.append((check.id, found, required(found), carried(check)))
    return rows


def markdown(rows) -> str:
    """The matrix as a markdown table: x carried and required, - not required, MISSING."""
    abbreviations = {"meta": "meta", "float32": "f32", "bfloat16": "bf16", "gradients": "grad",
                     "edge gradients": "edge", "size": "size", "large scores": "large",
                     "determinism": "det", "q != k": "q≠k"}
    head = "| check | " + " | ".join(abbreviations[k] for k in ORDER) + " |"
    lines = [head, "|---|" + "---|" * len(ORDER)]
    for check_id, _, need, have in rows:
        cells = []
        for kind in ORDER:
            if kind in need:
                cells.append("x" if kind in have else "**MISSING**")
            else:
                cells.append("(x)" if kind in have else "-")
        lines.append(f"| {check_id} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


BEGIN, END = "<!-- case-kind matrix: begin -->", "<!-- case-kind matrix: end -->"


def document(rows=None) -> str:
    """What docs/CONTRIBUTING.md shows between BEGIN and END: the rules, then the matrix."""
    rows = table() if rows is None else rows
    rules = ["| what the exercise does (traced on the reference) | kinds it calls for |",
             "|---|---|"]
    for prop, rule in RULES.items():
        kinds = rule[1] if isinstance(rule, tuple) else ()
        joint = [f"{', '.join(extra)} (with {' and '.join(p for p in props if p != prop)})"
                 for props, extra in JOINT.items() if prop in props]
        words = rule[0] if isinstance(rule, tuple) else rule
        rules.append(f"| **{prop}**: {words} | {', '.join(list(kinds) + joint) or '-'} |")
    kinds = ["| kind | a case that |", "|---|---|"] + [f"| {k} | {v} |" for k, v in KINDS.items()]
    gaps = sum(len(need - have) for _, _, need, have in rows)
    return "\n".join([
        BEGIN,
        "<!-- generated by `python -m course.checks.matrix --write`; "
        "tests/test_case_kinds.py keeps it current -->",
        "", *rules, "", *kinds, "",
        "x: carried and required; (x): carried, not required; -: not required; **MISSING**: "
        f"required and not carried ({gaps} in all).", "",
        markdown(rows), END])


def write(path=None) -> None:
    from course import ROOT

    path = path or ROOT / "docs" / "CONTRIBUTING.md"
    text = path.read_text()
    start, stop = text.index(BEGIN), text.index(END) + len(END)
    path.write_text(text[:start] + document() + text[stop:])


def main(argv=None) -> int:
    import sys

    from course.checks.registry import all_checks

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--write" in argv:
        write()
        return 0
    only = argv or [""]
    rows = table([c for c in all_checks().values() if any(c.id.startswith(o) for o in only)])
    print(markdown(rows))
    gaps = {check_id: sorted(need - have) for check_id, _, need, have in rows if need - have}
    print(f"\n{sum(len(v) for v in gaps.values())} missing kinds in {len(gaps)} checks")
    for check_id, kinds in gaps.items():
        print(f"  {check_id}: {', '.join(kinds)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
