"""Checks for lesson 10 (route two: change the math): linear attention in three forms, a decayed
state in two, and Nyström landmarks.

Each check compares with the reference in float64 and probes the bug the lesson names for its
exercise: the normaliser that overflows in float16, phi applied to the values, the normaliser
summed over the wrong axis, a state shared by the sequences of a batch or kept between calls, the
inclusive chunk state (a chunk counted twice), a decay applied after the update instead of before,
a decay matrix built from a ratio of cumulative products (0/0 after a few hundred tokens) or masked
after the exp, and landmarks averaged over padding. The derived cases of course/checks/kinds.py
(float32, the meta device, gradients) join each check; the half-precision cases are written out,
since their point is the trap: a result that stays finite and follows the input's dtype.
"""
from __future__ import annotations

import dataclasses

import torch

from course.checks.core import Case, Check
from course.checks.inputs import randn
from course.checks.kinds import bfloat16_of, float32_of, gradients_of, meta_of
from course.i18n import N_, _
from course.memory import profile_bytes

EXACT = {"atol": 1e-12, "rtol": 1e-10}

# ----------------------------------------------------------------------------------- the hints

OVERFLOW_HINT = N_("in float16 the normaliser phi(q)ᵀ z, a sum over every earlier key of about "
                   "86 per key at d = 64, passes float16's largest number (65,504) after a few "
                   "hundred tokens and becomes inf: keep the state and the normaliser in float32 "
                   "(work = accumulation_dtype(q); compute in work, return out.to(q.dtype))")
BFLOAT16_HINT = N_("in bfloat16 a long sum loses its small terms (8 bits of precision: adding 1 "
                   "to 1,000 changes nothing): accumulate the state and the normaliser in float32 "
                   "(accumulation_dtype(q)) and cast only the output back")
VALUES_HINT = N_("phi applies to the queries and the keys only: the values enter as they are (a "
                 "negative value must be able to come out negative)")
NORMALISER_HINT = N_("the normaliser of query i is the sum of ITS row of weights, over the keys "
                     "(weights.sum(dim=-1, keepdim=True)): summed over the queries (dim=-2) the "
                     "weights of a row no longer add up to 1")
CAUSAL_HINT = N_("with causal=True query i sees keys j <= i only: weights.tril() (its own key "
                 "included) before both the product with v and the normaliser")
RESET_HINT = N_("a state that is not reset between sequences: each sequence of the batch needs "
                "its own state (*, d, e) (keep the batch axes in every product: an einsum "
                "'...d,...e->de' sums over them), and a call without a state starts from zeros, "
                "whatever an earlier call left (no state kept on the function or the module)")
CONTINUE_HINT = N_("a state passed in must be continued: start from (S, z) = state instead of "
                   "zeros, and return the state after the last token")
INCLUSIVE_HINT = N_("the off-by-one between inclusive and exclusive chunk states: a chunk's "
                    "inter-chunk term phi(q) S must use the state of the EARLIER chunks only; add "
                    "this chunk's phi(k)ᵀ v to S after its output is written (its own keys are "
                    "counted by the masked quadratic part, tril with the diagonal)")
CHUNK_DIAGONAL_HINT = N_("inside a chunk, query i sees its own key: tril() keeps the diagonal "
                         "(tril(diagonal=-1) drops it)")
RAGGED_HINT = N_("the last chunk may be shorter than `chunk` (L is not a multiple of it): cover "
                 "every token (key_blocks(L, chunk) does)")
MEMORY_CASE_HINT = N_("compute the quadratic form one chunk at a time, never for all tokens at "
                      "once")
MEMORY_HINT = N_("your chunked form held {peak:,} bytes at its peak, {ratio:.2f} times one "
                 "(L, L) weight matrix ({scores:,} bytes): build the weights of one chunk at a "
                 "time (chunk, chunk), and carry only the state (d, e) between chunks")
DECAY_ORDER_HINT = N_("a decay applied after instead of before the update: h = a_t h + k_t v_tᵀ "
                      "decays the OLD state only; a_t (h + k_t v_tᵀ) also shrinks the token "
                      "just added (out_t = q_tᵀ h then weighs its own key by a_t, not 1)")
DECAY_CONTINUE_HINT = N_("a state passed in must be continued: start from h = state instead of "
                         "zeros, and return h after the last token")
RATIO_HINT = N_("a decay written as a ratio of cumulative products, prod(a)_t / prod(a)_s, "
                "underflows: with a = 0.5 the product is 0 after 150 tokens in float32 (1,075 in "
                "float64) and the ratio 0/0 = NaN. Sum the decays in log space: "
                "D = exp(c_t - c_s), c = cumsum(log_a)")
MASK_AFTER_EXP_HINT = N_("mask the decay matrix BEFORE the exp: above the diagonal c_t - c_s is "
                         "positive and exp of it overflows to inf; inf * 0 is NaN, and even "
                         "torch.where(mask, exp(...), 0) sends NaN into the gradient. "
                         "masked_fill(s > t, -inf), then exp, gives exactly 0 there")
DECAY_DIAGONAL_HINT = N_("D_tt = 1: a token's own key enters undecayed (c_t - c_t = 0); the "
                         "decay matrix is lower-triangular with ones on its diagonal")
PADDING_HINT = N_("landmarks computed over padding: number only the real tokens (cumsum of the "
                  "mask), split those into m segments, and average each segment over its real "
                  "tokens: a padded sequence must have the landmarks of the same sequence "
                  "unpadded")
