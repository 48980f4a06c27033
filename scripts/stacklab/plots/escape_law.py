"""The escape law's figure: escape step against depth per wiring on a log step axis, each run a
point (an escape at the top of its eval interval), each run that never escaped an upward arrow at
its last eval step, and the fitted law (escape_law.FormFit) with its 95 % band (the profile
interval at each depth drawn) and its prediction at L = 96 (a marker with its interval).
Matplotlib with the Agg backend. Not here: the fit (escape_law.py), reading runs (escape_results.py).

    plot_escape_law({"f(layernorm(x))": (obs, fit)}, "figures/escape_law.png", band=True)
    plot_escape_law({"f(x)": (obs, fit, {1: (m, lo, hi), ...})}, ...)   # intervals given: no fit here
A series may carry its predictions {depth: (median, lo, hi)} (escape_core's, judged once): the band and
the marker are then drawn from them, and nothing is computed here.

escape_points draws escape step against depth onto an axes, the one drawing of it that every figure
of it shares (this one; plots/study.py's plot_escape; plots/convergence.py's escape_figure), with
options for how a run that never escaped and the median over seeds look:

    escape_points(ax, {2: [(400, 3000), (None, 3000)]}, censored="arrow", label="f(x)")
"""
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402
from matplotlib.ticker import NullLocator  # noqa: E402

from stacklab.studies.escape.fit import predict  # noqa: E402


def escape_points(ax, seeds: dict, color="tab:blue", censored_color=None, censored="triangle", medians=None,
                  median_style="line", label=None, shift=1.0, spread=0.06, size=18) -> float:
    """Escape step against depth on `ax`, from seeds {depth: [(escape step or None, last eval step)]}: each
    run a point at its escape step, runs at one depth spread by the factors 1 - spread .. 1 + spread (and the
    whole series by `shift`, so series sit side by side); a run that never escaped at its last eval step,
    drawn as `censored`: "triangle" (an open triangle, in censored_color, default color) or "arrow" (a
    bar with an upward arrow). medians: {depth: median step or None}, the median over seeds as judged by
    the caller, drawn as `median_style` "line" (joined) or "marker" (a bar); None: not drawn. label: the
    series' name in the legend ("<label>: escaped", "<label>: never escaped within (arrow)"). Returns the
    highest step drawn (an arrow's tip included: annotations do not set the axis)."""
    cc = censored_color or color
    esc, cen = [], []
    for d in sorted(seeds):
        runs = seeds[d]
        factors = np.linspace(1 - spread, 1 + spread, len(runs)) if len(runs) > 1 else [1.0]
        for (s, last), j in zip(runs, factors):
            (cen if s is None else esc).append((d * j * shift, last if s is None else s))
    if esc:
        ax.scatter([x for x, _ in esc], [y for _, y in esc], marker="o", color=color, s=size, zorder=3,
                   label=f"{label}: escaped" if label else None)
    if cen and censored == "arrow":
        for x, y in cen:
            ax.annotate("", xy=(x, y * 2.2), xytext=(x, y), arrowprops={"arrowstyle": "->", "color": cc, "lw": 1.2})
        ax.scatter([x for x, _ in cen], [y for _, y in cen], color=cc, marker="_", s=60,
                   label=f"{label}: never escaped within (arrow)" if label else None)
    elif cen:
        ax.scatter([x for x, _ in cen], [y for _, y in cen], marker="^", facecolors="none", edgecolors=cc,
                   s=size + 12, zorder=3, label=f"{label}: never escaped (at its last eval)" if label else None)
    shown = sorted((d, m) for d, m in (medians or {}).items() if m is not None)
    if shown and median_style == "line":
        ax.plot([d * shift for d, _ in shown], [m for _, m in shown], "-", color=color, lw=1.5)
    elif shown:
        ax.scatter([d * shift for d, _ in shown], [m for _, m in shown], marker="_", color="k", s=220, zorder=4)
    return max([y for _, y in esc] + [(2.2 if censored == "arrow" else 1.0) * y for _, y in cen], default=0.0)


