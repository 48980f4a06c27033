"""The figures of the report's front page and its convergence section, drawn by report.py into
OUT/figures/ from what it has judged: final val loss against depth per wiring at the short and the
long horizon, one panel per source (front/final_loss_vs_depth_horizons.png); per source the val loss
over the whole horizon on a log step axis, one panel per depth, every seed a thin line
(convergence/loss_curves_<source>.png); the escape step of the stacks without a residual against
depth with the exponential and polynomial fits (convergence/escape_step_fit_<source>.png).
Not here: the verdicts (convergence.py), the text (report/convergence.py, report/front.py).
"""
import math
import os
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np

from stacklab.studies import convergence as cv
from stacklab.plots.common import REF_STYLE, depth_axis, save, wiring_colors, wiring_styles
from stacklab.plots.escape_law import escape_points

FRONT = os.path.join("figures", "front", "final_loss_vs_depth_horizons.png")
CURVES = os.path.join("figures", "convergence", "loss_curves_{}.png")
ESCAPE = os.path.join("figures", "convergence", "escape_step_fit_{}.png")
HORIZON_STYLE = {"short": ("--", "none", 0.0), "long": ("-", None, 0.15), "extended": (":", None, 0.1)}


@dataclass
class Series:
    """One wiring's final losses against depth at one horizon of one source."""
    wiring: str
    formula: str
    kind: str                 # "short" | "long" | "extended" (HORIZON_STYLE)
    horizon: str              # in words, for the legend: "150 steps"
    values: dict = field(default_factory=dict)  # depth -> [final val loss per seed]


def front_figure(panels: dict, refs: dict, colour_runs):
    """One panel per source: each wiring's mean over seeds (min-max band at the long horizons)
    against depth; short dashed with open markers, long solid, extended dotted."""
    line, _ = wiring_colors(colour_runs)
    style = wiring_styles(r.wiring for r in colour_runs)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.6), squeeze=False, sharey=False)
    handles, horizons = {}, {}
    for ax, (src, series) in zip(axes[0], panels.items()):
        depths = set()
        for s in series:
            ds = sorted(d for d, v in s.values.items() if v)
            if not ds:
                continue
            depths |= set(ds)
            ls, face, band = HORIZON_STYLE[s.kind]
            mean = [float(np.mean(s.values[d])) for d in ds]
            colour = line.get(s.wiring, "0.3")
            marker = style.get(s.wiring, ("o",))[0]
            ax.plot(ds, mean, ls=ls, marker=marker, color=colour, lw=1.6, ms=5, markerfacecolor=face or colour)
            handles.setdefault(s.wiring, plt.Line2D([], [], color=colour, marker=marker, label=s.formula))
            horizons.setdefault(s.kind, {}).setdefault(src, s.horizon)
            if band:
                ax.fill_between(ds, [min(s.values[d]) for d in ds], [max(s.values[d]) for d in ds], color=colour,
                                alpha=band, lw=0)
        for name, v in (refs.get(src) or {}).items():
            if name in ("unigram", "optimal") and v is not None and math.isfinite(v):
                colour, ls = REF_STYLE[name]
                ax.axhline(v, color=colour, ls=ls, lw=1)
                ax.text(1.01, v, f"{name} {v:.3f}", transform=ax.get_yaxis_transform(), color=colour, fontsize=7,
                        va="center", clip_on=False)
        if depths:
            depth_axis(ax, depths)
        ax.set_title(src, fontsize=10)
        ax.set_ylabel("final val loss (nats/token)")
        ax.grid(alpha=0.3)
    kinds = [plt.Line2D([], [], color="0.2", ls=HORIZON_STYLE[k][0], marker="o",
                        markerfacecolor=HORIZON_STYLE[k][1] or "0.2",
                        label=f"{k} horizon: " + ", ".join(f"{src} {h}" for src, h in horizons[k].items()))
             for k in HORIZON_STYLE if k in horizons]
    fig.suptitle("Final validation loss against depth per wiring: mean over seeds, min-max band at the long horizons",
                 fontsize=10)
    fig.tight_layout()
    fig.legend(handles=list(handles.values()) + kinds, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7.5,
               frameon=False, ncol=2)
    return fig


def run_curve(run):
    """[(step, val loss)] of a run's evals after step 0 (a log step axis)."""
    return [(s, v) for s, v in cv.evals_of(run) if s > 0]


