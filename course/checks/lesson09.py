"""Checks for lesson 09 (attention that never holds the score matrix): online softmax, the tiled
forward pass, and the backward pass by recomputation.

Beside values (float64, and a float32 pass judged with float32's tolerance), the checks probe
what tiling is for: a device probe on `meta` (tensors created inside follow the input's device),
the bytes the forward holds at its peak, what it keeps for the backward pass, and the backward's
own peak, each against the size of one (q, k) score tensor (measured by the profiler on the CPU).
The gradients are named dq, dk, dv, dbias: they come from the learner's own backward formula, so a
wrong one is a wrong formula, not a cut autograd path.
"""
from __future__ import annotations

import torch

from course.checks.core import Case, Check
from course.checks.inputs import loss_weights, randn
from course.checks.lesson01 import check_scaled_scores
from course.i18n import N_, _
from course.memory import profile_bytes

INF = float("-inf")


def _unguarded(f):
    """The implementation itself, without the engine's input guard: its clones would count as
    memory the learner's code allocated, and its comparison cannot read `meta` tensors."""
    return getattr(f, "__wrapped__", f)


# ---------------------------------------------------------------------------- online softmax

RESCALE_HINT = ("when a block raises a row's maximum from m to m_new, the sum so far was computed "
                "against m: l = l * exp(m - m_new) + exp(block - m_new).sum(-1), and m = m_new "
                "carried to the next block")
RAGGED_HINT = ("the last block may be shorter than block_size (here the row length is not a "
               "multiple of it): cover every entry, range(0, n, block_size) with slices that stop "
               "at n")
MASKED_BLOCK_HINT = ("while a row has seen only -inf, its running max m_new is -inf too and "
                     "exp(-inf - (-inf)) is NaN: shift by 0 where m_new is -inf "
                     "(m_new.masked_fill(m_new == float('-inf'), 0.0))")
DEVICE_HINT = N_("a tensor you create has a fixed device: torch.zeros/full/ones/empty/tensor "
                 "without device= make it on the CPU, and it meets the input on another device "
                 "(here `meta`; on a GPU, cuda): create it with device=x.device (and dtype=x.dtype), "
                 "or with torch.zeros_like / full_like / x.new_zeros")
DEVICE_ERRORS = (("RuntimeError", r"is not on the expected device|on the same device|device meta",
                  DEVICE_HINT),)


def _wide_rows() -> torch.Tensor:
    """Lesson 01's wide rows, and rows whose maximum sits in the last or the first block."""
    return torch.tensor([[-800.0, 0.0, 800.0, -30.0, 0.0, 10.0],
                         [-1000.0, -500.0, 0.0, 500.0, 1000.0, 1001.0],
                         [1000.0, 500.0, 0.0, -500.0, -1000.0, -1001.0]], dtype=torch.float64)


def _masked_first_block() -> torch.Tensor:
    x = randn(3, 10, seed=905, scale=20.0)
    x[0, :6] = INF   # row 0: its first two blocks of 3 are masked entirely
    x[1, ::2] = INF  # row 1: every other entry
    return x


def _on_meta(outputs) -> str | None:
    out = outputs["output"]
    if out.device.type != "meta":
        return f"x was on the meta device and the result is on {out.device.type}"
    if tuple(out.shape) != (3, 16):
        return f"the result has shape {tuple(out.shape)}, expected (3, 16)"
    return None


def _softmax_gradients(x: torch.Tensor, block: int, seed: int):
    def run(f):
        with torch.enable_grad():
            leaf = x.clone().requires_grad_(True)
            out = f(leaf, block)
            loss = (out * loss_weights(out.shape, seed=seed).to(out.dtype)).sum()
            (grad,) = torch.autograd.grad(loss, leaf) if loss.requires_grad else (None,)
        grad = torch.full_like(x, float("nan")) if grad is None else grad
        return {"output": out.detach(), "dx": grad}
    return run


