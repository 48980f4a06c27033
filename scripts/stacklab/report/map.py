"""The stability map's text in the report: sentences generated from the judged map's counts (the runs
and their outcomes, where post-norm fails and pre-norm trains, where the init decides), every cell's
counts as a table, and the branch sizes at initialisation in words. Not here: the counts, the outcomes
and what they show (stability_map.py: map_facts; claims.outcome), the figure (stability_map.map_figure).
"""
from stacklab.studies.prepost_map import BRANCH_DEPTH, RUN_COMMAND, SWEEP, MapData, MapFacts

# What "trains" means in the map (issue 57 section 4), said once in its section (sections.map_section).
TRAINS_MEANS = ("Here a run \"trains\" (the rules' word, claims.outcome) when it ends more than the claims' margin "
                "below its unigram loss: it left the plateau; whether it learns beyond symbol pairs (the bigram "
                "predictor's loss) is not measured by these runs.")


def _where(pairs):
    return "; ".join(pairs)


def map_text(data: MapData, facts: MapFacts) -> list[str]:
    """Sentences generated from the map's counts and what they show (facts: stability_map.map_facts):
    the runs and their outcomes; where post-norm fails and pre-norm trains (and the reverse); where
    warm-up or DeepNorm rescues post-norm and where not; where the init decides a wiring's outcome."""
    if data.empty:
        return [f"The stability map was not run (no training runs under {SWEEP}/): `{RUN_COMMAND}` runs it."]
    tot = facts.totals
    out = [f"{sum(tot.values())} runs in {len(data.cells)} cells ({', '.join(data.wirings)} x init "
           f"{', '.join(data.inits)} x lr {', '.join(f'{x:g}' for x in data.rates)} x L "
           f"{', '.join(map(str, data.depths))}): {tot['trained']} trained, {tot['diverged']} diverged, "
           f"{tot['plateau']} on the plateau" + (f", {tot['unfinished']} unfinished" if tot["unfinished"] else "")
           + f"; outcomes by {data.source}."]

    def at(init, d, lr, *ws):
        return (f"init {init}, L={d}, lr {lr:g} ("
                + ", ".join(f"{w} {data.cell(w, init, d, lr).counts}" for w in ws) + ")")

    if facts.post_fails is not None:
        if facts.post_fails:
            out.append("Post-norm fails where pre-norm trains at "
                       + _where(at(*c, "post", "pre") for c in facts.post_fails) + ".")
        else:
            out.append("Nowhere in the map does post-norm fail where pre-norm trains.")
        if facts.pre_fails:
            out.append("Pre-norm fails where post-norm trains at "
                       + _where(at(*c, "pre", "post") for c in facts.pre_fails) + ".")
        for fix, name in (("post-warmup", "Warm-up"), ("deepnorm", "DeepNorm")):
            if fix not in facts.fixes:
                continue
            saved, not_saved = facts.fixes[fix]
            if saved:
                out.append(f"{name} rescues post-norm at " + _where(at(*c, "post", fix) for c in saved) + ".")
            if not_saved:
                out.append(f"{name} does not rescue post-norm at " + _where(at(*c, "post", fix) for c in not_saved)
                           + ".")
    for w, patterns in facts.decides.items():
        for pattern, where in patterns.items():
            out.append(f"The init decides for {w}: "
                       + ", ".join(f"{m} under {i}" for m, i in zip(pattern, data.inits)) + " at "
                       + _where(f"L={d}, lr {lr:g} ("
                                + " against ".join(data.cell(w, i, d, lr).counts for i in data.inits) + ")"
                                for d, lr in where) + ".")
    if facts.decides_none:
        out.append("The init decides no cell: nowhere does a wiring train under one of "
                   + " and ".join(data.inits) + " and fail under the other.")
    return out


def counts_table(data: MapData):
    """(header, rows) of every cell: wiring, init, depth, then per rate "t/d/p, mean loss"."""
    rows = []
    for w in data.wirings:
        for init in data.inits:
            for d in data.depths:
                cells = []
                for lr in data.rates:
                    c = data.cell(w, init, d, lr)
                    m = c.mean_final
                    cells.append("-" if not (c.n or c.unfinished) else
                                 f"{c.counts} ({c.majority}), mean {m:.4f}" if m is not None else
                                 f"{c.counts} ({c.majority})")
                    if c.unfinished:
                        cells[-1] += f", {c.unfinished} unfinished"
                rows.append([f"`{w}`", init, str(d)] + cells)
    return ["wiring", "init", "L"] + [f"lr {lr:g}" for lr in data.rates], rows


def branch_text(rows: list[dict], depth: int = BRANCH_DEPTH) -> list[str]:
    """One sentence per placement: how large a branch starts next to the stream under each init,
    and the factor between the largest and smallest init; [] without rows."""
    out = []
    for pos in sorted({row["position"] for row in rows}):
        mine = [row for row in rows if row["position"] == pos]
        parts = [f"{row['init']} {row['mean']:.2g} (seeds {row['min']:.2g}-{row['max']:.2g})" for row in mine]
        lo, hi = min(mine, key=lambda row: row["mean"]), max(mine, key=lambda row: row["mean"])
        ratio = f"; {hi['init']} over {lo['init']}: {hi['mean'] / lo['mean']:.3g}x" if lo["mean"] > 0 else ""
        out.append(f"{pos}-norm at L = {depth}, branch / stream at initialisation (mean squares, mean over the "
                   f"blocks): {', '.join(parts)}{ratio}.")
    return out
