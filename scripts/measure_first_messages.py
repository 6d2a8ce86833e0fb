"""How often does the first message a student sees point at the bug? And how many FAILs does it cost?

    python scripts/measure_first_messages.py [--root COURSE] [--only SUBSTRING] [--show]

Each bug below is a realistic student mistake (none of them is in the mutation suite), applied to
a scratch copy of solutions/ as if it were the student's exercises/. For each one the script runs
every check in lesson order, as `make check` and the check cells do, and reports:

- first: whether the first failing check's message points at the bug (its `concept`, a regular
  expression for the idea the message must name, matches the message);
- fails: how many checks end as FAIL (a check that reports BLOCKED does not count);
- crash: whether a check crashed instead of failing (anything but CheckFailed escaped it).

`--root` names the course tree to measure (default: this one), so the same bugs measure an older
checkout: `git worktree add /tmp/before <commit>` then `--root /tmp/before`.
"""
from __future__ import annotations

import argparse
import importlib
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Bug:
    home: str      # the check whose exercise holds the bug
    file: str      # solutions/<file>
    find: str      # exact snippet (once in the file)
    replace: str
    concept: str   # regex: what a message that points at the bug names
    why: str
    kind: str = ""  # the class of bug, for a count per class


def bugs_from(path: Path) -> list[Bug]:
    """Bugs kept outside the repository (so that nobody tunes the checks to them): a Python file
    whose BUGS holds (class, home, file, find, replace, concept, why) tuples."""
    namespace: dict = {}
    exec(compile(Path(path).read_text(), str(path), "exec"), namespace)
    return [Bug(home, file, find, replace, concept, why, kind)
            for kind, home, file, find, replace, concept, why in namespace["BUGS"]]


SCORE = "return q @ k.transpose(-2, -1) / math.sqrt(c)"
WEIGHTS_TAIL = "    return stable_softmax(scores, dim=-1) * sees_something"
RMS = "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)  # (*, 1)"
SIN = "pe[:, 0::2] = torch.sin(angle)\n    pe[:, 1::2] = torch.cos(angle)"
FLOAT32 = r"float32"

