"""The hint of a failed check, chosen from every case's outcome rather than the first failing one.

First, a finding that explains every other difference is shown whatever its place: a None
returned (also inside a tuple or dict, also when nothing raised), then randomness (a determinism
probe, course/checks/kinds.py deterministic_of, that fails). Otherwise the first failing case is
shown, with the first of these that applies (a hint registered with `claims_nan` only when that
case's result holds NaN where the reference has numbers):
1. a crash: a hint about that exception (the check's own `error_hints`, then the general ones,
   `.T` on the line that raised, an in-place change of a parameter in __init__); when only the
   cases of one class fail (another dtype, the meta device, a larger size: `CLASSES`), that
   class's hint; a module's parameter names or shapes: the case's own hint;
2. what the case's `accept` found (the same formula with a constant outside its range);
3. precision: a dtype that does not follow the input's, every difference at float32's rounding,
   or only the low-precision cases differ;
4. a cut, NaN or wrong gradient while the output agrees; only the cases of one class fail;
5. the first call to another exercise whose plain arguments (a dim, a flag) differ from the
   reference's: the evidence names the cause, and nothing below may contradict it;
6. the cases that fail are exactly those with one feature (`Case.tags`, `Check.tag_hints`);
7. the check's own diagnosis over the float64 outcomes (`Check.diagnose`: which wrong scale,
   which wrong RMSNorm formula, ...), then arguments that trade places, then the shown case's
   `diagnose(expected, got)`;
8. squeezed size-1 axes; the case's shape hint; a transposition the check explains;
9. the shown case's own hint.
Notes under the hint add what is observed without naming a cause: the right numbers in the wrong
places, and the first call to another exercise whose arguments leave the reference's ("where:"),
where values the callee takes as the same (course/checks/evidence.py EQUIVALENT) do not count, a
mask of the other polarity is named as such, and keys hidden elsewhere are counted, not called a
difference of inf. A gradient autograd gave as None is named as missing, never as NaN.
"""
from __future__ import annotations

import builtins
import math
import re

import torch

from course.checks import evidence
from course.checks.outputs import difference, largest_gap, missing
from course.confirm.standins import name_of, same
from course.i18n import N_, _, listed

INPLACE_HINT = N_("compute into a new tensor (`x = x - m`, `x.masked_fill(...)`), not in place "
                  "(`x -= m`, `x[...] = 0`, `x.sub_(m)`, `unsqueeze_`): the caller's tensors must "
                  "stay as they were")
SQUEEZE_HINT = N_("size-1 axes were dropped (a `.squeeze()` without a dim, or indexing with 0?): "
                  "keep every axis, also a batch, head or sequence of length 1")
CUT_GRADIENT_HINT = N_("the output is right but no gradient reaches {name}: something on its path "
                       "to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new "
                       "torch.tensor(...)), so it would never learn")
WRONG_GRADIENT_HINT = N_("the output is right but the gradient with respect to {name} differs: "
                         "part of its path to the output is cut (e.g. a .detach() in one of the "
                         "branches it feeds, or a branch computed under torch.no_grad())")
FLOAT32_RESULT = N_("your result is {got}, the reference (like the inputs) {want}: something in "
                    "your code makes {got} (torch.zeros/ones/empty/tensor/arange without dtype=, "
                    "or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) "
                    "so that the result keeps the input's dtype")
FLOAT32_INSIDE = N_("your result equals the reference only to about {gap:.1g} (relative), the "
                    "rounding of float32: somewhere a float32 tensor enters the computation "
                    "(torch.arange/zeros/tensor without dtype=, an integer arange divided by a "
                    "number, .float()): compute in the input's dtype")
NEAR = N_("your result is close to the reference (relative difference {gap:.1g}) but not within "
           "its tolerance: the structure is right and some formula is a variant of the right one: "
           "an approximation (nn.GELU(approximate='tanh') where the exact nn.GELU() is meant), "
           "another eps, or a half-precision step")
EXTRA_AXIS = N_("your shape {have} is the expected {want} with size-1 axes too many: a "
                "keepdim=True, unsqueeze or [..., None] where the axis should go away")
REORDERED = N_("your shape {have} holds the expected sizes {want} in another order: two axes "
               "trade places (a view or unflatten in the other order, or a transpose of other "
               "axes)")
