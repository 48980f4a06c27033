"""Writes the deep-stacking report: findings computed from the sweeps' data, each marked seen or
not seen against a criterion stated in the report, plus every figure and the excluded runs.

    /usr/bin/python3 scripts/report.py runs/deep_stacking [--out report.md]

Reads <dir>/<sweep>/manifest.json (probe_grid, train_grid, extras*), the runs they list
(via runlog.py), <dir>/figures/**.png and <dir>/timing.jsonl (written by reproduce.sh).
Writes <dir>/report.md and <dir>/findings.json. Runs that diverged, failed or are incomplete
are left out of every number and listed. No number in the report is typed in: each comes from
the data of this run. Not here: running anything (reproduce.sh), plotting (plot_compare.py).
"""
import argparse
import glob
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runlog  # noqa: E402

RES = ("pre-layernorm-res", "post-layernorm-res", "none-res")
NORES_NORM = ("pre-layernorm-nores", "post-layernorm-nores")
NORES = NORES_NORM + ("none-nores",)
GRID_WIRINGS = RES + NORES

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
            run.sweep_id = rid
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


def finding_b(probe, train):
    claim = ("Without residual but with a norm, gradient norms stay moderate at initialisation, but the "
             "tokens' representations collapse (rank ratio at the last boundary -> 0 with depth), and once "
             "training starts the early blocks' gradients vanish.")
    crit = (f"for both `f(norm(x))` and `norm(f(x))`: at init every depth has g_first/g_last in "
            f"[{B_RATIO_BAND[0]:g}, {B_RATIO_BAND[1]:g}] (probe), the deepest probe has rank ratio < {B_MAX_RANK} "
            f"at the last boundary, and in training the deepest completed run has median g_first/g_last "
            f"over its layers records after step 0 < {B_TRAIN_RATIO:g}")
    rows, ok = [], True
    for w in NORES_NORM:
        runs = sorted(probe.by(w), key=lambda r: r.n_layer)
        if not runs:
            rows.append(f"{w}: no probe data")
            ok = False
            continue
        ratios, ranks = [], []
        for r in runs:
            g = probe_mean(r, "grad_norm")
            ratios.append(g[0] / g[-1] if g and g[0] is not None and g[-1] else None)
            rk = probe_mean(r, "rank_ratio")
            ranks.append(rk[-1] if rk else None)
        rows.append(f"{w} at init, g_first/g_last by depth: "
                    + ", ".join(f"L={r.n_layer}: {fmt(x)}" for r, x in zip(runs, ratios)))
        rows.append(f"{w} at init, rank ratio at the last boundary: "
                    + ", ".join(f"L={r.n_layer}: {fmt(x)}" for r, x in zip(runs, ranks)))
        ok &= all(x is not None and B_RATIO_BAND[0] <= x <= B_RATIO_BAND[1] for x in ratios)
        ok &= ranks[-1] is not None and ranks[-1] < B_MAX_RANK
        trained = sorted(train.by(w), key=lambda r: r.n_layer) if train else []
        if not trained:
            rows.append(f"{w}: no completed training run")
            ok = False
            continue
        parts = []
        for r in trained:
            at0, med, n = train_ratios(r)
            parts.append(f"L={r.n_layer}: {fmt(at0)} -> {fmt(med)} ({n} records)")
        rows.append(f"{w} in training, g_first/g_last at step 0 -> median after step 0: " + ", ".join(parts))
        _, med, _ = train_ratios(trained[-1])
        ok &= med is not None and med < B_TRAIN_RATIO
    return finding("b", claim, crit, rows, ok)


