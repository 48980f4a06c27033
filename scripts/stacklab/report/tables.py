"""The report's tables of numbers, from the judged study's training points: the final loss at the
reference rate, every rate, the escape step, the extras; and the seed count per point in words.
Not here: the points and their seed summaries (study_findings.Training, study_stats).
"""
from collections import defaultdict

from stacklab.studies import stats
from stacklab.studies.findings import GRID_WIRINGS, fmt_escape, seed_list


def loss_cell(tr, w, d, lr, best=False):
    """One table cell: the seed summary of the point's completed runs and, when seeds were left out,
    how many of how many and why ("n=2; 1 of 3 seeds excluded: s1 diverged at step 40")."""
    s = tr.summary(w, d, lr)
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
