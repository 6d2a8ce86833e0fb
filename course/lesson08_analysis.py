"""Lesson 08's analysis of the shipped runs: seed counting, the verdict rules and the tables the
lesson prints.

Every function reads the shipped metrics (dicts by run key, see course.lm_training): a run key
is "<prefix>/<dataset>/<gate>/seed<n>", where the prefix is an architecture ("paper", "gpt2"),
a set-up and an architecture ("sink/paper") or an ablation's name. Functions return numbers or
the text a cell prints, so that tests can reach every rule the lesson applies.
"""
from __future__ import annotations

import math

import torch

from course.columns import pad
from course.i18n import N_, _
from course.lm_training import VARIANTS

# the verdict of "gate scores are sparse": a mean gate score below this (the paper: about 0.12)
SPARSE_MEAN = 0.2
MIN_SEEDS = 3  # a verdict on a comparison needs this many seeds of each side


# ------------------------------------------------------------------------------ seeds
def runs_of(runs: dict, prefix: str, dataset: str, gate: str) -> list[dict]:
    """The metrics of every seed of one variant, in key order."""
    return [m for k, m in runs.items() if k.startswith(f"{prefix}/{dataset}/{gate}/seed")]


def n_seeds(runs: dict, prefix: str, dataset: str, gate: str) -> int:
    return len(runs_of(runs, prefix, dataset, gate))


def seeds_listed(runs: dict, prefix: str, dataset: str, gate: str) -> str:
    """'0, 1, 2': the seeds shipped for one variant."""
    keys = [k for k in runs if k.startswith(f"{prefix}/{dataset}/{gate}/seed")]
    return ", ".join(k.rsplit("seed", 1)[1] for k in keys)


def values(runs: dict, prefix: str, dataset: str, gate: str, key: str, layer: int | None = None):
    """One measurement of every seed (per layer with `layer`), left out where it was not
    measured. key "massive_ratio": the largest max/median ratio over the layers."""
    if key == "massive_ratio":
        return massive_ratios(runs, prefix, dataset, gate)
    if key in DERIVED and layer is None:
        return derived_values(runs, prefix, dataset, gate, key)
    found = runs_of(runs, prefix, dataset, gate)
    if layer is None:
        return [m[key] for m in found if m.get(key) is not None]
    return [m[f"{key}_per_layer"][layer] for m in found if m.get(f"{key}_per_layer")]


def mean(xs) -> float | None:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


# ---------------------------------------------------------------------------- verdicts
def verdict_lower(runs: dict, prefix: str, dataset: str, key: str,
                  gated: str = "elementwise", base: str = "none") -> str:
    """The lesson's rule for "the gate lowers `key`": yes when every gated seed is below every
    baseline seed, then by how much (the ratio of the means, and its range over seed pairings;
    for the loss, the difference) and the one-sided exact Mann-Whitney p (the rule with 3 seeds
    against 3 is p = 0.05, the smallest p 3 against 3 allows); "not shown" when the seeds overlap;
    "direction only" with fewer than MIN_SEEDS seeds of either."""
    lo, hi = values(runs, prefix, dataset, gated, key), values(runs, prefix, dataset, base, key)
    if not lo or not hi:
        return _("not measured")
    if min(len(lo), len(hi)) < MIN_SEEDS:
        direction = _("lower") if mean(lo) < mean(hi) else _("not lower")
        return _("direction only: {direction} (< {n} seeds)").format(direction=direction, n=MIN_SEEDS)
    p = mann_whitney(lo, hi)[1]
    if max(lo) < min(hi):
        if key == "val_loss" or min(lo) <= 0:
            return _("yes, {delta:+.3f}, p = {p:.2g}").format(delta=mean(lo) - mean(hi), p=p)
        ratio, low, high = ratio_range(hi, lo)
        return _("yes, {ratio:.1f}x lower ({low:.1f}-{high:.1f}x), p = {p:.2g}").format(
            ratio=ratio, low=low, high=high, p=p)
    if mean(lo) < mean(hi):
        return _("not shown (seeds overlap), p = {p:.2g}").format(p=p)
    return _("no")


def sparse(runs: dict, prefix: str, dataset: str, gated: str = "elementwise") -> str:
    """'mean 0.07, 91% < 0.1': the gate scores of one variant, means over the seeds."""
    return _("mean {mean:.2f}, {below:.0%} < 0.1").format(
        mean=mean(values(runs, prefix, dataset, gated, "gate_mean")),
        below=mean(values(runs, prefix, dataset, gated, "gate_below_0.1")))


