"""The published claims, each judged seen or not seen on a study's runs by the rule and thresholds
fixed before its runs; "not run" (naming the runs missing) where its configs did not all run at
the tier's seeds and horizon. Two rounds: configs/experiments/claims.json (round 1, C1-C7) and
claims_round2.json (round 2, C1r2-C4r2 and C7r2: the paper's statement under conditions closer to
the paper's, at seeds no round-1 run used), which also holds why each round-1 claim was not seen
(why_not_seen: category a, b or c, with its text), read into the verdicts' `why`.

    verdicts = evaluate_all("runs/deep_stacking", tier="quick")   # [ClaimVerdict], round 1 then round 2
    outcome(run)    # "trained" | "diverged" | "plateau" as claims.json defines them ("incomplete" else)

Runs are found in OUT/<sweep> for the claims sweeps (tier.CLAIMS_SWEEPS) and matched to a claim's
configs by their config values, not by run ids: a key a claim does not name must hold its value
in configs/base.json (model, data, optimiser, batch), else stacklab's default (DEFAULTS).
Not here: the sweeps (configs/experiments/), the report's page (report.py).
"""
import argparse
import functools
import json
import math
import os
import re
import sys
from dataclasses import asdict, dataclass

from stacklab.runs import tier_lists as tier
from stacklab.runs import checkpoint_config, runlog
from stacklab.studies import rules_check
from stacklab.studies.findings import fit_line, fmt

CLAIMS_PATH = os.path.join(tier.QUICK_DIR, "claims.json")
ROUND2_PATH = os.path.join(tier.QUICK_DIR, "claims_round2.json")
BASE_PATH = os.path.join(tier.ROOT, "configs", "base.json")
# The keys claims.json names that base.json leaves out, and model.emb_scale and model.attention_kind,
# which every run must share with its claim's config too (a unit-scale run never stands in for one
# drawn at init_std, nor a shaped-attention run for a softmax one). Their
# values are stacklab's defaults, read from config_defaults.json (`stacklab validate --defaults`, pinned
# to the binary by test_checkpoint_config). A run whose config lacks one of these keys was made before
# stacklab had it, so it ran with the default.
DEFAULT_KEYS = ("model.residual_scale", "model.mlp", "model.qk_norm", "optim.warmup_iters", "model.emb_scale",
                "model.attention_kind")
DEFAULTS = {key: tier.get_key(checkpoint_config.defaults(), key) for key in DEFAULT_KEYS}
AXES = ("model.n_layer", "model.init", "optim.learning_rate")  # a claim's configs: lists crossed with variants
# claims_round2.json's why_not_seen categories (its "categories" holds their text, read by the report).
CATEGORIES = ("a", "b", "c")


@dataclass
class ClaimVerdict:
    id: str        # "C1"
    claim: str     # the claim text
    source: str    # "Xiong et al. 2020, arXiv 2002.04745, Theorem 1"
    rule: str      # rule.text
    value: str     # one short line of the deciding numbers with their seed spread
    verdict: str   # "seen" | "not seen" | "not run"
    details: str   # Markdown: per-seed numbers, per-rate counts
    round: int = 1  # 1: claims.json; 2: claims_round2.json
    why: str = ""   # a "not seen" round-1 claim: why (claims_round2.json's why_not_seen), else ""


def load_claims(path: str | None = None) -> dict:
    with open(path or CLAIMS_PATH, encoding="utf-8") as f:
        return json.load(f)


def margin(definitions: dict) -> float:
    """The trained / plateau margin in nats: the definitions' `margin` (claims.json, claims_round2.json),
    the number their `trained` and `plateau` texts state (test_claims pins the two equal)."""
    m = definitions.get("margin")
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0:
        raise ValueError(f"claims.json: definitions.margin: expected a positive number of nats, got {m!r}")
    return float(m)


def outcome(run, definitions: dict | None = None) -> str:
    """claims.json's classification of a training run: "diverged" (its summary says so:
    runlog.is_diverged), "trained" (completed, final val loss more than the margin below its own
    unigram loss), "plateau" (completed, at or above unigram - margin); "incomplete" for anything
    else (interrupted, failed, no final loss or unigram): not a result."""
    if runlog.is_diverged(run):
        return "diverged"
    uni, final = run.reference_losses.get("unigram"), run.final_val_loss
    if not runlog.is_completed(run) or uni is None or final is None:
        return "incomplete"
    m = margin(definitions) if definitions is not None else default_margin()
    return "trained" if final < uni - m else "plateau"


