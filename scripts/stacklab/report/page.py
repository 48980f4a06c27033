"""The report's page: its sections in order (SECTIONS), each one function from the judged study
(judge.Result) to the document, which writes Markdown and HTML (doc.Doc). No section judges: each
reads the result's fields; the figures a section draws (the front page's, the convergence study's)
are noted on the Page so that the Figures section lists only the others.
Not here: judging (judge.py), the sections' parts (sections.py, front.py, text.py, map.py, convergence.py,
signal.py).
"""
import glob
import os

from stacklab.studies.escape import default_tier as escape_core
from stacklab.studies import stats
from stacklab.plots import views
from stacklab.studies.findings import fmt
from stacklab.studies.text import MAP_SWEEPS
from stacklab.studies.text import load_rules as study_rules
from . import convergence, front, law, law_study, sections, signal, text
from .doc import Doc
from .figures import figure_caption
from .map import branch_text, counts_table, map_text
from .runinfo import numeric_path_lines, timing_lines
from .tables import escape_md_table, extras_table, loss_table, lr_table, seeds_per_point


class Page:
    """The document being written and what its sections drew and showed."""

    def __init__(self, res):
        self.res, self.doc = res, Doc()
        self.written = []    # figures drawn by a section (plot_convergence.draw)
        self.shown = []      # figures shown beside their section (relative to the output folder)
        self.map_lines = map_text(res.map, res.map_facts)  # the map's sentences: in the summary and in its section

    def caption(self, rel):
        res = self.res
        return figure_caption(rel, res.probe, res.tr, res.sweeps)


def title_and_front(pg, res):
    """The title, the headline figure and the paragraph answering the question (front.py)."""
    pg.doc.h(1, "Why deep stacks need residuals and norms: measured")
    rel = front.front(pg.doc, res, pg.written)
    pg.shown += [rel] if rel else []


def law_core(pg, res):
    """The escape law's core under the headline (law.py): its figure and one paragraph, or "not run"."""
    core = res.law_core
    rel = law.figure(res.root, core, pg.written) if core is not None else None
    if rel:
        pg.doc.figure(rel, law.caption(core))
        pg.shown.append(rel)
    if core is not None:
        pg.doc.p(law.paragraph(core, res.stages))


def what_ran(pg, res):
    tr = res.tr
    pg.doc.p(f"{res.tier[0].upper() + res.tier[1:]} tier: {len(tr.runs)} completed training runs, "
             f"{seeds_per_point(tr)}; {len(res.probe.runs)} probe points"
             + (f"; data: order-2 Markov, unigram loss {fmt(tr.unigram, 4)} nats/token" if tr.unigram is not None
                else "")
             + ". Every number is computed from this run's data ([how](#method)); each row links to its section, "
             "whose full numbers are folded under it.")


def summary(pg, res):
    sections.summary(pg.doc, res.findings, res.claims, pg.map_lines,
                     extra=text.summary_extra(res.text) + convergence.summary_rows(res.conv)
                     + signal.summary_rows(res.signal))
    pg.doc.p(convergence.summary_line(res.conv))
    line = signal.summary_line(res.signal)
    if line:
        pg.doc.p(line)


def findings(pg, res):
    for f in res.findings:
        rel = sections.finding_figure(res.root, f.id, res.probe.name)
        sections.finding_section(pg.doc, f, rel, pg.caption(rel) if rel else "")
        pg.shown += [rel] if rel else []


def claims(pg, res):
    sections.claims_section(pg.doc, res.claims, res.claims_where)


def stability_map(pg, res):
    rel = sections.map_figure_rel()
    sections.map_section(pg.doc, res.root, res.map, pg.map_lines, pg.caption(rel), branch_text(res.branch),
                         counts_table(res.map))
    if not res.map.empty and os.path.isfile(os.path.join(res.root, rel)):
        pg.shown.append(rel)


def pre_post(pg, res):
    sections.pre_post_section(pg.doc, [res.text.p_syn, res.text.p_text], study_rules()["pre_post"],
                              [x for x in res.text.refused if x[0] in MAP_SWEEPS + ("text_map",)])


