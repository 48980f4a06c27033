"""Writes the deep-stacking report: the front page (report_front.py: the headline figure, final val
loss against depth per wiring at the short and the long horizon, and one generated paragraph answering
the question), findings computed from the sweeps' data, each marked seen or
not seen against a criterion stated in the report, the claims of configs/experiments/claims.json
with their verdicts and the stability map (report_sections.py: the summary that opens the report,
a section per finding with its figure, every number folded), the tables (final loss, learning
rates, escape time, extras), the convergence study (report_convergence.py), the numeric path, and
every figure with a caption.

    /usr/bin/python3 scripts/report.py runs/deep_stacking [--out report.md]

Reads <dir>/<sweep>/manifest.json (probe_grid, the training sweeps train_grid and lr_grid, extras*, converge_*),
the runs they list (via runlog.py), <dir>/stability_map/ when present (stability_map.py),
<dir>/figures/**.png and <dir>/timing.jsonl (written by reproduce.sh). Training points are
(wiring, depth, learning rate), pooled over the training sweeps, seeds aggregated within a point
(study_stats.py: mean, min-max, 95% t-interval; a finding is seen when it holds for every seed or
the interval clears it). Writes <dir>/report.md, <dir>/report.html
(self-contained: report_doc.py) and <dir>/findings.json. Runs that diverged, failed or are
incomplete, and pending ones (runlog.Run.pending: a copy an extension sweep has not continued, a run
without config.json), are left out of every number and listed. No number in the report is typed in: each
comes from the data of this run. It draws the figures of its own front page and convergence section
(plot_convergence.py) into <dir>/figures/front/ and <dir>/figures/convergence/; the other figures are
plot_compare.py's. Not here: running anything (reproduce.sh), the per-sweep figures (plot_compare.py).
"""
import argparse
import glob
import json
import os
import sys
from collections import defaultdict

from . import judge, report_doc, report_front, runlog, stability_map, views
from . import report_convergence as convergence
from . import report_sections as sections
from . import study_text
from .report_runinfo import numeric_path_lines, timing_lines
from .tier import CLAIMS_SWEEPS, CONVERGE_SWEEPS, TEXT_SWEEPS
from . import study_stats as stats
from .study_findings import GRID_WIRINGS, fmt, fmt_escape, seed_list

# The figures whose per-block values are read at one step (their captions say which).
PER_BLOCK_FIGURES = ("grad_norm_by_block.png", "grad_ratio_vs_depth.png", "rank_vs_layer.png",
                     "last_grad_vs_depth.png", "layer_metrics_vs_depth.png")


# ---- loading ---------------------------------------------------------------------------------

class Sweep:
    """One sweep dir: its manifest, the runs it lists, and which of them are usable."""

    def __init__(self, root, name):
        self.name, self.dir = name, os.path.join(root, name)
        self.manifest, entries = runlog.sweep_entries(self.dir)
        self.mode = self.manifest.get("mode")
        self.runs, self.excluded = [], []   # usable Runs; (id, reason)
        self.excluded_runs = {}              # id -> the excluded Run, where its dir exists
        for e in entries:
            rid, path = e.id, e.path
            if self.mode == "probe":
                if not os.path.isfile(path):
                    self.excluded.append((rid, f"no probe.json (sweep status: {e.status})"))
                    continue
                run = runlog.load_probe(path)
                if not run.records["layers"][0].get("grad_norm"):
                    self.excluded.append((rid, "probe.json without gradient norms"))
                    continue
            else:
                if not os.path.isdir(path):
                    self.excluded.append((rid, f"never started (sweep status: {e.status})"))
                    continue
                run = runlog.load_entry(e)
                # A pending run (a copy not yet extended, one without config.json) is in no number and
                # not among the excluded runs that the convergence rules count as unjudged seeds: its
                # config's horizon is not its sweep's, so it would stand in another point.
                if run.status == "pending":
                    self.excluded.append((rid, runlog.status_mark(run).strip(" []")))
                    continue
                # Diverged means what the run's summary.json says (runlog.is_diverged), whatever
                # its last loss: no number here is judged by its size.
                if not runlog.is_completed(run) or run.final_val_loss is None:
                    mark = runlog.status_mark(run).strip(" []") or run.status
                    self.excluded.append((rid, mark if not runlog.is_completed(run)
                                          else "completed without a final val loss"))
                    self.excluded_runs[rid] = run
                    continue
            run.sweep_id, run.sweep_name = rid, name
            self.runs.append(run)

    @property
    def present(self):
        return bool(self.manifest)

    def by(self, wiring, depth=None):
        return [r for r in self.runs if r.wiring == wiring and (depth is None or r.n_layer == depth)]