@functools.cache
def default_margin() -> float:
    """The margin of the claims.json in the repository, read once (outcome() is called per run)."""
    return margin(load_claims()["definitions"])


def source_text(src: dict) -> str:
    authors = src.get("authors", "")
    first = authors.split(",")[0].replace("et al.", "").split()
    who = (first[-1] if first else "?") + (" et al." if "," in authors or "et al" in authors else "")
    return f"{who} {src.get('year')}, arXiv {src.get('arxiv')}" + (f", {src['where']}" if src.get("where") else "")


# ---- the runs of a claim -----------------------------------------------------------------------

def depths(claim: dict, tier_name: str) -> list:
    """The claim's depths at this tier: the quick tier's from its metric's "(quick: {...})", if any."""
    ds = claim["configs"].get("model.n_layer", [])
    m = re.search(r"\(quick: \{([0-9, ]+)\}\)", claim.get("metric", ""))
    if tier_name == "quick" and m:
        return [int(x) for x in m.group(1).split(",")]
    return list(ds)


def points(claim: dict, tier_name: str) -> list:
    """[(variant name, {dotted key: value})]: every config the claim names, axes x variants."""
    cfg = claim["configs"]
    axes = {k: (depths(claim, tier_name) if k == "model.n_layer" else cfg[k]) for k in AXES if k in cfg}
    combos = [{}]
    for k, vs in axes.items():
        combos = [dict(c, **{k: v}) for c in combos for v in vs]
    return [(name, dict(c, **var)) for name, var in cfg["variants"].items() for c in combos]


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9)
    return a == b


def run_value(run, key):
    """The run's value of a dotted key; a DEFAULTS key its config lacks holds its default (the run
    was made before stacklab had the key, whose default keeps the old behaviour)."""
    v = tier.get_key(run.config, key)
    return DEFAULTS.get(key) if v is None else v


class RunSet:
    """The runs of the claims sweeps, matched to a claim's configs."""

    def __init__(self, runs, tier_name="quick", claims=None, base=None):
        self.runs, self.tier = list(runs), tier_name
        self.claims = claims or load_claims()
        self.defs = self.claims["definitions"]
        self.seeds = list(self.defs["seeds"][tier_name])
        self.horizon = self.defs["horizon"][tier_name]
        self.base = base if base is not None else tier.read_json(BASE_PATH)
        # What a run must share with its claim's config: the keys the claims name, and base.json's
        # model, data and optimiser and its batch (definitions.common); not seeds, names, logging.
        named = {k for c in self.claims["claims"] for _, p in points(c, "full") for k in p}
        common = {f"{sec}.{k}" for sec in ("model", "data", "optim") for k in (self.base.get(sec) or {})}
        self.keys = sorted(named | common | set(DEFAULTS) | {"train.batch_size"})

    def expected(self, point, key):
        if key in point:
            return point[key]
        v = tier.get_key(self.base, key)
        return DEFAULTS.get(key) if v is None else v

    def matches(self, run, point, probe):
        keys = [k for k in self.keys if not (probe and k.startswith("optim."))]  # a probe has no optimiser
        return all(same(run_value(run, k), self.expected(point, k)) for k in keys)

    def off_rules(self, point, probe, seed=None) -> list:
        """The [rules_check.Difference] of a run (or probe) of this point (its own keys, the claim's, equal;
        `seed` for a training run) whose other settings differ from what the claims fix (base.json's model,
        data, optimiser, batch and DEFAULTS): why it was not judged. [] when there is none."""
        keys = [k for k in self.keys if not (probe and k.startswith("optim."))]
        fixed = [{k: [self.expected(point, k)] for k in keys}]
        for r in self.runs:
            if bool(r.is_probe) != probe or (not probe and (r.config.get("train") or {}).get("seed") != seed):
                continue
            if not all(same(run_value(r, k), v) for k, v in point.items()):
                continue
            config = json.loads(json.dumps(r.config))
            for k in DEFAULT_KEYS:  # a key the run lacks holds its default (run_value)
                if tier.get_key(config, k) is None:
                    sec, leaf = k.split(".", 1)
                    config.setdefault(sec, {})[leaf] = DEFAULTS[k]
            diffs = rules_check.differences(config, fixed)
            if diffs:
                return diffs
        return []

    def probe(self, point):
        """{seed: that seed's layers} of the first probe matching the point (tier seeds only)."""
        for r in self.runs:
            if r.is_probe and self.matches(r, point, True):
                return {s["seed"]: s for s in r.probe_per_seed if s.get("seed") in self.seeds}
        return {}

    def horizon_of(self, claim):
        """The claim's horizon at this tier: its configs' own "horizon" (round 2's C4r2), else the
        definitions'."""
        return (claim["configs"].get("horizon") or self.defs["horizon"])[self.tier]

    def train(self, point, horizon=None):
        """({seed: run} of finished runs at the horizon (default the tier's), [why a seed is missing])."""
        horizon = horizon or self.horizon
        got, why = {}, {}
        for r in self.runs:
            seed = (r.config.get("train") or {}).get("seed")
            if r.is_probe or seed not in self.seeds or seed in got or not self.matches(r, point, False):
                continue
            steps = (r.config.get("train") or {}).get("max_iters")
            if steps != horizon:
                why[seed] = f"ran {steps} steps, the claim's horizon at the {self.tier} tier is {horizon}"
            elif outcome(r, self.defs) == "incomplete":
                why[seed] = f"status {r.status}"
            else:
                got[seed] = r
        for s in self.seeds:
            if s not in got and s not in why:
                diffs = self.off_rules(point, False, s)
                if diffs:
                    why[s] = f"not judged, its run's settings differ from the claim's: {rules_check.describe(diffs)}"
        return got, [f"seed {s}" + (f" ({why[s]})" if s in why else "") for s in self.seeds if s not in got]

    def missing(self, claim):
        """Human-readable list of the claim's configs and seeds with no usable run."""
        out = []
        for name, p in points(claim, self.tier):
            where = f"{name} " + " ".join(f"{k.split('.')[-1]}={v}" for k, v in p.items() if k in AXES)
            if claim["configs"]["mode"] == "probe":
                have = self.probe(p)
                lost = [s for s in self.seeds if s not in have]
                if lost:
                    diffs = [] if have else self.off_rules(p, True)
                    off = (f" (not judged, its probe's settings differ from the claim's: "
                           f"{rules_check.describe(diffs)})" if diffs else "")
                    out.append(f"{where}: probe seed(s) {', '.join(map(str, lost))}{off}")
            else:
                lost = self.train(p, self.horizon_of(claim))[1]
                if lost:
                    out.append(f"{where}: {', '.join(lost)}")
        return out


