"""The per-layer figures across depth and wiring, at one step: the gradient norm per block
(grad_norm_by_block.png, one panel per wiring), the first/last block gradient ratio
(grad_ratio_vs_depth.png), the rank and size of the final stream (rank_vs_layer.png), the last
block's gradient against depth with Xiong et al.'s guides (last_grad_vs_depth.png), and every
per-layer metric the runs declare (layer_metrics_vs_depth.png). Each takes (runs, step, out_dir,
written, note) and skips with one printed line when it has nothing to draw.

Not here: which runs they draw (compare.py: layer_figure_runs leaves the diverged ones out), the
final-loss figure and the command line (compare.py), the grouping and the lines (depth_groups.py).
"""
import matplotlib.pyplot as plt
import numpy as np

from stacklab.plots.common import arr, column_summary, depth_axis, legend_below, save, wiring_label
from stacklab.plots.depth_groups import (first_last_ratio, group_by_wiring_depth, last_boundary, layers_record,
                                         plot_groups, seed_series)


def plot_grad_by_block(runs, step, out_dir, written, note):
    """Small multiples: one panel per wiring, depth as colour, block position l/L on x so depths
    share an axis; line = seed mean (geometric), band = min-max over seeds."""
    wirings = sorted({r.wiring for r in runs})
    depths = sorted({r.n_layer or 0 for r in runs})
    cmap = plt.get_cmap("viridis")
    color = {d: cmap(0.1 + 0.8 * i / max(1, len(depths) - 1)) for i, d in enumerate(depths)}
    cols = min(3, len(wirings))
    rows = (len(wirings) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.6 * rows), squeeze=False, sharey=True)
    n = 0
    for ax, w in zip(axes.flat, wirings):
        ws = [r for r in runs if r.wiring == w]
        for d in depths:
            series = [g for r in ws if r.n_layer == d for g in seed_series(r, "grad_norm", step, note)]
            series = [g for g in series if g.size == d]
            if not series:
                continue
            g = np.vstack(series)
            if not (np.isfinite(g) & (g > 0)).any():
                note.add(f"{w} L={d}: no positive grad_norm at step {step}; left out of grad_norm_by_block")
                continue
            # a block whose gradient is 0 in every seed (float32 underflow) is a gap in the line
            mean, lo, hi = column_summary(g, geometric=True)
            x = (np.arange(d) + 0.5) / d
            ax.plot(x, mean, "-", marker="o" if d <= 8 else None, ms=3, lw=1.5, color=color[d],
                    label=f"L={d} ({len(series)} seed{'s' if len(series) != 1 else ''})")
            if len(series) > 1:
                ax.fill_between(x, lo, hi, color=color[d], alpha=0.2, lw=0)
            n += 1
        ax.set_yscale("log")
        ax.set_title(wiring_label(ws), fontsize=8.5)
        ax.set_xlim(0, 1)
        ax.grid(alpha=0.3, which="both")
        ax.set_xlabel("block position l/L (0 = next to the embedding)", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(wirings):]:
        ax.set_visible(False)
    if not n:
        plt.close(fig)
        return print("plot_compare: skipping grad_norm_by_block.png: no run has a layers record")
    for ax in axes[:, 0]:
        ax.set_ylabel("grad norm of the block (log)", fontsize=8)
    handles, labels = max((a.get_legend_handles_labels() for a in axes.flat), key=lambda hl: len(hl[0]))
    fig.suptitle(f"Gradient norm per block at step {step}: seed mean (geometric), min-max band", fontsize=10)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=8, frameon=False,
               ncol=len(labels))
    save(fig, out_dir, "grad_norm_by_block.png", written)


def plot_ratio(runs, step, out_dir, written, note):
    groups = group_by_wiring_depth(runs, lambda r: first_last_ratio(r, step, note))
    if not groups:
        return print("plot_compare: skipping grad_ratio_vs_depth.png: no finite grad_norm ratios")
    fig, ax = plt.subplots(figsize=(10, 5.5))
    depths = plot_groups(ax, runs, groups, geometric=True)
    ax.axhline(1.0, color="0.3", lw=1, ls=":")
    ax.text(1.01, 1.0, "equal", transform=ax.get_yaxis_transform(), fontsize=8, va="center", color="0.3")
    ax.set_yscale("log")
    depth_axis(ax, set(depths))
    ax.set_ylabel("grad norm of block 0 / grad norm of the last block (log)")
    ax.grid(alpha=0.3, which="both")
    ax.set_title(f"First/last block gradient ratio at step {step} (>1: early blocks get larger "
                 "gradients)", fontsize=10)
    legend_below(ax, len(groups))
    save(fig, out_dir, "grad_ratio_vs_depth.png", written)


