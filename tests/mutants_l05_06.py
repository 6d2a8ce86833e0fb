"""Realistic bugs for the checks of lessons 05 (global attention) and 06 (gating)."""
from tests.mutation import Mutant
from tests.mutants_l00_02 import CUT, IN_PLACE, SQUEEZED, WRONG_GRADIENT
from tests.mutants_l03_04 import MASK_DIM, POSITIVE

MEAN_NONE = "    if mask is None:\n        return x.mean(dim=dim)\n"
GLOBAL_Q = "q = self.linear_q(masked_mean(x, attention_mask, dim=-2))"
GLOBAL_ATTEND = "o = scaled_dot_product_attention(q, k, v, mask=key_mask)"
GLOBAL_KEY_MASK = ("key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
                   "        " + GLOBAL_ATTEND)
GLOBAL_INIT = "        if is_global:\n            # BEGIN SOLUTION lesson 05"
GATE = "o = torch.sigmoid(self.linear_g(x)) * o"
GATE_AND_OUTPUT = ("            " + GATE + "\n            # END SOLUTION\n"
                   "        return self.linear_o(o).movedim(-2, self.attn_dim)")
GATE_IF = "        if self.gated:\n            # BEGIN SOLUTION lesson 06"

MUTANTS = [
    # 05.masked_mean
    Mutant("05.masked_mean", "mha.py", MEAN_NONE + "    weights", "    weights",
           "mask=None", "crashes without a mask (mask.unsqueeze on None)"),
    Mutant("05.masked_mean", "mha.py", MEAN_NONE, "    return x.mean(dim=dim)\n",
           "not a plain mean", "plain mean: padding rows counted"),
    Mutant("05.masked_mean", "mha.py", "return total / count", "return total / x.shape[dim]",
           "divided by the number of True positions", "masked sum divided by the full length"),
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
    # 06.gate
    Mutant("06.gate", "mha.py", GATE, "o = o", "the gate is not applied",
           "gate ignored entirely"),
    Mutant("06.gate", "mha.py", GATE, "o = self.linear_g(x) * o", "without the sigmoid",
           "sigmoid missing"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(o)) * o",
           "not from the attention output o", "gate computed from o instead of x"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(x)) + o",
           "the gate multiplies o", "gate added instead of multiplied"),
    Mutant("06.gate", "mha.py", GATE_AND_OUTPUT,
           "            pass\n            # END SOLUTION\n"
           "        out = self.linear_o(o)\n"
           "        if self.gated:\n"
           "            out = torch.sigmoid(self.linear_g(x)) * out\n"
           "        return out.movedim(-2, self.attn_dim)",
           "BEFORE linear_o", "gate applied after linear_o"),
    Mutant("06.gate", "mha.py", "self.linear_g.bias.fill_(1.0)", "self.linear_g.bias.fill_(0.0)",
           "weight = 0 and linear_g.bias = 1", "gate starts at sigmoid(0) = 0.5 (the seed's claim)"),
    Mutant("06.gate", "mha.py", "                self.linear_g.weight.zero_()\n", "",
           "weight = 0 and linear_g.bias = 1", "gate weights left at PyTorch's random init"),
    Mutant("06.gate", "mha.py",
           "            with torch.no_grad():\n"
           "                self.linear_g.weight.zero_()\n"
           "                self.linear_g.bias.fill_(1.0)\n", "",
           "sigmoid(1) = 0.73", "no AF2 initialisation at all"),
    Mutant("06.gate", "mha.py", "self.linear_g = nn.Linear(c_in, N_head * c)",
           "self.linear_g = nn.Linear(c_in, N_head * c, bias=False)\n"
           "            self.linear_g.bias = torch.zeros(N_head * c)",
           "WITH a bias", "gate without a learnable bias"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(x.detach())) * o",
           WRONG_GRADIENT, "gate computed from x.detach(): x gets no gradient through the gate"),
    Mutant("06.gate", "mha.py", GATE, "o = torch.sigmoid(self.linear_g(x)).detach() * o",
           CUT + " linear_g.weight, linear_g.bias", "gate detached: linear_g never learns"),
    # 06.full_module
    Mutant("06.full_module", "mha.py", MASK_DIM, "mask_dim = self.attn_dim + 1",
           POSITIVE, "mask axis attn_dim + 1 for every sign: wrong for a positive attn_dim"),
    Mutant("06.full_module", "mha.py", GATE,
           "o = torch.sigmoid(self.linear_g(x.masked_fill_(~attention_mask[..., None], 0.0) "
           "if attention_mask is not None else x)) * o", IN_PLACE,
           "zeroes the padding of the caller's x in place before computing the gate"),
    Mutant("06.full_module", "mha.py", "k = self.linear_k(x).unsqueeze(-3)",
           "k = self.linear_k(x.detach()).unsqueeze(-3)", WRONG_GRADIENT,
           "global keys from x.detach(): x's gradient misses the key path"),
    Mutant("06.full_module", "mha.py", GATE_IF,
           "        if self.gated and not self.is_global:\n            # BEGIN SOLUTION lesson 06",
           "gate the global output too", "no gate on global attention ('same output for all')"),
    Mutant("06.full_module", "mha.py", GATE,
           "o = torch.sigmoid(self.linear_g(x.mean(-2, keepdim=True) if self.is_global "
           "else x)) * o", "comes from each sequence's own x",
           "one gate per column for global attention, from the averaged x"),
    Mutant("06.full_module", "mha.py",
           "self.linear_k = nn.Linear(c_in, c, bias=use_bias_for_embeddings)",
           "self.linear_k = nn.Linear(c_in, c, bias=False)", "global single-head linear_k",
           "use_bias_for_embeddings ignored by the global key projection"),
    Mutant("06.full_module", "mha.py", "o = self._attention(x, bias, attention_mask)",
           "o = self._attention(x, None, attention_mask)", "the bias (N_head, R, R) is added",
           "pair bias dropped"),
    Mutant("06.full_module", "mha.py", "            attention_mask = attention_mask.movedim(mask_dim, -1)\n",
           "", "moves the sequence axis to -2 (x and mask)", "mask left on its own axis"),
    Mutant("06.full_module", "mha.py", "mask_dim = self.attn_dim if self.attn_dim >= 0 else self.attn_dim + 1",
           "mask_dim = self.attn_dim", "the mask hides padded keys",
           "negative attn_dim used on the mask unshifted (the mask has no channel axis)"),
]