def claims_runs(out_dir: str) -> list:
    """The runs of the claims sweeps (both rounds) under out_dir: OUT/<sweep>/..."""
    dirs = [os.path.join(out_dir, s) for s in tier.CLAIMS_SWEEPS if os.path.isdir(os.path.join(out_dir, s))]
    # Each sweep's runs are the ones its manifest lists (runlog.sweep_runs), never a <dir>.changed-N beside them.
    return [r for d in dirs for r in runlog.sweep_runs(d)]


def load_runset(out_dir: str, tier_name: str = "quick", claims: dict | None = None) -> RunSet:
    return RunSet(claims_runs(out_dir), tier_name, claims)


# ---- numbers ---------------------------------------------------------------------------------

def spread(vals):
    v = [x for x in vals if x is not None]
    return f"seeds {fmt(min(v))}..{fmt(max(v))}" if v else "no seeds"


def mean(vals):
    v = [x for x in vals if x is not None]
    return sum(v) / len(v) if v else None


def loglog_slope(pts):
    """Slope of ln g = a + s ln L over [(L, g)] with g > 0; None with fewer than 2 points."""
    pts = [(d, g) for d, g in pts if g is not None and g > 0]
    fit = fit_line([math.log(d) for d, _ in pts], [math.log(g) for _, g in pts]) if len(pts) >= 2 else None
    return fit[0] if fit else None


def last(seq):
    return seq[-1] if seq else None


def inside(x, lo_hi):
    return x is not None and lo_hi[0] <= x <= lo_hi[1]


def logit_growth(run):
    """(m at step 0, m at the last layers record, growth) with m = max over blocks of attn_logit_max;
    a diverged run's last record is its last one before the divergence step."""
    stop = run.diverged_step if runlog.is_diverged(run) else None
    ms = []
    for rec in sorted(run.records["layers"], key=lambda r: r.get("step", 0)):
        vals = [v for v in rec.get("attn_logit_max") or [] if isinstance(v, (int, float)) and math.isfinite(v)]
        if vals and (stop is None or rec.get("step", 0) < stop):
            ms.append((rec.get("step", 0), max(vals)))
    if not ms or ms[0][0] != 0:
        return None, None, None
    m0, m1 = ms[0][1], ms[-1][1]
    return m0, m1, (m1 / m0 if m0 > 0 else None)


# ---- the claims ------------------------------------------------------------------------------
# Each takes (claim, RunSet) with every run present and returns (value, seen, details).

