"""Compares stacklab runs across depth and wiring: gradient norms per block, final loss, the
first/last block gradient ratio, and the state of the residual stream at the last boundary.

    /usr/bin/python3 scripts/plot_compare.py PATH... [--out DIR] [--step 0|last] [--plotly-dir DIR]

PATHs are run dirs, sweep dirs (run dirs one or two levels down) or `stacklab probe` JSON files
(a probe counts as a run with one step-0 layers record; its seeds are read from the file). Writes
into --out (default PATH/plots for a single sweep dir, else ./compare_plots): grad_norm_by_block.png
(small multiples: one panel per wiring, depth as colour, block position l/L), final_loss_vs_depth.png,
grad_ratio_vs_depth.png, rank_vs_layer.png, last_grad_vs_depth.png, layer_metrics_vs_depth.png
(every per-layer metric the runs declare, at the last block or boundary), and for training runs at
step 0 plot_study.py's final_loss_vs_lr.png, escape_step_vs_depth.png and loss_curves_deepest.png;
prints each path. `--step last`: each run's last layers record (the most common last step).
Runs are grouped by their wiring id; runs with the same wiring and depth (seeds) are averaged,
with a min-max band. Diverged runs (summary.json status: runlog.is_diverged) are left out of the
per-layer figures, as the report leaves them out of its numbers, and marked in
final_loss_vs_depth.png and final_loss_vs_lr.png. Runs at several learning rates: the depth figures
use the rate run at the most points (study_stats.reference_rate), the learning-rate figure all.
Runs on more than one data set (runlog.data_set: another text file, another Markov source) get a
warning on stderr: their losses share the loss figures' axes.
Not here: one run's curves (plot_run.py).
"""
import argparse
import math
import os
import sys
from collections import defaultdict

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from stacklab.runs import runlog
from stacklab.plots import views
from stacklab.studies import stats
from stacklab.plots.common import (REF_STYLE, arr, column_summary, depth_axis, legend_below, make_out_dir,
                                   save, separate_labels, wiring_colors, wiring_label, wiring_styles)
from stacklab.plots.study import plot_deepest_curves, plot_escape, plot_loss_vs_lr

matplotlib.use("Agg")  # files only, no display: also when MPLBACKEND is unset


def layers_record(run, step, note):
    if run.is_probe and step != 0:
        note.add(f"{run.path}: a probe has only step 0; left out at step {step}")
        return None
    rec = run.layers_at(step)
    if rec is not None and rec.get("step") != step:
        note.add(f"{run.path}: no layers record at step {step}; used step {rec.get('step')}")
    return rec


def seed_series(run, key, step, note):
    """[one list per seed] of a per-layer metric: a probe file's per-seed values, else the run's
    layers record at `step` (one seed)."""
    if run.is_probe:
        j = runlog._read_json(run.path, "probe file") or {}
        out = [(s.get("layers") or {}).get(key) for s in j.get("seeds") or []]
        return [arr(v) for v in out if v]
    rec = layers_record(run, step, note)
    return [arr(rec.get(key))] if rec and rec.get(key) else []


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


def group_by_wiring_depth(runs, value):
    """{wiring: {depth: [values]}} for runs where value(run) is a finite number."""
    groups = defaultdict(lambda: defaultdict(list))
    for run in runs:
        v = value(run)
        if v is not None and math.isfinite(v) and run.n_layer:
            groups[run.wiring][run.n_layer].append(v)
    return groups


