"""Realistic bugs for the checks of lesson 10 (linear attention in three forms, a decayed state
in two, Nyström landmarks): each is one of the bugs the lesson names, and fails one check with
the hint that names it."""
import dataclasses

from tests.mutation import Mutant

LA_OUT = "    out = (weights @ v.to(work)) / weights.sum(dim=-1, keepdim=True)\n"
LA_WORK = "    work = accumulation_dtype(q)\n    phi_q, phi_k = feature_map(q.to(work)), feature_map(k.to(work))\n"
REC_BLOCK = (
    "    work = accumulation_dtype(q)\n"
    "    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])\n"
    "    d, e = k.shape[-1], v.shape[-1]\n"
    "    if state is None:\n"
    "        S, z = q.new_zeros(*batch, d, e, dtype=work), q.new_zeros(*batch, d, dtype=work)\n"
    "    else:\n"
    "        S, z = (t.to(work) for t in state)\n"
    "    out = q.new_empty(*batch, q.shape[-2], e, dtype=work)\n"
    "    for t in range(q.shape[-2]):  # phi token by token: nothing of length L but the output\n"
    "        q_t, k_t = feature_map(q[..., t, :].to(work)), feature_map(k[..., t, :].to(work))\n"
    "        S = S + k_t[..., :, None] * v[..., t, None, :].to(work)  # (*, d, e): add phi(k_t) v_tᵀ\n"
    "        z = z + k_t\n"
    "        out[..., t, :] = (q_t[..., None, :] @ S).squeeze(-2) / (q_t * z).sum(-1, keepdim=True)\n"
    "    return out.to(q.dtype), (S, z)\n")
REC_START = ("    if state is None:\n"
             "        S, z = q.new_zeros(*batch, d, e, dtype=work), q.new_zeros(*batch, d, dtype=work)\n")
REC_UPDATE = "        S = S + k_t[..., :, None] * v[..., t, None, :].to(work)  # (*, d, e): add phi(k_t) v_tᵀ\n"
CH_V = "        v_c = v[..., rows, :].to(work)\n"
CH_BODY = ("        numerator = q_c @ S + weights @ v_c\n"
           "        normaliser = q_c @ z + weights.sum(dim=-1, keepdim=True)\n"
           "        out[..., rows, :] = numerator / normaliser\n"
           "        S = S + k_c.transpose(-2, -1) @ v_c  # now include this chunk, for the next ones\n"
           "        z = z + k_c.sum(dim=-2).unsqueeze(-1)\n")
CH_INCLUSIVE = ("        S = S + k_c.transpose(-2, -1) @ v_c\n"
                "        z = z + k_c.sum(dim=-2).unsqueeze(-1)\n"
                "        numerator = q_c @ S + weights @ v_c\n"
                "        normaliser = q_c @ z + weights.sum(dim=-1, keepdim=True)\n"
                "        out[..., rows, :] = numerator / normaliser\n")
CH_WORK = ("    work = accumulation_dtype(q)\n"
           "    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])\n"
           "    d, e = k.shape[-1], v.shape[-1]\n"
           "    S, z = q.new_zeros(*batch, d, e, dtype=work), q.new_zeros(*batch, d, 1, dtype=work)\n")
CH_LOOP = "    for rows in key_blocks(q.shape[-2], chunk):  # phi chunk by chunk\n"
DEC_UPDATE = "        h = a_t * h + k[..., t, :, None] * v[..., t, None, :]\n"
DEC_START = ("    h = q.new_zeros(*batch, k.shape[-1], v.shape[-1]) if state is None else "
             "state.to(work)\n")
DECAY = ('    decay = torch.exp((c[..., :, None] - c[..., None, :]).masked_fill(future, '
         'float("-inf")))\n')
LM_NUMBER = "    number = torch.cumsum(real, dim=-1) - 1  # (*, L): the rank of each real token\n"
LM_MEMBER = "    member = (segment[..., None, :] == ids[:, None]) & mask[..., None, :]  # (*, m, L)\n"
NY_B = ("    if mask is not None:\n"
        '        b_scores = b_scores.masked_fill(~mask[..., None, :], float("-inf"))\n')

