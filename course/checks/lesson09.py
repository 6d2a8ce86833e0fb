"""Checks for lesson 09 (attention that never holds the score matrix): online softmax, the tiled
forward pass, the backward pass by recomputation, and causal attention that skips the tiles above
the diagonal.

Beside values in float64, every check carries the kinds of case its exercise calls for: float32
and bfloat16 (bfloat16 judged with its own tolerance, and a probe that the running max, sum and
output accumulator are float32: a sum over many tiles in bfloat16 drifts), the `meta` device
(tensors created inside follow the input's device), rows whose scores are all far below zero (a
running max started at 0 instead of -inf underflows there) or far above it, ragged tiles, q != k,
sizes past any the lesson prints, gradients with edge rows, and what tiling is for: the bytes the
forward holds at its peak, what it keeps for the backward pass, the backward's own peak (also with
a bias shared across a leading axis, whose gradient must be accumulated at the bias's size), each
against the size of one (q, k) score tensor (measured by the profiler on the CPU), and the number
of scores the causal tiles compute (counted, course/lessons/lesson09/costs.py). The first cases
isolate the lesson's central ideas (the scale, the final division, the rescale factor, the
accumulation across tiles, D): their diagnoses (lesson09_bugs.py) name the formula a result
matches. The gradients are named dq, dk, dv, dbias: they come from the learner's own backward
formula, so a wrong one is a wrong formula, not a cut autograd path.
"""
from __future__ import annotations

import dataclasses

import torch

from course.checks import lesson09_bugs as bugs
from course.checks.core import Case, Check
from course.checks.inputs import gradient_outputs, loss_weights, randn
from course.checks.kinds import bfloat16_of, float32_of, gradients_of, meta_of
from course.checks.lesson01 import check_scaled_scores
from course.i18n import N_, _
from course.lessons.lesson09.costs import count_scores
from course.memory import profile_bytes

INF = float("-inf")
BF16_STEP = 2.0 ** -7  # one bfloat16 step (8 bits of mantissa) relative to the largest output


def _unguarded(f):
    """The implementation itself, without the engine's input guard: its clones would count as
    memory the learner's code allocated, and its comparison cannot read `meta` tensors."""
    return getattr(f, "__wrapped__", f)


def _verdict(find):
    """A case's `accept`: the bug `find(got)` names (the engine shows it first), never a pass."""
    def accept(case, got):
        words = find(got)
        return None if words is None else (False, words)
    return accept


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
START_HINT = ("every entry of these rows is near -1000: a running max that starts at 0 instead of "
              "-inf never rises to them, exp(x - 0) underflows to 0 and l = 0; start m at -inf "
              "(torch.full_like(..., float('-inf')))")
ACCUMULATOR_HINT = ("in bfloat16, keep the running max and sum in float32 (dtype="
                    "accumulator_dtype(x.dtype)) and cast the result back to x's dtype: bfloat16 "
                    "keeps 8 bits of mantissa, and a sum over many blocks in it drifts")
DEVICE_HINT = N_("a tensor you create has a fixed device: torch.zeros/full/ones/empty/tensor "
                 "without device= make it on the CPU, and it meets the input on another device "
                 "(here `meta`; on a GPU, cuda): create it with device=x.device (and dtype=x.dtype), "
                 "or with torch.zeros_like / full_like / x.new_zeros")
DEVICE_ERRORS = (("RuntimeError", r"is not on the expected device|on the same device|device meta",
                  DEVICE_HINT),)
LOW_PRECISION = N_("in bfloat16 your result is {gap:.3g} away from the exact result of the same "
                   "bfloat16 inputs, more than one bfloat16 step ({step:.3g}): {what}")
LOW_PRECISION_SOFTMAX = N_("keep the running max and sum in float32 (accumulator_dtype(x.dtype)) "
                           "and cast only the result to x's dtype")
LOW_PRECISION_TILES = N_("keep the running max, the sum l and the output accumulator in float32 "
                         "(acc = accumulator_dtype(q.dtype): cast each tile of q, k and v to it) "
                         "and cast only the output to q's dtype")


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


def _far_below_zero() -> torch.Tensor:
    return randn(3, 9, seed=909, scale=3.0) - 1000.0


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


def _softmax_in_bfloat16(f):
    """A long row in bfloat16 (64 blocks of 8), with the exact softmax of the same bfloat16
    inputs beside it, for the probe."""
    x = randn(4, 512, seed=911, scale=2.0).bfloat16()
    return {"output": f(x, 8), "exact": torch.softmax(x.double(), dim=-1)}


def _near_exact(what: str, relative: bool = False):
    """Probe: a bfloat16 result within one bfloat16 step (2⁻⁷) of the exact result of the same
    bfloat16 inputs: of each entry (relative, for softmax weights, all positive) or of the
    largest output (attention outputs, which cancel to near 0). Rounding the exact result to
    bfloat16 costs half a step; a running sum kept in bfloat16 drifts by several."""
    def expect(outputs) -> str | None:
        out, exact = outputs["output"], outputs["exact"]
        if out.dtype != torch.bfloat16:
            return f"the result of bfloat16 inputs is {out.dtype}, not torch.bfloat16"
        gap = (out.double() - exact).abs()
        if relative:
            gap, step = float((gap / exact.abs()).max()), BF16_STEP
        else:
            gap, step = float(gap.max()), BF16_STEP * float(exact.abs().max())
        return None if gap <= step else _(LOW_PRECISION).format(gap=gap, step=step, what=_(what))
    return expect


def _softmax_case(name: str, x: torch.Tensor, block: int, hint: str, tags=()) -> Case:
    """A case whose result the online-softmax diagnosis can explain (an inverted factor)."""
    return Case(name, lambda f: f(x.clone(), block), hint=hint, tags=tags,
                accept=_verdict(lambda got: bugs.softmax_bug(got["output"], x, block)))


WIDE = _softmax_case("lesson 01's wide rows in blocks of 2: the max rises from block to block",
                     _wide_rows(), 2, RESCALE_HINT, ("blocks",))