TRANSPOSED = N_("your {key} is the reference's with its last two axes swapped: {detail}")
TRANSPOSED_DETAIL = N_("rows and columns trade places (a transpose too many, or one missing)")
PERMUTED = N_("your {key} holds the right numbers in the wrong places: the order of axes or "
              "channels differs (a reshape or view where a transpose, movedim or stack is needed, "
              "or axes taken in another order)")
DIVERGES = N_("where: the first difference from the reference is in what your {exercise} "
              "passes to {callee}: {arguments}{agree}")
RAISED_UNKNOWN = N_("your code raised before it returned, at the line shown above")
NONE_RETURN = N_("your {exercise} returned None: Python returns None from a function that ends "
                 "without a `return` (one is missing, or an `if` or a loop that never ran "
                 "skips it on this path), or it returns a variable that is still None here (a "
                 "loop over blocks or positions that never ran, an accumulator never assigned)")
CASE_TESTS = N_("this case tests: {hint}")

# the classes of bug the derived cases (course/checks/kinds.py) find
DTYPE_HINT = N_("your code works in float64 but not in the lower precision of this case (its "
                "name says which): the output's dtype must follow the input's, so nothing in "
                "it may fix a dtype (dtype=torch.float64, .double(), .float(), or "
                "torch.zeros/ones/tensor/arange without dtype=, which gives float32): create "
                "tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and compute "
                "every part in the input's dtype")
DEVICE_HINT = N_("a tensor created inside your code sits on a fixed device (the CPU) while the "
                 "inputs are elsewhere (here the `meta` device; on a GPU the same code fails): "
                 "create tensors with device=x.device (torch.arange(n, device=x.device), "
                 "zeros_like, x.new_ones(...)), or move them with .to(x.device); a tensor kept "
                 "in a module belongs in register_buffer, so that module.to() moves it")
RANDOM_HINT = N_("your code draws random numbers: the same input gives another output each "
                 "time. A dropout left on (nn.Dropout in training mode, or F.dropout(x, p), "
                 "whose training=True is the default even in eval mode), or torch.rand/randn/"
                 "bernoulli in forward: the course's modules have no dropout, so remove it "
                 "(every other difference of this check may come from it too)")

DTYPE_RESULT = N_("your result is {got} for {want} inputs: the output's dtype must follow the "
                  "input's, and something in your code fixes it ({fixes}): create tensors with "
                  "dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the "
                  "result")
DTYPE_VALUES = N_("in {dtype} your result differs from the reference's by more than {dtype}'s "
                  "rounding, while every float64 case passes: a step loses precision in low "
                  "precision (a difference of two large numbers such as mean(x**2) - mean(x)**2, a "
                  "huge constant such as -1e9 added to the scores, a sum over many terms in a "
                  "low dtype), or a part of it runs in another dtype and is cast back")
NAN_GRADIENT = N_("the output is right but the gradient with respect to {name} holds NaN where "
                  "the reference's is a number: a step of the forward pass makes NaN or inf "
                  "(0/0, exp of inf, the softmax of an all -inf row) and a later where, "
                  "masked_fill or nan_to_num hides it in the output, but backward still sends "
                  "NaN through it (NaN * 0 = NaN): make every step finite where it is computed "
                  "(clamp a count to at least 1 before dividing, give a fully masked row finite "
                  "scores before the softmax)")
TRANSPOSE_T = N_("`.T` reverses EVERY axis of a tensor with more than two (and is deprecated "
                 "there): with batch axes, k.T is not the keys transposed. Swap only the last two "
                 "axes: k.transpose(-2, -1) (or k.mT)")
INIT_IN_PLACE = N_("an in-place change of a parameter in __init__ (.zero_(), .fill_(), .mul_(), "
                   "+=) raises when autograd is on, as it is wherever the module is used: set "
                   "starting values inside `with torch.no_grad():`, or with nn.init.zeros_, "
                   "nn.init.ones_ or nn.init.constant_ (which do so)")
ARGUMENT = N_("your {exercise} calls {callee} with other arguments than the reference: "
              "{arguments}. That call is where your computation first leaves the reference's, so "
              "the bug is in what you pass there (the code before that call agrees)")
ARGUMENT_FIRST = N_("your {exercise} calls {callee} with other arguments than the reference: "
                    "{arguments}. Pass what the reference passes")


