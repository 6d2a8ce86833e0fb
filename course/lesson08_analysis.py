"""Lesson 08's analysis of the shipped runs: seed counting, the verdict rules and the tables the
lesson prints.

Every function reads the shipped metrics (dicts by run key, see course.lm_training): a run key
is "<prefix>/<dataset>/<gate>/seed<n>", where the prefix is an architecture ("paper", "gpt2"),
a set-up and an architecture ("sink/paper") or an ablation's name. Functions return numbers or
the text a cell prints, so that tests can reach every rule the lesson applies.
"""
from __future__ import annotations

import torch

from course import lesson08_statistics as stats
from course.columns import pad
from course.i18n import N_, _
from course.lm_training import VARIANTS

# the verdict of "gate scores are sparse": a mean gate score below this (the paper: about 0.12)
SPARSE_MEAN = 0.2
# Sun et al. 2024 call an activation massive when it is about 1,000 times the median |h|
MASSIVE_RATIO = 1000
MIN_SEEDS = 3  # the rank rule needs this many seeds of each side
TEST_SEEDS = 5  # the two-sided exact test needs this many seeds of each side


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
    """The lesson's verdict on "the gate lowers `key`", by the seeds there are:
    - fewer than MIN_SEEDS of either: "direction only";
    - MIN_SEEDS or more but fewer than TEST_SEEDS of either: the rank rule, yes when every gated
      seed is below every baseline seed, with the ratio of the means and its range over seed
      pairings (for the loss, the difference) and the one-sided exact Mann-Whitney p (3 against
      3: 0.05, the smallest p 3 against 3 allows); "not shown" when the seeds overlap;
    - TEST_SEEDS or more of both: the two-sided exact Mann-Whitney test at ALPHA, with the ratio
      of the means (gated / baseline) and its bootstrap interval (for the loss, the difference)."""
    lo, hi = values(runs, prefix, dataset, gated, key), values(runs, prefix, dataset, base, key)
    if not lo or not hi:
        return _("not measured")
    if min(len(lo), len(hi)) < MIN_SEEDS:
        direction = _("lower") if mean(lo) < mean(hi) else _("not lower")
        return _("direction only: {direction} (< {n} seeds)").format(direction=direction, n=MIN_SEEDS)
    if min(len(lo), len(hi)) >= TEST_SEEDS:
        p = stats.mann_whitney(lo, hi)[1]
        if p > ALPHA:
            return _("not shown, two-sided p = {p:.2g}").format(p=p)
        if mean(lo) > mean(hi):
            return _("no (higher), two-sided p = {p:.2g}").format(p=p)
        ratio = None if key == "val_loss" else stats.bootstrap_ratio(lo, hi)
        if ratio is None:
            return _("yes, {delta:+.3f}, two-sided p = {p:.2g}").format(delta=mean(lo) - mean(hi), p=p)
        return _("yes, ratio {r:.2f} [{a:.2f}, {b:.2f}], two-sided p = {p:.2g}").format(
            r=ratio[0], a=ratio[1], b=ratio[2], p=p)
    p = stats.mann_whitney(lo, hi, "less")[1]
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


def largest_activations(runs: dict, cases, gates=VARIANTS) -> str:
    """The paper's measure at toy scale (M-Act: the largest |h|, here over both layers), per
    case (name, run-key prefix, dataset) and variant: mean [min, max] over the seeds, and for
    each gated variant whether its seeds overlap the baseline's (some gated seed at or above the
    lowest baseline seed). Then the largest |h| of any run, with that layer's median."""
    lines = [f"{pad(_('set-up'), 34)} " + " ".join(pad(label(g), 22, ">") for g in gates)
             + f" {pad(_('seeds overlap'), 15, '>')}"]
    for name, prefix, dataset in cases:
        found = {g: values(runs, prefix, dataset, g, "largest_activation") for g in gates}
        base = found[gates[0]]
        overlap = [g for g in gates[1:] if found[g] and base and max(found[g]) >= min(base)]
        lines.append(f"{pad(name, 34)} " + " ".join(f"{_spread(found[g], '.0f'):>22}" for g in gates)
                     + f" {len(overlap):>11} / {sum(bool(found[g]) for g in gates[1:])}")
    top = max((layer["top"][0], layer["median"], key) for key, m in runs.items()
              for layer in m.get("massive_activations_per_layer") or [])
    lines.append(_("the largest |h| of any run: {top:.0f} ({key}), where that layer's median |h| is "
                   "{median:.1f}").format(top=top[0], key=top[2], median=top[1]))
    return "\n".join(lines)


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


