"""The residual-or-signal study judged (signal.py's Judged) as text and as findings.json's record: the
points table (table), the verdict's parts one line each (verdict_items), what the rules' word "trains"
means in these runs (TRAINS_MEANS), the runs not judged (refused_lines), the whole as markdown for
docs/study.md and the command's output (markdown), and findings.json's "signal" (findings_json, judge.py).

    print(markdown(signal.judge("runs/signal", signal.load_rules())))

The report's section (report/signal.py) renders the same Judged from table(), verdict_items() and
TRAINS_MEANS. Not here: the rules, the points and the verdicts (signal.py).
"""
from stacklab.studies import rules_check
from stacklab.studies.signal import COMMAND, PLAN, RULES_FILE, Judged


def refused_lines(res: Judged) -> list:
    """The runs not judged, one line per way they differ from the rules (rules_check.refused_lines)."""
    return rules_check.refused_lines(res.refused)


TABLE_HEADER = ["point", "L", "escaped within H", "escape steps", "trains", "rank ratio at init (median of 3)"]


def table(res: Judged) -> tuple:
    """(header, rows): one row per point the rules plan (PLAN), a point with no run and no probe "not run"."""
    rows = []
    for key in PLAN:
        p = res.points.get(key)
        if p is None:
            rows.append([key[0], str(key[1]), "not run", "", "", ""])
            continue
        escaped = f"{p.escaped} of {len(p.seeds)}" if p.seeds or not p.refused else "none judged"
        rows.append([p.name, str(p.depth), escaped, p.steps_text(), p.trains_text(), p.rank_text()])
    return TABLE_HEADER, rows


def verdict_items(res: Judged) -> list:
    """The verdict's parts, one line each: per depth (with its control), per depth of the sub-layer stacks."""
    v = res.verdicts
    return ([f"L = {L}: {t}; control: {v['control'][L]}." for L, t in v["depth"].items()]
            + [f"sub-layers at L = {L}: {t}." for L, t in v["sublayer"].items()]
            + [f"rank ratio at init, {'all depths' if L == 'all' else f'L = {L}'}: {t}."
               for L, t in v.get("rank", {}).items()])


# What the rules' word "trains" means in these runs (issue 57 section 4), said once under the verdict: the
# verdicts keep the rules' word (findings.json's values), this sentence scopes it.
TRAINS_MEANS = ("\"Trains\" is the rules' word for leaving the plateau (an escape within H), where these runs "
                "stop: whether a stack then learns beyond symbol pairs (the bigram predictor's loss) is not "
                "measured by them.")


def markdown(res: Judged) -> str:
    header, rows = table(res)
    lines = []
    if res.tables:
        on = "; ".join(f"{cpu or 'a CPU not recorded'}, commit {commit[:7] or 'not recorded'}"
                       for cpu, commit in res.machines) or "no run"
        lines += [f"Read from the results tables {', '.join(res.tables)} ({on}); the tables hold no rank ratio at "
                  "init (signal_probe writes no table).", ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", f"Verdict: {res.verdicts['overall']}."]
    lines += ["- " + item for item in verdict_items(res)]
    unrun = [(n, L) for n, L in res.missing if not (res.points.get((n, L)) and res.points[(n, L)].refused)]
    if unrun:
        lines.append("- not run or unfinished: " + ", ".join(f"{n} at L = {L}" for n, L in unrun) + ".")
    if res.refused:
        lines.append(f"- not judged, their settings differ from the rules' ({RULES_FILE} and its sweep files):")
        lines += ["  - " + line for line in refused_lines(res)]
    lines += ["", TRAINS_MEANS]
    return "\n".join(lines) + "\n"


def findings_json(res: Judged) -> dict:
    """findings.json's "signal": not run, or the verdict, its parts and every point with its seeds."""
    if not res.present:
        return {"present": False, "verdict": "not run", "how": COMMAND, "rules": RULES_FILE}
    v = res.verdicts
    order = [k for k in PLAN if k in res.points] + sorted(k for k in res.points if k not in PLAN)
    return {
        "present": True, "rules": RULES_FILE, "fixed_on": res.rules.get("fixed_on"), "sweeps": res.sweeps,
        "horizon": (res.rules.get("horizon") or {}).get("H"), "verdict": v["overall"],
        "depths": [{"depth": L, "verdict": t, "control": v["control"][L]} for L, t in v["depth"].items()],
        "sublayer": [{"depth": L, "verdict": t} for L, t in v["sublayer"].items()],
        "rank": [{"depth": L, "reading": t} for L, t in v.get("rank", {}).items()],
        "points": [{"point": p.name, "depth": p.depth, "planned": (p.name, p.depth) in PLAN,
                    "seeds": [{"seed": sd, "escape_step": st, "last_eval_step": last} for sd, st, last in p.seeds],
                    "escaped": p.escaped, "finished": len(p.seeds), "need": p.need,
                    "trains": p.trains if p.complete else None, "rank_ratio_at_init": p.rank_ratio,
                    "refused": p.refused}
                   for p in (res.points[k] for k in order)],
        "not_judged": [{"point": n, "depth": L} for n, L in res.missing],
        "refused": rules_check.refused_json(res.refused),
        "tables": res.tables,
    }
