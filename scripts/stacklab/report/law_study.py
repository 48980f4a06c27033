"""The opt-in escape law's text and figure (issue 45), rendered from a judged study (studies/escape/
study.py's Study): per wiring the depth x rate grid (seeds escaped / seeds, the median escape step,
its range; the best rate in bold), each read in words, the rank line, the second knob, the committed
predictions against the deep runs, the second path, the scaled arm, the runs left out; the figure at
each depth's best rate (plots/escape_law.py). And the command line `python3 -m
stacklab.studies.escape.study` (that module's main calls this one's): the tables judged, printed, drawn.

    print(markdown(st))                   # docs/study.md's law section and the report's
    figure(st, "figures/escape_law.png")
Not here: judging (studies/escape/), the law's core's paragraph (law.py).
"""
import argparse
import json
import math
import os
import statistics
import sys

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab.studies.escape import study as es
from stacklab.studies.escape import tables as er
from stacklab.studies.escape.study import DEEP_SWEEP, KNOB_DEPTHS, SECOND_PATH_SWEEP, Study, WiringLaw

FIGURE = "escape_law.png"


def _g(x) -> str:
    return "inf" if x is None or (isinstance(x, float) and math.isinf(x)) else f"{x:.3g}"


def cell_text(seeds) -> str:
    """"5/5 · 750 (700-800)", "0/5 · > 3000", "2/5 · > 3000 (500, 650)", "not run" (no seed)."""
    if not seeds:
        return "not run"
    steps = sorted(s for _, s, _ in seeds if s is not None)
    n, k = len(seeds), len(steps)
    last = max(h for _, _, h in seeds)
    med = statistics.median([s if s is not None else math.inf for _, s, _ in seeds])
    if k == 0:
        return f"0/{n} · > {last}"
    if math.isinf(med):
        return f"{k}/{n} · > {last} ({', '.join(str(s) for s in steps)})"
    spread = f"{steps[0]}" if steps[0] == steps[-1] else f"{steps[0]}-{steps[-1]}"
    return f"{k}/{n} · {med:g} ({spread})"