def variant(claim, name, **axes):
    """The point of a claim's variant with its axes set (n_layer, init, learning rate)."""
    keys = {"n_layer": "model.n_layer", "init": "model.init", "lr": "optim.learning_rate"}
    return dict({keys[k]: v for k, v in axes.items()}, **claim["configs"]["variants"][name])


def last_block_slopes(claim, rs):
    """C1's numbers: {(variant, init): (slope of the seed means, [slope per seed])} of ln g_last
    against ln L over the tier's depths, and the table's rows and head."""
    ds = depths(claim, rs.tier)
    slopes, rows = {}, []
    for init in claim["configs"]["model.init"]:
        for name in claim["configs"]["variants"]:
            per = {d: rs.probe(variant(claim, name, n_layer=d, init=init)) for d in ds}
            g = {d: {s: last(v.get("grad_norm")) for s, v in per[d].items()} for d in ds}
            s_mean = loglog_slope([(d, mean(g[d].values())) for d in ds])
            s_seed = [loglog_slope([(d, g[d].get(s)) for d in ds]) for s in rs.seeds]
            slopes[(name, init)] = (s_mean, s_seed)
            rows.append(f"| {name} | {init} | " + " | ".join(fmt(mean(g[d].values())) for d in ds)
                        + f" | {fmt(s_mean)} | {', '.join(fmt(x) for x in s_seed)} |")
    head = ("| wiring | init | " + " | ".join(f"g_last L={d}" for d in ds) + " | slope s (seed means) | s per seed |\n"
            "|---|---|" + "---|" * len(ds) + "---|---|\n")
    return slopes, head + "\n".join(rows)


def c1(claim, rs):
    rule = claim["rule"]
    slopes, table = last_block_slopes(claim, rs)
    pre_x, post_x, pre_s = (slopes[("pre", "xavier")][0], slopes[("post", "xavier")][0], slopes[("pre", "scaled")][0])
    seen = (inside(pre_x, rule["xavier_pre_slope"]) and inside(post_x, rule["xavier_post_slope"])
            and pre_s is not None and pre_x is not None and pre_s - pre_x >= rule["scaled_minus_xavier_pre_slope_min"])

    def sl(name, init):
        s_mean, s_seed = slopes[(name, init)]
        return f"s({name}, {init}) = {fmt(s_mean)} ({spread(s_seed)})"
    diff = fmt(pre_s - pre_x) if pre_s is not None and pre_x is not None else "n/a"
    normal = ", ".join(f"s({n}) = {fmt(slopes[(n, 'normal')][0])}" for n in claim["configs"]["variants"]
                       if (n, "normal") in slopes)
    value = (f"{sl('pre', 'xavier')}; {sl('post', 'xavier')}; {sl('pre', 'scaled')} (minus xavier's: {diff}); "
             f"normal init: {normal}")
    return value, seen, table


def c1r2(claim, rs):
    """Round 2 of C1 (Theorem 1 as stated): post-norm's last-block gradient does not grow with L
    (s(post) at most the rule's allowance), pre-norm's falls (s(pre) < 0) and below post-norm's."""
    rule = claim["rule"]
    init = claim["configs"]["model.init"][0]
    slopes, table = last_block_slopes(claim, rs)
    (pre, pre_seed), (post, post_seed) = slopes[("pre", init)], slopes[("post", init)]
    ok_post = post is not None and post <= rule["post_slope_max"]
    ok_pre = pre is not None and post is not None and pre < rule["pre_slope_below"] and pre < post
    value = (f"s(post) = {fmt(post)} ({spread(post_seed)}), need <= {rule['post_slope_max']:g}: "
             f"{'yes' if ok_post else 'no'}; s(pre) = {fmt(pre)} ({spread(pre_seed)}), need < "
             f"{rule['pre_slope_below']:g} and < s(post): {'yes' if ok_pre else 'no'} (the bound's rate: -0.5)")
    return value, ok_post and ok_pre, table


