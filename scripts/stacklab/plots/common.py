"""Figure helpers shared by the plot scripts: the wiring's label without its depth-specific
constant, one colour, marker and line style per wiring (keyed by the wiring id, so a series keeps
its look in every panel), text labels moved apart so none covers another, the depth axis, saving.
Not here: any figure.
"""
import os
import re

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

matplotlib.use("Agg")  # files only, no display: also when MPLBACKEND is unset


HUES = ["Blues", "Oranges", "Greens", "Reds", "Purples", "Greys", "YlOrBr", "PuRd"]
REF_STYLE = {"uniform": ("0.45", ":"), "unigram": ("tab:purple", "--"), "optimal": ("tab:green", "-.")}


def arr(values):
    return np.array([np.nan if v is None else float(v) for v in (values or [])], dtype=float)


def column_summary(a, geometric=False):
    """(mean, min, max) per column of `a` (seeds x points) over the column's usable entries:
    finite ones, and for `geometric` (a log axis) positive ones, whose mean is taken of the logs.
    A column with none (every seed's gradient underflowed to 0, no seed evaluated at that step)
    is NaN in all three, a gap in the line, rather than numpy's warning on an empty slice."""
    a = np.asarray(a, float)
    ok = np.isfinite(a) & (a > 0) if geometric else np.isfinite(a)
    n = ok.sum(axis=0)
    some = n > 0
    v = np.log(np.where(ok, a, 1.0)) if geometric else np.where(ok, a, 0.0)
    mean = np.full(a.shape[1:], np.nan)
    mean[some] = v.sum(axis=0)[some] / n[some]
    if geometric:
        mean = np.exp(mean)
    lo, hi = np.full_like(mean, np.nan), np.full_like(mean, np.nan)
    lo[some] = np.where(ok, a, np.inf).min(axis=0)[some]
    hi[some] = np.where(ok, a, -np.inf).max(axis=0)[some]
    return mean, lo, hi


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


MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "*"]
LINESTYLES = ["-", "--", "-.", ":"]


def wiring_styles(wirings):
    """{wiring: (marker, linestyle, index)}: keyed by the sorted wiring ids, so two wirings with equal
    values (the no-residual stacks all end on the plateau) stay told apart by marker and dash."""
    ws = sorted(set(wirings))
    return {w: (MARKERS[i % len(MARKERS)], LINESTYLES[i % len(LINESTYLES)], i) for i, w in enumerate(ws)}


def dodge(x, index, count, decades=0.02):
    """x shifted on a log axis by (index - centre) * `decades`: coincident series side by side."""
    return np.asarray(x, float) * 10 ** ((index - (count - 1) / 2) * decades)


def separate_labels(texts, pad_px=2.0, down=False):
    """Moves text labels up (down=True: down, for labels hanging from the top edge), nearest the
    start first, until no label's box overlaps another's. The figure is drawn first, so limits and
    layout are final; each text's transform must be invertible (data, axes or blended)."""
    texts = [t for t in texts if t.get_visible() and t.get_text()]
    if len(texts) < 2:
        return
    fig = texts[0].figure
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    placed = []
    order = sorted(texts, key=lambda t: -t.get_window_extent(r).y1 if down else t.get_window_extent(r).y0)
    for t in order:
        bb = t.get_window_extent(r)
        for _ in range(len(placed) + 1):  # each move clears at least one placed box for good
            hit = [p for p in placed
                   if p.x0 < bb.x1 and bb.x0 < p.x1 and p.y0 - pad_px < bb.y1 and bb.y0 < p.y1 + pad_px]
            if not hit:
                break
            # one pixel beyond the pad, so rounding cannot leave the boxes touching
            if down:
                dy = min(p.y0 for p in hit) - pad_px - 1 - bb.y1
            else:
                dy = max(p.y1 for p in hit) + pad_px + 1 - bb.y0
            tr = t.get_transform()
            x, y = tr.transform(t.get_position())
            t.set_position(tr.inverted().transform((x, y + dy)))
            bb = t.get_window_extent(r)
        placed.append(bb)


def overlapping_texts(fig):
    """[(text a, text b)] of visible, non-empty text labels (the axes' texts and the figure's) whose
    boxes overlap: what a check asserts is empty."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    texts = [t for ax in fig.axes if ax.get_visible() for t in ax.texts] + list(fig.texts)
    texts = [t for t in texts if t.get_visible() and t.get_text().strip()]
    boxes = [(t, t.get_window_extent(r)) for t in texts]
    return [(a.get_text(), b.get_text()) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
            if ba.overlaps(bb)]


def make_out_dir(out_dir: str):
    """Creates an entry point's --out folder; None, or why it cannot (an existing file, no
    permission) for the one-line message and exit 2 of a usage error."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        return f"--out {out_dir}: exists and is not a folder"
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        return f"--out {out_dir}: cannot create the folder ({e.strerror or e})"
    return None


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