def plot_escape_law(series: dict, out_path: str, predict_at: float = 96, band: bool = True,
                    title: str = "Escape step against depth (stacks without a residual)") -> str:
    """series: {label: (obs, FormFit or None[, {depth: (median, lo, hi)}])}. Writes out_path (PNG) and
    returns it."""
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    top = 1.0
    for i, (label, item) in enumerate(series.items()):
        obs, fit = item[0], item[1]
        given = item[2] if len(item) > 2 else None

        def pred(x, obs=obs, fit=fit, given=given):
            return given[x] if given is not None and x in given else predict(obs, fit, x)
        c = colors[i % len(colors)]
        # an escape at the top of its eval interval, a run that never escaped at its last eval; runs at one
        # depth side by side (equal steps would hide each other), the series apart
        seeds = {}
        for o in obs:
            seeds.setdefault(o.depth, []).append((None, o.lo) if o.censored else (o.hi, o.lo))
        top = max(top, escape_points(ax, seeds, color=c, censored="arrow", label=label, spread=0.03,
                                     shift=1 + 0.03 * (i - (len(series) - 1) / 2)))
        if fit is None:
            continue
        depths = sorted({o.depth for o in obs} | {predict_at})
        grid = [depths[0] + k * (predict_at - depths[0]) / 120 for k in range(121)]
        # a step beyond 1e300 (a doubly exponential law far out) is not drawn: it would set the axis
        line = [v if math.isfinite(v) and v < 1e300 else float("nan") for v in map(fit.median_at, grid)]
        ax.plot(grid, line, color=c, lw=1.2, label=f"{label}: {fit.form} law")
        if band:
            # the band between the deepest run and predict_at at geometric steps, not a chord across the gap
            gap = [depths[-2] * (predict_at / depths[-2]) ** (k / 8) for k in range(1, 8)] if len(depths) > 1 else []
            pts = sorted(set(depths) | {x for x in gap if x < predict_at})
            ends = [pred(x)[1:] for x in pts]
            # an end the data do not bound (None) is not drawn
            lo = [e[0] if e[0] is not None and e[0] > 0 else float("nan") for e in ends]
            hi = [e[1] if e[1] is not None and math.isfinite(e[1]) else float("nan") for e in ends]
            ax.fill_between(pts, lo, hi, color=c, alpha=0.15, lw=0)
        m, lo, hi = pred(predict_at)
        if math.isfinite(m):
            err = [[m - lo if lo is not None and lo > 0 else 0],
                   [hi - m if hi is not None and math.isfinite(hi) else 0]]
            ax.errorbar([predict_at], [m], yerr=err, color=c, marker="D", capsize=3)
            ax.annotate(f"{m:.3g}", (predict_at, m), textcoords="offset points", xytext=(4, 4), fontsize=8)
            top = max(top, m)
    ax.set_yscale("log")
    xs_all = [o.depth for item in series.values() for o in item[0]]
    if xs_all and max(xs_all + [predict_at]) / max(min(xs_all), 1e-9) > 10:
        ax.set_xscale("log")  # a power law is then a straight line, and the measured depths are not crammed
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, max(hi, top * 1.3))  # the arrows of the runs that never escaped are annotations: not autoscaled
    xs = sorted({o.depth for item in series.values() for o in item[0]})
    if xs and all(float(x).is_integer() for x in xs) and len(xs) <= 12:
        ticks = sorted(set(xs) | ({predict_at} if any(item[1] for item in series.values()) else set()))
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
        if ax.get_xscale() == "log":
            ax.xaxis.set_minor_locator(NullLocator())  # the depths' own ticks only; the step axis keeps its minor ones
    ax.set_xlabel("depth L (blocks)")
    ax.set_ylabel("escape step (log)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return out_path
