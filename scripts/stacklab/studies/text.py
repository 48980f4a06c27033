"""The study on real text and the pre- vs post-norm verdict, judged by the rules of
configs/experiments/study_rules.json (fixed before their runs): the text sweeps' findings by
study_findings.py's rules unchanged (each run's own unigram loss), criterion S (the text horizon
learns real structure), the quick tier's text point beside the synthetic L = 32 row, rule P on a
stability map (synthetic: stability_map or the quick tier's map_core; text: text_map), all in one
TextStudy. Used by judge.py. Not here: loading sweeps, the map's counts (stability_map.py), the
findings' rules (study_findings.py), the report's section "On real text" (report/text.py).
"""
import json
import os
from dataclasses import dataclass, field

from stacklab.studies import rules_check, prepost_map as stability_map
from stacklab.runs import runlog
from stacklab.studies import stats
from stacklab.studies.findings import (F3_STUCK_MARGIN, F3_TRAIN_MARGIN, Training, finding_1, finding_2,
                                       finding_3, finding_4, finding_5, fmt)
from stacklab.paths import in_root

RULES_PATH = in_root("configs", "experiments", "study_rules.json")
TEXT_ANCHOR = "on-real-text"
PRE_POST_ANCHOR = "pre-post"
TEXT_COMMAND = "bash scripts/reproduce.sh --text"
# The text point's wirings, in the order the quick tier's text_point.json names them.
POINT_WIRINGS = ("pre-layernorm-res", "post-layernorm-res", "pre-layernorm-nores")
POINT_DEPTH = 32  # text_point.json's depth (a --tiny tier caps it: point_depth reads the runs)
# The sweeps rule P reads: stability_map's cells where it ran, else map_core's (the text sweeps are
# configs/experiments/tiers.json's, stacklab.runs.tier_lists.TEXT_SWEEPS): a run whose settings differ
# from its sweep file's (the tier's, rules_check) is not judged.
MAP_SWEEPS = ("stability_map", "map_core")


def load_rules(path=None):
    with open(path or RULES_PATH, encoding="utf-8") as f:
        return json.load(f)


@dataclass
class Verdict:
    """A rule's outcome: "seen", "not seen" or "not run", the numbers it turns on, and per-item lines."""
    id: str
    verdict: str
    deciding: str
    lines: list


@dataclass
class TextStudy:
    """The study on tiny Shakespeare (study_rules.json) and rule P on both sources' maps."""
    findings: list      # findings 1-5 on the text sweeps (study_findings.Finding), [] where they did not run
    tr: object          # study_findings.Training over text_train, or None
    crit: object        # Verdict: criterion S
    point_runs: list    # the text point's runs (text_train's or text_point's, at its depth)
    map: object         # stability_map.MapData of text_map
    p_syn: object       # Verdict: rule P on the synthetic map
    p_text: object      # Verdict: rule P on the text map
    point: object = None  # text_point: (depth, rows, {source: finding 3 holds}) or None
    refused: list = field(default_factory=list)  # [(sweep, run id, [rules_check.Difference])]: not judged


# ---- criterion S: the text horizon learns real structure ----------------------------------

def structure(tr, rules=None) -> Verdict:
    """Criterion S on the text trainings (a study_findings.Training over text_train): the named
    wiring at the named depth, at its best rate, ends `below_unigram` nats under the unigram loss."""
    s = (rules or load_rules())["text"]["structure"]
    w, d, gap = s["wiring"], s["depth"], s["below_unigram"]
    if tr is None or tr.unigram is None or tr.best(w, d) is None:
        return Verdict(s["id"], "not run", f"no completed `{w}` run at L={d} on text", [])
    lr = tr.best(w, d)
    vals = tr.finals(w, d, lr)
    thr = tr.unigram - gap
    good, k, n, rule = stats.seed_rule(vals, thr, below=True)
    summ = stats.fmt_summary(stats.summarize_loss(vals), 4)
    deciding = (f"{w} L={d} at lr {lr:g}: {summ} vs <= {fmt(thr, 4)} (unigram {fmt(tr.unigram, 4)} - {gap:g}); "
                f"{stats.rule_text(k, n, rule)}")
    return Verdict(s["id"], "seen" if good else "not seen", deciding, [s["text"], deciding])


# ---- the quick tier's text point ------------------------------------------------------------

def outcome_of(vals, unigram):
    """"trains" (below unigram - F3_TRAIN_MARGIN, every seed or the interval), "stuck" (above
    unigram - F3_STUCK_MARGIN, likewise), else "mixed": finding 3's two rules on one point."""
    if not vals or unigram is None:
        return "not run"
    if stats.seed_rule(vals, unigram - F3_TRAIN_MARGIN, below=True)[0]:
        return "trains"
    if stats.seed_rule(vals, unigram - F3_STUCK_MARGIN, below=False)[0]:
        return "stuck"
    return "mixed"


def point_depth(text_runs):
    """The text point's depth: POINT_DEPTH where the runs have it, else their deepest (--tiny caps it)."""
    depths = {r.n_layer for r in text_runs}
    return POINT_DEPTH if POINT_DEPTH in depths or not depths else max(depths)


def point_rows(syn_tr, text_runs, depth=POINT_DEPTH):
    """[[wiring, synthetic final loss, its outcome, text final loss, its outcome]] at `depth`: the
    synthetic training grid at its reference rate beside the text runs (text_point, or text_train's
    runs at that depth and the same rate) with each source's own unigram loss."""
    uni_t = next((r.reference_losses.get("unigram") for r in text_runs if r.reference_losses), None)
    rows = []
    for w in POINT_WIRINGS:
        lr = syn_tr.ref_lr if syn_tr is not None else None
        syn = syn_tr.finals(w, depth, lr) if syn_tr is not None and lr is not None else []
        txt = [r.final_val_loss for r in text_runs if r.wiring == w and r.n_layer == depth
               and (lr is None or stats.learning_rate(r) == lr)]
        rows.append([f"`{w}`", stats.fmt_summary(stats.summarize_loss(syn), 4) if syn else "-",
                     outcome_of(syn, syn_tr.unigram if syn_tr is not None else None),
                     stats.fmt_summary(stats.summarize_loss(txt), 4) if txt else "-", outcome_of(txt, uni_t)])
    return rows


