"""Writes the deep-stacking report: findings computed from the sweeps' data, each marked seen or
not seen against a criterion stated in the report, the tables (final loss, learning rates, escape
time, extras), the numeric path, and every figure with a caption.

    /usr/bin/python3 scripts/report.py runs/deep_stacking [--out report.md]

Reads <dir>/<sweep>/manifest.json (probe_grid, the training sweeps train_grid and lr_grid, extras*),
the runs they list (via runlog.py), <dir>/figures/**.png and <dir>/timing.jsonl (written by
reproduce.sh). Training points are (wiring, depth, learning rate), pooled over the training sweeps,
seeds aggregated within a point (study_stats.py: mean, min-max, 95% t-interval; a finding is seen
when it holds for every seed or the interval clears it). Writes <dir>/report.md, <dir>/report.html
(self-contained: report_doc.py) and <dir>/findings.json. Runs that diverged, failed or are
incomplete are left out of every number and listed. No number in the report is typed in: each
comes from the data of this run. Not here: running anything (reproduce.sh), plotting
(plot_compare.py).
"""
import argparse
import glob
import json
import math
import os
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_doc  # noqa: E402
import runlog  # noqa: E402
import study_stats as stats  # noqa: E402

RES = ("pre-layernorm-res", "post-layernorm-res", "none-res")
NORES_NORM = ("pre-layernorm-nores", "post-layernorm-nores")
NORES = NORES_NORM + ("none-nores",)
GRID_WIRINGS = RES + NORES
TRAINING_SWEEPS = ("train_grid", "lr_grid")  # pooled: each (wiring, depth, rate) lives in one

# Thresholds of the findings (stated in the report next to each finding).
A_MAX_FACTOR = 0.9       # (a) per-layer factor of the gradient ratio at most this ...
A_MIN_R2 = 0.9           # ... with a log-linear fit this good
B_RATIO_BAND = (1e-2, 1e2)  # (b) first/last block gradient ratio at init inside this band
B_MAX_RANK = 0.1         # (b) rank ratio at the last boundary of the deepest stack below this
B_TRAIN_RATIO = 1e-2     # (b) first/last ratio during training (median of records after step 0) below this
C_TRAIN_MARGIN = 0.05    # (c) "trains": final val loss at least this far below the unigram loss
C_STUCK_MARGIN = 0.05    # (c) "stuck": final val loss above unigram - this
C_DEEP = 8               # (c) "stuck" is tested at depths >= this
D_PRE = (-0.7, -0.3)     # (d) pre-norm slope of log g_last vs log L inside this
D_POST = (-0.2, 0.2)     # (d) post-norm slope inside this