# (exception type name, pattern on the message, hint); the groups fill {0}, {1}, ...
ERROR_HINTS = [
    ("RuntimeError", r"more than one element of the written-to tensor refers to a single memory "
                     r"location",
     N_("an in-place operation (*=, +=, x[...] = ...) on a tensor whose entries share memory (an "
        "expand()ed view, such as one query broadcast over every position): compute into a new "
        "tensor (o = o * g), not in place")),
    ("NameError", r"name '(\w+)' is not defined",
     N_("`{0}` is not defined there: a typo, a name used before it is assigned, or a module "
        "not imported")),
    ("UnboundLocalError", r"'(\w+)'",
     N_("`{0}` is used before it is assigned on this path (an `if` branch that did not run?)")),
    ("AttributeError", r"'(\w+)' object has no attribute '(\w+)'",
     N_("a {0} has no attribute `{1}`: a misspelt name, a submodule never created in __init__, "
        "or a method called on the wrong object")),
    ("TypeError", r"'torch\.return_types\.(\w+)'",
     N_("torch.{0}(x, dim=...) returns a pair (values, indices): take .values, or use "
        "x.a{0}(dim=..., keepdim=True)")),
    ("TypeError", r"~ \(operator\.invert\) is only implemented on integer and Boolean",
     N_("`~` on a float tensor: a mask must be a bool tensor (did two arguments trade places, "
        "such as bias and mask?)")),
    ("TypeError", r"(missing \d+ required (positional|keyword-only) argument|unexpected keyword "
                  r"argument|takes \d+ positional argument|got multiple values for argument)",
     N_("a call does not fit the function's signature ({0}): compare the arguments with the "
        "docstring, by name and in order")),
    ("RuntimeError", r"Boolean value of Tensor with more than one value is ambiguous",
     N_("`if tensor:`, `not tensor`, `and` or `or` on a tensor: test an optional argument with "
        "`is None`, and combine tensors with &, |, ~ or torch.where")),
    ("RuntimeError", r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)",
     N_("a matrix product (@, matmul or an nn.Linear) got a last axis of {1} where it takes "
        "{2}: look at the shapes of the tensors that reach that line (for a @ b, a's last axis "
        "meets b's second-to-last; an nn.Linear takes in_features channels)")),
    ("RuntimeError", r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)",
     N_("two tensors do not line up ({0} against {1} on one axis): a reduction without "
        "keepdim=True, a missing size-1 axis (x[..., None]), or axes in another order")),
    ("RuntimeError", r"view size is not compatible with input tensor's size and stride",
     N_("view() after a transpose or permute cannot work: use reshape() (or "
        ".contiguous().view())")),
    ("RuntimeError", r"number of dimensions in the tensor input does not match the length of "
                     r"the desired ordering",
     N_("permute names every axis, so it fits one number of axes only: movedim or transpose "
        "with negative axes work for any number of leading batch axes")),
    # a negative axis out of range: the code counts from the end already, on a tensor with fewer
    # axes than the one the number was meant for
    ("IndexError", r"Dimension out of range \(expected to be in range of \[-(\d+), \d+\], but got "
                   r"(-\d+)\)",
     N_("axis {1} does not exist in a tensor of {0} axes: this tensor has fewer axes than the one "
        "the axis number was meant for (a mask has one axis fewer than x, so x's dim=-2 is the "
        "mask's dim=-1): translate the axis for this tensor, or give it the missing size-1 axis "
        "first")),
    ("IndexError", r"Dimension out of range",
     N_("an axis index out of range: count axes from the end (-1, -2, ...), so that leading "
        "batch axes do not matter")),
    ("IndexError", r"too many indices for tensor of dimension (\d+)",
     N_("indexing with more axes than the tensor has ({0}): check its shape at that line")),
    ("RuntimeError", r"(?:expected scalar type \w+ but found \w+|Float did not match Double|"
                     r"Double did not match Float|dtypes? match|expected .*dtype|must have the "
                     r"same dtype|found dtype \w+ but expected)",
     N_("float32 meets float64: a tensor made without dtype= (torch.zeros/ones/empty/tensor/"
        "arange) is float32; create it with dtype=x.dtype (or zeros_like, new_zeros)")),
    ("RuntimeError", r"(?:is not on the expected device|Expected all tensors to be on the same "
                     r"device|on different devices)", DEVICE_HINT),
    ("RuntimeError", r"t\(\) expects a tensor with <= 2 dimensions",
     N_("`.t()` takes a matrix only: with batch axes, swap the last two axes with "
        "k.transpose(-2, -1) (or k.mT)")),
    ("RuntimeError", r"shape '\[([-\d, ]*)\]' is invalid for input of size (\d+)",
     N_("reshape or view to [{0}], which does not hold {1} elements: build the new shape from "
        "the input's own shape (x.shape[:-1], ...), so that batch axes of any size fit")),
    ("RuntimeError", r"a leaf Variable that requires grad is being used in an in-place operation",
     N_("an in-place operation on a parameter (+=, .fill_, .mul_): compute into a new tensor")),
    ("RuntimeError", r"modified by an inplace operation",
     N_("an in-place operation (+=, x[...] = ..., .add_) overwrote a tensor that autograd "
        "still needs: compute into a new tensor")),
    ("RuntimeError", r"Given normalized_shape=\[(\d+)\], expected input with shape \[\*, (\d+)\]",
     N_("a LayerNorm built for {0} channels got another size: nn.LayerNorm(c) takes the size "
        "of the LAST axis of its input")),
    ("RuntimeError", r"masked_fill_? only supports boolean masks",
     N_("masked_fill needs a bool mask (True where to fill)")),
    ("ZeroDivisionError", r"", N_("a division by zero: an empty count or a size that is 0")),
]