SEGMENT_HINT = N_("landmark i is the mean of the i-th of m consecutive segments: token number p "
                  "(of n real tokens) belongs to segment p * m // n")
NYSTROM_HINT = N_("out = F · inverse(A) · (B v) with F = softmax(q k~ᵀ / sqrt(c)) (L, m), "
                  "A = softmax(q~ k~ᵀ / sqrt(c)) (m, m) and B = softmax(q~ kᵀ / sqrt(c)) (m, L), "
                  "each softmax over its last axis")
KEY_MASK_HINT = N_("B's scores, landmarks against every key, need the key mask: padded keys get "
                   "-inf before the softmax, so no landmark reads them")
DEVICE_ERRORS = (("RuntimeError", r"is not on the expected device|on the same device|device meta",
                  N_("a tensor you create has a fixed device (the CPU): create it on q's device "
                     "(q.new_zeros, torch.zeros(..., device=q.device), torch.ones_like)")),)


def _unguarded(f):
    """The implementation itself, without the engine's input guard (its clones would count as
    memory the learner's code allocated)."""
    return getattr(f, "__wrapped__", f)


def _qkv(batch, L, d, e, seed, L_k=None, scale=1.0):
    q = randn(*batch, L, d, seed=seed, scale=scale)
    k = randn(*batch, L if L_k is None else L_k, d, seed=seed + 1, scale=scale)
    v = randn(*batch, L if L_k is None else L_k, e, seed=seed + 2)
    return q, k, v


def _half(dtype, L=1024, d=64, seed=1001):
    """q, k, v (1, L, d) in a half dtype: at L = 1024, d = 64 the float16 normaliser overflows."""
    q, k, v = _qkv((1,), L, d, d, seed)
    return tuple(t.to(dtype) for t in (q, k, v))


def _outputs(result) -> dict:
    """(out, (S, z)) or (out, h) as named outputs."""
    out, state = result
    if isinstance(state, (tuple, list)) and len(state) == 2:
        return {"output": out, "S": state[0], "z": state[1]}
    return {"output": out, "h": state}


def _outcome(outcomes, name: str):
    """The outcome of the case called `name`, if it failed by a difference (not a crash)."""
    return next((o for o in outcomes if o.case.name == name and o.status == "differs"), None)


def _all_positive(outcomes, name: str) -> bool:
    """The negative-values probe came out positive everywhere: phi was applied to v."""
    found = _outcome(outcomes, name)
    return found is not None and bool((found.got["output"] > 0).all())


def _state_leaks(outcomes, name: str) -> bool:
    """The independence probe: sequence 1 in a batch differs from sequence 1 alone, or a later
    call differs from the reference's."""
    found = _outcome(outcomes, name)
    if found is None:
        return False
    got, want = found.got, found.expected
    in_batch, alone = got["sequence 1 in the batch"], got["sequence 1 alone"]
    return in_batch.shape != alone.shape or not torch.allclose(in_batch, alone) or \
        not torch.allclose(got["a later call"], want["a later call"])


def _scaled_by(outcomes, name: str, factor: float, key: str = "output") -> bool:
    """The probe's output is the reference's times `factor` (a token decayed by its own a)."""
    found = _outcome(outcomes, name)
    if found is None:
        return False
    got, want = found.got[key], found.expected[key]
    return got.shape == want.shape and torch.allclose(got, want * factor)


NEGATIVE_VALUES = "negative values: phi must not touch v"
# longer than the half-precision cases (L = 1,024) too: a length past any other case
LONGER = "L = 1,100, longer than any other case"
INDEPENDENT = "the sequences of a batch, and two calls, do not share a state"


CAST_BACK_HINT = N_("your result is {got} for {want} inputs: compute in "
                    "accumulation_dtype(q) (float32 here), then return the output cast back to "
                    "the input's dtype (out.to(q.dtype))")


def _cast_back(case, got):
    """A half-precision case whose result is not in the input's half dtype."""
    want, have = case.facts["dtype"], str(got["output"].dtype).removeprefix("torch.")
    if have != want:
        return False, _(CAST_BACK_HINT).format(got=have, want=want)
    return None


def _half_case(name, run, dtype, hint, tags=()):
    """A case on float16 or bfloat16 inputs, compared within that dtype's tolerance."""
    return Case(name, run, hint=hint, tags=("dtype", "half") + tags, accept=_cast_back,
                facts={"dtype": str(dtype).removeprefix("torch.")})


# ------------------------------------------------------------------- linear attention: quadratic

def _negative_values(f):
    q, k, _ = _qkv((2,), 6, 4, 3, seed=1011)
    v = -1.0 - randn(2, 6, 3, seed=1013).abs()  # every value negative
    return f(q, k, v)


def _weights_probe(f):
    """Non-causal, 3 queries against 7 keys, v = the identity: the output is the weight matrix
    (the form is linear in v), whose rows must sum to 1."""
    q, k, _ = _qkv((2,), 3, 4, 2, seed=1015, L_k=7)
    return f(q, k, torch.eye(7, dtype=torch.float64).expand(2, 7, 7), causal=False)


WEIGHTS = "non-causal, 3 queries against 7 keys (q ≠ k), v = the identity: the weights"


def _linear_evidence(outcomes) -> str | None:
    """phi on the values (a negative value comes out positive); rows of weights that do not sum
    to 1 (the normaliser over another axis)."""
    if _all_positive(outcomes, NEGATIVE_VALUES):
        return _(VALUES_HINT)
    found = _outcome(outcomes, WEIGHTS)
    if found is not None:
        rows = found.got["output"].double().sum(dim=-1)
        if rows.shape == (2, 3) and not torch.allclose(rows, torch.ones_like(rows)):
            return _(NORMALISER_HINT)
    return None