# ---- tables ----------------------------------------------------------------------------------

def loss_cell(tr, w, d, lr, best=False):
    """One table cell: the seed summary of the point's completed runs and, when seeds were left out,
    how many of how many and why ("n=2; 1 of 3 seeds excluded: s1 diverged at step 40")."""
    s = stats.summarize_loss(tr.finals(w, d, lr))
    ex = tr.excluded_at(w, d, lr)
    why = "; ".join(f"{rid.rsplit('-', 1)[-1]} {reason}" for rid, reason in ex)
    if not s["n"]:
        return f"excluded: {len(ex)} of {len(ex)} seeds ({why})" if ex else "-"
    text = ("**best** " if best else "") + stats.fmt_summary(s, 4)
    return text + (f"; {len(ex)} of {s['n'] + len(ex)} seeds excluded: {why}" if ex else "")


def loss_table(tr):
    """Final val loss at the reference rate (the one every depth has): wiring x depth."""
    lr = tr.ref_lr
    depths = sorted(set(tr.depths) | set(tr.planned_depths()))
    rows = []
    for w in GRID_WIRINGS:
        formula = next((r.formula for r in tr.runs if r.wiring == w), "")
        cells = [loss_cell(tr, w, d, lr) for d in depths]
        rows.append([f"`{w}`", f"`{formula.split(': ', 1)[-1]}`"] + cells)
    return ["wiring", "formula"] + [f"L={d}" for d in depths], rows


def lr_table(tr):
    rows = []
    for w in GRID_WIRINGS:
        for d in tr.depths:
            rates = stats.rates_at(tr.pts, w, d)
            if not rates and not tr.excluded_at(w, d):
                continue
            best = tr.best(w, d)
            cells = [loss_cell(tr, w, d, lr, best=lr == best and len(rates) > 1)
                     if lr in rates or tr.excluded_at(w, d, lr) else "-" for lr in tr.rates]
            rows.append([f"`{w}`", str(d)] + cells)
    return ["wiring", "L"] + [f"lr {lr:g}" for lr in tr.rates], rows


def escape_md_table(tr, esc):
    lr = tr.ref_lr
    depths = tr.depths
    by = {(e["wiring"], e["depth"]): e for e in esc if e["learning_rate"] == lr}
    rows = [[f"`{w}`"] + [fmt_escape(by[(w, d)]) if (w, d) in by else "-" for d in depths]
            for w in GRID_WIRINGS if any((w, d) in by for d in depths)]
    return ["wiring"] + [f"L={d}" for d in depths], rows


def extras_table(sweeps):
    rows = []
    for s in sweeps:
        groups = defaultdict(list)
        for r in s.runs:
            groups[r.sweep_id.rsplit("-s", 1)[0]].append(r)
        for pid, runs in sorted(groups.items()):
            uni = runs[0].reference_losses.get("unigram")
            fin = stats.summarize_loss([r.final_val_loss for r in runs])
            gap = stats.summarize([r.final_val_loss - uni for r in runs]) if uni is not None else None
            rows.append([s.name, f"`{pid}`", f"`{runs[0].formula}`", f"{seed_list(runs)}",
                         stats.fmt_summary(fin, 4), stats.fmt_summary(gap, 3) if gap else "n/a"])
        for rid, why in s.excluded:
            rows.append([s.name, f"`{rid}`", "", "", f"excluded: {why}", ""])
    return ["sweep", "point", "formula", "seeds", "final val loss", "minus unigram"], rows


# ---- figures and their captions --------------------------------------------------------------

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