# ---------------------------------------------------------------------------------- the choice

# hints that say a result holds NaN (claims_nan): given only when the shown case's result does
NAN_CLAIMS: set[str] = {NAN_GRADIENT}


def claims_nan(message: str) -> str:
    """Mark a hint (an N_() message) as saying that the result holds NaN: the engine gives it
    only when the case it shows has NaN where the reference has numbers (a gradient that never
    arrived is no NaN the code computed). Returns the message, to wrap a definition."""
    NAN_CLAIMS.add(message)
    return message


def _decisive(failing: list):
    """A failing case whose finding explains every other difference, or None: a None returned
    (nothing else can be compared), then randomness (every other case may differ by chance)."""
    for outcome in failing:
        if outcome.status == "none":
            return outcome
    for outcome in failing:
        if outcome.status == "probe" and "random" in outcome.case.tags:
            return outcome
    return None


def choose(check, outcomes: list) -> tuple[object, str, list[str]]:
    """(the failing outcome to show, its hint, notes with further evidence)."""
    failing = [o for o in outcomes if o.failed]
    shown = _decisive(failing) or failing[0]
    if shown.status == "none":
        return shown, _(NONE_RETURN).format(exercise=check.attribute), []
    if shown.status == "probe" and "random" in shown.case.tags:
        return shown, _(shown.case.hint), []
    if shown.status == "raised":
        hint = _error_hint(check, shown)
        if _only_class_fails(outcomes, shown) and hint not in (_(DEVICE_HINT), _(TRANSPOSE_T)):
            hint = _(shown.case.hint)  # the ordinary cases work: the class of the case says why
        case_hint = _(shown.case.hint)
        return shown, hint, [_(CASE_TESTS).format(hint=case_hint)] if case_hint != hint else []
    if shown.status == "inplace":
        return shown, _(INPLACE_HINT), []
    argument = _argument(check, shown)
    hint = next((h for h in _specific(check, outcomes, shown, argument)
                 if h and _on_evidence(h, shown)), None) or _(shown.case.hint)
    where = None if argument and hint == argument[0] else _first_divergence(check, shown)
    notes = [n for n in (_shape_note(shown), _layout(check, shown, specific=False), where)
             if n and n != hint]
    return shown, hint, notes


# the classes of case whose failure alone names the bug (course/checks/kinds.py, and the cases
# of sizes past any a lesson prints): another dtype, the meta device, a larger size
CLASSES = ("dtype", "device", "size")


def _on_evidence(hint: str, shown) -> bool:
    """A hint that says the result holds NaN fits only a shown case whose result does."""
    if not any(re.fullmatch(_template(_(m)), hint, re.S) for m in NAN_CLAIMS):
        return True
    return bool(nan_keys(shown))


def _template(message: str) -> str:
    """A regular expression for every text `message.format(...)` can give."""
    return ".*?".join(re.escape(part) for part in re.split(r"\{[^{}]*\}", message))


