"""Run exercises on hidden inputs: the one piece of the grader that runs beside a student's code.

    python harness.py CASES.pt OUTDIR [i,j,...]    (in the sandbox; imports torch and `exercises`)

This file imports nothing but the standard library and torch, so it can be copied alone into a
sandbox that holds only the student's `exercises/` package: no course checks, no recorded
references, no solutions. It reads a list of plain cases (dicts of tensors, numbers, strings;
see `run_case`), runs each on the student's code and writes the outputs, plain tensors, one file
per check to OUTDIR/<index>.pt. The grader imports the same `run_case` to run the solutions on the
same cases in its own process, and compares the two there.

Protocol on the original stdout, one JSON line per step: {"start": i} before check i, {"done": i}
after it. The student's own printing goes to a log file, never into the protocol.

An entry that carries "stand_ins" and "calls" (course/confirm/entries.py) is judged on its own:
while its case i runs, the exercises it calls are answered from the recorded table calls[i]
(standins.py, copied beside this file), so a bug in one of them is not charged to this one.
"""
from __future__ import annotations

import importlib
import json
import os
import sys

import torch

try:  # inside the course; in the sandbox, standins.py and flat.py lie beside this file
    from course.confirm import flat, standins
except ImportError:  # pragma: no cover - the sandbox
    try:
        import standins
    except ImportError:
        standins = None
    try:
        import flat
    except ImportError:
        flat = None