def plot_groups(ax, runs, groups, geometric=False):
    """One line per wiring: the seed mean (geometric for log axes) with a min-max band."""
    line, _ = wiring_colors(runs)
    style = wiring_styles(r.wiring for r in runs)  # equal values (the plateau) stay told apart
    by_wiring = defaultdict(list)
    for r in runs:
        by_wiring[r.wiring].append(r)
    zeros = 0
    for w in sorted(groups):
        depths = sorted(groups[w])
        vals = [np.array(groups[w][d]) for d in depths]
        if geometric:  # a log axis cannot show 0 (a gradient that underflowed float32): leave it out
            zeros += sum(int((v <= 0).sum()) for v in vals)
            kept = [(d, v[v > 0]) for d, v in zip(depths, vals) if (v > 0).any()]
            depths, vals = [d for d, _ in kept], [v for _, v in kept]
            if not vals:
                continue
        mean = [np.exp(np.log(v).mean()) if geometric else v.mean() for v in vals]
        seeds = max(len(v) for v in vals)
        lab = wiring_label(by_wiring[w]) + (f" ({seeds} seeds, min-max band)" if seeds > 1 else "")
        ax.plot(depths, mean, marker=style[w][0], ls=style[w][1], color=line[w], lw=1.8, ms=5, label=lab)
        ax.fill_between(depths, [v.min() for v in vals], [v.max() for v in vals], color=line[w], alpha=0.2)
    if zeros:
        print(f"plot_compare: {zeros} value(s) of exactly 0 (float32 underflow) not drawn on the log axis")
    return [d for w in groups for d in groups[w]]


def plot_final_loss(runs, out_dir, written):
    trained = [r for r in runs if not r.is_probe]
    if len(trained) < len(runs):
        print(f"plot_compare: final_loss_vs_depth.png: {len(runs) - len(trained)} probe file(s) left out (no training)")
    done = [r for r in trained if runlog.is_completed(r)]
    for r in trained:
        if not (runlog.is_completed(r) or runlog.is_diverged(r)):
            print(f"plot_compare: final_loss_vs_depth.png: {r.path} left out:{runlog.status_mark(r)}")
    groups = group_by_wiring_depth(done, lambda r: r.final_val_loss)
    diverged = [r for r in trained if runlog.is_diverged(r)]  # what the run's summary says
    if not groups and not diverged:
        return print("plot_compare: skipping final_loss_vs_depth.png: no completed run with a final val loss")
    fig, ax = plt.subplots(figsize=(10, 5.5))
    depths = plot_groups(ax, runs, groups)
    if diverged:
        line, _ = wiring_colors(runs)
        xs = [r.n_layer for r in diverged]
        ax.scatter(xs, [0.97] * len(xs), transform=ax.get_xaxis_transform(), marker="x", s=60,
                   color=[line[r.wiring] for r in diverged], zorder=5,
                   label=f"diverged ({len(diverged)} run(s), summary.json status; drawn at the top, "
                         "in the wiring's colour)")
        depths += xs
    refs = next((r.reference_losses for r in trained if r.reference_losses), {})
    labels = []
    for name, v in refs.items():
        if v is not None and math.isfinite(v):
            color, ls = REF_STYLE.get(name, ("0.3", ":"))
            ax.axhline(v, color=color, ls=ls, lw=1)
            labels.append(ax.text(1.01, v, f"{name} {v:.3f}", transform=ax.get_yaxis_transform(), color=color,
                                  va="center", fontsize=8, clip_on=False))
    depth_axis(ax, set(depths))
    ax.set_ylabel("final val loss (nats/token)")
    ax.grid(alpha=0.3)
    ax.set_title("Final validation loss vs depth (completed runs; seeds averaged)", fontsize=10)
    legend_below(ax, len(groups) + bool(diverged))
    separate_labels(labels)  # uniform and unigram are 0.05 nats apart
    save(fig, out_dir, "final_loss_vs_depth.png", written)


def first_last_ratio(run, step, note):
    rec = layers_record(run, step, note)
    if rec is None:
        return None
    if run.is_probe and rec.get("ratio_first_last") is not None:
        return rec["ratio_first_last"]
    g = arr(rec.get("grad_norm"))
    if g.size < 1 or not (g[0] > 0 and g[-1] > 0):
        return None
    return float(g[0] / g[-1])


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


def last_boundary(run, key, step, note):
    rec = layers_record(run, step, note)
    a = arr(rec.get(key)) if rec else np.array([])
    return float(a[-1]) if a.size and np.isfinite(a[-1]) else None


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


def layer_figure_runs(runs, note):
    """The runs the per-layer figures draw: all but the diverged ones (runlog.is_diverged, what
    their summary.json says), which the report leaves out of its numbers too; final_loss_vs_depth
    marks them itself. A run still going is drawn (its records so far)."""
    for r in runs:
        if runlog.is_diverged(r):
            note.add(f"{r.path}: left out of the per-layer figures:{runlog.status_mark(r)}")
    return [r for r in runs if not runlog.is_diverged(r)]


