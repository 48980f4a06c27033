"""The findings of the deep-stacking report, each computed from the runs and marked seen or not
seen against its stated criterion, numbered as in README.md: findings 1, 2 and 4 from the probes
(seed means), finding 2's training part, 3 and 5 from the training points (wiring, depth, learning
rate) pooled over the training sweeps (training.Training), every seed aggregated (study_stats.py);
and every run's escape step. Used by report.py. Not here: loading sweeps, tables, figures, writing files (report.py).
"""
import math
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from stacklab.runs import runlog
from stacklab.studies import stats
# The training points pooled over the sweeps, read here by the findings and their importers (judge, text, tables).
from stacklab.studies.training import Training, seed_list, train_ratios  # noqa: F401

RES = ("pre-layernorm-res", "post-layernorm-res", "none-res")
NORES_NORM = ("pre-layernorm-nores", "post-layernorm-nores")
NORES = NORES_NORM + ("none-nores",)
GRID_WIRINGS = RES + NORES

# Thresholds of the findings (stated in the report next to each finding).
F1_MAX_FACTOR = 0.9       # finding 1: per-layer factor of the gradient ratio at most this ...
F1_MIN_R2 = 0.9           # ... with a log-linear fit this good
F2_RATIO_BAND = (1e-2, 1e2)  # finding 2: first/last block gradient ratio at init inside this band
F2_MAX_RANK = 0.1         # finding 2: rank ratio at the last boundary of the deepest stack below this
F2_TRAIN_RATIO = 1e-2     # finding 2: first/last ratio during training (median of records after step 0) below this
F3_TRAIN_MARGIN = 0.05    # finding 3: "trains": final val loss at least this far below the unigram loss
F3_STUCK_MARGIN = 0.05    # finding 3: "stuck": final val loss above unigram - this
F3_DEEP = 8               # finding 3: "stuck" is tested at depths >= this
F4_PRE = (-0.7, -0.3)     # finding 4: pre-norm slope of log g_last vs log L inside this
F4_POST = (-0.2, 0.2)     # finding 4: post-norm slope inside this


def fmt(v, nd=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e4):
        return f"{v:.2e}"
    return f"{v:.{nd}g}" if abs(v) >= 1 else f"{v:.{nd}f}".rstrip("0").rstrip(".") or "0"


class Line(NamedTuple):
    slope: float      # b
    intercept: float  # a
    r2: float
    ssr: float        # the residual sum of squares