def sparse_verdict(runs: dict, prefix: str, dataset: str, gated: str = "elementwise") -> str:
    return _("yes") if mean(values(runs, prefix, dataset, gated, "gate_mean")) < SPARSE_MEAN else _("no")


def pair(runs: dict, prefix: str, dataset: str, key: str, fmt: str,
         gated: str = "elementwise", base: str = "none") -> str:
    """'0.211 -> 0.115': the means over the seeds, baseline then gated."""
    before, after = (mean(values(runs, prefix, dataset, g, key)) for g in (base, gated))
    if before is None or after is None:
        return "-"
    return f"{before:{fmt}} -> {after:{fmt}}"


# ------------------------------------------------------------------------------ tables
def _spread(xs, fmt: str = ".2f") -> str:
    return f"{mean(xs):{fmt}} [{min(xs):{fmt}}, {max(xs):{fmt}}]" if xs else "-"


def _cell(x, width: int, fmt: str) -> str:
    return "-".rjust(width) if x is None else f"{x:>{width}{fmt}}"


def side_by_side(runs: dict, prefixes: dict, dataset: str) -> str:
    """One row per variant, one block per prefix ({prefix: its name}): the first-token share
    (mean over seeds), per layer, and the validation loss."""
    blocks = list(prefixes)
    lines = [f"{pad(_('variant'), 16, '>')} | " + " | ".join(f"{pad(prefixes[p], 38, '^')}" for p in blocks),
             f"{'':>16} | " + " | ".join(f"{pad(_('share on BOS'), 12, '>')} {pad(_('layer 0, 1'), 12, '>')} "
                                         f"{pad(_('val loss'), 11, '>')}" for _block in blocks)]
    for gate in VARIANTS:
        cells = []
        for prefix in blocks:
            layers = ", ".join(f"{mean(values(runs, prefix, dataset, gate, 'first_token_share', i)):.2f}"
                               for i in range(2))
            cells.append(f"{mean(values(runs, prefix, dataset, gate, 'first_token_share')):>12.3f} "
                         f"{layers:>12} {mean(values(runs, prefix, dataset, gate, 'val_loss')):>11.3f}")
        lines.append(f"{pad(label(gate), 16, '>')} | " + " | ".join(cells))
    return "\n".join(lines)


def results_table(runs: dict, prefix: str, dataset: str) -> str:
    """Everything measured for one prefix and dataset: means over the seeds, [min, max] of the
    first-token share, n the number of seeds."""
    lines = [f"{pad(_('variant'), 16, '>')} | {pad(_('first-token share'), 17, '>')} | {pad(_('gate mean'), 9, '>')} | "
             f"{pad(_('gates < 0.1'), 11, '>')} | {pad(_('gate @ trigger'), 14, '>')} | {pad(_('gate elsewhere'), 14, '>')} | "
             f"{pad(_('max/median'), 10, '>')} | {pad(_('val loss'), 8, '>')} | {pad(_('copy acc'), 8, '>')} | n"]
    for gate in VARIANTS:
        def m(key, width, fmt):
            return _cell(mean(values(runs, prefix, dataset, gate, key)), width, fmt)
        lines.append(
            f"{pad(label(gate), 16, '>')} | {_spread(values(runs, prefix, dataset, gate, 'first_token_share')):>17} | "
            f"{m('gate_mean', 9, '.3f')} | {m('gate_below_0.1', 11, '.2f')} | "
            f"{m('gate_at_trigger', 14, '.3f')} | {m('gate_elsewhere', 14, '.3f')} | "
            f"{_cell(mean(massive_ratios(runs, prefix, dataset, gate)), 10, '.0f')} | "
            f"{m('val_loss', 8, '.3f')} | {m('copy_accuracy', 8, '.3f')} | "
            f"{n_seeds(runs, prefix, dataset, gate)}")
    return "\n".join(lines)


def min_copy_accuracy(runs: dict, prefixes, dataset: str = "bb") -> tuple[float, str]:
    """The lowest copy accuracy of any seed of any variant, and its run key."""
    found = [(m["copy_accuracy"], k) for k, m in runs.items()
             if k.split("/")[-3] == dataset and k.rsplit("/", 3)[0] in prefixes
             and m.get("copy_accuracy") is not None]
    return min(found)