SPREAD = _softmax_case("(4, 12) spread x 30 in blocks of 4", randn(4, 12, seed=903, scale=30.0), 4,
                       RESCALE_HINT, ("blocks",))

check_online_softmax = Check(
    id="09.online_softmax",
    target="tiled:online_softmax",
    lesson="09",
    error_hints=DEVICE_ERRORS,
    tag_hints={"blocks": RESCALE_HINT, "ragged": RAGGED_HINT, "masked": MASKED_BLOCK_HINT,
               "negative": START_HINT},
    cases=[
        _softmax_case("(3, 5) in one block of 8: the plain softmax", randn(3, 5, seed=901), 8,
                      "with one block, the result is softmax over the last axis: exp(x - m) / l, "
                      "with the m and l pass 1 ends with (m = m_new after every block: pass 2 "
                      "reads it)",
                      ("ragged",)),
        WIDE,
        _softmax_case("lesson 01's wide rows in blocks of 1", _wide_rows(), 1, RESCALE_HINT,
                      ("blocks",)),
        SPREAD,
        _softmax_case("(2, 3, 10) in blocks of 4: the last block holds 2 entries",
                      randn(2, 3, 10, seed=904, scale=5.0), 4, RAGGED_HINT, ("blocks", "ragged")),
        Case("-inf entries: row 0's first two blocks of 3 are all -inf",
             lambda f: f(_masked_first_block(), 3), hint=MASKED_BLOCK_HINT,
             tags=("blocks", "ragged", "masked")),
        Case("rows far below zero: every entry near -1000, blocks of 3",
             lambda f: f(_far_below_zero(), 3), hint=START_HINT, tags=("blocks", "negative")),
        Case("rows far above zero: entries near +1000, blocks of 4",
             lambda f: f(randn(3, 10, seed=910, scale=3.0) + 1000.0, 4),
             hint="subtract the running max before exp: exp(1000) overflows to inf",
             tags=("blocks", "ragged", "positive")),
        Case("(1, 7) in blocks of 3: one row, 3 blocks", lambda f: f(randn(1, 7, seed=906), 3),
             hint="keep every axis: one row of 7 gives (1, 7)", tags=("blocks", "ragged")),
        Case("(2, 700) in blocks of 64: longer than the lesson shows",
             lambda f: f(randn(2, 700, seed=912, scale=8.0), 64), hint=RAGGED_HINT,
             tags=("blocks", "ragged", "size")),
        Case("float32 (3, 10) spread x 5 in blocks of 4: a float32 result",
             lambda f: f(randn(3, 10, seed=902, scale=5.0).float(), 4),
             hint="compute in x's dtype: tensors you create (the running max and sum) take "
                  "dtype=x.dtype", tags=("blocks", "ragged", "float32", "dtype")),
        float32_of(SPREAD),
        dataclasses.replace(bfloat16_of(SPREAD), hint=ACCUMULATOR_HINT, accept=None),
        Case("bfloat16, 512 entries in 64 blocks of 8: float32 running max and sum",
             _softmax_in_bfloat16, hint=ACCUMULATOR_HINT,
             expect=_near_exact(LOW_PRECISION_SOFTMAX, relative=True), tags=("blocks", "dtype")),
        Case("meta device: (3, 16) in blocks of 4, what you create follows x's device",
             lambda f: _unguarded(f)(torch.empty(3, 16, device="meta", dtype=torch.float64), 4),
             hint=DEVICE_HINT, expect=_on_meta, tags=("device",)),
        meta_of(SPREAD),
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
NONE_HINT = ("your function returned None for the output (or m, l or the accumulator is still "
             "None), so a loop over blocks never ran or never wrote: the last query or key block "
             "is shorter when L is not a multiple of the block (and the only one when L < block): "
             "cover range(0, L, block) with slices that stop at L (key_blocks does), and return "
             "(out, lse)")
START_TILES_HINT = ("every score of these queries is near -1000: a running max that starts at 0 "
                    "instead of -inf (or the first tile's max) never rises to them, exp(s - 0) "
                    "underflows to 0 and l = 0; start from the first tile's max, or from -inf")
LARGE_HINT = ("scores near +1000: subtract the running max before exp (exp(1000) overflows to "
              "inf), and carry it from tile to tile")
BF16_HINT = ("in bfloat16 the output is bfloat16 and the logsumexp float32 (lse feeds exp in the "
             "backward pass, where bfloat16's 8 bits of mantissa would be too few): run the "
             "tiles in acc = accumulator_dtype(q.dtype), return out.to(q.dtype) and lse in acc")
BF16_LSE = N_("in bfloat16 your logsumexp is {got}: keep m, l and the output accumulator in "
              "float32 (acc = accumulator_dtype(q.dtype)) and return lse in that dtype, the "
              "output cast to q's dtype; lse feeds exp(scores - lse) in the backward pass, where "
              "bfloat16's 8 bits of mantissa are too few")
BF16_OUT = N_("in bfloat16 your output is {got}: cast the output to q's dtype at the end "
              "(out = (acc / l).to(q.dtype)); only the logsumexp stays in float32")
MEMORY_CASE_HINT = ("build the scores one (block_q, block_k) tile at a time, never for all keys "
                    "(or all queries) at once")
MEMORY_HINT = N_("your forward pass held {peak:,} bytes at its peak, {ratio:.2f} times one "
                 "(q, k) score tensor ({scores:,} bytes): build scores one (block_q, block_k) "
                 "tile at a time, never for all keys (or all queries) at once")


@dataclasses.dataclass(frozen=True)
class Inputs:
    """A case's inputs, built the same way for the run and for its diagnosis: q (*batch, L_q, c)
    scaled by `scale`, k (*batch, L_k, c), v (*batch, L_k, c_v), a bias of shape `bias` (random,
    x 2, plus `shift`), a fixed mask, in `dtype`."""

    batch: tuple
    L_q: int
    L_k: int
    c: int
    c_v: int
    blocks: tuple
    seed: int
    bias: tuple | None = None
    mask: torch.Tensor | None = None
    scale: float = 1.0
    shift: float = 0.0
    dtype: torch.dtype = torch.float64

    def tensors(self):
        q = randn(*self.batch, self.L_q, self.c, seed=self.seed, scale=self.scale).to(self.dtype)
        k = randn(*self.batch, self.L_k, self.c, seed=self.seed + 1).to(self.dtype)
        v = randn(*self.batch, self.L_k, self.c_v, seed=self.seed + 2).to(self.dtype)
        b = None if self.bias is None else \
            (randn(*self.bias, seed=self.seed + 3, scale=2.0) + self.shift).to(self.dtype)
        return q, k, v, b, self.mask

    def diagnosis_inputs(self):
        return (*self.tensors(), self.blocks)


def _forward_run(spec: Inputs):
    def run(f):
        q, k, v, b, mask = spec.tensors()
        result = f(q, k, v, b, mask, block_q=spec.blocks[0], block_k=spec.blocks[1])
        if isinstance(result, (tuple, list)) and len(result) == 2 and result[0] is None:
            raise TypeError("returned None as the output (a loop over blocks never ran?)")
        out, lse = result
        return {"output": out, "logsumexp": lse}
    return run


def _forward_case(name: str, spec: Inputs, hint: str, tags=(), **extra) -> Case:
    """A compared case whose float64 result the forward diagnosis can explain."""
    return Case(name, _forward_run(spec), hint=hint, tags=tags,
                accept=_verdict(lambda got: bugs.forward_bug(got, spec.diagnosis_inputs())),
                **extra)


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


def _falling_scores(f):
    """Scores of about +800 in the first key tile and -800 in the others: a running max that is
    not carried drops by 1600 at the second tile, and exp(1600) overflows even in float64."""
    q = 20.0 + randn(2, 4, 4, seed=937, scale=0.1)
    k = randn(2, 12, 4, seed=938, scale=0.1) + torch.tensor([20.0] * 4 + [-20.0] * 8)[:, None]
    out, lse = f(q, k, randn(2, 12, 3, seed=939), None, None, block_q=4, block_k=4)
    return {"output": out, "logsumexp": lse}


def _blind_bias(f):
    """A bias whose row 1 is -inf everywhere: that query's scores are all -inf after the bias,
    so it sees no key (output 0, lse -inf), as with a mask that hides every key."""
    q, k, v = (randn(2, 5, 4, seed=941 + i) for i in range(3))
    bias = randn(5, 5, seed=944)
    bias[1] = INF
    bias[3, :2] = INF
    out, lse = f(q, k, v, bias, None, block_q=2, block_k=2)
    return {"output": out, "logsumexp": lse}


def _bfloat16_tiles(f):
    """64 key tiles in bfloat16, with the exact attention of the same bfloat16 inputs."""
    q, k, v = (randn(2, n, 8, seed=985 + i).bfloat16() for i, n in enumerate((8, 512, 512)))
    out, lse = f(q, k, v, None, None, block_q=8, block_k=8)
    return {"output": out, "logsumexp": lse, "exact": bugs.dense_attention(
        q.double(), k.double(), v.double())}


def _bf16_forward_verdict(got) -> str | None:
    if got["logsumexp"].dtype != torch.float32:
        return _(BF16_LSE).format(got=got["logsumexp"].dtype)
    if got["output"].dtype != torch.bfloat16:
        return _(BF16_OUT).format(got=got["output"].dtype)
    return None


def _forward_memory(f):
    """Peak bytes of the forward (profiler) against one score tensor: q 64, k 128, blocks 16."""
    q, k, v, _b, _m = Inputs((1,), 64, 128, 4, 4, (16, 16), seed=951, dtype=torch.float32).tensors()
    measured = profile_bytes(lambda: _unguarded(f)(q, k, v, block_q=16, block_k=16))
    return {"peak bytes": torch.tensor(measured.peak), "score bytes": torch.tensor(64 * 128 * 4)}


def _below_half_a_score_tensor(key: str, message: str, fraction: float = 0.5):
    def expect(outputs) -> str | None:
        peak, scores = int(outputs[key]), int(outputs["score bytes"])
        if peak < scores * fraction:
            return None
        return _(message).format(peak=peak, scores=scores, ratio=peak / scores)
    return expect


def _shown(outcomes):
    """The failing case the message shows (the first), or None when it is not a comparison."""
    failing = [o for o in outcomes if o.failed]
    return failing[0] if failing and failing[0].status == "differs" else None


def _forward_evidence(outcomes) -> str | None:
    """NaN where the reference has numbers, in the case shown; a logsumexp wrong while the
    output is right, in every case that differs."""
    shown = _shown(outcomes)
    if shown is not None and "output" in shown.got and \
            torch.isnan(shown.got["output"]).any() and not torch.isnan(shown.expected["output"]).any():
        return _(NAN_HINT)
    differing = [o for o in outcomes if o.status == "differs"]
    if differing and all(o.key == "logsumexp" for o in differing):
        return _(LSE_HINT)
    return None


# a size-1 axis (a padding mask (*, 1, k), a bias shared by a batch) sliced with a block's rows
ZERO_SLICE = ("RuntimeError", r"size of tensor [ab] \(0\) must match",
              N_("a slice of size 0: a size-1 axis (a padding mask (*, 1, k), a bias shared "
                 "along an axis) sliced with a block's rows or columns is empty from the second "
                 "block on: take every bias and mask tile with tile(t, rows, cols), which keeps "
                 "the size-1 axes"))
QUERY_BLOCK_HINT = N_("each query block is a softmax of its own: start m = -inf, l = 0 and the "
                      "output accumulator at 0 inside the loop over query blocks, for every "
                      "block, never carried over from the block before")
FORWARD_GRADIENT_HINT = ("the forward is plain tensor operations, so autograd differentiates it: "
                         "the gradients through out are those of lesson 02's attention (update m, "
                         "l and the accumulator into new tensors, never with .detach() or in "
                         "place)")


def _forward_gradients(spec: Inputs):
    """A case run: out and the gradients of a fixed loss through it, autograd through the
    forward's own tiles."""
    def run(f):
        q, k, v, b, mask = spec.tensors()
        return gradients_of(lambda f, q, k, v: f(q, k, v, b, mask, block_q=spec.blocks[0],
                                                 block_k=spec.blocks[1])[0],
                            {"q": q, "k": k, "v": v})(f)
    return run


ONE_TILE = _forward_case(
    "one tile: q (2, 5, 4), k, v (2, 7, 4), blocks 8 x 8: the scale and the final division",
    Inputs((2,), 5, 7, 4, 4, (8, 8), seed=911),
    hint="with one tile this is lesson 02's attention: out = softmax(scores) @ v, and "
         "lse = logsumexp of each query's scores",
    shape_hint="out is (*, q, c_v) and lse is (*, q): one number per query")
BIAS_CASE = _forward_case("bias (2, 6, 9) added per tile, blocks 4 x 4",
                          Inputs((2,), 6, 9, 4, 4, (4, 4), seed=919, bias=(2, 6, 9)),
                          hint=BIAS_TILE_HINT, tags=("tiles", "ragged", "bias"))

check_tiled_forward = Check(
    id="09.tiled_forward",
    target="tiled:tiled_attention_forward",
    lesson="09",
    uses=(check_scaled_scores,),
    diagnose=_forward_evidence,
    error_hints=(("ValueError", r"(not enough|too many) values to unpack",
                  "return two tensors: (out, lse), the output (*, q, c_v) and the logsumexp "
                  "(*, q)"),
                 ("TypeError", r"returned None as the output", NONE_HINT),
                 ("AttributeError", r"'NoneType' object has no attribute", NONE_HINT),
                 ("TypeError", r"NoneType", NONE_HINT), ZERO_SLICE) + DEVICE_ERRORS,
    tag_hints={"tiles": TILES_HINT, "ragged": EDGE_HINT, "bias": BIAS_TILE_HINT,
               "mask": MASK_TILE_HINT, "blind": BLIND_HINT, "negative": START_TILES_HINT},
    cases=[
        ONE_TILE,
        Case("two query blocks, one key tile each: q (2, 8, 4) in blocks of 4, k, v (2, 4, 3)",
             _forward_run(Inputs((2,), 8, 4, 4, 3, (4, 8), seed=912)), hint=QUERY_BLOCK_HINT),
        _forward_case("q (2, 8, 4), k, v (2, 12, 3), blocks 4 x 4: three key tiles, the max rises",
                      Inputs((2,), 8, 12, 4, 3, (4, 4), seed=913, scale=3.0), hint=TILES_HINT,
                      tags=("tiles",)),
        _forward_case("wide scores (q x 40): the running max changes from tile to tile",
                      Inputs((2,), 6, 16, 4, 4, (3, 4), seed=915, scale=40.0), hint=TILES_HINT,
                      tags=("tiles",)),
        Case("falling scores: the first key tile's are near 800, the later ones near -800",
             _falling_scores, hint=TILES_HINT, tags=("tiles",)),
        _forward_case("all scores far below zero: a bias near -1000, three key tiles",
                      Inputs((2,), 5, 12, 4, 4, (4, 4), seed=917, bias=(5, 12), shift=-1000.0),
                      hint=START_TILES_HINT, tags=("tiles", "bias", "negative")),
        _forward_case("all scores far above zero: a bias near +1000, three key tiles",
                      Inputs((2,), 5, 12, 4, 4, (4, 4), seed=918, bias=(5, 12), shift=1000.0),
                      hint=LARGE_HINT, tags=("tiles", "bias", "positive")),
        _forward_case("7 queries in blocks of 3, 10 keys in blocks of 4: the last tiles are shorter",
                      Inputs((2,), 7, 10, 4, 2, (3, 4), seed=921), hint=EDGE_HINT,
                      tags=("tiles", "ragged")),
        BIAS_CASE,
        _forward_case("pair bias (2, 1, 2, 7, 7) against rows (2, 3, 2, 7, 4): shared by the 3 "
                      "sequences", Inputs((2, 3, 2), 7, 7, 4, 4, (4, 3), seed=923,
                                          bias=(2, 1, 2, 7, 7)),
                      hint=BIAS_TILE_HINT, tags=("tiles", "ragged", "bias")),
        _forward_case("padding mask (2, 1, 12): sequence 1 has 5 real keys, blocks 4 x 4",
                      Inputs((2,), 6, 12, 4, 4, (4, 4), seed=925, mask=_key_padding(2, 12, [12, 5])),
                      hint=MASK_TILE_HINT, tags=("tiles", "mask")),
        _forward_case("causal mask 13 x 13, blocks 4 x 4: tiles above the diagonal see nothing",
                      Inputs((2,), 13, 13, 4, 4, (4, 4), seed=927,
                             mask=torch.ones(13, 13, dtype=torch.bool).tril()),
                      hint=MASK_TILE_HINT, tags=("tiles", "ragged", "mask")),
        _forward_case("a query that sees no key: output 0, logsumexp -inf",
                      Inputs((2,), 6, 9, 4, 4, (3, 3), seed=929, mask=_blind_rows_mask(6, 9, 1)),
                      hint="a query that sees no key keeps l = 0: its output is 0 (as in lesson 02) "
                           "and its logsumexp log(0) = -inf, never NaN",
                      tags=("tiles", "mask", "blind")),
        Case("a bias row of -inf: that query's scores are all -inf, it sees no key",
             _blind_bias, hint="a query whose scores are all -inf after the bias and the mask sees "
                               "no key: l = 0, output 0 and lse = -inf, never NaN (shift by 0 "
                               "while m_new is -inf)", tags=("tiles", "bias", "blind")),
        _forward_case("bias and mask together, wide scores (q x 20)",
                      Inputs((2,), 9, 11, 4, 4, (4, 4), seed=931, bias=(9, 11),
                             mask=_blind_rows_mask(9, 11, 2), scale=20.0),
                      hint="per tile: scores + tile(bias), then the mask, then the online update",
                      tags=("tiles", "ragged", "bias", "mask", "blind")),
        Case("float32: q (2, 21, 8), k, v (2, 27, 8), blocks 16 x 8, a float32 result",
             _forward_run(Inputs((2,), 21, 27, 8, 8, (16, 8), seed=933, dtype=torch.float32)),
             hint="compute in the inputs' dtype: the result of float32 inputs is float32",
             tags=("tiles", "ragged", "float32", "dtype")),
        _forward_case("larger than any other case: q (1, 8, 4), k, v (1, 600, 4), blocks "
                      "16 x 64", Inputs((1,), 8, 600, 4, 4, (16, 64), seed=935,
                                        mask=_key_padding(1, 600, [520])),
                      hint=TILES_HINT, tags=("tiles", "ragged", "mask", "size")),
        _forward_case("one query against 9 keys, batch (1,), blocks 1 x 4",
                      Inputs((1,), 1, 9, 4, 3, (1, 4), seed=937), hint=EDGE_HINT,
                      tags=("tiles", "ragged")),
        Case("gradients of a fixed loss through out: q (2, 7, 4), k, v (2, 10, 4), blocks 3 x 4",
             _forward_gradients(Inputs((2,), 7, 10, 4, 4, (3, 4), seed=939)),
             hint=FORWARD_GRADIENT_HINT, tags=("tiles", "ragged")),
        Case("gradients where a query sees no key: zeros there, not NaN",
             _forward_gradients(Inputs((2,), 6, 9, 4, 4, (3, 3), seed=940,
                                       mask=_blind_rows_mask(6, 9, 2))),
             hint=FORWARD_GRADIENT_HINT + " (a query that sees no key: shift by 0 while m is "
                                          "-inf, divide by 1 where l = 0)",
             tags=("tiles", "mask", "blind")),
        float32_of(BIAS_CASE),
        dataclasses.replace(bfloat16_of(BIAS_CASE), hint=BF16_HINT,
                            accept=_verdict(_bf16_forward_verdict)),
        Case("bfloat16, 64 key tiles: float32 running max, sum and accumulator",
             _bfloat16_tiles, hint=BF16_HINT, expect=_near_exact(LOW_PRECISION_TILES),
             tags=("tiles", "dtype")),
        meta_of(BIAS_CASE),
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
NAN_GRADIENT_HINT = N_("your {names} hold NaN where a query sees no key: its lse is -inf and "
                       "exp(scores - lse) = exp(-inf - (-inf)) = NaN; shift by 0 where lse is "
                       "-inf, so that its weights, and every gradient through them, are 0")
DBIAS_HINT = N_("dq, dk and dv are right and dbias is not: the bias's gradient is dS (the "
                "scores' gradient) of each tile, summed over the axes the bias was broadcast "
                "along, so that it has the bias's shape (dS.sum_to_size(bias_tile.shape))")
MISSING_HINT = ("your backward returned None for the gradient of {0}: return one gradient per "
                "input of forward, dq, dk, dv and dbias (the bias's gradient, of the bias's "
                "shape, when a bias was given), then None for mask, block_q and block_k")
KEPT_HINT = N_("your forward pass keeps {peak:,} bytes for the backward pass, {ratio:.2f} times "
               "one (q, k) score tensor ({scores:,} bytes): save only q, k, v, bias, mask, out and "
               "lse, and recompute each tile's weights in backward")
BACKWARD_PEAK_HINT = N_("your backward pass held {peak:,} bytes at its peak, {ratio:.2f} times one "
                        "(q, k) score tensor ({scores:,} bytes): recompute the weights one tile "
                        "at a time from q, k and lse, never all keys at once")
SHARED_BIAS_HINT = N_("with a bias (q, k) shared by 16 sequences, your backward pass held "
                      "{peak:,} bytes at its peak, {ratio:.2f} times one (*, q, k) score tensor "
                      "({scores:,} bytes): accumulate dbias at the bias's own size, tile by tile "
                      "(tile(dbias, rows, cols) += dS.sum_to_size(...)), never a (*, q, k) "
                      "gradient that autograd sums afterwards")
GRADIENT_BF16_HINT = ("in bfloat16, accumulate dq, dk, dv and dbias in float32 (acc = "
                      "accumulator_dtype(q.dtype), tiles cast to it) and return each gradient in "
                      "its input's dtype")


@dataclasses.dataclass(frozen=True)
class GradientInputs(Inputs):
    """A gradient case's inputs: those of a forward case, and the loss weights (output-shaped)."""

    def weights(self, out_shape) -> torch.Tensor:
        return loss_weights(out_shape, seed=self.seed).to(self.dtype)

    def diagnosis_inputs(self):
        q, k, v, bias, mask = self.tensors()
        out = bugs.dense_attention(q, k, v, bias, mask)
        return (q, k, v, bias, mask, self.blocks, self.weights(out.shape))


def _gradients_run(spec: GradientInputs):
    """A case run: output and the gradients of a fixed loss through tiled_attention."""
    def run(f):
        q, k, v, b, mask = spec.tensors()
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)] + \
            ([] if b is None else [b.clone().requires_grad_(True)])
        with torch.enable_grad():
            out = f(*leaves[:3], leaves[3] if b is not None else None, mask, *spec.blocks)
            loss = (out * spec.weights(out.shape).to(out.dtype)).sum()
            grads = torch.autograd.grad(loss, leaves, allow_unused=True) if loss.requires_grad \
                else [None] * len(leaves)
        result = {"output": out.detach()}
        for name, grad in zip(GRADIENT_NAMES, grads):
            if grad is None:
                raise RuntimeError(f"no gradient reached {name[1:]}: your backward returned None "
                                   f"for it")
            result[name] = grad.detach()
        return result
    return run


def _gradient_case(name: str, spec: GradientInputs, hint: str, tags=()) -> Case:
    return Case(name, _gradients_run(spec), hint=hint, tags=tags,
                accept=_verdict(lambda got: bugs.backward_bug(got, spec.diagnosis_inputs())))


def _gradcheck(f):
    q, k, v, _b, _m = Inputs((1,), 3, 5, 2, 2, (2, 3), seed=961).tensors()
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
    q, k, v = (t.requires_grad_(True) for t in Inputs(
        (1,), 64, 128, 4, 4, (16, 16), seed=971, dtype=torch.float32).tensors()[:3])
    impl = _unguarded(f)
    with torch.enable_grad():
        kept = profile_bytes(lambda: impl(q, k, v, None, None, 16, 16)).held_after
        out = impl(q, k, v, None, None, 16, 16)
        grad = torch.ones_like(out)
        backward = profile_bytes(lambda: out.backward(grad)).peak
    return {"kept bytes": torch.tensor(kept), "backward peak bytes": torch.tensor(backward),
            "score bytes": torch.tensor(64 * 128 * 4)}


def _memory_with_shared_bias(f):
    """The backward's peak with a bias (64, 128) shared by 16 sequences: the bias's gradient is
    16 times smaller than the (16, 64, 128) scores, unless it is built at the scores' size."""
    q, k, v, bias, _m = Inputs((16,), 64, 128, 4, 4, (16, 16), seed=975, bias=(64, 128),
                               dtype=torch.float32).tensors()
    leaves = [t.requires_grad_(True) for t in (q, k, v, bias)]
    impl = _unguarded(f)
    with torch.enable_grad():
        out = impl(*leaves, None, 16, 16)
        grad = torch.ones_like(out)
        backward = profile_bytes(lambda: out.backward(grad)).peak
    return {"backward peak bytes": torch.tensor(backward),
            "score bytes": torch.tensor(16 * 64 * 128 * 4)}


def _meta_backward(f):
    """Forward and backward on the meta device: every gradient stays there (a tensor created
    without device= raises, as it would on a GPU)."""
    leaves = [torch.empty(2, n, 4, device="meta", dtype=torch.float64).requires_grad_(True)
              for n in (6, 9, 9)]
    bias = torch.empty(6, 9, device="meta", dtype=torch.float64).requires_grad_(True)
    with torch.enable_grad():
        out = _unguarded(f)(*leaves, bias, None, 4, 4)
        grads = torch.autograd.grad(out.sum(), leaves + [bias], allow_unused=True)
    return {name: (torch.empty(0) if g is None else g) for name, g in zip(GRADIENT_NAMES, grads)}


def _all_on_meta(outputs) -> str | None:
    elsewhere = sorted({f"{n} on {t.device}" for n, t in outputs.items() if t.device.type != "meta"})
    if elsewhere:
        return ("every input was on the meta device, but " + ", ".join(elsewhere) +
                ": a tensor in your backward was created on a fixed device")
    return None


def _nan_names(outcome) -> list[str]:
    return [n for n in GRADIENT_NAMES if n in outcome.expected
            and torch.isnan(outcome.got[n]).any() and not torch.isnan(outcome.expected[n]).any()]


def _backward_evidence(outcomes) -> str | None:
    """From the case shown: NaN gradients (named, when that case's gradients hold NaN); else
    which gradients differ: the bias sum, P itself (dv wrong too) or the D term."""
    shown = _shown(outcomes)
    if shown is None or not set(GRADIENT_NAMES) & set(shown.expected):
        return None
    if _nan_names(shown):  # NaN where a query sees no key; elsewhere the case says why
        blind = "blind" in shown.case.tags
        return _(NAN_GRADIENT_HINT).format(names=", ".join(_nan_names(shown))) if blind else None
    want, have = shown.expected, shown.got
    wrong = {name for name in GRADIENT_NAMES if name in want and not
             torch.allclose(have[name].double(), want[name].double(), rtol=1e-6, atol=1e-9,
                            equal_nan=True)}
    if wrong == {"dbias"}:
        return _(DBIAS_HINT)
    if "dv" in wrong:
        return _(P_HINT)
    if wrong == {"dq", "dk"}:
        return _(D_HINT)
    return None


ONE_TILE_GRADIENTS = _gradient_case(
    "gradients, one tile: q (2, 5, 4), k, v (2, 7, 3): the scale and D",
    GradientInputs((2,), 5, 7, 4, 3, (8, 8), seed=941),
    hint="backward returns dq, dk, dv: the gradients of the loss with respect to q, k and v, "
         "from the tile's recomputed weights")

check_tiled_backward = Check(
    id="09.tiled_backward",
    target="tiled:tiled_attention",
    lesson="09",
    uses=(check_tiled_forward,),  # and through it 01.scaled_scores, which backward calls too
    diagnose=_backward_evidence,
    error_hints=(("RuntimeError", r"function \w*Backward returned an incorrect number of gradients",
                  "backward returns one gradient per input of forward (after ctx): dq, dk, dv, "
                  "dbias, then None for mask, block_q and block_k"),
                 ("RuntimeError", r"no gradient reached (\w+)", MISSING_HINT)) + DEVICE_ERRORS,
    cases=[
        ONE_TILE_GRADIENTS,
        _gradient_case("gradients, blocks 4 x 4: q (2, 9, 4), k, v (2, 11, 4)",
                       GradientInputs((2,), 9, 11, 4, 4, (4, 4), seed=943),
                       hint="accumulate over every (query, key) tile: dq[rows] += ..., dk[cols] "
                            "+= ..., dv[cols] += ...; the last tiles are shorter", tags=("tiles",)),
        _gradient_case("gradients with a bias (6, 9) shared by the batch (2,): dbias sums over "
                       "the batch", GradientInputs((2,), 6, 9, 4, 4, (4, 4), seed=945, bias=(6, 9)),
                       hint=DBIAS_HINT, tags=("tiles", "bias")),
        _gradient_case("gradients with a pair bias (2, 1, 2, 7, 7): dbias sums over the 3 "
                       "sequences", GradientInputs((2, 3, 2), 7, 7, 4, 4, (4, 3), seed=947,
                                                   bias=(2, 1, 2, 7, 7)),
                       hint=DBIAS_HINT, tags=("tiles", "bias")),
        _gradient_case("gradients with a causal mask 12 x 12, blocks 4 x 4",
                       GradientInputs((2,), 12, 12, 4, 4, (4, 4), seed=949,
                                      mask=torch.ones(12, 12, dtype=torch.bool).tril()),
                       hint="masked keys get P = 0 in the recomputed weights",
                       tags=("tiles", "mask")),
        _gradient_case("gradients where a query sees no key: zeros there, not NaN",
                       GradientInputs((2,), 6, 9, 4, 4, (3, 3), seed=951, bias=(6, 9),
                                      mask=_blind_rows_mask(6, 9, seed=4)),
                       hint="a query that sees no key has lse = -inf: shift by 0 there, so its "
                            "weights, and every gradient through them, are 0 (not NaN)",
                       tags=("tiles", "mask", "blind")),
        _gradient_case("gradients, all scores far below zero: a bias near -1000",
                       GradientInputs((2,), 5, 12, 4, 4, (4, 4), seed=952, bias=(5, 12),
                                      shift=-1000.0),
                       hint="P = exp(scores - lse) with the forward's lse: with scores near -1000, "
                            "exp(scores) alone underflows to 0", tags=("tiles", "bias")),
        _gradient_case("gradients, rows of scores near +1000 and rows near -1000 (a bias)",
                       GradientInputs((2,), 6, 12, 4, 4, (4, 4), seed=954, bias=(6, 12),
                                      shift=torch.tensor([1000.0, -1000.0] * 3,
                                                         dtype=torch.float64)[:, None]),
                       hint="P = exp(scores - lse) with the forward's lse: exp(scores) alone "
                            "overflows to inf on the rows near +1000 and underflows to 0 on those "
                            "near -1000", tags=("tiles", "bias")),
        _gradient_case("gradients, wide scores (q x 20) with a padding mask",
                       GradientInputs((2,), 8, 12, 4, 4, (4, 4), seed=953, scale=20.0,
                                      mask=_key_padding(2, 12, [12, 7])),
                       hint="P = exp(scores - lse) needs the forward's lse (with its max): "
                            "exp(scores) alone overflows", tags=("tiles", "mask")),
        Case("gradients in float32: q (2, 19, 8), k, v (2, 25, 8), blocks 16 x 8",
             _gradients_run(GradientInputs((2,), 19, 25, 8, 8, (16, 8), seed=955,
                                           dtype=torch.float32)),
             hint="compute in the inputs' dtype: the gradients of float32 inputs are float32 "
                  "(tensors you create take dtype= and device= of q)",
             tags=("tiles", "float32", "dtype")),
        Case("gradients in bfloat16: q (2, 19, 8), k, v (2, 25, 8), a bias, blocks 16 x 8",
             _gradients_run(GradientInputs((2,), 19, 25, 8, 8, (16, 8), seed=956, bias=(19, 25),
                                           dtype=torch.bfloat16)),
             hint=GRADIENT_BF16_HINT, tags=("tiles", "bias", "dtype")),
        _gradient_case("gradients, larger than the lesson prints: q (1, 30, 4), k, v (1, 70, 4)",
                       GradientInputs((1,), 30, 70, 4, 4, (16, 32), seed=957,
                                      mask=_key_padding(1, 70, [60])),
                       hint="accumulate over every (query, key) tile; the last tiles are shorter",
                       tags=("tiles", "mask", "size")),
        Case("torch.autograd.gradcheck in float64, bias and a query that sees no key",
             _gradcheck, hint="your backward must give the gradients of your forward: "
                              "gradcheck compares them with finite differences",
             expect=_gradcheck_passes),
        Case("meta device: forward and backward, every gradient follows the inputs' device",
             _meta_backward, hint=DEVICE_HINT, expect=_all_on_meta, tags=("device",)),
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
        Case("memory: a bias (64, 128) shared by 16 sequences, its gradient at the bias's size",
             _memory_with_shared_bias,
             hint="accumulate dbias at the bias's own size, tile by tile, never at the scores' size",
             expect=_below_half_a_score_tensor("backward peak bytes", SHARED_BIAS_HINT, 1.0),
             tags=("memory", "bias")),
    ],
)


# -------------------------------------------------------------- causal tiles, skipped above the diagonal

CAUSAL_HINT = ("for each query block rows: the keys 0 .. rows.stop (the tiles left of the diagonal "
               "and the diagonal one), the mask key j <= query i in the global indices of the "
               "sequence (i from rows.start, j from 0), then your tiled_attention; concatenate "
               "the blocks' outputs")
SKIPPED_TOO_MANY = N_("the diagonal tiles are skipped: query block rows must see the keys up to "
                      "rows.stop (its own block included, where key j <= query i), not up to "
                      "rows.start")
LOCAL_MASK = N_("the mask is built in the tile's own indices: query i of the block is "
                "rows.start + i in the sequence, so the mask is key j <= rows.start + i "
                "(torch.arange(rows.start, rows.stop)[:, None] >= torch.arange(rows.stop)[None, :]), "
                "not a lower triangle that starts at column 0")
DIAGONAL_EXCLUDED = N_("each query is kept from its own key: causal attention lets query i see "
                       "key i (key j <= query i, not j < i)")
TOO_MANY_SCORES = N_("your causal attention computed {got:,} scores for L = {L}, more than "
                     "L²/2 + L·block = {bound:,}: the tiles above the diagonal must never be "
                     "computed (query block rows reads the keys up to rows.stop only)")


def _causal_inputs(batch, L, c, c_v, seed, scale=1.0, dtype=torch.float64):
    q = randn(*batch, L, c, seed=seed, scale=scale).to(dtype)
    k = randn(*batch, L, c, seed=seed + 1).to(dtype)
    v = randn(*batch, L, c_v, seed=seed + 2).to(dtype)
    return q, k, v


def _causal_bug(got, q, k, v, block) -> str | None:
    """Which causal bug the output matches: the diagonal tile skipped, a mask in the tile's own
    indices, or each query kept from its own key."""
    out = got["output"]
    if out.dtype != torch.float64:
        return None
    L = q.shape[-2]
    i = torch.arange(L)
    if bugs.close(out, bugs.dense_attention(q, k, v, mask=i[:, None] > i[None, :])):
        return _(DIAGONAL_EXCLUDED)
    for end, words in ((lambda rows: rows.stop // block * block, SKIPPED_TOO_MANY),
                       (lambda rows: rows.start, SKIPPED_TOO_MANY)):
        if bugs.close(out, _key_prefix_attention(q, k, v, block, end)):
            return _(words)
    local = []
    for start in range(0, L, block):
        rows = slice(start, min(start + block, L))
        tril = torch.ones(rows.stop - rows.start, rows.stop, dtype=torch.bool).tril()
        local.append(bugs.dense_attention(q[..., rows, :], k[..., :rows.stop, :],
                                          v[..., :rows.stop, :], mask=tril))
    return _(LOCAL_MASK) if bugs.close(out, torch.cat(local, -2)) else None


def _key_prefix_attention(q, k, v, block: int, end):
    """Causal attention in which query block rows reads only the keys before end(rows): the
    diagonal tile (or more) skipped; a block with no key gets zeros."""
    L, outs = q.shape[-2], []
    for start in range(0, L, block):
        rows = slice(start, min(start + block, L))
        stop = end(rows)
        i = torch.arange(rows.start, rows.stop)[:, None]
        mask = torch.arange(L)[None, :] <= i
        mask[:, stop:] = False
        outs.append(bugs.dense_attention(q[..., rows, :], k, v, mask=mask))
    return torch.cat(outs, -2)


def _causal_case(name, batch, L, c, c_v, block, seed, hint, scale=1.0, tags=()) -> Case:
    def run(f):
        return f(*_causal_inputs(batch, L, c, c_v, seed, scale), block)

    def find(got):
        return _causal_bug(got, *_causal_inputs(batch, L, c, c_v, seed, scale), block)
    return Case(name, run, hint=hint, tags=tags, accept=_verdict(find))


def _causal_gradients(batch, L, c, c_v, block, seed, dtype=torch.float64):
    def run(f):
        leaves = [t.clone().requires_grad_(True)
                  for t in _causal_inputs(batch, L, c, c_v, seed, dtype=dtype)]
        with torch.enable_grad():
            out = f(*leaves, block)
            loss = (out * loss_weights(out.shape, seed=seed).to(out.dtype)).sum()
            grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        # a gradient that never arrived is kept as missing, not read as NaN the code computed
        return gradient_outputs(out, ("grad q", "grad k", "grad v"), leaves, grads)
    return run


def _scores_computed(f):
    """The scores a causal call computes (counted as they are computed: course/lessons/lesson09/
    costs.py), L = 64 in blocks of 8, c = 5, against L²/2 + L·block."""
    L, block = 64, 8
    q, k, v = _causal_inputs((1,), L, 5, 3, seed=995, dtype=torch.float32)
    counted = count_scores(lambda: _unguarded(f)(q, k, v, block), channels=5)
    return {"scores computed": torch.tensor(counted), "bound": torch.tensor(L * L // 2 + L * block)}


def _within_bound(outputs) -> str | None:
    got, bound = int(outputs["scores computed"]), int(outputs["bound"])
    if got <= bound:
        return None
    return _(TOO_MANY_SCORES).format(got=got, L=64, bound=bound)


def _extreme_causal(f):
    """Queries +-40 u alternately, keys about u (|u|² = 64, c = 4): every score of a query is near
    +1280 or every one near -1280 (exp overflows, or underflows to 0, without the max)."""
    u = torch.full((4,), 4.0, dtype=torch.float64)
    sign = torch.tensor([1.0, -1.0] * 6, dtype=torch.float64)[:, None]
    q = 40.0 * sign * u + randn(2, 12, 4, seed=993)
    k = u * (1.0 + 0.5 * torch.linspace(-1, 1, 12, dtype=torch.float64))[:, None] + \
        randn(2, 12, 4, seed=994, scale=0.1)
    return f(q, k, randn(2, 12, 3, seed=996), 4)


CAUSAL_RAGGED = _causal_case("L = 13 in blocks of 4: the last block is shorter", (2,), 13, 4, 3, 4,
                             seed=981, hint=CAUSAL_HINT, tags=("ragged",))

check_causal_tiles = Check(
    id="09.causal_tiles",
    target="tiled:causal_tiled_attention",
    lesson="09",
    uses=(check_tiled_backward,),
    error_hints=(("TypeError", r"NoneType", NONE_HINT),) + DEVICE_ERRORS,
    cases=[
        _causal_case("L = 12 in blocks of 4: three query blocks", (2,), 12, 4, 3, 4, seed=979,
                     hint=CAUSAL_HINT),
        CAUSAL_RAGGED,
        _causal_case("batch (2, 3), L = 20 in blocks of 8, wide scores (q x 20)", (2, 3), 20, 4,
                     4, 8, seed=983, scale=20.0, hint=CAUSAL_HINT, tags=("ragged",)),
        _causal_case("one token: L = 1", (1,), 1, 4, 3, 4, seed=985,
                     hint="one query sees its own key: the output is v", tags=("ragged",)),
        _causal_case("block larger than L: L = 6 in one block of 16", (2,), 6, 4, 3, 16,
                     seed=987, hint=CAUSAL_HINT, tags=("ragged",)),
        _causal_case("L = 150 in blocks of 32: longer than the lesson prints", (1,), 150, 4, 4,
                     32, seed=989, hint=CAUSAL_HINT, tags=("ragged", "size")),
        Case("rows of scores near +1300 and rows near -1300: L = 12 in blocks of 4",
             _extreme_causal, hint=CAUSAL_HINT + " (each tile's scores through your "
                                                 "tiled_attention, whose running max keeps exp "
                                                 "finite)", tags=("ragged",)),
        Case("gradients through your tiled_attention: L = 13 in blocks of 4",
             _causal_gradients((2,), 13, 4, 3, 4, seed=991),
             hint="each block's output comes from your tiled_attention, whose backward gives the "
                  "gradients: keep the computation in tensors (torch.cat, no .detach())",
             tags=("ragged", "gradient")),
        float32_of(CAUSAL_RAGGED),
        dataclasses.replace(bfloat16_of(CAUSAL_RAGGED), accept=None),
        meta_of(CAUSAL_RAGGED),
        Case("tiles above the diagonal are never computed: L = 64 in blocks of 8",
             _scores_computed, hint=CAUSAL_HINT, expect=_within_bound, tags=("skipping",)),
    ],
)