LA_BATCHED = Case("causal, batch (2, 3), L = 9, d = 4, e = 5",
                  lambda f: f(*_qkv((2, 3), 9, 4, 5, seed=1021)),
                  hint="out = W v / rowsum(W), W = tril(phi(q) phi(k)ᵀ)", tags=("causal",),
                  **EXACT)

check_linear_attention = Check(
    id="10.linear_attention",
    target="linear:linear_attention",
    lesson="10",
    diagnose=_linear_evidence,
    error_hints=DEVICE_ERRORS,
    tag_hints={"causal": CAUSAL_HINT},
    cases=[
        Case("causal, one sequence (6, 4): query 0 sees key 0 only",
             lambda f: f(*_qkv((1,), 6, 4, 4, seed=1001)),
             hint="out_i = sum_j<=i phi(q_i)·phi(k_j) v_j / sum_j<=i phi(q_i)·phi(k_j), "
                  "phi(x) = elu(x) + 1", tags=("causal",), **EXACT),
        Case(NEGATIVE_VALUES, _negative_values, hint=VALUES_HINT, tags=("causal",), **EXACT),
        Case(WEIGHTS, _weights_probe, hint=NORMALISER_HINT, **EXACT),
        LA_BATCHED,
        Case("non-causal, batch (2,), L = 8", lambda f: f(*_qkv((2,), 8, 4, 3, seed=1023),
                                                       causal=False),
             hint="causal=False: every query sees every key, no tril", **EXACT),
        Case("rows of large positive and negative entries (q, k x 30)",
             lambda f: f(*_qkv((2,), 10, 4, 3, seed=1025, scale=30.0)),
             hint="phi(x) = elu(x) + 1 is about x + 1 for large x and about 0 for very negative "
                  "x: no max to subtract (there is no exp of a score)", tags=("causal",), **EXACT),
        Case("one token (1, 1, 4): out = v", lambda f: f(*_qkv((1,), 1, 4, 2, seed=1027)),
             hint="a single token sees only itself: out = v; keep every axis", tags=("causal",),
             **EXACT),
        Case(LONGER, lambda f: f(*_qkv((1,), 1100, 8, 4, seed=1029)),
             hint="out = W v / rowsum(W) for every L", tags=("size", "causal"), **EXACT),
        Case("gradients of a fixed loss w.r.t. q, k, v: causal, L = 7 (row 0 sees one key)",
             gradients_of(lambda f, q, k, v: f(q, k, v), dict(zip("qkv", _qkv((2,), 7, 3, 2,
                                                                              seed=1031)))),
             hint="compute with differentiable operations, into new tensors", tags=("causal",),
             **EXACT),
        _half_case("float16, L = 1024, d = 64: the normaliser must not overflow",
                   lambda f: f(*_half(torch.float16)), torch.float16, OVERFLOW_HINT, ("causal",)),
        _half_case("bfloat16, L = 1024, d = 64", lambda f: f(*_half(torch.bfloat16)),
                   torch.bfloat16, BFLOAT16_HINT, ("causal",)),
        float32_of(LA_BATCHED),
        meta_of(LA_BATCHED),
    ],
)


# ------------------------------------------------------------------ linear attention: recurrence

def _split_in_two(f):
    """One call on 10 tokens against two calls of 6 and 4, the state carried between them."""
    q, k, v = _qkv((2,), 10, 4, 3, seed=1041)
    whole, (S, z) = f(q, k, v)
    first, state = f(q[..., :6, :], k[..., :6, :], v[..., :6, :])
    second, (S2, z2) = f(q[..., 6:, :], k[..., 6:, :], v[..., 6:, :], state=state)
    return {"output": torch.cat([first, second], dim=-2), "S": S2, "z": z2}


def _independent_sequences(f):
    """Sequence 1 of a batch of 2 against the same sequence alone, and a second call (without a
    state) on other sequences: nothing may carry over from sequence 0 or from the first call."""
    q, k, v = _qkv((2,), 5, 3, 2, seed=1043)
    batch_out, _ = f(q, k, v)
    again, _ = f(*_qkv((2,), 5, 3, 2, seed=1047))  # right after, the same shapes
    alone, _ = f(q[1:], k[1:], v[1:])
    return {"sequence 1 in the batch": batch_out[1:], "sequence 1 alone": alone,
            "a later call": again}


def _recurrent_evidence(outcomes) -> str | None:
    if _all_positive(outcomes, NEGATIVE_VALUES):
        return _(VALUES_HINT)
    if _state_leaks(outcomes, INDEPENDENT):
        return _(RESET_HINT)
    return None


RECURRENT_BATCHED = Case("batch (2, 3), L = 9, d = 4, e = 5: out, S and z",
                         lambda f: _outputs(f(*_qkv((2, 3), 9, 4, 5, seed=1051))),
                         hint="S += phi(k_t) v_tᵀ, z += phi(k_t), then out_t = "
                              "phi(q_t)ᵀ S / phi(q_t)ᵀ z", **EXACT)

