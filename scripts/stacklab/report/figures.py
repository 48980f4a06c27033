"""The caption under each figure of the report: what it shows, the data drawn (sweeps, depths, seeds,
rate, step), which finding it supports; every part read from the runs. Not here: drawing (plot_*.py).
"""
import os

from stacklab.studies import prepost_map as stability_map
from stacklab.studies import stats
from ..runs.tier_lists import CLAIMS_SWEEPS, CONVERGE_SWEEPS, SIGNAL_SWEEPS, TEXT_SWEEPS
from .tables import seeds_per_point

# The figures whose per-block values are read at one step (their captions say which).
PER_BLOCK_FIGURES = ("grad_norm_by_block.png", "grad_ratio_vs_depth.png", "rank_vs_layer.png",
                     "last_grad_vs_depth.png", "layer_metrics_vs_depth.png")

FIGURES = {  # file name -> (what it shows, which finding it supports)
    "grad_norm_by_block.png": ("Gradient norm of each block's parameters against its position l/L in the stack, "
                               "one panel per wiring, depth as colour; line = seed mean, band = min-max over seeds",
                               "findings 1 and 2"),
    "final_loss_vs_depth.png": ("Final validation loss against depth, one line per wiring (seed mean, min-max band "
                                "of the completed seeds), with the reference losses; a diverged run (summary.json "
                                "status) is an x at the top", "finding 3"),
    "grad_ratio_vs_depth.png": ("First/last block gradient ratio against depth (geometric seed mean, min-max band)",
                                "findings 1 and 2"),
    "rank_vs_layer.png": ("Rank ratio and RMS of the residual stream at the last boundary against depth", "finding 2"),
    "last_grad_vs_depth.png": ("The last block's gradient norm against depth, log-log, with slope -1/2 and flat "
                               "guides", "finding 4"),
    "layer_metrics_vs_depth.png": ("Every per-layer metric at the last block or boundary against depth",
                                   "context for findings 1-4"),
    "final_loss_vs_lr.png": ("Final validation loss against learning rate, one panel per depth, one line per wiring "
                             "(seed mean, min-max band of the completed seeds; each wiring its own marker and dash, "
                             "dodged sideways so equal losses stay visible), with the unigram line; a diverged run "
                             "(summary.json status) is an x at the top, left out of the mean", "findings 3 and 5"),
    "escape_step_vs_depth.png": (f"Escape step (first eval step with val loss <= unigram - {stats.ESCAPE_MARGIN}) "
                                 "against depth, one panel per wiring: seed points, median line; a run that never "
                                 "escaped is an open marker at its horizon", "finding 3 and the choice of horizon"),
    stability_map.FIGURE: ("Per wiring and init a panel, learning rate (x) by depth (y); each cell: seeds "
                           "trained/diverged/plateau (claims.json's definitions), coloured by the majority, and the "
                           "mean final val loss of the completed seeds", "the stability map and claim C4"),
    "loss_curves_deepest.png": ("Validation loss curves of the deepest stack, each wiring with and without a residual "
                                "(seed mean, min-max band), against the unigram line", "finding 3"),
}
RUN_FIGURES = {  # plot_run.py's figures of one run
    "loss.png": ("Train and validation loss of one run against the reference losses", "finding 3"),
    "grad_norm_heatmap.png": ("Gradient norm per block (rows) over training steps (columns) of one run", "finding 2"),
    "grad_norm_by_block.png": ("Gradient norm per block of one run at several steps", "findings 1 and 2"),
    "stream.png": ("Activation RMS and rank ratio of one run's residual stream per boundary", "finding 2"),
    "stream_grad.png": ("Gradient norm of one run's residual stream per boundary", "findings 1 and 2"),
    "layer_metrics.png": ("Every per-layer metric of one run", "context for findings 1-4"),
    "stability_map.png": ("Per wiring and init, learning rate against depth: how many seeds trained / diverged / "
                          "stayed on the plateau, coloured by the majority, with the mean final val loss",
                          "claim C4 and where pre-norm and post-norm train"),
}


def figure_caption(rel, probe, tr, sweeps):
    """The caption under a figure: what it shows, the data drawn (sweeps, depths, seeds, rate,
    step), which finding it supports. Every part comes from the runs."""
    parts = rel.split(os.sep)
    name, group = parts[-1], parts[1] if len(parts) > 2 else ""
    what, supports = FIGURES.get(name, (f"{name} (plot_compare.py)", "context"))
    if group == "runs" and len(parts) > 3:
        what, supports = RUN_FIGURES.get(name, (f"{name} of one run (plot_run.py)", "context"))
        data = f"run train_grid/{parts[2]}"
    elif group.startswith("training"):
        last = [max(x.get("step", 0) for x in r.records["layers"]) for r in tr.runs if r.records["layers"]]
        at_step = (f"each run's last layers record (step {max(set(last), key=last.count)})" if last else
                   "each run's last layers record") if group.endswith("_last") else "initialisation (step 0)"
        lr_part = ("all rates" if name == "final_loss_vs_lr.png"
                   else f"learning rate {tr.ref_lr:g} (the rate run at every depth)" if tr.ref_lr is not None else "")
        data = (f"training sweeps {', '.join(s.name for s in tr.sweeps)}, depths {', '.join(map(str, tr.depths))}, "
                f"{seeds_per_point(tr)}; {lr_part}"
                + (f"; per-block values at {at_step}" if name in PER_BLOCK_FIGURES else ""))
    elif probe is not None and group == probe.name:
        data = (f"probe sweep {probe.name} at initialisation, depths "
                f"{', '.join(str(d) for d in sorted({r.n_layer for r in probe.runs}))}, "
                f"{max((r.probe_seeds for r in probe.runs), default=0)} probe seeds per point")
    else:
        s = sweeps.get(group)
        seeds = sorted({stats.seed_of(r) for r in s.runs} - {None}) if s else []
        data = (f"sweep {group}, depths {', '.join(str(d) for d in sorted({r.n_layer for r in s.runs}))}, "
                f"seeds {'/'.join(map(str, seeds))} (n={len(seeds)})" if s else f"from {group}")
        if s and group != stability_map.SWEEP:
            supports = ("the published claims (C1-C7)" if group in CLAIMS_SWEEPS
                        else "the convergence study (issue 36)" if group in CONVERGE_SWEEPS
                        else "the residual, or the signal? (issue 45 part 2)" if group in SIGNAL_SWEEPS
                        else "the study on real text" if group in TEXT_SWEEPS + ("text_point",)
                        else "rule P (pre- vs post-norm)" if group == "map_core"
                        else "the extras (not used by a finding)")
    return f"**{rel}**: {what}. Data: {data}. Supports: {supports}."