def warn_mixed_data(runs) -> bool:
    """Warns (stderr) when the runs trained on more than one data set: the loss figures put them on
    one axis, where a loss is in units of its own data's difficulty. True when it warned."""
    sets = defaultdict(list)
    for r in runs:
        ds = runlog.data_set(r)
        if ds is not None:
            sets[ds[0]].append((ds[1], r))
    if len(sets) < 2:
        return False
    listed = "; ".join(f"{v[0][0]} ({len(v)} run{'s' if len(v) != 1 else ''})" for v in sets.values())
    print(f"plot_compare: warning: the runs trained on {len(sets)} data sets ({listed}); the loss figures "
          "(final_loss_vs_depth.png, final_loss_vs_lr.png, loss_curves_deepest.png, the view's loss panel) "
          "put their losses on one axis, though each is in units of its own data's difficulty: compare "
          "runs of one data set (give plot_compare the runs of one set)", file=sys.stderr)
    return True


def main(argv=None):
    p = argparse.ArgumentParser(description="Compare stacklab runs across depth and wiring.")
    p.add_argument("paths", nargs="+", metavar="PATH", help="run dir, sweep dir or probe JSON")
    p.add_argument("--out", help="output directory")
    p.add_argument("--step", default="0",
                   help="layers-record step to compare (default 0), or 'last': the runs' last layers record")
    p.add_argument("--plotly-dir", metavar="DIR",
                   help="where view.html's plotly.js goes: one copy shared by every view plotted with the same DIR "
                   "(reproduce.sh: OUT/figures); default the output directory")
    args = p.parse_args(argv)

    runs = runlog.find_runs(args.paths)
    runs = [r for r in runs if r.has_metrics]
    if not runs:
        print("plot_compare: no runs with metrics.jsonl (or probe files) under: " + " ".join(args.paths),
              file=sys.stderr)
        return 1
    if args.step == "last":
        last = [max(x.get("step", 0) for x in r.records["layers"]) for r in runs
                if not r.is_probe and r.records["layers"]]
        step = max(set(last), key=last.count) if last else 0
    elif args.step.isdigit():
        step = int(args.step)
    else:
        p.error(f"--step: expected a step number or 'last', got {args.step!r}")
    first = args.paths[0]
    single_sweep = len(args.paths) == 1 and os.path.isdir(first) and not runlog._is_run_dir(first)
    out_dir = args.out or (os.path.join(first, "plots") if single_sweep else "compare_plots")
    bad_out = make_out_dir(out_dir)
    if bad_out:
        print(f"plot_compare: {bad_out}", file=sys.stderr)
        return 2
    print(f"plot_compare: {len(runs)} run(s), wirings: {', '.join(sorted({r.wiring for r in runs}))}")
    warn_mixed_data(runs)
    # The depth plots compare one learning rate: with several, the one run at the most (wiring,
    # depth) points (study_stats.reference_rate); the rate plot shows them all.
    all_runs = runs
    ref = stats.reference_rate(stats.points([r for r in runs if not r.is_probe]))
    if len({stats.learning_rate(r) for r in runs if not r.is_probe}) > 1:
        runs = [r for r in runs if r.is_probe or stats.learning_rate(r) == ref]
        print(f"plot_compare: several learning rates; the depth plots use lr {ref:g} ({len(runs)} runs)")

    written, note = [], set()
    layer_runs = layer_figure_runs(runs, note)
    plot_grad_by_block(layer_runs, step, out_dir, written, note)
    plot_final_loss(runs, out_dir, written)
    plot_ratio(layer_runs, step, out_dir, written, note)
    plot_rank(layer_runs, step, out_dir, written, note)
    plot_last_grad(layer_runs, step, out_dir, written, note)
    plot_layer_metrics(layer_runs, step, out_dir, written, note)
    if any(not r.is_probe for r in runs) and step == 0:
        plot_loss_vs_lr(all_runs, out_dir, written)
        plot_escape(runs, out_dir, written)
        plot_deepest_curves(runs, out_dir, written)
    views.write_view(views.write_sweep_view, all_runs, out_dir, written, args.plotly_dir)
    for n in sorted(note):
        print(f"plot_compare: {n}")
    for path in written:
        print(path)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
