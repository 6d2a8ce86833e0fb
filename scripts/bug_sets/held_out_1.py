# ruff: noqa: E501
"""Written after the hints of the first set were done, and never tuned against: the honest figure
for bugs the checks had not seen when they were written. (Now that they have been read, a new
held-out set goes in a file of its own, written by someone who has not read the hints.)"""

ROLE = "held-out"

# (class, the check whose exercise holds the bug, solutions/<file>, exact snippet, the bug,
#  regex the first message must match to name it, what the bug is)
BUGS = [
    ('', '00.batched_dot', 'warmup.py', 'return (a * b).sum(dim=-1)', 'return (a * b).sum(dim=-1, keepdim=True)', 'keepdim|one number per pair', 'keepdim=True keeps a size-1 axis'),
    ('', '01.stable_softmax', 'softmax.py', 'return exponentials / exponentials.sum(dim=dim, keepdim=True)', 'return exponentials / exponentials.sum(dim=dim)', 'keepdim', 'sum without keepdim'),
    ('', '01.stable_softmax', 'softmax.py', 'shifted = x - x.amax(dim=dim, keepdim=True)', 'shifted = (x - x.amax(dim=dim, keepdim=True)).to(torch.float32)', 'float32', 'shifted scores in float32'),
    ('', '01.scaled_scores', 'softmax.py', 'return q @ k.transpose(-2, -1) / math.sqrt(c)', "return torch.einsum('...qc,...kc->...qk', q, k) / c", 'sqrt\\(c\\) twice|by c |square root', 'einsum, divided by c'),
    ('', '02.causal_mask', 'attention.py', 'return torch.ones(n, n, dtype=torch.bool).tril()', 'return torch.tril(torch.ones(n, n)).bool().T', 'j <= i|lower triangle|rows and columns', 'the transposed triangle'),
    ('', '02.attention_forward', 'attention.py', 'return attention_weights(q, k, bias=bias, mask=mask) @ v', 'return (attention_weights(q, k, bias=bias, mask=mask) @ v) / v.shape[-2]', 'weights @ v|mix the values', 'output divided by the number of keys'),
    ('', '03.split_heads', 'mha.py', 'return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)', 'return x.unflatten(-1, (width // N_head, N_head)).transpose(-3, -2)', '\\(N_head, c\\)|channel block|places', 'last axis unflattened as (c, N_head)'),
    ('', '04.pair_bias', 'bias.py', 'return bias.movedim(-1, -3)  # (*, N_head, R, R)', 'return bias.permute(*range(bias.ndim - 3), -1, -2, -3)  # (*, N_head, R, R)', 'i and j|swapped', 'a permute that reverses i and j too'),
    ('', '05.masked_mean', 'mha.py', 'total = (x * weights).sum(dim=dim)', 'total = (x * weights).sum(dim=-2)', '`dim`|over dim|dim=dim', 'sum over a fixed axis'),
    ('', '06.gate', 'mha.py', 'o = torch.sigmoid(self.linear_g(x)) * o', 'o = torch.tanh(self.linear_g(x)) * o', 'sigmoid', 'tanh instead of the sigmoid'),
    ('', '07.sinusoidal_encoding', 'transformer.py', 'pe[:, 1::2] = torch.cos(angle)', 'pe[:, 1::2] = torch.sin(angle)', 'cos', 'sin on the odd channels too'),
    ('', '07.rope', 'transformer.py', 'angle = torch.cat([angle, angle], dim=-1)', 'angle = torch.cat([angle, -angle], dim=-1)', 'same angle|both halves', 'the second half turned backwards'),
    ('', '07.rms_norm', 'transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)', 'rms = torch.sqrt(x.pow(2).mean(dim=-2, keepdim=True) + self.eps)  # (*, 1)', 'last axis|dim=-1', 'the mean over axis -2'),
    ('', '07.decoder_block', 'transformer.py', 'return h + self.ffn(self.norm_ffn(h))', 'return self.norm_ffn(h + self.ffn(h))', 'pre-norm|inside each branch', 'post-norm feed-forward branch'),
    ('', '07.cross_attention', 'transformer.py', 'q = split_heads(self.linear_q(x), self.n_heads)  # (*, n_heads, L_q, c)', 'q = split_heads(self.linear_q(memory), self.n_heads)  # (*, n_heads, L_q, c)', 'linear_q\\(x\\)|queries from x|decoder position', 'queries from memory'),
    ('', '08.gate_elementwise', 'gated_attention.py', 'logits = self.gate_proj(x)  #', 'logits = self.gate_proj(x.detach())  #', 'gradient', 'x detached before the gate'),
    ('', '02.causal_mask', 'attention.py', 'return torch.ones(n, n, dtype=torch.bool).tril()', 'return torch.ones(n, n, dtype=torch.bool).tril(-1)', 'may see itself|diagonal', 'diagonal excluded (cascade into the block and the gates)'),
    ('', '03.merge_heads', 'mha.py', 'return x.transpose(-3, -2).reshape(*batch, L, N_head * c)', 'return x.reshape(*batch, L, N_head * c)', 'transpose back|places', 'no transpose back (cascade)'),
]
