"""Realistic bugs for the checks of lesson 01 (Q, K, V by hand)."""
from tests.mutation import IN_PLACE, Mutant, SQUEEZED

MUTANTS = [
    # 01.stable_softmax
    Mutant("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
           "x -= x.amax(dim=dim, keepdim=True)\n    shifted = x", IN_PLACE,
           "subtracts the max in place (x -= ...), rewriting the caller's tensor"),
    Mutant("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
           "shifted = x - x.amin(dim=dim, keepdim=True)", "MAX (amax)",
           "shifts by the row min: exp overflows on a wide row"),
    Mutant("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
           "shifted = x - x.mean(dim=dim, keepdim=True)", "MAX (amax)",
           "shifts by the row mean: exp overflows on a wide row"),
    Mutant("01.stable_softmax", "softmax.py",
           "return exponentials / exponentials.sum(dim=dim, keepdim=True)",
           "return (exponentials / exponentials.sum(dim=dim, keepdim=True)).squeeze()", SQUEEZED,
           "squeeze() on the result drops a size-1 row axis"),
    Mutant("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
           "shifted = x", "subtract the max before exp", "no max subtraction"),
    Mutant("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
           "shifted = x - x.max()", "each row's own max", "one global max"),
    Mutant("01.stable_softmax", "softmax.py",
           "exponentials / exponentials.sum(dim=dim, keepdim=True)",
           "exponentials / exponentials.sum(dim=-1, keepdim=True)",
           "use the `dim` argument", "hard-coded -1 in the sum"),
    Mutant("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
           "shifted = x - x.amax(dim=-1, keepdim=True)",
           "use the `dim` argument", "hard-coded -1 in the max"),
    Mutant("01.stable_softmax", "softmax.py",
           "exponentials / exponentials.sum(dim=dim, keepdim=True)",
           "exponentials / exponentials.sum()", "sum(dim=dim, keepdim=True)",
           "normalises by the total of all entries"),
    # 01.scaled_scores
    Mutant("01.scaled_scores", "softmax.py", "q @ k.transpose(-2, -1) / math.sqrt(c)",
           "q @ k.transpose(-2, -1)", "divide by sqrt(c)", "no scaling"),
    Mutant("01.scaled_scores", "softmax.py", "q @ k.transpose(-2, -1) / math.sqrt(c)",
           "q @ k.transpose(-2, -1) / c", "divide by sqrt(c)", "divides by c"),
    Mutant("01.scaled_scores", "softmax.py", "c = q.shape[-1]", "c = q.shape[-2]",
           "divide by sqrt(c)", "takes c from the sequence axis"),
    Mutant("01.scaled_scores", "softmax.py", "q @ k.transpose(-2, -1) / math.sqrt(c)",
           "k @ q.transpose(-2, -1) / math.sqrt(c)", "(queries, keys)", "keys x queries"),
    Mutant("01.scaled_scores", "softmax.py", "q @ k.transpose(-2, -1) / math.sqrt(c)",
           "q @ k.T / math.sqrt(c)", "transpose only the last two axes",
           ".T reverses every axis"),
    Mutant("01.scaled_scores", "softmax.py", "c = q.shape[-1]", "c = k.shape[-2]",
           "sqrt(number of keys)", "divides by sqrt(number of keys), not sqrt(c)"),
    Mutant("01.scaled_scores", "softmax.py", "c = q.shape[-1]", "c = q.shape[-1] ** 2",
           "a division by c = ", "divides by c (sqrt of c squared)"),
    Mutant("01.scaled_scores", "softmax.py", "return q @ k.transpose(-2, -1) / math.sqrt(c)",
           "q /= math.sqrt(c)\n    return q @ k.transpose(-2, -1)", IN_PLACE,
           "scales the queries in place (q /= sqrt(c)), rewriting the caller's q"),
    Mutant("01.scaled_scores", "softmax.py", "return q @ k.transpose(-2, -1) / math.sqrt(c)",
           "return (q @ k.transpose(-2, -1)).squeeze() / math.sqrt(c)", SQUEEZED,
           "squeeze() drops the axis of a single query"),
]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('01.stable_softmax', 'softmax.py', 'exponentials = shifted.exp()',
           'exponentials = torch.exp(shifted).float()', "", 'exp cast to float32',
           exact=(
               'output shape (4,) as expected; max |expected - got| = 1.75e-08 (tolerance 1e-12 + 1e-10*|expected|); and its dtype is torch.float32, not torch.float64',
               "hint: your result is float32, the reference (like the inputs) float64: something in your code makes float32 (torch.zeros/ones/empty/tensor/arange without dtype=, or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) so that the result keeps the input's dtype",
           )),
    Mutant('01.stable_softmax', 'softmax.py', 'shifted = x - x.amax(dim=dim, keepdim=True)',
           'shifted = x - x.max(dim=dim)', "", 'x.max(dim=...) used as a tensor',
           exact=(
               "raised TypeError: unsupported operand type(s) for -: 'Tensor' and 'torch.return_types.max'",
               'at solutions/softmax.mutant.py, line 18, in stable_softmax:',
               'shifted = x - x.max(dim=dim)',
               'hint: torch.max(x, dim=...) returns a pair (values, indices): take .values, or use x.amax(dim=..., keepdim=True)',
           )),
    Mutant('01.stable_softmax', 'softmax.py', 'shifted = x - x.amax(dim=dim, keepdim=True)',
           'shifted = x - x.amax(dim=dim)', "", 'amax without keepdim',
           exact=(
               'raised RuntimeError: The size of tensor a (5) must match the size of tensor b (3) at non-singleton dimension 1',
               'at solutions/softmax.mutant.py, line 18, in stable_softmax:',
               'shifted = x - x.amax(dim=dim)',
               'hint: two tensors do not line up (5 against 3 on one axis): a reduction without keepdim=True, a missing size-1 axis (x[..., None]), or axes in another order',
           )),
    Mutant('01.scaled_scores', 'softmax.py', 'c = q.shape[-1]',
           'c = q.size(1)', "", 'c read from axis 1',
           exact=(
               'output shape (2, 3, 4, 6) as expected; max |expected - got| = 2.03 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: these scores are q @ k^T divided by sqrt(3), the size of q.shape[1]: divide by sqrt(c) = sqrt(8), with c = q.shape[-1], the last axis (also when q has batch axes)',
           )),
    Mutant('01.scaled_scores', 'softmax.py', 'return q @ k.transpose(-2, -1) / math.sqrt(c)',
           'return q.float() @ k.float().transpose(-2, -1) / math.sqrt(c)', "", 'computed in float32',
           exact=(
               'output dtype: expected torch.float64, got torch.float32 (the values agree)',
               "hint: your result is float32, the reference (like the inputs) float64: something in your code makes float32 (torch.zeros/ones/empty/tensor/arange without dtype=, or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) so that the result keeps the input's dtype",
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('01.stable_softmax', 'softmax.py', 'return exponentials / exponentials.sum(dim=dim, keepdim=True)',
           'return exponentials / exponentials.sum(dim=dim, keepdim=True, dtype=torch.float64)', "", 'the sum accumulated in float64', kind='dtype',
           exact=(
               'output dtype: expected torch.float32, got torch.float64 (the values agree)',
               "hint: your result is float64 for float32 inputs: the output's dtype must follow the input's, and something in your code fixes it (dtype=torch.float64 or .double()): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
           )),
    Mutant('01.stable_softmax', 'softmax.py', 'exponentials = shifted.exp()',
           'exponentials = shifted.float().exp().double()', "", 'exp in float32, cast back to float64', kind='dtype',
           exact=(
               'output shape (4,) as expected; max |expected - got| = 4.11e-09 (tolerance 1e-12 + 1e-10*|expected|)',
               "hint: your result equals the reference only to about 6e-08 (relative), the rounding of float32: somewhere a float32 tensor enters the computation (torch.arange/zeros/tensor without dtype=, an integer arange divided by a number, .float()): compute in the input's dtype",
           )),
    Mutant('01.stable_softmax', 'softmax.py', 'return exponentials / exponentials.sum(dim=dim, keepdim=True)',
           'exponentials /= exponentials.sum(dim=dim, keepdim=True)\n    return exponentials', "", "normalised in place (backward needs exp's output)", kind='gradients',
           exact=(
               'raised RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.DoubleTensor [2, 4, 3]], which is output 0 of Exp, is at version 1; expected version 0 instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).',
               'hint: an in-place operation (+=, x[...] = ..., .add_) overwrote a tensor that autograd still needs: compute into a new tensor',
           )),
    Mutant('01.scaled_scores', 'softmax.py', 'q @ k.transpose(-2, -1) / math.sqrt(c)',
           'torch.matmul(q, k.T) / math.sqrt(c)', "", 'matmul with k.T', kind='.T',
           exact=(
               'raised RuntimeError: The size of tensor a (3) must match the size of tensor b (6) at non-singleton dimension 1',
               'hint: `.T` reverses EVERY axis of a tensor with more than two (and is deprecated there): with batch axes, k.T is not the keys transposed. Swap only the last two axes: k.transpose(-2, -1) (or k.mT)',
           )),
    Mutant('01.scaled_scores', 'softmax.py', 'q @ k.transpose(-2, -1) / math.sqrt(c)',
           'q @ k.t() / math.sqrt(c)', "", 'k.t()', kind='.T',
           exact=(
               'raised RuntimeError: t() expects a tensor with <= 2 dimensions, but self is 4D',
               'hint: `.t()` takes a matrix only: with batch axes, swap the last two axes with k.transpose(-2, -1) (or k.mT)',
           )),
    Mutant('01.scaled_scores', 'softmax.py', 'q @ k.transpose(-2, -1) / math.sqrt(c)',
           '(k @ q.T).T / math.sqrt(c)', "", '(k @ q.T).T', kind='.T',
           exact=(
               'raised RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1',
               'hint: `.T` reverses EVERY axis of a tensor with more than two (and is deprecated there): with batch axes, k.T is not the keys transposed. Swap only the last two axes: k.transpose(-2, -1) (or k.mT)',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('01.stable_softmax', 'softmax.py', 'return exponentials / exponentials.sum(dim=dim, keepdim=True)',
           'return exponentials', "", 'exp(x - max) never divided by the sum', kind='diagnosis',
           exact=(
               'output shape (4,) as expected; max |expected - got| = 0.633 (tolerance 1e-12 + 1e-10*|expected|)',
               'hint: your result is exp(x - max) without the division: normalise each slice by its sum, exponentials / exponentials.sum(dim=dim, keepdim=True), so that it sums to 1 along `dim`',
           )),
    Mutant('01.stable_softmax', 'softmax.py', 'return exponentials / exponentials.sum(dim=dim, keepdim=True)',
           'return exponentials / exponentials.sum()', "", 'divided by the sum over the whole tensor', kind='diagnosis',
           exact=(
               'sums along dim=-1 are off from 1 by up to 0.775',
               'hint: your result is divided by the sum over the WHOLE tensor: the sum must run along `dim` only (sum(dim=dim, keepdim=True)), so that every slice sums to 1 on its own',
           )),
]
