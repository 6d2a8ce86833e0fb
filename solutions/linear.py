"""Lesson 10: route two, change the math so that no L x L matrix exists.

Softmax attention weighs key j for query i by exp(q_i · k_j) / sum_j' exp(q_i · k_j'): the
exponential ties every query to every key, so something of size L x L (or, with lesson 09's tiles,
L x L work) is unavoidable. Linear attention (Katharopoulos et al. 2020) replaces exp(q · k) by
phi(q) · phi(k), with a feature map phi whose values are positive (phi(x) = elu(x) + 1). Then the
sum over keys can be taken before the query arrives:

    out_i = phi(q_i)ᵀ (sum_j phi(k_j) v_jᵀ) / phi(q_i)ᵀ (sum_j phi(k_j))
          = phi(q_i)ᵀ S / phi(q_i)ᵀ z,   S (d, e) and z (d,) whatever L is.

With a causal mask the sums run over j <= i, and S, z become the state of a recurrent network:
S += phi(k_t) v_tᵀ, z += phi(k_t) per token. Three forms compute the same output: the quadratic
masked form (an L x L matrix, for clarity), the recurrence (a (d, e) state), and the chunked form
(the quadratic form inside a chunk, the state between chunks). A decayed state h = a_t h + k_t v_tᵀ
(Mamba-2's scalar decay, GLA's gate per channel) forgets at a rate the model chooses; its quadratic
form masks q kᵀ by a decay matrix. Nyström attention (Xiong et al. 2021) keeps the softmax and
approximates its L x L matrix through m landmarks, segment means of the queries and keys.

Every exercise computes in at least float32 (`accumulation_dtype`) and returns the input's dtype:
in float16 the normaliser phi(q)ᵀ z of a few hundred tokens exceeds float16's largest number.
"""
import torch
import torch.nn.functional as F

from .tiled import key_blocks


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = elu(x) + 1, elementwise: positive, so every weight phi(q) · phi(k) is positive
    and the normaliser never vanishes (Katharopoulos et al. 2020's feature map)."""
    return F.elu(x) + 1


def accumulation_dtype(t: torch.Tensor) -> torch.dtype:
    """The dtype to accumulate in: float32 for float16 and bfloat16 inputs, else t's own.

    Sums over many tokens outgrow float16 (largest number 65,504) and lose bfloat16's 8 bits of
    precision; fla's reference code computes in float32 and casts the output back."""
    return torch.promote_types(t.dtype, torch.float32)


def linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     causal: bool = True) -> torch.Tensor:
    """Linear attention in its quadratic form: weights phi(q) phi(k)ᵀ, normalised per query.

    q: (*, L_q, d), k: (*, L_k, d), v: (*, L_k, e); causal needs L_q == L_k (query i sees keys
    j <= i). returns (*, L_q, e) in q's dtype:
        out = W v / rowsum(W), W = phi(q) phi(k)ᵀ (*, L_q, L_k), lower-triangular when causal.
    phi (`feature_map`) applies to queries and keys only, never to the values; the normaliser of
    query i sums its own row of W (over the keys). Compute in accumulation_dtype(q).
    """
    # BEGIN SOLUTION lesson 10
    # Hint: work = accumulation_dtype(q); phi_q, phi_k = feature_map(q.to(work)), feature_map(k.to(work)).
    # Hint: W = phi_q @ phi_kᵀ, W.tril() when causal; out = (W @ v) / W.sum(-1, keepdim=True).
    work = accumulation_dtype(q)
    phi_q, phi_k = feature_map(q.to(work)), feature_map(k.to(work))
    weights = phi_q @ phi_k.transpose(-2, -1)  # (*, L_q, L_k), all positive
    if causal:
        weights = weights.tril()
    out = (weights @ v.to(work)) / weights.sum(dim=-1, keepdim=True)
    return out.to(q.dtype)
    # END SOLUTION


