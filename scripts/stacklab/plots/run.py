"""Plots one stacklab run: loss curves, per-block gradient norms, the residual stream.

    /usr/bin/python3 scripts/plot_run.py RUN_DIR [--out DIR] [--steps 0,100,300] [--plotly-dir DIR]

Writes PNGs into RUN_DIR/plots/ (or --out) and prints each path: loss.png, grad_norm_by_block.png,
grad_norm_heatmap.png, stream.png, stream_grad.png, layer_metrics.png (one panel per per-layer
metric the run's start record declares, with the label stacklab gives it). A figure whose data
the run lacks (no eval yet, no layers record, gradients all 0 so nothing for a log axis) is skipped
with a message. Not here: comparing
runs (plot_compare.py).
"""
import argparse
import math
import os
import sys

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.ticker import FuncFormatter, MaxNLocator

from stacklab.runs import runlog
from stacklab.plots import views
from stacklab.plots.common import make_out_dir, save, separate_labels  # the figure helpers every plot module shares

matplotlib.use("Agg")  # files only, no display: also when MPLBACKEND is unset

REF_STYLE = {"uniform": ("0.45", ":"), "unigram": ("tab:purple", "--"), "optimal": ("tab:green", "-.")}


def arr(values):
    """A float array with None (a non-finite value in the log) as NaN."""
    return np.array([np.nan if v is None else float(v) for v in (values or [])], dtype=float)


def positive(a):
    """NaN where a log axis cannot show the value."""
    a = a.copy()
    a[~(a > 0)] = np.nan
    return a


def plain_log_labels(axis, lo, hi):
    """Tick labels like 0.3 instead of 3x10^-1; minor ticks labelled too when the range spans
    less than about a decade (else a short log axis shows a single label)."""
    fmt = FuncFormatter(lambda v, _: f"{v:.3g}")
    axis.set_major_formatter(fmt)
    if lo > 0 and hi / lo < 20:
        axis.set_minor_formatter(fmt)
    else:
        axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def title(ax, what, run):
    ax.set_title(f"{what}\n{runlog.label(run)}", fontsize=10)


def skip(name, why):
    print(f"plot_run: skipping {name}: {why}")


def mark_divergence(ax, run, in_legend=False):
    """A dashed line at the step a diverged run (runlog.is_diverged) stopped, named in the legend
    (in_legend) or by a label inside the axes on the side with room, so it covers no other label."""
    step = run.diverged_step if runlog.is_diverged(run) else None
    if step is None:
        return
    text = f"diverged (step {step})"
    ax.axvline(step, color="tab:red", lw=1, ls="--", label=text if in_legend else None)
    if not in_legend:
        lo, hi = ax.get_xlim()
        right = step > (lo + hi) / 2
        ax.text(step, 0.98, f" {text} " if not right else f"{text} ", transform=ax.get_xaxis_transform(),
                color="tab:red", va="top", ha="right" if right else "left", fontsize=8)


def loss_figure(run):
    """loss.png's figure, or None (said why) without a finite loss."""
    train = [r for r in run.records["train"] if r.get("loss") is not None]
    evals = [r for r in run.records["eval"] if r.get("val_loss") is not None]
    if not train and not evals:
        return skip("loss.png", "no train or eval records with a finite loss")
    fig, ax = plt.subplots(figsize=(8, 5))
    if train:
        ax.plot([r["step"] for r in train], [r["loss"] for r in train], color="tab:blue",
                lw=1.2, label="train loss (batch)")
    if evals:
        ax.plot([r["step"] for r in evals], [r["val_loss"] for r in evals], "o-", color="tab:orange",
                lw=1.8, ms=4, label="val loss (eval)")
    else:
        print("plot_run: loss.png: no eval records yet; train loss only")
    labels = []
    for name, value in run.reference_losses.items():
        if value is None or not math.isfinite(value):
            continue
        color, ls = REF_STYLE.get(name, ("0.3", ":"))
        ax.axhline(value, color=color, ls=ls, lw=1)
        labels.append(ax.text(1.01, value, f"{name} {value:.3f}", transform=ax.get_yaxis_transform(),
                              color=color, va="center", fontsize=8, clip_on=False))
    mark_divergence(ax, run, in_legend=True)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats/token)")
    ax.grid(alpha=0.3)
    ax.legend(loc="center right", fontsize=8)
    title(ax, "Loss", run)
    separate_labels(labels)  # uniform and unigram can sit a few pixels apart (a run that blew up)
    return fig