def _claim_rows(runs: dict, cases, claim: str, paper: str, key: str, fmt: str, gated: str,
                verdict=verdict_lower) -> list:
    rows = []
    for i, (case, ours, gpt2, dataset) in enumerate(cases):
        other = "" if gpt2 is None else (f"{pair(runs, gpt2, dataset, key, fmt, gated=gated)}: "
                                         f"{verdict(runs, gpt2, dataset, key, gated=gated)}")
        rows.append((_(claim) if i == 0 else "", _(paper) if i == 0 else "",
                     f"{case} {pair(runs, ours, dataset, key, fmt, gated=gated)}",
                     verdict(runs, ours, dataset, key, gated=gated), other))
    return rows


def _none_massive(runs: dict, prefix: str, dataset: str, key: str, gated: str) -> str:
    """The verdict on Sun et al.'s measure: whether any seed reaches MASSIVE_RATIO."""
    found = values(runs, prefix, dataset, "none", key) + values(runs, prefix, dataset, gated, key)
    if not found:
        return _("not measured")
    return _("none form (< {ratio:,}x)").format(ratio=MASSIVE_RATIO) if max(found) < MASSIVE_RATIO \
        else _("massive ({top:.0f}x)").format(top=max(found))


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
    rows += _claim_rows(runs, cases, N_("largest |h| (M-Act)"), N_("M-Act 1053 -> 94"),
                        "largest_activation", ".0f", "elementwise")
    rows += _claim_rows(runs, cases, N_("max/median (Sun et al.)"), N_("(not measured)"),
                        "massive_ratio", ".0f", "elementwise", verdict=_none_massive)
    for i, (case, ours, gpt2, dataset) in enumerate(cases):
        rows.append((_("gate scores sparse") if i == 0 else "", _(PAPER_SPARSITY) if i == 0 else "",
                     f"{case} {sparse(runs, ours, dataset)}", sparse_verdict(runs, ours, dataset),
                     "" if gpt2 is None else f"{sparse(runs, gpt2, dataset)}: {sparse_verdict(runs, gpt2, dataset)}"))
    rows += [(_("static scalar folds"), _("(algebra)"), _("folds into W_O exactly (above)"),
              _("yes (algebra)"), _("same")),
             (_("non-linearity"), _("gate breaks the W_V W_O linear map"),
              _("fold residual 0 vs > 0 (above)"), _("yes (algebra)"), _("same"))]
    return rows


def paper_comparison(runs: dict, cases) -> str:
    """paper_rows as the table the lesson prints."""
    lines = [f"{pad(_('claim'), 24)} | {pad(_('paper'), 40)} | {pad(_('paper-like build'), 36)} | "
             f"{pad(_('reproduces?'), 50)} | {_('GPT-2-style build')}"]
    for claim, paper, ours, verdict, gpt2 in paper_rows(runs, cases):
        lines.append(f"{pad(claim, 24)} | {pad(paper, 40)} | {pad(ours, 36)} | "
                     f"{pad(verdict, 50)} | {gpt2}")
    return "\n".join(lines)


# ------------------------------------------------------------------------- statistics
# (course.lesson08_statistics holds the tests; these are the names the lesson's tables use)
def mann_whitney(lower, higher) -> tuple[float, float]:
    """One-sided exact Mann-Whitney U test that `lower` tends to lie below `higher`: (U, p), U
    the pairs (x in lower, y in higher) with x < y. Every x below every y gives the smallest p
    there is, 1 / C(n1 + n2, n1): 0.05 for 3 against 3."""
    return stats.mann_whitney(lower, higher, "less")