BUGS = [
    # lesson 00
    Bug("00.batched_dot", "warmup.py", "return (a * b).sum(dim=-1)",
        "out = torch.zeros(torch.broadcast_shapes(a.shape, b.shape)[:-1])\n"
        "    for i in range(a.shape[-1]):\n        out += a[..., i] * b[..., i]\n    return out",
        FLOAT32, "float32 accumulator from torch.zeros without dtype"),
    Bug("00.batched_dot", "warmup.py", "return (a * b).sum(dim=-1)",
        "result = (a * b).sum(dim=-1)\n    return reslt", r"warmup\.py.*line \d+.*reslt",
        "a typo: NameError (where is it?)"),
    Bug("00.batched_dot", "warmup.py", "return (a * b).sum(dim=-1)",
        "return torch.einsum('...i,...i->...', a, b).reshape(a.shape[:-1])",
        r"broadcast", "reshape to a's batch shape breaks broadcasting"),
    # lesson 01
    Bug("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
        "shifted = x - x.max(dim=dim)", r"\.values|amax|max\(dim",
        "x.max(dim=...) returns (values, indices)"),
    Bug("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
        "shifted = x - x.amax(dim=dim)", r"keepdim", "amax without keepdim"),
    Bug("01.stable_softmax", "softmax.py", "exponentials = shifted.exp()",
        "exponentials = torch.exp(shifted).float()", FLOAT32, "exp cast to float32"),
    Bug("01.scaled_scores", "softmax.py", SCORE, "return q @ k.transpose(0, 1) / math.sqrt(c)",
        r"last two axes|transpose\(-2, -1\)", "transpose(0, 1) breaks batches"),
    Bug("01.scaled_scores", "softmax.py", "c = q.shape[-1]", "c = q.size(1)",
        r"q\.shape\[-1\]|channels", "c read from axis 1"),
    # lesson 02
    Bug("02.causal_mask", "attention.py", "return torch.ones(n, n, dtype=torch.bool).tril()",
        "return torch.arange(n)[:, None] <= torch.arange(n)", r"j <= i|lower triangle",
        "i <= j: the upper triangle"),
    Bug("02.padding_mask", "attention.py", "return (positions < lengths[:, None])[:, None, :]",
        "return (positions < lengths)[:, None, :]", r"lengths\[b\]|lengths\[:, None\]|position p",
        "lengths not given their own axis"),
    Bug("02.attention_weights", "attention.py", "scores = scaled_scores(q, k)\n",
        "scores = scaled_scores(q, k) / q.shape[-1] ** 0.5\n", r"twice",
        "scores divided by sqrt(c) again"),
    Bug("02.attention_weights", "attention.py",
        '    scores = scores.masked_fill(~mask, float("-inf"))\n'
        "    # a row that is all -inf would give (-inf) - (-inf) = NaN; zero it instead\n"
        "    sees_something = mask.expand_as(scores).any(dim=-1, keepdim=True)\n"
        "    scores = scores.masked_fill(~sees_something, 0.0)\n" + WEIGHTS_TAIL,
        "    return stable_softmax(scores, dim=-1) * mask", r"before the softmax",
        "mask applied after the softmax"),
    Bug("02.attention_weights", "attention.py", "    if mask is None:\n",
        "    if not mask:\n", r"is None|ambiguous", "`if not mask:` on a tensor"),
    Bug("02.attention_weights", "attention.py", WEIGHTS_TAIL,
        "    weights = torch.zeros(scores.shape)\n"
        "    visible = sees_something.expand_as(scores)\n"
        "    weights[visible] = stable_softmax(scores, dim=-1)[visible]\n    return weights",
        FLOAT32, "weights written into float32 zeros"),
    Bug("02.attention_forward", "attention.py",
        "return attention_weights(q, k, bias=bias, mask=mask) @ v",
        "return attention_weights(q, k, mask, bias) @ v", r"bias.*mask|keyword|argument",
        "bias and mask passed in the wrong order"),
    Bug("02.single_head", "attention.py", "self.linear_o = nn.Linear(c, c_in)",
        "self.linear_o = nn.Linear(c_in, c)", r"linear_o.*Linear\(c, c_in\)",
        "output projection with its sizes swapped"),
    # lesson 03
    Bug("03.split_heads", "mha.py",
        "return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)",
        "return x.view(*batch, N_head, L, width // N_head)", r"\(N_head, c\)|channel block|places",
        "viewed straight as heads first"),
    Bug("03.split_heads", "mha.py",
        "return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)",
        "return x.reshape(*batch, L, N_head, -1).permute(0, 2, 1, 3)",
        r"permute|rank|transpose\(-3, -2\)|leading axes", "a 4-D permute"),
    Bug("03.merge_heads", "mha.py", "return x.transpose(-3, -2).reshape(*batch, L, N_head * c)",
        "return x.reshape(*batch, L, N_head * c)", r"transpose back|places", "no transpose back"),
    Bug("03.merge_heads", "mha.py", "return x.transpose(-3, -2).reshape(*batch, L, N_head * c)",
        "return x.transpose(-3, -2).view(*batch, L, N_head * c)", r"reshape|contiguous",
        "view after transpose"),
    Bug("03.multi_head_attention", "mha.py",
        "        key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
        "        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)",
        "        key_mask = None if attention_mask is None else attention_mask[..., None, :]\n"
        "        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)",
        r"\(\*, 1, 1, L\)", "key mask without the head axis"),
    Bug("03.multi_head_attention", "mha.py", "v = split_heads(self.linear_v(x), self.N_head)\n"
        "        key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
        "        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)",
        "v = split_heads(self.linear_k(x), self.N_head)\n"
        "        key_mask = None if attention_mask is None else attention_mask[..., None, None, :]\n"
        "        o = scaled_dot_product_attention(q, k, v, bias=bias, mask=key_mask)",
        r"linear_v|values", "values from linear_k"),
    # lesson 04
    Bug("04.broadcastable_bias", "bias.py", "    n = scores_ndim - bias.ndim\n",
        "    n = scores_ndim - bias.ndim - 1\n", r"n = scores_ndim - bias\.ndim|count",
        "one size-1 axis too few"),
    Bug("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)  # (*, N_head, R, R)",
        "return bias.movedim(-1, -3).transpose(-2, -1)  # (*, N_head, R, R)",
        r"i and j|swapped|transpos", "i and j swapped"),
    Bug("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)  # (*, N_head, R, R)",
        "return bias.permute(0, 3, 1, 2)  # (*, N_head, R, R)", r"permute|rank|movedim",
        "a 4-D permute"),
    Bug("04.pair_bias", "bias.py", "self.layer_norm_z = nn.LayerNorm(c_z)",
        "self.layer_norm_z = nn.LayerNorm(c_z, elementwise_affine=False)",
        r"LayerNorm|layer_norm_z", "LayerNorm without its parameters"),
    # lesson 05
    Bug("05.masked_mean", "mha.py", "weights = mask.unsqueeze(-1).to(x.dtype)",
        "weights = mask.to(x.dtype)", r"trailing size-1 axis|\[\.\.\., None\]|unsqueeze",
        "mask without a channel axis"),
    Bug("05.masked_mean", "mha.py", "count = weights.sum(dim=dim).clamp_min(1.0)",
        "count = weights.sum().clamp_min(1.0)", r"number of True positions|count",
        "one count over the whole mask"),
    Bug("05.global_attention", "mha.py", "k = self.linear_k(x).unsqueeze(-3)  # (*, 1, L, c), shared by every head",
        "k = self.linear_k(x)  # (*, 1, L, c), shared by every head",
        r"unsqueeze\(-3\)|\(\*, 1, L, c\)|shared", "shared k without its head axis"),
    # lesson 06
    Bug("06.gate", "mha.py", "o = torch.sigmoid(self.linear_g(x)) * o",
        "o = torch.sigmoid(self.linear_g(x)) + o", r"multipl", "gate added, not multiplied"),
    Bug("06.gate", "mha.py", "self.linear_g.bias.fill_(1.0)", "self.linear_g.bias.fill_(0.0)",
        r"bias = 1|sigmoid\(1\)|0\.73", "gate bias starts at 0"),
    Bug("06.gate", "mha.py", "self.linear_g = nn.Linear(c_in, N_head * c)",
        "self.linear_g = nn.Linear(N_head * c, N_head * c)", r"c_in", "gate input width N_head*c"),
    # lesson 07
    Bug("07.sinusoidal_encoding", "transformer.py", "pe = torch.empty(L, d_model, dtype=torch.float64)\n    " + SIN,
        "pe = torch.stack([torch.sin(angle), torch.cos(angle)]).reshape(L, d_model)",
        r"interleav|places|stack", "sin and cos interleaved by a reshape of the wrong stack"),
    Bug("07.sinusoidal_encoding", "transformer.py",
        "two_i = torch.arange(0, d_model, 2, dtype=torch.float64)", "two_i = torch.arange(0, d_model, 2)",
        FLOAT32, "integer arange: the exponents in float32"),
    Bug("07.rope", "transformer.py", "rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)",
        "rotated = torch.cat([x[..., half:], x[..., :half]], dim=-1)", r"minus",
        "rotate_half without the minus"),
    Bug("07.rope", "transformer.py",
        "inv_freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / c)  # (c/2,)",
        "inv_freq = 1.0 / base ** (torch.arange(0, c, 2) / c)  # (c/2,)", FLOAT32,
        "integer arange: the frequencies in float32"),
    Bug("07.rms_norm", "transformer.py", RMS,
        "rms = torch.sqrt(x.mean(dim=-1, keepdim=True) ** 2 + self.eps)  # (*, 1)",
        r"square of the mean|mean of the squares", "square of the mean"),
    Bug("07.rms_norm", "transformer.py", RMS,
        "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True))  # (*, 1)",
        r"eps.*(missing|never|left out|forgot)|without eps|no eps", "eps missing"),
    Bug("07.rms_norm", "transformer.py", RMS,
        "rms = x.pow(2).mean(dim=-1, keepdim=True) + self.eps  # (*, 1)",
        r"square root|sqrt", "no square root"),
    Bug("07.rms_norm", "transformer.py", "return x / rms * self.weight", "return x / rms",
        r"weight", "weight never used"),
    Bug("07.decoder_block", "transformer.py", "nn.GELU(), nn.Linear(d_ff, d_model)",
        "nn.GELU(approximate='tanh'), nn.Linear(d_ff, d_model)", r"approximate='tanh'|approximation",
        "the tanh approximation of GELU"),
    Bug("07.decoder_block", "transformer.py", "h = h + self.attn.linear_o(merge_heads(o))",
        "h = h + self.attn.linear_o(o)", r"merge_heads", "merge_heads forgotten"),
    Bug("07.cross_attention", "transformer.py",
        "o = scaled_dot_product_attention(q, k, v, mask=key_mask)  # (*, n_heads, L_q, c)",
        "weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)\n"
        "        if key_mask is not None:\n            weights = weights * key_mask\n"
        "        o = weights @ v", r"before the softmax", "memory mask applied after the softmax"),
    Bug("07.cross_attention", "transformer.py",
        "key_mask = None if memory_mask is None else memory_mask[..., None, None, :]",
        "key_mask = None if memory_mask is None else memory_mask[:, None, None, :]",
        r"leading axes|batch axes|\.\.\.", "the mask indexed for one batch axis"),
    # lesson 08
    Bug("08.gate_headwise", "gated_attention.py", "y = y * self.gate_scores(x)",
        "g = self.gate_scores(x)\n            if self.gate == 'headwise':\n"
        "                g = g.squeeze(-1).repeat(*([1] * (g.ndim - 2)), self.head_dim)"
        ".unflatten(-1, (self.n_heads, -1))\n            y = y * g",
        r"repeat|broadcast|each head|head h", "headwise gate expanded with repeat"),
    Bug("08.gate_elementwise", "gated_attention.py",
        "return torch.sigmoid(logits).unflatten(-1, (self.n_heads, -1))",
        "return torch.sigmoid(logits).unflatten(-1, (-1, self.n_heads))",
        r"channel block h|head h|places|n_heads, head_dim", "gate split as (width, heads)"),
    # one bug upstream, many exercises downstream
    Bug("01.scaled_scores", "softmax.py", SCORE, "return q @ k.transpose(-2, -1)",
        r"sqrt\(c\)", "no scaling (cascade)"),
    Bug("07.rope", "transformer.py", "return x * cos + rotated * sin", "return x * sin + rotated * cos",
        r"cos multiplies x", "cos and sin swapped (cascade into the block)"),
    Bug("07.rms_norm", "transformer.py", RMS,
        "rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True)) + self.eps  # (*, 1)",
        r"eps.*(inside|outside)", "eps outside the root (cascade into the block)"),
    Bug("03.split_heads", "mha.py", "width // N_head).transpose(-3, -2)",
        "width // N_head).transpose(-2, -1)", r"N_head, L, c\)|transpose the head axis|places",
        "transposes L with c (cascade)"),
]


