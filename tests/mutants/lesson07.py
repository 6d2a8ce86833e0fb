"""Realistic bugs for the checks of lesson 07 (the Transformer around attention)."""
from tests.mutation import Mutant

F = "transformer.py"
SIN = "pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle)"
ANGLE = "angle = positions / base ** (two_i / d_model)  # (L, d_model/2)"
ROPE_OUT = "return x * cos + rotated * sin"
ROTATE = "rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # rotate_half(x)"
INV_FREQ = "inv_freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / c)  # (c/2,)"
RMS = "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)"
ATTN_RESIDUAL = "h = h + self.attn.linear_o(merge_heads(o))  # (*, L, d_model)"
FFN_RESIDUAL = "return h + self.ffn(self.norm_ffn(h))"
BLOCK_MASK = "o = scaled_dot_product_attention(q, k, v, mask=causal_mask(L).to(h.device))"
CROSS_K = "k = split_heads(self.linear_k(memory), self.n_heads)  # (*, n_heads, L_k, c)"
CROSS_V = "v = split_heads(self.linear_v(memory), self.n_heads)"
CROSS_MASK = "key_mask = None if memory_mask is None else memory_mask[..., None, None, :]"

MUTANTS = [
    # 07.sinusoidal_encoding
    Mutant("07.sinusoidal_encoding", F, SIN,
           "pe[:, 0::2] = torch.cos(angle)\n    pe[:, 1::2] = torch.sin(angle)",
           "sin on the EVEN", "cos and sin swapped"),
    Mutant("07.sinusoidal_encoding", F, SIN,
           "pe[:, :d_model // 2] = torch.sin(angle)\n    pe[:, d_model // 2:] = torch.cos(angle)",
           "not sin in the first half", "sin in the first half, cos in the second (concatenated)"),
    Mutant("07.sinusoidal_encoding", F,
           "two_i = torch.arange(0, d_model, 2, dtype=torch.float64)",
           "two_i = torch.arange(0, d_model // 2, dtype=torch.float64)",
           "the exponent counts pairs, not channels", "exponent i/d_model (pair index, no 2)"),
    Mutant("07.sinusoidal_encoding", F, ANGLE,
           "angle = positions * base ** (two_i / d_model)", "instead of divided",
           "multiplied by base**(2i/d) instead of divided"),
    Mutant("07.sinusoidal_encoding", F,
           "positions = torch.arange(L, dtype=torch.float64)[:, None]  # (L, 1)",
           "positions = torch.arange(1, L + 1, dtype=torch.float64)[:, None]  # (L, 1)",
           "positions count from 1 here", "positions counted from 1"),
    Mutant("07.sinusoidal_encoding", F,
           "positions = torch.arange(L, dtype=torch.float64)[:, None]  # (L, 1)",
           "positions = torch.arange(32, dtype=torch.float64)[:L, None]  # (L, 1)",
           "a size is fixed somewhere", "positions sliced from a table of 32"),
    Mutant("07.sinusoidal_encoding", F,
           "positions = torch.arange(L, dtype=torch.float64)[:, None]  # (L, 1)",
           "positions = torch.arange(32, dtype=torch.float64)[torch.arange(L), None]",
           "a size is fixed somewhere", "positions looked up in a table of 32"),
    Mutant("07.sinusoidal_encoding", F, ANGLE,
           "angle = positions / 10000.0 ** (two_i / d_model)", "use the `base` argument",
           "base hard-coded to 10000"),
    Mutant("07.sinusoidal_encoding", F, "return pe.to(dtype)", "return pe",
           "in the `dtype` asked for", "dtype argument ignored"),
    # 07.rope
    Mutant("07.rope", F, ROPE_OUT, "return x * sin + rotated * cos",
           "cos multiplies x, sin multiplies rotate_half(x)", "cos and sin swapped"),
    Mutant("07.rope", F, ROTATE, "rotated = torch.cat([x[..., half:], -x[..., :half]], dim=-1)",
           "minus on the second half", "rotate_half with the minus on the wrong half"),
    Mutant("07.rope", F, ROTATE,
           "rotated = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)",
           "not with its neighbour i + 1", "interleaved pairs (2i, 2i+1) instead of rotate-half"),
    Mutant("07.rope", F, INV_FREQ,
           "inv_freq = base ** (-torch.arange(half, dtype=torch.float64) / c)  # (c/2,)",
           "the exponent is -2i/c", "exponent i/c instead of 2i/c"),
    Mutant("07.rope", F, "angle = torch.cat([angle, angle], dim=-1)",
           "angle = angle.repeat_interleave(2, dim=-1)", "the same angle serves both halves",
           "angles repeated per neighbouring channel (interleaved layout) with rotate-half"),
    Mutant("07.rope", F, "        positions = torch.arange(L)\n",
           "        pass\n    positions = torch.arange(L)\n", "use the `positions` given",
           "positions argument ignored"),
    Mutant("07.rope", F, "angle = positions.detach().cpu().to(torch.float64)[:, None] * inv_freq",
           "angle = positions.detach().cpu().long().to(torch.float64)[:, None] * inv_freq",
           "do not round them", "positions cast to integers"),
    Mutant("07.rope", F, ROPE_OUT, "return x.mul_(cos).add_(rotated * sin)",
           "must stay as they were", "x rotated in place"),
    Mutant("07.rope", F,
           "    cos = angle.cos().to(device=x.device, dtype=x.dtype)\n"
           "    sin = angle.sin().to(device=x.device, dtype=x.dtype)\n",
           "    cos, sin = angle.cos(), angle.sin()\n", "return x's dtype",
           "float64 angles promote a float32 x"),
    Mutant("07.rope", F, ROPE_OUT, "return x * cos + x * sin", "rotate_half(x) = cat(-x",
           "rotate_half forgotten: x * cos + x * sin"),
    # 07.rms_norm
    Mutant("07.rms_norm", F, "return x / rms * self.weight",
           "x = x - x.mean(dim=-1, keepdim=True)\n        return x / rms * self.weight",
           "does NOT subtract the mean", "LayerNorm-style mean subtraction"),
    Mutant("07.rms_norm", F, RMS,
           "rms = (x - x.mean(dim=-1, keepdim=True)).pow(2).mean(dim=-1, keepdim=True).add(self.eps).sqrt()",
           "does NOT subtract the mean", "divides by the standard deviation (variance about the mean)"),
    Mutant("07.rms_norm", F, RMS,
           "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + self.eps",
           "eps goes INSIDE the square root", "eps outside the sqrt"),
    Mutant("07.rms_norm", F, RMS, "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)",
           "use it, not a hard-coded 1e-6", "eps argument ignored"),
    Mutant("07.rms_norm", F, "self.weight = nn.Parameter(torch.ones(d_model))",
           "self.weight = nn.Parameter(torch.randn(d_model))", "starting at ones",
           "weight initialised at random"),
    Mutant("07.rms_norm", F, RMS, "rms = torch.sqrt(x.pow(2).mean() + self.eps)",
           "dim=-1, keepdim=True", "mean over every element of the batch"),
    Mutant("07.rms_norm", F, RMS,
           "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps).detach()",
           "gradient with respect to x differs", "rms detached from the graph"),
    Mutant("07.rms_norm", F, "return x / rms * self.weight",
           "x /= rms\n        return x * self.weight", "must stay as they were", "normalised in place"),
    # 07.decoder_block
    Mutant("07.decoder_block", F, BLOCK_MASK,
           "o = scaled_dot_product_attention(q, k, v)", "causal_mask(L)", "no causal mask"),
    Mutant("07.decoder_block", F, BLOCK_MASK,
           "o = scaled_dot_product_attention(q, k, v, mask=causal_mask(L).T)", "causal_mask(L)",
           "mask transposed: queries see the future"),
    Mutant("07.decoder_block", F, ATTN_RESIDUAL + "\n        return h + self.ffn(self.norm_ffn(h))",
           "h = self.norm_attn(h + self.attn.linear_o(merge_heads(o)))\n"
           "        return self.norm_ffn(h + self.ffn(h))",
           "pre-norm", "post-norm (the original Add & Norm) instead of pre-norm"),
    Mutant("07.decoder_block", F, ATTN_RESIDUAL,
           "h = self.attn.linear_o(merge_heads(o))", "pre-norm",
           "attention residual missing"),
    Mutant("07.decoder_block", F, FFN_RESIDUAL, "return self.ffn(self.norm_ffn(h))", "pre-norm",
           "FFN residual missing"),
    Mutant("07.decoder_block", F, "x = self.norm_attn(h)\n", "x = h\n", "pre-norm",
           "norm_attn never applied"),
    Mutant("07.decoder_block", F, FFN_RESIDUAL, "return h + self.ffn(self.norm_attn(h))",
           "not norm_attn's output", "one norm reused for both branches"),
    Mutant("07.decoder_block", F, "q, k = apply_rope(q), apply_rope(k)",
           "q = apply_rope(q)", "apply_rope to q and k", "RoPE on q only"),
    Mutant("07.decoder_block", F, "q, k = apply_rope(q), apply_rope(k)",
           "q, k, v = apply_rope(q), apply_rope(k), apply_rope(v)", "not to v",
           "RoPE on the values too"),
    Mutant("07.decoder_block", F, "x = self.norm_attn(h)\n",
           "x = apply_rope(self.norm_attn(h)) if self.rope else self.norm_attn(h)\n", "not to x",
           "RoPE on the block's input (like an added position encoding) instead of q and k"),
    Mutant("07.decoder_block", F, "nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model)",
           "nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model)", "nn.GELU()",
           "ReLU (the 2017 paper's FFN) instead of GELU"),
    Mutant("07.decoder_block", F, "self.attn = MultiHeadAttention(d_model, d_model // n_heads, n_heads)",
           "self.attn = MultiHeadAttention(d_model, d_model, n_heads)",
           "MultiHeadAttention(d_model, d_model // n_heads, n_heads)", "full-width heads"),
    Mutant("07.decoder_block", F, ATTN_RESIDUAL,
           "h += self.attn.linear_o(merge_heads(o))", "must stay as they were", "residual added in place"),
    # 07.cross_attention
    Mutant("07.cross_attention", F, CROSS_K + "\n        " + CROSS_V,
           "k = split_heads(self.linear_k(x), self.n_heads)\n"
           "        v = split_heads(self.linear_v(x), self.n_heads)",
           "keys AND values from memory", "keys and values from the decoder instead of memory"),
    Mutant("07.cross_attention", F, CROSS_V, "v = split_heads(self.linear_v(x), self.n_heads)",
           "keys AND values from memory", "values from the decoder, keys from memory"),
    Mutant("07.cross_attention", F, CROSS_MASK,
           "key_mask = None if memory_mask is None else memory_mask[..., None, :, None]",
           "never mask the queries", "mask applied to the queries"),
    Mutant("07.cross_attention", F, CROSS_MASK, "key_mask = None", "marks encoder KEYS",
           "memory mask ignored"),
    Mutant("07.cross_attention", F, "o = scaled_dot_product_attention(q, k, v, mask=key_mask)",
           "o = scaled_dot_product_attention(q, k, v, mask=causal_mask(k.shape[-2])[:q.shape[-2]])",
           "never with causal_mask", "a causal mask copied from the decoder's self-attention"),
    Mutant("07.cross_attention", F, "self.linear_q = nn.Linear(d_model, d_model, bias=False)",
           "self.linear_q = nn.Linear(d_model, d_model)", "bias=False",
           "query projection with a bias"),
]

