"""Lesson 09's diagnoses: the wrong formulas a learner's tiles are likely to compute, simulated in
float64 on a case's own inputs, so that a check can say which one the result matches.

Each simulator is a plain tile loop (the lesson's algorithm) with one named bug switched on; a
case's `accept` (course/checks/core.py) runs the simulators on the inputs of that case and, when
the learner's result equals one of them, names that bug (the engine shows it first). Nothing here
imports the solutions: the reference for the gradients is dense float64 attention and autograd.

    forward_bug(outputs, inputs)    which bug of the forward pass the output matches, or None
    backward_bug(outputs, inputs)   which gradient is wrong, and how (a factor, an overwrite, D)
    softmax_bug(output, x, block)   which bug of the online softmax the output matches
"""
from __future__ import annotations

import math

import torch

from course.i18n import N_, _

INF = float("-inf")

SCALED_TWICE = N_("your scores are divided by c = {c} instead of sqrt(c) = {root:g}: the scale is "
                  "applied twice (your scaled_scores already divides by sqrt(c); do not divide "
                  "q, k or the scores again)")
UNSCALED = N_("your scores are not divided by sqrt(c) = {root:g}: compute each tile's scores with "
              "your lesson-01 scaled_scores(q_tile, k_tile), which scales them")
NOT_DIVIDED = N_("your output is acc, not acc / l: after the last key tile, divide the output "
                 "accumulator by the running sum l (out = acc / l), as softmax divides by its sum")
INVERTED = N_("you rescale by exp(m_new - m), the inverse of the factor: when the maximum rises "
              "from m to m_new, what was accumulated against m is multiplied by exp(m - m_new), "
              "which is at most 1")
ACC_NOT_RESCALED = N_("l is rescaled and the output accumulator is not: when the maximum rises "
                      "from m to m_new, multiply acc by exp(m - m_new) too (acc = acc * "
                      "exp(m - m_new) + p @ v_tile)")
L_NOT_RESCALED = N_("the output accumulator is rescaled and the running sum l is not: when the "
                    "maximum rises from m to m_new, l = l * exp(m - m_new) + p.sum(-1)")
MAX_NOT_CARRIED = N_("each key tile uses its own maximum: carry the running maximum from tile to "
                     "tile, m_new = max(m, tile max), so that every term is relative to the same m")
LAST_KEYS_DROPPED = N_("the keys of the last, shorter key block are left out: cover every key with "
                       "key_blocks(k.shape[-2], block_k) (slices that stop at L_k), not L_k // block_k "
                       "whole blocks")
LAST_ROWS_DROPPED = N_("the output's last {rows} query rows are wrong and the others right: the "
                       "last, shorter query block is never written; cover every query with "
                       "key_blocks(q.shape[-2], block_q)")
LSE_LOG_L = N_("your logsumexp is log(l), the output is right: lse = m + log(l), with m the "
               "final running maximum")

MISSING_SCALE = N_("{names}: sqrt(c) = {root:g} times too large: the scores were divided by "
                   "sqrt(c), so their gradient with respect to q and k carries that factor too: "
                   "dq = dS k / sqrt(c), dk = dSᵀ q / sqrt(c)")
NO_D = N_("dv is right and dq, dk are not, and they match dS = P * dP without D: dS = P * (dP - D) "
          "with D = rowsum(dO * O), one number per query (FlashAttention-2's D)")
OVERWRITTEN = N_("{name} is wrong and {right} are right: {name} keeps only the last {blocks}'s "
                 "share; accumulate it over every tile ({name}[{index}] += ..., not =)")
DBIAS_SCALED = N_("dq, dk and dv are right and dbias is {ratio} times the right one: the bias is "
                  "added after the scores are scaled, so its gradient is dS itself (no 1/sqrt(c))")
DK_ONLY = N_("dk is wrong while dq and dv are right: dk = dSᵀ q / sqrt(c), accumulated over every "
             "query block of the key block (dk[cols] += dS.transpose(-2, -1) @ q_tile * scale)")