def nan_keys(outcome) -> list[str]:
    """The outputs of one case that hold NaN where the reference's hold numbers (a gradient that
    never arrived is not among them: it is missing, not NaN)."""
    got, expected = outcome.got or {}, outcome.expected or {}
    absent = missing(got)
    found = []
    for key, have in got.items():
        if key in absent or not isinstance(have, torch.Tensor) or not have.is_floating_point():
            continue
        want = expected.get(key)
        nan = torch.isnan(have)
        if want is not None and want.shape == have.shape:
            nan = nan & ~torch.isnan(want)
        if bool(nan.any()):
            found.append(key)
    return found


def _only_class_fails(outcomes, shown) -> bool:
    """The shown case belongs to one of CLASSES and every failing case to the same class, while
    some case outside it passes: what the class tests is the bug."""
    found = [tag for tag in CLASSES if tag in shown.case.tags]
    if not found:
        return False
    tag = found[0]
    return all(tag in o.case.tags for o in outcomes if o.failed) and \
        any(not o.failed for o in outcomes if tag not in o.case.tags)


def _specific(check, outcomes, shown, argument=None):
    """Every hint that names a cause, in the order of preference (lazily)."""
    if _structural(shown):
        return  # parameter names or shapes: the case's own hint says which
    if shown.verdict:
        yield shown.verdict  # the case's own explanation of this difference
    yield _precision(outcomes)
    if shown.status == "differs":
        yield _gradient(shown)
    if _only_class_fails(outcomes, shown):
        yield _(shown.case.hint)  # only the cases of one class fail (a larger size, float32...)
    if argument and argument[1]:
        yield argument[0]  # a plain value (a dim, a flag) that differs in the first call to leave
    yield _tagged(check, outcomes)
    if check.diagnose is not None:  # written for the float64 cases: derived ones are the engine's
        yield _safely(check.diagnose, [o for o in outcomes if o.case.variant is None])
    if argument:
        yield argument[0]  # tensors that trade places: the check's own diagnosis names them first
    if shown.case.diagnose is not None and shown.status == "differs":
        yield _safely(shown.case.diagnose, shown.expected, shown.got)
    if shown.status == "differs":
        yield _shape(check, shown)
        yield _layout(check, shown, specific=True)
    yield _near(outcomes)


def _safely(diagnosis, *args) -> str | None:
    """A diagnosis that cannot read this evidence (odd shapes, dtypes) has nothing to say: it
    must never turn a failed check into a crashed one."""
    try:
        return diagnosis(*args)
    except Exception:  # noqa: BLE001
        return None


def _structural(outcome) -> bool:
    """A difference in which outputs exist or in a module's parameter names and shapes."""
    return outcome.status == "differs" and (
        outcome.problem.startswith("outputs: expected") or
        (outcome.key or "").startswith("param "))


# ------------------------------------------------------------------------------------ crashes

def _error_hint(check, outcome) -> str:
    error = outcome.error
    text = str(error)
    line = outcome.where[-1].source if outcome.where else ""
    if re.search(r"\.T\b", line) and isinstance(error, (RuntimeError, IndexError)):
        return _(TRANSPOSE_T)  # the line that raised transposes with .T: on batched tensors
    if outcome.where and outcome.where[-1].function == "__init__" and \
            "leaf Variable that requires grad" in text:
        return _(INIT_IN_PLACE)
    for name, pattern, hint in list(check.error_hints) + ERROR_HINTS:
        kind = getattr(builtins, name, None)
        if not (isinstance(kind, type) and isinstance(error, kind)):
            continue
        match = re.search(pattern, text)
        if match:
            return _(hint).format(*(match.groups() or (match.group(0),)))
    return _(RAISED_UNKNOWN)


# ---------------------------------------------------------------------------------- precision

