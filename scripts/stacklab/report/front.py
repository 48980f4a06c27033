"""The report's front page: the headline figure (final val loss against depth per wiring, one panel
per source, the short horizon dashed and the convergence runs' long horizon solid) and under it one
paragraph answering issue 36's question in words, every number from the runs: which wirings train,
escape or converge at which depth and horizon, with the min-max over seeds; without the convergence
runs, what the short horizon shows and that the long one was not run. Used by page.py.
Not here: the verdicts (study_findings.py, convergence.py, judge.ShortHorizon), the drawing (plot_convergence.py).
"""
from collections import defaultdict

from stacklab.plots import convergence as pc
from .convergence import COMMAND, SOURCE_NAMES, formulas, loss_range, steps_text
from stacklab.studies.findings import GRID_WIRINGS, NORES, RES, fmt
from stacklab.studies.stats import fmt_num

QUESTION = ("Do deep stacks without a residual ever escape the plateau given 10-30x the steps, how does the "
            "escape step grow with depth, and do rule P and post-norm's lower loss at L = 32 hold at convergence?")


def long_values(study, source) -> dict:
    """{kind: {wiring: {depth: [finals]}}}: each (wiring, depth) at its first horizon ("long") and,
    where continued, its later one ("extended")."""
    by = defaultdict(list)
    for p in study.points:
        if p.source == source:
            by[(p.wiring, p.depth)].append(p)
    hz = horizons(study, source)
    kind_of = {h: kind for kind, h in hz.items() if h}
    out = {"long": defaultdict(dict), "extended": defaultdict(dict)}
    for (w, d), pts in by.items():
        pts.sort(key=lambda p: p.horizon or 0)
        for p in pts:  # by its horizon: two points at one horizon (--tiny caps depths) keep the first
            kind = kind_of.get(p.horizon)
            if kind is not None and d not in out[kind][w]:
                out[kind][w][d] = p.finals
    return out


def horizons(study, source) -> dict:
    """{"long": H, "extended": 4H or None} of a source, from its points with a judged seed (an
    extension still running has said nothing yet)."""
    hs = sorted({p.horizon for p in study.points if p.source == source and p.horizon and p.judged})
    return {"long": hs[0] if hs else None, "extended": hs[-1] if len(hs) > 1 else None}


def panels(tr, text, study, short):
    """({source: [Series]}, {source: reference losses}, the runs whose wirings colour the figure)."""
    names = formulas(list(tr.runs) + list(study.runs) + list(text.point_runs))
    text_tr = text.tr
    shorts = {src: (sh.values, sh.steps) for src, sh in short.items()}
    out, refs = {}, {"synthetic": tr.refs}
    for src in SOURCE_NAMES:
        series = []
        if src in shorts:
            vals, steps = shorts[src]
            series += [pc.Series(w, names.get(w, w), "short", f"{steps} steps", v) for w, v in vals.items()]
        hz = horizons(study, src)
        for kind, by_w in long_values(study, src).items():
            if not by_w:
                continue
            series += [pc.Series(w, names.get(w, w), kind, f"{hz[kind]} steps", v) for w, v in by_w.items()]
        if series:
            out[src] = sorted(series, key=lambda s: (list(GRID_WIRINGS).index(s.wiring) if s.wiring in GRID_WIRINGS
                                                     else len(GRID_WIRINGS), s.kind))
    runs = [r for r in list(study.runs) + list(text.point_runs) + (list(text_tr.runs) if text_tr else [])
            if r.reference_losses]
    if "text" in out:
        refs["text"] = next((r.reference_losses for r in runs if (r.config.get("data") or {}).get("source") == "text"),
                            {})
    return out, refs, list(tr.runs) + list(study.runs) + list(text.point_runs)


# ---- the paragraph ---------------------------------------------------------------------------

def group_text(items, names) -> str:
    """"`x + f(x)` at L=2, 8; `f(x)` at L=32" from [(wiring, depth)]."""
    by = defaultdict(list)
    for w, d in items:
        by[w].append(d)
    return "; ".join(f"`{names.get(w, w)}` at L={', '.join(map(str, sorted(set(ds))))}" for w, ds in by.items())


def short_sentence(src, sh, names) -> str:
    """What the short horizon shows on one source (sh: a judge.ShortHorizon): residual wirings that leave
    the plateau, no-residual ones on it (its outcomes by finding 3's margins: "trains" is ending that far below
    the unigram loss, not learning beyond symbol pairs), exceptions named with their losses."""
    values, steps, unigram = sh.values, sh.steps, sh.unigram
    parts = []
    for group, want, what in ((RES, "trains", "residual wiring leaves the plateau"),
                              (NORES, "stuck", "wiring without a residual stays on the plateau")):
        pts = [(w, d, v) for w in group for d, v in sorted(values.get(w, {}).items()) if v]
        if not pts:
            continue
        odd = [(w, d, sh.outcomes[(w, d)], v) for w, d, v in pts if sh.outcomes[(w, d)] != want]
        finals = [x for _, _, v in pts for x in v if x is not None]
        depths = sorted({d for _, d, _ in pts})
        text = (f"every {what} at L={', '.join(map(str, depths))} (final val loss {fmt_num(min(finals))}-"
                f"{fmt_num(max(finals))} over wirings, depths and seeds)" if not odd else
                f"every {what} except " + ", ".join(f"`{names.get(w, w)}` at L={d} ({o}: {loss_range(v, 3)})"
                                                    for w, d, o, v in odd))
        parts.append(text)
    return (f"At {steps} steps on the {src} source (unigram {fmt_num(unigram)}), " + "; ".join(parts) + "."
            if parts else "")