def gate_at_triggers(runs: dict, prefix: str, gates=("elementwise", "headwise", "static")) -> str:
    """Per gated variant and layer: the mean gate score at the triggers and elsewhere, and how many
    times more open it is at the triggers (Bigram-Backcopy, means over the seeds)."""
    lines = []
    for gate in gates:
        at = [mean(values(runs, prefix, "bb", gate, "gate_at_trigger", i)) for i in range(2)]
        off = [mean(values(runs, prefix, "bb", gate, "gate_elsewhere", i)) for i in range(2)]
        lines.append(f"{pad(printed_name(prefix, PREFIX_NAMES), 24, '>')} {pad(label(gate), 16, '>')}: " + "  ".join(
            _("layer {layer}: {at:.3f} at triggers vs {off:.3f} elsewhere ({ratio:4.1f}x)").format(
                layer=i, at=at[i], off=off[i], ratio=at[i] / off[i]) for i in range(2)))
    return "\n".join(lines)


def ablation_table(sources: dict, dataset: str, gates=("none", "elementwise")) -> str:
    """sources: {row name: (runs, prefix)}. Per row: the baseline's first-token share (all
    layers, layer 0) and loss, and G1 elementwise's share and loss, means over the seeds (n)."""
    lines = [f"{pad(_('mean over the seeds (n)'), 44)} | {pad(_('share on BOS'), 12, '>')} {pad(_('layer 0'), 7, '>')} "
             f"{pad(_('val loss'), 8, '>')} {'n':>2} | {pad(_('G1 elem.: share'), 15, '>')} {pad(_('val loss'), 8, '>')} {'n':>2}"]
    for name, (source, prefix) in sources.items():
        if not any(n_seeds(source, prefix, dataset, g) for g in gates):
            continue
        base, gated = gates
        cells = [_cell(mean(values(source, prefix, dataset, base, "first_token_share")), 12, ".3f"),
                 _cell(mean(values(source, prefix, dataset, base, "first_token_share", 0)), 7, ".3f"),
                 _cell(mean(values(source, prefix, dataset, base, "val_loss")), 8, ".3f"),
                 f"{n_seeds(source, prefix, dataset, base):>2}"]
        gated_cells = [_cell(mean(values(source, prefix, dataset, gated, "first_token_share")), 15, ".3f"),
                       _cell(mean(values(source, prefix, dataset, gated, "val_loss")), 8, ".3f"),
                       f"{n_seeds(source, prefix, dataset, gated):>2}"]
        lines.append(f"{pad(name, 44)} | {' '.join(cells)} | {' '.join(gated_cells)}")
    return "\n".join(lines)


# -------------------------------------------------------------------- massive activations
def massive_ratios(runs: dict, prefix: str, dataset: str, gate: str) -> list[float]:
    """Per seed: the largest ratio max|h| / median|h| over the layers (Sun et al. 2024)."""
    return [max(layer["ratio"] for layer in m["massive_activations_per_layer"])
            for m in runs_of(runs, prefix, dataset, gate) if m.get("massive_activations_per_layer")]


def massive_table(runs: dict, prefix: str, dataset: str) -> str:
    """Per variant and layer: the top activation |h|, the median |h|, their ratio and how many of
    the seeds have their top activation at BOS; means over the seeds."""
    lines = [f"{pad(_('variant'), 16, '>')} | " + " | ".join(
        pad(_("layer {layer}: top |h|, median, ratio, at BOS").format(layer=i), 38, ">")
        for i in range(2))]
    for gate in VARIANTS:
        found = [m["massive_activations_per_layer"] for m in runs_of(runs, prefix, dataset, gate)
                 if m.get("massive_activations_per_layer")]
        if not found:
            continue
        cells = []
        for i in range(2):
            layer = [f[i] for f in found]
            at_bos = sum(x["position"] == 0 for x in layer)
            cells.append(f"{mean(x['top'][0] for x in layer):>14.0f} {mean(x['median'] for x in layer):>8.2f} "
                         f"{mean(x['ratio'] for x in layer):>6.0f}x {at_bos:>3}/{len(layer)}")
        lines.append(f"{pad(label(gate), 16, '>')} | " + " | ".join(cells))
    return "\n".join(lines)


def massive_extremes(runs: dict) -> dict:
    """Over every layer of every run: the smallest and the largest ratio max|h| / median|h|
    (each with its run key), and in how many of those layers the largest activation is at BOS."""
    layers = [(layer["ratio"], key, layer["position"] == 0) for key, m in runs.items()
              for layer in m.get("massive_activations_per_layer") or []]
    return {"lowest": min(layers)[:2], "highest": max(layers)[:2],
            "at_bos": sum(at_bos for *_, at_bos in layers), "layers": len(layers)}