def grid_table(wl: WiringLaw) -> list:
    """Markdown lines: depth x rate, each cell seeds escaped / seeds and the median escape step (range),
    and where runs the sweeps name are not in the tables how many are ("3 of 5 seeds: pending"), the best
    rate's cell in bold, then the rank and gradient ratios at init."""
    head = ["L"] + [f"lr {r:g}" for r in wl.rates] + ["rank ratio at init", "grad ratio first/last"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    chosen = wl.best.rate if wl.best else {}
    for d in wl.depths:
        row = [str(d)]
        for r in wl.rates:
            c = wl.cells.get((d, r))
            t = cell_text(c) if c else "not run"
            t += f" ({wl.pending[(d, r)]}: pending)" if (d, r) in wl.pending else ""
            row.append(f"**{t}**" if chosen.get(d) == r and c and any(s is not None for _, s, _ in c) else t)
        rank, grad = wl.probe.get(d, (None, None))
        row += [_g(rank) if rank is not None else "not probed", _g(grad) if grad is not None else "not probed"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def pending_text(pending) -> str:
    """"pending (runs missing: L = 4 at 3e-05: 3 of 5 seeds); from the runs in the tables, no verdict: " for
    a read over points whose runs are not all in the tables, else ""."""
    if not pending:
        return ""
    shown = "; ".join(pending[:4]) + (f"; {len(pending) - 4} more points" if len(pending) > 4 else "")
    return f"pending (runs missing: {shown}); from the runs in the tables, no verdict: "


def read_line(name, w: ec.Wiring, pending=()) -> str:
    """One read in words: no fit with its bounds, or the forms, the winner and the predictions; pending (the
    points whose runs are not all in the tables named, the falsifier given no verdict) where `pending`."""
    head = f"{name}: {pending_text(pending)}"
    if w.verdict != "fitted":
        # the strongest of the censored depths' bounds (the nearest depth's: the deeper ones are weaker)
        top = max(w.bounds, key=lambda x: x["factor_above"], default=None)
        b = (f"; from L = {top['from']} to {top['depth']} the median grows at least x{top['factor_above']:.3g} "
             f"a layer (L = {top['depth']}'s median censored at {top['horizon']})" if top else "")
        return f"{head}{w.why}{b}"
    preds = []
    for form, p in w.predictions.items():
        ps = ", ".join(f"L = {d}: {law.step_text(m)} ({law.interval_text(lo, hi)})"
                       for d, (m, lo, hi) in sorted(p.items()) if d in (8, 32, 96))
        preds.append(f"{form}: {ps}")
    dd = ", ".join(f"{f} {d:+.1f}" for f, d in sorted(w.delta_aic.items(), key=lambda x: x[1]))
    fz = f"; falsifier: {w.falsifier.text}" if w.falsifier is not None else ""
    if pending and fz:
        fz = f"; falsifier: {w.falsifier.text.rsplit(': ', 1)[0]}: pending"
    return f"{head}{w.why} (dAIC {dd}); median escape step, 95 % interval: {'; '.join(preds)}{fz}"


def robustness_text(r) -> str:
    """"; refitted without one depth, L = 96: 9.33e+07 (without L = 2) to 3.67e+08 (without L = 1); on 3 escaped
    depths alone: 2.17e+07 (L = 3, 4, 5) to 1.09e+09 (L = 2, 3, 4)" (checks.Robustness), "" without one."""
    if r is None:
        return ""
    parts = []

    def depths(ds):
        return "L = " + ", ".join(f"{d:g}" for d in ds)
    for what, values, name in (("refitted without one depth", r.without, lambda d: f"without L = {d:g}"),
                               ("on 3 escaped depths alone", r.subsets, depths)):
        span = r.span(values)
        if span:
            (lo, klo), (hi, khi) = span
            parts.append(f"{what}: {law.step_text(lo)} ({name(klo)}) to {law.step_text(hi)} ({name(khi)})")
    return f"; how far its {r.form} L = {r.at:g} moves, {'; '.join(parts)}" if parts else ""


def best_rate_scope(wl: WiringLaw, rules) -> str:
    """What the best-rate read rests on, after it (issue 57, section 4): where fitted, its premise (each depth's
    best rate on the grid's half-decade rates, an envelope; the step at which a stack leaves the plateau, not the
    step it learns the task) and its robustness; where not, the read's scope: a best rate at the grid's top
    rate (a faster one was not tried), and the cap the censored depths ran to, decided after stage 0's runs."""
    b = wl.best
    if b.verdict == "fitted":
        return (" (premise: the envelope of the best rates on a grid of half-decade rates, "
                f"{', '.join(f'{r:g}' for r in rules['rates'])}; the step at which a stack leaves the plateau, "
                "not the step it learns the task" + robustness_text(wl.robust) + ")")
    top = max(rules["rates"])
    at_top = [d for d, r in sorted(b.rate.items()) if r == top and d in b.escaped_depths]
    cap = (rules["horizons"].get("decided") or {}).get("cap")
    out = []
    if at_top:
        out.append(f"the best rate at L = {', '.join(map(str, at_top))} is the grid's top rate, {top:g}: a faster "
                   "one was not tried")
    if cap:
        caps = sorted({int(c) for c in cap.values()})
        out.append(f"the censored depths ran to the caps of {' and '.join(map(str, caps))} steps that the rules' "
                   "horizons.decided set after stage 0's runs")
    return f" (scope: {'; '.join(out)})" if out else ""


def markdown(st: Study, rules=None) -> str:
    """The study as markdown for docs/study.md and the report: a header (runs, CPU, commit, steps
    reached per depth), per wiring its grid and reads, the scaled arm, the runs left out. rules: those
    the study was judged by (st.rules, else the rules file's)."""
    rules = rules or st.rules or ec.load_rules()
    reached = ", ".join(f"L = {d}: {s}" for d, s in sorted(st.reached.items()))
    out = [f"{st.runs} runs read ({len(st.excluded)} diverged, left out), on {st.cpu_model or 'a CPU not recorded'}"
           f" (commit {', '.join(st.commits) or 'not recorded'}). Steps reached per depth (the stage run): {reached}."
           f" A cell: seeds escaped / seeds, then the median escape step over seeds (their range); a run escapes at"
           f" the first eval {st.margin:g} nats under its unigram loss; '> N': the median never escaped within N."
           " Bold: the depth's best rate (the rules' reads (1))."
           + (f" {len(st.superseded)} stage-0 runs are read through their longer repeats in {DEEP_SWEEP}"
              " (the rules' horizons.decided.stage_2_decided)." if st.superseded else "")
           + (f" **{st.missing} runs the sweep files name are not in the tables**: the points that lack them say"
              " how many they hold ('3 of 5 seeds: pending'), and every read over them is pending, not a"
              " verdict." if st.missing else "")
           + (f" Not read: {'; '.join(st.absent)}." if st.absent else ""), ""]
    if st.disagree:
        out += ["**Not the same runs**: these longer repeats did not repeat their first run's escape (another "
                "binary or config?): " + "; ".join(st.disagree) + ".", ""]
    for wl in st.wirings:
        out += [f"**`{wl.formula}`**", ""] + grid_table(wl) + [""]

        def rate_text(d, r, wl=wl):
            escaped = any(x is not None for _, x, _ in wl.cells[(d, r)])
            return f"L = {d}: {r:g}" + ("" if escaped else " (none escaped: the tie's lower rate)")
        chosen = ", ".join(rate_text(d, r) for d, r in sorted(wl.best.rate.items()))
        out.append(f"- {read_line('At each depth best rate (' + chosen + ')', wl.best, wl.pending_at())}"
                   f"{best_rate_scope(wl, rules)}.")
        for lr, w in sorted(wl.held.items()):
            out.append(f"- {read_line(f'At lr {lr:g} held across depths', w, wl.pending_at(lr))}.")
        if wl.rank_fit is not None:
            dd = ", ".join(f"{f} {d:+.1f}" for f, d in sorted(wl.rank_delta.items(), key=lambda x: x[1]))
            told = (f"{wl.rank_best} wins" if wl.rank_best else
                    f"not told apart from the depth forms (AIC within {law.DELTA_AIC:g})")
            out.append(f"- Against x = -ln(rank ratio at init), at the best rates: {pending_text(wl.pending_at())}"
                       f"ln step = {wl.rank_fit.theta[0]:.3g} + "
                       f"{wl.rank_fit.theta[1]:.3g} x, sigma {wl.rank_fit.sigma:.3g}; {told} (dAIC: {dd}).")
        elif wl.rank_why:
            out.append(f"- Against x = -ln(rank ratio at init), at the best rates: not made: {wl.rank_why}.")
        if wl.knob:
            out.append(f"- The rules' second knob (attention-only stacks, when fewer than {KNOB_DEPTHS} depths "
                       f"escape within their caps): {wl.knob}: {wl.knob_why}.")
        out.append("")
    for p in st.pooled:
        dd = ", ".join(f"{f} {d:+.1f}" for f, d in sorted(p.delta.items(), key=lambda x: x[1]))
        told = (f"{'the rank line' if p.best == 'linear' else p.best} wins" if p.best else
                f"not told apart (AIC within {law.DELTA_AIC:g})")
        pts = "; ".join(f"{'attention-only' if w.endswith(er.ATTN_ONLY) else 'full'} L = {d}: {r:.3g}"
                        for w, d, r in p.points)
        out += [f"The second knob's read (the rules' second_knob.written.read), "
                f"`{rules['wirings'].get(p.wiring)}` with full and attention-only blocks pooled at their best rates: "
                f"ln step = {p.fit.theta[0]:.3g} + "
                f"{p.fit.theta[1]:.3g} x (x = -ln rank ratio at init), sigma {p.fit.sigma:.3g}, against the depth "
                f"forms with one curve for both stacks: {pending_text(p.pending)}{told} (dAIC: {dd}). Rank ratios at "
                f"init: {pts}.", ""]
    for what, why in st.not_made:
        out += [f"Not made: {what}: {why}.", ""]
    if st.tests:
        out += [f"The predictions committed before {DEEP_SWEEP}'s runs (the rules' horizons.decided."
                "stage_2_decided), against its runs: the median escape step at each depth's best rate among "
                "them; a form is contradicted where that median lies outside its 95 % interval (a median "
                "censored at N lies above N).", "",
                "| wiring | L | best rate | measured | " + " | ".join(st.tests[0].forms) + " |",
                "|---|---|---|---|" + "---|" * len(st.tests[0].forms)]
        for t in st.tests:
            verdict = {True: "contradicted", False: "holds", None: "pending"}
            cells = [f"{_g(m)} ({_g(lo)}-{_g(hi)}): {verdict[bad]}" for (m, lo, hi), bad in t.forms.values()]
            wait = "; ".join(([f"{t.pending - t.missing} runs not yet at the horizon"] if t.pending > t.missing else [])
                             + ([f"pending: {t.missing} runs of {DEEP_SWEEP} not in its table"] if t.missing else []))
            wait = f" ({wait})" if wait else ""
            out.append(f"| {rules['wirings'].get(t.wiring, t.wiring)} | {t.depth} | {t.rate:g} | "
                       f"{cell_text(t.seeds)}{wait} | " + " | ".join(cells) + " |")
        out.append("")
    if st.paths:
        out += [f"On a second numeric path (the rules' second_path, {SECOND_PATH_SWEEP}: OpenBLAS alone, its "
                f"{st.paths[0].kernels} kernels), each depth's best-rate point beside the main path's runs of the "
                "same seeds; the law read again with them in their place. It holds where the same form wins and "
                "each path's median at L = 96 lies in the other's 95 % interval.", "",
                "| wiring | L | lr | main path | second path |", "|---|---|---|---|---|"]
        for c in st.paths:
            for d, lr, main, second, outside in c.points:
                flag = " (outside the main path's range)" if outside else ""
                out.append(f"| {rules['wirings'].get(c.wiring, c.wiring)} | {d} | {lr:g} | "
                           f"{cell_text(main)} | {cell_text(second)}{flag} |")
        out.append("")
        for c in st.paths:
            def at(x):
                return "no fit" if x is None else f"{law.step_text(x[0])} ({law.interval_text(*x[1:])})"
            verdict = {True: "holds", False: "does not hold", None: "not judged (a read is not fitted)"}[c.holds]
            if c.pending:
                verdict = "pending (runs missing: " + "; ".join(c.pending) + ")"
            out.append(f"- `{rules['wirings'].get(c.wiring, c.wiring)}`: main path {c.main_form}, "
                       f"second path {c.second_form}; L = 96: {at(c.main_96)} against "
                       f"{at(c.second_96)}: {verdict}.")
        out.append("")
    if st.scaled:
        out += ["The scaled-init arm beside the normal runs at its points (not fitted); a normal-init cell read from "
                "runs longer than the arm's says to how many steps they ran:", "",
                "| wiring | L | lr | normal init | scaled init |", "|---|---|---|---|---|"]
        n = len(rules["seeds"]["runs"])
        for w, d, lr, normal, scaled in st.scaled:
            short = f" ({len(scaled)} of {n} seeds: pending)" if len(scaled) < n else ""
            ran, arm = max((h for _, _, h in normal), default=0), max((h for _, _, h in scaled), default=0)
            longer = f" (its runs reached step {ran}; the arm's stop at {arm})" if ran > arm else ""
            out.append(f"| {rules['wirings'].get(w, w)} | {d} | {lr:g} | "
                       f"{cell_text(normal)}{longer} | {cell_text(scaled)}{short} |")
        out.append("")
    if st.excluded:
        out += ["Left out: " + "; ".join(f"{r} ({why})" for r, why in st.excluded) + ".", ""]
    return "\n".join(out)


def figure(st: Study, path: str, predict_at: float = 96) -> str:
    """Escape step against depth per wiring at each depth's best rate, arrows for censored runs, the
    law's line and band up to `predict_at` and its prediction there, where the read was fitted (a
    provisional fit is drawn to L = 8 only, so that its line does not set the axis)."""
    from stacklab.plots.escape_law import plot_escape_law
    series = {}
    for wl in st.wirings:
        if wl.wiring.endswith(er.ATTN_ONLY):  # the second knob's stacks: in the text, not the law's figure
            continue
        b = wl.best
        form = b.best or (min(b.fits, key=lambda f: b.fits[f].aic) if b.fits else None)
        series[f"{wl.formula}, best rate"] = (b.obs, b.fits.get(form) if form else None, b.predictions.get(form, {}))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return plot_escape_law(series, path, predict_at=predict_at, band=True,
                           title="Escape step against depth, no residual, each depth at its best rate")


def main(argv=None) -> int:
    """`python3 -m stacklab.studies.escape.study`: write the probe tables asked for, judge the tables
    (escape_study.from_tables), print the text, draw the figure, write the JSON; exit 0 when every read is
    made, 3 when not (runs missing, a table absent), 2 on a table or folder it cannot read."""
    ap = argparse.ArgumentParser(prog="python3 -m stacklab.studies.escape.study",
                                 description=es.__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="docs/results", help="the folder of the results tables (default: %(default)s)")
    ap.add_argument("--write-probe", metavar="PROBE_DIR", action="append", default=[],
                    help="first write RESULTS/<folder name>.csv from a probe sweep's folder (escape_law_probe, "
                         "escape_law_attn_probe); repeatable")
    ap.add_argument("--figure", help="draw the figure into this PNG")
    ap.add_argument("--predict-at", type=float, default=96, metavar="L",
                    help="draw the fitted law up to depth L and its prediction there (default: %(default)g)")
    ap.add_argument("--json", help="write the judgement as JSON to this file")
    a = ap.parse_args(argv)
    try:
        for probe_dir in a.write_probe:
            out = os.path.join(a.results, os.path.basename(os.path.normpath(probe_dir)) + ".csv")
            n = es.write_probe_table(probe_dir, out)
            print(f"escape_study: {n} probes -> {out}", file=sys.stderr)
        st = es.from_tables(a.results)
    except (OSError, ValueError) as e:
        print(f"escape_study: {e}", file=sys.stderr)
        return 2
    print(markdown(st))
    if a.figure:
        figure(st, a.figure, a.predict_at)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(es.study_json(st), f, indent=1)
    if not st.complete:
        print("escape_study: not every read is made: runs missing (pending) or a table absent (not made); "
              "exit 3", file=sys.stderr)
        return 3
    return 0
