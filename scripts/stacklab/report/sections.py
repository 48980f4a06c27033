"""The parts of the report read at a glance: the summary (one row per finding and per claim: what it
says, the numbers that decide it, its verdict, a link to its section), a section per finding (its
text beside the figure that shows it, every number folded below), the claims of claims.json with
their verdicts (claims.evaluate_all), and the stability map ("Where pre-norm and post-norm train", "train" as the
rules say it: map.TRAINS_MEANS).
Rows are built from any objects with a claim verdict's fields (claims.ClaimVerdict). Used by page.py.
Not here: the findings' rules (study_findings.py), the map's counts and sentences (stability_map.py,
map.py), loading runs, tables of numbers (tables.py).
"""
import os
import re

from stacklab.studies import rules_check, prepost_map as stability_map
from .map import TRAINS_MEANS as MAP_TRAINS_MEANS

CLAIMS_COMMAND = stability_map.RUN_COMMAND
# Where what a tier costs is kept, measured per machine: the tier table's last column. The report names
# it, never a time of its own (a measurement typed into code goes stale while the table is kept).
TIER_TIMES = '`configs/experiments/README.md`, "Two tiers"'
CLAIMS_FILES = {1: "claims.json", 2: "claims_round2.json"}  # by round
MAP_ANCHOR = "stability-map"
MAP_TITLE = "Where pre-norm and post-norm train"
# The figure that shows each finding: (figures/<dir>, file); "probe" is the probe sweep's dir.
FINDING_FIGURES = {1: ("probe", "grad_ratio_vs_depth.png"), 2: ("probe", "rank_vs_layer.png"),
                   3: ("training", "final_loss_vs_depth.png"), 4: ("probe", "last_grad_vs_depth.png"),
                   5: ("training", "final_loss_vs_lr.png")}


def finding_anchor(fid):
    return f"finding-{fid}"


def claim_anchor(cid):
    return f"claim-{str(cid).lower()}"


def one_line(text, limit=120):
    """The first clause of a sentence (up to "; " or ". "), cut at a word near `limit`."""
    first = re.split(r"(?<=[a-z0-9)])(?:; |\. )", text.strip(), maxsplit=1)[0].rstrip(".")
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + " ..."


# ---- claims ----------------------------------------------------------------------------------

def verdict_mark(verdict):
    return f"**{verdict}**"


def id_ranges(ids):
    """"C1-C4, C7" from claim ids in order: a run of three or more consecutive numbers is a range."""
    def num(i):
        m = re.match(r"C(\d+)", i)
        return int(m.group(1)) if m else None
    runs = []
    for i in ids:
        if runs and num(i) is not None and num(runs[-1][-1]) is not None and num(i) == num(runs[-1][-1]) + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(r) for r in runs)


def claims_not_run_line(claims):
    """One line for the claims this tier did not run (how to run them and what it costs), instead of a
    row of missing configs each, round 1's then round 2's; "" when every claim ran."""
    by_round = {}
    for c in claims:
        if c.verdict == "not run":
            by_round.setdefault(getattr(c, "round", 1), []).append(c.id)
    if not by_round:
        return ""
    which = " and ".join(f"{id_ranges(ids)} of `configs/experiments/{CLAIMS_FILES.get(r, 'claims.json')}`"
                         for r, ids in sorted(by_round.items()))
    return f"Claims {which}: not run at this tier; `{CLAIMS_COMMAND}` runs them (measured times: {TIER_TIMES})."


def summary_rows(findings, claims, extra=()):
    """[[link, what it says, deciding numbers, verdict]]: findings 1-5, then `extra` (rows of the study's
    other rules: pre- vs post-norm, the text criterion), then the claims that ran (the others are one
    line under the table: claims_not_run_line)."""
    rows = [[f"[{f.id}](#{finding_anchor(f.id)})", f.title, f.deciding,
             verdict_mark("seen" if f.seen else "not seen")] for f in findings]
    rows += [list(r) for r in extra]
    rows += [[f"[{c.id}](#{claim_anchor(c.id)})", one_line(c.claim), c.value or "-", verdict_mark(c.verdict)]
             for c in claims if c.verdict != "not run"]
    return rows


SUMMARY_HEADER = ["", "what it says", "the numbers that decide it", "verdict"]


def rule_row(anchor, verdict, what):
    """A summary row of a study_text.Verdict (rule P, criterion S), linking to `anchor`."""
    return [f"[{verdict.id}](#{anchor})", what, verdict.deciding, verdict_mark(verdict.verdict)]


def summary(doc, findings, claims, map_lines, extra=()):
    doc.h(2, "Summary", anchor="summary")
    doc.table(SUMMARY_HEADER, summary_rows(findings, claims, extra))
    line = claims_not_run_line(claims)
    if line:
        doc.p(line)
    doc.p(f"[{MAP_TITLE}](#{MAP_ANCHOR}): " + " ".join(map_lines[:2]))


# ---- sections --------------------------------------------------------------------------------