# -------------------------------------------------------------------- the sink search
def search_with_setups(search: dict, runs: dict, setups: dict, seeds=(0, 1, 2)) -> dict:
    """The sink search with the baselines of the main comparison's set-ups (setups: {name: its
    factors}) as its first rows: the same training as a search run with those factors, so the
    course's set-up and the strong-sink set-up show all their seeds."""
    from course.lm_training import run_key, sink_search_key

    merged = {}
    for setup, factors in setups.items():
        for seed in seeds:
            key = run_key("paper", "bb", "none", seed, setup)
            if key in runs:
                merged[sink_search_key(factors, "none", seed)] = runs[key]
    return {**merged, **{k: m for k, m in search.items() if k not in merged}}


def search_rows(search: dict, factors: dict) -> list[dict]:
    """The sink search's baselines, one row per set of factors: the factors turned on, the
    first-token share of every seed and of layer 0, the loss. In the order first trained."""
    rows = {}
    for key, m in search.items():
        name, dataset, gate, _seed = key.rsplit("/", 3)
        if gate != "none":
            continue
        row = rows.setdefault(name, {"name": name, "on": [f for f in factors if f in name.split(": ", 1)[1].split(" + ")],
                                     "shares": [], "layer0": [], "loss": []})
        row["shares"].append(m["first_token_share"])
        row["layer0"].append(m["first_token_share_per_layer"][0])
        row["loss"].append(m["val_loss"])
    return list(rows.values())


# what the printed tables call the sink search's factors and the ablations: their names in the
# code (lm.SINK_FACTORS, lm.ABLATIONS), which are English, in the learner's language
FACTOR_NAMES = {"trigger token": N_("trigger token"), "normal init": N_("normal init"),
                "no biases": N_("no biases"), "untied head": N_("untied head"),
                "fixed pool": N_("fixed pool"), "uniform first": N_("uniform first"),
                "raw bigrams": N_("raw bigrams")}
ABLATION_NAMES = {"paper, gpt2's recipe and d_ff": N_("paper, gpt2's recipe and d_ff"),
                  "gpt2 + RoPE": N_("gpt2 + RoPE"), "gpt2 + RMSNorm": N_("gpt2 + RMSNorm"),
                  "paper + learned positions": N_("paper + learned positions"),
                  "paper + gate bias": N_("paper + gate bias")}
# the shipped runs' folders (set-up and build) as a row of a table says them
PREFIX_NAMES = {"sink/paper": N_("strong sink, paper-like"), "sink/gpt2": N_("strong sink, GPT-2-style"),
                "paper": N_("course, paper-like"), "gpt2": N_("course, GPT-2-style")}


def printed_name(name: str, names: dict | None = None) -> str:
    """A factor's, an ablation's or a run folder's name as a table prints it."""
    for known in (names,) if names else (FACTOR_NAMES, ABLATION_NAMES, PREFIX_NAMES):
        if name in known:
            return _(known[name])
    return name


def search_table(search: dict, factors: dict) -> str:
    """The sink search as a table: an x per factor the run turned on (the prototype's choice),
    then the baseline's first-token share (mean [min, max] over n seeds) and its layer 0."""
    short = {f: str(i + 1) for i, f in enumerate(factors)}
    legend = "  ".join(f"{short[f]} = {printed_name(f, FACTOR_NAMES)}" for f in factors)
    lines = [legend, f"{' '.join(short.values())} | {pad(_('share on BOS'), 19, '>')} | {pad(_('layer 0'), 7, '>')} | n"]
    for row in search_rows(search, factors):
        marks = " ".join("x" if f in row["on"] else "." for f in factors)
        lines.append(f"{marks} | {_spread(row['shares'], '.3f'):>19} | {mean(row['layer0']):>7.3f} | "
                     f"{len(row['shares'])}")
    return "\n".join(lines)


# ------------------------------------------------------ a trained layer in the student's module
@torch.no_grad()
def trained_layer(model, tokens: torch.Tensor, cls, layer: int = 0):
    """Layer `layer` of a trained paper-like model as the exercise class `cls`
    (course.lm_training.as_exercise_attention), its input x (B, L, d_model) and the LM's own
    output of that layer, minus linear_o's bias if it has one (the exercise's W_O has none)."""
    from course.lm_training import as_exercise_attention

    attn = model.blocks[layer].attn
    h = model.embed(tokens)
    for block in model.blocks[:layer]:
        h = block(h)[0]
    x = model.blocks[layer].norm_attn(h)
    reference = attn(x)[0]
    if attn.linear_o.bias is not None:
        reference = reference - attn.linear_o.bias
    return as_exercise_attention(attn, cls), x, reference