# Each message exactly as the student reads it (the problem, where it crashed, the
# hint chosen from every case), for the bugs whose old hint misled or was missing.
MUTANTS += [
    Mutant('07.sinusoidal_encoding', 'transformer.py', 'pe = torch.empty(L, d_model, dtype=torch.float64)\n    pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle)',
           'pe = torch.stack([torch.sin(angle), torch.cos(angle)]).reshape(L, d_model)', "", 'sin and cos interleaved by a reshape of the wrong stack',
           exact=(
               'output shape (1, 6) as expected; max |expected - got| = 1 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: PE[0] = [sin 0, cos 0, sin 0, cos 0, ...] = [0, 1, 0, 1, ...]: sin on the EVEN channels 0, 2, 4, ..., cos on the odd ones, interleaved (not sin in the first half and cos in the second), positions counting from 0',
           )),
    Mutant('07.rope', 'transformer.py', 'rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)',
           'rotated = torch.cat([x[..., half:], x[..., :half]], dim=-1)', "", 'rotate_half without the minus',
           exact=(
               'output shape (4, 2) as expected; max |expected - got| = 1.83 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: with c=2 the pair (x0, x1) turns by the angle pos: (x0 cos - x1 sin, x1 cos + x0 sin), so rotate_half(x) = cat(-x[..., c/2:], x[..., :c/2]) (minus on the second half, moved in front)',
           )),
    Mutant('07.rms_norm', 'transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)',
           'rms = torch.sqrt(x.mean(dim=-1, keepdim=True) ** 2 + self.eps)  # (*, 1)', "", 'the square of the mean',
           exact=(
               'output shape (3, 8) as expected; max |expected - got| = 0.000347 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: you divide by sqrt(mean(x)**2 + eps), the square of the mean; RMSNorm takes the mean of the squares: x / sqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight',
           )),
    Mutant('07.rms_norm', 'transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)',
           'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True))  # (*, 1)', "", 'eps missing',
           exact=(
               'output shape (3, 8) as expected; max |expected - got| = 0.544 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: eps is missing: x / sqrt(mean(x**2) + eps) * weight, with eps inside the square root (without it a row of near-zeros divides by almost 0)',
           )),
    Mutant('07.rms_norm', 'transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)',
           'rms = x.pow(2).mean(dim=-1, keepdim=True) + self.eps  # (*, 1)', "", 'no square root',
           exact=(
               'output shape (2, 4) as expected; max |expected - got| = 0.439 (tolerance 1e-05 + 1e-07*|expected|)',
               'hint: you divide by mean(x**2) + eps itself: take its square root (the ROOT of the mean square)',
           )),
    Mutant('07.rms_norm', 'transformer.py', 'return x / rms * self.weight',
           'return x / rms', "", 'weight never used',
           exact=(
               'output shape (2, 4) as expected; max |expected - got| = 1.5 (tolerance 1e-05 + 1e-07*|expected|)',
               'hint: the learned scale is missing: multiply the normalised x by self.weight',
           )),
    Mutant('07.decoder_block', 'transformer.py', 'nn.GELU(), nn.Linear(d_ff, d_model)',
           "nn.GELU(approximate='tanh'), nn.Linear(d_ff, d_model)", "", 'the tanh approximation of GELU',
           exact=(
               'output shape (5, 8) as expected; max |expected - got| = 0.000119 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your result is close to the reference (relative difference 0.0004) but not within its tolerance: the structure is right and some formula is a variant of the right one: an approximation (nn.GELU(approximate='tanh') where the exact nn.GELU() is meant), another eps, or a half-precision step",
           )),
    Mutant('07.decoder_block', 'transformer.py', 'h = h + self.attn.linear_o(merge_heads(o))',
           'h = h + self.attn.linear_o(o)', "", 'merge_heads forgotten',
           exact=(
               'raised RuntimeError: mat1 and mat2 shapes cannot be multiplied (24x4 and 8x8)',
               'at solutions/transformer.mutant.py, line 130, in forward:',
               'h = h + self.attn.linear_o(o)  # (*, L, d_model)',
               'hint: a Linear got a last axis of 4 channels where it takes d_model: after the attention, o is (*, n_heads, L, c); merge_heads(o) gives the (*, L, d_model) that attn.linear_o takes',
           )),
    Mutant('07.cross_attention', 'transformer.py', 'o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, n_heads, L_q, c)',
           'weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)\n        if key_mask is not None:\n            weights = weights * key_mask\n        o = weights @ v', "", 'memory mask applied after the softmax',
           exact=(
               'changing the encoder outputs at PADDED positions (memory_mask False) changed the result by up to 0.963: padded keys must get zero weight',
               "hint: the cases without a memory_mask pass, so q, k and v are right and the mask is what goes wrong: memory_mask (*, L_k) marks encoder KEYS, to be hidden BEFORE the softmax (their scores become -inf, so each query's weights still sum to 1 over the real keys): pass memory_mask[..., None, None, :] (*, 1, 1, L_k) as the mask of scaled_dot_product_attention; never mask the queries, and no causal mask here",
           )),
    Mutant('07.cross_attention', 'transformer.py', 'key_mask = None if memory_mask is None else memory_mask[..., None, None, :]',
           'key_mask = None if memory_mask is None else memory_mask[:, None, None, :]', "", 'the mask indexed for one batch axis',
           exact=(
               'raised RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 3',
               'at solutions/transformer.mutant.py, line 168, in forward:',
               'o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, n_heads, L_q, c)',
               'at solutions/attention.py, line 59, in scaled_dot_product_attention:',
               'return attention_weights(q, k, bias=bias, mask=mask) @ v',
               'at solutions/attention.py, line 44, in attention_weights:',
               'scores = scores.masked_fill(~mask, float("-inf"))',
               'hint: two tensors do not line up (3 against 4 on one axis): a reduction without keepdim=True, a missing size-1 axis (x[..., None]), or axes in another order',
           )),
]

