"""Writes the deep-stacking report: loads an output folder's sweeps (Sweep), judges them once
(judge.judge: one typed result) and renders that result section by section (page.SECTIONS): the
front page (front.py: the headline figure, final val loss against depth per wiring at the short and
the long horizon, and one generated paragraph answering the question), the summary and a section per
finding (sections.py), the claims of configs/experiments/claims.json with their verdicts, the
stability map (map.py), rule P, the study on real text (text.py), the convergence study
(convergence.py), the escape law's core (law.py) and its opt-in study (law_study.py), the
residual-or-signal study (signal.py), the tables (tables.py: final loss, learning
rates, escape time, extras), the numeric path, and every figure with a caption (figures.py).
findings.json is the result serialised (judge.findings_json).

    /usr/bin/python3 scripts/report.py runs/deep_stacking [--out report.md]

Reads <dir>/<sweep>/manifest.json (probe_grid, the training sweeps train_grid and lr_grid, extras*, converge_*,
signal_*: signal_study.py reads those from <dir> itself),
the runs they list (via runlog.py), <dir>/stability_map/ when present (stability_map.py),
<dir>/figures/**.png and <dir>/timing.jsonl (written by reproduce.sh). Training points are
(wiring, depth, learning rate), pooled over the training sweeps, seeds aggregated within a point
(study_stats.py: mean, min-max, 95% t-interval; a finding is seen when it holds for every seed or
the interval clears it). Writes <dir>/report.md, <dir>/report.html
(self-contained: report/doc.py) and <dir>/findings.json. Runs that diverged, failed or are
incomplete, and pending ones (runlog.Run.pending: a copy an extension sweep has not continued, a run
without config.json), are left out of every number and listed. No number in the report is typed in: each
comes from the data of this run. It draws the figures of its own front page and convergence section
(plot_convergence.py) into <dir>/figures/front/ and <dir>/figures/convergence/, and the escape law's core's
(report/law.py) into <dir>/figures/escape_law/; the other figures are plot_compare.py's. For each escape-law
sweep it holds (escape_law_core, escape_law_*) it writes the results table <dir>/results/<sweep>.csv
(escape_results.write_results_csv: one line per finished run); `--results-to docs/results` copies those
tables into the repository's docs/results/ (refused for a --tiny study).
Not here: running anything (reproduce.sh), the per-sweep figures (plot_compare.py).
"""
import argparse
import json
import os
import shutil
import sys

from stacklab.studies.escape import tables as escape_results, study as escape_study
from stacklab.studies import judge
from stacklab.runs import runlog
from . import page
from .convergence import summary_line
from .signal import verdict as signal_verdict


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


# ---- main ------------------------------------------------------------------------------------

def write_report(root, sweeps, out=None):
    """Judges the sweeps (name -> Sweep, or anything with its fields: judge.judge), draws the report's own
    figures (the front page's, the convergence section's) into root/figures/, and writes report.md,
    report.html and findings.json beside `out` (default root/report.md). Returns (md path, html path,
    findings.json's dict). Raises ValueError naming what is missing when there is no probe sweep or no
    train_grid."""
    res = judge.judge(root, sweeps)
    doc = page.render(res).doc
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
    write_results(root, sweeps)
    for line in verdict_lines(res):
        print(line)
    return out, html_path, fj


RESULTS = "results"  # root/results/<sweep>.csv


def law_sweeps(sweeps) -> list:
    """The escape-law sweeps among `sweeps` (names): escape_law_core and the opt-in escape_law_* ones."""
    return sorted(n for n in sweeps if n.startswith("escape_law"))


def write_results(root, sweeps) -> list:
    """root/results/<sweep>.csv for each escape-law sweep present (escape_results.write_results_csv, the
    CPU and commit from root/timing.jsonl); returns the paths written."""
    out = []
    for name in law_sweeps(sweeps):
        sweep_dir = os.path.join(root, name)
        if os.path.isfile(os.path.join(sweep_dir, "manifest.json")):
            path = os.path.join(root, RESULTS, name + ".csv")
            if name in escape_study.PROBE_SWEEPS:  # probes: the ratios at init, one line per probe
                if not escape_study.probe_rows(sweep_dir):
                    runlog.warn(f"{sweep_dir}: no probe.json yet (a probe sweep not run to its end): no {path}")
                    continue
                escape_study.write_probe_table(sweep_dir, path, root=root)
            else:
                escape_results.write_results_csv(sweep_dir, path, root=root)
            out.append(path)
    return out


def copy_results(root, dest) -> list:
    """Copies root/results/*.csv into dest (e.g. docs/results), replacing the files of the same name;
    a study made with --tiny is refused (its scaled-down runs would replace the measured table).
    Returns the paths written; raises ValueError naming the reason. Every table is read first as its reader
    reads it (escape_results.read_results_csv, escape_study.read_probe_table): one that is not whole (a torn
    write, a broken row) stops the copy before any file is replaced."""
    src = os.path.join(root, RESULTS)
    tables = sorted(f for f in os.listdir(src) if f.endswith(".csv")) if os.path.isdir(src) else []
    if not tables:
        raise ValueError(f"{src}: no results tables to copy (no escape-law sweep in {root}?)")
    if any(s.get("stage") == "start" and s.get("tiny") for s in judge.read_timing(root)):
        raise ValueError(f"{root}: a --tiny study (timing.jsonl): its tables would replace measured ones; not copied")
    for f in tables:
        if f[:-len(".csv")] in escape_study.PROBE_SWEEPS:
            escape_study.read_probe_table(os.path.join(src, f))
        else:
            escape_results.read_results_csv(os.path.join(src, f))
    os.makedirs(dest, exist_ok=True)
    out = []
    for f in tables:
        shutil.copyfile(os.path.join(src, f), os.path.join(dest, f))
        out.append(os.path.join(dest, f))
    return out


def verdict_lines(res):
    """One line per verdict, printed after the report is written."""
    out = [f"finding {f.id}: {'seen' if f.seen else 'NOT seen'}" for f in res.findings]
    out += [f"finding {f.id} on text: {'seen' if f.seen else 'NOT seen'}" for f in res.text.findings]
    out += [f"rule {v.id}: {v.verdict}" for v in (res.text.crit, res.text.p_syn, res.text.p_text)]
    out += [f"claim {c.id}: {c.verdict}" for c in res.claims]
    return out + [summary_line(res.conv), f"the residual, or the signal?: {signal_verdict(res.signal)}"]


def main(argv=None):
    p = argparse.ArgumentParser(description="Write the deep-stacking report from the sweeps' data.")
    p.add_argument("root", help="the study dir, e.g. runs/deep_stacking")
    p.add_argument("--out", help="report path (default ROOT/report.md; report.html and findings.json beside it)")
    p.add_argument("--results-to", metavar="DIR",
                   help="then copy ROOT/results/*.csv (the escape-law results tables) into DIR, e.g. docs/results")
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
    if args.results_to:
        try:
            for path in copy_results(root, args.results_to):
                print(path)
        except (ValueError, OSError) as e:
            print(f"report.py: --results-to: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