def c2(claim, rs):
    rule = claim["rule"]
    L = claim["configs"]["model.n_layer"][0]
    init = claim["configs"]["model.init"][0]
    data = {n: rs.probe(variant(claim, n, n_layer=L, init=init)) for n in claim["configs"]["variants"]}
    has_sand = "sandwich" in data  # round 2 (C2r2) judges pre and post only
    rows, ok, fits, post_rng, last_sq = [], True, [], [], {}
    for s in rs.seeds:
        rms = {n: (data[n][s].get("act_rms") or [])[1:L + 1] for n in data}  # boundaries 1..L
        fit = fit_line(list(range(1, len(rms["pre"]) + 1)), [x * x for x in rms["pre"]])
        fits.append(fit)
        post_ok = len(rms["post"]) == L and all(inside(x, rule["post_rms_range"]) for x in rms["post"])
        post_rng += rms["post"]
        sq = {n: (rms[n][-1] ** 2 if rms[n] else None) for n in rms}
        last_sq[s] = sq
        sand_ok = None not in sq.values() and sq["post"] < sq["sandwich"] < sq["pre"] if has_sand else True
        pre_ok = fit is not None and fit[0] > 0 and fit[2] > rule["pre_r2_min"]
        ok &= pre_ok and post_ok and sand_ok
        order = ("post", "sandwich", "pre") if has_sand else ("post", "pre")
        rows.append(f"| {s} | {fmt(fit[0]) if fit else 'n/a'} | {fmt(fit[2]) if fit else 'n/a'} | "
                    f"{fmt(min(rms['post'], default=None))}..{fmt(max(rms['post'], default=None))} | "
                    + " < ".join(fmt(sq[n]) for n in order)
                    + (f": {'yes' if sand_ok else 'no'} |" if has_sand else " |"))
    sl = [f[0] if f else None for f in fits]
    r2 = [f[2] if f else None for f in fits]
    r2_min = min((x for x in r2 if x is not None), default=None)
    value = (f"pre: slope of act_rms^2 vs l = {fmt(mean(sl))} ({spread(sl)}), R^2 min {fmt(r2_min)}; "
             f"post: act_rms {fmt(min(post_rng, default=None))}..{fmt(max(post_rng, default=None))} over boundaries "
             f"and seeds; last act_rms^2 {'/'.join(order)} = " + ", ".join(
                 "/".join(fmt(last_sq[s][n]) for n in order) for s in rs.seeds))
    head = (f"| seed | pre slope | pre R^2 | post act_rms range | last act_rms^2 {' < '.join(order)} |\n"
            "|---|---|---|---|---|\n")
    return value, ok, head + "\n".join(rows)


def c3(claim, rs):
    rule = claim["rule"]
    L = claim["configs"]["model.n_layer"][0]
    tests = {"post-xavier": lambda x: x is not None and x < rule["post_xavier_max"],
             "deepnorm-xavier": lambda x: x is not None and x > rule["deepnorm_xavier_min"],
             "post-scaled": lambda x: inside(x, rule["post_scaled_range"])}
    parts, ok, table = first_last_ratios(claim, rs, tests, n_layer=L)
    return "; ".join(parts), ok, table


def first_last_ratios(claim, rs, tests, **where):
    """C3's measurement, both rounds: per variant of the claim (probed with `where`), each seed's
    g_block[0] / g_block[L-1] judged by tests[variant]; (value parts, all good, Markdown table)."""
    ok, parts, rows = True, [], []
    for name in claim["configs"]["variants"]:
        per = rs.probe(variant(claim, name, **where))
        ratios = [(lambda g: g[0] / g[-1] if g and g[-1] else None)(per[s].get("grad_norm")) for s in rs.seeds]
        good = [tests[name](x) for x in ratios]
        ok &= all(good)
        parts.append(f"{name} {fmt(mean(ratios))} ({spread(ratios)})")
        rows.append(f"| {name} | " + ", ".join(fmt(x) for x in ratios) + f" | {sum(good)} of {len(good)} |")
    head = "| wiring | g_block[0] / g_block[L-1] per seed | seeds within the rule |\n|---|---|---|\n"
    return parts, ok, head + "\n".join(rows)


def c3r2(claim, rs):
    """Round 2 of C3: post-norm's gradient grows with the block index (g_block[0] / g_block[L-1]
    below the rule's bound in every seed), DeepNorm's ratio above its bound in every seed."""
    rule, cfg = claim["rule"], claim["configs"]
    L, init = cfg["model.n_layer"][0], cfg["model.init"][0]
    tests = {"post": lambda x: x is not None and x < rule["post_max"],
             "deepnorm": lambda x: x is not None and x > rule["deepnorm_min"]}
    parts, ok, table = first_last_ratios(claim, rs, tests, n_layer=L, init=init)
    value = "; ".join(parts) + f" (need post < {rule['post_max']:g}, deepnorm > {rule['deepnorm_min']:g} in every seed)"
    return value, ok, table