def fit_line(x, y) -> Line | None:
    """Least squares y = a + b x (the package's one line fit: the findings, the claims, the escape
    step against depth); None with fewer than 2 distinct x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    b, a = np.polyfit(x, y, 1)
    ssr = float(((y - (a + b * x)) ** 2).sum())
    ss = float(((y - y.mean()) ** 2).sum())
    return Line(float(b), float(a), 1.0 - ssr / ss if ss > 0 else 1.0, ssr)


# How many units of rounding (eps x the largest |y|) a residual of a least-squares line may be and still
# be rounding: the same fit run by other numpy/BLAS kernels moves its residual by a few units (issue 60:
# 3.9e-30 against 6.3e-30 for an exact two-point line at ln step ~ 7); a measured residual is many orders
# above it.
ROUNDING_UNITS = 1000


def rounding_ssr(y) -> float:
    """The residual sum of squares a least-squares line through the values y can show from rounding
    alone: n (ROUNDING_UNITS eps max(1, |y|))^2. A fit whose SSR is at or below it is exact: its
    residual is rounding noise, not a figure (its value differs from one CPU's kernels to another's)."""
    y = np.asarray(y, float)
    scale = max(1.0, float(np.max(np.abs(y)))) if len(y) else 1.0
    return float(len(y) * (ROUNDING_UNITS * np.finfo(float).eps * scale) ** 2)


def probe_mean(run, key):
    return runlog.Run.layers_at(run, 0).get(key) or []


# ---- findings --------------------------------------------------------------------------------

# Each finding's one-line title, for the report's summary (the claim itself is the full sentence).
TITLES = {1: "No residual, no norm: gradients vanish toward the first block, exponentially in depth",
          2: "No residual, with a norm: moderate gradients at init, but the tokens collapse and the early "
             "blocks' gradients vanish in training",
          3: "{within}, residual stacks leave the plateau at every depth; stacks without residual stay on it, "
             "worse with depth",
          4: "The last block's gradient: L^-1/2 in pre-norm, flat in post-norm (Xiong et al. 2020)",
          5: "Without a residual, no learning rate tried leaves the unigram plateau {within} (L >= 2)"}


@dataclass
class Finding:
    """A finding judged: its claim and rule, every number measured, the verdict; findings.json's record
    (to_json)."""
    id: int
    claim: str
    criterion: str
    measured: list      # one line per number it was judged on
    seen: bool
    note: str
    title: str
    deciding: str       # one short line of the numbers the verdict turns on (each also in measured)
    parts: dict = None  # finding 3's parts (i)-(iii): "seen" | "not seen" | "not run"; None for the others

    def to_json(self) -> dict:
        d = asdict(self)
        if self.parts is None:
            del d["parts"]
        return d


def finding(fid, claim, criterion, rows, seen, note="", deciding="", within="") -> Finding:
    """A finding's verdict. `deciding`: one short line of the numbers its verdict turns on, for the
    report's summary; every number in it is also in `rows`. `within`: the horizon a title names
    (finding 5's, steps_text)."""
    return Finding(fid, claim, criterion, rows, bool(seen), note, title(fid, within),
                   deciding or (rows[-1] if rows else ""))


def title(fid, within="") -> str:
    """Finding fid's title with the horizon it holds within (steps_text; "" for none): "Within 150 steps,
    residual stacks leave the plateau ..." (finding 3), "... leaves the unigram plateau within 150 steps" (5)."""
    t = TITLES[fid].format(within=within).removeprefix(", ")
    return t[:1].upper() + t[1:]


def steps_text(runs) -> str:
    """The horizon a finding about trainings holds within, from the runs' last eval steps: "within
    150 steps", "within 150-300 steps", or "within the steps trained" when no run has an eval. Finding
    5 is about that horizon only: given longer, the same stacks can leave the plateau (docs/study.md)."""
    last = sorted({h for h in (stats.escape_step(r, None)[1] for r in runs) if h is not None})
    if not last:
        return "within the steps trained"
    return f"within {last[0]:g} steps" if len(last) == 1 else f"within {last[0]:g}-{last[-1]:g} steps"


def finding_1(probe):
    claim = ("Without residual or norm, gradients vanish toward the first block at initialisation, "
             "exponentially in depth.")
    crit = (f"`f(x)` stacks, probe seed means: fit ln(g_first/g_last) = a + b*L over the depths L >= 2, and "
            f"ln g_l = c + k*l over the blocks of the deepest stack; seen if both per-layer factors exp(b) and "
            f"exp(-k) are <= {F1_MAX_FACTOR} and the within-stack fit has R^2 >= {F1_MIN_R2} (a 2-point fit has "
            f"R^2 = 1 trivially, hence the within-stack check)")
    pts, rows, zero = [], [], []
    for r in sorted(probe.by("none-nores"), key=lambda r: r.n_layer):
        g = probe_mean(r, "grad_norm")
        ratio = (g[0] / g[-1]) if g and g[0] is not None and g[-1] else None
        rows.append(f"L={r.n_layer}: g_first/g_last = {fmt(ratio)}")
        if r.n_layer >= 2:
            if ratio is not None and ratio > 0:
                pts.append((r.n_layer, math.log(ratio)))
            else:
                zero.append(r.n_layer)
    fit = fit_line(*zip(*pts)) if len(pts) >= 2 else None
    if fit is None:
        return finding(1, claim, crit, rows + ["fewer than 2 depths >= 2 with a finite ratio"], False,
                       deciding="fewer than 2 depths >= 2 with a finite ratio: no fit")
    b, r2 = fit.slope, fit.r2
    factor = math.exp(b)
    rows.append(f"fit over L={', '.join(str(p[0]) for p in pts)}: b = {fmt(b)} per layer, "
                f"factor exp(b) = {fmt(factor)}, R^2 = {fmt(r2)}")
    if zero:
        rows.append(f"first-block gradient exactly 0 (below float32's range: under 1.2e-38 with subnormals "
                    f"flushed, the default; under 1.4e-45 without) at L={zero}: left out of the fit")
    # Inside the deepest stack: log g_l vs l, over the blocks whose gradient did not underflow to 0.
    deep = max(probe.by("none-nores"), key=lambda r: r.n_layer, default=None)
    f2 = None
    if deep is not None and deep.n_layer >= 3:
        g = np.array([np.nan if v is None else v for v in probe_mean(deep, "grad_norm")], float)
        ok = np.isfinite(g) & (g > 0)
        f2 = fit_line(np.arange(len(g))[ok], np.log(g[ok])) if ok.sum() >= 3 else None
        if f2:
            rows.append(f"inside L={deep.n_layer} ({int(ok.sum())} of {len(g)} blocks with a non-zero gradient): "
                        f"g_l shrinks by exp(-k) = {fmt(math.exp(-f2[0]))} per block toward block 0 "
                        f"(R^2 = {fmt(f2[2])})")
    if f2 is None:
        rows.append("no deep enough `f(x)` probe (L >= 3 with 3 non-zero block gradients) for the within-stack fit")
        return finding(1, claim, crit, rows, False,
                       deciding=f"factor over depth exp(b) = {fmt(factor)}; no within-stack fit")
    return finding(1, claim, crit, rows,
                   factor <= F1_MAX_FACTOR and math.exp(-f2[0]) <= F1_MAX_FACTOR and f2[2] >= F1_MIN_R2,
                   deciding=f"per-layer factor over depth exp(b) = {fmt(factor)}, within the deepest stack "
                            f"exp(-k) = {fmt(math.exp(-f2[0]))} (both <= {F1_MAX_FACTOR}), R^2 = {fmt(f2[2])} "
                            f"(>= {F1_MIN_R2})")


def finding_2(probe, tr):
    claim = ("Without residual but with a norm, gradient norms stay moderate at initialisation, but the "
             "tokens' representations collapse (rank ratio at the last boundary -> 0 with depth), and once "
             "training starts the early blocks' gradients vanish.")
    crit = (f"for both `f(norm(x))` and `norm(f(x))`: at init every depth has g_first/g_last in "
            f"[{F2_RATIO_BAND[0]:g}, {F2_RATIO_BAND[1]:g}] (probe seed means), the deepest probe has rank ratio < "
            f"{F2_MAX_RANK} at the last boundary, and in training every seed's run at the deepest depth (every rate "
            f"run there) has median g_first/g_last over its layers records after step 0 < {F2_TRAIN_RATIO:g} "
            f"(k of n seeds; all n needed)")
    rows, ok, dec = [], True, []
    for w in NORES_NORM:
        runs = sorted(probe.by(w), key=lambda r: r.n_layer)
        if not runs:
            rows.append(f"{w}: no probe data")
            dec.append(f"{w}: no probe data")
            ok = False
            continue
        ratios, rks = [], []
        for r in runs:
            g = probe_mean(r, "grad_norm")
            ratios.append(g[0] / g[-1] if g and g[0] is not None and g[-1] else None)
            rk = probe_mean(r, "rank_ratio")
            rks.append(rk[-1] if rk else None)
        nseed = max(r.probe_seeds for r in runs)
        rows.append(f"{w} at init ({nseed} probe seeds), g_first/g_last by depth: "
                    + ", ".join(f"L={r.n_layer}: {fmt(x)}" for r, x in zip(runs, ratios)))
        rows.append(f"{w} at init, rank ratio at the last boundary: "
                    + ", ".join(f"L={r.n_layer}: {fmt(x)}" for r, x in zip(runs, rks)))
        ok &= all(x is not None and F2_RATIO_BAND[0] <= x <= F2_RATIO_BAND[1] for x in ratios)
        ok &= rks[-1] is not None and rks[-1] < F2_MAX_RANK
        depths = sorted({d for (ww, d, _) in tr.pts if ww == w})
        in_band = sum(x is not None and F2_RATIO_BAND[0] <= x <= F2_RATIO_BAND[1] for x in ratios)
        dec.append(f"{w}: init ratio in band at {in_band} of {len(ratios)} depths, rank {fmt(rks[-1])} at "
                   f"L={runs[-1].n_layer}")
        if not depths:
            rows.append(f"{w}: no completed training run")
            dec[-1] += ", no training run"
            ok = False
            continue
        parts = []
        for d in depths:
            meds = [train_ratios(r)[1] for lr in stats.rates_at(tr.pts, w, d) for r in tr.seeds(w, d, lr)]
            known = [m for m in meds if m is not None]
            parts.append(f"L={d}: {fmt(float(np.median(known)) if known else None)}")
        rows.append(f"{w} in training, median over seeds of each run's median g_first/g_last after step 0: "
                    + ", ".join(parts))
        deep = [r for lr in stats.rates_at(tr.pts, w, depths[-1]) for r in tr.seeds(w, depths[-1], lr)]
        meds = [train_ratios(r)[1] for r in deep]
        k = sum(m is not None and m < F2_TRAIN_RATIO for m in meds)
        rows.append(f"{w} at L={depths[-1]} (deepest), per run: "
                    + ", ".join(f"seed {stats.seed_of(r)} lr {stats.learning_rate(r):g}: {fmt(m)}"
                                for r, m in zip(deep, meds))
                    + f"; below {F2_TRAIN_RATIO:g} in {k} of {len(meds)} runs")
        ok &= bool(meds) and k == len(meds)
        dec[-1] += f", training ratio < {F2_TRAIN_RATIO:g} in {k} of {len(meds)} runs at L={depths[-1]}"
    return finding(2, claim, crit, rows, ok, deciding="; ".join(dec))


def finding_3(tr):
    # The horizon it holds within: the runs it judges, each wiring's best rate per depth. "Leaves the plateau"
    # (ends F3_TRAIN_MARGIN below the unigram loss) is what these runs show, not learning beyond symbol pairs.
    within = steps_text([r for (w, d, lr) in tr.pts if w in GRID_WIRINGS and lr == tr.best(w, d)
                         for r in tr.seeds(w, d, lr)])
    claim = (f"{within[:1].upper()}{within[1:]}, residual stacks leave the unigram plateau at every depth up to the "
             "deepest; stacks without residual do not (stuck near the unigram loss) and adding layers makes them "
             "worse. Each wiring is compared at its own best learning rate per depth.")
    crit = (f"per wiring and depth at its best rate (lowest mean final val loss over seeds among the rates run at "
            f"that depth); seen if (i) every residual wiring (`x + f(norm(x))`, `norm(x + f(x))`, `x + f(x)`) ends "
            f"at least {F3_TRAIN_MARGIN} nats below the unigram loss at every depth, (ii) every no-residual wiring at "
            f"L >= {F3_DEEP} ends above unigram - {F3_STUCK_MARGIN}, each for every seed or by the 95% interval of "
            f"the mean, and (iii) for each no-residual wiring the mean final loss rises with depth (Spearman rho > 0, "
            f"losses rounded to 1e-3, ties averaged)")
    if not tr.runs or tr.unigram is None:
        return finding(3, claim, crit, ["no completed training run"], False, deciding="no completed training run",
                       within=within)
    uni = tr.unigram
    rows = [f"references: unigram {fmt(uni, 4)}, optimal {fmt(tr.refs.get('optimal'), 4)} nats"]
    ok1 = ok2 = ok3 = True
    worst_res, best_nores = None, None  # (mean, where): the residual point nearest failing, and the no-residual one
    for w in GRID_WIRINGS:
        depths = sorted({d for (ww, d, _) in tr.pts if ww == w})
        if not depths:
            rows.append(f"{w}: no completed run")
            ok1 = ok1 and w not in RES
            ok2 = ok2 and w not in NORES
            continue
        parts, means = [], []
        for d in depths:
            lr = tr.best(w, d)
            vals = tr.finals(w, d, lr)
            s = stats.summarize_loss(vals)
            n_rates = len(stats.rates_at(tr.pts, w, d))
            if w in RES:
                good, k, n, rule = stats.seed_rule(vals, uni - F3_TRAIN_MARGIN, below=True)
                ok1 &= good
            else:
                good, k, n, rule = stats.seed_rule(vals, uni - F3_STUCK_MARGIN, below=False)
                if d >= F3_DEEP:
                    ok2 &= good
            means.append((d, s["mean"]))
            if w in RES and (worst_res is None or s["mean"] > worst_res[0]):
                worst_res = (s["mean"], f"{w} L={d}")
            if w in NORES and d >= F3_DEEP and (best_nores is None or s["mean"] < best_nores[0]):
                best_nores = (s["mean"], f"{w} L={d}")
            parts.append(f"L={d}: {stats.fmt_summary(s, 4)} at lr {lr:g} (best of {n_rates}), "
                         f"{'leaves the plateau' if w in RES else 'stuck'} in {stats.rule_text(k, n, rule)}")
        rows.append(f"{w}: " + "; ".join(parts))
        if w in NORES:
            if len(means) >= 2:
                rho = spearman([d for d, _ in means], [m for _, m in means])
                rows.append(f"{w}: Spearman rho(depth, mean final loss) = {fmt(rho)}")
                ok3 &= rho > 0
            else:
                ok3 = False
    rows.append(f"(i) residual stacks leave the plateau: {'yes' if ok1 else 'no'}; (ii) deep no-residual stacks stuck: "
                f"{'yes' if ok2 else 'no'}; (iii) worse with depth: {'yes' if ok3 else 'no'}")
    missing = [f"{w} L={d}" for w in GRID_WIRINGS for d in tr.planned_depths()
               if not any((w, d, lr) in tr.pts for lr in tr.rates)]
    if missing:
        rows.append(f"(iv) grid incomplete, so not testable at every depth: no completed run for {', '.join(missing)}")
    dec = [f"highest residual mean {fmt(worst_res[0], 4)} ({worst_res[1]}) vs < {fmt(uni - F3_TRAIN_MARGIN, 4)}"
           if worst_res else "no residual point",
           f"lowest deep no-residual mean {fmt(best_nores[0], 4)} ({best_nores[1]}) vs > "
           f"{fmt(uni - F3_STUCK_MARGIN, 4)}" if best_nores else f"no no-residual point at L >= {F3_DEEP}",
           f"(i) {'yes' if ok1 else 'no'}, (ii) {'yes' if ok2 else 'no'}, (iii) {'yes' if ok3 else 'no'}"
           + (", (iv) grid incomplete" if missing else "")]
    out = finding(3, claim, crit + "; (iv) every wiring has a completed run at every depth of the grid",
                  rows, ok1 and ok2 and ok3 and not missing, deciding="; ".join(dec), within=within)
    # Parts (i) and (ii) on their own: the convergence study judges them again at the long horizon.
    out.parts = {"i": "not run" if worst_res is None else "seen" if ok1 else "not seen",
                 "ii": "not run" if best_nores is None else "seen" if ok2 else "not seen"}
    return out


def finding_5(tr):
    judged = [r for w in NORES for d in tr.depths if d >= 2 for lr in stats.rates_at(tr.pts, w, d)
              for r in tr.seeds(w, d, lr)]
    within = steps_text(judged)
    claim = (f"Without a residual, stacks of 2 or more layers stay on the unigram plateau {within} at every "
             "learning rate tried.")
    crit = (f"every no-residual point (`f(norm(x))`, `norm(f(x))`, `f(x)`) with L >= 2, at every rate run, ends above "
            f"unigram - {F3_STUCK_MARGIN} for every seed or by the 95% interval of the mean; where it does not, the "
            f"(wiring, depth, rate, seeds) are listed")
    if not tr.runs or tr.unigram is None:
        return finding(5, claim, crit, ["no completed training run"], False, deciding="no completed training run",
                       within=within)
    thr = tr.unigram - F3_STUCK_MARGIN
    rows, fails, n_pts = [], [], 0
    for w in NORES:
        for d in [d for d in tr.depths if d >= 2]:
            for lr in stats.rates_at(tr.pts, w, d):
                runs = tr.seeds(w, d, lr)
                good, k, n, rule = stats.seed_rule([r.final_val_loss for r in runs], thr, below=False)
                n_pts += 1
                if not good:
                    low = [f"{stats.seed_of(r)} ({fmt(r.final_val_loss, 4)})" for r in runs if r.final_val_loss <= thr]
                    fails.append(f"{w} L={d} lr {lr:g}: stuck in {k} of {n} seeds; below the plateau: seed(s) "
                                 + ", ".join(low))
        rates = {lr for (ww, d, lr) in tr.pts if ww == w and d >= 2}
        rows.append(f"{w}: depths {', '.join(str(d) for d in tr.depths if d >= 2)}, rates "
                    f"{', '.join(f'{x:g}' for x in sorted(rates))}")
    rows.append(f"{n_pts} points checked against {fmt(thr, 4)} (unigram {fmt(tr.unigram, 4)} - {F3_STUCK_MARGIN})")
    left = [f"{w} L={d} lr {lr:g}: {rid} {why}" for w in NORES for d in tr.depths if d >= 2 for lr in tr.rates
            for rid, why in tr.excluded_at(w, d, lr)]
    if left:
        rows.append("left out (no final loss to judge; listed under Excluded runs): " + "; ".join(left))
    rows += ["not on the plateau: " + f for f in fails] or ["every point stays on the plateau"]
    return finding(5, claim, crit, rows, n_pts > 0 and not fails,
                   deciding=f"{n_pts - len(fails)} of {n_pts} no-residual points (L >= 2) stay above {fmt(thr, 4)}",
                   within=within)


def escape_table(tr):
    """Per (wiring, depth, rate): every seed's escape step (None = never) and the median."""
    out = []

    def order(kv):
        (w, d, lr), _ = kv
        return (GRID_WIRINGS.index(w) if w in GRID_WIRINGS else 99, d, lr or 0)

    for (w, d, lr), runs in sorted(tr.pts.items(), key=order):
        esc = [(stats.seed_of(r),) + stats.escape_step(r, tr.unigram)
               for r in sorted(runs, key=lambda r: stats.seed_of(r) or 0)]
        med, horizon = stats.median_escape([(s, h) for _, s, h in esc])
        out.append({"wiring": w, "depth": d, "learning_rate": lr,
                    "seeds": [{"seed": sd, "escape_step": s, "censored": s is None, "last_step": h}
                              for sd, s, h in esc],
                    "median": med, "median_censored": med is None, "horizon": horizon})
    return out


def fmt_escape(e):
    steps = ", ".join(str(s["escape_step"]) if s["escape_step"] is not None else f"> {s['last_step']}"
                      for s in e["seeds"])
    med = fmt(e["median"], 4) if e["median"] is not None else f"> {e['horizon']}"
    return f"median {med} (seeds: {steps})"


def ranks(v):
    """Ranks with ties averaged (equal losses must not look like a trend)."""
    v = np.asarray(v, float)
    return np.array([np.mean(np.nonzero(np.sort(v) == x)[0]) for x in v])


def spearman(x, y):
    rx, ry = ranks(x), ranks(np.round(y, 3))
    if np.std(rx) == 0 or np.std(ry) == 0:
        return 0.0
    return float(np.corrcoef(rx, ry)[0, 1])


def finding_4(probe):
    claim = ("In a pre-norm residual stack the last block's gradient shrinks like 1/sqrt(L); in a post-norm "
             "one it does not depend on depth (Xiong et al. 2020, Theorem 1).")
    crit = (f"fit ln g_last = a + s*ln L over the probe depths L >= 2 (seed means; at L = 1 the last block is "
            f"also the first, fed the raw embedding of std 0.02 rather than a block's output, outside the "
            f"theorem's setting; the slope with L = 1 is shown too); seen if s(pre) in [{F4_PRE[0]}, {F4_PRE[1]}] "
            f"and s(post) in [{F4_POST[0]}, {F4_POST[1]}]")
    rows, slopes = [], {}
    for w in ("pre-layernorm-res", "post-layernorm-res"):
        pts = []
        for r in sorted(probe.by(w), key=lambda r: r.n_layer):
            g = probe_mean(r, "grad_norm")
            if g and g[-1]:
                pts.append((r.n_layer, g[-1]))

        def slope(ps):
            return fit_line([math.log(d) for d, _ in ps], [math.log(v) for _, v in ps]) if len(ps) >= 2 else None
        fit, fit_all = slope([p for p in pts if p[0] >= 2]), slope(pts)
        slopes[w] = fit[0] if fit else None
        rows.append(f"{w}: g_last " + ", ".join(f"L={d}: {fmt(v)}" for d, v in pts)
                    + (f"; slope s = {fmt(fit[0])} over L >= 2 (R^2 = {fmt(fit[2])})" if fit
                       else "; no fit (< 2 depths)")
                    + (f", {fmt(fit_all[0])} with L = 1" if fit_all else ""))
    sp, so = slopes["pre-layernorm-res"], slopes["post-layernorm-res"]
    seen = sp is not None and so is not None and F4_PRE[0] <= sp <= F4_PRE[1] and F4_POST[0] <= so <= F4_POST[1]
    rows.append(f"expected -0.5 (pre) and 0 (post); measured {fmt(sp)} and {fmt(so)}")
    return finding(4, claim, crit, rows, seen,
                   deciding=f"slope s(pre) = {fmt(sp)} (needs [{F4_PRE[0]}, {F4_PRE[1]}]), s(post) = {fmt(so)} "
                            f"(needs [{F4_POST[0]}, {F4_POST[1]}])")