def _precision(outcomes) -> str | None:
    """A hint when the evidence is about precision: a result whose dtype does not follow the
    input's, every difference at float32's rounding, or only the low-precision cases (course/
    checks/kinds.py) differ."""
    outcomes = [o for o in outcomes if getattr(o.case.variant, "device", None) is None]
    compared = [o for o in outcomes if o.status == "differs"]
    if not compared or any(o.status not in ("pass", "differs", "probe") for o in outcomes):
        return None
    wrong, wrong_low, gaps, low = None, None, [], {}
    for outcome in compared:
        lowered = getattr(outcome.case.variant, "dtype", None)
        for key, want in outcome.expected.items():
            have = outcome.got.get(key)
            if have is None or not want.dtype.is_floating_point or have.shape != want.shape:
                return None
            if have.dtype != want.dtype and have.dtype.is_floating_point:
                if lowered is None:
                    wrong = wrong or (have.dtype, want.dtype)
                else:
                    wrong_low = wrong_low or (have.dtype, want.dtype)  # the first: the one shown
            if difference(key, want, have, *_tolerance(outcome)) is None:
                continue  # this output agrees (to its own rounding): no evidence either way
            scale = float(want.double().abs().nan_to_num(0.0).max()) if want.numel() else 0.0
            gap = largest_gap(want, have) / max(scale, 1e-30)
            if not math.isfinite(gap):
                return None  # NaN or an infinity where the reference has a number: no rounding
            if lowered is None:
                gaps.append(gap)
            else:
                low[lowered] = max(low.get(lowered, 0.0), gap)
    if wrong and max(gaps) < 1e-3:  # a float64 case's wrong dtype always differs: in gaps
        got, want = (str(d).removeprefix("torch.") for d in wrong)
        return _(FLOAT32_RESULT).format(got=got, want=want)
    if gaps and 0 < max(gaps) <= 3e-5:
        return _(FLOAT32_INSIDE).format(gap=max(gaps))
    if gaps:
        return None  # a float64 case differs by more than rounding: not a question of precision
    if wrong_low:
        got, want = (str(d).removeprefix("torch.") for d in wrong_low)
        fixes = _("dtype=torch.float64 or .double()") if wrong_low[0] == torch.float64 else \
            _(".float(), or torch.zeros/ones/tensor/arange without dtype=")
        return _(DTYPE_RESULT).format(got=got, want=want, fixes=fixes)
    if low:
        return _(DTYPE_VALUES).format(dtype=str(next(iter(low))).removeprefix("torch."))
    return None


def _near(outcomes) -> str | None:
    """Every difference is small (relative 3e-5 .. 1e-3): a variant of a formula, not a wrong
    structure."""
    compared = [o for o in outcomes if o.status == "differs"]
    if not compared or any(o.status not in ("pass", "differs") for o in outcomes):
        return None
    gaps = [0.0]
    for outcome in compared:
        for key, want in outcome.expected.items():
            have = outcome.got.get(key)
            if have is None or have.shape != want.shape:
                return None
            if not want.dtype.is_floating_point:
                continue
            scale = float(want.double().abs().nan_to_num(0.0).max()) if want.numel() else 0.0
            gaps.append(largest_gap(want, have) / max(scale, 1e-30))
    if 3e-5 < max(gaps) <= 1e-3:
        return _(NEAR).format(gap=max(gaps))
    return None


# ----------------------------------------------------------------------- gradients and shapes

def _gradient(outcome) -> str | None:
    """The output agrees but gradients differ: name the cut ones if any, else the wrong ones."""
    expected, got, key = outcome.expected, outcome.got, outcome.key
    if key is None or not key.startswith("grad ") or "output" not in expected:
        return None
    atol, rtol = _tolerance(outcome)
    if difference("output", expected["output"], got["output"], atol, rtol) is not None:
        return None
    grads = [k for k in expected if k.startswith("grad ")]
    wrong = [k for k in grads if difference(k, expected[k], got[k], atol, rtol) is not None]
    absent = [k for k in wrong if k in missing(got)]  # autograd gave None: cut, not NaN
    nan = [k for k in wrong if k not in absent and torch.isnan(got[k]).any()
           and not torch.isnan(expected[k]).any()]
    if nan and not absent:  # NaN the code computed (every gradient run keeps a None as missing)
        return _(NAN_GRADIENT).format(name=listed(k.removeprefix("grad ") for k in nan))
    names = listed(k.removeprefix("grad ") for k in (absent or wrong))
    return _(CUT_GRADIENT_HINT if absent else WRONG_GRADIENT_HINT).format(name=names)


def _tolerance(outcome) -> tuple[float, float]:
    return outcome.case.atol, outcome.case.rtol


def _shape(check, outcome) -> str | None:
    key = outcome.key
    if key is None or " shape: expected" not in outcome.problem:
        return None
    want, have = tuple(outcome.expected[key].shape), tuple(outcome.got[key].shape)
    if have != want and have == tuple(d for d in want if d != 1) and check.squeeze_hint:
        return _(SQUEEZE_HINT)
    return _(outcome.case.shape_hint) if outcome.case.shape_hint else None