# Written after the new hints were done and never tuned against (the list above was used while
# building them): the honest figure for bugs the checks have not seen.
HELD_OUT = [
    Bug("00.batched_dot", "warmup.py", "return (a * b).sum(dim=-1)",
        "return (a * b).sum(dim=-1, keepdim=True)", r"keepdim|one number per pair",
        "keepdim=True keeps a size-1 axis"),
    Bug("01.stable_softmax", "softmax.py",
        "return exponentials / exponentials.sum(dim=dim, keepdim=True)",
        "return exponentials / exponentials.sum(dim=dim)", r"keepdim", "sum without keepdim"),
    Bug("01.stable_softmax", "softmax.py", "shifted = x - x.amax(dim=dim, keepdim=True)",
        "shifted = (x - x.amax(dim=dim, keepdim=True)).to(torch.float32)", FLOAT32,
        "shifted scores in float32"),
    Bug("01.scaled_scores", "softmax.py", SCORE,
        "return torch.einsum('...qc,...kc->...qk', q, k) / c", r"sqrt\(c\) twice|by c |square root",
        "einsum, divided by c"),
    Bug("02.causal_mask", "attention.py", "return torch.ones(n, n, dtype=torch.bool).tril()",
        "return torch.tril(torch.ones(n, n)).bool().T", r"j <= i|lower triangle|rows and columns",
        "the transposed triangle"),
    Bug("02.attention_forward", "attention.py",
        "return attention_weights(q, k, bias=bias, mask=mask) @ v",
        "return (attention_weights(q, k, bias=bias, mask=mask) @ v) / v.shape[-2]",
        r"weights @ v|mix the values", "output divided by the number of keys"),
    Bug("03.split_heads", "mha.py",
        "return x.view(*batch, L, N_head, width // N_head).transpose(-3, -2)",
        "return x.unflatten(-1, (width // N_head, N_head)).transpose(-3, -2)",
        r"\(N_head, c\)|channel block|places", "last axis unflattened as (c, N_head)"),
    Bug("04.pair_bias", "bias.py", "return bias.movedim(-1, -3)  # (*, N_head, R, R)",
        "return bias.permute(*range(bias.ndim - 3), -1, -2, -3)  # (*, N_head, R, R)",
        r"i and j|swapped", "a permute that reverses i and j too"),
    Bug("05.masked_mean", "mha.py", "total = (x * weights).sum(dim=dim)",
        "total = (x * weights).sum(dim=-2)", r"`dim`|over dim|dim=dim", "sum over a fixed axis"),
    Bug("06.gate", "mha.py", "o = torch.sigmoid(self.linear_g(x)) * o",
        "o = torch.tanh(self.linear_g(x)) * o", r"sigmoid", "tanh instead of the sigmoid"),
    Bug("07.sinusoidal_encoding", "transformer.py", "pe[:, 1::2] = torch.cos(angle)",
        "pe[:, 1::2] = torch.sin(angle)", r"cos", "sin on the odd channels too"),
    Bug("07.rope", "transformer.py", "angle = torch.cat([angle, angle], dim=-1)",
        "angle = torch.cat([angle, -angle], dim=-1)", r"same angle|both halves",
        "the second half turned backwards"),
    Bug("07.rms_norm", "transformer.py", RMS,
        "rms = torch.sqrt(x.pow(2).mean(dim=-2, keepdim=True) + self.eps)  # (*, 1)",
        r"last axis|dim=-1", "the mean over axis -2"),
    Bug("07.decoder_block", "transformer.py", "return h + self.ffn(self.norm_ffn(h))",
        "return self.norm_ffn(h + self.ffn(h))", r"pre-norm|inside each branch",
        "post-norm feed-forward branch"),
    Bug("07.cross_attention", "transformer.py",
        "q = split_heads(self.linear_q(x), self.n_heads)  # (*, n_heads, L_q, c)",
        "q = split_heads(self.linear_q(memory), self.n_heads)  # (*, n_heads, L_q, c)",
        r"linear_q\(x\)|queries from x|decoder position", "queries from memory"),
    Bug("08.gate_elementwise", "gated_attention.py", "logits = self.gate_proj(x)  #",
        "logits = self.gate_proj(x.detach())  #", r"gradient", "x detached before the gate"),
    Bug("02.causal_mask", "attention.py", "return torch.ones(n, n, dtype=torch.bool).tril()",
        "return torch.ones(n, n, dtype=torch.bool).tril(-1)", r"may see itself|diagonal",
        "diagonal excluded (cascade into the block and the gates)"),
    Bug("03.merge_heads", "mha.py", "return x.transpose(-3, -2).reshape(*batch, L, N_head * c)",
        "return x.reshape(*batch, L, N_head * c)", r"transpose back|places",
        "no transpose back (cascade)"),
]