def c4(claim, rs):
    need = claim["rule"]["post_fails_min"][rs.tier]
    L, init = claim["configs"]["model.n_layer"][0], claim["configs"]["model.init"][0]
    names = list(claim["configs"]["variants"])
    held, rows, counts = [], [], []
    for lr in claim["configs"]["optim.learning_rate"]:
        out = {}
        for n in names:
            runs = rs.train(variant(claim, n, n_layer=L, init=init, lr=lr), rs.horizon_of(claim))[0]
            out[n] = [outcome(r, rs.defs) for _, r in sorted(runs.items())]
        fails = sum(o != "trained" for o in out["post"])
        others = all(o == "trained" for n in names if n != "post" for o in out[n])
        if fails >= need and others:
            held.append(lr)
        counts.append(f"lr {lr:g}: post fails {fails}/{len(out['post'])}, "
                      + ", ".join(f"{n} trains {out[n].count('trained')}/{len(out[n])}" for n in names if n != "post"))
        rows.append(f"| {lr:g} | " + " | ".join(", ".join(out[n]) for n in names)
                    + f" | {'yes' if lr in held else 'no'} |")
    where = f"holds at lr {', '.join(f'{x:g}' for x in held)}" if held else "holds at no rate"
    value = where + "; " + "; ".join(counts)
    head = ("| lr | " + " | ".join(f"{n} (per seed)" for n in names) + f" | post fails in >= {need}, others train |\n"
            "|---|" + "---|" * len(names) + "---|\n")
    return value, bool(held), head + "\n".join(rows)


def c5(claim, rs):
    rule, ds = claim["rule"], depths(claim, rs.tier)
    init = claim["configs"]["model.init"][0]
    rank = {(n, d): {s: last(v.get("rank_ratio")) for s, v in rs.probe(variant(claim, n, n_layer=d, init=init)).items()}
            for n in claim["configs"]["variants"] for d in ds}
    k = rule["compare_depth"]
    a, m = rank[("nores-attn", k)], rank[("nores-mlp", k)]
    ok1 = (mean(a.values()) is not None and mean(m.values()) is not None and mean(a.values()) < mean(m.values())
           and all(a[s] is not None and m[s] is not None and a[s] < m[s] for s in rs.seeds))
    res = [(n, d, s, rank[(n, d)][s]) for n in ("res-attn", "res-mlp") for d in ds for s in rs.seeds]
    low = [f"{n} L={d} seed {s}: {fmt(x)}" for n, d, s, x in res if x is None or x <= rule["residual_rank_min"]]
    res_min = min((x for *_, x in res if x is not None), default=None)
    value = (f"L={k}: nores-attn {fmt(mean(a.values()))} ({spread(a.values())}) vs nores-mlp {fmt(mean(m.values()))} "
             f"({spread(m.values())}); residual wirings min {fmt(res_min)} "
             f"over depths and seeds (need > {rule['residual_rank_min']:g})")

    def cell(n, d):
        return f"{fmt(mean(rank[(n, d)].values()))} ({', '.join(fmt(rank[(n, d)][s]) for s in rs.seeds)})"
    rows = [f"| {n} | " + " | ".join(cell(n, d) for d in ds) + " |" for n in claim["configs"]["variants"]]
    head = ("| wiring | " + " | ".join(f"rank ratio L={d} (per seed)" for d in ds) + " |\n|---|"
            + "---|" * len(ds) + "\n")
    tail = ("\n\n(i) nores-attn below nores-mlp at L=" + str(k) + f": {'yes' if ok1 else 'no'}; (ii) "
            + ("residual wirings above the floor everywhere" if not low
               else "at or below the floor: " + "; ".join(low)))
    return value, ok1 and not low, head + "\n".join(rows) + tail


def c6(claim, rs):
    name = next(iter(claim["configs"]["variants"]))
    cfg = claim["configs"]
    runs = rs.train(variant(claim, name, n_layer=cfg["model.n_layer"][0], init=cfg["model.init"][0],
                            lr=cfg["optim.learning_rate"][0]))[0]
    outs = {s: outcome(r, rs.defs) for s, r in sorted(runs.items())}
    # A diverged run's final val loss is its last eval before the divergence, not a result: it is
    # in no mean, and its row says so.
    finals = [r.final_val_loss for s, r in sorted(runs.items()) if outs[s] != "diverged"]
    n_div = list(outs.values()).count("diverged")
    uni = next((r.reference_losses.get("unigram") for r in runs.values()), None)
    value = (f"trained in {list(outs.values()).count('trained')} of {len(outs)} seeds; final val loss "
             f"{fmt(mean(finals), 4)} ({spread(finals)}"
             + (f"; {n_div} diverged seed(s) left out" if n_div else "") + f"), unigram {fmt(uni, 4)}")
    rows = [f"| {s} | {outs[s]} | "
            + ("n/a (diverged" + (f" at step {runs[s].diverged_step}" if runs[s].diverged_step is not None else "")
               + ")" if outs[s] == "diverged" else fmt(runs[s].final_val_loss, 4)) + " |" for s in outs]
    head = "| seed | outcome | final val loss |\n|---|---|---|\n"
    return value, all(o == "trained" for o in outs.values()), head + "\n".join(rows)