@torch.no_grad()
def value_at_bos(model, tokens: torch.Tensor, layer: int = 0) -> list[float]:
    """Per head of `layer` of a paper-like model: the mean size |v| of BOS's value vector over
    that of the other tokens (1: as large as theirs). tokens: (B, L), BOS at position 0."""
    h = model.embed(tokens)
    for block in model.blocks[:layer]:
        h = block(h)[0]
    attn = model.blocks[layer].attn
    v = attn.linear_v(model.blocks[layer].norm_attn(h)).unflatten(-1, (attn.n_heads, -1))
    size = v.norm(dim=-1)  # (B, L, n_heads)
    return (size[:, 0].mean(0) / size[:, 1:].mean((0, 1))).tolist()


# --------------------------------------------------------------- side by side with the paper
# (claim, the paper's figure (its Table 4, 15B MoE, G1 elementwise), the key measured, format)
PAPER_CLAIMS = (
    (N_("first-token attention"), N_("0.467 -> 0.048 (1/9.7)"), "first_token_share", ".3f"),
    (N_("cost of blocking BOS"), N_("not measured"), "bos_cost", "+.3f"),
    (N_("loss"), N_("PPL 6.026 -> 5.761"), "val_loss", ".3f"),
)
PAPER_SPARSITY = N_("mean 0.116; released 1B: 0.10, 70% < 0.1")


def _claim_rows(runs: dict, cases, claim: str, paper: str, key: str, fmt: str, gated: str) -> list:
    rows = []
    for i, (case, ours, gpt2, dataset) in enumerate(cases):
        rows.append((_(claim) if i == 0 else "", _(paper) if i == 0 else "",
                     f"{case} {pair(runs, ours, dataset, key, fmt, gated=gated)}",
                     verdict_lower(runs, ours, dataset, key, gated=gated),
                     f"{pair(runs, gpt2, dataset, key, fmt, gated=gated)}: "
                     f"{verdict_lower(runs, gpt2, dataset, key, gated=gated)}"))
    return rows


def paper_rows(runs: dict, cases) -> list[tuple[str, str, str, str, str]]:
    """cases: (label, paper-like prefix, GPT-2-style prefix, dataset). One row per claim and
    case: (claim, the paper's figure, ours in the paper-like build, its verdict, the GPT-2-style
    build's figure and verdict); then the static scalar (the paper's input-independent gate),
    massive activations, gate sparsity, and the two claims that are algebra."""
    rows = []
    for claim, paper, key, fmt in PAPER_CLAIMS:
        rows += _claim_rows(runs, cases, claim, paper, key, fmt, "elementwise")
    rows += _claim_rows(runs, cases, N_("input-independent gate"), N_("0.467 -> 0.364 (1/1.3)"),
                        "first_token_share", ".3f", "static")
    for i, (case, ours, gpt2, dataset) in enumerate(cases):
        rows.append((_("massive activations") if i == 0 else "", _("M-Act 1053 -> 94") if i == 0 else "",
                     f"{case} {pair(runs, ours, dataset, 'massive_ratio', '.0f')}",
                     _("not testable (none form)"), _("max/median {pair}").format(
                         pair=pair(runs, gpt2, dataset, "massive_ratio", ".0f"))))
    for i, (case, ours, gpt2, dataset) in enumerate(cases):
        rows.append((_("gate scores sparse") if i == 0 else "", _(PAPER_SPARSITY) if i == 0 else "",
                     f"{case} {sparse(runs, ours, dataset)}", sparse_verdict(runs, ours, dataset),
                     f"{sparse(runs, gpt2, dataset)}: {sparse_verdict(runs, gpt2, dataset)}"))
    rows += [(_("static scalar folds"), _("(algebra)"), _("folds into W_O exactly (above)"),
              _("yes (algebra)"), _("same")),
             (_("non-linearity"), _("gate breaks the W_V W_O linear map"),
              _("fold residual 0 vs > 0 (above)"), _("yes (algebra)"), _("same"))]
    return rows


def paper_comparison(runs: dict, cases) -> str:
    """paper_rows as the table the lesson prints."""
    lines = [f"{pad(_('claim'), 24)} | {pad(_('paper'), 40)} | {pad(_('paper-like build'), 31)} | "
             f"{pad(_('reproduces?'), 44)} | {_('GPT-2-style build')}"]
    for claim, paper, ours, verdict, gpt2 in paper_rows(runs, cases):
        lines.append(f"{pad(claim, 24)} | {pad(paper, 40)} | {pad(ours, 31)} | "
                     f"{pad(verdict, 44)} | {gpt2}")
    return "\n".join(lines)


