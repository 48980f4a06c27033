"""Runs grouped by wiring and depth, and drawn from the groups: one line per wiring (the seed mean,
geometric on a log axis, with a min-max band); and a run's per-layer values at a step (its layers
record, a probe file's seeds, the first/last gradient ratio, the value at the last boundary), with a
note when the step asked for is not there. Used by compare.py and layer_figures.py.

    groups = group_by_wiring_depth(runs, lambda r: r.final_val_loss)   # {wiring: {depth: [values]}}
    depths = plot_groups(ax, runs, groups, geometric=True)

Not here: the figures themselves (layer_figures.py, compare.py), what a figure leaves out and why
(compare.py).
"""
import math
from collections import defaultdict

import numpy as np

from stacklab.runs import runlog
from stacklab.plots.common import arr, wiring_colors, wiring_label, wiring_styles


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


def last_boundary(run, key, step, note):
    rec = layers_record(run, step, note)
    a = arr(rec.get(key)) if rec else np.array([])
    return float(a[-1]) if a.size and np.isfinite(a[-1]) else None