def finding_c(train):
    claim = ("Residual stacks train at every depth up to 96; stacks without residual do not (stuck near the "
             "unigram loss) and adding layers makes them worse.")
    crit = (f"seen if (1) every completed residual run (`x + f(norm(x))`, `norm(x + f(x))`, `x + f(x)`) ends at "
            f"least {C_TRAIN_MARGIN} nats below the unigram loss, (2) every completed no-residual run with "
            f"L >= {C_DEEP} ends above unigram - {C_STUCK_MARGIN}, and (3) for each no-residual wiring the "
            f"final loss rises with depth (Spearman rho > 0 over its depths, losses rounded to 1e-3, ties averaged)")
    if not train or not train.runs:
        return finding("c", claim, crit, ["no completed training run"], False)
    uni = train.runs[0].reference_losses.get("unigram")
    opt = train.runs[0].reference_losses.get("optimal")
    rows = [f"references: unigram {fmt(uni, 4)}, optimal {fmt(opt, 4)} nats"]
    ok1 = ok2 = ok3 = True
    for w in GRID_WIRINGS:
        runs = sorted(train.by(w), key=lambda r: r.n_layer)
        if not runs:
            rows.append(f"{w}: no completed run")
            ok1 = ok1 and w not in RES
            ok2 = ok2 and w not in NORES
            continue
        gaps = [(r.n_layer, r.final_val_loss, r.final_val_loss - uni) for r in runs]
        rows.append(f"{w}: final val loss (minus unigram) " + ", ".join(
            f"L={d}: {fmt(v, 4)} ({'+' if g >= 0 else ''}{fmt(g, 3)})" for d, v, g in gaps))
        if w in RES:
            ok1 &= all(g <= -C_TRAIN_MARGIN for _, _, g in gaps)
        else:
            ok2 &= all(g > -C_STUCK_MARGIN for d, _, g in gaps if d >= C_DEEP)
            if len(gaps) >= 2:
                rho = spearman([d for d, _, _ in gaps], [v for _, v, _ in gaps])
                rows.append(f"{w}: Spearman rho(depth, final loss) = {fmt(rho)}")
                ok3 &= rho > 0
            else:
                ok3 = False
    rows.append(f"(1) residual stacks train: {'yes' if ok1 else 'no'}; (2) deep no-residual stacks stuck: "
                f"{'yes' if ok2 else 'no'}; (3) worse with depth: {'yes' if ok3 else 'no'}")
    # (4) coverage: the claim is about every depth of the grid, so a missing point fails it.
    planned = sorted({int(e["id"][1:].split("-")[0]) for e in train.manifest.get("runs", [])
                      if e.get("id", "").startswith("L") and e["id"][1:].split("-")[0].isdigit()})
    missing = [f"{w} L={d}" for w in GRID_WIRINGS for d in planned if not train.by(w, d)]
    if missing:
        rows.append(f"(4) grid incomplete, so not testable at every depth: no completed run for {', '.join(missing)}")
    return finding("c", claim, crit + "; (4) every wiring has a completed run at every depth of the grid",
                   rows, ok1 and ok2 and ok3 and not missing)


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


# ---- extras and tables -----------------------------------------------------------------------

def loss_table(train):
    depths = sorted({r.n_layer for r in train.runs} | {int(e[0].split("-")[0][1:]) for e in train.excluded
                                                        if e[0].startswith("L") and e[0].split("-")[0][1:].isdigit()})
    out = ["| wiring | formula | " + " | ".join(f"L={d}" for d in depths) + " |",
           "|---|---|" + "---|" * len(depths)]
    excluded = dict(train.excluded)
    for w in GRID_WIRINGS:
        cells = []
        formula = next((r.formula for r in train.runs if r.wiring == w), "")
        for d in depths:
            rs = train.by(w, d)
            if rs:
                cells.append(fmt(float(np.mean([r.final_val_loss for r in rs])), 4))
            else:
                ex = [reason for rid, reason in excluded.items() if rid.startswith(f"L{d}-{w}-")]
                cells.append(f"excluded ({ex[0]})" if ex else "-")
        out.append(f"| `{w}` | `{formula.split(': ', 1)[-1]}` | " + " | ".join(cells) + " |")
    return out