def curves_figure(runs, source: str, rules: dict):
    """One panel per depth: every seed's val loss over its whole horizon (the longest run of each
    wiring and depth), log step axis, one colour per wiring, the unigram line and the escape line."""
    mine = [r for r in runs if not r.is_probe and cv.source_of(r) == source and r.records["eval"]
            and (r.config.get("model") or {}).get("init", "scaled") == "scaled"]
    longest = {}
    for r in mine:
        k = (r.wiring, r.n_layer)
        longest[k] = max(longest.get(k, 0), cv.horizon_of(r) or 0)
    mine = [r for r in mine if (cv.horizon_of(r) or 0) == longest[(r.wiring, r.n_layer)]]
    depths = sorted({r.n_layer for r in mine})
    if not depths:
        return None
    line, _ = wiring_colors(mine)
    fig, axes = plt.subplots(1, len(depths), figsize=(4.8 * len(depths), 4.2), squeeze=False, sharey=True)
    for ax, d in zip(axes[0], depths):
        for w in sorted({r.wiring for r in mine if r.n_layer == d}):
            rs = [r for r in mine if r.wiring == w and r.n_layer == d]
            for i, r in enumerate(rs):
                c = run_curve(r)
                ax.plot([s for s, _ in c], [v for _, v in c], color=line[w], lw=0.8, alpha=0.8,
                        label=f"{rs[0].formula.split(': ', 1)[-1]} ({len(rs)} seeds)" if i == 0 else None)
        uni = next((r.reference_losses.get("unigram") for r in mine if r.reference_losses), None)
        if uni is not None:
            ax.axhline(uni, color=REF_STYLE["unigram"][0], ls="--", lw=1, label=f"unigram {uni:.3f}")
            ax.axhline(uni - rules["escaped"]["margin"], color="0.5", ls=":", lw=1,
                       label=f"escaped: unigram - {rules['escaped']['margin']:g}")
        ax.set_xscale("log")
        ax.set_title(f"L={d}", fontsize=10)
        ax.set_xlabel("step (log)")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("val loss (nats/token)")
    handles, labels = max((a.get_legend_handles_labels() for a in axes[0]), key=lambda hl: len(hl[0]))
    fig.suptitle(f"Validation loss over the whole horizon, {source}: every seed a thin line, each wiring and depth "
                 "at its longest horizon", fontsize=10)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7.5, frameon=False, ncol=2)
    return fig


def ssr_label(m: dict, form: str) -> str:
    """A fit's residual in a legend: "SSR 0.0952", or "exact" where growth_fit judged it at rounding level."""
    return "exact" if m.get(f"exact_{form}") else f"SSR {m[f'ssr_{form}']:.3g}"


def escape_figure(fits: list, names: dict):
    """One panel per wiring without a residual: each seed's escape step (open triangle at its horizon
    where it did not escape), the median (plots/escape_law.escape_points), and the exponential and
    polynomial fits on the medians."""
    if not fits:
        return None
    fig, axes = plt.subplots(1, len(fits), figsize=(4.8 * len(fits), 4.0), squeeze=False, sharey=True)
    for ax, f in zip(axes[0], fits):
        depths = [d for d, _, _, _, _ in f.rows]
        escape_points(ax, {d: [(s, h) for s in steps] for d, _, h, steps, _ in f.rows}, censored_color="tab:red",
                      medians={d: med for d, _, _, _, med in f.rows}, median_style="marker")
        m = f.median_fit
        x = np.geomspace(min(depths), max(depths), 50) if depths else np.array([])
        if m["factor"] is not None and x.size:
            ax.plot(x, np.exp(m["intercept_exp"]) * m["factor"] ** x, color="tab:green", lw=1.3,
                    label=f"exponential: x{m['factor']:.3g} per layer ({ssr_label(m, 'exp')})")
            ax.plot(x, np.exp(m["intercept_poly"]) * x ** m["p"], color="tab:purple", ls="--", lw=1.3,
                    label=f"polynomial: L^{m['p']:.3g} ({ssr_label(m, 'poly')})")
            ax.legend(fontsize=7)
        ax.set_yscale("log")
        if depths:
            depth_axis(ax, depths)
        ax.set_title(f"{names.get(f.wiring, f.wiring)}: {m['verdict']}", fontsize=8.5)
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("escape step (log)")
    handles = [plt.Line2D([], [], marker="o", color="tab:blue", ls="", label="a seed's escape step"),
               plt.Line2D([], [], marker="_", color="k", ls="", ms=12, label="median over seeds"),
               plt.Line2D([], [], marker="^", markerfacecolor="none", markeredgecolor="tab:red", ls="",
                          label="never escaped (drawn at its horizon)")]
    fig.suptitle(f"Escape step against depth, stacks without a residual ({fits[0].source}), each depth at its "
                 "longest horizon", fontsize=10)
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False, ncol=3)
    return fig


def draw(root: str, rel: str, fig, written: list):
    """Saves `fig` (None: nothing to draw) at root/rel; returns rel, or None."""
    if fig is None:
        return None
    out_dir = os.path.join(root, os.path.dirname(rel))
    os.makedirs(out_dir, exist_ok=True)
    save(fig, out_dir, os.path.basename(rel), written)
    return rel
