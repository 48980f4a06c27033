"""Each published claim's rule applied to its runs: the measurement the claim names (a slope of the
last block's gradient against depth, the stream's growth, a first/last gradient ratio, which rates
post-norm fails at, rank ratios, ReZero's outcomes, attention-logit growth), judged by the
thresholds its claims file fixed. EVALUATORS maps each claim id (both rounds: "C1".."C7", "C1r2",
...) to its function; each takes (claim, RunSet) with every run present and returns (value: one
line of the deciding numbers, seen, details: a Markdown table).

Not here: finding the runs and deciding a run's outcome (claim_runs.py), "not run" and the
verdicts of both rounds (claims.py).
"""
import math

from stacklab.runs import runlog
from stacklab.studies.claim_runs import depths, outcome
from stacklab.studies.findings import fit_line, fmt


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


def last_gradient_against_depth_by_init(claim, rs):
    """C1: the slope s of ln g_last against ln L, per wiring and init: pre-norm's and post-norm's
    under Xavier within the rule's ranges, pre-norm's under the scaled init at least the rule's
    margin above its Xavier slope."""
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


def last_gradient_bounded_in_post(claim, rs):
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


def pre_stream_grows_linearly(claim, rs):
    """C2 and C2r2: in every seed pre-norm's act_rms^2 grows linearly with the boundary (slope > 0,
    R^2 above the rule's minimum), post-norm's act_rms stays in the rule's range, and (round 1, with
    sandwich) the last act_rms^2 orders post < sandwich < pre."""
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


def post_gradient_shrinks_toward_input(claim, rs):
    """C3: g_block[0] / g_block[L-1] in every seed below the rule's bound for post-norm under Xavier,
    above its bound for DeepNorm, within its range for post-norm under the scaled init."""
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


def post_gradient_shrinks_toward_input_xavier(claim, rs):
    """Round 2 of C3: post-norm's gradient grows with the block index (g_block[0] / g_block[L-1]
    below the rule's bound in every seed), DeepNorm's ratio above its bound in every seed."""
    rule, cfg = claim["rule"], claim["configs"]
    L, init = cfg["model.n_layer"][0], cfg["model.init"][0]
    tests = {"post": lambda x: x is not None and x < rule["post_max"],
             "deepnorm": lambda x: x is not None and x > rule["deepnorm_min"]}
    parts, ok, table = first_last_ratios(claim, rs, tests, n_layer=L, init=init)
    value = "; ".join(parts) + f" (need post < {rule['post_max']:g}, deepnorm > {rule['deepnorm_min']:g} in every seed)"
    return value, ok, table


def post_fails_without_warmup(claim, rs):
    """C4 and C4r2: the learning rates at which post-norm without warm-up fails in at least the
    rule's number of seeds while every other variant trains in every seed; seen at one rate or more."""
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


def attention_loses_rank_without_residual(claim, rs):
    """C5: at the rule's depth, attention-only without residual ends at a lower rank ratio than
    MLP-only without residual (in the mean and in every seed), and every residual wiring stays above
    the rule's floor at every depth and seed."""
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


def rezero_trains_deep_stacks(claim, rs):
    """C6: ReZero trains (claims.json's outcome) in every seed; a diverged seed's loss is in no mean."""
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


def logits_grow_without_qk_norm(claim, rs):
    """C7 and C7r2: in every seed the max attention logit grows by at least the rule's factor without
    QK-norm, by at most its factor with it, and ends below the run without it."""
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


EVALUATORS = {  # claim id (both rounds) -> its rule; the ids are the claims files' and findings.json's
    "C1": last_gradient_against_depth_by_init,
    "C2": pre_stream_grows_linearly,
    "C3": post_gradient_shrinks_toward_input,
    "C4": post_fails_without_warmup,
    "C5": attention_loses_rank_without_residual,
    "C6": rezero_trains_deep_stacks,
    "C7": logits_grow_without_qk_norm,
    "C1r2": last_gradient_bounded_in_post,
    "C2r2": pre_stream_grows_linearly,
    "C3r2": post_gradient_shrinks_toward_input_xavier,
    "C4r2": post_fails_without_warmup,
    "C7r2": logits_grow_without_qk_norm,
}