def smallest_p(n1: int, n2: int, alternative: str = "two-sided") -> float:
    return stats.smallest_p(n1, n2, alternative)


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
              "wider": N_("wider baseline")}
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
    # the paper's M-Act, at toy scale: the largest |h| of the residual stream over the layers
    "largest_activation": lambda m: max(layer["top"][0] for layer in m["massive_activations_per_layer"]),
}
KEY_LABELS = {"first_token_share": N_("share on BOS"), "layer0_share": N_("layer 0 share"),
              "bos_cost": N_("cost of blocking BOS"), "value_zeroed_cost": N_("cost of zeroing v_BOS"),
              "window_cost": N_("window cost"), "window_bos_cost": N_("window + BOS cost"),
              "value_drain0": N_("|v_BOS| / |v|"), "val_loss": N_("val loss"),
              "sink_rate": N_("sink rate"), "largest_activation": N_("largest |h|")}
# (measure, first arm, second arm): the paper's claim, G1 elementwise against the baseline, in
# each set-up
PRIMARY = (("first_token_share", "elementwise", "none"), ("bos_cost", "elementwise", "none"))
# the controls, in each set-up: the baseline as large as the gated model (does the gate only add
# parameters?), the static scalar (the paper's input-independent gate: does the gate need the
# token?), and G1 headwise
CONTROLS = tuple((key, first, second) for key in ("first_token_share", "bos_cost")
                 for first, second in (("elementwise", "wider"), ("wider", "none"), ("static", "none"),
                                       ("elementwise", "static"), ("headwise", "none")))
EXPERIMENT_PREFIXES = {"course": "experiment/paper", "sink": "experiment/sink/paper"}
# the 3-seed runs of the same build and data, in the same two set-ups
SHIPPED_PREFIXES = {"course": "paper", "sink": "sink/paper"}
ALPHA = 0.05


def family_size(tests, prefixes=EXPERIMENT_PREFIXES) -> int:
    """The number of comparisons a family of tests makes over the set-ups (its Bonferroni
    divisor): planned comparisons count whether their runs have shipped or not."""
    return len(tests) * len(prefixes)


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


def compare(runs: dict, prefix: str, key: str, first: str, second: str, dataset: str = "bb") -> dict | None:
    """`key` of arm `first` against arm `second` (None where one has no seed): the values of
    each, the seeds (n1, n2), U (pairs with first < second) and the rank rule (every seed of
    first below every seed of second, U = n1 n2); with TEST_SEEDS or more of both ("tested"):
    the two-sided exact Mann-Whitney p and the ratio of the means first / second with its
    bootstrap interval (None where second has a seed <= 0)."""
    lo, hi = values(runs, prefix, dataset, first, key), values(runs, prefix, dataset, second, key)
    if not lo or not hi:
        return None
    u, p = stats.mann_whitney(lo, hi)
    tested = min(len(lo), len(hi)) >= TEST_SEEDS
    return {"first": lo, "second": hi, "n": (len(lo), len(hi)), "u": u, "rule": max(lo) < min(hi),
            "above": sum(x > min(hi) for x in lo), "tested": tested, "p": p if tested else None,
            "ratio": stats.bootstrap_ratio(lo, hi) if tested else None, "ties": stats.has_ties(lo, hi)}


def _ratio_cell(c: dict) -> str:
    return "-" if not c["ratio"] else "{r:.2f} [{a:.2f}, {b:.2f}]".format(
        r=c["ratio"][0], a=c["ratio"][1], b=c["ratio"][2])


def _comparison_line(setup: str, key: str, first: str, second: str, c: dict, alpha: float) -> str:
    p = pad("-", 8, ">") if c["p"] is None else f"{c['p']:>8.1e}"
    if not c["tested"]:
        verdict = _("< {n} seeds").format(n=TEST_SEEDS)
    else:
        verdict = _("yes") if c["p"] <= alpha else _("no")
    return (f"{pad(label(setup), 22)} {pad(_(KEY_LABELS[key]), 20)} "
            f"{pad(_('{first} vs {second}').format(first=label(first), second=label(second)), 37)} "
            f"{_spread(c['first'], '.3f'):>21} {_spread(c['second'], '.3f'):>21} "
            f"{c['n'][0]:>3}/{c['n'][1]:<3} {c['u']:>5g}/{c['n'][0] * c['n'][1]:<4} {p} "
            f"{pad(_ratio_cell(c), 18, '>')} {pad(verdict, 10, '>')}")