# float32 rounding inside a float64 exercise (1e-7 relative): the visible checks fail it with the
# float32 hint; the hidden judge's tolerance (1e-6) lets it through, so it is no hidden mutant
VISIBLE_ONLY = [
    Mutant('07.sinusoidal_encoding', 'transformer.py', 'two_i = torch.arange(0, d_model, 2, dtype=torch.float64)',
           'two_i = torch.arange(0, d_model, 2)', "", 'integer arange: the exponents in float32',
           exact=(
               'output shape (50, 16) as expected; max |expected - got| = 1.84e-07 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your result equals the reference only to about 2e-07 (relative), the rounding of float32: somewhere a float32 tensor enters the computation (torch.arange/zeros/tensor without dtype=, an integer arange divided by a number, .float()): compute in the input's dtype",
           )),
    Mutant('07.rope', 'transformer.py', 'inv_freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / c)  # (c/2,)',
           'inv_freq = 1.0 / base ** (torch.arange(0, c, 2) / c)  # (c/2,)', "", 'integer arange: the frequencies in float32',
           exact=(
               'output shape (3, 16) as expected; max |expected - got| = 7.88e-07 (tolerance 1e-09 + 1e-07*|expected|)',
               "hint: your result equals the reference only to about 3e-07 (relative), the rounding of float32: somewhere a float32 tensor enters the computation (torch.arange/zeros/tensor without dtype=, an integer arange divided by a number, .float()): compute in the input's dtype",
           )),
]