def finding_figure(root, fid, probe_name):
    d, name = FINDING_FIGURES[fid]
    rel = os.path.join("figures", probe_name if d == "probe" else d, name)
    return rel if os.path.isfile(os.path.join(root, rel)) else None


def finding_section(doc, f, rel, caption):
    """A finding: claim, rule, deciding numbers and verdict beside its figure; every number folded."""
    fid = f.id
    doc.h(2, f"Finding {fid}: {f.title}", anchor=finding_anchor(fid))
    text = [f.claim, f"Rule: {f.criterion}.", f"Deciding numbers: {f.deciding}.",
            f"Verdict: {verdict_mark('seen' if f.seen else 'not seen')}."]
    if rel:
        doc.beside(rel, caption, text)
    else:
        for t in text:
            doc.p(t)
        doc.p(f"(its figure, {FINDING_FIGURES[fid][1]}, was not drawn)")
    doc.fold(f"Every number of finding {fid} ({len(f.measured)} lines)")
    doc.ul(f.measured)
    doc.unfold()


def claims_section(doc, claims, where):
    doc.h(2, "Claims from the literature", anchor="claims")
    doc.p(f"Round 1 (C1-C7) was fixed in `configs/experiments/claims.json` before its runs; round 2 (C1r2-C4r2, "
          f"C7r2: the paper's statement under conditions closer to the paper's, at seeds round 1 did not use) in "
          f"`configs/experiments/claims_round2.json` before its runs; {where}. A round-1 claim not seen says why: "
          f"category a, the lab disagrees with the paper under the paper's conditions; b, the rule asked more "
          f"than the paper states; or c, the lab's conditions differ from the paper's.")
    line = claims_not_run_line(claims)
    if line:
        doc.p(line)
    for c in claims:
        if c.verdict == "not run":
            continue
        doc.h(3, f"{c.id}: {one_line(c.claim)}", anchor=claim_anchor(c.id))
        doc.p(c.claim)
        doc.p(f"Source: {c.source}. Rule: {c.rule}.")
        doc.p(f"Deciding numbers: {c.value or '-'}. Verdict: {verdict_mark(c.verdict)}.")
        if getattr(c, "why", ""):
            doc.p(f"Why not seen: {c.why}")
        if (c.details or "").strip():
            doc.fold(f"Every number of {c.id}")
            doc.markdown_text(c.details)
            doc.unfold()


def map_figure_rel():
    return os.path.join("figures", stability_map.SWEEP, stability_map.FIGURE)


def pre_post_section(doc, verdicts, rule, refused=()):
    """Rule P (study_rules.json) on each map that holds its cells: the verdict, its deciding numbers,
    every cell's counts; the map runs not judged because their settings differ from the rules' (refused:
    [(sweep, run id, [rules_check.Difference])])."""
    doc.h(2, "Pre-norm against post-norm (rule P)", anchor="pre-post")
    doc.p(f"{rule['text']} Rule, fixed in `configs/experiments/study_rules.json` before its runs: {rule['rule']}")
    for v in verdicts:
        doc.p(f"{v.id}: {v.deciding}. Verdict: {verdict_mark(v.verdict)}.")
        if v.lines and v.verdict != "not run":  # not run: the deciding line names the empty cells
            doc.ul(v.lines)
    refused_paragraph(doc, "configs/experiments/study_rules.json", refused)


def refused_paragraph(doc, rules_file, refused):
    """The runs a judge did not judge because their settings differ from the rules' (rules_check), one line
    per way they differ; nothing when there are none."""
    if refused:
        doc.p(f"Not judged, their settings differ from the rules' (`{rules_file}` and the sweep files it judges):")
        doc.ul(rules_check.refused_lines(refused))


def map_section(doc, root, data, lines, caption, branch_lines, counts):
    """The stability map: generated text (lines) beside the figure, the branch sizes at initialisation
    (branch_lines), every cell's counts (counts: map.counts_table) folded below; with no map runs, the
    sentence saying it was not run and the command that runs it."""
    doc.h(2, MAP_TITLE, anchor=MAP_ANCHOR)
    rel = map_figure_rel()
    if not data.empty and os.path.isfile(os.path.join(root, rel)):
        doc.beside(rel, caption, lines)
    else:
        for t in lines:
            doc.p(t)
        if not data.empty:
            doc.p(f"(the figure was not drawn: `python3 scripts/plot_stability_map.py OUT/{stability_map.SWEEP} "
                  f"--out OUT/figures/{stability_map.SWEEP}`)")
    if not data.empty:
        doc.p(MAP_TRAINS_MEANS)
    if branch_lines:
        doc.p("Why the init can decide it: how large each branch starts next to the stream it is added to, "
              f"measured by the probe (`branch_ratio`, sweep {stability_map.BRANCH_SWEEP}):")
        for t in branch_lines:
            doc.p(t)
    if not data.empty:
        doc.fold("Every cell: seeds trained/diverged/plateau (majority), mean final val loss of the completed seeds")
        doc.table(*counts)
        doc.unfold()
