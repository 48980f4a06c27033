"""The report's convergence part (issue 36), from the converge sweeps in OUT judged by
convergence.py under configs/experiments/convergence_rules.json: per source a table of wiring x depth
with each point's verdict, its seeds' counts, final loss and horizon (H and 4H where extended), the
escape step of the stacks without a residual against depth with its fit, pre vs post at L = 32 per
init, and each short-horizon statement beside its long verdict with every reversal named (also in
the summary). Without converge sweeps, one line saying how to run them. Used by page.py.
Not here: the rules (convergence.py), the figures (plot_convergence.py), the front page (front.py).
"""
from collections import Counter

from stacklab.studies import convergence as cv
from stacklab.studies import rules_check
from stacklab.studies import stats
from stacklab.studies.findings import GRID_WIRINGS, fmt

ANCHOR = "convergence"
SHORT_LONG_ANCHOR = "convergence-short-long"
COMMAND, RULES_FILE = cv.COMMAND, cv.RULES_FILE
SOURCE_NAMES = {"synthetic": "Synthetic source (order-2 Markov)", "text": "Tiny Shakespeare"}
# Where a short verdict the output folder does not hold was measured, and what runs it here.
NOT_HERE = {"synthetic": "the quick tier's train_grid and map_core run it",
            "text": "docs/study.md, 'Measured on tiny Shakespeare', gives the measured one; "
                    "`bash scripts/reproduce.sh --text` runs it here"}


# ---- text pieces -----------------------------------------------------------------------------

def loss_range(values, nd=4) -> str:
    """"2.1234 (2.1000-2.1500)": mean (min-max) over seeds; one seed: the value; none: "-"."""
    s = stats.summarize_loss(values)
    if not s["n"]:
        return "-"
    num = stats.fmt_num
    return num(s["mean"], nd) if s["n"] == 1 else f"{num(s['mean'], nd)} ({num(s['min'], nd)}-{num(s['max'], nd)})"


def steps_text(steps, horizon) -> str:
    """A depth's escape steps over its seeds: "350-450" when every seed escaped, else each, "> N"
    for a seed that did not within its horizon."""
    if steps and all(s is not None for s in steps):
        return f"{min(steps)}" if min(steps) == max(steps) else f"{min(steps)}-{max(steps)}"
    return ", ".join(str(s) if s is not None else f"> {horizon}" for s in steps) or "none judged"


def formulas(runs) -> dict:
    """{wiring id: its formula without the words before it} from the runs: `x + f(layernorm(x))`."""
    out = {}
    for r in runs:
        out.setdefault(r.wiring, r.formula.split(": ", 1)[-1])
    return out


EXACT = "exact fit (residual at rounding level)"


def ssr_text(m: dict, form: str) -> str:
    """A fit's residual as the report says it: "SSR 0.095", or EXACT where growth_fit judged it at
    rounding level (its digits are noise that differs between CPUs' kernels, not a figure)."""
    return EXACT if m.get(f"exact_{form}") else f"SSR {fmt(m[f'ssr_{form}'])}"


def fit_text(f: cv.Fit) -> str:
    """One line: the verdict on the medians, its fits, and their spread over seeds."""
    m = f.median_fit
    steps = "; ".join(f"L={d}: " + (f"{med:g}" if med is not None else f"> {h}") + " (seeds "
                      + ", ".join(str(s) if s is not None else f"> {h}" for s in ss) + ")"
                      for d, _, h, ss, med in f.rows)
    line = f"{f.wiring} ({f.source}): median escape step {steps}; **{m['verdict']}**"
    if m["factor"] is not None:
        line += (f" (exp(b) = {fmt(m['factor'])} per layer, {ssr_text(m, 'exp')}; p = {fmt(m['p'])}, "
                 f"{ssr_text(m, 'poly')})")
    for b in m["bounds"]:
        line += (f"; L={b['depth']} never escaped within {b['horizon']}: exp(b) > {fmt(b['factor_above'])}, "
                 f"p > {fmt(b['p_above'])} from L={b['from']}")
    for d, h in f.not_judged:
        line += f"; L={d} not judged (no seed finished without diverging, up to {h} steps)"
    factors = [s["factor"] for s in f.seed_fits.values() if s["factor"] is not None]
    ps = [s["p"] for s in f.seed_fits.values() if s["p"] is not None]
    verdicts = Counter(s["verdict"] for s in f.seed_fits.values())
    if f.seed_fits:
        line += "; per seed: " + ", ".join(f"{k} {v}" for k, v in verdicts.items())
        if factors:
            line += f", exp(b) {fmt(min(factors))}-{fmt(max(factors))}, p {fmt(min(ps))}-{fmt(max(ps))}"
    return line