# ------------------------------------------------------------------------- statistics
def _u_counts(n1: int, n2: int) -> list[int]:
    """How many of the C(n1 + n2, n1) orderings of two samples without ties give each value of
    U (the number of pairs where the first sample's value is the smaller), U = 0 .. n1 n2."""
    counts = [[[1] if i == 0 or j == 0 else None for j in range(n2 + 1)] for i in range(n1 + 1)]
    for i in range(1, n1 + 1):
        for j in range(1, n2 + 1):
            # the largest value of all is either the first sample's (it beats none of the
            # second's) or the second's (every one of the first's i values is below it: + i)
            a, b = counts[i - 1][j], counts[i][j - 1]
            row = [0] * (i * j + 1)
            for u, c in enumerate(a):
                row[u] += c
            for u, c in enumerate(b):
                row[u + i] += c
            counts[i][j] = row
    return counts[n1][n2]


def mann_whitney(lower, higher) -> tuple[float, float]:
    """One-sided exact Mann-Whitney U test that `lower` tends to lie below `higher`: returns
    (U, p), U = the number of pairs (x in lower, y in higher) with x < y (ties count 1/2), p =
    the chance of a U at least this large if both samples came from one distribution (exact,
    from the distribution without ties). Every x below every y gives the smallest p there is,
    1 / C(n1 + n2, n1): 0.05 for 3 against 3, 0.004 for 5 against 5."""
    lower, higher = list(lower), list(higher)
    u = sum(1.0 if x < y else 0.5 if x == y else 0.0 for x in lower for y in higher)
    counts = _u_counts(len(lower), len(higher))
    tail = sum(c for value, c in enumerate(counts) if value >= u)
    return u, tail / sum(counts)


def smallest_p(n1: int, n2: int) -> float:
    """The smallest p the exact test can give with n1 against n2 seeds (every seed of one side
    below every seed of the other): 1 / C(n1 + n2, n1)."""
    return 1 / math.comb(n1 + n2, n1)


def ratio_range(higher, lower) -> tuple[float, float, float]:
    """(mean(higher) / mean(lower), and the smallest and largest ratio over all pairings of one
    seed of each): how much lower `lower` is, with the spread the seeds allow."""
    return (mean(higher) / mean(lower), min(higher) / max(lower), max(higher) / min(lower))


# ------------------------------------------------------------- the many-seed experiment
# The experiment's runs (course.lesson08_experiment) ship under the same keys as the others:
# prefix "paper" (the course's set-up) or "sink/paper" (the strong-sink set-up), dataset "bb",
# and an arm in place of the variant (the four variants and "wider").
ARM_LABELS = {"none": N_("baseline"), "elementwise": N_("G1 elementwise"),
              "headwise": N_("G1 headwise"), "static": N_("static scalar"),
              "wider": N_("baseline, wider FFN")}
SETUP_LABELS = {"course": N_("the course's set-up"), "sink": N_("the strong-sink set-up")}
WINDOW = "8"  # the window of the StreamingLLM test the tables print
# measurements derived from a run's metrics, read by values() like the stored ones
DERIVED = {
    "layer0_share": lambda m: m["first_token_share_per_layer"][0],
    "bos_cost": lambda m: m["loss_bos_blocked"] - m["val_loss"],
    "value_zeroed_cost": lambda m: m["loss_bos_value_zeroed"] - m["val_loss"],
    "window_cost": lambda m: m["loss_window"][WINDOW] - m["val_loss"],
    "window_bos_cost": lambda m: m["loss_window_bos"][WINDOW] - m["val_loss"],
    "value_drain0": lambda m: mean(m["value_drain"][0]),
}
KEY_LABELS = {"first_token_share": N_("share on BOS"), "layer0_share": N_("layer 0 share"),
              "bos_cost": N_("cost of blocking BOS"), "value_zeroed_cost": N_("cost of zeroing v_BOS"),
              "window_cost": N_("window cost"), "window_bos_cost": N_("window + BOS cost"),
              "value_drain0": N_("|v_BOS| / |v|"), "val_loss": N_("val loss"),
              "sink_rate": N_("sink rate")}
# (measure, arm expected lower, arm expected higher): the paper's claim, in each set-up
PRIMARY = (("first_token_share", "elementwise", "none"), ("bos_cost", "elementwise", "none"))
# the controls, printed with their p-values as description
CONTROLS = (("first_token_share", "static", "none"), ("first_token_share", "elementwise", "static"),
            ("first_token_share", "headwise", "none"), ("first_token_share", "elementwise", "wider"),
            ("bos_cost", "static", "none"), ("bos_cost", "elementwise", "static"),
            ("bos_cost", "headwise", "none"), ("bos_cost", "elementwise", "wider"))
