"""Figure helpers shared by plot_compare.py and plot_study.py: the wiring's label without its
depth-specific constant, one colour per wiring, the depth axis, saving. Not here: any figure.
"""
import os
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402


HUES = ["Blues", "Oranges", "Greens", "Reds", "Purples", "Greys", "YlOrBr", "PuRd"]
REF_STYLE = {"uniform": ("0.45", ":"), "unigram": ("tab:purple", "--"), "optimal": ("tab:green", "-.")}


def arr(values):
    return np.array([np.nan if v is None else float(v) for v in (values or [])], dtype=float)


def wiring_label(runs):
    """The wiring's formula without the depth-specific constant (deepnorm's alpha for N=...)."""
    f = runs[0].formula
    return re.sub(r", alpha=\(2N\)\^\(1/4\)=[0-9.]+ for N=\d+", ", alpha=(2N)^(1/4)", f)


def wiring_colors(runs):
    """One hue per wiring id; the run's own colour darkens with depth."""
    wirings = sorted({r.wiring for r in runs})
    depths = sorted({r.n_layer or 0 for r in runs})
    hue = {w: plt.get_cmap(HUES[i % len(HUES)]) for i, w in enumerate(wirings)}
    line = {w: hue[w](0.7) for w in wirings}

    def shade(run):
        k = depths.index(run.n_layer or 0)
        return hue[run.wiring](0.45 + 0.5 * k / max(1, len(depths) - 1))
    return line, shade


def save(fig, out_dir, name, written):
    path = os.path.join(out_dir, name)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    written.append(path)


def legend_below(ax, n):
    """Below the axes, so ~12 long formula labels neither cover the data nor squeeze it."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), fontsize=7.5, frameon=False,
              ncol=1 if n <= 6 else 2)


def depth_axis(ax, depths):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(sorted(depths)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("depth (number of blocks, L)")