check_linear_recurrent = Check(
    id="10.linear_recurrent",
    target="linear:linear_attention_recurrent",
    lesson="10",
    diagnose=_recurrent_evidence,
    error_hints=DEVICE_ERRORS + (
        ("ValueError", r"(not enough|too many) values to unpack",
         "return (out, (S, z)): the output and the state after the last token"),),
    tag_hints={"state": RESET_HINT},
    cases=[
        Case("one sequence (6, 4): out, S (4, 4) and z (4,)",
             lambda f: _outputs(f(*_qkv((1,), 6, 4, 4, seed=1053))),
             hint="for each token: first add it to the state, then read the state with the "
                  "query (the token sees its own key)", **EXACT),
        Case(NEGATIVE_VALUES,
             lambda f: _outputs(f(*_qkv((2,), 6, 4, 3, seed=1055)[:2],
                                  -1.0 - randn(2, 6, 3, seed=1057).abs())),
             hint=VALUES_HINT, **EXACT),
        Case(INDEPENDENT, _independent_sequences, hint=RESET_HINT, tags=("state",), **EXACT),
        RECURRENT_BATCHED,
        Case("a state passed in is continued: 6 tokens, then 4 more",
             _split_in_two, hint=CONTINUE_HINT, **EXACT),
        Case("rows of large positive and negative entries (q, k x 30)",
             lambda f: _outputs(f(*_qkv((2,), 10, 4, 3, seed=1059, scale=30.0))),
             hint="phi(x) = elu(x) + 1: no exp of a score, nothing to subtract", **EXACT),
        Case(LONGER, lambda f: _outputs(f(*_qkv((1,), 1100, 8, 4, seed=1061))),
             hint="the same loop for every L",
             tags=("size",), **EXACT),
        Case("gradients of a fixed loss w.r.t. q, k, v (row 0 sees one key)",
             gradients_of(lambda f, q, k, v: f(q, k, v)[0],
                          dict(zip("qkv", _qkv((2,), 7, 3, 2, seed=1063)))),
             hint="compute with differentiable operations: new tensors S = S + ..., and the "
                  "output written into a tensor made with new_empty", **EXACT),
        # the output only: the state, a float32 sum of 1,024 terms, is judged in the cases above
        _half_case("float16, L = 1024, d = 64: the normaliser must not overflow",
                   lambda f: f(*_half(torch.float16))[0], torch.float16, OVERFLOW_HINT),
        _half_case("bfloat16, L = 1024, d = 64", lambda f: f(*_half(torch.bfloat16))[0],
                   torch.bfloat16, BFLOAT16_HINT),
        float32_of(RECURRENT_BATCHED),
        meta_of(RECURRENT_BATCHED),
    ],
)


# --------------------------------------------------------------------- linear attention: chunked

def _chunked(batch, L, d, e, chunk, seed, scale=1.0):
    return lambda f: f(*_qkv(batch, L, d, e, seed, scale=scale), chunk=chunk)


def _chunked_memory(f):
    """Peak bytes of the chunked form (profiler), L = 512 in chunks of 32, against one (L, L)."""
    q, k, v = (t.float() for t in _qkv((1,), 512, 4, 4, seed=1071))
    measured = profile_bytes(lambda: _unguarded(f)(q, k, v, chunk=32))
    return {"peak bytes": torch.tensor(measured.peak), "score bytes": torch.tensor(512 * 512 * 4)}


def _below_half(outputs) -> str | None:
    peak, scores = int(outputs["peak bytes"]), int(outputs["score bytes"])
    if peak < scores / 2:
        return None
    return _(MEMORY_HINT).format(peak=peak, scores=scores, ratio=peak / scores)


def _chunk_weights(f):
    """L = 8 in chunks of 4, v = the identity: the output is the (causal) weight matrix."""
    q, k, _ = _qkv((2,), 8, 4, 2, seed=1091)
    return f(q, k, torch.eye(8, dtype=torch.float64).expand(2, 8, 8), chunk=4)


CHUNK_WEIGHTS = "L = 8 in chunks of 4, v = the identity: the weights, causal"


def _chunked_evidence(outcomes) -> str | None:
    """phi on the values; weights above the diagonal (a chunk's own keys counted through the
    state too: the inclusive state); a zero diagonal (tril(diagonal=-1))."""
    if _all_positive(outcomes, NEGATIVE_VALUES):
        return _(VALUES_HINT)
    found = _outcome(outcomes, CHUNK_WEIGHTS)
    if found is None or found.got["output"].shape != (2, 8, 8):
        return None
    weights = found.got["output"].double()
    if weights.triu(diagonal=1).abs().max() > 1e-9:
        return _(INCLUSIVE_HINT)
    if weights.diagonal(dim1=-2, dim2=-1)[..., 1:].abs().max() < 1e-12:
        return _(CHUNK_DIAGONAL_HINT)
    return None


CHUNKED_BATCHED = Case("batch (2, 3), L = 12 in chunks of 4", _chunked((2, 3), 12, 4, 5, 4,
                                                                        seed=1073),
                       hint=INCLUSIVE_HINT, tags=("chunks",), **EXACT)