# The classes the derived cases and the larger sizes find (another dtype, the meta device,
# a module built outside no_grad, gradients of edge rows, sizes past the lesson's, large
# scores with a mask, .T on batched tensors, the argument that differs): each fails its own
# check with the hint of its class, as the student reads it.
MUTANTS += [
    Mutant('07.rms_norm', 'transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)',
           'rms = torch.sqrt(x.double().pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)', "", 'the mean square in double', kind='dtype',
           exact=(
               'output dtype: expected torch.float32, got torch.float64 (the values agree)',
               "hint: your result is float64 for float32 inputs: the output's dtype must follow the input's, and something in your code fixes it (dtype=torch.float64 or .double()): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and never cast the result",
           )),
    Mutant('07.decoder_block', 'transformer.py', 'mask=causal_mask(L).to(h.device))',
           'mask=causal_mask(L))', "", 'the causal mask left on the CPU', kind='device',
           exact=(
               'raised RuntimeError: Tensor on device meta is not on the expected device cpu!',
               'hint: a tensor created inside your code sits on a fixed device (the CPU) while the inputs are elsewhere (here the `meta` device; on a GPU the same code fails): create tensors with device=x.device (torch.arange(n, device=x.device), zeros_like, x.new_ones(...)), or move them with .to(x.device); a tensor kept in a module belongs in register_buffer, so that module.to() moves it',
           )),
    Mutant('07.rms_norm', 'transformer.py', 'self.weight = nn.Parameter(torch.ones(d_model))',
           'self.weight = nn.Parameter(torch.empty(d_model))\n        self.weight.fill_(1.0)', "", 'the weight filled in place after wrapping', kind='no_grad',
           exact=(
               'raised RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.',
               'hint: an in-place change of a parameter in __init__ (.zero_(), .fill_(), .mul_(), +=) raises when autograd is on, as it is wherever the module is used: set starting values inside `with torch.no_grad():`, or with nn.init.zeros_, nn.init.ones_ or nn.init.constant_ (which do so)',
           )),
    Mutant('07.decoder_block', 'transformer.py', 'o = scaled_dot_product_attention(q, k, v, mask=causal_mask(L).to(h.device))',
           'o = scaled_dot_product_attention(q, k, v, mask=causal_mask(8)[:L, :L].to(h.device))', "", 'the causal mask cut from one of size 8', kind='sizes',
           exact=(
               'raised RuntimeError: The size of tensor a (8) must match the size of tensor b (20) at non-singleton dimension 3',
               'hint: nothing in forward may depend on a fixed sequence length: L = h.shape[-2], causal_mask(L) and the positions 0 .. L-1 of that length',
           )),
    Mutant('07.rope', 'transformer.py', '        positions = torch.arange(L)\n',
           '        positions = torch.arange(64)[:L]\n', "", 'positions from a table of 64', kind='sizes',
           exact=(
               'raised RuntimeError: The size of tensor a (300) must match the size of tensor b (64) at non-singleton dimension 0',
               'hint: positions are arange(L) for any L, not a table of fixed size: pair i (channels i and i + c/2) turns by the angle pos * base**(-2i/c), for i = 0 .. c/2 - 1: the exponent is -2i/c, and the same angle serves both halves (cat([angle, angle], -1))',
           )),
    Mutant('07.cross_attention', 'transformer.py', 'q = split_heads(self.linear_q(x), self.n_heads)  # (*, n_heads, L_q, c)\n        k = split_heads(self.linear_k(memory), self.n_heads)  # (*, n_heads, L_k, c)\n        v = split_heads(self.linear_v(memory), self.n_heads)',
           'head_dim = self.linear_q.out_features // self.n_heads\n        q = split_heads(self.linear_q(x), head_dim)\n        k = split_heads(self.linear_k(memory), head_dim)\n        v = split_heads(self.linear_v(memory), head_dim)', "", 'split_heads given the head width, not the number of heads', kind='evidence',
           exact=(
               'output shape (4, 8) as expected; max |expected - got| = 1.04 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: your CrossAttention calls split_heads with other arguments than the reference: `N_head` is 4, the reference passes 2. Pass what the reference passes',
           )),
]