check_online_softmax = Check(
    id="09.online_softmax",
    target="tiled:online_softmax",
    lesson="09",
    error_hints=DEVICE_ERRORS,
    tag_hints={"blocks": RESCALE_HINT, "ragged": RAGGED_HINT, "masked": MASKED_BLOCK_HINT},
    cases=[
        Case("(3, 5) in one block of 8: the plain softmax", lambda f: f(randn(3, 5, seed=901), 8),
             hint="with one block, the result is softmax over the last axis: exp(x - m) / l",
             tags=("ragged",)),
        Case("lesson 01's wide rows in blocks of 2: the max rises from block to block",
             lambda f: f(_wide_rows(), 2), hint=RESCALE_HINT, tags=("blocks",)),
        Case("lesson 01's wide rows in blocks of 1", lambda f: f(_wide_rows(), 1),
             hint=RESCALE_HINT, tags=("blocks",)),
        Case("(4, 12) spread x 30 in blocks of 4", lambda f: f(randn(4, 12, seed=903, scale=30.0), 4),
             hint=RESCALE_HINT, tags=("blocks",)),
        Case("(2, 3, 10) in blocks of 4: the last block holds 2 entries",
             lambda f: f(randn(2, 3, 10, seed=904, scale=5.0), 4), hint=RAGGED_HINT,
             tags=("blocks", "ragged")),
        Case("-inf entries: row 0's first two blocks of 3 are all -inf",
             lambda f: f(_masked_first_block(), 3), hint=MASKED_BLOCK_HINT,
             tags=("blocks", "ragged", "masked")),
        Case("(1, 7) in blocks of 3: one row, 3 blocks", lambda f: f(randn(1, 7, seed=906), 3),
             hint="keep every axis: one row of 7 gives (1, 7)", tags=("blocks", "ragged")),
        Case("float32 (3, 10) spread x 5 in blocks of 4: a float32 result",
             lambda f: f(randn(3, 10, seed=902, scale=5.0).float(), 4),
             hint="compute in x's dtype: tensors you create (the running max and sum) take "
                  "dtype=x.dtype", tags=("blocks", "ragged", "float32")),
        Case("meta device: (3, 16) in blocks of 4, what you create follows x's device",
             lambda f: _unguarded(f)(torch.empty(3, 16, device="meta", dtype=torch.float64), 4),
             hint=DEVICE_HINT, expect=_on_meta, tags=("device",)),
        Case("gradients of a fixed loss: wide rows in blocks of 2",
             _softmax_gradients(_wide_rows(), 2, seed=907),
             hint="the values are right and the gradient is not: compute the result from x with "
                  "differentiable operations (no .item(), no in-place writes into x)",
             tags=("blocks", "gradient")),
        Case("gradients with -inf entries: no NaN where entries are masked",
             _softmax_gradients(_masked_first_block(), 3, seed=908),
             hint="masked entries give exp(-inf - shift) = 0 and a gradient of 0; a NaN there "
                  "comes from exp(-inf - (-inf)), even in a branch torch.where does not pick",
             tags=("blocks", "ragged", "masked", "gradient")),
    ],
)


# ---------------------------------------------------------------------------- tiled forward

TILES_HINT = ("with more than one key tile, the running max must be carried from tile to tile "
              "(m_new = max(m, tile max)) and everything accumulated so far rescaled by "
              "exp(m - m_new): the sum l AND the output accumulator")
LSE_HINT = N_("your output is right and your logsumexp is not: lse = m + log(l), with m the final "
              "running max and l the running sum (log(l) alone is off by m; a query that sees no "
              "key has lse = -inf)")
NAN_HINT = N_("your output holds NaN where a query's first key tiles are all masked: its running "
              "max is still -inf and exp(-inf - (-inf)) = NaN; shift by 0 while m_new is -inf, "
              "and give a query that sees no key zeros (l = 0: divide by 1 instead)")
BLIND_HINT = ("the cases that fail have queries whose first key tiles, or all of them, are "
              "masked: while m_new is -inf, exp(-inf - (-inf)) is NaN, so shift by 0 there; a "
              "query that sees no key keeps l = 0: its output is 0 (divide by 1 instead) and its "
              "lse = log(0) = -inf")
