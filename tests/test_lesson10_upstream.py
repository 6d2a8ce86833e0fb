"""Lesson 10's forms against the libraries' own reference code, restated here (neither library
installs on a CPU-only machine: fla needs Triton, mamba_ssm compiles CUDA kernels).

- fla-org/flash-linear-attention, `naive_recurrent_gla` (fla/ops/gla/naive.py, read at commit
  0315a70ea55304398ad372e56cdd211ce0119571): the recurrence of GLA, h = exp(gk_t) ⊙ h + k_t v_tᵀ
  with a log decay per key channel and q scaled by K^-0.5. Given the same decay on every channel
  it is the lesson's `decayed_recurrent` on q · K^-0.5.
- the same repository, `naive_recurrent_linear_attn` and `naive_chunk_linear_attn`
  (fla/ops/linear_attn/naive.py, read at commit 20ceee5295631b9c76e2334c1613fb13576829c9): linear
  attention without a feature map or normaliser (their defaults), token by token, and in chunks
  of 64 with the exclusive state as a cumulative sum shifted by one chunk. They are the lesson's
  decayed forms with no decay (log_a = 0), on q · K^-0.5.
- state-spaces/mamba, `segsum` and `ssd_minimal_discrete` (mamba_ssm/modules/ssd_minimal.py, read
  at commit e9594ce1c732d97440f0332fdc43170a2294dbfa, "the same as Listing 1" of Dao & Gu 2024):
  Mamba-2's SSD layer computed in chunks, the decay matrix built by `segsum` in log space. With
  C as queries, B as keys, X as values and A as the log decays it is the lesson's
  `decayed_attention`, and its final state the transpose of `decayed_recurrent`'s.

Each is restated line for line with torch operations in place of einops, in float64 (fla's casts
its inputs to float32; the algorithm is unchanged), so that the comparison can hold to 1e-12.
"""
import torch
import torch.nn.functional as F

from solutions.linear import decayed_attention, decayed_recurrent


def naive_recurrent_gla(q, k, v, gk):
    """fla's naive_recurrent_gla: q, k, gk (B, T, H, K), v (B, T, H, V) -> o (B, T, H, V), h."""
    q, k, v, gk = (x.transpose(1, 2) for x in (q, k, v, gk))  # fla: .float(); here float64
    B, H, T, K, V = *q.shape, v.shape[-1]
    o = torch.zeros_like(v)
    scale = K ** -0.5
    h = q.new_zeros(B, H, K, V)
    for i in range(T):
        q_i = q[:, :, i] * scale
        k_i = k[:, :, i]
        v_i = v[:, :, i]
        gk_i = gk[:, :, i].exp()
        kv_i = k_i[..., None] * v_i[..., None, :]
        h = h * gk_i[..., None] + kv_i
        o[:, :, i] = (q_i[..., None] * h).sum(-2)
    return o.transpose(1, 2), h


def naive_recurrent_linear_attn(q, k, v):
    """fla's naive_recurrent_linear_attn with its defaults (no initial state, scale K^-0.5,
    normalize=False): q, k (B, T, H, K), v (B, T, H, V) -> o (B, T, H, V), S (B, H, K, V)."""
    scale = q.shape[-1] ** -0.5
    B, T, H, K, V = *q.shape, v.shape[-1]
    o = torch.empty_like(v)
    S = torch.zeros((B, H, K, V), dtype=q.dtype)
    for t in range(T):
        S = S + torch.einsum('b h k, b h v -> b h k v', k[:, t], v[:, t])
        o[:, t] = torch.einsum('b h k v, b h k -> b h v', S, q[:, t] * scale)
    return o, S


def naive_chunk_linear_attn(q, k, v, chunk_size=64):
    """fla's naive_chunk_linear_attn (normalize=False): q, k (B, T, H, K), v (B, T, H, V), T a
    multiple of 64 -> o (B, T, H, V)."""
    scale = q.shape[-1] ** -0.5

    def chunks(x):  # 'b (n c) h d -> b h n c d'
        B, T, H, D = x.shape
        return x.reshape(B, T // chunk_size, chunk_size, H, D).permute(0, 3, 1, 2, 4)

    q, k, v = chunks(q) * scale, chunks(k), chunks(v)
    kv = k.transpose(-1, -2) @ v
    kv = kv.cumsum(2)
    kv = torch.cat([torch.zeros_like(kv[:, :, :1]), kv[:, :, :-1]], dim=2)
    inter = q @ kv
    intra = ((q @ k.transpose(-1, -2)).masked_fill_(
        torch.triu(torch.ones(chunk_size, chunk_size, dtype=bool), diagonal=1), 0)) @ v
    o = inter + intra
    B, H, N, C, D = o.shape  # 'b h n c d -> b (n c) h d'
    return o.permute(0, 2, 3, 1, 4).reshape(B, N * C, H, D)


def segsum(x):
    """mamba_ssm's segsum: the sums of x over (s, t], -inf above the diagonal."""
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)  # repeat "... d -> ... d e"
    mask = torch.tril(torch.ones(T, T, dtype=bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, dtype=bool), diagonal=0)
    x_segsum = x_segsum.masked_fill(~mask, -torch.inf)
    return x_segsum