# ---- pre- vs post-norm at convergence --------------------------------------------------------


def point_cell(pt) -> list:
    """One line per horizon of a table cell: verdict, counts ("k of n seeds" where seeds are missing),
    final loss mean (min-max), rate."""
    lost = f"; {pt.lost}" if pt.lost else ""
    return [f"{pt.horizon} steps: **{pt.verdict}** ({pt.counts}{lost}); final {loss_range(pt.finals)}; lr {pt.lr:g}"]


def verdict_table(study: cv.Study, source: str):
    """Wiring x depth: each cell a line per horizon (H, and 4H where extended)."""
    pts = [p for p in study.points if p.source == source]
    depths = sorted({p.depth for p in pts})
    names = formulas(study.runs)
    wirings = [w for w in GRID_WIRINGS if any(p.wiring == w for p in pts)]
    wirings += sorted({p.wiring for p in pts} - set(wirings))
    rows = []
    for w in wirings:
        cells = []
        for d in depths:
            here = sorted((p for p in pts if p.wiring == w and p.depth == d), key=lambda p: p.horizon or 0)
            cells.append([line for p in here for line in point_cell(p)] or "-")
        rows.append([f"`{names.get(w, w)}`"] + cells)
    return ["wiring"] + [f"L={d}" for d in depths], rows


def rules_text(rules: dict) -> str:
    """Every threshold the verdicts turn on, read from the rules file."""
    c, e, f = rules["converged"], rules["escaped"], rules["escape_fit"]
    return (f"Rules fixed in `{RULES_FILE}` on {rules['fixed_on']}, before its runs. A run escaped the plateau at its "
            f"first eval at or below its unigram loss - {e['margin']:g}; it converged if its best val loss so far "
            f"improved by less than {c['max_improvement']:g} nats over the last {100 * c['last_fraction']:g} % of its "
            f"horizon, else it is still learning; never escaped and diverged are the others. A point (wiring, depth, "
            f"rate, horizon) takes its seeds' majority, else mixed. The escape step against depth: a form "
            f"(exponential in L, or a power of L) wins when its residual sum of squares in ln(step) is at most "
            f"{f['min_ratio']:g} of the other's. Horizons: synthetic H = {rules['horizon']['measured']['H']} (fixed "
            f"by a pilot) and {rules['extend_factor']}H where a run was extended (the table gives both); text "
            f"{rules['sources']['text']['horizon']} steps.")


def statement_row(row, where) -> list:
    sid, src, text, sv, lv, note = row
    origin = where.get((sid, src))
    short = f"**{sv}**" + (f" ({origin})" if origin else f" (not in this output folder: {NOT_HERE[src]})")
    return [text, src, short, f"**{lv}**", note or "same"]


# ---- the section, the summary rows, findings.json ----------------------------------------------

