"""Seed statistics and training points of the deep-stacking study, shared by report.py and
plot_compare.py: the mean with its min-max and 95% t-interval over seeds, the "every seed or the
interval" rule a finding is seen by, the escape step of a run, and the training points keyed by
(wiring, depth, learning rate) pooled over the training sweeps.

    s = summarize_loss([3.41, 3.39, 3.44])  # {"n": 3, "mean": ..., "min": ..., "ci": (lo, hi), ...}
    escape_step(run, unigram)             # (first eval step with val <= unigram - 0.1 or None, last eval step)
Standard library only (math). Not here: reading runs (runlog.py), the findings (report.py).
"""
import math
from collections import defaultdict

ESCAPE_MARGIN = 0.1  # escape: val loss at least this far below the unigram loss

# Two-sided 95% Student-t quantiles t_{0.975, df} for df = 1..30 (the distribution's values,
# not measurements); above 30, 1.96 + 2.4/df is within 0.002 of the exact quantile.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
         2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
         2.052, 2.048, 2.045, 2.042)


def t975(df):
    return _T975[df - 1] if df <= len(_T975) else 1.96 + 2.4 / df


def summarize(values, floor=None):
    """n, mean, min, max and the 95% t-interval of the mean (None for n < 2) of finite values.
    With a floor (a loss is >= 0: summarize_loss), an interval reaching below it is clipped there
    and "ci_clipped" says so: few seeds with one far off give a t-interval wider than the data."""
    v = [float(x) for x in values if x is not None and math.isfinite(x)]
    if not v:
        return {"n": 0, "mean": None, "min": None, "max": None, "ci": None, "ci_clipped": False, "values": []}
    n, mean = len(v), sum(v) / len(v)
    ci, clipped = None, False
    if n >= 2:
        sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
        h = t975(n - 1) * sd / math.sqrt(n)
        ci = (mean - h, mean + h)
        if floor is not None and ci[0] < floor:
            ci, clipped = (floor, ci[1]), True
    return {"n": n, "mean": mean, "min": min(v), "max": max(v), "ci": ci, "ci_clipped": clipped, "values": v}


def summarize_loss(values):
    """summarize() of losses (cross-entropy, >= 0): the interval is clipped at 0."""
    return summarize(values, floor=0.0)


def fmt_num(v, nd=3):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return f"{v:.{nd}f}"


def fmt_summary(s, nd=3):
    """"3.412 (3.405-3.420, 95% CI 3.39-3.43, n=3)"; one seed: "3.412 (n=1)"; an interval
    clipped at a floor: "95% CI 0.000-44132.044 clipped at 0"."""
    if not s or not s["n"]:
        return "n/a (n=0)"
    if s["n"] == 1:
        return f"{fmt_num(s['mean'], nd)} (n=1)"
    lo, hi = s["ci"]
    clip = f" clipped at {lo:g}" if s.get("ci_clipped") else ""
    return (f"{fmt_num(s['mean'], nd)} ({fmt_num(s['min'], nd)}-{fmt_num(s['max'], nd)}, "
            f"95% CI {fmt_num(lo, nd)}-{fmt_num(hi, nd)}{clip}, n={s['n']})")


def seed_rule(values, threshold, below):
    """Is `value <= threshold` (below=True) or `value > threshold` (below=False) a fact over the
    seeds? Seen when it holds for every seed, or when the 95% interval of the mean clears the
    threshold. Returns (seen, k, n, rule) with rule "every seed", "interval" or "" (not seen)."""
    s = summarize_loss(values)
    ok = [(x <= threshold) if below else (x > threshold) for x in s["values"]]
    k, n = sum(ok), s["n"]
    if n and k == n:
        return True, k, n, "every seed"
    if s["ci"] and ((s["ci"][1] <= threshold) if below else (s["ci"][0] > threshold)):
        return True, k, n, "interval"
    return False, k, n, ""


def rule_text(k, n, rule):
    return f"{k} of {n} seeds" + (" (seen by the interval rule)" if rule == "interval" else "")


def learning_rate(run):
    return (run.config.get("optim") or {}).get("learning_rate")


def seed_of(run):
    return (run.config.get("train") or {}).get("seed")


def escape_step(run, unigram, margin=ESCAPE_MARGIN):
    """(first eval step whose val loss <= unigram - margin, or None if never; the last eval step)."""
    evals = sorted((r["step"], r["val_loss"]) for r in run.records["eval"]
                   if r.get("val_loss") is not None and isinstance(r.get("step"), (int, float)))
    last = evals[-1][0] if evals else None
    if unigram is None:
        return None, last
    for step, v in evals:
        if v <= unigram - margin:
            return step, last
    return None, last


def median_escape(escapes):
    """Median of [(step or None, last)] with a never-escaped run as +infinity: (median or None if
    the median is censored, the largest horizon)."""
    vals = sorted(math.inf if s is None else s for s, _ in escapes)
    horizon = max((h for _, h in escapes if h is not None), default=None)
    if not vals:
        return None, horizon
    n = len(vals)
    m = vals[n // 2] if n % 2 else (vals[n // 2 - 1] + vals[n // 2]) / 2
    return (None if math.isinf(m) else m), horizon


def points(runs):
    """{(wiring, depth, learning rate): [runs]} (the seeds of each point)."""
    out = defaultdict(list)
    for r in runs:
        out[(r.wiring, r.n_layer, learning_rate(r))].append(r)
    return dict(out)


def rates_at(pts, wiring, depth):
    return sorted(lr for (w, d, lr) in pts if w == wiring and d == depth and lr is not None)


def best_rate(pts, wiring, depth):
    """The rate with the lowest mean final val loss over seeds among those run at this depth."""
    best = None
    for lr in rates_at(pts, wiring, depth):
        m = summarize_loss([r.final_val_loss for r in pts[(wiring, depth, lr)]])["mean"]
        if m is not None and (best is None or m < best[1]):
            best = (lr, m)
    return best[0] if best else None


def reference_rate(pts):
    """The rate run at the most (wiring, depth) pairs, the one the depth plots and tables use: in
    the quick tier the one every depth has; where several tie (the full tier runs every rate at
    every depth), the lower median of them (1e-3 of {3e-4, 1e-3, 3e-3, 1e-2})."""
    count = defaultdict(set)
    for (w, d, lr) in pts:
        if lr is not None:
            count[lr].add((w, d))
    if not count:
        return None
    most = max(len(v) for v in count.values())
    tied = sorted(lr for lr, v in count.items() if len(v) == most)
    return tied[(len(tied) - 1) // 2]
