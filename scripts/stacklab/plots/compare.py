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
Here: the command line, which runs each figure draws (layer_figure_runs), the final-loss figure and
the mixed-data warning. Not here: the per-layer figures (layer_figures.py), grouping runs by wiring
and depth and drawing their lines (depth_groups.py), one run's curves (plot_run.py).
"""
import argparse
import math
import os
import sys
from collections import defaultdict

import matplotlib
import matplotlib.pyplot as plt

from stacklab.runs import runlog
from stacklab.plots import views
from stacklab.studies import stats
from stacklab.plots.common import (REF_STYLE, depth_axis, legend_below, make_out_dir, save, separate_labels,
                                   wiring_colors)
from stacklab.plots.depth_groups import group_by_wiring_depth, plot_groups
from stacklab.plots.layer_figures import (plot_grad_by_block, plot_last_grad, plot_layer_metrics, plot_rank,
                                          plot_ratio)
from stacklab.plots.study import plot_deepest_curves, plot_escape, plot_loss_vs_lr

matplotlib.use("Agg")  # files only, no display: also when MPLBACKEND is unset


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