DQ_ONLY = N_("dq is wrong while dk and dv are right: dq = dS k / sqrt(c), accumulated over every "
             "key block of the query block (dq[rows] += dS @ k_tile * scale)")

SOFTMAX_INVERTED = N_("you rescale l by exp(m_new - m), the inverse of the factor: when a block "
                      "raises the maximum from m to m_new, l = l * exp(m - m_new) + "
                      "exp(block - m_new).sum(-1)")


# --------------------------------------------------------------------------- dense references

def dense_attention(q, k, v, bias=None, mask=None):
    """softmax(q kᵀ / sqrt(c) + bias, masked) v in float64; a row whose scores are all -inf gets
    zeros. Differentiable (the gradients' reference)."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask, INF)
    blind = torch.isinf(scores).all(dim=-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(blind, 0.0), dim=-1).masked_fill(blind, 0.0)
    return weights @ v


def _blocks(n: int, size: int) -> list[slice]:
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


def _tile(t, rows, cols):
    if t is None:
        return None
    return t[..., rows if t.shape[-2] > 1 else slice(None), cols if t.shape[-1] > 1 else slice(None)]


def simulate_forward(q, k, v, bias, mask, block_q, block_k, scale=None, divide=True,
                     rescale="both", inverted=False, carry=True, drop_last_keys=False):
    """(out, lse) of the lesson's tile loop in float64, with one bug: another `scale`, no final
    division, `rescale` of "both", "l" or "acc" only, the `inverted` factor, a max not carried,
    or the keys of a last shorter block dropped."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    columns = _blocks(k.shape[-2], block_k)
    if drop_last_keys and k.shape[-2] % block_k:
        columns = columns[:-1]
    outs, lses = [], []
    for rows in _blocks(q.shape[-2], block_q):
        m = l = acc = None
        for cols in columns:
            s = q[..., rows, :] @ k[..., cols, :].transpose(-2, -1) * scale
            s = s if bias is None else s + _tile(bias, rows, cols)
            s = s if mask is None else s.masked_fill(~_tile(mask, rows, cols), INF)
            top = s.amax(-1, keepdim=True)
            m_new = top if m is None or not carry else torch.maximum(m, top)
            shift = m_new.masked_fill(m_new == INF, 0.0)
            p = torch.exp(s - shift)
            if m is None:
                l, acc = p.sum(-1, keepdim=True), p @ v[..., cols, :]
            else:
                factor = torch.exp(shift - m) if inverted else torch.exp(m - shift)
                l = l * (factor if rescale in ("both", "l") else 1.0) + p.sum(-1, keepdim=True)
                acc = acc * (factor if rescale in ("both", "acc") else 1.0) + p @ v[..., cols, :]
            m = m_new
        outs.append(acc / l.masked_fill(l == 0, 1.0) if divide else acc)
        lses.append((m.masked_fill(m == INF, 0.0) + torch.log(l)).squeeze(-1))
    return torch.cat(outs, -2), torch.cat(lses, -1)


def close(a, b) -> bool:
    return a.shape == b.shape and bool(torch.allclose(a.double(), b.double(), rtol=1e-6,
                                                      atol=1e-9, equal_nan=True))