def c7(claim, rs):
    rule, cfg = claim["rule"], claim["configs"]
    g = {}
    for name in cfg["variants"]:
        runs = rs.train(variant(claim, name, n_layer=cfg["model.n_layer"][0], init=cfg["model.init"][0],
                                lr=cfg["optim.learning_rate"][0]))[0]
        g[name] = {s: logit_growth(r) + (outcome(r, rs.defs),) for s, r in runs.items()}
    without = next(n for n, v in cfg["variants"].items() if not v.get("model.qk_norm"))
    with_ = next(n for n in cfg["variants"] if n != without)
    ok, rows = True, []
    for s in rs.seeds:
        (a0, a1, ga, oa), (b0, b1, gb, ob) = g[without][s], g[with_][s]
        good = (ga is not None and gb is not None and ga >= rule["growth_without_min"] and gb <= rule["growth_with_max"]
                and b1 < a1)
        ok &= good
        rows.append(f"| {s} | {fmt(a0)} -> {fmt(a1)} ({oa}) | {fmt(ga)} | {fmt(b0)} -> {fmt(b1)} ({ob}) | {fmt(gb)} | "
                    f"{'yes' if good else 'no'} |")

    def col(name, i):
        return [g[name][s][i] for s in rs.seeds]
    value = (f"growth({without}) = {fmt(mean(col(without, 2)))} ({spread(col(without, 2))}); growth({with_}) = "
             f"{fmt(mean(col(with_, 2)))} ({spread(col(with_, 2))}); last m: {with_} {fmt(mean(col(with_, 1)))}, "
             f"{without} {fmt(mean(col(without, 1)))}")
    head = (f"| seed | m {without} (step 0 -> last) | growth | m {with_} | growth | rule holds |\n"
            "|---|---|---|---|---|---|\n")
    return value, ok, head + "\n".join(rows)


EVALUATORS = {"C1": c1, "C2": c2, "C3": c3, "C4": c4, "C5": c5, "C6": c6, "C7": c7,
              "C1r2": c1r2, "C2r2": c2, "C3r2": c3r2, "C4r2": c4, "C7r2": c7}


def evaluate(claim: dict, rs: RunSet) -> ClaimVerdict:
    v = ClaimVerdict(id=claim["id"], claim=claim["claim"], source=source_text(claim["source"]),
                     rule=claim["rule"]["text"], value="", verdict="not run", details="")
    missing = rs.missing(claim)
    if claim["id"] not in EVALUATORS:
        v.value = f"no evaluator for {claim['id']} in stacklab/studies/claims.py"
        return v
    if missing:
        more = "; ..." if len(missing) > 4 else ""
        v.value = (f"runs missing ({len(missing)} config{'s' if len(missing) > 1 else ''}): "
                   + "; ".join(missing[:4]) + more)
        v.details = (f"Missing at the {rs.tier} tier's seeds and horizon:\n\n"
                     + "\n".join(f"- {m}" for m in missing))
        return v
    v.value, seen, v.details = EVALUATORS[claim["id"]](claim, rs)
    v.verdict = "seen" if seen else "not seen"
    return v


def why_text(reasons: list, categories: dict) -> str:
    """One paragraph from a claim's why_not_seen: "Category b, <its text>: <reason>. Category c, ..."
    (categories by letter, never "(b)": the findings were once lettered that way)."""
    out = []
    for r in reasons or []:
        if r.get("category") not in CATEGORIES:
            raise ValueError(f"why_not_seen: category '{r.get('category')}' is not one of {', '.join(CATEGORIES)}")
        out.append(f"Category {r['category']}, {categories.get(r['category'], '')}: {r['text']}")
    return " ".join(out)


def rounds(claims_path: str | None = None) -> list[tuple[int, dict]]:
    """[(round, claims doc)]: claims.json and claims_round2.json; or only the file given (its "round",
    default 1)."""
    if claims_path:
        doc = load_claims(claims_path)
        return [(doc.get("round", 1), doc)]
    return [(1, load_claims(CLAIMS_PATH)), (2, load_claims(ROUND2_PATH))]