def seeds_per_point(tr):
    """How many seeds the training points hold, in words: "3 seeds per point" when all agree, and when
    excluded runs (diverged, failed) left points short, which: "3 seeds per point, but 1 point holds
    fewer after [excluded runs](#excluded): none-res L=8 lr 0.01 holds 1". A point whose every seed
    was excluded holds 0."""
    counts = {pt: len(v) for pt, v in tr.pts.items()}
    for s, rid, _ in tr.excluded:
        run = getattr(s, "excluded_runs", {}).get(rid)
        if run is not None and run.config:
            counts.setdefault((run.wiring, run.n_layer, stats.learning_rate(run)), 0)
    top = max(counts.values(), default=0)
    short = sorted((pt for pt, n in counts.items() if n < top), key=lambda p: (p[0], p[1] or 0, p[2] or 0))
    text = f"{top} seed{'s' if top != 1 else ''} per point"
    if not short:
        return text
    named = ", ".join(f"{w} L={d}{f' lr {lr:g}' if lr is not None else ''} holds {counts[(w, d, lr)]}"
                      for w, d, lr in short[:4])
    more = f" and {len(short) - 4} more" if len(short) > 4 else ""
    return (f"{text}, but {len(short)} point{'s' if len(short) != 1 else ''} hold{'' if len(short) != 1 else 's'} "
            f"fewer after [excluded runs](#excluded): {named}{more}")


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
                        else "the study on real text" if group in TEXT_SWEEPS + ("text_point",)
                        else "rule P (pre- vs post-norm)" if group == "map_core"
                        else "the extras (not used by a finding)")
    return f"**{rel}**: {what}. Data: {data}. Supports: {supports}."


# ---- the document ----------------------------------------------------------------------------

def opening(doc, res, written):
    """Title, the headline figure and the paragraph answering the question (report_front.py), one line
    of what was run, the summary, a section per finding, the claims, the map, rule P, the study on real
    text, the convergence study, from the judged study (judge.Result). Returns the figures shown beside
    their text (the Figures section lists the others)."""
    root, probe, tr, sweeps, text, conv = res.root, res.probe, res.tr, res.sweeps, res.text, res.conv
    map_lines = stability_map.map_text(res.map)
    doc.h(1, "Why deep stacks need residuals and norms: measured")
    shown = [report_front.front(doc, root, tr, text, conv, written)]
    doc.p(f"{res.tier[0].upper() + res.tier[1:]} tier: {len(tr.runs)} completed training runs, "
          f"{seeds_per_point(tr)}; {len(probe.runs)} probe points"
          + (f"; data: order-2 Markov, unigram loss {fmt(tr.unigram, 4)} nats/token" if tr.unigram is not None else "")
          + ". Every number is computed from this run's data ([how](#method)); each row links to its section, "
          "whose full numbers are folded under it.")
    sections.summary(doc, res.findings, res.claims, map_lines,
                     extra=study_text.summary_extra(text) + convergence.summary_rows(conv))
    doc.p(convergence.summary_line(conv))
    for f in res.findings:
        rel = sections.finding_figure(root, f["id"], probe.name)
        sections.finding_section(doc, f, rel, figure_caption(rel, probe, tr, sweeps) if rel else "")
        shown += [rel] if rel else []
    sections.claims_section(doc, res.claims, res.claims_where)
    rel = sections.map_figure_rel()
    sections.map_section(doc, root, res.map, map_lines, figure_caption(rel, probe, tr, sweeps))
    if not res.map.empty and os.path.isfile(os.path.join(root, rel)):
        shown.append(rel)
    sections.pre_post_section(doc, [text.p_syn, text.p_text], study_text.load_rules()["pre_post"])
    study_text.text_section(doc, syn_findings=res.findings, text_findings=text.findings, crit=text.crit,
                            syn_tr=tr, text_tr=text.tr, point_runs=text.point_runs, syn_map=res.map,
                            text_map=text.map, p_syn=text.p_syn, p_text=text.p_text)
    figs = convergence.figures(root, conv, written) if conv.present else {}
    convergence.section(doc, conv, figs)
    return [r for r in shown if r] + [rel for rel, _ in figs.values()]