def plot_loss(run, out_dir, written):
    fig = loss_figure(run)
    if fig is not None:
        save(fig, out_dir, "loss.png", written)


def choose_layer_records(run, steps):
    """The layers records to draw: nearest to each requested step, else first, middle, last."""
    recs = run.records["layers"]
    if steps:
        chosen = [run.layers_at(s) for s in steps]
        for s, r in zip(steps, chosen):
            if r["step"] != s:
                print(f"plot_run: no layers record at step {s}; using step {r['step']}")
    else:
        chosen = [recs[0], recs[len(recs) // 2], recs[-1]]
    out, seen = [], set()
    for r in chosen:
        if r["step"] not in seen:
            seen.add(r["step"])
            out.append(r)
    return sorted(out, key=lambda r: r["step"])


def step_colors(steps):
    """{step: colour} over the chosen layers records' steps: a series keeps its step's colour in
    every panel, also where it is null (update_ratio at step 0) and so not drawn."""
    steps = sorted(set(steps))
    return {s: plt.cm.viridis(x) for s, x in zip(steps, np.linspace(0.0, 0.85, max(len(steps), 1)))}


def plot_lines(run, recs, key, out_dir, name, what, xlabel, ylabel, logy=True):
    series = [(r["step"], arr(r.get(key))) for r in recs if r.get(key)]
    # NaN where a log axis cannot show a value first, then the series with something left to draw:
    # all-zero gradients (a run that cannot learn, e.g. a one-character text) are a note, not a traceback.
    series = [(s, a) for s, a in ((s, positive(a) if logy else a) for s, a in series) if np.isfinite(a).any()]
    if not series:
        return skip(name, f"no {'positive ' if logy else ''}finite '{key}' in the layers records"
                    + (" (every value 0 or null: nothing to draw on a log axis)" if logy else ""))
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = step_colors([r["step"] for r in recs])
    for step, a in series:
        ax.plot(np.arange(len(a)), a, "o-", color=colors[step], ms=4, label=f"step {step}")
    if logy:
        ax.set_yscale("log")
        vals = np.concatenate([a[np.isfinite(a)] for _, a in series])
        plain_log_labels(ax.yaxis, vals.min(), vals.max())
    n = max(len(a) for _, a in series)
    ax.set_xticks(np.arange(n) if n <= 33 else np.arange(0, n, max(1, n // 16)))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    title(ax, what, run)
    return fig


def plot_heatmap(run, out_dir, written):
    recs = [r for r in run.records["layers"] if r.get("grad_norm")]
    if not recs:
        return skip("grad_norm_heatmap.png", "no layers records with grad_norm")
    steps = np.array([r["step"] for r in recs], dtype=float)
    n_block = max(len(r["grad_norm"]) for r in recs)
    grid = np.full((n_block, len(recs)), np.nan)
    for j, r in enumerate(recs):
        a = positive(arr(r["grad_norm"]))
        grid[: len(a), j] = a
    if not np.isfinite(grid).any():
        return skip("grad_norm_heatmap.png", "no positive finite grad_norm values")
    # cell edges halfway between recorded steps, so uneven intervals stay honest
    if len(steps) > 1:
        mid = (steps[1:] + steps[:-1]) / 2
        edges = np.concatenate([[steps[0] - (mid[0] - steps[0])], mid, [steps[-1] + (steps[-1] - mid[-1])]])
    else:
        edges = np.array([steps[0] - 0.5, steps[0] + 0.5])
    fig, ax = plt.subplots(figsize=(9, max(3.5, min(9, 1.5 + 0.22 * n_block))))
    cmap = plt.cm.magma.copy()
    cmap.set_bad("0.8")  # null (non-finite) gradients show as grey
    finite = grid[np.isfinite(grid)]
    vmin, vmax = finite.min(), finite.max()
    if vmax <= vmin:
        vmin, vmax = vmin / 2, vmax * 2
    mesh = ax.pcolormesh(edges, np.arange(n_block + 1) - 0.5, np.ma.masked_invalid(grid), cmap=cmap,
                         norm=LogNorm(vmin=vmin, vmax=vmax), shading="flat")
    cbar = fig.colorbar(mesh, ax=ax, label="grad norm (log scale; grey = non-finite)")
    plain_log_labels(cbar.ax.yaxis, vmin, vmax)
    if len(steps) <= 12:
        ax.set_xticks(steps)
    ax.set_xlabel("step (one column per layers record)")
    ax.set_ylabel("block index (0 = next to the embedding)")
    if n_block <= 33:
        ax.set_yticks(np.arange(n_block))
    ax.set_xlim(edges[0], edges[-1])
    mark_divergence(ax, run)
    title(ax, "Gradient norm per block over training", run)
    save(fig, out_dir, "grad_norm_heatmap.png", written)


def metric_label(run, key):
    """The plot label stacklab declared for a metric (its key for runs without descriptors)."""
    return next((d.get("label") or key for d in run.layer_metrics if d["name"] == key), key)


def stream_figure(run):
    """The act_rms and rank_ratio panels of stream.png, or None without those metrics."""
    recs = [r for r in run.records["layers"] if r.get("act_rms") or r.get("rank_ratio")]
    if not recs:
        return None
    chosen = [recs[0]] if len(recs) == 1 else [recs[0], recs[-1]]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, key in ((axes[0], "act_rms"), (axes[1], "rank_ratio")):
        ylabel = metric_label(run, key)
        for r, color in zip(chosen, ("tab:blue", "tab:red")):
            a = arr(r.get(key))
            if np.isfinite(a).any():
                ax.plot(np.arange(len(a)), a, "o-", ms=4, color=color, label=f"step {r['step']}")
        ax.set_xlabel("residual-stream boundary (0 = embedding output)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, which="both")
        if ax.lines:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, f"no finite {key}", transform=ax.transAxes, ha="center")
    rms = np.concatenate([arr(r.get("act_rms")) for r in chosen])
    rms = rms[rms > 0]
    if rms.size and rms.max() / rms.min() > 30:
        axes[0].set_yscale("log")
    axes[1].set_ylim(0, 1.05)
    axes[0].set_title("Activation RMS along the stream", fontsize=10)
    axes[1].set_title("Rank ratio along the stream (0 = every token the same vector)", fontsize=10)
    fig.suptitle(runlog.label(run), fontsize=10)
    return fig


def plot_stream(run, out_dir, written):
    fig = stream_figure(run)
    if fig is None:
        return skip("stream.png", "no layers records with act_rms or rank_ratio")
    save(fig, out_dir, "stream.png", written)


AXIS_XLABEL = {"block": "block index (0 = next to the embedding)",
               "boundary": "residual-stream boundary (0 = embedding output)"}


def metric_panel(ax, recs, desc, colors):
    """One registered metric over its axis, one line per chosen layers record in its step's colour
    (colors: step_colors). Log scale when every value is positive and they span more than 30x.
    False when nothing was finite."""
    key = desc["name"]
    series = [(r["step"], arr(r.get(key))) for r in recs if isinstance(r.get(key), list)]
    series = [(s, a) for s, a in series if np.isfinite(a).any()]
    ax.set_title(key, fontsize=9)
    ax.set_xlabel(AXIS_XLABEL.get(desc.get("axis"), "index"), fontsize=8)
    ax.set_ylabel(desc.get("label") or key, fontsize=8)
    if not series:
        ax.text(0.5, 0.5, "null in every record" if any(key in r for r in recs) else "not recorded",
                transform=ax.transAxes, ha="center", va="center", color="0.4")
        return False
    for step, a in series:
        ax.plot(np.arange(len(a)), a, "o-", color=colors[step], ms=3, lw=1.2, label=f"step {step}")
    vals = np.concatenate([a[np.isfinite(a)] for _, a in series])
    if vals.min() > 0 and vals.max() / vals.min() > 30:
        ax.set_yscale("log")
        plain_log_labels(ax.yaxis, vals.min(), vals.max())
    else:
        ax.ticklabel_format(axis="y", useOffset=False)  # an offset would sit on the title
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3, which="both")
    ax.tick_params(labelsize=7)
    return True


def layer_metrics_figure(run, recs):
    """layer_metrics.png's figure: every per-layer metric the run declares (its start record's
    layer_metrics), one panel each, so a newly registered metric is drawn with no edit here.
    None (said why) when nothing is finite."""
    descs = run.layer_metrics
    if not descs:
        return skip("layer_metrics.png", "no per-layer metric descriptors or layers records")
    cols = 4
    rows = (len(descs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    colors = step_colors([r["step"] for r in recs])
    drawn = [metric_panel(ax, recs, d, colors) for ax, d in zip(axes.flat, descs)]
    for ax in list(axes.flat)[len(descs):]:
        ax.set_visible(False)
    if not any(drawn):
        plt.close(fig)
        return skip("layer_metrics.png", "no finite values of any per-layer metric")
    # One legend entry per chosen step, whether or not the first panel drew it.
    handles = [plt.Line2D([], [], marker="o", ms=3, lw=1.2, color=c, label=f"step {s}") for s, c in colors.items()]
    fig.legend(handles=handles, loc="upper right", fontsize=8)
    fig.suptitle(f"Every per-layer metric\n{runlog.label(run)}", fontsize=10)
    fig.tight_layout()
    return fig


def plot_layer_metrics(run, recs, out_dir, written):
    fig = layer_metrics_figure(run, recs)
    if fig is not None:
        save(fig, out_dir, "layer_metrics.png", written)


def main(argv=None):
    p = argparse.ArgumentParser(description="Plot one stacklab run directory.")
    p.add_argument("run_dir")
    p.add_argument("--out", help="output directory (default RUN_DIR/plots)")
    p.add_argument("--steps", help="layers-record steps for the per-block plots, e.g. 0,100,300 "
                   "(default: first, middle and last record)")
    p.add_argument("--plotly-dir", metavar="DIR",
                   help="where view.html's plotly.js goes: one copy shared by every view plotted with the same DIR "
                   "(reproduce.sh: OUT/figures); default the output directory")
    args = p.parse_args(argv)

    metrics = os.path.join(args.run_dir, "metrics.jsonl")
    if not os.path.isdir(args.run_dir):
        print(f"plot_run: {args.run_dir}: not a directory (expected a run dir from stacklab train)",
              file=sys.stderr)
        return 1
    if not os.path.isfile(metrics):
        print(f"plot_run: {metrics}: no such file; is {args.run_dir} a run dir written by "
              "'stacklab train'?", file=sys.stderr)
        return 1
    steps = None
    if args.steps:
        try:
            steps = [int(s) for s in args.steps.split(",") if s.strip()]
        except ValueError:
            print(f"plot_run: --steps: expected comma-separated integers, got '{args.steps}'",
                  file=sys.stderr)
            return 2

    out_dir = args.out or os.path.join(args.run_dir, "plots")
    bad_out = make_out_dir(out_dir)
    if bad_out:
        print(f"plot_run: {bad_out}", file=sys.stderr)
        return 2
    run = runlog.load_run(args.run_dir)
    written = []

    plot_loss(run, out_dir, written)
    if run.records["layers"]:
        recs = choose_layer_records(run, steps)
        fig = plot_lines(run, recs, "grad_norm", out_dir, "grad_norm_by_block.png",
                         "Gradient norm per block", "block index (0 = next to the embedding)",
                         "grad norm of the block's parameters (log)")
        if fig:
            save(fig, out_dir, "grad_norm_by_block.png", written)
        plot_heatmap(run, out_dir, written)
        plot_stream(run, out_dir, written)
        fig = plot_lines(run, recs, "stream_grad_norm", out_dir, "stream_grad.png",
                         "Gradient norm of the residual stream (dLoss/dx at each boundary)",
                         "residual-stream boundary (0 = embedding output)", "grad norm (log)")
        if fig:
            save(fig, out_dir, "stream_grad.png", written)
        plot_layer_metrics(run, recs, out_dir, written)
    else:
        skip("grad_norm_by_block.png, grad_norm_heatmap.png, stream.png, stream_grad.png, layer_metrics.png",
             "no layers records in metrics.jsonl")

    views.write_view(views.write_run_view, run, out_dir, written, args.plotly_dir)
    for path in written:
        print(path)
    if not written:
        print("plot_run: nothing to plot yet", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