def evaluate_all(out_dir: str, claims_path: str | None = None, tier: str = "quick") -> list[ClaimVerdict]:
    """Every claim of both rounds (or of the one file given) judged on the claims sweeps under
    out_dir (OUT/<sweep>/...); a round-1 claim not seen carries its why_not_seen as `why`."""
    docs = rounds(claims_path)
    runs = claims_runs(out_dir)
    why = next((d.get("why_not_seen") or {} for _, d in docs if d.get("why_not_seen")), {})
    cats = next((d.get("categories") or {} for _, d in docs if d.get("categories")), {})
    out = []
    for rnd, doc in docs:
        rs = RunSet(runs, tier, doc)
        for c in doc["claims"]:
            v = evaluate(c, rs)
            v.round = rnd
            if rnd == 1 and v.verdict == "not seen" and c["id"] in why:
                v.why = why_text(why[c["id"]], cats)
            out.append(v)
    return out


def over_runs(verdicts: list[str]) -> str:
    """One claim's verdict over several runs of the study (e.g. two numeric paths): the verdict they
    share; "not run" when any of them did not run it; else "mixed" (seen in one, not seen in another)."""
    if "not run" in verdicts:
        return "not run"
    return verdicts[0] if len(set(verdicts)) == 1 else "mixed"


def compare_table(dirs: list[str], per_dir: list[list[ClaimVerdict]]) -> str:
    """Markdown: per claim, its verdict in each study dir and over all of them (over_runs)."""
    head = ("| claim | " + " | ".join(f"`{d}`" for d in dirs) + " | over the runs |\n|---|"
            + "---|" * (len(dirs) + 1))
    rows = []
    for i, v in enumerate(per_dir[0]):
        vs = [p[i].verdict for p in per_dir]
        rows.append(f"| {v.id} | " + " | ".join(f"{x.verdict}: {x.value}" for x in (p[i] for p in per_dir))
                    + f" | **{over_runs(vs)}** |")
    return head + "\n" + "\n".join(rows)


def main(argv=None):
    p = argparse.ArgumentParser(description="Judge the claims of configs/experiments/claims.json (round 1) and "
                                "claims_round2.json (round 2) on a study's runs.")
    p.add_argument("out_dir", help="the study dir, e.g. runs/deep_stacking (its claims sweeps: OUT/<sweep>/)")
    p.add_argument("--tier", choices=("quick", "full"), default="quick", help="the tier's seeds and horizon")
    p.add_argument("--claims", help="judge only this claims file (default: both rounds, "
                   "configs/experiments/claims.json and claims_round2.json)")
    p.add_argument("--json", help="also write the verdicts as JSON to this file")
    p.add_argument("--compare", nargs="+", metavar="OTHER_OUT",
                   help="also judge these study dirs (e.g. the same tier under OPENBLAS_CORETYPE=Haswell) and print "
                        "each claim's verdict in every dir and over them: the shared verdict, or mixed")
    args = p.parse_args(argv)
    dirs = [args.out_dir] + (args.compare or [])
    for d in dirs:
        if not os.path.isdir(d):
            print(f"claims.py: {d}: no such directory", file=sys.stderr)
            return 1
    per_dir = []
    for d in dirs:
        try:
            per_dir.append(evaluate_all(d, args.claims, args.tier))
        except (OSError, ValueError, KeyError, tier.TierError) as e:
            print(f"claims.py: judging {d} with {args.claims or CLAIMS_PATH + ' and ' + ROUND2_PATH}: {e}",
                  file=sys.stderr)
            return 1
    verdicts = per_dir[0]
    if args.compare:
        print(compare_table(dirs, per_dir))
        if args.json:
            with open(args.json, "w", encoding="utf-8") as fh:
                json.dump({"tier": args.tier, "dirs": dirs,
                           "claims": [{"id": v.id, "over_runs": over_runs([p[i].verdict for p in per_dir]),
                                       "verdicts": [asdict(p[i]) for p in per_dir]}
                                      for i, v in enumerate(verdicts)]}, fh, indent=1)
        return 0
    print("| claim | round | source | verdict | deciding numbers |\n|---|---|---|---|---|")
    for v in verdicts:
        print(f"| {v.id} | {v.round} | {v.source} | **{v.verdict}** | {v.value} |")
    for v in verdicts:
        if v.why:
            print(f"\n{v.id} not seen, why: {v.why}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"tier": args.tier, "claims": [asdict(v) for v in verdicts]}, fh, indent=1)
    return 0