def _shape_note(outcome) -> str | None:
    """What a wrong shape is made of: a size-1 axis too many, or the right sizes in another order."""
    key = outcome.key
    if outcome.status != "differs" or key is None or " shape: expected" not in outcome.problem:
        return None
    want, have = tuple(outcome.expected[key].shape), tuple(outcome.got[key].shape)
    if len(have) > len(want) and tuple(d for d in have if d != 1) == tuple(d for d in want if d != 1):
        return _(EXTRA_AXIS).format(have=have, want=want)
    if len(have) == len(want) and sorted(have) == sorted(want):
        return _(REORDERED).format(have=have, want=want)
    return None


def _layout(check, outcome, specific: bool) -> str | None:
    """The right values in the wrong places: transposed, or some other permutation. `specific`:
    only a transposition this check explains (its `transposed_hint`); else the general words."""
    key = outcome.key
    if key is None or key not in outcome.expected:
        return None
    want, have = outcome.expected[key], outcome.got[key]
    if want.shape != have.shape or want.numel() < 4 or not want.dtype.is_floating_point:
        return None
    want, have = want.double(), have.double()
    if not (torch.isfinite(want).all() and torch.isfinite(have).all()):
        return None
    tight = dict(rtol=1e-6, atol=1e-9)
    if torch.allclose(have, want, **tight):
        return None  # the values agree (a dtype, or a tolerance tighter than this)
    if want.ndim >= 2 and want.shape[-1] == want.shape[-2] and \
            torch.allclose(have.transpose(-1, -2), want, **tight):
        if specific != bool(check.transposed_hint):
            return None
        detail = _(check.transposed_hint) if check.transposed_hint else _(TRANSPOSED_DETAIL)
        return _(TRANSPOSED).format(key=key, detail=detail)
    if not specific and torch.unique(want.round(decimals=9)).numel() > 2 and \
            torch.allclose(have.flatten().sort().values, want.flatten().sort().values, **tight):
        return _(PERMUTED).format(key=key)
    return None


# ------------------------------------------------------------- where the calls leave the reference

def _argument(check, outcome) -> tuple[str, bool] | None:
    """The first call to another exercise whose arguments differ from the reference's, as a
    hint, when what differs names a cause by itself: a plain value (a `dim`, a scale, a flag) or
    a tensor that is another argument of the reference's (arguments that trade places); with
    whether only plain values differ."""
    agreed = False
    for reference, mine in evidence.pairs(check, outcome):
        if mine is None:
            continue
        names = evidence.differing(reference, mine)
        if not names:
            agreed = True
            continue
        if len(names) == 1 and names != ["*"] and evidence.inverted(reference["args"][names[0]],
                                                                    mine["args"][names[0]]):
            return _(evidence.POLARITY).format(exercise=check.attribute, name=names[0],
                                               callee=name_of(reference["target"])), True
        if names == ["*"] or not all(_names_a_cause(reference, mine, n) for n in names):
            return None
        template = ARGUMENT if agreed else ARGUMENT_FIRST
        plain_only = not any(isinstance(reference["args"][n], torch.Tensor) for n in names)
        return _(template).format(exercise=check.attribute, callee=name_of(reference["target"]),
                                  arguments=_differing(reference, mine)), plain_only
    return None


def _names_a_cause(reference: dict, mine: dict, name: str) -> bool:
    want, have = reference["args"][name], mine["args"][name]
    if not isinstance(want, torch.Tensor) and not isinstance(have, torch.Tensor):
        return True
    return isinstance(have, torch.Tensor) and any(
        other != name and isinstance(value, torch.Tensor) and same(value, have)
        for other, value in reference["args"].items())


def _first_divergence(check, outcome) -> str | None:
    """The first call to another exercise whose arguments differ from the reference's call."""
    agreed = []
    for reference, mine in evidence.pairs(check, outcome):
        if mine is None:
            continue
        differing = _differing(reference, mine)
        if not differing:
            agreed.append(name_of(reference["target"]))
            continue
        agree = _("; its calls before that ({names}) agree with the reference's, so the bug lies "
                  "between them").format(names=listed(dict.fromkeys(agreed))) if agreed else ""
        return _(DIVERGES).format(exercise=check.attribute, callee=name_of(reference["target"]),
                                  arguments=differing, agree=agree)
    return None