EXPERIMENT_PREFIXES = {"course": "experiment/paper", "sink": "experiment/sink/paper"}
# the 3-seed runs of the same build and data, in the same two set-ups
SHIPPED_PREFIXES = {"course": "paper", "sink": "sink/paper"}
ALPHA = 0.05


def label(name: str) -> str:
    """The printed name of a variant (or arm) or a set-up, in the learner's language."""
    return _({**ARM_LABELS, **SETUP_LABELS}.get(name, name))


def derived_values(runs: dict, prefix: str, dataset: str, gate: str, key: str) -> list[float]:
    """A DERIVED measurement of every seed that has what it needs (the functional tests ship
    for every run of the experiment and for seed 0 of the others)."""
    found = []
    for m in runs_of(runs, prefix, dataset, gate):
        try:
            found.append(DERIVED[key](m))
        except KeyError:
            continue
    return found


def compare(runs: dict, prefix: str, key: str, lower: str, higher: str, dataset: str = "bb") -> dict | None:
    """Is `key` lower for variant `lower` than for `higher`? The rank rule (every seed of one
    below every seed of the other), the one-sided exact Mann-Whitney p, the ratio of the means
    with its range over seed pairings (where both are positive); None where one has no seed."""
    lo, hi = values(runs, prefix, dataset, lower, key), values(runs, prefix, dataset, higher, key)
    if not lo or not hi:
        return None
    u, p = mann_whitney(lo, hi)
    ratios = ratio_range(hi, lo) if min(lo) > 0 and min(hi) > 0 else None
    return {"lower": lo, "higher": hi, "u": u, "p": p, "rule": max(lo) < min(hi),
            "ratio": ratios, "n": (len(lo), len(hi))}


def _comparison_line(setup: str, key: str, lower: str, higher: str, c: dict, alpha: float) -> str:
    ratio = "" if not c["ratio"] else _("{r:.1f} ({a:.1f}-{b:.1f})").format(
        r=c["ratio"][0], a=c["ratio"][1], b=c["ratio"][2])
    return (f"{pad(label(setup), 22)} {pad(_(KEY_LABELS[key]), 20)} "
            f"{pad(label(lower) + ' < ' + label(higher), 36)} "
            f"{_spread(c['lower'], '.3f'):>21} {_spread(c['higher'], '.3f'):>21} {pad(ratio, 17, '>')} "
            f"{pad(_('yes') if c['rule'] else _('no'), 5, '>')} {c['n'][0]:>3}/{c['n'][1]:<3} "
            f"{_p_cells(c, alpha)}")


def _p_cells(c: dict, alpha: float) -> str:
    """The p column (only where the seeds could give p <= ALPHA at all) and the verdict at alpha:
    yes, no, or 'cannot' where no result of these seeds could pass."""
    p = f"{c['p']:>8.1e}" if smallest_p(*c["n"]) <= ALPHA else pad("-", 8, ">")
    if smallest_p(*c["n"]) > alpha:
        return f"{p} {pad(_('cannot'), 8, '>')}"
    return f"{p} {pad(_('yes') if c['p'] <= alpha else _('no'), 8, '>')}"


def comparisons(runs: dict, tests, prefixes=EXPERIMENT_PREFIXES) -> list[tuple]:
    """(set-up, measure, lower, higher, compare(...)) for every test and set-up with seeds."""
    found = [(s, *t, compare(runs, prefix, *t)) for s, prefix in prefixes.items() for t in tests]
    return [f for f in found if f[-1] is not None]


def comparison_table(runs: dict, tests, family: int, prefixes=EXPERIMENT_PREFIXES) -> str:
    """One line per test and set-up: both sides (mean [min, max] over the seeds), the ratio of
    the means (its range over seed pairings), the rank rule, the seeds, the exact one-sided p
    (where the seeds could reach ALPHA at all), and whether p passes ALPHA / family (Bonferroni
    over `family` comparisons): 'cannot' where no result of these seeds could pass."""
    alpha = ALPHA / family
    head = (f"{pad(_('set-up'), 22)} {pad(_('measure'), 20)} {pad(_('lower?'), 36)} "
            f"{pad(_('first'), 21, '>')} {pad(_('second'), 21, '>')} {pad(_('second/first (range)'), 17, '>')} "
            f"{pad(_('rule'), 5, '>')} {pad(_('seeds'), 7, '^')} {pad('p', 8, '>')} "
            f"{pad('p < ' + format(alpha, '.4f'), 8, '>')}")
    return "\n".join([head] + [_comparison_line(*f, alpha) for f in comparisons(runs, tests, prefixes)])