BIAS_TILE_HINT = ("add the bias of THIS tile to its scores: tile(bias, rows, cols), rows the "
                  "query block and cols the key block (tile() keeps a size-1 axis whole, so a "
                  "broadcast bias still fits)")
MASK_TILE_HINT = ("mask THIS tile's scores: masked_fill(~tile(mask, rows, cols), -inf), rows "
                  "the query block and cols the key block, before the tile's max")
EDGE_HINT = ("the last query or key block is shorter when L is not a multiple of the block: "
             "cover range(0, L, block) with slices that stop at L (key_blocks does), and keep "
             "the shorter tile's rows and columns")
NONE_HINT = ("m, l or the output accumulator is still None, so a loop over blocks never ran: "
             "the last query or key block is shorter when L is not a multiple of the block (and "
             "the only one when L < block): cover range(0, L, block) with slices that stop at L "
             "(key_blocks does)")
MEMORY_CASE_HINT = ("build the scores one (block_q, block_k) tile at a time, never for all keys "
                    "(or all queries) at once")
MEMORY_HINT = N_("your forward pass held {peak:,} bytes at its peak, {ratio:.2f} times one "
                 "(q, k) score tensor ({scores:,} bytes): build scores one (block_q, block_k) "
                 "tile at a time, never for all keys (or all queries) at once")


def _qkv(batch, L_q, L_k, c, c_v, seed, scale=1.0, dtype=torch.float64):
    q = randn(*batch, L_q, c, seed=seed, scale=scale).to(dtype)
    k = randn(*batch, L_k, c, seed=seed + 1).to(dtype)
    v = randn(*batch, L_k, c_v, seed=seed + 2).to(dtype)
    return q, k, v