# the wrong angle formula named (a check's diagnosis of which formula the encoding matches)
MUTANTS += [
    Mutant('07.sinusoidal_encoding', 'transformer.py', 'angle = positions / base ** (two_i / d_model)  # (L, d_model/2)',
           'angle = positions / base ** two_i / d_model  # (L, d_model/2)', "", "the exponent's brackets lost", kind='evidence',
           exact=(
               'output shape (5, 2) as expected; max |expected - got| = 1.67 (tolerance 1e-09 + 1e-07*|expected|)',
               'hint: the exponent lost its brackets: pos / base**2i / d_model computes base**2i first and divides by d_model after; write pos / base**(2i / d_model)',
           )),
]

# The kinds of case every check now carries, and each lesson's central idea named (bfloat16, a
# dropout left on, a None returned, a gradient that never arrives, a mask of the other polarity,
# NaN named only where it is, the wrong formula): each message as the student reads it.
MUTANTS += [
    Mutant('07.decoder_block', 'transformer.py', 'return h + self.ffn(self.norm_ffn(h))',
           'return h + torch.nn.functional.dropout(self.ffn(self.norm_ffn(h)), p=0.1)', "", 'F.dropout left on in the feed-forward branch (training=True by default)', kind='randomness',
           exact=(
               'the same input, run twice in training mode, gave outputs that differ by up to 0.709: something in your code draws random numbers',
               "hint: your code draws random numbers: the same input gives another output each time. A dropout left on (nn.Dropout in training mode, or F.dropout(x, p), whose training=True is the default even in eval mode), or torch.rand/randn/bernoulli in forward: the course's modules have no dropout, so remove it (every other difference of this check may come from it too)",
           )),
    Mutant('07.rope', 'transformer.py', 'return x * cos + rotated * sin',
           'out = x * cos + rotated * sin', "", 'the rotated x never returned', kind='none return',
           exact=(
               'returned None: is a `return` statement missing?',
               'hint: your apply_rope returned None: Python returns None from a function that ends without a `return` (one is missing, or an `if` or a loop that never ran skips it on this path), or it returns a variable that is still None here (a loop over blocks or positions that never ran, an accumulator never assigned)',
           )),
    Mutant('07.decoder_block', 'transformer.py', 'return h + self.ffn(self.norm_ffn(h))',
           'h = h + self.ffn(self.norm_ffn(h))', "", 'forward ends without a return', kind='none return',
           exact=(
               "returned None (in the case's output 'original'): is a `return` missing, or a variable still None on this path?",
               'hint: your DecoderBlock returned None: Python returns None from a function that ends without a `return` (one is missing, or an `if` or a loop that never ran skips it on this path), or it returns a variable that is still None here (a loop over blocks or positions that never ran, an accumulator never assigned)',
           )),
    Mutant('07.cross_attention', 'transformer.py', 'key_mask = None if memory_mask is None else memory_mask[..., None, None, :]',
           'key_mask = None if memory_mask is None else ~memory_mask[..., None, None, :]', "", 'the memory mask inverted', kind='mask polarity',
           exact=(
               'changing the encoder outputs at PADDED positions (memory_mask False) changed the result by up to 14.4: padded keys must get zero weight',
               'hint: your CrossAttention passes scaled_dot_product_attention a `mask` with True and False swapped: True marks what may be attended (a real token, a key the query may see), False what is hidden; pass the mask as it is (or build it that way round)',
           )),
    Mutant('07.rms_norm', 'transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)',
           'rms = torch.sqrt(x.pow(2).mean(dim=-2, keepdim=True) + self.eps)  # (*, 1)', "", 'the mean square taken over the positions', kind='diagnosis',
           exact=(
               'output shape (2, 4) as expected; max |expected - got| = 0.142 (tolerance 1e-05 + 1e-07*|expected|)',
               "hint: your mean runs over the positions (dim=-2), not over each row's channels: RMSNorm normalises every position on its own, mean(x**2, dim=-1, keepdim=True)",
           )),
]
