# ruff: noqa: E501
"""Bugs of the kinds every check now carries (bfloat16, randomness, a None returned, a gradient
that never arrives, a mask's polarity, a finite fill, rows of large scores, the device) and of
each lesson's central idea, written while the checks and hints for them were built: tuned, so
these figures are not a held-out measure. None of them is in the mutation suite."""

ROLE = "tuned"

GLOBAL_MASK = ("        key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
               "        o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, N_head, 1, c)")
WEIGHTS = ('    scores = scores.masked_fill(~mask, float("-inf"))\n'
           "    # a row that is all -inf would give (-inf) - (-inf) = NaN; zero it instead\n"
           "    sees_something = mask.expand_as(scores).any(dim=-1, keepdim=True)\n"
           "    scores = scores.masked_fill(~sees_something, 0.0)\n"
           "    return stable_softmax(scores, dim=-1) * sees_something")

# (class, the check whose exercise holds the bug, solutions/<file>, exact snippet, the bug,
#  regex the first message must match to name it, what the bug is)
BUGS = [
    # bfloat16: right in float64 and float32, float32 out of bfloat16 inputs
    ("bfloat16", "00.batched_dot", "warmup.py", "return (a * b).sum(dim=-1)",
     "return torch.zeros(torch.broadcast_shapes(a.shape, b.shape)[:-1]) + (a * b).sum(dim=-1)",
     r"float32 for bfloat16", "a float32 zeros tensor added to the result"),
    ("bfloat16", "04.pair_bias", "bias.py", "bias = self.linear_z(self.layer_norm_z(z))  # (*, R, R, N_head)",
     "bias = self.linear_z(self.layer_norm_z(z)) * torch.ones(self.linear_z.out_features)  # (*, R, R, N_head)",
     r"float32 for bfloat16", "a per-head scale of torch.ones (float32)"),
    ("bfloat16", "02.attention_weights", "attention.py", WEIGHTS,
     '    scores = scores.masked_fill(~mask, float("-inf"))\n'
     "    sees_something = mask.expand_as(scores).any(dim=-1, keepdim=True)\n"
     "    scores = scores.masked_fill(~sees_something, 0.0)\n"
     "    return stable_softmax(scores, dim=-1) * sees_something.to(torch.float32)",
     r"float32 for bfloat16", "the row flags cast to float32"),
    # randomness
    ("randomness", "06.gate", "mha.py", "o = torch.sigmoid(self.linear_g(x)) * o",
     "o = torch.sigmoid(self.linear_g(x)) * torch.nn.functional.dropout(o, 0.1)",
     r"random|dropout", "F.dropout on the attention output, on in eval"),
    ("randomness", "07.cross_attention", "transformer.py",
     "o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, n_heads, L_q, c)",
     "o = torch.dropout(scaled_dot_product_attention(q, k, v, mask=key_mask), 0.1, True)  # (*, n_heads, L_q, c)",
     r"random|dropout", "torch.dropout with train=True"),
    ("randomness", "05.global_attention", "mha.py", "o = o.squeeze(-2).flatten(-2)  # (*, N_head*c)",
     "o = torch.nn.functional.dropout(o.squeeze(-2).flatten(-2), 0.2)  # (*, N_head*c)",
     r"random|dropout", "dropout on the global summary"),
    ("randomness", "07.decoder_block", "transformer.py",
     "self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))",
     "self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(0.1), nn.Linear(d_ff, d_model))",
     r"random|dropout", "an nn.Dropout in the feed-forward branch"),
    # a None returned
    ("none", "03.merge_heads", "mha.py", "return x.transpose(-3, -2).reshape(*batch, L, N_head * c)",
     "x = x.transpose(-3, -2).reshape(*batch, L, N_head * c)", r"returned None", "merge_heads returns nothing"),
    ("none", "04.broadcastable_bias", "bias.py", "return bias.view(*batch, *(1,) * n, *bias.shape[-3:])",
     "bias = bias.view(*batch, *(1,) * n, *bias.shape[-3:])", r"returned None", "the view is assigned, not returned"),
    ("none", "06.gate", "mha.py", "return self.linear_o(o).movedim(-2, self.attn_dim)",
     "out = self.linear_o(o).movedim(-2, self.attn_dim)", r"returned None", "forward returns nothing"),
    # a gradient that never arrives, or that is partly cut
    ("gradients", "04.pair_bias", "bias.py", "bias = self.linear_z(self.layer_norm_z(z))  # (*, R, R, N_head)",
     "bias = self.linear_z(self.layer_norm_z(z.detach()))  # (*, R, R, N_head)",
     r"no gradient (reaches|arrived).*\bz\b|gradient reaches z", "z detached"),
    ("gradients", "07.cross_attention", "transformer.py",
     "k = split_heads(self.linear_k(memory), self.n_heads)  # (*, n_heads, L_k, c)",
     "k = split_heads(self.linear_k(memory.detach()), self.n_heads)  # (*, n_heads, L_k, c)",
     r"gradient with respect to memory", "memory detached on the key path only"),
    ("gradients", "03.merge_heads", "mha.py", "return x.transpose(-3, -2).reshape(*batch, L, N_head * c)",
     "return x.detach().transpose(-3, -2).reshape(*batch, L, N_head * c)",
     r"no gradient (reaches|arrived)", "merge_heads detaches x"),
    # the mask's polarity
    ("polarity", "05.global_attention", "mha.py", GLOBAL_MASK,
     GLOBAL_MASK.replace("else attention_mask[", "else ~attention_mask["),
     r"True and False swapped", "global attention's key mask inverted"),
    ("polarity", "07.decoder_block", "transformer.py", "mask=causal_mask(L).to(h.device))",
     "mask=~causal_mask(L).to(h.device))", r"True and False swapped", "the causal mask inverted"),
    ("polarity", "02.attention_weights", "attention.py", 'scores = scores.masked_fill(~mask, float("-inf"))',
     'scores = torch.where(mask, float("-inf"), scores)', r"polarity|'may attend'",
     "torch.where with its branches swapped"),
    # a finite fill, and scores of large size
    ("finite fill", "02.attention_weights", "attention.py", WEIGHTS,
     "    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
     "    return stable_softmax(scores, dim=-1)", r"1/n|uniform|finite fill",
     "masked with finfo.min, blind rows left as they come"),
    ("large scores", "02.attention_weights", "attention.py", WEIGHTS,
     '    scores = scores.masked_fill(~mask, float("-inf"))\n'
     "    sees_something = mask.expand_as(scores).any(dim=-1, keepdim=True)\n"
     "    scores = scores.masked_fill(~sees_something, 0.0)\n"
     "    e = (scores - scores.amax()).exp()\n"
     "    return e / e.sum(dim=-1, keepdim=True) * sees_something",
     r"own max|each row", "shifted by one global max"),
    # the device
    ("device", "07.decoder_block", "transformer.py", "mask=causal_mask(L).to(h.device))",
     "mask=causal_mask(L))", r"device", "the causal mask left on the CPU"),
    # each lesson's central idea
    ("diagnosis", "00.batched_dot", "warmup.py", "return (a * b).sum(dim=-1)",
     "return (a * b).sum(dim=-2)", r"last axis", "sum over axis -2"),
    ("diagnosis", "01.stable_softmax", "softmax.py",
     "return exponentials / exponentials.sum(dim=dim, keepdim=True)",
     "return exponentials / exponentials.sum(dim=-1, keepdim=True)", r"`dim` argument|dim=dim",
     "the sum along -1 whatever dim says"),
    ("diagnosis", "02.attention_weights", "attention.py", "scores = scaled_scores(q, k)\n",
     "scores = scaled_scores(q, k) * q.shape[-1] ** 0.5\n", r"without the 1/sqrt\(c\)|no scaling",
     "the scale undone"),
    ("diagnosis", "05.masked_mean", "mha.py", "count = weights.sum(dim=dim).clamp_min(1.0)",
     "count = x.shape[dim]", r"count|True positions", "divided by every position, padding included"),
    ("diagnosis", "06.gate", "mha.py", "o = torch.sigmoid(self.linear_g(x)) * o",
     "o = self.linear_g(x) * o", r"sigmoid", "the gate without its sigmoid"),
    ("diagnosis", "08.gate_headwise", "gated_attention.py", "y = y * self.gate_scores(x)",
     "y = y * self.gate_scores(y.flatten(-2))", r"input x|gate_scores\(x\)", "gate from the attention output"),
]
