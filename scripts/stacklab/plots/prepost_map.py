"""The stability map's figure (studies/prepost_map.py judges the map): one panel per wiring and init,
a grid of learning rate (x) by depth (y), each cell "trained/diverged/plateau" coloured by the
majority, with the mean final val loss of its completed seeds.

    /usr/bin/python3 scripts/plot_stability_map.py OUT/stability_map --out OUT/figures/stability_map

Not here: the counts and what they show (studies/prepost_map.py), the report's text (report/map.py).
"""
import argparse
import os
import sys

import matplotlib.pyplot as plt
from matplotlib.patches import Patch, Rectangle

from stacklab.plots.common import save
from stacklab.studies.prepost_map import FIGURE, OUTCOMES, WIRINGS, MapData, load

COLOURS = {"trained": "#9fd89a", "diverged": "#f08a80", "plateau": "#f7d379", "tie": "#d0d0d0", "empty": "#ffffff"}


def map_figure(data: MapData):
    """One panel per (wiring, init): rows = wirings, columns = inits; learning rate on x, depth on y.
    Each cell is a Rectangle whose gid is "wiring|init|depth|lr", coloured by the majority outcome."""
    nr, nc = len(data.wirings), len(data.inits)
    nx, ny = len(data.rates), len(data.depths)
    fig, axes = plt.subplots(nr, nc, figsize=(1.25 * nx * nc + 1.5, 0.75 * ny * nr + 1.6), squeeze=False)
    for i, w in enumerate(data.wirings):
        for j, init in enumerate(data.inits):
            ax = axes[i][j]
            for x, lr in enumerate(data.rates):
                for y, d in enumerate(data.depths):
                    c = data.cell(w, init, d, lr)
                    ax.add_patch(Rectangle((x, y), 1, 1, facecolor=COLOURS[c.majority], edgecolor="0.4", lw=0.8,
                                           gid=f"{w}|{init}|{d}|{lr:g}"))
                    if c.n or c.unfinished:
                        m = c.mean_final
                        text = c.counts + (f"\n{m:.3f}" if m is not None else "\n-")
                        text += f"\n+{c.unfinished} unfinished" if c.unfinished else ""
                    else:
                        text = "not run"
                    ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=7, gid=f"{w}|{init}|{d}|{lr:g}")
            ax.set_xlim(0, nx)
            ax.set_ylim(0, ny)
            ax.set_xticks([x + 0.5 for x in range(nx)], [f"{lr:g}" for lr in data.rates], fontsize=7)
            ax.set_yticks([y + 0.5 for y in range(ny)], [f"L={d}" for d in data.depths], fontsize=7)
            ax.tick_params(length=0)
            ax.set_title(f"{WIRINGS[w]}\ninit {init}", fontsize=8)
            if i == nr - 1:
                ax.set_xlabel("learning rate", fontsize=8)
    handles = [Patch(facecolor=COLOURS[k], edgecolor="0.4", label=f"most seeds {k}") for k in OUTCOMES]
    handles.append(Patch(facecolor=COLOURS["tie"], edgecolor="0.4", label="tie"))
    fig.suptitle("Stability map: seeds trained/diverged/plateau per cell (claims.json's definitions), "
                 "mean final val loss of the completed seeds below", fontsize=9)
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=8, frameon=False)
    return fig


def main(argv=None):
    p = argparse.ArgumentParser(description="Draw the stability map of OUT/stability_map.")
    p.add_argument("sweep_dir", help="the stability map's sweep dir, e.g. runs/deep_stacking/stability_map")
    p.add_argument("--out", help="output directory (default SWEEP_DIR/plots)")
    args = p.parse_args(argv)
    data = load(args.sweep_dir)
    if data.empty:
        print(f"plot_stability_map: no map runs under {args.sweep_dir}", file=sys.stderr)
        return 1
    out_dir = args.out or os.path.join(args.sweep_dir, "plots")
    os.makedirs(out_dir, exist_ok=True)
    written = []
    save(map_figure(data), out_dir, FIGURE, written)
    for path in written:
        print(path)
    return 0
