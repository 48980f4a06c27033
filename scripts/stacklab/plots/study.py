"""The study's figures across training points, called by plot_compare.py for training runs at
step 0: final loss against learning rate (final_loss_vs_lr.png), escape step against depth
(escape_step_vs_depth.png) and the deepest stack's loss curves, residual vs no residual
(loss_curves_deepest.png); seed mean with a min-max band, censored runs drawn apart.
Not here: the per-depth figures (plot_compare.py), one run's figures (plot_run.py).
"""
import re
from collections import defaultdict

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.transforms import offset_copy

from stacklab.runs import runlog
from stacklab.studies import stats
from stacklab.plots.escape_law import escape_points
from stacklab.plots.common import (REF_STYLE, column_summary, depth_axis, dodge, save, separate_labels,
                                   wiring_colors, wiring_label, wiring_styles)


def trained_completed(runs):
    return [r for r in runs if not r.is_probe and runlog.is_completed(r) and r.final_val_loss is not None]


def unigram_of(runs):
    return next((r.reference_losses.get("unigram") for r in runs if r.reference_losses), None)


def plot_loss_vs_lr(runs, out_dir, written):
    fig = loss_vs_lr_figure(runs)
    if fig is not None:
        save(fig, out_dir, "final_loss_vs_lr.png", written)


def loss_vs_lr_figure(runs):
    """final_loss_vs_lr.png's figure (None, said why, without a depth of several rates): one
    panel per depth with more than one rate, one line per wiring (seed mean, min-max band of the
    completed seeds): the learning-rate sensitivity curves of Wortsman et al. 2023. A diverged run
    (runlog.is_diverged: its summary says so) is an x at the top in its wiring's colour; each
    wiring has its own marker and dash and a small sideways dodge, so wirings with equal losses
    (the no-residual plateau) do not hide one another."""
    done = trained_completed(runs)
    diverged = [r for r in runs if not r.is_probe and runlog.is_diverged(r)]
    pts = stats.points(done)
    div_pts = stats.points(diverged)
    rates_by_depth = defaultdict(set)
    for (_, d, lr) in list(pts) + list(div_pts):
        rates_by_depth[d].add(lr)
    depths = [d for d in sorted(rates_by_depth) if len(rates_by_depth[d]) > 1]
    if not depths:
        return print("plot_compare: skipping final_loss_vs_lr.png: no depth with more than one learning rate")
    line, _ = wiring_colors(done + diverged)
    style = wiring_styles(r.wiring for r in done + diverged)
    fig, axes = plt.subplots(1, len(depths), figsize=(4.8 * len(depths), 4.2), squeeze=False, sharey=True)
    uni = unigram_of(done + diverged)
    # A completed run far above the others would flatten every curve: the axis stops a little above
    # the uniform loss, and a mean above it is a triangle on the top edge, labelled with its value.
    uniform = next((r.reference_losses.get("uniform") for r in done + diverged if r.reference_losses), None)
    finite = [r.final_val_loss for r in done if np.isfinite(r.final_val_loss)]
    top = (uniform if uniform is not None else max(finite, default=1.0)) + 0.3
    bottom = min(finite) - 0.05 if finite else None
    off_scale, n_div = 0, 0
    for ax, d in zip(axes[0], depths):
        labels = []
        for w in sorted({w for (w, dd, _) in list(pts) + list(div_pts) if dd == d}):
            marker, ls, k = style[w]
            rates = stats.rates_at(pts, w, d)
            x = dodge(rates, k, len(style))
            if rates:
                vals = [np.array([r.final_val_loss for r in pts[(w, d, lr)]]) for lr in rates]
                n = max(len(v) for v in vals)
                means = np.array([v.mean() for v in vals])
                ax.plot(x, np.minimum(means, top), marker=marker, ls=ls, color=line[w], lw=1.6, ms=4.5,
                        label=f"{wiring_label([r for r in done if r.wiring == w])} (n={n})")
                if n > 1:
                    ax.fill_between(x, [min(v.min(), top) for v in vals], [min(v.max(), top) for v in vals],
                                    color=line[w], alpha=0.15, lw=0)
                for xi, m in zip(x, means):
                    if not m <= top:
                        off_scale += 1
                        ax.plot([xi], [top], "^", color=line[w], ms=8, clip_on=False)
                        beside = offset_copy(ax.get_xaxis_transform(), fig=fig, x=-6, y=-1, units="points")
                        labels.append(ax.text(xi, 1.0, f"mean {m:.3g}", color=line[w], fontsize=6.5,
                                              ha="right", va="top", transform=beside))
            div_rates = stats.rates_at(div_pts, w, d)
            if div_rates:
                k_div = [len(div_pts[(w, d, lr)]) for lr in div_rates]
                n_div += sum(k_div)
                ax.scatter(dodge(div_rates, k, len(style)), [0.96] * len(div_rates), marker="x", s=40,
                           color=line[w], transform=ax.get_xaxis_transform(), zorder=5, clip_on=False)
        ax.set_ylim(bottom, top)
        if uni is not None:
            ax.axhline(uni, color=REF_STYLE["unigram"][0], ls="--", lw=1)
            labels.append(ax.text(0.01, uni, f" unigram {uni:.3f}", transform=ax.get_yaxis_transform(), fontsize=7,
                                  va="bottom", color=REF_STYLE["unigram"][0]))
        ax.set_xscale("log")
        ax.set_title(f"L={d}", fontsize=10)
        ax.set_xlabel("learning rate (log)")
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("final val loss (nats/token)")
    handles, labels_ = [], []
    for a in axes[0]:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels_:
                handles.append(h)
                labels_.append(lab)
    if n_div:
        handles.append(plt.Line2D([], [], marker="x", color="0.3", ls=""))
        labels_.append(f"diverged: {n_div} run(s) (summary.json status), left out of the means; x near the top, "
                       "in the wiring's colour")
    fig.suptitle("Final validation loss vs learning rate (completed seeds: mean, min-max band; wirings dodged "
                 "sideways" + (f"; triangles: {off_scale} mean(s) above the axis)" if off_scale else ")"),
                 fontsize=10)
    fig.tight_layout()
    fig.legend(handles, labels_, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7.5, frameon=False, ncol=2)
    for a in axes[0]:
        separate_labels([t for t in a.texts if t.get_text().startswith("mean ")], down=True)
    return fig


def plot_escape(runs, out_dir, written):
    """escape_step_vs_depth.png: one panel per wiring; seed points and the median; a run that
    never escaped is an open marker at its horizon (the median is drawn only where it escaped);
    drawn by plots/escape_law.escape_points."""
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
        seeds = {d: [stats.escape_step(r, uni) for r in done if r.wiring == w and r.n_layer == d]
                 for d in depths_all}
        seeds = {d: esc for d, esc in seeds.items() if esc}
        horizon = max([horizon] + [h for esc in seeds.values() for _, h in esc if h is not None])
        escape_points(ax, seeds, censored_color="tab:red", medians={d: stats.median_escape(esc)[0]
                                                                    for d, esc in seeds.items()})
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
            # a step no seed evaluated at (seeds with other eval steps, a null loss) is a gap
            mean, lo, hi = column_summary(curves)
            ax.plot(steps, mean, "-", color=color, lw=1.6, label=f"{wiring_label(wr).split(': ', 1)[-1]} (n={len(wr)})")
            if len(wr) > 1:
                ax.fill_between(steps, lo, hi, color=color, alpha=0.2, lw=0)
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