def long_sentence(src, study, names, short_steps) -> str:
    """What the convergence runs show on one source: the residual points' verdicts, each wiring
    without a residual per depth (verdict, escape step with its seeds' spread), its growth fit,
    pre vs post at convergence."""
    hz = horizons(study, src)
    pts = [p for p in study.points if p.source == src]
    first = [p for p in pts if p.horizon == hz["long"]]
    ratio = f", {hz['long'] / float(short_steps):.0f}x the short horizon" if short_steps.isdigit() else ""
    out = [f"Given {hz['long']} steps{ratio}"
           + (f", and {hz['extended']} for the stacks continued there" if hz["extended"] else "") + f" ({src}):"]
    res = [p for p in first if p.wiring.endswith("-res")]
    by_verdict = defaultdict(list)
    for p in res:
        by_verdict[p.verdict].append(p)
    if res:
        out.append("residual wirings " + "; ".join(
            f"{v}: {group_text([(p.wiring, p.depth) for p in ps], names)} "
            f"(final {loss_range([x for p in ps for x in p.finals], 3)})" for v, ps in by_verdict.items()) + ".")
    for (s, w), f in sorted(study.fits.items()):
        if s != src:
            continue
        depth_parts = []
        for d, _, h, steps, med in f.rows:
            pt = next((p for p in pts if p.wiring == w and p.depth == d and p.horizon == h), None)
            verdict = pt.verdict if pt else "not run"
            escaped = f", escape step {med:g} (seeds {steps_text(steps, h)})" if med is not None else ""
            depth_parts.append(f"L={d} {verdict} within {h}{escaped}")
        depth_parts += [f"L={d} not judged (no seed finished up to {h} steps)" for d, h in f.not_judged]
        m = f.median_fit
        growth = f"escape step against depth: **{m['verdict']}**" + (
            f" (x{fmt(m['factor'])} per layer or L^{fmt(m['p'])})" if m["factor"] is not None else "")
        out.append(f"`{names.get(w, w)}`: " + "; ".join(depth_parts) + f"; {growth}.")
    pp = study.pp.get(src)
    if pp is not None:
        out.append(f"Pre vs post at L = {study.rules['pre_post']['depth']}: rule P **{pp.p_verdict}**; which ends "
                   "lower: " + ", ".join(f"{i} init {v}" for i, v in pp.lower.items()) + ".")
    return " ".join(out)


def answer(tr, text, study, short) -> str:
    """The one paragraph under the headline figure (short: judge.Result.short)."""
    names = formulas(list(tr.runs) + list(study.runs) + list(text.point_runs))
    syn_steps = short["synthetic"].steps
    out = [f"**{QUESTION}**", short_sentence("synthetic", short["synthetic"], names)]
    if "text" in short:
        out.append(short_sentence("text", short["text"], names))
    if not study.present:
        out.append(f"The long horizon (10-30x the steps) was not run: `{COMMAND}` runs it (hours).")
        return " ".join(o for o in out if o)
    for src in study.sources:
        steps = syn_steps if src == "synthetic" else short["text"].steps if "text" in short else "?"
        out.append(long_sentence(src, study, names, steps))
    rev = study.reversals
    out.append(f"{len(rev)} of the {len(study.rows)} short-horizon statements judged again are reversed at the "
               "long horizon" + (": " + "; ".join(f"{r[0]} ({r[1]}) {r[5]}" for r in rev) if rev else "") + ".")
    return " ".join(o for o in out if o)


def caption(panels_: dict) -> str:
    kinds = {}
    for src, series in panels_.items():
        for s in sorted(series, key=lambda s: list(pc.HORIZON_STYLE).index(s.kind)):
            kinds.setdefault((src, s.kind), s.horizon)
    said = "; ".join(f"{src} {kind} {h}" for (src, kind), h in kinds.items())
    return ("Final validation loss against depth per wiring, mean over seeds (band: min-max at the long horizons); "
            "each wiring at its best rate per depth at the short horizon, at the convergence rules' rate at the long "
            f"one. Dashed: short horizon; solid: long; dotted: extended. Horizons: {said}.")


def front(doc, res, written) -> str | None:
    """The headline figure and the paragraph under it (res: judge.Result); returns the figure's path
    (None: not drawn)."""
    root, tr, text, study = res.root, res.tr, res.text, res.conv
    p, refs, colour_runs = panels(tr, text, study, res.short)
    rel = pc.draw(root, pc.FRONT, pc.front_figure(p, refs, colour_runs) if p else None, written)
    if rel:
        doc.figure(rel, caption(p))
    doc.p(answer(tr, text, study, res.short))
    return rel
