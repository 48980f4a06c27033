"""The study's figures across training points, called by plot_compare.py for training runs at
step 0: final loss against learning rate (final_loss_vs_lr.png), escape step against depth
(escape_step_vs_depth.png) and the deepest stack's loss curves, residual vs no residual
(loss_curves_deepest.png); seed mean with a min-max band, censored runs drawn apart.
Not here: the per-depth figures (plot_compare.py), one run's figures (plot_run.py).
"""
import os
import re
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import study_stats as stats  # noqa: E402
from plot_common import REF_STYLE, depth_axis, save, wiring_colors, wiring_label  # noqa: E402


def trained_completed(runs):
    return [r for r in runs if not r.is_probe and r.status == "completed" and r.final_val_loss is not None]


def unigram_of(runs):
    return next((r.reference_losses.get("unigram") for r in runs if r.reference_losses), None)


def plot_loss_vs_lr(runs, out_dir, written):
    """final_loss_vs_lr.png: one panel per depth with more than one rate, one line per wiring
    (seed mean, min-max band): the learning-rate sensitivity curves of Wortsman et al. 2023."""
    done = trained_completed(runs)
    pts = stats.points(done)
    depths = [d for d in sorted({d for (_, d, _) in pts}) if len({lr for (_, dd, lr) in pts if dd == d}) > 1]
    if not depths:
        return print("plot_compare: skipping final_loss_vs_lr.png: no depth with more than one learning rate")
    line, _ = wiring_colors(done)
    fig, axes = plt.subplots(1, len(depths), figsize=(4.8 * len(depths), 4.2), squeeze=False, sharey=True)
    uni = unigram_of(done)
    # A diverged seed (loss in the thousands) would flatten every other curve: the axis stops a
    # little above the uniform loss, and a mean above it is drawn as a triangle on the top edge.
    uniform = next((r.reference_losses.get("uniform") for r in done if r.reference_losses), None)
    finite = [r.final_val_loss for r in done if np.isfinite(r.final_val_loss)]
    top = (uniform if uniform is not None else max(finite)) + 0.3
    bottom = min(finite) - 0.05 if finite else None
    off_scale = 0
    for ax, d in zip(axes[0], depths):
        in_panel = 0
        for w in sorted({w for (w, dd, _) in pts if dd == d}):
            rates = stats.rates_at(pts, w, d)
            vals = [np.array([r.final_val_loss for r in pts[(w, d, lr)]]) for lr in rates]
            n = max(len(v) for v in vals)
            means = np.array([v.mean() for v in vals])
            ax.plot(rates, np.minimum(means, top), "o-", color=line[w], lw=1.6, ms=4,
                    label=f"{wiring_label([r for r in done if r.wiring == w])} (n={n})")
            if n > 1:
                ax.fill_between(rates, [min(v.min(), top) for v in vals], [min(v.max(), top) for v in vals],
                                color=line[w], alpha=0.2, lw=0)
            for lr, m in zip(rates, means):
                if not m <= top:
                    off_scale += 1
                    in_panel += 1
                    ax.plot([lr], [top], "^", color=line[w], ms=8, clip_on=False)
                    ax.annotate(f"mean {m:.3g}", (lr, top), textcoords="offset points", xytext=(-6, -11 * in_panel),
                                fontsize=6.5, ha="right", color=line[w])
        ax.set_ylim(bottom, top)
        if uni is not None:
            ax.axhline(uni, color=REF_STYLE["unigram"][0], ls="--", lw=1)
            ax.text(0.01, uni, f" unigram {uni:.3f}", transform=ax.get_yaxis_transform(), fontsize=7,
                    va="bottom", color=REF_STYLE["unigram"][0])
        ax.set_xscale("log")
        ax.set_title(f"L={d}", fontsize=10)
        ax.set_xlabel("learning rate (log)")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("final val loss (nats/token)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle("Final validation loss vs learning rate (seed mean, min-max band"
                 + (f"; triangles: {off_scale} mean(s) above the axis, i.e. diverged seeds)" if off_scale else ")"),
                 fontsize=10)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7.5, frameon=False, ncol=2)
    save(fig, out_dir, "final_loss_vs_lr.png", written)