def _blind_rows_mask(L_q: int, L_k: int, seed: int) -> torch.Tensor:
    """A random mask (L_q, L_k) in which query 2 sees no key and query 0 only the last one."""
    mask = torch.rand(L_q, L_k, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[2] = False
    mask[0] = False
    mask[0, -1] = True
    return mask


def _key_padding(batch: int, L_k: int, lengths) -> torch.Tensor:
    """(batch, 1, L_k): sequence b has lengths[b] real keys."""
    return (torch.arange(L_k)[None, :] < torch.tensor(lengths)[:, None])[:, None, :]


def _forward(batch, L_q, L_k, c, c_v, blocks, seed, bias=None, mask=None, scale=1.0,
             dtype=torch.float64):
    """A case run: the tiled forward on fixed inputs; bias is a shape (random values)."""
    def run(f):
        q, k, v = _qkv(batch, L_q, L_k, c, c_v, seed, scale, dtype)
        b = None if bias is None else randn(*bias, seed=seed + 3, scale=2.0).to(dtype)
        out, lse = f(q, k, v, b, mask, block_q=blocks[0], block_k=blocks[1])
        return {"output": out, "logsumexp": lse}
    return run


def _falling_scores(f):
    """Scores of about +800 in the first key tile and -800 in the others: a running max that is
    not carried drops by 1600 at the second tile, and exp(1600) overflows even in float64."""
    q = 20.0 + randn(2, 4, 4, seed=937, scale=0.1)
    k = randn(2, 12, 4, seed=938, scale=0.1) + torch.tensor([20.0] * 4 + [-20.0] * 8)[:, None]
    out, lse = f(q, k, randn(2, 12, 3, seed=939), None, None, block_q=4, block_k=4)
    return {"output": out, "logsumexp": lse}


def _forward_memory(f):
    """Peak bytes of the forward (profiler) against one score tensor: q 64, k 128, blocks 16."""
    q, k, v = _qkv((1,), 64, 128, 4, 4, seed=951, dtype=torch.float32)
    measured = profile_bytes(lambda: _unguarded(f)(q, k, v, block_q=16, block_k=16))
    return {"peak bytes": torch.tensor(measured.peak), "score bytes": torch.tensor(64 * 128 * 4)}


def _below_half_a_score_tensor(key: str, message: str):
    def expect(outputs) -> str | None:
        peak, scores = int(outputs[key]), int(outputs["score bytes"])
        if peak < scores / 2:
            return None
        return _(message).format(peak=peak, scores=scores, ratio=peak / scores)
    return expect


def _forward_evidence(outcomes) -> str | None:
    """NaN where the reference has numbers; a logsumexp wrong while the output is right."""
    for outcome in outcomes:
        if outcome.status != "differs":
            continue
        want, have = outcome.expected, outcome.got
        if torch.isnan(have["output"]).any() and not torch.isnan(want["output"]).any():
            return _(NAN_HINT)
    differing = [o for o in outcomes if o.status == "differs"]
    if differing and all(o.key == "logsumexp" for o in differing):
        return _(LSE_HINT)
    return None


check_tiled_forward = Check(
    id="09.tiled_forward",
    target="tiled:tiled_attention_forward",
    lesson="09",
    uses=(check_scaled_scores,),
    diagnose=_forward_evidence,
    error_hints=(("ValueError", r"(not enough|too many) values to unpack",
                  "return two tensors: (out, lse), the output (*, q, c_v) and the logsumexp "
                  "(*, q)"),
                 ("AttributeError", r"'NoneType' object has no attribute", NONE_HINT),
                 ("TypeError", r"NoneType", NONE_HINT)),
    tag_hints={"tiles": TILES_HINT, "ragged": EDGE_HINT, "bias": BIAS_TILE_HINT,
               "mask": MASK_TILE_HINT, "blind": BLIND_HINT},
    cases=[
        Case("one tile: q (2, 5, 4), k, v (2, 7, 4), blocks 8 x 8",
             _forward((2,), 5, 7, 4, 4, (8, 8), seed=911),
             hint="with one tile this is lesson 02's attention: out = softmax(scores) @ v, and "
                  "lse = logsumexp of each query's scores",
             shape_hint="out is (*, q, c_v) and lse is (*, q): one number per query"),
        Case("q (2, 8, 4), k, v (2, 12, 3), blocks 4 x 4: three key tiles",
             _forward((2,), 8, 12, 4, 3, (4, 4), seed=913), hint=TILES_HINT, tags=("tiles",)),
        Case("wide scores (q x 40): the running max changes from tile to tile",
             _forward((2,), 6, 16, 4, 4, (3, 4), seed=915, scale=40.0), hint=TILES_HINT,
             tags=("tiles",)),
        Case("falling scores: the first key tile's are near 800, the later ones near -800",
             _falling_scores, hint=TILES_HINT, tags=("tiles",)),
        Case("7 queries in blocks of 3, 10 keys in blocks of 4: the last tiles are shorter",
             _forward((2,), 7, 10, 4, 2, (3, 4), seed=917), hint=EDGE_HINT,
             tags=("tiles", "ragged")),
        Case("bias (2, 6, 9) added per tile, blocks 4 x 4",
             _forward((2,), 6, 9, 4, 4, (4, 4), seed=919, bias=(2, 6, 9)), hint=BIAS_TILE_HINT,
             tags=("tiles", "ragged", "bias")),
        Case("pair bias (2, 1, 2, 7, 7) against rows (2, 3, 2, 7, 4): shared by the 3 sequences",
             _forward((2, 3, 2), 7, 7, 4, 4, (4, 3), seed=921, bias=(2, 1, 2, 7, 7)),
             hint=BIAS_TILE_HINT, tags=("tiles", "ragged", "bias")),
        Case("padding mask (2, 1, 12): sequence 1 has 5 real keys, blocks 4 x 4",
             _forward((2,), 6, 12, 4, 4, (4, 4), seed=923, mask=_key_padding(2, 12, [12, 5])),
             hint=MASK_TILE_HINT, tags=("tiles", "mask")),
        Case("causal mask 13 x 13, blocks 4 x 4: tiles above the diagonal see nothing",
             _forward((2,), 13, 13, 4, 4, (4, 4), seed=925,
                      mask=torch.ones(13, 13, dtype=torch.bool).tril()),
             hint=MASK_TILE_HINT, tags=("tiles", "ragged", "mask")),
        Case("a query that sees no key: output 0, logsumexp -inf",
             _forward((2,), 6, 9, 4, 4, (3, 3), seed=927, mask=_blind_rows_mask(6, 9, seed=1)),
             hint="a query that sees no key keeps l = 0: its output is 0 (as in lesson 02) and "
                  "its logsumexp log(0) = -inf, never NaN", tags=("tiles", "mask", "blind")),
        Case("bias and mask together, wide scores (q x 20)",
             _forward((2,), 9, 11, 4, 4, (4, 4), seed=929, bias=(9, 11),
                      mask=_blind_rows_mask(9, 11, seed=2), scale=20.0),
             hint="per tile: scores + tile(bias), then the mask, then the online update",
             tags=("tiles", "ragged", "bias", "mask", "blind")),
        Case("float32: q (2, 21, 8), k, v (2, 27, 8), blocks 16 x 8, a float32 result",
             _forward((2,), 21, 27, 8, 8, (16, 8), seed=931, dtype=torch.float32),
             hint="compute in the inputs' dtype: the result of float32 inputs is float32",
             tags=("tiles", "ragged", "float32")),
        Case("larger than the lesson prints: q (1, 40, 4), k, v (1, 100, 4), blocks 16 x 32",
             _forward((1,), 40, 100, 4, 4, (16, 32), seed=933,
                      mask=_key_padding(1, 100, [85])),
             hint=TILES_HINT, tags=("tiles", "ragged", "mask")),
        Case("one query against 9 keys, batch (1,), blocks 1 x 4",
             _forward((1,), 1, 9, 4, 3, (1, 4), seed=935), hint=EDGE_HINT,
             tags=("tiles", "ragged")),
        Case("memory: q 64, k 128 in blocks of 16 never hold a (q, k) score tensor",
             _forward_memory, hint=MEMORY_CASE_HINT,
             expect=_below_half_a_score_tensor("peak bytes", MEMORY_HINT), tags=("memory",)),
    ],
)


# ------------------------------------------------------------------- backward by recomputation

GRADIENT_NAMES = ("dq", "dk", "dv", "dbias")
D_HINT = N_("dv is right and dq, dk are not: dS = P * (dP - D) with dP = dO vᵀ and D = "
            "rowsum(dO * O) per query (FlashAttention-2's D), then dq = dS k / sqrt(c) and "
            "dk = dSᵀ q / sqrt(c)")
P_HINT = N_("dv is wrong too, so the recomputed weights are: P = exp(scores - lse) with the "
            "tile's scores built as in the forward (scaled, plus the bias, masked), and "
            "dv += Pᵀ dO for every (query, key) tile")
NAN_GRADIENT_HINT = N_("your gradients hold NaN where a query sees no key: its lse is -inf and "
                       "exp(scores - lse) = exp(-inf - (-inf)) = NaN; shift by 0 where lse is "
                       "-inf, so that its weights, and every gradient through them, are 0")
DBIAS_HINT = N_("dq, dk and dv are right and dbias is not: the bias's gradient is dS (the "
                "scores' gradient) of each tile, summed over the axes the bias was broadcast "
                "along, so that it has the bias's shape (dS.sum_to_size(bias_tile.shape))")
KEPT_HINT = N_("your forward pass keeps {peak:,} bytes for the backward pass, {ratio:.2f} times "
               "one (q, k) score tensor ({scores:,} bytes): save only q, k, v, bias, mask, out and "
               "lse, and recompute each tile's weights in backward")
BACKWARD_PEAK_HINT = N_("your backward pass held {peak:,} bytes at its peak, {ratio:.2f} times one "
                        "(q, k) score tensor ({scores:,} bytes): recompute the weights one tile "
                        "at a time from q, k and lse, never all keys at once")


def _gradients(batch, L_q, L_k, c, c_v, blocks, seed, bias=None, mask=None, scale=1.0,
               dtype=torch.float64):
    """A case run: output and the gradients of a fixed loss through tiled_attention."""
    def run(f):
        q, k, v = _qkv(batch, L_q, L_k, c, c_v, seed, scale, dtype)
        b = None if bias is None else randn(*bias, seed=seed + 3, scale=2.0).to(dtype)
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)] + \
            ([] if b is None else [b.clone().requires_grad_(True)])
        with torch.enable_grad():
            out = f(*leaves[:3], leaves[3] if b is not None else None, mask, *blocks)
            loss = (out * loss_weights(out.shape, seed=seed).to(out.dtype)).sum()
            grads = torch.autograd.grad(loss, leaves, allow_unused=True) if loss.requires_grad \
                else [None] * len(leaves)
        result = {"output": out.detach()}
        for name, leaf, grad in zip(GRADIENT_NAMES, leaves, grads):
            result[name] = torch.full_like(leaf, float("nan")) if grad is None else grad.detach()
        return result
    return run