def linear_attention_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, state=None):
    """Causal linear attention as a recurrent network, one token at a time.

    q, k: (*, L, d), v: (*, L, e). state: None (start from S = 0, z = 0) or (S, z) from an earlier
    call on the same sequences, S (*, d, e), z (*, d): the call then continues them.
    For t = 0 .. L-1:  S += phi(k_t) v_tᵀ,  z += phi(k_t),  out_t = phi(q_t)ᵀ S / phi(q_t)ᵀ z.
    returns (out, (S, z)): out (*, L, e) in q's dtype; S and z after the last token, in
    accumulation_dtype(q). Each sequence of the batch (*) has its own state, and a call without a
    state starts from zero, whatever was called before.
    """
    # BEGIN SOLUTION lesson 10
    # Hint: S = zeros (*, d, e), z = zeros (*, d), out = empty (*, L, e): q.new_zeros(..., dtype=work).
    # Hint: per token t: q_t, k_t = feature_map of q[..., t, :], k[..., t, :] (in work);
    # Hint: S = S + k_t[..., :, None] * v_t[..., None, :]; z = z + k_t; then out[..., t, :] =
    # Hint: (q_t @ S) / (q_t * z).sum(-1): the token's own key counts.
    work = accumulation_dtype(q)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    d, e = k.shape[-1], v.shape[-1]
    if state is None:
        S, z = q.new_zeros(*batch, d, e, dtype=work), q.new_zeros(*batch, d, dtype=work)
    else:
        S, z = (t.to(work) for t in state)
    out = q.new_empty(*batch, q.shape[-2], e, dtype=work)
    for t in range(q.shape[-2]):  # phi token by token: nothing of length L but the output
        q_t, k_t = feature_map(q[..., t, :].to(work)), feature_map(k[..., t, :].to(work))
        S = S + k_t[..., :, None] * v[..., t, None, :].to(work)  # (*, d, e): add phi(k_t) v_tᵀ
        z = z + k_t
        out[..., t, :] = (q_t[..., None, :] @ S).squeeze(-2) / (q_t * z).sum(-1, keepdim=True)
    return out.to(q.dtype), (S, z)
    # END SOLUTION


def linear_attention_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             chunk: int = 64) -> torch.Tensor:
    """Causal linear attention, `chunk` tokens at a time: the state between chunks, the
    quadratic form inside one.

    q, k: (*, L, d), v: (*, L, e); L need not be a multiple of chunk. returns (*, L, e) in q's
    dtype, equal to linear_attention(q, k, v, causal=True).
    For each chunk c (rows r), with S, z the sums over every EARLIER chunk (exclusive state):
        W = tril(phi(q_r) phi(k_r)ᵀ)                 the chunk's own (chunk, chunk) weights
        out_r = (phi(q_r) S + W v_r) / (phi(q_r) z + rowsum(W))
    and only then S += phi(k_r)ᵀ v_r, z += sum of phi(k_r). Never holds more than one chunk's
    weights, and a state (d, e).
    """
    # BEGIN SOLUTION lesson 10
    # Hint: S, z start at zero; for rows in key_blocks(L, chunk): phi of the chunk's q and k, the
    # Hint: inter-chunk part phi(q_c) @ S with the state BEFORE this chunk's keys are added, plus
    # Hint: the chunk's masked weights @ v_c; then S = S + phi(k_c)ᵀ v_c, z = z + its sum.
    work = accumulation_dtype(q)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    d, e = k.shape[-1], v.shape[-1]
    S, z = q.new_zeros(*batch, d, e, dtype=work), q.new_zeros(*batch, d, 1, dtype=work)
    out = q.new_empty(*batch, q.shape[-2], e, dtype=work)
    for rows in key_blocks(q.shape[-2], chunk):  # phi chunk by chunk
        q_c, k_c = feature_map(q[..., rows, :].to(work)), feature_map(k[..., rows, :].to(work))
        v_c = v[..., rows, :].to(work)
        weights = (q_c @ k_c.transpose(-2, -1)).tril()  # (*, chunk, chunk)
        numerator = q_c @ S + weights @ v_c
        normaliser = q_c @ z + weights.sum(dim=-1, keepdim=True)
        out[..., rows, :] = numerator / normaliser
        S = S + k_c.transpose(-2, -1) @ v_c  # now include this chunk, for the next ones
        z = z + k_c.sum(dim=-2).unsqueeze(-1)
    return out.to(q.dtype)
    # END SOLUTION