def on_real_text(pg, res):
    text.text_section(pg.doc, res.findings, res.tr, res.map, res.text)


def convergence_study(pg, res):
    figs = convergence.figures(res.root, res.conv, pg.written) if res.conv.present else {}
    convergence.section(pg.doc, res.conv, figs)
    pg.shown += [rel for rel, _ in figs.values()]


def escape_law_study(pg, res):
    """The escape law's opt-in study (law_study.py), when the folder holds its escape_law sweep: the
    depth x rate grid per wiring, the reads, the figure at each depth's best rate. Absent: no section
    (the core above says how to run the whole law)."""
    st = res.law  # judged once (judge.py: studies/escape/study.from_root)
    if st is None:
        return
    pg.doc.h(2, "The escape law (opt-in study)", anchor="escape-law")
    rel = os.path.join("figures", "escape_law", law_study.FIGURE)
    law_study.figure(st, os.path.join(res.root, rel))
    pg.written.append(os.path.join(res.root, rel))
    pg.doc.figure(rel, "Escape step against depth per wiring without a residual, each depth at its best rate; "
                       "arrows: runs that never escaped within the steps they reached; the law's line, band and "
                       "prediction at L = 96 where 3 depths escaped.")
    pg.shown.append(rel)
    pg.doc.markdown_text(law_study.markdown(st))
    sections.refused_paragraph(pg.doc, escape_core.RULES_FILE, st.refused)


def residual_or_signal(pg, res):
    """The residual, or the signal? (signal.py): the points, the verdict, the points not judged; or "not run"."""
    signal.section(pg.doc, res.signal, law.cpu_of(res.stages))


def final_loss(pg, res):
    """The table of numbers behind finding 3: the final loss at the reference rate."""
    doc, tr = pg.doc, res.tr
    steps = sorted({r.summary.get("steps") for r in tr.runs if r.summary})
    seeds = sorted({stats.seed_of(r) for r in tr.runs} - {None})
    doc.h(2, f"Final validation loss of the training grid (lr {tr.ref_lr:g}, {'/'.join(map(str, steps)) or '?'} "
             f"steps, seeds {'/'.join(map(str, seeds)) or '?'}; mean (min-max, 95% CI, n))" if tr.ref_lr is not None
          else "Final validation loss of the training grid (no completed run)", anchor="final-loss")
    doc.table(*loss_table(tr))


def learning_rates(pg, res):
    doc = pg.doc
    doc.h(2, "Learning rates: final validation loss per wiring, depth and rate", anchor="learning-rates")
    doc.p("Mean (min-max, 95% CI clipped at 0, n) over the completed seeds, with the excluded ones counted; "
          "**best** marks the rate finding 3 uses at that depth (lowest "
          "mean); at a depth with one rate, that rate.")
    doc.fold("The table: every wiring, depth and rate")
    doc.table(*lr_table(res.tr))
    doc.unfold()


def escape(pg, res):
    doc, tr = pg.doc, res.tr
    doc.h(2, "Escape time", anchor="escape")
    doc.p(f"Per run, the first eval step whose val loss is <= unigram - {stats.ESCAPE_MARGIN} "
          f"({fmt(tr.unigram - stats.ESCAPE_MARGIN if tr.unigram is not None else None, 4)}); \"> S\": never, up to "
          f"its last eval step S. Per wiring and depth at lr {tr.ref_lr if tr.ref_lr is not None else '?'}: "
          "the median over seeds and every seed's step (findings.json has every rate).")
    doc.fold("The table: every wiring and depth")
    doc.table(*escape_md_table(tr, res.escape))
    doc.unfold()


def extras(pg, res):
    if not res.extras:
        return
    doc = pg.doc
    doc.h(2, "Extras", anchor="extras")
    doc.p("Not used by a finding; every seed that exists is shown (n stated).")
    doc.fold("The table: every point of the extra sweeps")
    doc.table(*extras_table(res.extras))
    doc.unfold()


def excluded(pg, res):
    pg.doc.h(2, "Excluded runs", anchor="excluded")
    pg.doc.ul([f"{n}/{rid}: {why}" for n, rid, why in res.excluded] or ["none: every run completed"])