check_linear_chunked = Check(
    id="10.linear_chunked",
    target="linear:linear_attention_chunked",
    lesson="10",
    diagnose=_chunked_evidence,
    error_hints=DEVICE_ERRORS,
    tag_hints={"chunks": INCLUSIVE_HINT, "ragged": RAGGED_HINT},
    cases=[
        Case("one chunk: L = 6, chunk 8 (the masked quadratic form alone)",
             _chunked((1,), 6, 4, 4, 8, seed=1075),
             hint=CHUNK_DIAGONAL_HINT, tags=("ragged",), **EXACT),
        Case(NEGATIVE_VALUES,
             lambda f: f(*_qkv((2,), 8, 4, 3, seed=1077)[:2],
                         -1.0 - randn(2, 8, 3, seed=1079).abs(), chunk=4),
             hint=VALUES_HINT, **EXACT),
        Case(CHUNK_WEIGHTS, _chunk_weights, hint=INCLUSIVE_HINT, **EXACT),
        CHUNKED_BATCHED,
        Case("L = 10 in chunks of 4: the last chunk holds 2 tokens",
             _chunked((2,), 10, 4, 3, 4, seed=1081), hint=RAGGED_HINT,
             tags=("chunks", "ragged"), **EXACT),
        Case("chunks of 1: the recurrence", _chunked((2,), 7, 3, 3, 1, seed=1083),
             hint=INCLUSIVE_HINT, tags=("chunks",), **EXACT),
        Case("rows of large positive and negative entries (q, k x 30), chunks of 3",
             _chunked((2,), 10, 4, 3, 3, seed=1085, scale=30.0), hint=INCLUSIVE_HINT,
             tags=("chunks", "ragged"), **EXACT),
        Case("L = 1,100 in chunks of 64 (the last holds 12): longer than any other case",
             _chunked((1,), 1100, 8, 4, 64, seed=1087), hint=RAGGED_HINT,
             tags=("size", "chunks", "ragged"), **EXACT),
        Case("gradients of a fixed loss w.r.t. q, k, v, L = 9 in chunks of 4",
             gradients_of(lambda f, q, k, v: f(q, k, v, chunk=4),
                          dict(zip("qkv", _qkv((2,), 9, 3, 2, seed=1089)))),
             hint="compute with differentiable operations, into new tensors",
             tags=("chunks", "ragged"), **EXACT),
        _half_case("float16, L = 1024, d = 64 in chunks of 64: the normaliser must not overflow",
                   lambda f: f(*_half(torch.float16), chunk=64), torch.float16, OVERFLOW_HINT),
        _half_case("bfloat16, L = 1024, d = 64 in chunks of 64",
                   lambda f: f(*_half(torch.bfloat16), chunk=64), torch.bfloat16, BFLOAT16_HINT),
        float32_of(CHUNKED_BATCHED),
        meta_of(CHUNKED_BATCHED),
        Case("memory: L = 512 in chunks of 32 never holds an (L, L) weight matrix",
             _chunked_memory, hint=MEMORY_CASE_HINT, expect=_below_half, tags=("memory",)),
    ],
)


# ------------------------------------------------------------------------ decayed: recurrence

