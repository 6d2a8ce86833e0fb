"""Bugs upstream, checks downstream: each cascade puts its bug(s) in a scratch copy of the
solutions (as a student's exercises/) and runs the check of an exercise that calls the buggy one.
The message must name the root cause first (BLOCKED ... by <the failing check>), then say whether
the exercise is right on its own; with COURSE_ISOLATE=1 (the grader's sandboxes) a dependent
passes, and only an exercise's own bug fails it."""
from tests.mutation import Cascade

SCORE = ("softmax.py", "return q @ k.transpose(-2, -1) / math.sqrt(c)",
         "return q @ k.transpose(-2, -1)")

CASCADES = [
    Cascade('02.attention_weights', (SCORE,), (
        'BLOCKED 02.attention_weights by 01.scaled_scores:',
        'your attention_weights calls your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'On its own, your attention_weights is right: with the reference scaled_scores in place of yours, all 19 cases pass.',
    ), 'scaled_scores unscaled'),
    Cascade('02.attention_forward', (SCORE,), (
        'BLOCKED 02.attention_forward by 01.scaled_scores:',
        'your scaled_dot_product_attention calls your attention_weights, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'On its own, your scaled_dot_product_attention is right: with the reference attention_weights in place of yours, all 11 cases pass.',
    ), 'scaled_scores unscaled, two levels up'),
    Cascade('03.multi_head_attention', (SCORE,), (
        'BLOCKED 03.multi_head_attention by 01.scaled_scores:',
        'your MultiHeadAttention calls your scaled_dot_product_attention, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'On its own, your MultiHeadAttention is right: with the reference scaled_dot_product_attention in place of yours, all 24 cases pass.',
    ), 'scaled_scores unscaled, across lessons'),
    Cascade('05.global_attention', (SCORE,), (
        'BLOCKED 05.global_attention by 01.scaled_scores:',
        'your MultiHeadAttention calls your scaled_dot_product_attention, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        '(also blocked by the same: 03.multi_head_attention)',
        'On its own, your MultiHeadAttention is right: with the reference scaled_dot_product_attention in place of yours, all 19 cases pass.',
    ), 'scaled_scores unscaled, across lessons'),
    Cascade('06.full_module', (SCORE,), (
        'BLOCKED 06.full_module by 01.scaled_scores:',
        "this check also runs your MultiHeadAttention's lesson 03 part, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.",
        '(also blocked by the same: 05.global_attention, 06.gate)',
        'On its own, your MultiHeadAttention is right: with the reference MultiHeadAttention._attention, MultiHeadAttention._global_attention in place of yours, all 21 cases pass.',
    ), 'scaled_scores unscaled, across lessons'),
    Cascade('07.decoder_block', (SCORE,), (
        'BLOCKED 07.decoder_block by 01.scaled_scores:',
        'your DecoderBlock calls your scaled_dot_product_attention, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        '(also blocked by the same: 03.multi_head_attention)',
        'On its own, your DecoderBlock is right: with the reference scaled_dot_product_attention in place of yours, all 14 cases pass.',
    ), 'scaled_scores unscaled, across lessons'),
    Cascade('07.cross_attention', (SCORE,), (
        'BLOCKED 07.cross_attention by 01.scaled_scores:',
        'your CrossAttention calls your scaled_dot_product_attention, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'On its own, your CrossAttention is right: with the reference scaled_dot_product_attention in place of yours, all 15 cases pass.',
    ), 'scaled_scores unscaled, across lessons'),
    Cascade('08.gate_headwise', (SCORE,), (
        'BLOCKED 08.gate_headwise by 01.scaled_scores:',
        'your GatedCausalSelfAttention calls your attention_weights, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        '(also blocked by the same: 08.gate_elementwise)',
        'On its own, your GatedCausalSelfAttention is right: with the reference attention_weights in place of yours, all 16 cases pass.',
    ), 'scaled_scores unscaled, across lessons'),
    Cascade('07.decoder_block', (('transformer.py', 'return x * cos + rotated * sin', 'return x * sin + rotated * cos'),), (
        'BLOCKED 07.decoder_block by 07.rope:',
        'your DecoderBlock calls your apply_rope, which fails 07.rope: fix that first.',
        'On its own, your DecoderBlock is right: with the reference apply_rope in place of yours, all 14 cases pass.',
    ), "RoPE's cos and sin swapped"),
    Cascade('07.decoder_block', (('transformer.py', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)', 'rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + self.eps'),), (
        'BLOCKED 07.decoder_block by 07.rms_norm:',
        'your DecoderBlock calls your RMSNorm, which fails 07.rms_norm: fix that first.',
        'On its own, your DecoderBlock is right: with the reference RMSNorm.forward in place of yours, all 14 cases pass.',
    ), "RMSNorm's eps outside the root"),
    Cascade('07.cross_attention', (('mha.py', 'return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)', 'return x.view(*batch, N_head, L, width // N_head)'),), (
        'BLOCKED 07.cross_attention by 03.split_heads:',
        'your CrossAttention calls your split_heads, which fails 03.split_heads: fix that first.',
        'On its own, your CrossAttention is right: with the reference split_heads in place of yours, all 15 cases pass.',
    ), 'split_heads viewed heads first'),
    Cascade('02.attention_weights', (('softmax.py', '    shifted = x - x.amax(dim=dim, keepdim=True)\n    exponentials = shifted.exp()\n    return exponentials / exponentials.sum(dim=dim, keepdim=True)', '    raise NotImplementedError("lesson 01: write stable_softmax in exercises/softmax.py")'),), (
        'BLOCKED 02.attention_weights by 01.stable_softmax:',
        'your attention_weights calls your stable_softmax, which is not written yet (01.stable_softmax): write it first.',
        'On its own, your attention_weights is right: with the reference stable_softmax in place of yours, all 19 cases pass.',
    ), 'stable_softmax not written yet'),
    Cascade('05.global_attention', (('mha.py', 'self.linear_o = nn.Linear(N_head * c, c_in)', 'self.linear_o = nn.Linear(N_head * c, c_in, bias=False)'),), (
        'BLOCKED 05.global_attention by 03.multi_head_attention:',
        "this check also runs your MultiHeadAttention's lesson 03 part, which fails 03.multi_head_attention: fix that first.",
        'It could not be tried on its own: what 03.multi_head_attention checks sits in code no stand-in can replace (a constructor, or forward itself), and this exercise runs that code too.',
    ), 'a bug in the constructor both checks share'),
    Cascade('06.full_module', (('mha.py', 'o = torch.sigmoid(self.linear_g(x)) * o', 'o = self.linear_g(x) * o'),), (
        'BLOCKED 06.full_module by 06.gate:',
        "this check also runs your MultiHeadAttention's lesson 06 part, which fails 06.gate: fix that first.",
        'It could not be tried on its own: what 06.gate checks sits in code no stand-in can replace (a constructor, or forward itself), and this exercise runs that code too.',
    ), "the gate's sigmoid missing: code no stand-in replaces"),
    Cascade('02.attention_forward', (SCORE, ('attention.py', 'return attention_weights(q, k, bias=bias, mask=mask) @ v', 'return attention_weights(q, k, bias=bias, mask=mask) @ k'),), (
        'BLOCKED 02.attention_forward by 01.scaled_scores:',
        'your scaled_dot_product_attention calls your attention_weights, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'It also fails on its own, with the reference attention_weights, scaled_scores in place of yours:',
        "FAIL 02.attention_forward, case '3 queries, 5 keys, c=4, values of width 6':",
        'output shape: expected (3, 6), got (3, 4)',
        'hint: the output is weights @ v: shape (*, q, c_v), here (3, 6)',
    ), 'two bugs: scaled_scores unscaled and keys mixed for values'),
    Cascade('02.attention_weights', (SCORE,), (
    ), 'scaled_scores unscaled', status='PASS', isolate=True),
    Cascade('07.decoder_block', (('transformer.py', 'return x * cos + rotated * sin', 'return x * sin + rotated * cos'),), (
    ), "RoPE's cos and sin swapped", status='PASS', isolate=True),
    Cascade('02.attention_forward', (SCORE, ('attention.py', 'return attention_weights(q, k, bias=bias, mask=mask) @ v', 'return attention_weights(q, k, bias=bias, mask=mask) @ k'),), (
        "FAIL 02.attention_forward, case '3 queries, 5 keys, c=4, values of width 6':",
        'output shape: expected (3, 6), got (3, 4)',
        'hint: the output is weights @ v: shape (*, q, c_v), here (3, 6)',
    ), "two bugs: the exercise's own is charged", status='FAIL', isolate=True),
    Cascade('06.full_module', (('mha.py', 'o = torch.sigmoid(self.linear_g(x)) * o', 'o = self.linear_g(x) * o'),), (
        'BLOCKED 06.full_module by 06.gate:',
        "this check also runs your MultiHeadAttention's lesson 06 part, which fails 06.gate: fix that first.",
        'It could not be tried on its own: what 06.gate checks sits in code no stand-in can replace (a constructor, or forward itself), and this exercise runs that code too.',
    ), "the gate's sigmoid missing", isolate=True),
    # lesson 09: the tiled forward calls scaled_scores; the backward calls both
    Cascade('09.tiled_forward', (SCORE,), (
        'BLOCKED 09.tiled_forward by 01.scaled_scores:',
        'your tiled_attention_forward calls your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'On its own, your tiled_attention_forward is right: with the reference scaled_scores in place of yours, all 25 cases pass.',
    ), 'scaled_scores unscaled, in every tile'),
    Cascade('09.tiled_backward', (SCORE,), (
        'BLOCKED 09.tiled_backward by 01.scaled_scores:',
        'your tiled_attention calls your tiled_attention_forward, and through it your scaled_scores, which fails 01.scaled_scores: fix that first.',
        'On its own, your tiled_attention is right: with the reference scaled_scores, tiled_attention_forward in place of yours, all 17 cases pass.',
    ), 'scaled_scores unscaled, forward and backward'),
    Cascade('09.tiled_backward', (('tiled.py', 'acc_out = acc_out * rescale + p_v', 'acc_out = acc_out + p_v'),), (
        'BLOCKED 09.tiled_backward by 09.tiled_forward:',
        'your tiled_attention calls your tiled_attention_forward, which fails 09.tiled_forward: fix that first.',
        'On its own, your tiled_attention is right: with the reference tiled_attention_forward in place of yours, all 17 cases pass.',
    ), 'the forward forgets to rescale its output accumulator'),
    # lesson 10: Nyström attention calls the landmark means
    Cascade('10.nystrom', (('linear.py', "    member = (segment[..., None, :] == ids[:, None]) & mask[..., None, :]  # (*, m, L)",
                            "    member = segment[..., None, :] == ids[:, None]  # (*, m, L)"),), (
        'BLOCKED 10.nystrom by 10.landmarks:',
        'your nystrom_attention calls your landmark_means, which fails 10.landmarks: fix that first.',
        'On its own, your nystrom_attention is right: with the reference landmark_means in place of yours, all 13 cases pass.',
    ), 'landmarks averaged over padding'),
    Cascade('09.causal_tiles', (('tiled.py', 'acc_out = acc_out * rescale + p_v', 'acc_out = acc_out + p_v'),), (
        'BLOCKED 09.causal_tiles by 09.tiled_forward:',
    ), 'the causal tiles call a forward that forgets to rescale its output accumulator'),
    # BLOCKED hides only what depends on the blocker: a case that calls none of the blocked
    # exercises (the parameter names) still reports, under the BLOCKED line
    Cascade('02.single_head', (SCORE, ('attention.py', 'self.linear_q = nn.Linear(c_in, c, bias=False)', 'self.q_proj = nn.Linear(c_in, c, bias=False)'),
                               ('attention.py', 'q, k, v = self.linear_q(x), self.linear_k(x), self.linear_v(x)', 'q, k, v = self.q_proj(x), self.linear_k(x), self.linear_v(x)')), (
        'BLOCKED 02.single_head by 01.scaled_scores:',
        'It also fails on its own: a case that calls none of attention_weights, scaled_dot_product_attention, scaled_scores fails too:',
        "FAIL 02.single_head, case 'parameters of SingleHeadAttention(6, 4)':",
        'hint: linear_q, linear_k, linear_v: Linear(c_in, c, bias=False); linear_o: Linear(c, c_in) with bias',
    ), 'scaled_scores unscaled, and linear_q named q_proj'),
    Cascade('02.single_head', (SCORE, ('attention.py', 'self.linear_q = nn.Linear(c_in, c, bias=False)', 'self.q_proj = nn.Linear(c_in, c, bias=False)'),
                               ('attention.py', 'q, k, v = self.linear_q(x), self.linear_k(x), self.linear_v(x)', 'q, k, v = self.q_proj(x), self.linear_k(x), self.linear_v(x)')), (
        'BLOCKED 02.single_head by 01.scaled_scores:',
        'It also fails on its own: a case that calls none of attention_weights, scaled_dot_product_attention, scaled_scores fails too:',
        "FAIL 02.single_head, case 'parameters of SingleHeadAttention(6, 4)':",
    ), 'scaled_scores unscaled, and linear_q named q_proj', isolate=True),
    Cascade('03.multi_head_attention', (('mha.py', 'width // N_head).transpose(-3, -2)', 'width // N_head).transpose(-2, -1)'),
                                        ('mha.py', 'self.linear_q = nn.Linear(c_in, N_head * c, bias=use_bias_for_embeddings)', 'self.linear_q = nn.Linear(c_in, N_head * c, bias=True)')), (
        'BLOCKED 03.multi_head_attention by 03.split_heads:',
        'It also fails on its own: a case that calls none of split_heads fails too:',
        "FAIL 03.multi_head_attention, case 'parameters of MultiHeadAttention(6, 4, 3)':",
    ), 'split_heads transposes L with c, and linear_q always with a bias'),
    Cascade('07.cross_attention', (('mha.py', 'width // N_head).transpose(-3, -2)', 'width // N_head).transpose(-2, -1)'),
                                   ('transformer.py', 'self.linear_q = nn.Linear(d_model, d_model, bias=False)', 'self.linear_q = nn.Linear(d_model, d_model)')), (
        'BLOCKED 07.cross_attention by 03.split_heads:',
        'It also fails on its own: a case that calls none of split_heads fails too:',
        "FAIL 07.cross_attention, case 'parameters of CrossAttention(8, 2)':",
        'hint: linear_q, linear_k, linear_v: nn.Linear(d_model, d_model, bias=False); linear_o: nn.Linear(d_model, d_model) with a bias',
    ), 'split_heads transposes L with c, and linear_q with a bias'),
]