def scratch_package(root: Path, course: Path, bug: Bug, name: str) -> str:
    package = root / name
    shutil.copytree(course / "solutions", package, ignore=shutil.ignore_patterns("__pycache__"))
    path = package / bug.file
    text = path.read_text()
    if text.count(bug.find) != 1:
        raise SystemExit(f"{bug.why}: snippet found {text.count(bug.find)} times in {bug.file}")
    path.write_text(text.replace(bug.find, bug.replace))
    return name


def measure(bug: Bug, package: str) -> dict:
    """The first failing check's message, the FAIL rows, and any check that crashed."""
    from course.checks import CheckFailed, all_checks
    from course.progress import progress

    rows = progress(package)
    if rows and hasattr(rows[0], "message"):  # make check keeps every message
        failing = [r for r in rows if r.status not in ("PASS", "TODO")]
        first = (failing[0].check, failing[0].message) if failing else None
        crashed = [f"{r.check}: {r.message}" for r in rows if r.status == "CRASH"]
    else:  # an older course: run the checks once more, as the check cells do
        first, crashed = None, []
        for check in sorted(all_checks().values(), key=lambda c: c.lesson):
            try:
                check(check.resolve(package), quiet=True)
            except CheckFailed as failure:
                first = first or (check.id, str(failure))
            except Exception as error:  # noqa: BLE001 - a crash of the check itself
                crashed.append(f"{check.id}: {type(error).__name__}: {error}")
                first = first or (check.id, f"{type(error).__name__}: {error}")
    fails = [r.check for r in rows if r.status == "FAIL"]
    points = first is not None and re.search(bug.concept, first[1], re.S | re.I) is not None
    return {"first": first, "points": points, "fails": fails, "crashed": crashed}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--only", default="", help="only bugs whose description contains this")
    parser.add_argument("--show", action="store_true", help="print every first message")
    parser.add_argument("--held-out", action="store_true",
                        help="the bugs written after the hints (never tuned against)")
    parser.add_argument("--bugs", type=Path, default=None,
                        help="a file of bugs kept outside the repository (see bugs_from)")
    args = parser.parse_args(argv)
    course = args.root.resolve()
    sys.path.insert(0, str(course))
    importlib.invalidate_caches()
    start = time.perf_counter()
    chosen = bugs_from(args.bugs) if args.bugs else HELD_OUT if args.held_out else BUGS
    bugs = [b for b in chosen if args.only in b.why]
    tally = {"points": 0, "one_fail": 0, "crash": 0}
    kinds: dict[str, list[int]] = {}  # class -> [bugs, caught, named, caught in its own check]
    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        for index, bug in enumerate(bugs):
            package = scratch_package(Path(tmp), course, bug, f"measured_bug_{index}")
            result = measure(bug, package)
            tally["points"] += result["points"]
            tally["one_fail"] += len(result["fails"]) == 1
            tally["crash"] += bool(result["crashed"])
            row = kinds.setdefault(bug.kind or "-", [0, 0, 0, 0])
            row[0] += 1
            row[1] += result["first"] is not None
            row[2] += bool(result["points"])
            row[3] += bool(result["first"]) and result["first"][0] == bug.home
            mark = "points" if result["points"] else "MISSES" if result["first"] else "PASSES"
            where = result["first"][0] if result["first"] else "no failure"
            print(f"{mark:7s} fails={len(result['fails']):2d} first={where:24s} {bug.home}: {bug.why}")
            if args.show and result["first"]:
                print("    " + result["first"][1].replace("\n", "\n    "))
            for crash in result["crashed"]:
                print(f"    CRASH {crash}")
    if len(kinds) > 1 or "-" not in kinds:
        print(f"\n{'class':12s} {'bugs':>5s} {'caught':>7s} {'named':>6s} {'own check first':>16s}")
        for kind, (n, caught, named, own) in kinds.items():
            print(f"{kind:12s} {n:5d} {caught:7d} {named:6d} {own:16d}")
    print(f"\n{course}: {len(bugs)} bugs; the first message points at the bug for "
          f"{tally['points']}; exactly one FAIL for {tally['one_fail']}; a check crashed for "
          f"{tally['crash']} ({time.perf_counter() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