def section(doc, study: cv.Study, figures: dict):
    """The report's section "Convergence"; `figures`: plot_convergence's {key: (rel path, caption)}."""
    doc.h(2, "Convergence: do deep stacks without a residual escape the plateau?", anchor=ANCHOR)
    if not study.present:
        doc.p(f"The convergence study (issue 36: 10-30x the steps) was not run: `{COMMAND}` runs it.")
        return
    doc.p(rules_text(study.rules) + f" Sweeps: {', '.join(study.sweeps)}.")
    if study.refused:
        doc.p(f"Not judged, their settings differ from the rules' (`{RULES_FILE}` and the sweep files it judges); "
              "their points count them as missing seeds:")
        doc.ul(rules_check.refused_lines(study.refused))
    for src in study.sources:
        doc.h(3, SOURCE_NAMES[src], anchor=f"{ANCHOR}-{src}")
        doc.p("Per wiring and depth, each horizon's verdict, its seeds' outcomes (\"k of n seeds\" where seeds its "
              "sweep planned are not judged: pending, unfinished or not started; see Excluded runs), the final val "
              "loss mean (min-max over the seeds that did not diverge) and the rate:")
        doc.table(*verdict_table(study, src))
        if f"curves_{src}" in figures:
            doc.figure(*figures[f"curves_{src}"])
        fits = [f for (s, _), f in sorted(study.fits.items()) if s == src]
        if fits:
            doc.p("The escape step of the stacks without a residual against depth, each depth at its longest "
                  "horizon (median over seeds, a censored seed counting as never), its fits and their spread "
                  "over seeds:")
            doc.ul([fit_text(f) for f in fits])
            if f"escape_{src}" in figures:
                doc.figure(*figures[f"escape_{src}"])
        pp = study.pp.get(src)
        if pp is not None:
            doc.p(f"Pre- vs post-norm at convergence ({src}): rule P **{pp.p_verdict}** ({pp.p_deciding}); "
                  + "; ".join(f"init {i}: **{v}**" for i, v in pp.lower.items()) + ".")
            doc.ul(pp.lines)
        short = study.short_pp.get(src)
        if short is not None:
            where = study.short_from.get(("P", src)) or study.short_from.get(("post_lower", src)) or "the short map"
            doc.p(f"The same cells at the short horizon ({where}): rule P **{short.p_verdict}**; "
                  + "; ".join(f"init {i}: **{v}**" for i, v in short.lower.items()) + ".")
            doc.ul(short.lines)
    doc.h(3, "Short horizon against long", anchor=SHORT_LONG_ANCHOR)
    n = len(study.reversals)
    doc.p(f"{study.rules['short_vs_long']['text']} Here: {n} of {len(study.rows)} statements reversed"
          + (": " + "; ".join(f"{r[0]} ({r[1]}) {r[5]}" for r in study.reversals) if n else "") + ".")
    doc.table(["statement", "source", "short verdict", "long verdict", "reversal"],
              [statement_row(r, study.short_from) for r in study.rows])


def summary_rows(study: cv.Study) -> list:
    """The summary's rows: each short statement beside its long verdict, a reversal named on its row."""
    rows = []
    for sid, src, text, sv, lv, note in study.rows:
        nums = f"short: {sv}; long: {lv}" + (f"; **{note}**" if note else "")
        rows.append([f"[{sid} long]({'#' + SHORT_LONG_ANCHOR})", f"{text}, at the long horizon ({src})", nums,
                     f"**{lv}**"])
    return rows


def summary_line(study: cv.Study) -> str:
    """One line under the summary: the reversals (none dropped), or that the study was not run."""
    if not study.present:
        return f"[Convergence](#{ANCHOR}): not run (`{COMMAND}` runs it)."
    rev = study.reversals
    refused = (f"; {len(study.refused)} runs not judged (their settings differ from the rules')"
               if study.refused else "")
    return (f"[Convergence](#{ANCHOR}): {len(rev)} of {len(study.rows)} short-horizon statements reversed at the long "
            "horizon" + (": " + "; ".join(f"{r[0]} ({r[1]}): {r[5]}" for r in rev) if rev else "")
            + refused + "; no verdict is dropped.")


def figures(root: str, study: cv.Study, written: list) -> dict:
    """Draws the section's figures (plot_convergence.py) into root/figures/convergence/:
    {key: (rel path, caption)}, key curves_<source> or escape_<source>."""
    from stacklab.plots import convergence as pc  # matplotlib only where figures are drawn
    out = {}
    names = formulas(study.runs)
    for src in study.sources:
        pts = [p for p in study.points if p.source == src]
        seeds = sorted({sd for p in pts for sd, *_ in p.seeds} - {None})
        rel = pc.draw(root, pc.CURVES.format(src), pc.curves_figure(study.runs, src, study.rules), written)
        depths = ", ".join(str(d) for d in sorted({p.depth for p in pts}))
        hs = "/".join(str(h) for h in sorted({p.horizon for p in pts}))
        seeds = "/".join(map(str, seeds))
        if rel:
            out[f"curves_{src}"] = (rel, f"Validation loss over the whole horizon ({src}), log step axis, one panel "
                                    f"per depth (L={depths}), every seed a thin line (seeds {seeds}), "
                                    f"each wiring and depth at its longest horizon ({hs} steps), scaled init; the "
                                    "unigram line and the escape line below it.")
        fits = [f for (s, _), f in sorted(study.fits.items()) if s == src]
        rel = pc.draw(root, pc.ESCAPE.format(src), pc.escape_figure(fits, names), written)
        if rel:
            out[f"escape_{src}"] = (rel, f"Escape step against depth of the stacks without a residual ({src}): each "
                                    "seed (an open triangle at its horizon where it never escaped), the median over "
                                    "seeds (bar), and the exponential and polynomial least-squares fits on the "
                                    "medians where two or more depths escaped; the panel's title is the fit's verdict.")
    return out