def plot_rank(runs, step, out_dir, written, note):
    rank = group_by_wiring_depth(runs, lambda r: last_boundary(r, "rank_ratio", step, note))
    rms = group_by_wiring_depth(runs, lambda r: last_boundary(r, "act_rms", step, note))
    if not rank and not rms:
        return print("plot_compare: skipping rank_vs_layer.png: no rank_ratio or act_rms")
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.5))
    for ax, groups, ylabel, what in (
            (axes[0], rank, "rank ratio at the last boundary (1 = full rank)", "Rank of the final stream"),
            (axes[1], rms, "activation RMS at the last boundary (log)", "Size of the final stream")):
        depths = plot_groups(ax, runs, groups, geometric=ax is axes[1])
        if depths:
            depth_axis(ax, set(depths))
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.set_title(f"{what} vs depth, step {step}", fontsize=10)
    axes[0].set_ylim(0, 1.05)
    if rms:
        axes[1].set_yscale("log")
    handles, labels = max((a.get_legend_handles_labels() for a in axes), key=lambda hl: len(hl[0]))
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7.5,
               frameon=False, ncol=1 if len(labels) <= 6 else 2)
    fig.tight_layout()
    save(fig, out_dir, "rank_vs_layer.png", written)


def plot_last_grad(runs, step, out_dir, written, note):
    """The last block's gradient norm vs depth, log-log, with 1/sqrt(L) and flat guides: the
    pre-norm vs post-norm scaling of Xiong et al. 2020, Theorem 1."""
    def last(run):
        rec = layers_record(run, step, note)
        g = arr(rec.get("grad_norm")) if rec else np.array([])
        return float(g[-1]) if g.size and g[-1] > 0 else None
    groups = group_by_wiring_depth(runs, last)
    if not groups:
        return print("plot_compare: skipping last_grad_vs_depth.png: no finite last-block grad norms")
    fig, ax = plt.subplots(figsize=(10, 5.5))
    depths = plot_groups(ax, runs, groups, geometric=True)
    d = np.array(sorted(set(depths)), dtype=float)
    if d.size > 1:
        lo = min(min(v) for g in groups.values() for v in g.values())
        ax.plot(d, lo * np.sqrt(d[-1] / d) * 0.5, color="0.4", ls="--", lw=1, label="guide: slope -1/2 (1/sqrt(L))")
        ax.plot(d, np.full_like(d, lo * 0.25), color="0.4", ls=":", lw=1, label="guide: slope 0 (flat)")
    ax.set_yscale("log")
    depth_axis(ax, set(depths))
    ax.set_ylabel("grad norm of the last block's parameters (log)")
    ax.grid(alpha=0.3, which="both")
    ax.set_title(f"Last block's gradient norm vs depth at step {step}", fontsize=10)
    legend_below(ax, len(groups) + 2)
    save(fig, out_dir, "last_grad_vs_depth.png", written)


def metric_descriptors(runs):
    """The per-layer metrics the runs declare (runlog.Run.layer_metrics), in first-seen order."""
    out, seen = [], set()
    for run in runs:
        for d in run.layer_metrics:
            if d["name"] not in seen:
                seen.add(d["name"])
                out.append(d)
    return out


def plot_layer_metrics(runs, step, out_dir, written, note):
    """layer_metrics_vs_depth.png: every declared per-layer metric at the last block (or last
    boundary) vs depth, one panel each; a newly registered metric appears with no edit here."""
    descs = [d for d in metric_descriptors(runs) if d["name"] != "update_ratio" or step != 0]
    panels = []
    for d in descs:
        groups = group_by_wiring_depth(runs, lambda r, k=d["name"]: last_boundary(r, k, step, note))
        if groups:
            panels.append((d, groups))
    if not panels:
        return print("plot_compare: skipping layer_metrics_vs_depth.png: no finite per-layer metrics")
    cols = 4
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.4 * rows), squeeze=False)
    for ax, (d, groups) in zip(axes.flat, panels):
        vals = np.array([v for g in groups.values() for vs in g.values() for v in vs])
        logy = vals.min() > 0 and vals.max() / vals.min() > 30
        depths = plot_groups(ax, runs, groups, geometric=logy)
        depth_axis(ax, set(depths))
        if logy:
            ax.set_yscale("log")
        else:
            ax.ticklabel_format(axis="y", useOffset=False)  # an offset would sit on the title
        where = "last block" if d.get("axis") == "block" else "last boundary"
        ax.set_title(f"{d['name']} at the {where}", fontsize=9)
        ax.set_ylabel(d.get("label") or d["name"], fontsize=8)
        ax.xaxis.label.set_size(8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, which="both")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = max((a.get_legend_handles_labels() for a in axes.flat), key=lambda hl: len(hl[0]))
    fig.suptitle(f"Every per-layer metric vs depth at step {step} (seeds averaged)", fontsize=10)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7.5,
               frameon=False, ncol=1 if len(labels) <= 6 else 2)
    save(fig, out_dir, "layer_metrics_vs_depth.png", written)
