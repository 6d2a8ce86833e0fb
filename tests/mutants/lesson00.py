"""Realistic bugs for the checks of lesson 00 (the warm-up)."""
from tests.mutation import IN_PLACE, Mutant, SQUEEZED

MUTANTS = [
    # 00.batched_dot
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a * b).sum()",
           "sum over the last axis only", "sums over every axis"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a * b).sum(dim=0)",
           "sum over the last axis only", "sums over the first axis"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "a @ b.T",
           "last axis only", "uses a matrix product"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a + b).sum(dim=-1)",
           "multiply the vectors elementwise", "adds instead of multiplying"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "(a * b).sum(dim=-1).squeeze()",
           SQUEEZED, "squeeze() drops the batch axis of a batch of one pair"),
    Mutant("00.batched_dot", "warmup.py", "(a * b).sum(dim=-1)", "a.mul_(b).sum(dim=-1)",
           IN_PLACE, "multiplies in place (a *= b), overwriting the caller's a"),
]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'out = torch.zeros(torch.broadcast_shapes(a.shape, b.shape)[:-1])\n    for i in range(a.shape[-1]):\n        out += a[..., i] * b[..., i]\n    return out', "", 'float32 accumulator from torch.zeros without dtype',
           exact=(
               'output dtype: expected torch.float64, got torch.float32 (the values agree)',
               "hint: your result is float32, the reference (like the inputs) float64: something in your code makes float32 (torch.zeros/ones/empty/tensor/arange without dtype=, or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) so that the result keeps the input's dtype",
           )),
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'result = (a * b).sum(dim=-1)\n    return reslt', "", 'a typo in the returned name',
           exact=(
               "raised NameError: name 'reslt' is not defined",
               'at solutions/warmup.mutant.py, line 14, in batched_dot:',
               'return reslt',
               'hint: `reslt` is not defined there: a typo, a name used before it is assigned, or a module not imported',
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'return (a * b).sum(dim=-1).double()', "", 'the result cast to float64', kind='dtype',
           exact=(
               'output dtype: expected torch.float32, got torch.float64 (the values agree)',
               "hint: your result is float64 for float32 inputs: the output's dtype must follow the input's, and something in your code fixes it (dtype=torch.float64 or .double()): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
           )),
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'return (a * b.detach()).sum(dim=-1)', "", 'b detached', kind='gradients',
           exact=(
               "grad b: no gradient arrived (autograd gave None: nothing in your code connects it to the output), where the reference's has numbers",
               'hint: the output is right but no gradient reaches b: something on its path to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new torch.tensor(...)), so it would never learn',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'out = torch.zeros(torch.broadcast_shapes(a.shape, b.shape)[:-1])\n    for i in range(a.shape[-1]):\n        out = out + a[..., i] * b[..., i]\n    return out', "", 'a float32 accumulator added to out of place: float32 for bfloat16 inputs', kind='bfloat16',
           exact=(
               'output dtype: expected torch.bfloat16, got torch.float32 (the values agree)',
               "hint: your result is float32 for bfloat16 inputs: the output's dtype must follow the input's, and something in your code fixes it (.float(), or torch.zeros/ones/tensor/arange without dtype=): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
           )),
    Mutant('00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)',
           'result = (a * b).sum(dim=-1)', "", 'the result computed and never returned', kind='none return',
           exact=(
               'returned None: is a `return` statement missing?',
               'hint: your batched_dot returned None: Python returns None from a function that ends without a `return` (one is missing, or an `if` or a loop that never ran skips it on this path), or it returns a variable that is still None here (a loop over blocks or positions that never ran, an accumulator never assigned)',
           )),
    Mutant('00.batched_dot', 'warmup.py', '(a * b).sum(dim=-1)',
           '(a * b).sum()', "", 'every product summed into one number', kind='diagnosis',
           exact=(
               'output shape: expected (4,), got ()',
               'hint: your result sums every product into one number: (a * b).sum() has no dim; sum over the last axis only, (a * b).sum(dim=-1): one number per pair',
           )),
]