def _log_a(batch, L, seed, low=0.5):
    """log of decays drawn uniformly in (low, 1)."""
    u = torch.rand(*batch, L, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return torch.log(low + (1 - low) * u)


def _decayed(batch, L, d, e, seed, log_a=None, scale=1.0, low=0.5):
    def inputs():
        q, k, v = _qkv(batch, L, d, e, seed, scale=scale)
        return q, k, v, _log_a(batch, L, seed + 3, low) if log_a is None else log_a
    return inputs


def _recurrent(*args, **kwargs):
    """A case run: decayed_recurrent on fixed inputs, its output and final state."""
    inputs = _decayed(*args, **kwargs)
    return lambda f: _outputs(f(*inputs()))


def _decay_split(f):
    q, k, v, log_a = _decayed((2,), 10, 3, 2, seed=1101)()
    first, h = f(q[..., :6, :], k[..., :6, :], v[..., :6, :], log_a[..., :6])
    second, h2 = f(q[..., 6:, :], k[..., 6:, :], v[..., 6:, :], log_a[..., 6:], state=h)
    return {"output": torch.cat([first, second], dim=-2), "h": h2}


def _decay_independent(f):
    q, k, v, log_a = _decayed((2,), 5, 3, 2, seed=1103)()
    batch_out, _ = f(q, k, v, log_a)
    again, _ = f(*_decayed((2,), 5, 3, 2, seed=1107)())  # right after, the same shapes
    alone, _ = f(q[1:], k[1:], v[1:], log_a[1:])
    return {"sequence 1 in the batch": batch_out[1:], "sequence 1 alone": alone,
            "a later call": again}


def _own_key(f):
    """One token, a = 0.5: out_0 = q_0 · k_0 v_0, whatever the decay (the token is not decayed)."""
    q, k, v = _qkv((1,), 1, 3, 2, seed=1109)
    return f(q, k, v, torch.full((1, 1), 0.5, dtype=torch.float64).log())


OWN_KEY = "one token, a = 0.5: its own key enters undecayed"


def _decayed_evidence(outcomes) -> str | None:
    if _scaled_by(outcomes, OWN_KEY, 0.5):
        return _(DECAY_ORDER_HINT)
    if _state_leaks(outcomes, INDEPENDENT):
        return _(RESET_HINT)
    return None


DECAY_BATCHED = Case("batch (2, 3), L = 9, d = 4, e = 5, a in (0.5, 1): out and h",
                     _recurrent((2, 3), 9, 4, 5, seed=1111),
                     hint="h = a_t h + k_t v_tᵀ, out_t = q_tᵀ h", **EXACT)

check_decayed_recurrent = Check(
    id="10.decayed_recurrent",
    target="linear:decayed_recurrent",
    lesson="10",
    diagnose=_decayed_evidence,
    error_hints=DEVICE_ERRORS + (
        ("ValueError", r"(not enough|too many) values to unpack",
         "return (out, h): the output and the state after the last token"),),
    tag_hints={"state": RESET_HINT, "order": DECAY_ORDER_HINT},
    cases=[
        Case(OWN_KEY, lambda f: _outputs(_own_key(f)),
             hint=DECAY_ORDER_HINT, tags=("order",), **EXACT),
        Case("one sequence (6, 3), a in (0.5, 1)", _recurrent((1,), 6, 3, 3, seed=1113),
             hint=DECAY_ORDER_HINT, tags=("order",), **EXACT),
        Case(INDEPENDENT, _decay_independent, hint=RESET_HINT, tags=("state", "order"), **EXACT),
        DECAY_BATCHED,
        Case("a state passed in is continued: 6 tokens, then 4 more", _decay_split,
             hint=DECAY_CONTINUE_HINT, **EXACT),
        Case("no decay (a = 1): unnormalised linear attention without phi",
             _recurrent((2,), 7, 3, 2, seed=1115, log_a=torch.zeros(2, 7, dtype=torch.float64)),
             hint="with a = 1 the state is the plain sum of k_t v_tᵀ; no phi, no normaliser",
             **EXACT),
        Case("strong decays (a down to 1e-13) and large entries (x 30)",
             _recurrent((2,), 12, 3, 2, seed=1117, scale=30.0,
                        log_a=-30.0 * torch.rand(2, 12, dtype=torch.float64,
                                                 generator=torch.Generator().manual_seed(5))),
             hint="a_t = exp(log_a_t) multiplies the old state, whatever its size",
             tags=("order",), **EXACT),
        Case("L = 300, longer than any the lesson prints",
             _recurrent((1,), 300, 8, 4, seed=1119, low=0.9),
             hint="the same loop for every L", tags=("size", "order"), **EXACT),
        Case("gradients of a fixed loss w.r.t. q, k, v and log_a",
             gradients_of(lambda f, q, k, v, log_a: f(q, k, v, log_a)[0],
                          dict(zip(("q", "k", "v", "log_a"), _decayed((2,), 7, 3, 2,
                                                                       seed=1121)()))),
             hint="compute with differentiable operations; the decay's gradient flows through "
                  "exp(log_a)", tags=("order",), **EXACT),
        float32_of(DECAY_BATCHED),
        dataclasses.replace(bfloat16_of(DECAY_BATCHED), accept=_cast_back),
        meta_of(DECAY_BATCHED),
    ],
)


# ------------------------------------------------------------------------ decayed: quadratic

def _constant_decay(a: float, L: int, dtype, seed: int):
    """q, k, v (1, L, 4) and a constant decay a, in dtype."""
    q, k, v = _qkv((1,), L, 4, 3, seed)
    log_a = torch.full((1, L), a, dtype=torch.float64).log()
    return tuple(t.to(dtype) for t in (q, k, v, log_a))


# c = cumsum(log_a) reaches -139 (a = 0.5, L = 200) and -105 (a = 0.9, L = 1,000), where float32's
# spacing is 1.5e-5 and 7.6e-6: exp(c_t - c_s) carries that relative error when it subtracts two
# cumulative sums (Mamba-2's segsum, which adds up each segment directly, errs less near the
# diagonal; a learner may write either). The reference's own float32 outputs
# (up to 12.7 and 22.8) are off from float64 by 2.5e-5 and 7.5e-5, so two correct forms may differ
# by twice that: the comparison allows 5e-4. A ratio of cumulative products is off by NaN, or
# (a = 0.9) by whole decays: 1.0 where 0.9 is due.
LOG_SPACE_FLOAT32 = {"atol": 5e-4, "rtol": 1e-4}


def _finite(outputs) -> str | None:
    out = outputs["output"]
    bad = int((~torch.isfinite(out)).sum())
    return None if bad == 0 else f"the output holds {bad} NaN/inf values"


ONE_TOKEN = "one token, a = 0.5: D = [[1]]"


def _decay_matrix_evidence(outcomes) -> str | None:
    """A decayed diagonal; NaN from some row on (a product that underflowed: the ratio of
    cumulative products) or in the first rows too (exp overflowed above the diagonal)."""
    if _scaled_by(outcomes, ONE_TOKEN, 0.5):
        return _(DECAY_DIAGONAL_HINT)
    for outcome in outcomes:
        if "ratio" not in outcome.case.tags or outcome.got is None:
            continue
        out = outcome.got["output"]
        if out.dim() >= 2 and torch.isnan(out).any():
            rows = torch.isnan(out).flatten(0, -3).any(dim=0).any(dim=-1) if out.dim() > 2 \
                else torch.isnan(out).any(dim=-1)
            return _(MASK_AFTER_EXP_HINT) if bool(rows[0]) else _(RATIO_HINT)
    return None


def _nan_gradient(case, got):
    """A NaN gradient here, with a finite output, is exp overflowing above the diagonal."""
    grads = [t for key, t in got.items() if key.startswith("grad ")]
    if torch.isfinite(got["output"]).all() and any(torch.isnan(g).any() for g in grads):
        return False, _(MASK_AFTER_EXP_HINT)
    return None


DECAY_Q_BATCHED = Case("batch (2, 3), L = 9, d = 4, e = 5, a in (0.5, 1)",
                       lambda f: f(*_decayed((2, 3), 9, 4, 5, seed=1131)()),
                       hint="out = (D ∘ q kᵀ) v, D_ts = exp(c_t - c_s) for s <= t, else 0",
                       **EXACT)

check_decayed_attention = Check(
    id="10.decayed_attention",
    target="linear:decayed_attention",
    lesson="10",
    diagnose=_decay_matrix_evidence,
    error_hints=DEVICE_ERRORS,
    tag_hints={"ratio": RATIO_HINT, "overflow": MASK_AFTER_EXP_HINT},
    cases=[
        Case(ONE_TOKEN,
             lambda f: f(*_qkv((1,), 1, 3, 2, seed=1133),
                         torch.full((1, 1), 0.5, dtype=torch.float64).log()),
             hint=DECAY_DIAGONAL_HINT, **EXACT),
        Case("one sequence (6, 3), a in (0.5, 1)", lambda f: f(*_decayed((1,), 6, 3, 3,
                                                                          seed=1135)()),
             hint=DECAY_DIAGONAL_HINT, **EXACT),
        DECAY_Q_BATCHED,
        Case("float32, a = 0.5, L = 200: no NaN (the product of 150 decays is 0 in float32)",
             lambda f: f(*_constant_decay(0.5, 200, torch.float32, seed=1137)),
             hint=RATIO_HINT, expect=_finite, tags=("ratio",)),
        Case("float32, a = 0.5, L = 200", lambda f: f(*_constant_decay(0.5, 200, torch.float32,
                                                                         seed=1137)),
             hint=RATIO_HINT, tags=("ratio",), **LOG_SPACE_FLOAT32),
        Case("a = 0.5, L = 1,100: no NaN (the product of 1,075 decays is 0 in float64)",
             lambda f: f(*_constant_decay(0.5, 1100, torch.float64, seed=1139)),
             hint=RATIO_HINT, expect=_finite, tags=("ratio", "size")),
        Case("float32, a = 0.9, L = 1,000: the decays stay decays",
             lambda f: f(*_constant_decay(0.9, 1000, torch.float32, seed=1141)),
             hint=RATIO_HINT, tags=("ratio",), **LOG_SPACE_FLOAT32),
        Case("no decay (a = 1): the causal mask alone",
             lambda f: f(*_decayed((2,), 7, 3, 2, seed=1143,
                                   log_a=torch.zeros(2, 7, dtype=torch.float64))()),
             hint="with a = 1, D is the causal mask: tril of ones", **EXACT),
        Case("gradients with strong decays (log_a = -5, L = 200): no NaN from the upper triangle",
             gradients_of(lambda f, q, k, v, log_a: f(q, k, v, log_a),
                          dict(zip(("q", "k", "v", "log_a"), _decayed(
                              (1,), 200, 3, 2, seed=1145,
                              log_a=torch.full((1, 200), -5.0, dtype=torch.float64))()))),
             hint=MASK_AFTER_EXP_HINT, tags=("overflow",), accept=_nan_gradient, **EXACT),
        Case("gradients of a fixed loss w.r.t. q, k, v and log_a, a in (0.5, 1)",
             gradients_of(lambda f, q, k, v, log_a: f(q, k, v, log_a),
                          dict(zip(("q", "k", "v", "log_a"), _decayed((2,), 7, 3, 2,
                                                                       seed=1147)()))),
             hint="compute with differentiable operations; the decay's gradient flows through "
                  "cumsum(log_a)", **EXACT),
        float32_of(DECAY_Q_BATCHED),
        dataclasses.replace(bfloat16_of(DECAY_Q_BATCHED), accept=_cast_back),
        meta_of(DECAY_Q_BATCHED),
    ],
)


# ---------------------------------------------------------------------------- Nyström landmarks

def _padded(lengths, L):
    """(B, L) bool: sequence b has lengths[b] real tokens."""
    return torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]