def _gradcheck(f):
    q, k, v = _qkv((1,), 3, 5, 2, 2, seed=961)
    bias = randn(3, 5, seed=964)
    mask = _blind_rows_mask(3, 5, seed=3)
    inputs = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    with torch.enable_grad():
        # gradcheck perturbs its inputs in place: pass copies, so that each call's arguments
        # (recorded for the stand-ins) stay as they were at that call
        ok = torch.autograd.gradcheck(lambda *t: f(*(x.clone() for x in t), mask, 2, 3), inputs,
                                      raise_exception=False)
    return {"gradcheck": torch.tensor(bool(ok))}


def _gradcheck_passes(outputs) -> str | None:
    if bool(outputs["gradcheck"]):
        return None
    return ("torch.autograd.gradcheck: your backward's gradients differ from finite differences "
            "of your forward")


def _memory_of_training(f):
    """What the forward keeps for backward, and the backward's peak (profiler): q 64, k 128."""
    q, k, v = (t.requires_grad_(True) for t in _qkv((1,), 64, 128, 4, 4, seed=971,
                                                       dtype=torch.float32))
    impl = _unguarded(f)
    with torch.enable_grad():
        kept = profile_bytes(lambda: impl(q, k, v, None, None, 16, 16)).held_after
        out = impl(q, k, v, None, None, 16, 16)
        grad = torch.ones_like(out)
        backward = profile_bytes(lambda: out.backward(grad)).peak
    return {"kept bytes": torch.tensor(kept), "backward peak bytes": torch.tensor(backward),
            "score bytes": torch.tensor(64 * 128 * 4)}


