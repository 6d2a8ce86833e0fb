"""Realistic bugs for the checks of lesson 05 (global attention)."""
from tests.mutants.lesson03 import MASK_DIM, POSITIVE
from tests.mutation import IN_PLACE, Mutant, SQUEEZED, WRONG_GRADIENT

MEAN_NONE = "    if mask is None:\n        return x.mean(dim=dim)\n"
GLOBAL_Q = "q = self.linear_q(masked_mean(x, attention_mask, dim=-2))"
GLOBAL_ATTEND = "o = scaled_dot_product_attention(q, k, v, mask=key_mask)"
GLOBAL_KEY_MASK = ("key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
                   "        " + GLOBAL_ATTEND)
GLOBAL_INIT = "        if is_global:\n            # BEGIN SOLUTION lesson 05"

MUTANTS = [
    # 05.masked_mean
    Mutant("05.masked_mean", "mha.py", MEAN_NONE + "    weights", "    weights",
           "mask=None", "crashes without a mask (mask.unsqueeze on None)"),
    Mutant("05.masked_mean", "mha.py", MEAN_NONE, "    return x.mean(dim=dim)\n",
           "not a plain mean", "plain mean: padding rows counted"),
    Mutant("05.masked_mean", "mha.py", "return total / count", "return total / x.shape[dim]",
           "number of True positions in that slice", "masked sum divided by the full length"),
    Mutant("05.masked_mean", "mha.py", "total = (x * weights).sum(dim=dim)",
           "total = x.sum(dim=dim)", "count only positions where the mask is True",
           "sums the padding too, divides by the real count"),
    Mutant("05.masked_mean", "mha.py", "count = weights.sum(dim=dim).clamp_min(1.0)",
           "count = weights.sum(dim=dim)", "clamped to at least 1",
           "0/0 = NaN for an all-padding slice"),
    Mutant("05.masked_mean", "mha.py", "weights = mask.unsqueeze(-1).to(x.dtype)",
           "weights = mask.to(x.dtype)", "mask[..., None]",
           "mask without the trailing channel axis"),
    Mutant("05.masked_mean", "mha.py", "total = (x * weights).sum(dim=dim)",
           "total = (x * weights).sum(dim=-2)", "the sums run over `dim`",
           "hard-coded dim=-2"),
    Mutant("05.masked_mean", "mha.py", MEAN_NONE, "    if mask is None:\n        return x.mean(dim=-2)\n",
           "over the `dim` given", "unmasked mean always over dim=-2"),
    Mutant("05.masked_mean", "mha.py", "total = (x * weights).sum(dim=dim)",
           "x[~mask] = 0.0\n    total = x.sum(dim=dim)", IN_PLACE,
           "zeroes the caller's padding rows in place before summing"),
    Mutant("05.masked_mean", "mha.py", "return total / count", "return (total / count).squeeze()",
           SQUEEZED, "squeeze() drops size-1 batch axes"),
    # 05.global_attention
    Mutant("05.global_attention", "mha.py", MASK_DIM, "mask_dim = self.attn_dim + 1",
           POSITIVE, "mask axis attn_dim + 1 for every sign: wrong for a positive attn_dim"),
    Mutant("05.global_attention", "mha.py", GLOBAL_Q,
           "q = self.linear_q(masked_mean(x, attention_mask, dim=-2).detach())", WRONG_GRADIENT,
           "averaged query detached: x's gradient misses the query path"),
    Mutant("05.global_attention", "mha.py", GLOBAL_Q,
           "if attention_mask is not None:\n"
           "            x.masked_fill_(~attention_mask[..., None], 0.0)\n        " + GLOBAL_Q,
           IN_PLACE, "zeroes the padding rows of the caller's x in place"),
    Mutant("05.global_attention", "mha.py", GLOBAL_INIT,
           "        if False:\n            # BEGIN SOLUTION lesson 05", "ONE key head",
           "unshared K/V: the per-head projections of plain attention kept"),
    Mutant("05.global_attention", "mha.py",
           "self.linear_v = nn.Linear(c_in, c, bias=use_bias_for_embeddings)",
           "self.linear_v = nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)",
           "ONE value head", "per-head values, shared keys"),
    Mutant("05.global_attention", "mha.py", GLOBAL_ATTEND,
           "o = scaled_dot_product_attention(q * self.c ** 0.5, k, v, mask=key_mask)",
           "by sqrt(c)", "scores not divided by sqrt(c)"),
    Mutant("05.global_attention", "mha.py", GLOBAL_ATTEND,
           "o = scaled_dot_product_attention(q / self.c ** 0.5, k, v, mask=key_mask)",
           "by sqrt(c)", "scaled twice: q pre-divided by sqrt(c), then the attention divides"),
    Mutant("05.global_attention", "mha.py", GLOBAL_Q, "q = self.linear_q(x.mean(dim=-2))",
           "MASKED mean", "plain mean of the queries: padding rows counted"),
    Mutant("05.global_attention", "mha.py", GLOBAL_Q,
           "q = self.linear_q(masked_mean(x, None, dim=-2))",
           "MASKED mean", "mask not passed to masked_mean"),
    Mutant("05.global_attention", "mha.py", GLOBAL_KEY_MASK,
           "key_mask = None\n        " + GLOBAL_ATTEND,
           "padding keys must get no weight", "mask ignored for the keys"),
    Mutant("05.global_attention", "mha.py",
           "return o.unsqueeze(-2).expand(*x.shape[:-1], o.shape[-1])",
           "return o.unsqueeze(-2)", "every position along attn_dim receives the summary",
           "one summary per slice returned, not broadcast to its positions"),
    Mutant("05.global_attention", "mha.py",
           "q = q.view(*q.shape[:-1], self.N_head, 1, self.c)",
           "q = q.view(*q.shape[:-1], 1, self.N_head, self.c)", "merge the heads in order",
           "query heads laid along the query axis (one head's scores for all)"),
]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('05.masked_mean', 'mha.py', 'count = weights.sum(dim=dim).clamp_min(1.0)',
           'count = weights.sum().clamp_min(1.0)', "", 'one count over the whole mask',
           exact=(
               'output shape (4, 3) as expected; max |expected - got| = 0.508 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your mean is each slice's masked sum divided by a wrong count (the same wrong factor for every channel of a slice): divide each slice's sum by the number of True positions in that slice, weights.sum(dim=dim), clamped to at least 1",
           )),
    Mutant('05.global_attention', 'mha.py', 'k = self.linear_k(x).unsqueeze(-3)  # (*, 1, L, c), shared by every head',
           'k = self.linear_k(x)  # (*, 1, L, c), shared by every head', "", 'shared k without its head axis',
           exact=(
               'raised RuntimeError: The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1',
               'at solutions/mha.mutant.py, line 159, in _global_attention:',
               'o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, N_head, 1, c)',
               'at solutions/attention.py, line 59, in scaled_dot_product_attention:',
               'return attention_weights(q, k, bias=bias, mask=mask) @ v',
               'at solutions/attention.py, line 39, in attention_weights:',
               'scores = scaled_scores(q, k)',
               'at solutions/softmax.py, line 33, in scaled_scores:',
               'return q @ k.transpose(-2, -1) / math.sqrt(c)',
               'hint: two tensors do not line up (2 against 3 on one axis): a reduction without keepdim=True, a missing size-1 axis (x[..., None]), or axes in another order',
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('05.masked_mean', 'mha.py', 'weights = mask.unsqueeze(-1).to(x.dtype)',
           'weights = mask.unsqueeze(-1).double()', "", 'the mask made float64', kind='dtype',
           exact=(
               'output dtype: expected torch.float32, got torch.float64 (the values agree)',
               "hint: your result is float64 for float32 inputs: the output's dtype must follow the input's, and something in your code fixes it (dtype=torch.float64 or .double()): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
           )),
    Mutant('05.masked_mean', 'mha.py', 'count = weights.sum(dim=dim).clamp_min(1.0)',
           'count = torch.maximum(weights.sum(dim=dim), torch.ones(weights.sum(dim=dim).shape, dtype=x.dtype))', "", 'a tensor of ones on the default device', kind='device',
           exact=(
               'raised RuntimeError: Tensor on device cpu is not on the expected device meta!',
               'hint: a tensor created inside your code sits on a fixed device (the CPU) while the inputs are elsewhere (here the `meta` device; on a GPU the same code fails): create tensors with device=x.device (torch.arange(n, device=x.device), zeros_like, x.new_ones(...)), or move them with .to(x.device); a tensor kept in a module belongs in register_buffer, so that module.to() moves it',
           )),
    Mutant('05.masked_mean', 'mha.py', '    count = weights.sum(dim=dim).clamp_min(1.0)\n    return total / count',
           '    count = weights.sum(dim=dim)\n    return torch.where(count > 0, total / count, torch.zeros_like(total))', "", '0/0 of an empty slice hidden by torch.where', kind='gradients',
           exact=(
               'grad x shape (2, 4, 3) as expected, but it holds 12 NaN where the reference has numbers',
               "hint: the output is right but the gradient with respect to x holds NaN where the reference's is a number: a step of the forward pass makes NaN or inf (0/0, exp of inf, the softmax of an all -inf row) and a later where, masked_fill or nan_to_num hides it in the output, but backward still sends NaN through it (NaN * 0 = NaN): make every step finite where it is computed (clamp a count to at least 1 before dividing, give a fully masked row finite scores before the softmax)",
           )),
    Mutant('05.masked_mean', 'mha.py', '    count = weights.sum(dim=dim).clamp_min(1.0)\n    return total / count',
           '    return torch.nan_to_num(total / weights.sum(dim=dim))', "", '0/0 of an empty slice hidden by nan_to_num', kind='gradients',
           exact=(
               'grad x shape (2, 4, 3) as expected, but it holds 12 NaN where the reference has numbers',
               "hint: the output is right but the gradient with respect to x holds NaN where the reference's is a number: a step of the forward pass makes NaN or inf (0/0, exp of inf, the softmax of an all -inf row) and a later where, masked_fill or nan_to_num hides it in the output, but backward still sends NaN through it (NaN * 0 = NaN): make every step finite where it is computed (clamp a count to at least 1 before dividing, give a fully masked row finite scores before the softmax)",
           )),
    Mutant('05.masked_mean', 'mha.py', '    count = weights.sum(dim=dim).clamp_min(1.0)\n    return total / count',
           '    count = weights.sum(dim=dim)\n    return (total / count).masked_fill(count == 0, 0.0)', "", '0/0 of an empty slice hidden by masked_fill', kind='gradients',
           exact=(
               'grad x shape (2, 4, 3) as expected, but it holds 12 NaN where the reference has numbers',
               "hint: the output is right but the gradient with respect to x holds NaN where the reference's is a number: a step of the forward pass makes NaN or inf (0/0, exp of inf, the softmax of an all -inf row) and a later where, masked_fill or nan_to_num hides it in the output, but backward still sends NaN through it (NaN * 0 = NaN): make every step finite where it is computed (clamp a count to at least 1 before dividing, give a fully masked row finite scores before the softmax)",
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('05.masked_mean', 'mha.py', 'weights = mask.unsqueeze(-1).to(x.dtype)',
           'weights = mask.unsqueeze(-1).float()', "", "the mask's weights made float32 by .float()", kind='bfloat16',
           exact=(
               'output dtype: expected torch.bfloat16, got torch.float32 (the values agree)',
               "hint: your result is float32 for bfloat16 inputs: the output's dtype must follow the input's, and something in your code fixes it (.float(), or torch.zeros/ones/tensor/arange without dtype=): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
           )),
    Mutant('05.masked_mean', 'mha.py', 'total = (x * weights).sum(dim=dim)',
           'total = (x.detach() * weights).sum(dim=dim)', "", 'x detached in the masked sum: no gradient arrives', kind='missing gradient',
           exact=(
               "grad x: no gradient arrived (autograd gave None: nothing in your code connects it to the output), where the reference's has numbers",
               'hint: the output is right but no gradient reaches x: something on its path to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new torch.tensor(...)), so it would never learn',
           )),
    Mutant('05.masked_mean', 'mha.py', 'count = weights.sum(dim=dim).clamp_min(1.0)',
           'count = weights.sum(dim=dim)', "", 'the count not clamped: 0/0 = NaN for a slice with no real position', kind='nan evidence',
           exact=(
               'a slice with no True position gave NaN (0 / 0)',
               'hint: divide by the count clamped to at least 1, so an all-padding slice gives 0 instead of 0/0 = NaN',
           )),
]