def text_point(syn_tr, point_runs):
    """(depth, point_rows, point_verdict) of the text point, or None without its runs."""
    if not point_runs:
        return None
    depth = point_depth(point_runs)
    rows = point_rows(syn_tr, point_runs, depth)
    return depth, rows, point_verdict(rows)


def point_verdict(rows):
    """The text point says what finding 3 says at L = 32 when both residual wirings train and
    `f(norm(x))` is stuck on both sources."""
    want = {"pre-layernorm-res": "trains", "post-layernorm-res": "trains", "pre-layernorm-nores": "stuck"}
    ok = {src: all(r[col] == want[r[0].strip("`")] for r in rows) for src, col in (("synthetic", 2), ("text", 4))}
    return ok


# ---- rule P: pre-norm trains where post-norm fails ------------------------------------------

def pre_post(data: stability_map.MapData, rules=None, source="synthetic") -> Verdict:
    """Rule P on one map: its named cells (depth, inits, rates), each by its seeds' majority."""
    p = (rules or load_rules())["pre_post"]
    d, inits, rates = p["depth"], p["inits"], p["rates"]
    pid = p["id"] + (" (text)" if source == "text" else "")
    cells = [(i, lr) for i in inits for lr in rates]
    empty = [(i, lr) for i, lr in cells
             if not data.cell("pre", i, d, lr).n or not data.cell("post", i, d, lr).n]
    lines = []
    for i, lr in cells:
        pre, post = data.cell("pre", i, d, lr), data.cell("post", i, d, lr)
        lines.append(f"init {i}, L={d}, lr {lr:g}: pre {pre.counts} ({pre.majority}), post {post.counts} "
                     f"({post.majority}) [trained/diverged/plateau]")
    if empty:
        missing = ", ".join(f"init {i} lr {lr:g}" for i, lr in empty)
        return Verdict(pid, "not run", f"no finished seed of pre and post at L={d}: {missing}", lines)
    fails = stability_map.FAILS
    pre_wins = [(i, lr) for i, lr in cells if data.cell("pre", i, d, lr).majority == "trained"
                and data.cell("post", i, d, lr).majority in fails]
    post_wins = [(i, lr) for i, lr in cells if data.cell("post", i, d, lr).majority == "trained"
                 and data.cell("pre", i, d, lr).majority in fails]

    def where(cs):
        return ", ".join(f"{i} lr {lr:g} (pre {data.cell('pre', i, d, lr).counts}, post "
                         f"{data.cell('post', i, d, lr).counts})" for i, lr in cs) or "nowhere"
    deciding = (f"L={d}: pre trains where post fails at {where(pre_wins)}; post trains where pre fails at "
                f"{where(post_wins)} (seeds trained/diverged/plateau)")
    return Verdict(pid, "seen" if pre_wins and not post_wins else "not seen", deciding, lines)


# ---- the results, from the sweeps --------------------------------------------------------------

def rule_map(root, name, tier_name="quick", tiny=False) -> tuple:
    """(MapData, refused) of the map sweep OUT/<name> (stability_map, map_core, text_map) as the rules judge
    it: the runs its manifest lists whose settings are its sweep file's (tier_name's; scaled down for a
    --tiny study), the others named in refused. An empty map when the folder does not exist."""
    d = os.path.join(root, name)
    if not os.path.isdir(d):
        return stability_map.build([]), []
    kept, refused = rules_check.split(runlog.sweep_runs(d), rules_check.settings(name, tier_name, tiny), name)
    return stability_map.build(kept), refused


def text_study(root, sweeps, syn_map, syn_tr, tier_name="quick", tiny=False, map_refused=()) -> TextStudy:
    """The text sweeps' results, judged by study_rules.json: the findings on text (when text_probe and
    text_train ran: study_findings' rules unchanged), criterion S, the runs of the text point
    (text_train's or text_point's) beside the synthetic training points (syn_tr), the text map, and
    rule P on it and on the synthetic map (syn_map, built by rule_map; map_refused: its refused runs).
    A run whose settings differ from its sweep file's (the tier's: tier_name, tiny) is not judged:
    TextStudy.refused names it with the keys that differ."""
    refused = list(map_refused)
    judged = {}
    for n in ("text_probe", "text_train", "text_point"):
        judged[n], r = rules_check.judged_sweep(sweeps.get(n), rules_check.settings(n, tier_name, tiny)
                                                if sweeps.get(n) is not None else [])
        refused += r
    probe, train, point = (judged[n] for n in ("text_probe", "text_train", "text_point"))
    tr = Training([train]) if train is not None and train.runs else None
    findings = []
    if probe is not None and probe.runs and tr is not None:
        findings = [finding_1(probe), finding_2(probe, tr), finding_3(tr), finding_4(probe), finding_5(tr)]
    point_runs = (train.runs if tr is not None else point.runs if point is not None else [])
    point_runs = [r for r in point_runs if r.n_layer == point_depth(point_runs)]
    tmap, r = rule_map(root, "text_map", tier_name, tiny)
    refused += r
    return TextStudy(findings, tr, structure(tr), point_runs, tmap, pre_post(syn_map), pre_post(tmap, source="text"),
                     text_point(syn_tr, point_runs), refused)