def comparisons(runs: dict, tests, prefixes=EXPERIMENT_PREFIXES) -> list[tuple]:
    """(set-up, measure, first, second, compare(...)) for every test and set-up with seeds."""
    found = [(s, *t, compare(runs, prefix, *t)) for s, prefix in prefixes.items() for t in tests]
    return [f for f in found if f[-1] is not None]


def comparison_table(runs: dict, tests, family: int | None = None, prefixes=EXPERIMENT_PREFIXES) -> str:
    """One line per test and set-up with seeds: both arms (mean [min, max] over the seeds), the
    seeds, U (of n1 n2), the two-sided exact p and the ratio of the means first / second with its
    95 % bootstrap interval (where both arms have TEST_SEEDS or more), and whether p passes
    ALPHA / family (Bonferroni over the `family` comparisons planned, default every test in every
    set-up)."""
    family = family or family_size(tests, prefixes)
    alpha = ALPHA / family
    head = (f"{pad(_('set-up'), 22)} {pad(_('measure'), 20)} {pad(_('first vs second'), 37)} "
            f"{pad(_('first'), 21, '>')} {pad(_('second'), 21, '>')} {pad(_('seeds'), 7, '^')} "
            f"{pad('U', 10, '^')} {pad('p', 8, '>')} {pad(_('first/second [95%]'), 18, '>')} "
            f"{pad('p < ' + format(alpha, '.4f'), 10, '>')}")
    return "\n".join([head] + [_comparison_line(*f, alpha) for f in comparisons(runs, tests, prefixes)])


def curve_table(runs: dict, prefix: str, key: str, arms=("none", "elementwise"),
                steps=(100, 200, 500, 1000, 1500, 2000, 2500), seeds_of: str | None = None) -> str:
    """A logged curve (key: "first_token_share" or "bos_cost") at some training steps: per arm,
    mean [min, max] over its seeds and their number; with seeds_of, one row per seed of that
    arm instead."""
    def at(curve, step):
        point = next(p for p in curve if p["step"] == step)
        return point[key] if key in point else point["loss_bos_blocked"] - point["val_loss"]

    lines = [f"{pad(_(KEY_LABELS[key]), 24)} " + " ".join(f"{step:>19,}" for step in steps) + "   n"]
    for arm in arms if seeds_of is None else (seeds_of,):
        found = [(k, m["curve"]) for k, m in runs.items()
                 if k.startswith(f"{prefix}/bb/{arm}/seed") and m.get("curve")]
        if seeds_of is None and found:
            lines.append(f"{pad(label(arm), 24)} " + " ".join(
                f"{_spread([at(c, step) for _k, c in found], '.2f'):>19}" for step in steps) + f" {len(found):>3}")
        elif found:
            for k, c in found:
                name = _("{arm}, seed {seed}").format(arm=label(arm), seed=k.rsplit("seed", 1)[1])
                lines.append(f"{pad(name, 24)} " + " ".join(f"{at(c, step):>19.2f}" for step in steps))
    return "\n".join(lines)


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