def tables(doc, res):
    """The tables of numbers behind findings 3 and 5, the extras, the excluded runs."""
    tr, esc, extras = res.tr, res.escape, res.extras
    steps = sorted({r.summary.get("steps") for r in tr.runs if r.summary})
    seeds = sorted({stats.seed_of(r) for r in tr.runs} - {None})
    doc.h(2, f"Final validation loss of the training grid (lr {tr.ref_lr:g}, {'/'.join(map(str, steps)) or '?'} "
             f"steps, seeds {'/'.join(map(str, seeds)) or '?'}; mean (min-max, 95% CI, n))" if tr.ref_lr is not None
          else "Final validation loss of the training grid (no completed run)", anchor="final-loss")
    doc.table(*loss_table(tr))
    doc.h(2, "Learning rates: final validation loss per wiring, depth and rate", anchor="learning-rates")
    doc.p("Mean (min-max, 95% CI clipped at 0, n) over the completed seeds, with the excluded ones counted; "
          "**best** marks the rate finding 3 uses at that depth (lowest "
          "mean); at a depth with one rate, that rate.")
    doc.fold("The table: every wiring, depth and rate")
    doc.table(*lr_table(tr))
    doc.unfold()
    doc.h(2, "Escape time", anchor="escape")
    doc.p(f"Per run, the first eval step whose val loss is <= unigram - {stats.ESCAPE_MARGIN} "
          f"({fmt(tr.unigram - stats.ESCAPE_MARGIN if tr.unigram is not None else None, 4)}); \"> S\": never, up to "
          f"its last eval step S. Per wiring and depth at lr {tr.ref_lr if tr.ref_lr is not None else '?'}: "
          "the median over seeds and every seed's step (findings.json has every rate).")
    doc.fold("The table: every wiring and depth")
    doc.table(*escape_md_table(tr, esc))
    doc.unfold()
    if extras:
        doc.h(2, "Extras", anchor="extras")
        doc.p("Not used by a finding; every seed that exists is shown (n stated).")
        doc.fold("The table: every point of the extra sweeps")
        doc.table(*extras_table(extras))
        doc.unfold()
    doc.h(2, "Excluded runs", anchor="excluded")
    doc.ul([f"{n}/{rid}: {why}" for n, rid, why in res.excluded] or ["none: every run completed"])


def view_links(doc, root):
    """A link to every HTML view the plotting step wrote (figures/**/view.html, views.py): a sweep's
    (every run of it, picked side by side) and each plotted run's."""
    found = sorted(glob.glob(os.path.join(root, "figures", "**", views.VIEW_NAME), recursive=True))
    doc.h(2, "Views to explore", anchor="views")
    doc.p("Interactive HTML pages beside the figures (they open from disk, no network): hover for block, step "
          "and value, drag to zoom; a sweep's view picks runs to set side by side." if found else
          "(no views under figures/: plotly missing when the figures were made? apt-get install python3-plotly)")
    doc.ul([f"[{os.path.dirname(os.path.relpath(v, root))}]({os.path.relpath(v, root)})" for v in found])