VALUES = "hint: phi applies to the queries and the keys only"
OVERFLOW = "in float16 the normaliser phi(q)ᵀ z"
RESET = "a state that is not reset between sequences"
INCLUSIVE = "the off-by-one between inclusive and exclusive chunk states"
ORDER = "a decay applied after instead of before the update"
RATIO = "a decay written as a ratio of cumulative products"
AFTER_EXP = "mask the decay matrix BEFORE the exp"
PADDING = "landmarks computed over padding"

MUTANTS = [
    # 10.linear_attention
    Mutant("10.linear_attention", "linear.py", LA_OUT,
           "    out = (weights @ feature_map(v.to(work))) / weights.sum(dim=-1, keepdim=True)\n",
           VALUES, "phi applied to the values"),
    Mutant("10.linear_attention", "linear.py", LA_OUT,
           "    out = (weights / weights.sum(dim=-2, keepdim=True)) @ v.to(work)\n",
           "the normaliser of query i is the sum of ITS row of weights",
           "the normaliser summed over the queries (the wrong axis)"),
    Mutant("10.linear_attention", "linear.py", LA_WORK,
           "    work = q.dtype\n    phi_q, phi_k = feature_map(q.to(work)), feature_map(k.to(work))\n",
           OVERFLOW, "float16 inputs computed in float16: the normaliser overflows"),
    Mutant("10.linear_attention", "linear.py", "        weights = weights.tril()\n",
           "        weights = weights.tril(diagonal=-1)\n",
           "with causal=True query i sees keys j <= i only", "causal mask without the diagonal"),
    Mutant("10.linear_attention", "linear.py", "    return out.to(q.dtype)\n    # END SOLUTION\n\n\n"
           "def linear_attention_recurrent",
           "    return out\n    # END SOLUTION\n\n\ndef linear_attention_recurrent",
           "your result is float32 for float16 inputs: compute in",
           "the float32 result not cast back to the input's dtype", kind="dtype"),
    # 10.linear_recurrent
    Mutant("10.linear_recurrent", "linear.py", REC_UPDATE,
           "        S = S + k_t[..., :, None] * feature_map(v[..., t, None, :].to(work))\n",
           VALUES, "phi applied to the values"),
    Mutant("10.linear_recurrent", "linear.py", REC_UPDATE,
           '        S = S + torch.einsum("...d,...e->de", k_t, v[..., t, :].to(work))\n',
           RESET, "the state summed over the batch: one state shared by every sequence"),
    Mutant("10.linear_recurrent", "linear.py", REC_BLOCK,
           REC_BLOCK.replace(REC_START,
                             "    kept = getattr(linear_attention_recurrent, 'kept', None)\n"
                             "    if state is None and kept is not None and "
                             "kept[0].shape == (*batch, d, e):\n"
                             "        S, z = kept\n"
                             "    elif state is None:\n"
                             "        S, z = q.new_zeros(*batch, d, e, dtype=work), "
                             "q.new_zeros(*batch, d, dtype=work)\n")
           .replace("    return out.to(q.dtype), (S, z)\n",
                    "    linear_attention_recurrent.kept = (S, z)\n"
                    "    return out.to(q.dtype), (S, z)\n"),
           RESET, "the last call's state kept on the function: the next call starts from it"),
    Mutant("10.linear_recurrent", "linear.py", REC_BLOCK,
           REC_BLOCK.replace(REC_START,
                             "    if state is None:\n"
                             "        S, z = _STATES.get((batch, d, e)) or "
                             "(q.new_zeros(*batch, d, e, dtype=work), "
                             "q.new_zeros(*batch, d, dtype=work))\n")
           .replace("    return out.to(q.dtype), (S, z)\n",
                    "    _STATES[(batch, d, e)] = (S, z)\n    return out.to(q.dtype), (S, z)\n")
           .replace("    work = accumulation_dtype(q)\n", "    global _STATES\n"
                    "    _STATES = globals().get('_STATES', {})\n    work = accumulation_dtype(q)\n"),
           RESET, "a cache of states by shape, never reset"),
    Mutant("10.linear_recurrent", "linear.py", "        S, z = (t.to(work) for t in state)\n",
           "        S, z = q.new_zeros(*batch, d, e, dtype=work), q.new_zeros(*batch, d, dtype=work)\n",
           "a state passed in must be continued", "a state passed in is ignored"),
    Mutant("10.linear_recurrent", "linear.py", REC_BLOCK,
           REC_BLOCK.replace("    work = accumulation_dtype(q)\n", "    work = q.dtype\n"),
           OVERFLOW, "float16 inputs computed in float16: the normaliser overflows"),
    Mutant("10.linear_recurrent", "linear.py", REC_START,
           "    if state is None:\n"
           "        S, z = torch.zeros(*batch, d, e, dtype=work), torch.zeros(*batch, d, "
           "dtype=work)\n",
           "device", "the state created on the CPU", kind="device"),
    # 10.linear_chunked
    Mutant("10.linear_chunked", "linear.py", CH_BODY, CH_INCLUSIVE, INCLUSIVE,
           "the inclusive state: the chunk's keys added to S before its output"),
    Mutant("10.linear_chunked", "linear.py",
           "        weights = (q_c @ k_c.transpose(-2, -1)).tril()  # (*, chunk, chunk)\n",
           "        weights = (q_c @ k_c.transpose(-2, -1)).tril(diagonal=-1)\n",
           "inside a chunk, query i sees its own key", "the diagonal left out inside a chunk"),
    Mutant("10.linear_chunked", "linear.py", CH_LOOP,
           "    for rows in [slice(s, s + chunk) for s in range(0, q.shape[-2] - chunk + 1, chunk)]:\n",
           "the last chunk may be shorter", "the last, shorter chunk left out"),
    Mutant("10.linear_chunked", "linear.py", CH_V,
           "        v_c = feature_map(v[..., rows, :].to(work))\n",
           VALUES, "phi applied to the values"),
    Mutant("10.linear_chunked", "linear.py", CH_WORK, CH_WORK.replace(
        "    work = accumulation_dtype(q)\n", "    work = q.dtype\n"),
           OVERFLOW, "float16 inputs computed in float16: the normaliser overflows"),
    # 10.decayed_recurrent
    Mutant("10.decayed_recurrent", "linear.py", DEC_UPDATE,
           "        h = a_t * (h + k[..., t, :, None] * v[..., t, None, :])\n",
           ORDER, "the decay applied after the update"),
    Mutant("10.decayed_recurrent", "linear.py", DEC_UPDATE,
           '        h = a_t * h + torch.einsum("...d,...e->de", k[..., t, :], v[..., t, :])\n',
           RESET, "the state summed over the batch: one state shared by every sequence"),
    Mutant("10.decayed_recurrent", "linear.py", DEC_START,
           "    h = q.new_zeros(*batch, k.shape[-1], v.shape[-1])\n",
           "a state passed in must be continued", "a state passed in is ignored"),
    Mutant("10.decayed_recurrent", "linear.py", DEC_START,
           "    h = torch.zeros(*batch, k.shape[-1], v.shape[-1], dtype=torch.float64) "
           "if state is None else state.to(work)\n",
           "float32 meets float64", "the state hard-coded to float64", kind="dtype"),
    # 10.decayed_attention
    Mutant("10.decayed_attention", "linear.py", DECAY,
           "    a = torch.exp(log_a)\n"
           "    decay = (torch.cumprod(a, -1)[..., :, None] / torch.cumprod(a, -1)[..., None, :])"
           ".masked_fill(future, 0.0)\n",
           RATIO, "the decay as a ratio of cumulative products"),
    Mutant("10.decayed_attention", "linear.py", DECAY,
           "    decay = torch.exp(c[..., :, None] - c[..., None, :]) * ~future\n",
           AFTER_EXP, "the decay matrix masked after the exp (inf * 0)"),
    Mutant("10.decayed_attention", "linear.py", DECAY,
           "    decay = torch.where(future, 0.0, torch.exp(c[..., :, None] - c[..., None, :]))\n",
           AFTER_EXP, "the decay matrix masked after the exp by torch.where (NaN gradients)"),
    Mutant("10.decayed_attention", "linear.py", DECAY,
           "    decay = torch.exp((c[..., :, None] - c[..., None, :] + log_a[..., :, None])"
           '.masked_fill(future, float("-inf")))\n',
           "D_tt = 1", "the decay of token t applied to its own key (after the update)"),
    Mutant("10.decayed_attention", "linear.py",
           "    future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(diagonal=1)\n",
           "    future = torch.ones(L, L, dtype=torch.bool).triu(diagonal=1)\n",
           "device", "the mask created on the CPU", kind="device"),
    # 10.landmarks
    Mutant("10.landmarks", "linear.py", LM_NUMBER,
           "    number = torch.arange(x.shape[-2], device=x.device).expand(real.shape)\n"
           "    real = torch.ones_like(real)\n",
           PADDING, "segments over every position, padding included"),
    Mutant("10.landmarks", "linear.py", LM_MEMBER,
           "    member = segment[..., None, :] == ids[:, None]  # (*, m, L)\n",
           PADDING, "padded tokens averaged into the last segment"),
    Mutant("10.landmarks", "linear.py", "    segment = number * m // n  # (*, L), in 0 .. m-1 for real tokens\n",
           "    segment = number // (n // m)\n",
           "token number p (of n real tokens) belongs to segment p * m // n",
           "segments of n // m tokens: the remainder is dropped"),
    Mutant("10.landmarks", "linear.py", "    ids = torch.arange(m, device=x.device)\n",
           "    ids = torch.arange(m)\n", "device", "the segment ids created on the CPU",
           kind="device"),
    # 10.nystrom
    Mutant("10.nystrom", "linear.py", NY_B, "", "B's scores, landmarks against every key, need the key mask",
           "padded keys left unmasked in B"),
    Mutant("10.nystrom", "linear.py",
           "    a = torch.softmax(q_l @ k_l.transpose(-2, -1) * scale, dim=-1)  # (*, m, m)\n",
           "    a = torch.softmax(q_l @ k_l.transpose(-2, -1) * scale, dim=-2)  # (*, m, m)\n",
           "each softmax over its last axis", "A's softmax over the queries' landmarks"),
    Mutant("10.nystrom", "linear.py",
           "    q_l, k_l = landmark_means(q, m, mask), landmark_means(k, m, mask)\n",
           "    q_l, k_l = landmark_means(k, m, mask), landmark_means(k, m, mask)\n",
           "B = softmax(mean(q) kᵀ / sqrt(c))", "the query landmarks taken from the keys"),
    Mutant("10.nystrom", "linear.py",
           "    f = torch.softmax(q @ k_l.transpose(-2, -1) * scale, dim=-1)  # (*, L, m)\n",
           "    f = torch.softmax(q @ k_l.transpose(-2, -1), dim=-1)  # (*, L, m)\n",
           "out = F · inverse(A) · (B v)", "F without the 1/sqrt(c) of the scores"),
]