def fmt(v, nd=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if v != 0 and (abs(v) < 1e-3 or abs(v) >= 1e4):
        return f"{v:.2e}"
    return f"{v:.{nd}g}" if abs(v) >= 1 else f"{v:.{nd}f}".rstrip("0").rstrip(".") or "0"


def fit_line(x, y):
    """Least squares y = a + b x; returns (b, a, r2) or None with fewer than 2 points."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0:
        return None
    b, a = np.polyfit(x, y, 1)
    ss = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float(((y - (a + b * x)) ** 2).sum()) / ss if ss > 0 else 1.0
    return float(b), float(a), r2


# ---- loading ---------------------------------------------------------------------------------

class Sweep:
    """One sweep dir: its manifest, the runs it lists, and which of them are usable."""

    def __init__(self, root, name):
        self.name, self.dir = name, os.path.join(root, name)
        self.manifest = runlog._read_json(os.path.join(self.dir, "manifest.json"), "manifest") or {}
        self.mode = self.manifest.get("mode")
        self.runs, self.excluded = [], []   # usable Runs; (id, reason)
        for entry in self.manifest.get("runs", []):
            rid = entry.get("id", "?")
            path = os.path.join(self.dir, entry.get("dir", rid))
            if self.mode == "probe":
                path = os.path.join(path, "probe.json")
                if not os.path.isfile(path):
                    self.excluded.append((rid, f"no probe.json (sweep status: {entry.get('status', '?')})"))
                    continue
                run = runlog.load_probe(path)
                if not run.records["layers"][0].get("grad_norm"):
                    self.excluded.append((rid, "probe.json without gradient norms"))
                    continue
            else:
                if not os.path.isdir(path):
                    self.excluded.append((rid, f"never started (sweep status: {entry.get('status', '?')})"))
                    continue
                run = runlog.load_run(path)
                if run.status != "completed" or run.final_val_loss is None:
                    mark = runlog.status_mark(run).strip(" []") or run.status
                    self.excluded.append((rid, mark if run.final_val_loss is not None or run.status != "completed"
                                          else "completed without a final val loss"))
                    continue
            run.sweep_id, run.sweep_name = rid, name
            self.runs.append(run)

    @property
    def present(self):
        return bool(self.manifest)

    def by(self, wiring, depth=None):
        return [r for r in self.runs if r.wiring == wiring and (depth is None or r.n_layer == depth)]


def probe_mean(run, key):
    return runlog.Run.layers_at(run, 0).get(key) or []


# ---- findings --------------------------------------------------------------------------------

def finding(fid, claim, criterion, rows, seen, note=""):
    return {"id": fid, "claim": claim, "criterion": criterion, "measured": rows, "seen": bool(seen), "note": note}


def finding_a(probe):
    claim = ("Without residual or norm, gradients vanish toward the first block at initialisation, "
             "exponentially in depth.")
    crit = (f"`f(x)` stacks, probe seed means: fit ln(g_first/g_last) = a + b*L over the depths L >= 2, and "
            f"ln g_l = c + k*l over the blocks of the deepest stack; seen if both per-layer factors exp(b) and "
            f"exp(-k) are <= {A_MAX_FACTOR} and the within-stack fit has R^2 >= {A_MIN_R2} (a 2-point fit has "
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
        return finding("a", claim, crit, rows + ["fewer than 2 depths >= 2 with a finite ratio"], False)
    b, _, r2 = fit
    factor = math.exp(b)
    rows.append(f"fit over L={', '.join(str(p[0]) for p in pts)}: b = {fmt(b)} per layer, "
                f"factor exp(b) = {fmt(factor)}, R^2 = {fmt(r2)}")
    if zero:
        rows.append(f"first-block gradient exactly 0 (underflow) at L={zero}: left out of the fit")
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
        return finding("a", claim, crit, rows, False)
    return finding("a", claim, crit, rows,
                   factor <= A_MAX_FACTOR and math.exp(-f2[0]) <= A_MAX_FACTOR and f2[2] >= A_MIN_R2)


def train_ratios(run):
    """first/last block grad-norm ratio at step 0 and the median over the later layers records."""
    recs = sorted(run.records["layers"], key=lambda r: r.get("step", 0))

    def ratio(rec):
        g = rec.get("grad_norm") or []
        return g[0] / g[-1] if g and g[0] is not None and g[-1] else None
    at0 = ratio(recs[0]) if recs and recs[0].get("step") == 0 else None
    later = [x for x in (ratio(r) for r in recs if r.get("step", 0) > 0) if x is not None]
    return at0, (float(np.median(later)) if later else None), len(later)


def train_ratios(run):
    """first/last block grad-norm ratio at step 0 and the median over the later layers records."""
    recs = sorted(run.records["layers"], key=lambda r: r.get("step", 0))

    def ratio(rec):
        g = rec.get("grad_norm") or []
        return g[0] / g[-1] if g and g[0] is not None and g[-1] else None
    at0 = ratio(recs[0]) if recs and recs[0].get("step") == 0 else None
    later = [x for x in (ratio(r) for r in recs if r.get("step", 0) > 0) if x is not None]
    return at0, (float(np.median(later)) if later else None), len(later)


class Training:
    """The training points (wiring, depth, learning rate) pooled over the training sweeps
    (train_grid, lr_grid: each point lives in one of them), seeds within a point."""

    def __init__(self, sweeps):
        self.sweeps = sweeps
        self.runs = [r for s in sweeps for r in s.runs]
        self.pts = stats.points(self.runs)
        self.ref_lr = stats.reference_rate(self.pts)
        self.refs = next((r.reference_losses for r in self.runs if r.reference_losses), {})
        self.unigram = self.refs.get("unigram")
        self.depths = sorted({d for (_, d, _) in self.pts})
        self.rates = sorted({lr for (_, _, lr) in self.pts if lr is not None})
        self.excluded = [(s, rid, why) for s in sweeps for rid, why in s.excluded]

    def seeds(self, wiring, depth, lr):
        return self.pts.get((wiring, depth, lr), [])

    def finals(self, wiring, depth, lr):
        return [r.final_val_loss for r in self.seeds(wiring, depth, lr)]

    def best(self, wiring, depth):
        return stats.best_rate(self.pts, wiring, depth)

    def excluded_at(self, wiring, depth):
        return [f"{s.name}/{rid}: {why}" for s, rid, why in self.excluded if rid.startswith(f"L{depth}-{wiring}-")]

    def planned_depths(self):
        out = set()
        for s in self.sweeps:
            for e in s.manifest.get("runs", []):
                head = e.get("id", "").split("-")[0]
                if head.startswith("L") and head[1:].isdigit():
                    out.add(int(head[1:]))
        return sorted(out)


def seed_list(runs):
    return "/".join(str(stats.seed_of(r)) for r in sorted(runs, key=lambda r: stats.seed_of(r) or 0))


def finding_b(probe, tr):
    claim = ("Without residual but with a norm, gradient norms stay moderate at initialisation, but the "
             "tokens' representations collapse (rank ratio at the last boundary -> 0 with depth), and once "
             "training starts the early blocks' gradients vanish.")
    crit = (f"for both `f(norm(x))` and `norm(f(x))`: at init every depth has g_first/g_last in "
            f"[{B_RATIO_BAND[0]:g}, {B_RATIO_BAND[1]:g}] (probe seed means), the deepest probe has rank ratio < "
            f"{B_MAX_RANK} at the last boundary, and in training every seed's run at the deepest depth (every rate "
            f"run there) has median g_first/g_last over its layers records after step 0 < {B_TRAIN_RATIO:g} "
            f"(k of n seeds; all n needed)")
    rows, ok = [], True
    for w in NORES_NORM:
        runs = sorted(probe.by(w), key=lambda r: r.n_layer)
        if not runs:
            rows.append(f"{w}: no probe data")
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
        ok &= all(x is not None and B_RATIO_BAND[0] <= x <= B_RATIO_BAND[1] for x in ratios)
        ok &= rks[-1] is not None and rks[-1] < B_MAX_RANK
        depths = sorted({d for (ww, d, _) in tr.pts if ww == w})
        if not depths:
            rows.append(f"{w}: no completed training run")
            ok = False
            continue
        parts = []
        for d in depths:
            meds = [train_ratios(r)[1] for lr in stats.rates_at(tr.pts, w, d) for r in tr.seeds(w, d, lr)]
            parts.append(f"L={d}: {fmt(float(np.median([m for m in meds if m is not None])) if any(m is not None for m in meds) else None)}")
        rows.append(f"{w} in training, median over seeds of each run's median g_first/g_last after step 0: "
                    + ", ".join(parts))
        deep = [r for lr in stats.rates_at(tr.pts, w, depths[-1]) for r in tr.seeds(w, depths[-1], lr)]
        meds = [train_ratios(r)[1] for r in deep]
        k = sum(m is not None and m < B_TRAIN_RATIO for m in meds)
        rows.append(f"{w} at L={depths[-1]} (deepest), per run: "
                    + ", ".join(f"seed {stats.seed_of(r)} lr {stats.learning_rate(r):g}: {fmt(m)}" for r, m in zip(deep, meds))
                    + f"; below {B_TRAIN_RATIO:g} in {k} of {len(meds)} runs")
        ok &= bool(meds) and k == len(meds)
    return finding("b", claim, crit, rows, ok)


def finding_c(tr):
    claim = ("Residual stacks train at every depth up to the deepest; stacks without residual do not (stuck near "
             "the unigram loss) and adding layers makes them worse. Each wiring is compared at its own best "
             "learning rate per depth.")
    crit = (f"per wiring and depth at its best rate (lowest mean final val loss over seeds among the rates run at "
            f"that depth); seen if (1) every residual wiring (`x + f(norm(x))`, `norm(x + f(x))`, `x + f(x)`) ends "
            f"at least {C_TRAIN_MARGIN} nats below the unigram loss at every depth, (2) every no-residual wiring at "
            f"L >= {C_DEEP} ends above unigram - {C_STUCK_MARGIN}, each for every seed or by the 95% interval of "
            f"the mean, and (3) for each no-residual wiring the mean final loss rises with depth (Spearman rho > 0, "
            f"losses rounded to 1e-3, ties averaged)")
    if not tr.runs or tr.unigram is None:
        return finding("c", claim, crit, ["no completed training run"], False)
    uni = tr.unigram
    rows = [f"references: unigram {fmt(uni, 4)}, optimal {fmt(tr.refs.get('optimal'), 4)} nats"]
    ok1 = ok2 = ok3 = True
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
            s = stats.summarize(vals)
            n_rates = len(stats.rates_at(tr.pts, w, d))
            if w in RES:
                good, k, n, rule = stats.seed_rule(vals, uni - C_TRAIN_MARGIN, below=True)
                ok1 &= good
            else:
                good, k, n, rule = stats.seed_rule(vals, uni - C_STUCK_MARGIN, below=False)
                if d >= C_DEEP:
                    ok2 &= good
            means.append((d, s["mean"]))
            parts.append(f"L={d}: {stats.fmt_summary(s, 4)} at lr {lr:g} (best of {n_rates}), "
                         f"{'trains' if w in RES else 'stuck'} in {stats.rule_text(k, n, rule)}")
        rows.append(f"{w}: " + "; ".join(parts))
        if w in NORES:
            if len(means) >= 2:
                rho = spearman([d for d, _ in means], [m for _, m in means])
                rows.append(f"{w}: Spearman rho(depth, mean final loss) = {fmt(rho)}")
                ok3 &= rho > 0
            else:
                ok3 = False
    rows.append(f"(1) residual stacks train: {'yes' if ok1 else 'no'}; (2) deep no-residual stacks stuck: "
                f"{'yes' if ok2 else 'no'}; (3) worse with depth: {'yes' if ok3 else 'no'}")
    missing = [f"{w} L={d}" for w in GRID_WIRINGS for d in tr.planned_depths()
               if not any((w, d, lr) in tr.pts for lr in tr.rates)]
    if missing:
        rows.append(f"(4) grid incomplete, so not testable at every depth: no completed run for {', '.join(missing)}")
    return finding("c", claim, crit + "; (4) every wiring has a completed run at every depth of the grid",
                   rows, ok1 and ok2 and ok3 and not missing)


def finding_e(tr):
    claim = "Without a residual, stacks of 2 or more layers stay on the unigram plateau at every learning rate tried."
    crit = (f"every no-residual point (`f(norm(x))`, `norm(f(x))`, `f(x)`) with L >= 2, at every rate run, ends above "
            f"unigram - {C_STUCK_MARGIN} for every seed or by the 95% interval of the mean; where it does not, the "
            f"(wiring, depth, rate, seeds) are listed")
    if not tr.runs or tr.unigram is None:
        return finding("e", claim, crit, ["no completed training run"], False)
    thr = tr.unigram - C_STUCK_MARGIN
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
    rows.append(f"{n_pts} points checked against {fmt(thr, 4)} (unigram {fmt(tr.unigram, 4)} - {C_STUCK_MARGIN})")
    rows += ["not on the plateau: " + f for f in fails] or ["every point stays on the plateau"]
    return finding("e", claim, crit, rows, n_pts > 0 and not fails)


def escape_table(tr):
    """Per (wiring, depth, rate): every seed's escape step (None = never) and the median."""
    out = []
    for (w, d, lr), runs in sorted(tr.pts.items(), key=lambda kv: (GRID_WIRINGS.index(kv[0][0])
                                                                  if kv[0][0] in GRID_WIRINGS else 99, kv[0][1], kv[0][2] or 0)):
        esc = [(stats.seed_of(r),) + stats.escape_step(r, tr.unigram) for r in sorted(runs, key=lambda r: stats.seed_of(r) or 0)]
        med, horizon = stats.median_escape([(s, h) for _, s, h in esc])
        out.append({"wiring": w, "depth": d, "learning_rate": lr,
                    "seeds": [{"seed": sd, "escape_step": s, "censored": s is None, "last_step": h} for sd, s, h in esc],
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


def finding_d(probe):
    claim = ("In a pre-norm residual stack the last block's gradient shrinks like 1/sqrt(L); in a post-norm "
             "one it does not depend on depth (Xiong et al. 2020, Theorem 1).")
    crit = (f"fit ln g_last = a + s*ln L over the probe depths L >= 2 (seed means; at L = 1 the last block is "
            f"also the first, fed the raw embedding of std 0.02 rather than a block's output, outside the "
            f"theorem's setting; the slope with L = 1 is shown too); seen if s(pre) in [{D_PRE[0]}, {D_PRE[1]}] "
            f"and s(post) in [{D_POST[0]}, {D_POST[1]}]")
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
                    + (f"; slope s = {fmt(fit[0])} over L >= 2 (R^2 = {fmt(fit[2])})" if fit else "; no fit (< 2 depths)")
                    + (f", {fmt(fit_all[0])} with L = 1" if fit_all else ""))
    sp, so = slopes["pre-layernorm-res"], slopes["post-layernorm-res"]
    seen = sp is not None and so is not None and D_PRE[0] <= sp <= D_PRE[1] and D_POST[0] <= so <= D_POST[1]
    rows.append(f"expected -0.5 (pre) and 0 (post); measured {fmt(sp)} and {fmt(so)}")
    return finding("d", claim, crit, rows, seen)


# ---- tables ----------------------------------------------------------------------------------

def loss_table(tr):
    """Final val loss at the reference rate (the one every depth has): wiring x depth."""
    lr = tr.ref_lr
    depths = sorted(set(tr.depths) | set(tr.planned_depths()))
    rows = []
    for w in GRID_WIRINGS:
        cells = []
        formula = next((r.formula for r in tr.runs if r.wiring == w), "")
        for d in depths:
            s = stats.summarize(tr.finals(w, d, lr))
            ex = tr.excluded_at(w, d)
            if s["n"]:
                cells.append(stats.fmt_summary(s, 4) + (f"; {len(ex)} excluded" if ex else ""))
            else:
                cells.append(f"excluded ({ex[0].split(': ', 1)[1]})" if ex else "-")
        rows.append([f"`{w}`", f"`{formula.split(': ', 1)[-1]}`"] + cells)
    return ["wiring", "formula"] + [f"L={d}" for d in depths], rows


def lr_table(tr):
    rows = []
    for w in GRID_WIRINGS:
        for d in tr.depths:
            rates = stats.rates_at(tr.pts, w, d)
            if not rates:
                continue
            best = tr.best(w, d)
            cells = []
            for lr in tr.rates:
                if lr not in rates:
                    cells.append("-")
                    continue
                s = stats.summarize(tr.finals(w, d, lr))
                cells.append(("**best** " if lr == best and len(rates) > 1 else "") + stats.fmt_summary(s, 4))
            rows.append([f"`{w}`", str(d)] + cells)
    return ["wiring", "L"] + [f"lr {lr:g}" for lr in tr.rates], rows


def escape_md_table(tr, esc):
    lr = tr.ref_lr
    depths = tr.depths
    by = {(e["wiring"], e["depth"]): e for e in esc if e["learning_rate"] == lr}
    rows = [[f"`{w}`"] + [fmt_escape(by[(w, d)]) if (w, d) in by else "-" for d in depths]
            for w in GRID_WIRINGS if any((w, d) in by for d in depths)]
    return ["wiring"] + [f"L={d}" for d in depths], rows


def extras_table(sweeps):
    rows = []
    for s in sweeps:
        groups = defaultdict(list)
        for r in s.runs:
            groups[r.sweep_id.rsplit("-s", 1)[0]].append(r)
        for pid, runs in sorted(groups.items()):
            uni = runs[0].reference_losses.get("unigram")
            fin = stats.summarize([r.final_val_loss for r in runs])
            gap = stats.summarize([r.final_val_loss - uni for r in runs]) if uni is not None else None
            rows.append([s.name, f"`{pid}`", f"`{runs[0].formula}`", f"{seed_list(runs)}",
                         stats.fmt_summary(fin, 4), stats.fmt_summary(gap, 3) if gap else "n/a"])
        for rid, why in s.excluded:
            rows.append([s.name, f"`{rid}`", "", "", f"excluded: {why}", ""])
    return ["sweep", "point", "formula", "seeds", "final val loss", "minus unigram"], rows


# ---- timing and the numeric path -------------------------------------------------------------

def read_timing(root):
    stages = []
    path = os.path.join(root, "timing.jsonl")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    stages.append(json.loads(line))
                except ValueError:
                    pass
    return stages


def timing_lines(stages, sweeps):
    """One block per reproduce.sh invocation (a resumed study has several)."""
    start = next((s for s in stages if s.get("stage") == "start"), None)
    lines = []
    if not start:
        lines.append("no timing.jsonl (not run by scripts/reproduce.sh): version and wall time unknown")
    n = 0
    t_start = None
    for s in stages:
        st = s.get("stage")
        if st == "start":
            n += 1
            lines.append(f"invocation {n} of reproduce.sh ({s.get('tier', 'quick')} tier): stacklab version "
                         f"{s.get('version', '?')}, commit `{s.get('commit', '?')}`"
                         + (" with uncommitted changes in src/ or CMakeLists.txt" if s.get("dirty") else "")
                         + f", binary {s.get('binary', '?')}; {s.get('nproc', '?')} cores, {s.get('jobs', '?')} runs "
                         f"at once, load average at start {s.get('loadavg', '?')}")
            t_start = float(s["time"]) if s.get("time") else None
        elif st == "setup":
            lines.append("  setup (build): " + ("skipped (STACKLAB_BIN)" if s.get("skipped") else f"{fmt(s['seconds'], 4)} s"))
        elif st == "size":
            lines.append(f"  size: {s.get('runs')} runs ({s.get('done')} done), estimated {fmt(s.get('core_hours'), 3)} "
                         f"core-hours ({s.get('model', '')})")
        elif st == "sweep":
            stop = " (stopped by a signal: incomplete)" if (s.get("exit") or 0) >= 128 else ""
            lines.append(f"  sweep {s['sweep']}: {fmt(s['seconds'], 4)} s{stop}")
        elif st == "plots":
            lines.append(f"  plots: {fmt(s['seconds'], 3)} s")
        elif st == "end" and t_start is not None and s.get("time"):
            lines.append(f"  **whole invocation (setup, sweeps, plots): {(float(s['time']) - t_start) / 60:.1f} min**")
    sweep_s = [s for s in stages if s.get("stage") == "sweep"]
    if sweep_s:
        lines.append(f"**suite wall time (all sweeps, all invocations): {sum(s['seconds'] for s in sweep_s) / 60:.1f} min**")
    run_secs = [r.summary.get("wall_seconds") for s in sweeps for r in s.runs
                if r.summary and r.summary.get("wall_seconds")]
    if run_secs:
        lines.append(f"summed training wall time of the completed runs: {sum(run_secs) / 60:.1f} min "
                     f"(longest run {max(run_secs) / 60:.1f} min)")
    return lines


def numeric_path_lines(stages, runs):
    """What decides the arithmetic: OpenBLAS's kernel choice, the build's matrix-product path and
    vector-loop clone, threads per run, the CPU. From each run's start record (`numeric_path`,
    binaries that write it) and reproduce.sh's timing.jsonl (OPENBLAS_CORETYPE, CPU model)."""
    starts = [s for s in stages if s.get("stage") == "start"]
    lines = []
    for i, s in enumerate(starts, 1):
        ct = s.get("openblas_coretype")
        lines.append(f"invocation {i}: OPENBLAS_CORETYPE " + (f"= `{ct}`" if ct else "unset (OpenBLAS picks its kernels)")
                     + f"; OpenBLAS core: {s.get('openblas_core') or 'not recorded'}"
                     + (f"; matrix products: {s['matmul']}" if s.get("matmul") else "")
                     + (f"; vector loops: {s['vector_loops']}" if s.get("vector_loops") else "")
                     + f"; CPU: {s.get('cpu_model') or 'not recorded'}; OMP_NUM_THREADS={s.get('omp_num_threads', '?')}")
    if not starts:
        lines.append("no timing.jsonl: OPENBLAS_CORETYPE and the CPU model not recorded")
    paths = defaultdict(int)
    for r in runs:
        npth = r.start.get("numeric_path")
        if isinstance(npth, dict):
            paths[json.dumps(npth, sort_keys=True)] += 1
    for k, n in sorted(paths.items(), key=lambda kv: -kv[1]):
        d = json.loads(k)
        lines.append(f"{n} of {len(runs)} training runs' start records: " + ", ".join(f"{a} {b}" for a, b in d.items()))
    if not paths:
        lines.append("the runs' start records name no numeric path (binary older than that record)")
    threads = sorted({(r.config.get("train") or {}).get("threads") for r in runs} - {None})
    lines.append("threads per run (train.threads of the runs): " + (", ".join(map(str, threads)) or "unknown"))
    return lines


# ---- figures and their captions --------------------------------------------------------------

FIGURES = {  # file name -> (what it shows, which finding it supports)
    "grad_norm_by_block.png": ("Gradient norm of each block's parameters against its position l/L in the stack, "
                               "one panel per wiring, depth as colour; line = seed mean, band = min-max over seeds",
                               "(a) and (b)"),
    "final_loss_vs_depth.png": ("Final validation loss against depth, one line per wiring (seed mean, min-max band), "
                                "with the reference losses", "(c)"),
    "grad_ratio_vs_depth.png": ("First/last block gradient ratio against depth (geometric seed mean, min-max band)",
                                "(a) and (b)"),
    "rank_vs_layer.png": ("Rank ratio and RMS of the residual stream at the last boundary against depth", "(b)"),
    "last_grad_vs_depth.png": ("The last block's gradient norm against depth, log-log, with slope -1/2 and flat "
                               "guides", "(d)"),
    "layer_metrics_vs_depth.png": ("Every per-layer metric at the last block or boundary against depth",
                                   "context for (a)-(d)"),
    "final_loss_vs_lr.png": ("Final validation loss against learning rate, one panel per depth, one line per wiring "
                             "(seed mean, min-max band), with the unigram line", "(c) and (e)"),
    "escape_step_vs_depth.png": (f"Escape step (first eval step with val loss <= unigram - {stats.ESCAPE_MARGIN}) "
                                 "against depth, one panel per wiring: seed points, median line; a run that never "
                                 "escaped is an open marker at its horizon", "(c) and the choice of horizon"),
    "loss_curves_deepest.png": ("Validation loss curves of the deepest stack, each wiring with and without a residual "
                                "(seed mean, min-max band), against the unigram line", "(c)"),
}
RUN_FIGURES = {  # plot_run.py's figures of one run
    "loss.png": ("Train and validation loss of one run against the reference losses", "(c)"),
    "grad_norm_heatmap.png": ("Gradient norm per block (rows) over training steps (columns) of one run", "(b)"),
    "grad_norm_by_block.png": ("Gradient norm per block of one run at several steps", "(a) and (b)"),
    "stream.png": ("Activation RMS and rank ratio of one run's residual stream per boundary", "(b)"),
    "stream_grad.png": ("Gradient norm of one run's residual stream per boundary", "(a) and (b)"),
    "layer_metrics.png": ("Every per-layer metric of one run", "context for (a)-(d)"),
}


def figure_caption(rel, probe, tr, sweeps):
    """The caption under a figure: what it shows, the data drawn (sweeps, depths, seeds, rate,
    step), which finding it supports. Every part comes from the runs."""
    parts = rel.split(os.sep)
    name, group = parts[-1], parts[1] if len(parts) > 2 else ""
    what, supports = FIGURES.get(name, (f"{name} (plot_compare.py)", "context"))
    if group == "runs" and len(parts) > 3:
        what, supports = RUN_FIGURES.get(name, (f"{name} of one run (plot_run.py)", "context"))
        data = f"run train_grid/{parts[2]}"
    elif group.startswith("training"):
        at_step = "each run's last layers record" if group.endswith("_last") else "initialisation (step 0)"
        ns = sorted({len(v) for v in tr.pts.values()})
        lr_part = ("all rates" if name == "final_loss_vs_lr.png"
                   else f"learning rate {tr.ref_lr:g} (the rate run at every depth)" if tr.ref_lr is not None else "")
        data = (f"training sweeps {', '.join(s.name for s in tr.sweeps)}, depths {', '.join(map(str, tr.depths))}, "
                f"{'/'.join(map(str, ns))} seeds per point, {lr_part}"
                + (f"; per-block values at {at_step}" if name in ("grad_norm_by_block.png", "grad_ratio_vs_depth.png",
                                                                   "rank_vs_layer.png", "last_grad_vs_depth.png",
                                                                   "layer_metrics_vs_depth.png") else ""))
    elif probe is not None and group == probe.name:
        data = (f"probe sweep {probe.name} at initialisation, depths "
                f"{', '.join(str(d) for d in sorted({r.n_layer for r in probe.runs}))}, "
                f"{max((r.probe_seeds for r in probe.runs), default=0)} probe seeds per point")
    else:
        s = sweeps.get(group)
        seeds = sorted({stats.seed_of(r) for r in s.runs} - {None}) if s else []
        data = (f"sweep {group}, depths {', '.join(str(d) for d in sorted({r.n_layer for r in s.runs}))}, "
                f"seeds {'/'.join(map(str, seeds))} (n={len(seeds)})" if s else f"from {group}")
        supports = "the extras (not used by a finding)" if s else supports
    return f"**{rel}**: {what}. Data: {data}. Supports: {supports}."


# ---- main ------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser(description="Write the deep-stacking report from the sweeps' data.")
    p.add_argument("root", help="the study dir, e.g. runs/deep_stacking")
    p.add_argument("--out", help="report path (default ROOT/report.md; report.html and findings.json beside it)")
    args = p.parse_args(argv)
    root = args.root
    if not os.path.isdir(root):
        print(f"report.py: {root}: no such directory", file=sys.stderr)
        return 1
    names = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "manifest.json")))
    sweeps = {n: Sweep(root, n) for n in names}
    probe = sweeps.get("probe_grid") or next((s for s in sweeps.values() if s.mode == "probe"), None)
    training = [sweeps[n] for n in TRAINING_SWEEPS if n in sweeps]
    if probe is None or "train_grid" not in sweeps:
        print(f"report.py: {root}: need a probe_grid and a train_grid sweep (found: {', '.join(names) or 'none'})",
              file=sys.stderr)
        return 1
    tr = Training(training)
    findings = [finding_a(probe), finding_b(probe, tr), finding_c(tr), finding_d(probe), finding_e(tr)]
    esc = escape_table(tr)
    extras = [s for s in sweeps.values() if s is not probe and s not in training]
    stages = read_timing(root)

    doc = report_doc.Doc()
    doc.h(1, "Why deep stacks need residuals and norms: measured")
    doc.ul(timing_lines(stages, list(sweeps.values())))
    if tr.refs:
        doc.p(f"Data: order-2 Markov, reference losses (nats/token): uniform {fmt(tr.refs.get('uniform'), 4)}, "
              f"unigram {fmt(tr.unigram, 4)}, optimal {fmt(tr.refs.get('optimal'), 4)}.")
    doc.h(2, "Numeric path")
    doc.ul(numeric_path_lines(stages, [r for s in sweeps.values() for r in s.runs if not r.is_probe]))
    doc.h(2, "Findings")
    ns = sorted({len(v) for v in tr.pts.values()})
    doc.p("Every number below is computed by `scripts/report.py` from this run's data. A number over seeds is the "
          "mean (min-max, 95% t-interval of the mean, n seeds). A finding is seen when its criterion holds for every "
          "seed (\"k of n seeds\") or the interval clears it (said so). Training points are (wiring, depth, learning "
          f"rate) pooled over {', '.join(s.name for s in training)}, {'/'.join(map(str, ns)) or '0'} seeds each; "
          f"probes are seed means over {max((r.probe_seeds for r in probe.runs), default=0)} probe seeds. Excluded "
          "runs (diverged, failed, incomplete) are in no number; they are listed further down.")
    doc.table(["", "finding", "criterion", "measured", "seen?"],
              [[f"({f['id']})", f["claim"], f["criterion"], f["measured"], f"**{'seen' if f['seen'] else 'not seen'}**"]
               for f in findings])
    steps = sorted({r.summary.get("steps") for r in tr.runs if r.summary})
    seeds = sorted({stats.seed_of(r) for r in tr.runs} - {None})
    doc.h(2, f"Final validation loss of the training grid (lr {tr.ref_lr:g}, {'/'.join(map(str, steps)) or '?'} "
             f"steps, seeds {'/'.join(map(str, seeds)) or '?'}; mean (min-max, 95% CI, n))" if tr.ref_lr is not None
          else "Final validation loss of the training grid (no completed run)")
    doc.table(*loss_table(tr))
    doc.h(2, "Learning rates: final validation loss per wiring, depth and rate")
    doc.p("Mean (min-max, 95% CI, n) over seeds; **best** marks the rate finding (c) uses at that depth (lowest "
          "mean); at a depth with one rate, that rate.")
    doc.table(*lr_table(tr))
    doc.h(2, "Escape time")
    doc.p(f"Per run, the first eval step whose val loss is <= unigram - {stats.ESCAPE_MARGIN} "
          f"({fmt(tr.unigram - stats.ESCAPE_MARGIN if tr.unigram is not None else None, 4)}); \"> S\": never, up to "
          f"its last eval step S. Per wiring and depth at lr {tr.ref_lr if tr.ref_lr is not None else '?'}: "
          "the median over seeds and every seed's step (findings.json has every rate).")
    doc.table(*escape_md_table(tr, esc))
    if extras:
        doc.h(2, "Extras")
        doc.p("Not used by a finding; every seed that exists is shown (n stated).")
        doc.table(*extras_table(extras))
    excluded = [(s.name, rid, why) for s in sweeps.values() for rid, why in s.excluded]
    doc.h(2, "Excluded runs")
    doc.ul([f"{n}/{rid}: {why}" for n, rid, why in excluded] or ["none: every run completed"])
    figs = sorted(glob.glob(os.path.join(root, "figures", "**", "*.png"), recursive=True))
    doc.h(2, "Figures")
    for fpath in figs:
        rel = os.path.relpath(fpath, root)
        doc.figure(rel, figure_caption(rel, probe, tr, sweeps))
    if not figs:
        doc.p("(no figures under figures/)")

    out = args.out or os.path.join(root, "report.md")
    out_dir = os.path.dirname(os.path.abspath(out))
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(doc.markdown())
    html_path = os.path.splitext(out)[0] + ".html"
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(doc.html(root, "stacklab: deep-stacking report"))
    with open(os.path.join(out_dir, "findings.json"), "w", encoding="utf-8") as fh:
        json.dump({"findings": findings,
                   "escape": {"margin": stats.ESCAPE_MARGIN, "unigram": tr.unigram, "points": esc},
                   "learning_rates": {"reference": tr.ref_lr, "rates": tr.rates,
                                      "best": [{"wiring": w, "depth": d, "learning_rate": tr.best(w, d)}
                                               for w in GRID_WIRINGS for d in tr.depths if tr.best(w, d) is not None]},
                   "points": [{"wiring": w, "depth": d, "learning_rate": lr, "sweep": runs[0].sweep_name,
                               "seeds": [stats.seed_of(r) for r in runs],
                               "final_val_loss": {k: v for k, v in stats.summarize([r.final_val_loss for r in runs]).items()}}
                              for (w, d, lr), runs in sorted(tr.pts.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0))],
                   "excluded": [{"sweep": n, "id": rid, "reason": why} for n, rid, why in excluded]}, fh, indent=1)
    for f in findings:
        print(f"({f['id']}) {'seen' if f['seen'] else 'NOT seen'}")
    print(out)
    print(html_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