def method(pg, res):
    """How the numbers are made."""
    tr = res.tr
    pg.doc.h(2, "How the numbers are made", anchor="method")
    pg.doc.p(
        "Every number in this report is computed by `scripts/report.py` from this run's data. A number over seeds "
        "is the mean (min-max, 95% t-interval of the mean, n seeds); a loss is >= 0, so an interval that would "
        "reach below 0 (few seeds, one far off) is clipped at 0 and the cell says \"clipped at 0\". A finding is "
        "seen when its criterion holds for every "
        "seed (\"k of n seeds\") or the interval clears it (said so). Training points are (wiring, depth, learning "
        f"rate) pooled over {', '.join(s.name for s in tr.sweeps)}, {seeds_per_point(tr)}; "
        f"probes are seed means over {max((r.probe_seeds for r in res.probe.runs), default=0)} probe seeds. Excluded "
        "runs (diverged, failed, incomplete, and pending: a copy an extension sweep has not continued yet, a run "
        "without config.json) are in no number; they are listed under Excluded runs, and a table "
        "cell that lost seeds says how many of how many it holds. A run is diverged when its summary.json says "
        "status \"diverged\" (the trainer's rule: a non-finite loss, or one above 10 x ln(vocab size)); nothing "
        "here judges a loss by its size.")


def figures(pg, res):
    """The figures not shown beside a section."""
    root, doc = res.root, pg.doc
    figs = sorted(glob.glob(os.path.join(root, "figures", "**", "*.png"), recursive=True))
    doc.h(2, "Figures", anchor="figures")
    rest = [f for f in figs if os.path.relpath(f, root) not in pg.shown]
    doc.p(f"{len(figs)} figures; {len(figs) - len(rest)} are shown beside their section above, the others here."
          if figs else "(no figures under figures/)")
    for fpath in rest:
        rel = os.path.relpath(fpath, root)
        doc.figure(rel, pg.caption(rel))


def view_links(pg, res):
    """A link to every HTML view the plotting step wrote (figures/**/view.html, views.py): a sweep's
    (every run of it, picked side by side) and each plotted run's."""
    root, doc = res.root, pg.doc
    found = sorted(glob.glob(os.path.join(root, "figures", "**", views.VIEW_NAME), recursive=True))
    doc.h(2, "Views to explore", anchor="views")
    doc.p("Interactive HTML pages beside the figures (they open from disk, no network): hover for block, step "
          "and value, drag to zoom; a sweep's view picks runs to set side by side." if found else
          "(no views under figures/: plotly missing when the figures were made? apt-get install python3-plotly)")
    doc.ul([f"[{os.path.dirname(os.path.relpath(v, root))}]({os.path.relpath(v, root)})" for v in found])


def how_run(pg, res):
    tr = res.tr
    pg.doc.h(2, "How this was run", anchor="run")
    pg.doc.ul(timing_lines(res.stages, list(res.sweeps.values())))
    if tr.refs:
        pg.doc.p(f"Data: order-2 Markov, reference losses (nats/token): uniform {fmt(tr.refs.get('uniform'), 4)}, "
                 f"unigram {fmt(tr.unigram, 4)}, optimal {fmt(tr.refs.get('optimal'), 4)}.")


def numeric_path(pg, res):
    pg.doc.h(2, "Numeric path", anchor="numeric-path")
    pg.doc.ul(numeric_path_lines(res.stages, [r for s in res.sweeps.values() for r in s.runs if not r.is_probe]))


# The report's sections in order; the Figures section comes after every section that shows one.
SECTIONS = (title_and_front, law_core, what_ran, summary, findings, claims, stability_map, pre_post, on_real_text,
            convergence_study, escape_law_study, residual_or_signal, final_loss, learning_rates, escape, extras,
            excluded, method, figures, view_links, how_run, numeric_path)


def render(res) -> Page:
    """The whole report of a judged study: every section in order."""
    pg = Page(res)
    for section in SECTIONS:
        section(pg, res)
    return pg