# Bugs that change no value on the CPU, only memory: the check's profiler probe sees them, the
# hidden cases (outputs and gradients on other CPU inputs) cannot.
VISIBLE_ONLY = [
    Mutant("10.linear_chunked", "linear.py", CH_LOOP,
           "    for rows in key_blocks(q.shape[-2], q.shape[-2]):\n",
           "times one", "the chunk size ignored: one chunk of the whole sequence"),
] + [
    # Kinds of case the hidden specs do not carry (bfloat16 here, lengths past 1,024, rows of
    # scores past exp's range): the visible cases catch these.
    Mutant("10.linear_attention", "linear.py", "        weights = weights.tril()\n",
           "        weights = weights * torch.ones(1024, 1024, dtype=weights.dtype, "
           "device=weights.device).tril()[:weights.shape[-2], :weights.shape[-1]]\n",
           "out = W v / rowsum(W) for every L",
           "a causal mask cut from a buffer for 1,024 positions (GPT-2's)", kind="sizes"),
    Mutant("10.linear_recurrent", "linear.py", REC_BLOCK,
           REC_BLOCK.replace("    out = q.new_empty(*batch, q.shape[-2], e, dtype=work)\n",
                             "    out = q.new_empty(*batch, 1024, e, dtype=work)[..., :q.shape[-2], :]\n"),
           "the same loop for every L",
           "the output kept in a buffer for 1,024 positions", kind="sizes"),
    Mutant("10.linear_chunked", "linear.py", CH_LOOP,
           "    for rows in key_blocks(min(q.shape[-2], 1024), chunk):  # a context of 1,024\n",
           "cover every token", "the chunks of a context of 1,024 tokens only", kind="sizes"),
    Mutant("10.decayed_recurrent", "linear.py", "    return out.to(dtype), h\n",
           "    return out, h\n", "your result is float32 for bfloat16 inputs",
           "the output left in float32 for bfloat16 inputs", kind="bfloat16"),
    Mutant("10.decayed_attention", "linear.py",
           "    return ((decay * (q @ k.transpose(-2, -1))) @ v).to(dtype)\n",
           "    return (decay * (q @ k.transpose(-2, -1))) @ v\n",
           "your result is float32 for bfloat16 inputs",
           "the output left in float32 for bfloat16 inputs", kind="bfloat16"),
    Mutant("10.landmarks", "linear.py", "    weights = member.to(x.dtype)\n",
           "    weights = member.to(torch.promote_types(x.dtype, torch.float32))\n",
           "bfloat16", "the segment weights made float32 at least", kind="bfloat16"),
    Mutant("10.nystrom", "linear.py", "    return (f @ (inverse(a) @ (b @ v))).to(dtype)\n",
           "    return f @ (inverse(a) @ (b @ v))\n", "your result is float32 for bfloat16 inputs",
           "the output left in float32 for bfloat16 inputs", kind="bfloat16"),
    Mutant("10.nystrom", "linear.py",
           "    f = torch.softmax(q @ k_l.transpose(-2, -1) * scale, dim=-1)  # (*, L, m)\n",
           "    f = torch.exp(q @ k_l.transpose(-2, -1) * scale)\n"
           "    f = f / f.sum(dim=-1, keepdim=True)  # (*, L, m)\n",
           "subtract each row's max", "F's softmax written without the max subtracted",
           kind="large scores"),
]