def _tensors(value, found):
    """Every tensor inside nested lists, tuples and dicts, in order."""
    if isinstance(value, torch.Tensor):
        found.append(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _tensors(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _tensors(item, found)
    return found


def _clone(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_clone(v) for v in value)
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    return value


def _as_outputs(result) -> dict:
    """A tensor, tuple of tensors or dict of tensors -> {name: plain detached tensor}."""
    if isinstance(result, torch.Tensor):
        items = {"output": result}
    elif isinstance(result, dict):
        items = {f"output[{k}]": v for k, v in result.items()}
    elif isinstance(result, (tuple, list)):  # a nested pair, (out, (S, z)), by its indices
        items = {f"output[{i}][{j}]" if isinstance(v, (tuple, list)) else f"output[{i}]":
                 w if isinstance(v, (tuple, list)) else v
                 for i, v in enumerate(result)
                 for j, w in (enumerate(v) if isinstance(v, (tuple, list)) else [(0, v)])}
    elif result is None:
        raise TypeError("returned None (is a `return` statement missing?)")
    else:
        items = {"output": torch.as_tensor(result)}
    outputs = {}
    for name, value in items.items():
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(value)
        # a plain tensor, whatever subclass or view the student returned
        outputs[str(name)] = tensor.detach().as_subclass(torch.Tensor).clone().contiguous()
    return outputs


def _build(cls, case):
    module = cls(*case.get("init_args", []), **case.get("init_kwargs", {}))
    module = module.double()
    state = case.get("state")
    if state is not None:
        mine = dict(module.named_parameters())
        missing = sorted(set(state) - set(module.state_dict()))
        extra = sorted(set(mine) - set(state))
        if missing or extra:
            raise KeyError(f"parameters differ from the reference module's: missing {missing}, "
                           f"unexpected {extra}")
        module.load_state_dict(state, strict=False)  # extra buffers of the student's are fine
    return module


def _converted(value, dtype, device):
    """Floating tensors to `dtype`, every tensor to `device` (None: unchanged), inside lists,
    tuples and dicts."""
    if isinstance(value, torch.Tensor):
        if dtype is not None and value.is_floating_point():
            value = value.to(dtype)
        return value.to(device) if device is not None else value
    if isinstance(value, (list, tuple)):
        return type(value)(_converted(v, dtype, device) for v in value)
    if isinstance(value, dict):
        return {k: _converted(v, dtype, device) for k, v in value.items()}
    return value


# what code that reads values raises on the meta device: such code cannot be judged there
DATA_DEPENDENT = ("cannot be called on meta tensors", "Cannot copy out of meta tensor",
                  "data-independent implementation does not exist", "meta device type tensor",
                  "aten::_local_scalar_dense", "is_nonzero")
ON_DEVICE = "output on the inputs' device"


def _on_device(call, args, kwargs) -> dict:
    """A case on the meta device: whether every output is on meta (values do not exist there)."""
    try:
        with torch.no_grad():
            result = call(*args, **kwargs)
    except (RuntimeError, NotImplementedError, TypeError) as error:
        if any(text in str(error) for text in DATA_DEPENDENT):
            return {ON_DEVICE: torch.tensor(True)}  # the code reads values: not judged here
        raise
    found = _tensors([result], [])
    return {ON_DEVICE: torch.tensor(bool(found) and all(t.device.type == "meta" for t in found))}


REPEATED = "the same output each time"


def _repeated(call, module, args, kwargs) -> dict:
    """A case run twice (a module in training mode, as every case runs), each from another state
    of torch's random generator: whether the two agree (no dropout left on)."""
    if module is not None:
        module.train(True)
    runs = []
    for seed in (1, 2):
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            runs.append(_as_outputs(call(*_clone(args), **_clone(kwargs))))
    return {REPEATED: torch.tensor(_identical(runs[0], runs[1]))}


def _identical(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for key, x in a.items():
        y = b[key]
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.is_floating_point:
            if not bool(((x == y) | (torch.isnan(x) & torch.isnan(y))).all()):
                return False
        elif not torch.equal(x, y):
            return False
    return True


def _loss_weights(shape, seed, dtype):
    generator = torch.Generator().manual_seed(int(seed))
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float64).to(dtype)


def run_case(impl, case: dict) -> dict:
    """Run one case on `impl` (a function or an nn.Module class); return {name: tensor}.

    case["kind"]:
      "call": impl(*args, **kwargs)
      "module": build impl(*init_args, **init_kwargs) in float64, load case["state"] (every
          parameter, by name), call its method (default forward) on args/kwargs. With
          case["grad"], also the gradients of sum(output * w) (w drawn from case["loss_seed"])
          w.r.t. every floating tensor argument ("grad arg i" / "grad <kwarg>") and every
          parameter ("grad param <name>").
      "init": torch.manual_seed(case["torch_seed"]), build the module (no state), return its
          state ("state <name>"): how the module initialises its parameters.
    case["repeat"]: the call twice (from other random states); the one output says whether the
    two agree.
    case["dtype"] ("float32", ...): floating arguments and the module's parameters in that dtype
    (the outputs' dtype is then part of the answer). case["backward_peak_below"] (bytes, with
    "grad"): also PEAK, whether forward and backward together held fewer bytes above the inputs
    than that (CPU profiler), where a lesson promises memory (lesson 09's tiles). case["device"] ("meta"): arguments and
    module on that device, where tensors have no values; the one output says whether every
    result is on it (a tensor made on a fixed device inside the code raises or lands elsewhere).
    Every other call also returns "inputs modified": one bool per tensor argument.
    """
    kind = case["kind"]
    if kind == "init":
        torch.manual_seed(int(case["torch_seed"]))
        module = impl(*case.get("init_args", []), **case.get("init_kwargs", {})).double()
        return {f"state {k}": v.detach().clone() for k, v in module.state_dict().items()}
    dtype = getattr(torch, case["dtype"]) if case.get("dtype") else None
    device = case.get("device")
    args = _converted(_clone(case.get("args", [])), dtype, device)
    kwargs = _converted(_clone(case.get("kwargs", {})), dtype, device)
    inputs = _tensors([args, kwargs], [])
    grad = bool(case.get("grad"))
    module = None
    if kind == "module":
        module = _build(impl, case)
        if dtype is not None:
            module.to(dtype)
        if device is not None:
            module.to(device)
        call = getattr(module, case.get("method", "forward")) if case.get("method") else module
    else:
        call = impl
    if device is not None:
        return _on_device(call, args, kwargs)
    if case.get("repeat"):
        return _repeated(call, module, args, kwargs)
    before = [t.clone() for t in inputs]
    if not grad:
        with torch.no_grad():
            outputs = _as_outputs(call(*args, **kwargs))
    else:
        outputs = _with_gradients(call, args, kwargs, module, case.get("loss_seed", 0))
        if case.get("backward_peak_below") is not None:
            peak = _training_peak(call, _clone(args), _clone(kwargs))
            outputs[PEAK] = torch.tensor(peak < int(case["backward_peak_below"]))
    outputs["inputs modified"] = torch.tensor(
        [not torch.equal(b, t.detach()) for b, t in zip(before, inputs)], dtype=torch.bool)
    return outputs


def _with_gradients(call, args, kwargs, module, loss_seed) -> dict:
    """The outputs of call(*args, **kwargs) and the gradients of sum(output * w) with respect to
    every floating tensor argument and every parameter of `module` (NaN where none arrives)."""
    named = [(f"grad arg {i}", a) for i, a in enumerate(args)] + \
            [(f"grad {k}", v) for k, v in kwargs.items()]
    leaves = [(n, t) for n, t in named if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for _, t in leaves:
        t.requires_grad_(True)
    parameters = [(f"grad param {n}", p) for n, p in module.named_parameters()] \
        if module is not None else []
    with torch.enable_grad():
        result = call(*args, **kwargs)
        outputs = _as_outputs(result)
        main = result if isinstance(result, torch.Tensor) else None
        targets = leaves + parameters
        grads = [None] * len(targets)
        if main is not None and main.requires_grad:
            loss = (main * _loss_weights(main.shape, loss_seed, main.dtype)).sum()
            grads = torch.autograd.grad(loss, [t for _, t in targets], allow_unused=True)
    for (name, target), g in zip(targets, grads):
        outputs[name] = torch.full_like(target.detach(), float("nan")) if g is None \
            else g.detach().clone()
    for _, t in leaves:
        t.requires_grad_(False)
    return outputs


PEAK = "forward and backward held less than the limit"


def _training_peak(call, args, kwargs) -> int:
    """Peak bytes above the inputs of call(*args, **kwargs) and its backward (gradient of the
    output's sum), from the CPU profiler's allocation events, replayed in order."""
    from torch.profiler import ProfilerActivity, profile

    for t in _tensors([args, kwargs], []):
        if t.is_floating_point():
            t.requires_grad_(True)

    def run():
        with torch.enable_grad():
            out = call(*args, **kwargs)
            out.backward(torch.ones_like(out))

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    cpu = torch.autograd.DeviceType.CPU
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]" and e.device_type() == cpu)
    current = peak = 0
    for _, nbytes in events:
        current += nbytes
        peak = max(peak, current)
    return peak


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def stand_ins(entry: dict, number: int, package: str = "exercises"):
    """A context that answers the entry's stand-in targets from case `number`'s recorded table."""
    targets, tables = entry.get("stand_ins"), entry.get("calls")
    if not targets or not tables or standins is None:
        return _Nothing()
    return standins.Patch(package, targets, standins.Replay(tables[number], replace=targets))


def resolve(target: str, package: str = "exercises"):
    module, attribute = target.split(":")
    return getattr(importlib.import_module(f"{package}.{module}"), attribute)


def main(argv: list[str]) -> int:
    cases_path, out_dir = argv[0], argv[1]
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    log = os.open(os.path.join(out_dir, "student-output.txt"),
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = sys.stderr = open(log, "w", buffering=1, closefd=False)
    torch.set_num_threads(1)
    checks = flat.load(cases_path) if flat is not None else torch.load(cases_path, weights_only=True)
    wanted = [int(i) for i in argv[2].split(",")] if len(argv) > 2 and argv[2] else range(len(checks))
    for index in wanted:
        entry = checks[index]
        protocol.write(json.dumps({"start": index}) + "\n")
        results = []
        try:
            impl = resolve(entry["target"])
        except BaseException as err:  # noqa: BLE001 - an import error fails every case
            impl, failure = None, f"importing {entry['target']} raised {type(err).__name__}: {err}"
        for number, case in enumerate(entry["cases"]):
            if impl is None:
                results.append({"error": failure})
                continue
            try:
                with stand_ins(entry, number):
                    results.append({"outputs": run_case(impl, case)})
            except BaseException as err:  # noqa: BLE001 - SystemExit too: it is the student's
                results.append({"error": f"raised {type(err).__name__}: {str(err)[:500]}"})
        torch.save(results, os.path.join(out_dir, f"{index}.pt"))
        protocol.write(json.dumps({"done": index}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