def _padding_probe(f):
    """Two sequences padded to 16 against the same sequences unpadded: the same landmarks."""
    x = randn(2, 16, 3, seed=1151)
    mask = _padded([12, 9], 16)
    padded = f(x, 3, mask)
    return {"padded": padded, "sequence 0 unpadded": f(x[:1, :12], 3),
            "sequence 1 unpadded": f(x[1:, :9], 3)}


def _scattered_padding(f):
    x = randn(2, 3, 10, 4, seed=1153)
    mask = torch.rand(2, 3, 10, generator=torch.Generator().manual_seed(7)) < 0.7
    mask[..., :4] = True  # at least 4 real tokens per sequence
    return f(x, 2, mask)


LANDMARKS_BATCHED = Case("batch (2, 3), L = 12, m = 4: segments of 3",
                         lambda f: f(randn(2, 3, 12, 5, seed=1155), 4),
                         hint=SEGMENT_HINT, **EXACT)

check_landmarks = Check(
    id="10.landmarks",
    target="linear:landmark_means",
    lesson="10",
    error_hints=DEVICE_ERRORS,
    tag_hints={"padding": PADDING_HINT},
    cases=[
        Case("L = 6, m = 2: the means of tokens 0-2 and 3-5",
             lambda f: f(randn(1, 6, 2, seed=1157), 2), hint=SEGMENT_HINT, **EXACT),
        Case("m = 1: the mean of the whole sequence", lambda f: f(randn(2, 7, 3, seed=1159), 1),
             hint=SEGMENT_HINT, **EXACT),
        LANDMARKS_BATCHED,
        Case("L = 10, m = 4: segments of 2 or 3 tokens (p * m // n)",
             lambda f: f(randn(2, 10, 3, seed=1161), 4), hint=SEGMENT_HINT, **EXACT),
        Case("padding: the landmarks of the sequences unpadded", _padding_probe,
             hint=PADDING_HINT, tags=("padding",), **EXACT),
        Case("padding scattered inside the sequences, m = 2", _scattered_padding,
             hint=PADDING_HINT, tags=("padding",), **EXACT),
        Case("m = L: every token its own landmark", lambda f: f(randn(2, 5, 3, seed=1163), 5),
             hint=SEGMENT_HINT, **EXACT),
        Case("L = 300, m = 7, longer than any the lesson prints",
             lambda f: f(randn(1, 300, 4, seed=1165), 7), hint=SEGMENT_HINT, tags=("size",),
             **EXACT),
        Case("gradients of a fixed loss w.r.t. x, with padding",
             gradients_of(lambda f, x: f(x, 3, _padded([12, 9], 16)),
                          {"x": randn(2, 16, 3, seed=1167)}),
             hint="padded tokens get a zero gradient: they are in no segment",
             tags=("padding",), **EXACT),
        float32_of(LANDMARKS_BATCHED),
        dataclasses.replace(bfloat16_of(LANDMARKS_BATCHED), accept=_cast_back),
        meta_of(LANDMARKS_BATCHED),
    ],
)