# the hint line each message must hold, whole (as the learner reads it)
VALUES_LINE = 'hint: phi applies to the queries and the keys only: the values enter as they are (a negative value must be able to come out negative)'
NORMALISER_LINE = 'hint: the normaliser of query i is the sum of ITS row of weights, over the keys (weights.sum(dim=-1, keepdim=True)): summed over the queries (dim=-2) the weights of a row no longer add up to 1'
OVERFLOW_LINE = "hint: in float16 the normaliser phi(q)ᵀ z, a sum over every earlier key of about 86 per key at d = 64, passes float16's largest number (65,504) after a few hundred tokens and becomes inf: keep the state and the normaliser in float32 (work = accumulation_dtype(q); compute in work, return out.to(q.dtype))"
CAUSAL_LINE = 'hint: with causal=True query i sees keys j <= i only: weights.tril() (its own key included) before both the product with v and the normaliser'
CAST_BACK_LINE = "hint: your result is float32 for float16 inputs: compute in accumulation_dtype(q) (float32 here), then return the output cast back to the input's dtype (out.to(q.dtype))"
RESET_LINE = "hint: a state that is not reset between sequences: each sequence of the batch needs its own state (*, d, e) (keep the batch axes in every product: an einsum '...d,...e->de' sums over them), and a call without a state starts from zeros, whatever an earlier call left (no state kept on the function or the module)"
CONTINUE_LINE = 'hint: a state passed in must be continued: start from (S, z) = state instead of zeros, and return the state after the last token'
DEVICE_LINE = 'hint: a tensor created inside your code sits on a fixed device (the CPU) while the inputs are elsewhere (here the `meta` device; on a GPU the same code fails): create tensors with device=x.device (torch.arange(n, device=x.device), zeros_like, x.new_ones(...)), or move them with .to(x.device); a tensor kept in a module belongs in register_buffer, so that module.to() moves it'
INCLUSIVE_LINE = "hint: the off-by-one between inclusive and exclusive chunk states: a chunk's inter-chunk term phi(q) S must use the state of the EARLIER chunks only; add this chunk's phi(k)ᵀ v to S after its output is written (its own keys are counted by the masked quadratic part, tril with the diagonal)"
DIAGONAL_LINE = 'hint: inside a chunk, query i sees its own key: tril() keeps the diagonal (tril(diagonal=-1) drops it)'
RAGGED_LINE = 'hint: the last chunk may be shorter than `chunk` (L is not a multiple of it): cover every token (key_blocks(L, chunk) does)'
ORDER_LINE = 'hint: a decay applied after instead of before the update: h = a_t h + k_t v_tᵀ decays the OLD state only; a_t (h + k_t v_tᵀ) also shrinks the token just added (out_t = q_tᵀ h then weighs its own key by a_t, not 1)'
DECAY_CONTINUE_LINE = 'hint: a state passed in must be continued: start from h = state instead of zeros, and return h after the last token'
FLOAT64_LINE = 'hint: float32 meets float64: a tensor made without dtype= (torch.zeros/ones/empty/tensor/arange) is float32; create it with dtype=x.dtype (or zeros_like, new_zeros)'
RATIO_LINE = 'hint: a decay written as a ratio of cumulative products, prod(a)_t / prod(a)_s, underflows: with a = 0.5 the product is 0 after 150 tokens in float32 (1,075 in float64) and the ratio 0/0 = NaN. Sum the decays in log space: D = exp(c_t - c_s), c = cumsum(log_a)'
AFTER_EXP_LINE = 'hint: mask the decay matrix BEFORE the exp: above the diagonal c_t - c_s is positive and exp of it overflows to inf; inf * 0 is NaN, and even torch.where(mask, exp(...), 0) sends NaN into the gradient. masked_fill(s > t, -inf), then exp, gives exactly 0 there'
DIAGONAL_DECAY_LINE = "hint: D_tt = 1: a token's own key enters undecayed (c_t - c_t = 0); the decay matrix is lower-triangular with ones on its diagonal"
PADDING_LINE = 'hint: landmarks computed over padding: number only the real tokens (cumsum of the mask), split those into m segments, and average each segment over its real tokens: a padded sequence must have the landmarks of the same sequence unpadded'
SEGMENT_LINE = 'hint: landmark i is the mean of the i-th of m consecutive segments: token number p (of n real tokens) belongs to segment p * m // n'
KEY_MASK_LINE = "hint: B's scores, landmarks against every key, need the key mask: padded keys get -inf before the softmax, so no landmark reads them"
NYSTROM_LINE = 'hint: out = F · inverse(A) · (B v) with F = softmax(q k~ᵀ / sqrt(c)) (L, m), A = softmax(q~ k~ᵀ / sqrt(c)) (m, m) and B = softmax(q~ kᵀ / sqrt(c)) (m, L), each softmax over its last axis'
ONE_LANDMARK_LINE = 'hint: with m = 1, F is a column of ones and A = [[1]]: out = B v for every query, B = softmax(mean(q) kᵀ / sqrt(c))'
MEMORY_LINE = 'hint: compute the quadratic form one chunk at a time, never for all tokens at once'

