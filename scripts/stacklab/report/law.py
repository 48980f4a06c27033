"""The report's escape-law core, on its first screen under the headline: the figure (escape step
against depth per wiring without a residual, plot_escape_law.py; the law's line and band where it was
fitted) and one paragraph with the numbers: per wiring and depth the median escape step over seeds
and their range, the runs that never escaped, the read (a form, or "no law read" under the rules'
3 depths), the CPU they ran on (timing.jsonl) and their wall times added up. Not run: one line
saying what runs it. Used by page.py. Not here: the reading and the fit (escape_core.py), the
results table (escape_results.py, written by report/__init__.py).
"""
import os

from stacklab.studies.escape import default_tier as ec
from stacklab.studies import rules_check
from stacklab.plots.escape_law import plot_escape_law

FIGURE = os.path.join("figures", "escape_law", "escape_law_core.png")
COMMAND = "bash scripts/reproduce.sh"


def depth_text(w, d, horizon) -> str:
    """"L=2: 600 (seeds 550-700)", "L=3: never within 3000 (3 of 3 seeds)", "L=2: 650 (seeds 600, > 3000)";
    the seeds of the depth its read left out counted and named: "L=3: never within 3000 (1 of 2 seeds; seed 31
    left out: diverged)", "L=3: no seed judged (seeds 30, 31 left out: diverged)"."""
    ss, off = w.seeds.get(d, []), sorted(w.left_out.get(d, []), key=lambda x: (x[0] is None, x[0] or 0))
    steps = [s for _, s, _ in ss]
    why = {}
    for seed, reason in off:
        why.setdefault(reason, []).append(str(seed))
    left = "; ".join(f"seed{'s' * (len(seeds) > 1)} {', '.join(seeds)} left out: {reason}"
                     for reason, seeds in why.items())
    if not ss:
        return f"L={d}: no seed judged ({left})"
    last = max((h for _, _, h in ss if h is not None), default=horizon)
    med, _ = w.median(d)
    if all(s is None for s in steps):
        return f"L={d}: never within {last} ({len(steps)} of {len(steps) + len(off)} seeds" + (
            f"; {left})" if off else ")")
    if all(s is not None for s in steps):
        spread = f"{min(steps)}" if min(steps) == max(steps) else f"{min(steps)}-{max(steps)}"
    else:
        spread = ", ".join(str(s) if s is not None else f"> {h}" for _, s, h in ss)
    head = f"{med:g}" if med is not None else f"> {last} (median)"
    counted = f"; {len(steps)} of {len(steps) + len(off)} seeds, {left})" if off else ")"
    return f"L={d}: {head} (seeds {spread}{counted}"


def read_text(w) -> str:
    """The law's read in words: "fewer than 3 depths escaped (...): no law read" with the censored
    depths' lower bounds on the growth, or the form, its prediction at L = 8 and the falsifier's verdict."""
    if w.verdict != "fitted":
        return w.why + "".join(f"; from L={b['from']} to L={b['depth']} the median grows at least "
                               f"x{b['factor_above']:.3g} (L={b['depth']} censored at {b['horizon']})"
                               for b in w.bounds)
    form = w.best or min(w.fits, key=lambda f: w.fits[f].aic)
    m, lo, hi = w.predictions[form].get(8, (None, None, None))
    pred = (f"; its median escape step at L = 8: {ec.law.step_text(m)} (95 % {ec.law.interval_text(lo, hi)})"
            if m is not None else "")
    fz = w.falsifier
    return (f"{w.why}{pred}; falsifier at L = {fz.depth:g} / {fz.horizon:g} steps: "
            f"{'FALSIFIED' if fz.fires else 'not falsified'}" if fz is not None else w.why + pred)


def cpu_of(stages) -> str:
    start = next((s for s in reversed(stages) if s.get("stage") == "start"), {})
    return start.get("cpu_model") or "a CPU not recorded in timing.jsonl"


def paragraph(core, stages) -> str:
    """The one paragraph under the law's figure."""
    if not core.present:
        return (f"**The escape law's core** ({ec.SWEEP}: stacks without a residual at L = 1-3, 3 seeds, "
                f"stopped at their escape): not run in this folder; `{COMMAND}` runs it (the default tier).")
    parts = [f"`{w.formula}` at lr {w.rate:g}: "
             + "; ".join(depth_text(w, d, core.horizon) for d in sorted(set(w.seeds) | set(w.left_out)))
             + f"; {read_text(w)}" for w in core.wirings]
    took = (f" (their wall times add up to {core.run_seconds / 60:.1f} minutes)"
            if core.run_seconds is not None else "")
    lost = f"; {len(core.excluded)} run(s) excluded (below)" if core.excluded else ""
    if core.refused:
        lost += (f"; {len(core.refused)} run(s) not judged, their settings differ from the rules' ("
                 + "; ".join(rules_check.refused_lines(core.refused)) + ")")
    return (f"**The escape law's core**: the step at which a stack without a residual first gets "
            f"{core.margin:g} nats below its unigram loss, per depth the median over seeds (their range), "
            f"up to {core.horizon} steps. " + ". ".join(parts)
            + f". {core.runs} runs on {cpu_of(stages)}{took}{lost}; rules `{ec.RULES_FILE}`. The whole law "
            "(L = 1-6 and 8, five rates, five seeds, staged to 48000 steps) is opt-in (docs/study.md).")


def figure(root, core, written):
    """Draws the core's figure into root/FIGURE (the runs per wiring, the law where fitted, its
    prediction at L = 8 from the judged intervals); returns FIGURE, or None when not run."""
    if not core.present or not any(w.obs for w in core.wirings):
        return None
    series = {}
    for w in core.wirings:
        form = w.best or (min(w.fits, key=lambda f: w.fits[f].aic) if w.fits else None)
        series[f"{w.formula}, lr {w.rate:g}"] = (w.obs, w.fits.get(form) if form else None,
                                                 w.predictions.get(form, {}))
    path = os.path.join(root, FIGURE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    plot_escape_law(series, path, predict_at=8, band=True,
                    title="The escape law's core: escape step against depth, no residual (arrow: never escaped)")
    written.append(path)
    return FIGURE


def caption(core) -> str:
    return (f"Escape step against depth for the stacks without a residual ({ec.SWEEP}): each run a point at "
            "the eval step where its val loss first fell 0.1 nats below its unigram loss, a run that never did "
            f"an arrow at its last eval (up to {core.horizon} steps); the law's line and 95 % band where 3 depths "
            "escaped.")