def _differing(reference: dict, mine: dict) -> str:
    """Which arguments of one call differ, with by how much ('' when they agree)."""
    names = evidence.differing(reference, mine)
    if names == ["*"]:
        return _("other arguments ({names})").format(names=listed(mine["args"]))
    parts = []
    for name in names:
        want, have = reference["args"][name], mine["args"][name]
        twin = [other for other, value in reference["args"].items()
                if other != name and isinstance(value, torch.Tensor) and same(value, have)]
        parts.append(_("`{name}` is the reference's `{other}`").format(name=name, other=twin[0])
                     if twin else _describe(name, want, have))
    if not parts and not same(reference.get("state"), mine.get("state")):
        parts.append(_("the module's parameters"))
    return "; ".join(parts)


def _describe(name: str, want, have) -> str:
    if isinstance(want, torch.Tensor) and isinstance(have, torch.Tensor):
        if evidence.inverted(want, have):
            return _("`{name}` is the reference's with True and False swapped").format(name=name)
        if want.shape != have.shape:
            return _("`{name}` has shape {got}, the reference's {want}").format(
                name=name, got=tuple(have.shape), want=tuple(want.shape))
        if want.dtype != have.dtype:
            return _("`{name}` is {got}, the reference's {want}").format(
                name=name, got=have.dtype, want=want.dtype)
        hidden = _hidden_elsewhere(name, want, have)
        if hidden:
            return hidden
        ratio = _ratio(want, have)
        if ratio is not None:
            return _("`{name}` is {ratio} times the reference's").format(name=name, ratio=ratio)
        return _("`{name}` differs by up to {gap:.3g}").format(name=name,
                                                               gap=largest_gap(want, have))
    return _("`{name}` is {got}, the reference passes {want}").format(
        name=name, got=_value(have), want=_value(want))


def _hidden_elsewhere(name: str, want, have) -> str | None:
    """Entries hidden by -inf in one and not in the other (a mask applied elsewhere, or not at
    all): said in those words, not as a difference of inf."""
    if not want.dtype.is_floating_point or want.device.type == "meta":
        return None
    mine, theirs = torch.isneginf(have), torch.isneginf(want)
    if torch.equal(mine, theirs):
        return None
    extra, lacking = int((mine & ~theirs).sum()), int((theirs & ~mine).sum())
    if extra and lacking:
        return _("`{name}` hides other entries with -inf than the reference's ({n} of them "
                 "differ)").format(name=name, n=extra + lacking)
    if extra:
        return _("`{name}` hides {n} entries with -inf that the reference's keeps").format(
            name=name, n=extra)
    return _("`{name}` keeps {n} entries that the reference's hides with -inf").format(
        name=name, n=lacking)


def _value(value) -> str:
    if isinstance(value, torch.Tensor):
        return _("a tensor of shape {shape}").format(shape=tuple(value.shape))
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _ratio(want: torch.Tensor, have: torch.Tensor) -> str | None:
    """'1/sqrt(4)' or '0.3' when `have` is one number times `want`, else None."""
    if not want.dtype.is_floating_point or not have.dtype.is_floating_point:
        return None
    finite = torch.isfinite(want) & torch.isfinite(have)
    w, h = want.double()[finite], have.double()[finite]
    if w.numel() < 2 or float((w * w).sum()) == 0.0:
        return None
    alpha = float((w * h).sum() / (w * w).sum())
    if abs(alpha - 1) < 1e-6 or not torch.allclose(alpha * w, h, rtol=1e-6, atol=1e-9):
        return None
    for n in range(2, 1025):
        if abs(alpha - 1 / math.sqrt(n)) < 1e-9 * n:
            return f"1/sqrt({n})"
        if abs(alpha - math.sqrt(n)) < 1e-9 * n:
            return f"sqrt({n})"
    return f"{alpha:.4g}"


# ------------------------------------------------------------------------------------ features

def _tagged(check, outcomes) -> str | None:
    """The hint of the one feature that every failing case has and some passing case lacks."""
    if not check.tag_hints:
        return None
    compared = [o for o in outcomes if o.status in ("pass", "differs", "probe")]
    failing = [o for o in compared if o.failed]
    passing = [o for o in compared if not o.failed]
    if not failing or not passing:
        return None
    best = None
    for tag, hint in check.tag_hints.items():
        having = [o for o in compared if tag in o.case.tags]
        if all(tag in o.case.tags for o in failing) and \
                any(tag not in o.case.tags for o in passing):
            if best is None or len(having) < best[0]:
                best = (len(having), hint)
    return _(best[1]) if best else None