EXPERIMENT_COLUMNS = ("first_token_share", "layer0_share", "value_drain0", "sink_rate", "val_loss",
                      "bos_cost", "value_zeroed_cost", "window_cost", "window_bos_cost")


def experiment_table(runs: dict, setup: str, arms=tuple(ARM_LABELS), keys=EXPERIMENT_COLUMNS,
                     prefixes=EXPERIMENT_PREFIXES) -> str:
    """Per arm of one set-up: each measurement as mean [min, max] over the seeds that have it,
    and the number of seeds."""
    prefix = prefixes[setup]
    lines = [f"{pad(_('arm'), 20)} " + " ".join(pad(_(KEY_LABELS[k]), 21, ">") for k in keys) + f" {'n':>3}"]
    for arm in arms:
        if n_seeds(runs, prefix, "bb", arm):
            lines.append(f"{pad(label(arm), 20)} " + " ".join(
                f"{_spread(values(runs, prefix, 'bb', arm, k), '.3f'):>21}" for k in keys)
                + f" {n_seeds(runs, prefix, 'bb', arm):>3}")
    if len(lines) == 1:
        lines.append(_("(no run shipped yet)"))
    return "\n".join(lines)


# ---------------------------------------------- the functional test on the shipped set-ups
FUNCTIONAL_KEYS = ("first_token_share", "layer0_share", "value_drain0", "bos_cost",
                   "value_zeroed_cost", "window_cost", "window_bos_cost")


def functional_table(runs: dict, cases, variants=VARIANTS, seed: int = 0) -> str:
    """cases: (name, run-key prefix, dataset). Per case and variant, the functional tests of one
    seed (losses as differences from the loss with every key, in nats)."""
    widths = (12, 13, 13, 20, 21, 13, 17)
    lines = [f"{pad(_('set-up'), 28)} {pad(_('variant'), 16)} " + " ".join(
        pad(_(KEY_LABELS[k]), w, ">") for k, w in zip(FUNCTIONAL_KEYS, widths))]
    for name, prefix, dataset in cases:
        for gate in variants:
            run = runs.get(f"{prefix}/{dataset}/{gate}/seed{seed}")
            if run is None or "loss_bos_blocked" not in run:
                continue
            row = [DERIVED[k](run) if k in DERIVED else run[k] for k in FUNCTIONAL_KEYS]
            lines.append(f"{pad(name, 28)} {pad(label(gate), 16)} " + " ".join(
                f"{v:>{w}.3f}" if i < 3 else f"{v:>+{w}.3f}" for i, (v, w) in enumerate(zip(row, widths))))
    return "\n".join(lines)


def headline(runs: dict, arms=("none", "static", "elementwise"), prefixes=SHIPPED_PREFIXES) -> str:
    """The lesson's answer in a few lines: per set-up and measure (the share on BOS, the cost of
    blocking BOS), each arm's mean [min, max] over the seeds and their number, then G1
    elementwise against the baseline: the ratio of the means (range over seed pairings), the
    rank rule and the exact one-sided p."""
    lines = []
    for setup, prefix in prefixes.items():
        for key in ("first_token_share", "bos_cost"):
            lines.append(_("{setup}: {measure}").format(setup=label(setup), measure=_(KEY_LABELS[key])))
            for arm in arms:
                found = values(runs, prefix, "bb", arm, key)
                lines.append(f"    {pad(label(arm), 16)} {_spread(found, '.3f'):>22}  n = {len(found)}")
            c = compare(runs, prefix, key, "elementwise", "none")
            if c is None:
                continue
            ratio = "" if not c["ratio"] else _("{r:.1f}x lower ({a:.1f}-{b:.1f}x), ").format(
                r=c["ratio"][0], a=c["ratio"][1], b=c["ratio"][2])
            rule = _("yes") if c["rule"] else _("no")
            if smallest_p(*c["n"]) > ALPHA:
                lines.append("    " + _("G1 elementwise against the baseline: {ratio}every seed below "
                                        "every seed: {rule}; with {n1} against {n2} seeds no result "
                                        "can reach p < {alpha}").format(
                    ratio=ratio, rule=rule, n1=c["n"][0], n2=c["n"][1], alpha=ALPHA))
                continue
            lines.append("    " + _("G1 elementwise against the baseline: {ratio}every seed below "
                                    "every seed: {rule}, p = {p:.2g}").format(ratio=ratio, rule=rule, p=c["p"]))
    return "\n".join(lines)