def _backward_evidence(outcomes) -> str | None:
    """NaN gradients; else which gradients differ: the D term, P itself, or the bias sum."""
    for outcome in outcomes:
        if outcome.status == "differs" and any(
                torch.isnan(outcome.got[n]).any() and not torch.isnan(outcome.expected[n]).any()
                for n in GRADIENT_NAMES if n in outcome.expected):
            return _(NAN_GRADIENT_HINT)
    for outcome in outcomes:
        if outcome.status != "differs" or outcome.key not in GRADIENT_NAMES:
            continue
        want, have = outcome.expected, outcome.got
        wrong = {name for name in GRADIENT_NAMES if name in want and not
                 torch.allclose(have[name].double(), want[name].double(), rtol=1e-6, atol=1e-9,
                                equal_nan=True)}
        if wrong == {"dbias"}:
            return _(DBIAS_HINT)
        if "dv" in wrong:
            return _(P_HINT)
        if {"dq", "dk"} & wrong:
            return _(D_HINT)
    return None


check_tiled_backward = Check(
    id="09.tiled_backward",
    target="tiled:tiled_attention",
    lesson="09",
    uses=(check_tiled_forward,),  # and through it 01.scaled_scores, which backward calls too
    diagnose=_backward_evidence,
    error_hints=(("RuntimeError", r"function \w*Backward returned an incorrect number of gradients",
                  "backward returns one gradient per input of forward (after ctx): dq, dk, dv, "
                  "dbias, then None for mask, block_q and block_k"),),
    tag_hints={"bias": DBIAS_HINT, "mask": "masked keys have P = 0 in the recomputed weights "
               "(mask the tile's scores to -inf before exp(scores - lse)); a query that sees no "
               "key has lse = -inf: shift by 0 so that its weights are 0, not NaN"},
    cases=[
        Case("gradients, one tile: q (2, 5, 4), k, v (2, 7, 3)",
             _gradients((2,), 5, 7, 4, 3, (8, 8), seed=941),
             hint="backward returns dq, dk, dv: the gradients of the loss with respect to q, k "
                  "and v, from the tile's recomputed weights"),
        Case("gradients, blocks 4 x 4: q (2, 9, 4), k, v (2, 11, 4)",
             _gradients((2,), 9, 11, 4, 4, (4, 4), seed=943),
             hint="accumulate over every (query, key) tile: dq[rows] += ..., dk[cols] += ..., "
                  "dv[cols] += ...; the last tiles are shorter", tags=("tiles",)),
        Case("gradients with a bias (6, 9) shared by the batch (2,): dbias sums over the batch",
             _gradients((2,), 6, 9, 4, 4, (4, 4), seed=945, bias=(6, 9)),
             hint=DBIAS_HINT, tags=("tiles", "bias")),
        Case("gradients with a pair bias (2, 1, 2, 7, 7): dbias sums over the 3 sequences",
             _gradients((2, 3, 2), 7, 7, 4, 4, (4, 3), seed=947, bias=(2, 1, 2, 7, 7)),
             hint=DBIAS_HINT, tags=("tiles", "bias")),
        Case("gradients with a causal mask 12 x 12, blocks 4 x 4",
             _gradients((2,), 12, 12, 4, 4, (4, 4), seed=949,
                        mask=torch.ones(12, 12, dtype=torch.bool).tril()),
             hint="masked keys get P = 0 in the recomputed weights", tags=("tiles", "mask")),
        Case("gradients where a query sees no key: zeros there, not NaN",
             _gradients((2,), 6, 9, 4, 4, (3, 3), seed=951, bias=(6, 9),
                        mask=_blind_rows_mask(6, 9, seed=4)),
             hint="a query that sees no key has lse = -inf: shift by 0 there, so its weights, "
                  "and every gradient through them, are 0 (not NaN)", tags=("tiles", "mask")),
        Case("gradients, wide scores (q x 20) with a padding mask",
             _gradients((2,), 8, 12, 4, 4, (4, 4), seed=953, scale=20.0,
                        mask=_key_padding(2, 12, [12, 7])),
             hint="P = exp(scores - lse) needs the forward's lse (with its max): exp(scores) "
                  "alone overflows", tags=("tiles", "mask")),
        Case("gradients in float32: q (2, 19, 8), k, v (2, 25, 8), blocks 16 x 8",
             _gradients((2,), 19, 25, 8, 8, (16, 8), seed=955, dtype=torch.float32),
             hint="compute in the inputs' dtype: the gradients of float32 inputs are float32 "
                  "(tensors you create take dtype= and device= of q)", tags=("tiles", "float32")),
        Case("gradients, larger than the lesson prints: q (1, 30, 4), k, v (1, 70, 4)",
             _gradients((1,), 30, 70, 4, 4, (16, 32), seed=957,
                        mask=_key_padding(1, 70, [60])),
             hint="accumulate over every (query, key) tile; the last tiles are shorter",
             tags=("tiles", "mask")),
        Case("torch.autograd.gradcheck in float64, bias and a query that sees no key",
             _gradcheck, hint="your backward must give the gradients of your forward: "
                              "gradcheck compares them with finite differences",
             expect=_gradcheck_passes),
        Case("memory: the forward keeps only out and lse, not the weights",
             _memory_of_training,
             hint="save only q, k, v, bias, mask, out and lse for the backward pass (nothing of "
                  "size q x k, also not as a list of tiles on ctx)",
             expect=_below_half_a_score_tensor("kept bytes", KEPT_HINT), tags=("memory",)),
        Case("memory: the backward holds one tile of weights at a time",
             _memory_of_training,
             hint="recompute the weights one (block_q, block_k) tile at a time in backward",
             expect=_below_half_a_score_tensor("backward peak bytes", BACKWARD_PEAK_HINT),
             tags=("memory",)),
    ],
)