def plot_escape(runs, out_dir, written):
    """escape_step_vs_depth.png: one panel per wiring; seed points and the median; a run that
    never escaped is an open marker at its horizon (the median is drawn only where it escaped)."""
    done = trained_completed(runs)
    uni = unigram_of(done)
    if not done or uni is None or not any(r.records["eval"] for r in done):
        return print("plot_compare: skipping escape_step_vs_depth.png: no completed run with eval records")
    wirings = sorted({r.wiring for r in done})
    cols = min(3, len(wirings))
    rows_n = (len(wirings) + cols - 1) // cols
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.4 * rows_n), squeeze=False, sharey=True)
    depths_all = sorted({r.n_layer for r in done})
    horizon = 0
    for ax, w in zip(axes.flat, wirings):
        med_x, med_y = [], []
        for d in depths_all:
            rs = [r for r in done if r.wiring == w and r.n_layer == d]
            if not rs:
                continue
            esc = [stats.escape_step(r, uni) for r in rs]
            horizon = max([horizon] + [h for _, h in esc if h is not None])
            jitter = np.linspace(0.94, 1.06, len(esc)) if len(esc) > 1 else [1.0]
            for (s_, h), j in zip(esc, jitter):
                if s_ is None:
                    ax.scatter([d * j], [h], marker="^", facecolors="none", edgecolors="tab:red", s=30, zorder=3)
                else:
                    ax.scatter([d * j], [s_], marker="o", color="tab:blue", s=18, zorder=3)
            m, _ = stats.median_escape(esc)
            if m is not None:
                med_x.append(d)
                med_y.append(m)
        ax.plot(med_x, med_y, "-", color="tab:blue", lw=1.5)
        depth_axis(ax, depths_all)
        ax.set_title(wiring_label([r for r in done if r.wiring == w]), fontsize=8.5)
        ax.grid(alpha=0.3)
        ax.xaxis.label.set_size(8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(wirings):]:
        ax.set_visible(False)
    for ax in axes.flat:
        if ax.get_visible():
            ax.axhline(horizon, color="0.5", ls=":", lw=1)
    for ax in axes[:, 0]:
        ax.set_ylabel("escape step", fontsize=8)
    handles = [plt.Line2D([], [], marker="o", color="tab:blue", ls="", label="a seed's escape step"),
               plt.Line2D([], [], color="tab:blue", label="median over seeds"),
               plt.Line2D([], [], marker="^", markerfacecolor="none", markeredgecolor="tab:red", ls="",
                          label="never escaped (drawn at its last eval step)")]
    fig.suptitle(f"Escape step (first eval with val loss <= unigram - {stats.ESCAPE_MARGIN}) vs depth", fontsize=10)
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False, ncol=3)
    save(fig, out_dir, "escape_step_vs_depth.png", written)


def plot_deepest_curves(runs, out_dir, written):
    """loss_curves_deepest.png: val loss over steps of the deepest stack, one panel per norm
    placement, residual vs no residual (seed mean, min-max band), against the unigram line."""
    done = trained_completed(runs)
    if not done:
        return print("plot_compare: skipping loss_curves_deepest.png: no completed training run")
    deep = max(r.n_layer for r in done)
    rs = [r for r in done if r.n_layer == deep and r.records["eval"]]
    pairs = defaultdict(list)  # wiring without its -res/-nores suffix -> wirings
    for w in sorted({r.wiring for r in rs}):
        pairs[re.sub(r"-(no)?res$", "", w)].append(w)
    uni = unigram_of(done)
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.8 * len(pairs), 4.0), squeeze=False, sharey=True)
    for ax, (base, ws) in zip(axes[0], sorted(pairs.items())):
        for w in ws:
            wr = [r for r in rs if r.wiring == w]
            steps = sorted({e["step"] for r in wr for e in r.records["eval"]})
            curves = np.array([[next((e["val_loss"] for e in r.records["eval"] if e["step"] == s
                                      and e.get("val_loss") is not None), np.nan) for s in steps] for r in wr], float)
            color = "tab:blue" if w.endswith("-res") else "tab:red"
            with np.errstate(all="ignore"):
                ax.plot(steps, np.nanmean(curves, axis=0), "-", color=color, lw=1.6,
                        label=f"{wiring_label(wr).split(': ', 1)[-1]} (n={len(wr)})")
                if len(wr) > 1:
                    ax.fill_between(steps, np.nanmin(curves, axis=0), np.nanmax(curves, axis=0), color=color,
                                    alpha=0.2, lw=0)
        if uni is not None:
            ax.axhline(uni, color=REF_STYLE["unigram"][0], ls="--", lw=1, label=f"unigram {uni:.3f}")
        ax.set_title(f"L={deep}, {base}", fontsize=9)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0][0].set_ylabel("val loss (nats/token)")
    fig.suptitle(f"Validation loss of the deepest stack (L={deep}): residual vs no residual, seed mean and "
                 "min-max band", fontsize=10)
    fig.tight_layout()
    save(fig, out_dir, "loss_curves_deepest.png", written)