def test_line(c: dict, first: str, second: str, family: int, indent: str = "        ") -> str:
    """One comparison in words, by the seeds there are (a first line, then indented ones): with
    TEST_SEEDS or more per arm the ratio of the means and its bootstrap interval, U, the
    two-sided exact p, the rank rule and whether p passes ALPHA / family; with MIN_SEEDS or more
    the ratio of the means with its range over the pairings of one seed of each and the rank rule
    with its one-sided exact p, no test; with fewer, nothing more."""
    n1, n2 = c["n"]
    head = _("{first} vs {second}, {n1} against {n2} seeds:").format(
        first=label(first), second=label(second), n1=n1, n2=n2)
    if c["tested"]:
        rule = _("every seed below every seed: yes") if c["rule"] else _(
            "every seed below every seed: no ({above} of {n1} above the lowest of the second)").format(
            above=c["above"], n1=n1)
        alpha = ALPHA / family
        ratio = "" if not c["ratio"] else _(
            "ratio of the means {r:.2f} (95 % bootstrap interval {a:.2f}-{b:.2f}); ").format(
            r=c["ratio"][0], a=c["ratio"][1], b=c["ratio"][2])
        verdict = _("yes: the arms differ") if c["p"] <= alpha else _("no: these seeds do not separate the arms")
        return "\n".join([head, indent + ratio + _("U = {u:g} of {pairs}, two-sided exact p = {p:.2g}").format(
            u=c["u"], pairs=n1 * n2, p=c["p"]), indent + _(
            "{rule}; below {alpha:.4g} ({family} comparisons): {verdict}").format(
            rule=rule, alpha=alpha, family=family, verdict=verdict)])
    if min(n1, n2) < MIN_SEEDS:
        return _("{first} vs {second}, {n1} against {n2} seeds: too few seeds for a comparison").format(
            first=label(first), second=label(second), n1=n1, n2=n2)
    lower = stats.mann_whitney(c["first"], c["second"], "less")[1]
    ratio = "" if min(c["first"]) <= 0 else _(
        "{r:.1f}x lower on the means ({a:.1f}-{b:.1f}x over the pairings of one seed of each)").format(
        r=mean(c["second"]) / mean(c["first"]), a=min(c["second"]) / max(c["first"]),
        b=max(c["second"]) / min(c["first"]))
    return "\n".join([head] + ([indent + ratio] if ratio else []) + [indent + _(
        "every seed below every seed: {rule} (one-sided exact p = {p:.2g}); fewer than {n} seeds "
        "per arm: no test").format(rule=_("yes") if c["rule"] else _("no"), p=lower, n=TEST_SEEDS)])


# the blocks of the lesson's answer: (set-up, run-key prefix, its title, the arms listed, the
# comparisons drawn: (first, second, the family it belongs to))
HEADLINE = (
    ("sink", SHIPPED_PREFIXES["sink"], N_("{setup}, the 3-seed runs: {measure}"),
     ("none", "static", "elementwise"), (("elementwise", "none", PRIMARY),)),
    ("sink", EXPERIMENT_PREFIXES["sink"], N_("{setup}, the experiment: {measure}"),
     ("none", "elementwise", "wider"), (("elementwise", "none", PRIMARY), ("elementwise", "wider", CONTROLS))),
    ("course", EXPERIMENT_PREFIXES["course"], N_("{setup}, the experiment: {measure}"),
     ("none", "elementwise", "wider", "static", "headwise"),
     (("elementwise", "none", PRIMARY), ("elementwise", "wider", CONTROLS), ("wider", "none", CONTROLS),
      ("static", "none", CONTROLS), ("elementwise", "static", CONTROLS))),
)


def headline(runs: dict, blocks=HEADLINE, keys=("first_token_share", "bos_cost")) -> str:
    """The lesson's answer: per set-up, source of runs and measure (the share on BOS, the cost
    of blocking BOS), each arm's mean [min, max] over its seeds and their number, then each
    comparison in words (test_line). A block whose runs have not shipped says so."""
    lines = []
    for setup, prefix, title, arms, tests in blocks:
        if not any(n_seeds(runs, prefix, "bb", arm) for arm in arms):
            lines.append(_(title).format(setup=label(setup), measure=_("no run shipped yet")))
            continue
        for key in keys:
            lines.append(_(title).format(setup=label(setup), measure=_(KEY_LABELS[key])))
            for arm in arms:
                found = values(runs, prefix, "bb", arm, key)
                if found:
                    lines.append(f"    {pad(label(arm), 20)} {_spread(found, '.3f'):>22}  n = {len(found)}")
            for first, second, family in tests:
                c = compare(runs, prefix, key, first, second)
                if c is not None:
                    lines.append("    " + test_line(c, first, second, family_size(family)))
    return "\n".join(lines)
