"""The report's "On real text" and the summary's rows of rule P and criterion S, from the judged study
(study_text.TextStudy; study_rules.json's wording): criterion S, per finding and per map cell the
synthetic and the text result side by side with their verdicts, the text point, what differs and why.
Not here: the rules and verdicts (study_text.py).
"""
from stacklab.studies import prepost_map as stability_map
from stacklab.studies.findings import F3_STUCK_MARGIN, F3_TRAIN_MARGIN, fmt
from stacklab.studies.text import PRE_POST_ANCHOR, TEXT_ANCHOR, TEXT_COMMAND, load_rules
from .sections import TIER_TIMES, refused_paragraph, rule_row


def summary_extra(text):
    """The summary's rows after the findings (text: a study_text.TextStudy): rule P on the synthetic map
    (always: "not run" says the cells are missing), on the text map and criterion S where they ran."""
    rule = load_rules()["pre_post"]
    rows = [rule_row(PRE_POST_ANCHOR, text.p_syn, f"Pre-norm trains where post-norm fails, not the reverse (L = "
                     f"{rule['depth']}, inits {' and '.join(rule['inits'])})")]
    if text.p_text.verdict != "not run":
        rows.append(rule_row(PRE_POST_ANCHOR, text.p_text, "The same on tiny Shakespeare"))
    if text.tr is not None:
        rows.append(rule_row(TEXT_ANCHOR, text.crit, "On text the horizon lets a residual stack learn structure"))
    return rows


def cell_rows(syn: stability_map.MapData, text: stability_map.MapData):
    """[[wiring, init, L, lr, synthetic t/d/p (majority), text t/d/p (majority)]] over the cells either
    map holds, in the map's wiring order."""
    keys = sorted(set(syn.cells) | set(text.cells),
                  key=lambda k: (list(stability_map.WIRINGS).index(k[0]), k[1], k[2], k[3]))

    def show(data, k):
        c = data.cells.get(k)
        if c is None or not (c.n or c.unfinished):
            return "not run"
        m = c.mean_final
        return f"{c.counts} **{c.majority}**" + (f", mean {m:.3f}" if m is not None else "")
    return [[f"`{w}`", i, str(d), f"{lr:g}", show(syn, (w, i, d, lr)), show(text, (w, i, d, lr))]
            for (w, i, d, lr) in keys]


def differences(syn_tr, text_tr, text_runs):
    """What differs between the two sources, from the runs where they hold it, and why."""
    runs = text_runs or (text_tr.runs if text_tr is not None else [])
    ref_t = next((r.reference_losses for r in runs if r.reference_losses), {})
    vocab_t = next(((r.config.get("model") or {}).get("vocab_size") for r in runs if r.config), None)
    steps_t = sorted({r.summary.get("steps") for r in runs if r.summary} - {None})
    steps_s = sorted({r.summary.get("steps") for r in syn_tr.runs if r.summary} - {None}) if syn_tr else []
    ref_s = syn_tr.refs if syn_tr is not None else {}
    vocab_s = next(((r.config.get("model") or {}).get("vocab_size") for r in syn_tr.runs if r.config),
                   None) if syn_tr is not None else None
    return [
        f"The synthetic source is an order-2 Markov chain over {fmt(vocab_s)} "
        f"symbols: its structure is two symbols deep and fully known (unigram {fmt(ref_s.get('unigram'), 4)}, "
        f"optimum {fmt(ref_s.get('optimal'), 4)} nats), so \"trains\" means leaving the unigram plateau toward a "
        f"known floor. Tiny Shakespeare has {fmt(vocab_t)} characters, structure at every range (words, lines, "
        f"speakers) and no known optimum (unigram {fmt(ref_t.get('unigram'), 4)} nats of the training split); its "
        "validation split is the last 10 % of the play text, not fresh draws of the same chain.",
        f"Horizons: {'/'.join(map(str, steps_s)) or '?'} steps on the synthetic source, "
        f"{'/'.join(map(str, steps_t)) or '?'} on text, where a model has more to learn past the unigram loss; "
        "the rates and inits are the same where a cell exists in both, the vocabulary (and so the embedding and "
        "head) differ.",
        "Why the verdicts can differ: the findings at initialisation (1, 2, 4) depend on the batch only through "
        "the embeddings' input, so they should carry over; the trainings depend on how much structure lies within "
        "reach of the horizon, which is where the sources differ most.",
    ]