def ssd_minimal_discrete(X, A, B, C, block_len):
    """mamba_ssm's ssd_minimal_discrete (no initial states): X (b, l, h, p), A (b, l, h),
    B, C (b, l, h, n) -> Y (b, l, h, p), final_state (b, h, p, n)."""
    b, length = X.shape[:2]
    X, A, B, C = [x.reshape(b, length // block_len, block_len, *x.shape[2:]) for x in (X, A, B, C)]
    A = A.permute(0, 3, 1, 2)  # "b c l h -> b h c l"
    A_cumsum = torch.cumsum(A, dim=-1)
    L = torch.exp(segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, L, X)
    decay_states = torch.exp((A_cumsum[:, :, :, -1:] - A_cumsum))
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay_states, X)
    initial_states = torch.zeros_like(states[:, :1])
    states = torch.cat([initial_states, states], dim=1)
    decay_chunk = torch.exp(segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states, final_state = new_states[:, :-1], new_states[:, -1]
    state_decay_out = torch.exp(A_cumsum)
    Y_off = torch.einsum('bclhn,bchpn,bhcl->bclhp', C, states, state_decay_out)
    Y = (Y_diag + Y_off).reshape(b, length, *Y_diag.shape[3:])  # "b c l h p -> b (c l) h p"
    return Y, final_state


def _inputs(B=2, T=128, H=3, K=8, V=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, T, H, K, generator=generator, dtype=torch.float64) for _ in range(2))
    v = torch.randn(B, T, H, V, generator=generator, dtype=torch.float64)
    log_a = torch.log(0.5 + 0.5 * torch.rand(B, T, H, generator=generator, dtype=torch.float64))
    return q, k, v, log_a


def _heads_first(*tensors):
    """(B, T, H, ...) -> (B, H, T, ...), the lesson's layout."""
    return [t.transpose(1, 2) for t in tensors]


def test_fla_naive_recurrent_gla_equals_decayed_recurrent():
    q, k, v, log_a = _inputs()
    gk = log_a[..., None].expand_as(q)  # the same decay on every key channel: Mamba-2's scalar
    theirs, h_theirs = naive_recurrent_gla(q, k, v, gk)
    qh, kh, vh, ah = _heads_first(q * q.shape[-1] ** -0.5, k, v, log_a)
    mine, h_mine = decayed_recurrent(qh, kh, vh, ah)
    assert (mine.transpose(1, 2) - theirs).abs().max() < 1e-12
    assert (h_mine - h_theirs).abs().max() < 1e-12
    assert (decayed_attention(qh, kh, vh, ah).transpose(1, 2) - theirs).abs().max() < 1e-12


def test_fla_naive_linear_attention_equals_the_forms_without_decay():
    q, k, v, _ = _inputs(seed=1)
    recurrent, S = naive_recurrent_linear_attn(q, k, v)
    chunked = naive_chunk_linear_attn(q, k, v)
    assert (recurrent - chunked).abs().max() < 1e-12
    qh, kh, vh = _heads_first(q * q.shape[-1] ** -0.5, k, v)
    no_decay = torch.zeros(qh.shape[:-1], dtype=torch.float64)
    mine, h = decayed_recurrent(qh, kh, vh, no_decay)
    assert (mine.transpose(1, 2) - recurrent).abs().max() < 1e-12
    assert (h - S).abs().max() < 1e-12
    assert (decayed_attention(qh, kh, vh, no_decay).transpose(1, 2) - chunked).abs().max() < 1e-12


def test_mamba2_ssd_minimal_equals_decayed_attention():
    C, B, X, A = _inputs(seed=2, T=192, K=6, V=4)  # queries, keys, values, log decays
    Y, final_state = ssd_minimal_discrete(X, A, B, C, block_len=64)
    qh, kh, vh, ah = _heads_first(C, B, X, A)
    mine = decayed_attention(qh, kh, vh, ah)
    assert (mine.transpose(1, 2) - Y).abs().max() < 1e-12
    _, h = decayed_recurrent(qh, kh, vh, ah)
    assert (h.transpose(-2, -1) - final_state).abs().max() < 1e-12