def linear_attention_cumsum(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal linear attention with every prefix state at once: cumsum of phi(k_t) v_tᵀ over t.

    q, k: (*, L, d), v: (*, L, e); returns (*, L, e). The same output as the recurrence, but it
    holds all L states, (*, L, d, e): memory linear in L, which the recurrence and the chunked
    form avoid (the causal sums of Katharopoulos et al. 2020, all kept at once).
    """
    work = accumulation_dtype(q)
    phi_q, phi_k, v = feature_map(q.to(work)), feature_map(k.to(work)), v.to(work)
    states = torch.cumsum(phi_k[..., :, None] * v[..., None, :], dim=-3)  # (*, L, d, e)
    normalisers = torch.cumsum(phi_k, dim=-2)  # (*, L, d)
    numerator = (phi_q[..., None, :] @ states).squeeze(-2)
    return (numerator / (phi_q * normalisers).sum(-1, keepdim=True)).to(q.dtype)


def decayed_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, log_a: torch.Tensor,
                      state=None):
    """A decayed (gated) linear recurrence: the state forgets by a factor a_t at each token.

    q, k: (*, L, d), v: (*, L, e), log_a: (*, L), log of the decay a_t in (0, 1] (log_a <= 0).
    state: None (h = 0) or h (*, d, e) from an earlier call, which is then continued.
    For t = 0 .. L-1:  h = a_t h + k_t v_tᵀ  (decay first, then add the token),  out_t = q_tᵀ h.
    No feature map and no normaliser (as in GLA and Mamba-2). returns (out, h): out (*, L, e) in
    q's dtype, h after the last token in accumulation_dtype(q).
    """
    # BEGIN SOLUTION lesson 10
    # Hint: a_t = exp(log_a[..., t]); h = a_t[..., None, None] * h + k_t[..., :, None] * v_t[..., None, :];
    # Hint: the decay multiplies the OLD state only: the current token enters undecayed.
    dtype, work = q.dtype, accumulation_dtype(q)
    q, k, v, log_a = q.to(work), k.to(work), v.to(work), log_a.to(work)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], log_a.shape[:-1])
    h = q.new_zeros(*batch, k.shape[-1], v.shape[-1]) if state is None else state.to(work)
    out = v.new_empty(*batch, q.shape[-2], v.shape[-1])
    for t in range(q.shape[-2]):
        a_t = torch.exp(log_a[..., t, None, None])
        h = a_t * h + k[..., t, :, None] * v[..., t, None, :]
        out[..., t, :] = (q[..., t, None, :] @ h).squeeze(-2)
    return out.to(dtype), h
    # END SOLUTION


def decayed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      log_a: torch.Tensor) -> torch.Tensor:
    """The decayed recurrence in quadratic form: q kᵀ masked by the decay matrix.

    q, k: (*, L, d), v: (*, L, e), log_a: (*, L) (log_a <= 0). returns (*, L, e) in q's dtype,
    equal to decayed_recurrent(q, k, v, log_a)[0]:
        out = (D ∘ q kᵀ) v,  D_ts = a_{s+1} · ... · a_t = exp(c_t - c_s) for s <= t, 0 for s > t,
    with c = cumsum(log_a) (Mamba-2's 1-semiseparable mask L). Sum the decays in log space:
    a ratio of cumulative products prod(a)_t / prod(a)_s underflows to 0/0 in a few hundred
    tokens. Mask s > t to -inf BEFORE the exp: exp(c_t - c_s) there can overflow.
    """
    # BEGIN SOLUTION lesson 10
    # Hint: c = torch.cumsum(log_a, -1); diff = c[..., :, None] - c[..., None, :] (*, L, L);
    # Hint: diff.masked_fill(s > t, -inf) then exp: D = 1 on the diagonal, 0 above it.
    dtype, work = q.dtype, accumulation_dtype(q)
    q, k, v, log_a = q.to(work), k.to(work), v.to(work), log_a.to(work)
    c = torch.cumsum(log_a, dim=-1)  # (*, L)
    L = q.shape[-2]
    future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(diagonal=1)
    decay = torch.exp((c[..., :, None] - c[..., None, :]).masked_fill(future, float("-inf")))
    return ((decay * (q @ k.transpose(-2, -1))) @ v).to(dtype)
    # END SOLUTION


def landmark_means(x: torch.Tensor, m: int, mask: torch.Tensor | None = None) -> torch.Tensor:
    """m landmarks of a sequence: the means of m consecutive segments of its real tokens.

    x: (*, L, c); mask: None or bool (*, L), False marks padding. returns (*, m, c).
    The n real tokens of a sequence (n = L without a mask) are numbered 0 .. n-1 in order, and
    token number p belongs to segment p * m // n: with m dividing n, segments of n / m tokens
    (Nyströmformer's segment means). Padding belongs to no segment, so a padded sequence has the
    landmarks of the same sequence unpadded. A sequence needs at least m real tokens (an empty
    segment gives a zero landmark).
    """
    # BEGIN SOLUTION lesson 10
    # Hint: number the real tokens (cumsum of the mask, minus 1), n = real tokens per sequence;
    # Hint: segment = number * m // n; a one-hot (*, m, L) of the segments, zero at padding,
    # Hint: divided by each segment's count, times x.
    if mask is None:
        mask = torch.ones(x.shape[:-1], dtype=torch.bool, device=x.device)
    real = mask.to(torch.int64)
    number = torch.cumsum(real, dim=-1) - 1  # (*, L): the rank of each real token
    n = real.sum(dim=-1, keepdim=True).clamp_min(1)  # (*, 1)
    segment = number * m // n  # (*, L), in 0 .. m-1 for real tokens
    ids = torch.arange(m, device=x.device)
    member = (segment[..., None, :] == ids[:, None]) & mask[..., None, :]  # (*, m, L)
    weights = member.to(x.dtype)
    weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1.0)
    return weights @ x
    # END SOLUTION


def iterative_pinv(a: torch.Tensor, iterations: int = 6) -> torch.Tensor:
    """An approximate Moore-Penrose inverse of each (m, m) matrix of a (*, m, m), by the
    iteration Nyströmformer uses (Xiong et al. 2021, and its code's `iterative_inv`):

        Z_0 = aᵀ / (max column sum of |a|) (the rows of a softmax sum to 1),
        Z <- Z (13 I - a Z (15 I - a Z (7 I - a Z))) / 4,   `iterations` times.

    Six iterations are its code's default; a few iterations behave better than an exact
    pseudo-inverse of a nearly singular a (the lesson measures both)."""
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
    z = a.transpose(-2, -1) / a.abs().sum(dim=-2).amax(dim=-1)[..., None, None]
    for _ in range(iterations):
        az = a @ z
        z = 0.25 * z @ (13 * eye - az @ (15 * eye - az @ (7 * eye - az)))
    return z


def nystrom_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: int,
                      mask: torch.Tensor | None = None, inverse=iterative_pinv) -> torch.Tensor:
    """Nyström approximation of softmax attention through m landmarks (Xiong et al. 2021).

    q: (*, L, c), k: (*, L, c), v: (*, L, e); mask: None or bool (*, L), False marks padded keys.
    With q~ = landmark_means(q, m, mask), k~ = landmark_means(k, m, mask) (*, m, c), and every
    softmax of scores scaled by 1/sqrt(c):
        F = softmax(q k~ᵀ) (*, L, m),  A = softmax(q~ k~ᵀ) (*, m, m),
        B = softmax(q~ kᵀ, padded keys masked) (*, m, L),
        out = F · inverse(A) · (B v)     (*, L, e), in q's dtype,
    inverse being `iterative_pinv` (the paper's) unless another is given (torch.linalg.pinv).
    Nothing of size L x L; with m = L (one token per segment) and an exact inverse it is softmax
    attention, and with m = 1 every query receives softmax(mean(q) kᵀ / sqrt(c)) v: lesson 05's
    global attention.
    Computed in accumulation_dtype(q).
    """
    # BEGIN SOLUTION lesson 10
    # Hint: q_l, k_l = landmark_means(q, m, mask), landmark_means(k, m, mask); scale = c ** -0.5;
    # Hint: B's scores masked_fill(~mask[..., None, :], -inf) before softmax; F @ (inverse(A) @ (B @ v)).
    dtype, work = q.dtype, accumulation_dtype(q)
    q, k, v = q.to(work), k.to(work), v.to(work)
    scale = q.shape[-1] ** -0.5
    q_l, k_l = landmark_means(q, m, mask), landmark_means(k, m, mask)
    f = torch.softmax(q @ k_l.transpose(-2, -1) * scale, dim=-1)  # (*, L, m)
    a = torch.softmax(q_l @ k_l.transpose(-2, -1) * scale, dim=-1)  # (*, m, m)
    b_scores = q_l @ k.transpose(-2, -1) * scale  # (*, m, L)
    if mask is not None:
        b_scores = b_scores.masked_fill(~mask[..., None, :], float("-inf"))
    b = torch.softmax(b_scores, dim=-1)
    return (f @ (inverse(a) @ (b @ v))).to(dtype)
    # END SOLUTION