def forward_bug(outputs, inputs) -> str | None:
    """The forward bug the learner's output (and logsumexp) matches on these float64 inputs."""
    q, k, v, bias, mask, (block_q, block_k) = inputs
    out = outputs["output"]
    if not torch.is_tensor(out) or out.dtype != torch.float64:
        return None
    c = q.shape[-1]
    candidates = [
        (dict(scale=1.0 / c), _(SCALED_TWICE).format(c=c, root=math.sqrt(c))),
        (dict(scale=1.0), _(UNSCALED).format(root=math.sqrt(c))),
        (dict(divide=False), _(NOT_DIVIDED)),
        (dict(inverted=True), _(INVERTED)),
        (dict(rescale="l"), _(ACC_NOT_RESCALED)),
        (dict(rescale="acc"), _(L_NOT_RESCALED)),
        (dict(carry=False), _(MAX_NOT_CARRIED)),
        (dict(drop_last_keys=True), _(LAST_KEYS_DROPPED)),
    ]
    right, right_lse = simulate_forward(q, k, v, bias, mask, block_q, block_k)
    if close(out, right):
        lse = outputs.get("logsumexp")
        if lse is not None and lse.shape == right_lse.shape and \
                close(lse, right_lse - _row_max(q, k, bias, mask)):
            return _(LSE_LOG_L)
        return None
    for bug, words in candidates:
        if close(out, simulate_forward(q, k, v, bias, mask, block_q, block_k, **bug)[0]):
            return words
    return _rows_dropped(out, right, v, block_q)


def _row_max(q, k, bias, mask):
    """The largest score of each query (0 for a query that sees no key): the final running max."""
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    s = s if bias is None else s + bias
    s = s if mask is None else s.masked_fill(~mask, INF)
    top = s.amax(-1)
    return top.masked_fill(top == INF, 0.0)


def _rows_dropped(out, right, v, block_q: int) -> str | None:
    """Every row right but those of the last, shorter query block, which hold what a tensor
    never written holds (zeros, NaN or values no weighted mean of v can reach)."""
    n = right.shape[-2]
    tail = n % block_q
    if not tail or out.shape != right.shape:
        return None
    head, rest = out[..., : n - tail, :], out[..., n - tail:, :].double()
    unwritten = bool((rest.abs() < 1e-300).all()) or not bool(torch.isfinite(rest).all()) or \
        float(rest.abs().max()) > float(v.abs().max()) * (1 + 1e-6)
    if close(head, right[..., : n - tail, :]) and unwritten:
        return _(LAST_ROWS_DROPPED).format(rows=tail)
    return None


# ------------------------------------------------------------------------------------ backward

def dense_gradients(q, k, v, bias, mask, weights):
    """dq, dk, dv, dbias of (attention * weights).sum() by autograd of dense float64 attention."""
    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    bias_leaf = None if bias is None else bias.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        out = dense_attention(*leaves, bias_leaf, mask)
        targets = leaves + ([] if bias_leaf is None else [bias_leaf])
        grads = torch.autograd.grad((out * weights).sum(), targets)
    names = ("dq", "dk", "dv", "dbias")
    return {name: grad for name, grad in zip(names, grads)}, out.detach()


def simulate_backward(q, k, v, bias, mask, block_q, block_k, weights, no_d=False,
                      overwrite=None):
    """dq, dk, dv of the tile loop in float64 with one bug: D left out of dS, or one gradient
    overwritten by each tile instead of accumulated (`overwrite` = "dq", "dk" or "dv")."""
    scale = q.shape[-1] ** -0.5
    out = dense_attention(q, k, v, bias, mask)
    batch = out.shape[:-2]
    scores = q @ k.transpose(-2, -1) * scale + (0.0 if bias is None else bias)
    scores = scores if mask is None else scores.masked_fill(~mask, INF)
    lse = torch.logsumexp(scores, -1, keepdim=True)
    lse = lse.masked_fill(lse == INF, 0.0)
    D = 0.0 if no_d else (weights * out).sum(-1, keepdim=True)
    grads = {n: torch.zeros(*batch, *t.shape[-2:], dtype=t.dtype)
             for n, t in (("dq", q), ("dk", k), ("dv", v))}
    for cols in _blocks(k.shape[-2], block_k):
        for rows in _blocks(q.shape[-2], block_q):
            p = torch.exp(scores[..., rows, cols] - lse[..., rows, :])
            d_out = weights.expand(out.shape)[..., rows, :]
            shares = {"dv": (cols, p.transpose(-2, -1) @ d_out)}
            d_s = p * (d_out @ v[..., cols, :].transpose(-2, -1) - (D if no_d else D[..., rows, :]))
            shares["dq"] = (rows, d_s @ k[..., cols, :] * scale)
            shares["dk"] = (cols, d_s.transpose(-2, -1) @ q[..., rows, :] * scale)
            for name, (index, share) in shares.items():
                if name == overwrite:
                    grads[name][..., index, :] = share
                else:
                    grads[name][..., index, :] += share
    return {n: g.sum_to_size(t.shape) for (n, g), t in zip(grads.items(), (q, k, v))}