def text_section(doc, syn_findings, syn_tr, syn_map, text):
    """The report's "On real text" (text: a study_text.TextStudy): criterion S, per finding and per map cell
    the synthetic and the text result side by side with their verdicts, the text point, what differs
    and why."""
    text_findings, crit, point_runs, text_map = text.findings, text.crit, text.point_runs, text.map
    p_syn, p_text = text.p_syn, text.p_text
    doc.h(2, "On real text", anchor=TEXT_ANCHOR)
    rules = load_rules()
    doc.p(f"Data: {rules['text']['data']}. Rules: `configs/experiments/study_rules.json` (fixed "
          f"{rules['fixed_on']}, before the text runs): {rules['text']['findings']}.")
    if_missed = rules["text"]["structure"]["if_missed"]
    missed = f" {if_missed[0].upper()}{if_missed[1:]}." if crit.verdict == "not seen" else ""
    doc.p(f"Criterion {crit.id} (the text horizon learns real structure): {crit.deciding}. Verdict: "
          f"**{crit.verdict}**.{missed}")
    how = f"`{TEXT_COMMAND}` runs them (measured times: {TIER_TIMES})"
    if text_findings:
        rows = [[str(s.id), s.title, f"{s.deciding}; **{'seen' if s.seen else 'not seen'}**",
                 f"{t.deciding}; **{'seen' if t.seen else 'not seen'}**"]
                for s, t in zip(syn_findings, text_findings)]
        doc.p("Per finding, the synthetic and the text result with their verdicts:")
        doc.table(["finding", "what it says", "synthetic: deciding numbers, verdict",
                   "text: deciding numbers, verdict"], rows)
        differ = [str(s.id) for s, t in zip(syn_findings, text_findings) if s.seen != t.seen]
        doc.p(f"The verdicts differ for finding(s) {', '.join(differ)}." if differ
              else "The verdicts are the same on both sources.")
    else:
        doc.p(f"The findings on text (text_probe, text_train) were not run at this tier: {how}.")
    if text.point is not None:
        depth, rows, ok = text.point
        doc.p(f"The text point: L={depth} at lr {fmt(syn_tr.ref_lr if syn_tr else None)}, final val loss "
              f"(mean, min-max, 95% CI, n) and its outcome against each source's own unigram loss (trains: below "
              f"unigram - {F3_TRAIN_MARGIN}; stuck: above unigram - {F3_STUCK_MARGIN}; every seed or the interval). "
              f"Finding 3 at L={depth} (both residual wirings train, `f(norm(x))` stuck): synthetic "
              f"**{'seen' if ok['synthetic'] else 'not seen'}**, text **{'seen' if ok['text'] else 'not seen'}**.")
        doc.table(["wiring", "synthetic final loss", "synthetic", "text final loss", "text"], rows)
    if not syn_map.empty or not text_map.empty:
        doc.p(f"Per map cell, seeds trained/diverged/plateau (majority in bold) and the mean final val loss; rule "
              f"{p_syn.id}: synthetic **{p_syn.verdict}**, text **{p_text.verdict}** ({p_text.deciding}).")
        doc.fold("Every map cell on both sources")
        doc.table(["wiring", "init", "L", "lr", "synthetic", "text"], cell_rows(syn_map, text_map))
        doc.unfold()
        if text_map.empty:
            doc.p(f"The text map (text_map) was not run at this tier: {how.replace('runs them', 'runs it')}.")
    refused_paragraph(doc, "configs/experiments/study_rules.json",
                      [x for x in text.refused if x[0] in ("text_probe", "text_train", "text_point")])
    doc.p("What differs between the two sources, and why:")
    doc.ul(differences(syn_tr, text.tr, point_runs))
