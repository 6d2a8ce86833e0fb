"""Realistic bugs for the checks of lesson 03 (multi-head)."""
from tests.mutation import CUT, IN_PLACE, Mutant, SQUEEZED

SPLIT = "return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)"
MERGE = "return x.transpose(-3, -2).reshape(*batch, L, N_head * c)"
ATTEND = "o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)"
KEY_MASK = ("key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
            "        " + ATTEND)
QKV = ("self.linear_q = nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)\n"
       "        self.linear_k = nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)\n"
       "        self.linear_v = nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)")
MASK_DIM = "mask_dim = self.attn_dim if self.attn_dim >= 0 else self.attn_dim + 1"
POSITIVE = "a positive attn_dim names the same axis"

MUTANTS = [
    # 03.split_heads
    Mutant("03.split_heads", "mha.py", SPLIT,
           "return x.view(*batch, N_head, L, width // N_head)",
           "transpose the head axis in front of L",
           "viewed as (N_head, L, c) without a transpose: heads cut across positions"),
    Mutant("03.split_heads", "mha.py", SPLIT,
           "return x.view(*batch, L, width // N_head, N_head).movedim(-1, -3)",
           "channel block", "channels dealt out to the heads in turn (interleaved)"),
    Mutant("03.split_heads", "mha.py", SPLIT,
           "return x.view(*batch, L, N_head, width // N_head)",
           "(*, N_head, L, c)", "head axis left after L"),
    Mutant("03.split_heads", "mha.py", SPLIT,
           "return x.view(*batch, L, N_head, width // N_head).transpose(-3, -1)",
           "(*, N_head, L, c)", "transposes the wrong pair of axes"),
    Mutant("03.split_heads", "mha.py", SPLIT, SPLIT + ".squeeze()", SQUEEZED,
           "squeeze() drops the head axis of one head, and size-1 batch or sequence axes"),
    # 03.merge_heads
    Mutant("03.merge_heads", "mha.py", MERGE, "return x.reshape(*batch, L, N_head * c)",
           "transpose back", "reshapes without moving the head axis back"),
    Mutant("03.merge_heads", "mha.py", MERGE,
           "return x.movedim(-3, -1).reshape(*batch, L, N_head * c)",
           "channel block", "heads interleaved channel by channel"),
    Mutant("03.merge_heads", "mha.py", MERGE,
           "return x.transpose(-2, -1).reshape(*batch, L, N_head * c)",
           "undo split_heads", "transposes L and c instead of heads and L"),
    Mutant("03.merge_heads", "mha.py", MERGE,
           "return x.transpose(-3, -2).reshape(L, N_head * c)",
           "leading axes are batch axes", "drops the batch axes"),
    Mutant("03.merge_heads", "mha.py", MERGE, MERGE + ".squeeze()", SQUEEZED,
           "squeeze() drops size-1 batch or sequence axes"),
    # 03.multi_head_attention
    Mutant("03.multi_head_attention", "mha.py", MASK_DIM, "mask_dim = self.attn_dim + 1",
           POSITIVE, "mask axis attn_dim + 1 for every sign: wrong for a positive attn_dim"),
    Mutant("03.multi_head_attention", "mha.py", "v = split_heads(self.linear_v(x), self.N_head)",
           "v = split_heads(self.linear_v(x).detach(), self.N_head)", CUT + " linear_v.weight",
           "values detached: x's gradient misses the value path, linear_v never learns"),
    Mutant("03.multi_head_attention", "mha.py",
           "q = split_heads(self.linear_q(x), self.N_head)  # (*, N_head, L, c)",
           "if attention_mask is not None:\n"
           "            x.masked_fill_(~attention_mask[..., None], 0.0)\n"
           "        q = split_heads(self.linear_q(x), self.N_head)", IN_PLACE,
           "zeroes the padding positions of the caller's x in place"),
    Mutant("03.multi_head_attention", "mha.py", "return merge_heads(o)", "return merge_heads(o.squeeze())",
           "N_head = 1", "squeeze() on the heads' output drops the head and batch axes of size 1"),
    Mutant("03.multi_head_attention", "mha.py", "self.linear_o = nn.Linear(N_head * c, c_in)",
           "self.linear_o = nn.Linear(N_head * c, c_in, bias=False)",
           "linear_o: nn.Linear(N_head*c, c_in) with bias", "output projection without bias"),
    Mutant("03.multi_head_attention", "mha.py", QKV, QKV.replace("use_bias_for_embeddings", "False"),
           "bias=use_bias_for_embeddings", "q/k/v never get a bias, whatever the flag says"),
    Mutant("03.multi_head_attention", "mha.py", QKV, QKV.replace("use_bias_for_embeddings", "True"),
           "bias=use_bias_for_embeddings", "q/k/v always get a bias (BERT's habit)"),
    Mutant("03.multi_head_attention", "mha.py", ATTEND,
           "o = torch.softmax(q @ k.transpose(-2, -1) / self.c ** 0.5, dim=-2) @ v",
           "softmax over the keys", "softmax over the query axis"),
    Mutant("03.multi_head_attention", "mha.py", ATTEND,
           "o = torch.softmax(q @ k.transpose(-2, -1) / (self.N_head * self.c) ** 0.5, "
           "dim=-1) @ v",
           "/ sqrt(c)", "scaled by the full width N_head*c instead of the head width c"),
    Mutant("03.multi_head_attention", "mha.py", "k = split_heads(self.linear_k(x), self.N_head)",
           "k = split_heads(self.linear_q(x), self.N_head)", "k = split_heads(linear_k(x), N_head)",
           "keys from the query projection"),
    Mutant("03.multi_head_attention", "mha.py", "x = x.movedim(self.attn_dim, -2)",
           "x = x.movedim(-2, -2)", "x.movedim(attn_dim, -2)", "attn_dim ignored on the way in"),
    Mutant("03.multi_head_attention", "mha.py",
           "return self.linear_o(o).movedim(-2, self.attn_dim)", "return self.linear_o(o)",
           "x.movedim(attn_dim, -2)", "attention axis not moved back to attn_dim"),
    Mutant("03.multi_head_attention", "mha.py", ATTEND,
           "o = scaled_dot_product_attention(q, k, v, bias=bias)", "key mask",
           "attention_mask not passed on"),
    Mutant("03.multi_head_attention", "mha.py", KEY_MASK,
           KEY_MASK.replace("attention_mask[..., None, None, :]", "attention_mask[..., None, :, None]"),
           "(*, 1, 1, L)", "the mask hides queries instead of keys"),
    Mutant("03.multi_head_attention", "mha.py", ATTEND,
           "o = scaled_dot_product_attention(q, k, v, mask=key_mask)", "pass `bias` on",
           "bias dropped"),
]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('03.split_heads', 'mha.py', 'return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)',
           'return x.reshape(*batch, L, N_head, -1).permute(0, 2, 1, 3)', "", 'a 4-D permute',
           exact=(
               'raised RuntimeError: permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = 3 is not equal to len(dims) = 4',
               'at solutions/mha.mutant.py, line 18, in split_heads:',
               'return x.reshape(*batch, L, N_head, -1).permute(0, 2, 1, 3)',
               'hint: permute names every axis, so it fits one number of axes only: movedim or transpose with negative axes work for any number of leading batch axes',
           )),
    Mutant('03.split_heads', 'mha.py', 'return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)',
           'return x.float().view(*batch, L, N_head, width // N_head).transpose(-3, -2)', "", 'split in float32',
           exact=(
               'output dtype: expected torch.float64, got torch.float32 (the values agree)',
               "hint: your result is float32, the reference (like the inputs) float64: something in your code makes float32 (torch.zeros/ones/empty/tensor/arange without dtype=, or .float()): create tensors with dtype=x.dtype (or zeros_like, new_zeros) so that the result keeps the input's dtype",
           )),
    Mutant('03.merge_heads', 'mha.py', 'return x.transpose(-3, -2).reshape(*batch, L, N_head * c)',
           'return x.transpose(-3, -2).view(*batch, L, N_head * c)', "", 'view after transpose',
           exact=(
               "raised RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
               'at solutions/mha.mutant.py, line 27, in merge_heads:',
               'return x.transpose(-3, -2).view(*batch, L, N_head * c)',
               'hint: view() after a transpose or permute cannot work: use reshape() (or .contiguous().view())',
           )),
    Mutant('03.multi_head_attention', 'mha.py', 'v = split_heads(self.linear_v(x), self.N_head)\n        key_mask',
           'v = split_heads(self.linear_k(x), self.N_head)\n        key_mask', "", 'values from linear_k',
           exact=(
               'output shape (5, 6) as expected; max |expected - got| = 1.46 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: the values v passed to scaled_dot_product_attention differ while q and k agree: v = split_heads(linear_v(x), N_head)',
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('03.multi_head_attention', 'mha.py', 'self.linear_o = nn.Linear(N_head * c, c_in)',
           'self.linear_o = nn.Linear(N_head * c, c_in)\n        self.linear_o.bias.zero_()', "", 'the output bias zeroed in place in __init__', kind='no_grad',
           exact=(
               'raised RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.',
               'hint: an in-place change of a parameter in __init__ (.zero_(), .fill_(), .mul_(), +=) raises when autograd is on, as it is wherever the module is used: set starting values inside `with torch.no_grad():`, or with nn.init.zeros_, nn.init.ones_ or nn.init.constant_ (which do so)',
           )),
    Mutant('03.split_heads', 'mha.py', 'return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)',
           'return torch.as_tensor(x.detach().numpy()).view(*batch, L, N_head, width // N_head).transpose(-3, -2)', "", 'a round trip through numpy', kind='gradients',
           exact=(
               "grad x: no gradient arrived (autograd gave None: nothing in your code connects it to the output), where the reference's has numbers",
               'hint: the output is right but no gradient reaches x: something on its path to the output is cut (.detach(), torch.no_grad(), .data, .item() or a new torch.tensor(...)), so it would never learn',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('03.multi_head_attention', 'mha.py', '        return merge_heads(o)\n',
           '        return merge_heads(torch.nn.functional.dropout(o, p=0.1, training=self.training))\n', "", "dropout on the heads' output in training mode", kind='randomness',
           exact=(
               'the same input, run twice in training mode, gave outputs that differ by up to 0.925: something in your code draws random numbers',
               "hint: your code draws random numbers: the same input gives another output each time. A dropout left on (nn.Dropout in training mode, or F.dropout(x, p), whose training=True is the default even in eval mode), or torch.rand/randn/bernoulli in forward: the course's modules have no dropout, so remove it (every other difference of this check may come from it too)",
           )),
    Mutant('03.multi_head_attention', 'mha.py', '        key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)\n        return merge_heads(o)',
           '        key_mask = None if attention_mask is None else ~attention_mask[..., None, None, :]\n        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)\n        return merge_heads(o)', "", 'the key mask inverted on its way to the attention', kind='mask polarity',
           exact=(
               'output shape (2, 5, 4) as expected; max |expected - got| = 5.07 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: your MultiHeadAttention passes scaled_dot_product_attention a `mask` with True and False swapped: True marks what may be attended (a real token, a key the query may see), False what is hidden; pass the mask as it is (or build it that way round)',
           )),
]