def _factor(want, have) -> float | None:
    """alpha when have = alpha * want (to 1e-6), else None."""
    w, h = want.double().flatten(), have.double().flatten()
    if float((w * w).sum()) == 0.0:
        return None
    alpha = float((w * h).sum() / (w * w).sum())
    return alpha if torch.allclose(alpha * w, h, rtol=1e-6, atol=1e-9) else None


def backward_bug(outputs, inputs) -> str | None:
    """Which gradient the learner's backward gets wrong on these float64 inputs, and how."""
    q, k, v, bias, mask, (block_q, block_k), weights = inputs
    if outputs["dq"].dtype != torch.float64:
        return None
    right, _out = dense_gradients(q, k, v, bias, mask, weights)
    wrong = {n for n in right if n in outputs and not close(outputs[n], right[n])}
    if not wrong:
        return None
    root = math.sqrt(q.shape[-1])
    factors = {n: _factor(right[n], outputs[n]) for n in wrong}
    if wrong == {"dbias"}:
        alpha = factors["dbias"]
        return _(DBIAS_SCALED).format(ratio=f"{alpha:.4g}") if alpha is not None else None
    if wrong <= {"dq", "dk"} and all(f is not None and abs(f - root) < 1e-6 * root
                                     for f in factors.values()):
        names = " and ".join(sorted(wrong))
        return _(MISSING_SCALE).format(names=names, root=root)
    for name, index, blocks in (("dk", "cols", "query block"), ("dv", "cols", "query block"),
                                ("dq", "rows", "key block")):
        if wrong == {name}:
            twin = simulate_backward(q, k, v, bias, mask, block_q, block_k, weights,
                                     overwrite=name)[name]
            if close(outputs[name], twin):
                right_names = " and ".join(sorted({"dq", "dk", "dv"} - {name}))
                return _(OVERWRITTEN).format(name=name, right=right_names, blocks=blocks,
                                             index=index)
    if wrong == {"dq", "dk"}:
        twin = simulate_backward(q, k, v, bias, mask, block_q, block_k, weights, no_d=True)
        if close(outputs["dq"], twin["dq"]) and close(outputs["dk"], twin["dk"]):
            return _(NO_D)
    if wrong == {"dk"}:
        return _(DK_ONLY)
    if wrong == {"dq"}:
        return _(DQ_ONLY)
    return None


# ---------------------------------------------------------------------------- online softmax

def simulate_softmax(x, block: int, inverted=False, rescale=True, carry=True):
    """The online softmax of the lesson in float64, with one bug."""
    m = torch.full_like(x[..., :1], INF)
    l = torch.zeros_like(x[..., :1])
    for cols in _blocks(x.shape[-1], block):
        part = x[..., cols]
        top = part.amax(-1, keepdim=True)
        m_new = torch.maximum(m, top) if carry else top
        shift = m_new.masked_fill(m_new == INF, 0.0)
        # inverted, a row's first block gives exp(shift + inf) = inf and 0 * inf = NaN, as the
        # learner's code does
        factor = torch.exp(shift - m) if inverted else torch.exp(m - shift)
        l = l * (factor if rescale else 1.0) + torch.exp(part - shift).sum(-1, keepdim=True)
        m = m_new
    return torch.exp(x - m) / l


def softmax_bug(output, x, block: int) -> str | None:
    if output.dtype != torch.float64:
        return None
    if close(output, simulate_softmax(x, block, inverted=True)):
        return _(SOFTMAX_INVERTED)
    return None