def closing(doc, res, shown):
    """How the numbers are made, the figures not shown beside a section, how the study was run."""
    root, probe, tr, sweeps, stages = res.root, res.probe, res.tr, res.sweeps, res.stages
    training = tr.sweeps
    doc.h(2, "How the numbers are made", anchor="method")
    doc.p("Every number in this report is computed by `scripts/report.py` from this run's data. A number over seeds "
          "is the mean (min-max, 95% t-interval of the mean, n seeds); a loss is >= 0, so an interval that would "
          "reach below 0 (few seeds, one far off) is clipped at 0 and the cell says \"clipped at 0\". A finding is "
          "seen when its criterion holds for every "
          "seed (\"k of n seeds\") or the interval clears it (said so). Training points are (wiring, depth, learning "
          f"rate) pooled over {', '.join(s.name for s in training)}, {seeds_per_point(tr)}; "
          f"probes are seed means over {max((r.probe_seeds for r in probe.runs), default=0)} probe seeds. Excluded "
          "runs (diverged, failed, incomplete, and pending: a copy an extension sweep has not continued yet, a run "
          "without config.json) are in no number; they are listed under Excluded runs, and a table "
          "cell that lost seeds says how many of how many it holds. A run is diverged when its summary.json says "
          "status \"diverged\" (the trainer's rule: a non-finite loss, or one above 10 x ln(vocab size)); nothing "
          "here judges a loss by its size.")
    figs = sorted(glob.glob(os.path.join(root, "figures", "**", "*.png"), recursive=True))
    doc.h(2, "Figures", anchor="figures")
    rest = [f for f in figs if os.path.relpath(f, root) not in shown]
    doc.p(f"{len(figs)} figures; {len(figs) - len(rest)} are shown beside their section above, the others here."
          if figs else "(no figures under figures/)")
    for fpath in rest:
        rel = os.path.relpath(fpath, root)
        doc.figure(rel, figure_caption(rel, probe, tr, sweeps))
    view_links(doc, root)
    doc.h(2, "How this was run", anchor="run")
    doc.ul(timing_lines(stages, list(sweeps.values())))
    if tr.refs:
        doc.p(f"Data: order-2 Markov, reference losses (nats/token): uniform {fmt(tr.refs.get('uniform'), 4)}, "
              f"unigram {fmt(tr.unigram, 4)}, optimal {fmt(tr.refs.get('optimal'), 4)}.")
    doc.h(2, "Numeric path", anchor="numeric-path")
    doc.ul(numeric_path_lines(stages, [r for s in sweeps.values() for r in s.runs if not r.is_probe]))


# ---- main ------------------------------------------------------------------------------------

def write_report(root, sweeps, out=None):
    """Judges the sweeps (name -> Sweep, or anything with its fields: judge.judge), draws the report's own
    figures (the front page's, the convergence section's) into root/figures/, and writes report.md,
    report.html and findings.json beside `out` (default root/report.md). Returns (md path, html path,
    findings.json's dict). Raises ValueError naming what is missing when there is no probe sweep or no
    train_grid."""
    res = judge.judge(root, sweeps)
    doc, written = report_doc.Doc(), []
    shown = opening(doc, res, written)
    tables(doc, res)
    closing(doc, res, shown)
    out = out or os.path.join(root, "report.md")
    out_dir = os.path.dirname(os.path.abspath(out))
    with open(out, "w", encoding="utf-8") as fh:
        fh.write(doc.markdown())
    html_path = os.path.splitext(out)[0] + ".html"
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(doc.html(root, "stacklab: deep-stacking report"))
    fj = judge.findings_json(res)
    with open(os.path.join(out_dir, "findings.json"), "w", encoding="utf-8") as fh:
        json.dump(fj, fh, indent=1)
    for line in verdict_lines(res):
        print(line)
    return out, html_path, fj


def verdict_lines(res):
    """One line per verdict, printed after the report is written."""
    out = [f"finding {f['id']}: {'seen' if f['seen'] else 'NOT seen'}" for f in res.findings]
    out += [f"finding {f['id']} on text: {'seen' if f['seen'] else 'NOT seen'}" for f in res.text.findings]
    out += [f"rule {v.id}: {v.verdict}" for v in (res.text.crit, res.text.p_syn, res.text.p_text)]
    out += [f"claim {c.id}: {c.verdict}" for c in res.claims]
    return out + [convergence.summary_line(res.conv)]


def main(argv=None):
    p = argparse.ArgumentParser(description="Write the deep-stacking report from the sweeps' data.")
    p.add_argument("root", help="the study dir, e.g. runs/deep_stacking")
    p.add_argument("--out", help="report path (default ROOT/report.md; report.html and findings.json beside it)")
    args = p.parse_args(argv)
    root = args.root
    if not os.path.isdir(root):
        print(f"report.py: {root}: no such directory", file=sys.stderr)
        return 1
    names = sorted(d for d in os.listdir(root) if runlog.is_sweep_dir(os.path.join(root, d)))
    try:
        md, html_path, _ = write_report(root, {n: Sweep(root, n) for n in names}, args.out)
    except ValueError as e:
        print(f"report.py: {e}", file=sys.stderr)
        return 1
    print(md)
    print(html_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