CAST_LINE = "hint: your result is float32 for bfloat16 inputs: compute in accumulation_dtype(q) (float32 here), then return the output cast back to the input's dtype (out.to(q.dtype))"

EXACT = {
    "10.linear_attention: a causal mask cut from a buffer for 1,024 positions (GPT-2's)": 'hint: out = W v / rowsum(W) for every L',
    '10.linear_recurrent: the output kept in a buffer for 1,024 positions': 'hint: the same loop for every L',
    '10.linear_chunked: the chunks of a context of 1,024 tokens only': 'hint: the last chunk may be shorter than `chunk` (L is not a multiple of it): cover every token (key_blocks(L, chunk) does)',
    '10.decayed_recurrent: the output left in float32 for bfloat16 inputs': CAST_LINE,
    '10.decayed_attention: the output left in float32 for bfloat16 inputs': CAST_LINE,
    '10.landmarks: the segment weights made float32 at least': "hint: your code works in float64 but not in the lower precision of this case (its name says which): the output's dtype must follow the input's, so nothing in it may fix a dtype (dtype=torch.float64, .double(), .float(), or torch.zeros/ones/tensor/arange without dtype=, which gives float32): create tensors with dtype=x.dtype (zeros_like, x.new_zeros, x.new_tensor) and compute every part in the input's dtype",
    '10.nystrom: the output left in float32 for bfloat16 inputs': CAST_LINE,
    "10.nystrom: F's softmax written without the max subtracted": NYSTROM_LINE + " (a stable softmax: subtract each row's max)",
    '10.linear_attention: phi applied to the values': VALUES_LINE,
    '10.linear_attention: the normaliser summed over the queries (the wrong axis)': NORMALISER_LINE,
    '10.linear_attention: float16 inputs computed in float16: the normaliser overflows': OVERFLOW_LINE,
    '10.linear_attention: causal mask without the diagonal': CAUSAL_LINE,
    "10.linear_attention: the float32 result not cast back to the input's dtype": CAST_BACK_LINE,
    '10.linear_recurrent: phi applied to the values': VALUES_LINE,
    '10.linear_recurrent: the state summed over the batch: one state shared by every sequence': RESET_LINE,
    "10.linear_recurrent: the last call's state kept on the function: the next call starts from it": RESET_LINE,
    '10.linear_recurrent: a cache of states by shape, never reset': RESET_LINE,
    '10.linear_recurrent: a state passed in is ignored': CONTINUE_LINE,
    '10.linear_recurrent: float16 inputs computed in float16: the normaliser overflows': OVERFLOW_LINE,
    '10.linear_recurrent: the state created on the CPU': DEVICE_LINE,
    "10.linear_chunked: the inclusive state: the chunk's keys added to S before its output": INCLUSIVE_LINE,
    '10.linear_chunked: the diagonal left out inside a chunk': DIAGONAL_LINE,
    '10.linear_chunked: the last, shorter chunk left out': RAGGED_LINE,
    '10.linear_chunked: phi applied to the values': VALUES_LINE,
    '10.linear_chunked: float16 inputs computed in float16: the normaliser overflows': OVERFLOW_LINE,
    '10.decayed_recurrent: the decay applied after the update': ORDER_LINE,
    '10.decayed_recurrent: the state summed over the batch: one state shared by every sequence': RESET_LINE,
    '10.decayed_recurrent: a state passed in is ignored': DECAY_CONTINUE_LINE,
    '10.decayed_recurrent: the state hard-coded to float64': FLOAT64_LINE,
    '10.decayed_attention: the decay as a ratio of cumulative products': RATIO_LINE,
    '10.decayed_attention: the decay matrix masked after the exp (inf * 0)': AFTER_EXP_LINE,
    '10.decayed_attention: the decay matrix masked after the exp by torch.where (NaN gradients)': AFTER_EXP_LINE,
    '10.decayed_attention: the decay of token t applied to its own key (after the update)': DIAGONAL_DECAY_LINE,
    '10.decayed_attention: the mask created on the CPU': DEVICE_LINE,
    '10.landmarks: segments over every position, padding included': PADDING_LINE,
    '10.landmarks: padded tokens averaged into the last segment': PADDING_LINE,
    '10.landmarks: segments of n // m tokens: the remainder is dropped': SEGMENT_LINE,
    '10.landmarks: the segment ids created on the CPU': DEVICE_LINE,
    '10.nystrom: padded keys left unmasked in B': KEY_MASK_LINE,
    "10.nystrom: A's softmax over the queries' landmarks": NYSTROM_LINE,
    '10.nystrom: the query landmarks taken from the keys': ONE_LANDMARK_LINE,
    '10.nystrom: F without the 1/sqrt(c) of the scores': NYSTROM_LINE,
    '10.linear_chunked: the chunk size ignored: one chunk of the whole sequence': MEMORY_LINE,
}

MUTANTS = [dataclasses.replace(m, exact=(EXACT[m.id],)) for m in MUTANTS]
VISIBLE_ONLY = [dataclasses.replace(m, exact=(EXACT[m.id],)) for m in VISIBLE_ONLY]