def extras_table(sweeps):
    out = ["| sweep | run | formula | final val loss | minus unigram |", "|---|---|---|---|---|"]
    for s in sweeps:
        for r in sorted(s.runs, key=lambda r: r.sweep_id):
            uni = r.reference_losses.get("unigram")
            out.append(f"| {s.name} | `{r.sweep_id}` | `{r.formula}` | {fmt(r.final_val_loss, 4)} | "
                       f"{fmt(r.final_val_loss - uni if uni is not None else None, 3)} |")
        for rid, why in s.excluded:
            out.append(f"| {s.name} | `{rid}` | | excluded: {why} | |")
    return out


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
        lines.append("- no timing.jsonl (not run by scripts/reproduce.sh): version and wall time unknown")
    n = 0
    t_start = None
    for s in stages:
        st = s.get("stage")
        if st == "start":
            n += 1
            lines.append(f"- invocation {n} of reproduce.sh: stacklab version {s.get('version', '?')}, commit "
                         f"`{s.get('commit', '?')}`"
                         + (" with uncommitted changes in src/ or CMakeLists.txt" if s.get("dirty") else "")
                         + f", binary {s.get('binary', '?')}; {s.get('nproc', '?')} cores, {s.get('jobs', '?')} runs "
                         f"at once, load average at start {s.get('loadavg', '?')}")
        elif st == "setup":
            lines.append("  - setup (build): " + ("skipped (STACKLAB_BIN)" if s.get("skipped") else f"{fmt(s['seconds'], 4)} s"))
        elif st == "sweep":
            stop = " (stopped by a signal: incomplete)" if (s.get("exit") or 0) >= 128 else ""
            lines.append(f"  - sweep {s['sweep']}: {fmt(s['seconds'], 4)} s{stop}")
        elif st == "plots":
            lines.append(f"  - plots: {fmt(s['seconds'], 3)} s")
        elif st == "end" and t_start is not None and s.get("time"):
            lines.append(f"  - **whole invocation (setup, sweeps, plots): {(float(s['time']) - t_start) / 60:.1f} min**")
        if st == "start":
            t_start = float(s["time"]) if s.get("time") else None
    sweep_s = [s for s in stages if s.get("stage") == "sweep"]
    if sweep_s:
        lines.append(f"- **suite wall time (all sweeps, all invocations): "
                     f"{sum(s['seconds'] for s in sweep_s) / 60:.1f} min**")
    run_secs = [r.summary.get("wall_seconds") for s in sweeps for r in s.runs
                if r.summary and r.summary.get("wall_seconds")]
    if run_secs:
        lines.append(f"- summed training wall time of the completed runs: {sum(run_secs) / 60:.1f} min "
                     f"(longest run {max(run_secs) / 60:.1f} min)")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description="Write the deep-stacking report from the sweeps' data.")
    p.add_argument("root", help="the study dir, e.g. runs/deep_stacking")
    p.add_argument("--out", help="report path (default ROOT/report.md)")
    args = p.parse_args(argv)
    root = args.root
    names = sorted(d for d in os.listdir(root) if os.path.isfile(os.path.join(root, d, "manifest.json"))) \
        if os.path.isdir(root) else []
    sweeps = {n: Sweep(root, n) for n in names}
    probe = sweeps.get("probe_grid") or next((s for s in sweeps.values() if s.mode == "probe"), None)
    train = sweeps.get("train_grid")
    if probe is None or train is None:
        print(f"report.py: {root}: need a probe_grid and a train_grid sweep (found: {', '.join(names) or 'none'})",
              file=sys.stderr)
        return 1
    findings = [finding_a(probe), finding_b(probe, train), finding_c(train), finding_d(probe)]
    extras = [s for n, s in sweeps.items() if s not in (probe, train)]

    md = ["# Why deep stacks need residuals and norms: measured", ""]
    md += timing_lines(read_timing(root), list(sweeps.values()))
    refs = train.runs[0].reference_losses if train.runs else {}
    if refs:
        md.append(f"- data: order-2 Markov, reference losses (nats/token): uniform {fmt(refs.get('uniform'), 4)}, "
                  f"unigram {fmt(refs.get('unigram'), 4)}, optimal {fmt(refs.get('optimal'), 4)}")
    md += ["", "## Findings", "",
           "Every number below is computed by `scripts/report.py` from this run's data. "
           "Excluded runs (diverged, failed, incomplete) are in no number; they are listed further down.", "",
           "| | finding | criterion | measured | seen? |", "|---|---|---|---|---|"]
    for f in findings:
        md.append(f"| ({f['id']}) | {f['claim']} | {f['criterion']} | {'<br>'.join(f['measured'])} | "
                  f"**{'seen' if f['seen'] else 'not seen'}** |")
    steps = sorted({r.summary.get("steps") for r in train.runs if r.summary})
    seeds = sorted({r.config.get("train", {}).get("seed") for r in train.runs})
    md += ["", f"## Final validation loss of the training grid ({'/'.join(map(str, steps)) or '?'} steps, "
           f"seed {'/'.join(map(str, seeds)) or '?'}; a cell averages seeds)", ""] + loss_table(train)
    if extras:
        md += ["", "## Extras", ""] + extras_table(extras)
    excluded = [(s.name, rid, why) for s in sweeps.values() for rid, why in s.excluded]
    md += ["", "## Excluded runs", ""]
    md += [f"- {n}/{rid}: {why}" for n, rid, why in excluded] or ["- none: every run completed"]
    figs = sorted(glob.glob(os.path.join(root, "figures", "**", "*.png"), recursive=True))
    md += ["", "## Figures", ""]
    for fpath in figs:
        rel = os.path.relpath(fpath, root)
        md += [f"### {rel}", "", f"![{rel}]({rel})", ""]
    if not figs:
        md.append("(no figures under figures/)")
    out = args.out or os.path.join(root, "report.md")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\n".join(md) + "\n")
    with open(os.path.join(os.path.dirname(os.path.abspath(out)), "findings.json"), "w", encoding="utf-8") as fh:
        json.dump({"findings": findings, "excluded": [{"sweep": n, "id": rid, "reason": why}
                                                      for n, rid, why in excluded]}, fh, indent=1)
    for f in findings:
        print(f"({f['id']}) {'seen' if f['seen'] else 'NOT seen'}")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