def _one_landmark(f):
    """m = 1: every query gets softmax(mean(q) kᵀ / sqrt(c)) v."""
    q, k, v = _qkv((2,), 7, 4, 3, seed=1171)
    return f(q, k, v, 1)


def _nystrom_padding(f):
    q, k, v = _qkv((2,), 16, 4, 3, seed=1173)
    return f(q, k, v, 4, _padded([16, 11], 16))


def _extreme_scores(f):
    """Queries +-40 u, keys about u (|u|² = 64, c = 4): the rows of q~ k~ᵀ / 2 are near +1,280 for
    half the queries (exp overflows without the max subtracted) and near -1,280 for the others
    (every exp underflows to 0)."""
    u = torch.full((4,), 4.0, dtype=torch.float64)
    sign = torch.tensor([1.0] * 4 + [-1.0] * 4, dtype=torch.float64)[:, None]
    q = 40.0 * sign * u + randn(2, 8, 4, seed=1189)
    k = u * (1.0 + 0.5 * torch.linspace(-1, 1, 8, dtype=torch.float64))[:, None] + \
        randn(2, 8, 4, seed=1190, scale=0.1)
    return f(q, k, randn(2, 8, 3, seed=1191), 2)


NYSTROM_BATCHED = Case("batch (2, 3), L = 12, m = 4", lambda f: f(*_qkv((2, 3), 12, 4, 5,
                                                                           seed=1175), 4),
                       hint=NYSTROM_HINT, **EXACT)

check_nystrom = Check(
    id="10.nystrom",
    target="linear:nystrom_attention",
    lesson="10",
    uses=(check_landmarks,),
    error_hints=DEVICE_ERRORS,
    tag_hints={"mask": KEY_MASK_HINT},
    cases=[
        Case("one landmark: lesson 05's global attention", _one_landmark,
             hint="with m = 1, F is a column of ones and A = [[1]]: out = B v for every "
                  "query, B = softmax(mean(q) kᵀ / sqrt(c))", **EXACT),
        NYSTROM_BATCHED,
        Case("m = L = 6: every token a landmark", lambda f: f(*_qkv((2,), 6, 3, 3, seed=1177),
                                                              6),
             hint=NYSTROM_HINT, **EXACT),
        Case("q ≠ k: 8 queries against 12 keys, m = 4",
             lambda f: f(*_qkv((2,), 8, 4, 3, seed=1179, L_k=12), 4),
             hint="the query landmarks come from q, the key landmarks from k", **EXACT),
        Case("padding: sequence 1 has 11 real tokens of 16", _nystrom_padding,
             hint=KEY_MASK_HINT, tags=("mask",), **EXACT),
        Case("wide scores (q, k x 5)", lambda f: f(*_qkv((2,), 12, 4, 3, seed=1181, scale=5.0), 3),
             hint="each softmax over its last axis, scaled by 1/sqrt(c)", **EXACT),
        Case("L = 300, m = 10, longer than any the lesson prints",
             lambda f: f(*_qkv((1,), 300, 8, 4, seed=1183), 10), hint=NYSTROM_HINT,
             tags=("size",), **EXACT),
        Case("gradients of a fixed loss w.r.t. q, k, v, with padding",
             gradients_of(lambda f, q, k, v: f(q, k, v, 4, _padded([16, 11], 16)),
                          dict(zip("qkv", _qkv((2,), 16, 4, 3, seed=1185)))),
             hint="padded keys get a zero gradient: they are masked in B and in no landmark",
             tags=("mask",), **EXACT),
        Case("rows of scores near +1,300 and near -1,300 (every key on one side of a query)",
             _extreme_scores, hint=NYSTROM_HINT + " (a stable softmax: subtract each row's max)",
             **EXACT),
        Case("gradients where keys 12-15 are padding in every sequence: zeros there, not NaN",
             gradients_of(lambda f, q, k, v: f(q, k, v, 4, _padded([12, 9], 16)),
                          dict(zip("qkv", _qkv((2,), 16, 4, 3, seed=1187)))),
             hint="a key that is padding in every sequence gets a zero gradient, never NaN: "
                  "-inf before B's softmax, and no landmark reads it",
             tags=("mask",), **EXACT),
        float32_of(NYSTROM_BATCHED),
        dataclasses.replace(bfloat16_of(NYSTROM_BATCHED), accept=_cast_back),
        meta_of(NYSTROM_BATCHED),
    ],
)


CHECKS = [check_linear_attention, check_linear_recurrent, check_linear_chunked,
          check_decayed_recurrent, check_decayed_attention, check_landmarks, check_nystrom]
