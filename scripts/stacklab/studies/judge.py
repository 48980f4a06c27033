"""The study judged once: one pass turns an output folder's sweeps into one typed result (Result),
which the report's sections render and findings.json serialises; nothing here writes text for a
reader. The rules are the judging modules': study_findings (findings 1-5, the escape table),
stability_map and claims (the map's outcomes, the claims' verdicts), study_text (rule P, criterion S,
the findings on text: TextStudy), convergence (the long horizon), escape_core (the escape law's core),
escape_study (the opt-in escape law, from the run folders), signal_study (the residual, or the signal?).

    result = judge(root, sweeps)    # sweeps: name -> report.Sweep (or anything with its fields)
    findings_json(result)           # findings.json's dict
Not here: loading a sweep (report.Sweep), the report's text (report/: page.py and its sections).
"""
import os
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from stacklab.studies import claims as claims_mod
from stacklab.studies import convergence
from stacklab.studies.escape import default_tier as escape_core, study as escape_study
from stacklab.studies import prepost_map as stability_map
from stacklab.studies import stats
from stacklab.studies import rules_check, signal as signal_study, signal_text, text as study_text
from stacklab.runs import runlog
from stacklab.studies.findings import (GRID_WIRINGS, Training, escape_table, finding_1, finding_2, finding_3,
                                       finding_4, finding_5)
from stacklab.studies.text import TextStudy
from stacklab.runs.tier_lists import CLAIMS_SWEEPS, CONVERGE_SWEEPS, COVERED_BY, SIGNAL_SWEEPS, TEXT_SWEEPS

TRAINING_SWEEPS = ("train_grid", "lr_grid")  # pooled: each (wiring, depth, rate) lives in one


@dataclass
class ShortHorizon:
    """A source's short horizon as the front page states it: each wiring's final losses per depth (at its
    best rate per depth; the text point's runs as they are), its steps, unigram loss, and each (wiring,
    depth)'s outcome by finding 3's margins (study_text.outcome_of)."""
    values: dict        # {wiring: {depth: [final val loss]}}
    steps: str          # "150", "150/300", or "?"
    unigram: object     # float or None
    outcomes: dict      # {(wiring, depth): "trains" | "stuck" | "mixed" | "not run"}


@dataclass
class Result:
    """Every verdict and number the report shows, judged once from one output folder."""
    root: str
    sweeps: dict        # name -> Sweep
    probe: object       # the probe sweep (probe_grid)
    tr: Training        # the training points pooled over TRAINING_SWEEPS
    findings: list      # findings 1-5 (study_findings.Finding)
    escape: list        # study_findings.escape_table's rows
    map: object         # stability_map.MapData: stability_map, else map_core
    map_name: str
    text: TextStudy
    conv: object        # convergence.Study
    claims: list        # [claims.ClaimVerdict], round 1 then round 2
    claims_where: str
    extras: list        # the sweeps no section of their own shows
    stages: list        # timing.jsonl's records
    tier: str           # "quick", "full", with " (--tiny)" for a scaled-down tier
    branch: list = field(default_factory=list)  # stability_map.branch_sizes of claims_probe's L = 32 points
    short: dict = field(default_factory=dict)   # source -> ShortHorizon ("text" where it ran)
    map_facts: object = None                    # stability_map.map_facts(map): what its counts show
    law_core: object = None                     # escape_core.Core: the escape law's core (present False: not run)
    signal: object = None                       # signal_study.Judged: the residual, or the signal? (present False)
    law: object = None                          # escape_study.Study: the opt-in escape law, None when not run

    @property
    def excluded(self) -> list:
        """[(sweep name, run id, why)] of every sweep."""
        return [(s.name, rid, why) for s in self.sweeps.values() for rid, why in s.excluded]


def read_timing(root) -> list:
    """timing.jsonl's records (runlog.read_timing)."""
    return runlog.read_timing(root)


def steps_of(runs) -> str:
    """The runs' step counts, "150" or "150/300" ("?" for none)."""
    return "/".join(str(s) for s in sorted({r.summary.get("steps") for r in runs if r.summary} - {None})) or "?"


def short_values(tr, point_runs=()) -> dict:
    """{wiring: {depth: [finals]}} at each wiring's best rate per depth (a Training), else the
    text point's runs as they are (one rate)."""
    out = defaultdict(dict)
    if tr is not None and tr.runs:
        for w in GRID_WIRINGS:
            for d in tr.depths:
                lr = tr.best(w, d)
                if lr is not None:
                    out[w][d] = tr.finals(w, d, lr)
    else:
        for r in point_runs:
            out[r.wiring].setdefault(r.n_layer, []).append(r.final_val_loss)
    return dict(out)


def short_horizon(values, steps, unigram) -> ShortHorizon:
    return ShortHorizon(values, steps, unigram, {(w, d): study_text.outcome_of(v, unigram)
                                                 for w, by_d in values.items() for d, v in by_d.items() if v})


def short_horizons(tr, text) -> dict:
    """{source: ShortHorizon}: synthetic always, text where its trainings or its point ran."""
    out = {"synthetic": short_horizon(short_values(tr), steps_of(tr.runs), tr.unigram)}
    tv = short_values(text.tr, text.point_runs)
    if tv:
        runs = text.tr.runs if text.tr is not None else text.point_runs
        uni = next((r.reference_losses.get("unigram") for r in runs if r.reference_losses), None)
        out["text"] = short_horizon(tv, steps_of(runs), uni)
    return out


def judge(root, sweeps) -> Result:
    """The study in `root` judged from its sweeps (name -> Sweep). Raises ValueError naming what is
    missing when there is no probe sweep or no train_grid."""
    probe = sweeps.get("probe_grid") or next((s for s in sweeps.values() if getattr(s, "mode", None) == "probe"), None)
    training = [sweeps[n] for n in TRAINING_SWEEPS if n in sweeps]
    if probe is None or "train_grid" not in sweeps:
        raise ValueError(f"{root}: need a probe_grid and a train_grid sweep (found: {', '.join(sweeps) or 'none'})")
    tr = Training(training)
    findings = [finding_1(probe), finding_2(probe, tr), finding_3(tr), finding_4(probe), finding_5(tr)]
    stages = read_timing(root)
    start = next((s for s in reversed(stages) if s.get("stage") == "start"), {})
    tier, tiny = start.get("tier") or "quick", bool(start.get("tiny"))
    # The map: stability_map (--claims, full tier), else the quick tier's core of it (map_core); a run whose
    # settings differ from its sweep file's is not judged (study_text.rule_map).
    map_name = stability_map.SWEEP
    map_data, map_refused = study_text.rule_map(root, map_name, tier, tiny)
    if map_data.empty and not map_refused:
        map_name = "map_core"
        map_data, map_refused = study_text.rule_map(root, map_name, tier, tiny)
    text = study_text.text_study(root, sweeps, map_data, tr, tier, tiny, map_refused)
    syn_map = convergence.short_map(map_data, map_name, tr.runs, "train_grid")
    text_map = convergence.short_map(text.map, "text_map", text.point_runs,
                                     "text_train" if text.tr is not None else "text_point")
    conv = convergence.judge(sweeps, {"syn_tr": tr, "text_tr": text.tr, "syn_map": syn_map[0],
                                      "syn_map_name": syn_map[1], "text_map": text_map[0],
                                      "text_map_name": text_map[1]}, tiny=tiny)
    # The claims', the map core's, the text, the convergence and the signal sweeps have their own sections, not
    # extras rows.
    own = CLAIMS_SWEEPS + TEXT_SWEEPS + CONVERGE_SWEEPS + SIGNAL_SWEEPS + tuple(COVERED_BY) + (escape_core.SWEEP,)
    extras = [s for s in sweeps.values() if s is not probe and s not in training and s.name not in own
              and not s.name.startswith("escape_law")]  # the opt-in law's sweeps: their results tables
    claims = list(claims_mod.evaluate_all(root, None, tier))
    branch_dir = os.path.join(root, stability_map.BRANCH_SWEEP)
    branch = stability_map.branch_sizes(runlog.sweep_runs(branch_dir)) if os.path.isdir(branch_dir) else []
    return Result(root, sweeps, probe, tr, findings, escape_table(tr), map_data, map_name, text, conv, claims,
                  "verdicts by scripts/stacklab/studies/claims.py", extras, stages,
                  tier + (" (--tiny)" if tiny else ""), branch, short_horizons(tr, text),
                  stability_map.map_facts(map_data), escape_core.judge_core(sweeps.get(escape_core.SWEEP), tiny=tiny),
                  signal_study.judge(root, signal_study.load_rules()), escape_study.from_root(root))


def findings_json(res: Result) -> dict:
    """findings.json: the result serialised."""
    tr, text = res.tr, res.text
    return {"findings": [f.to_json() for f in res.findings],
            "escape": {"margin": stats.ESCAPE_MARGIN, "unigram": tr.unigram, "points": res.escape},
            "learning_rates": {"reference": tr.ref_lr, "rates": tr.rates,
                               "best": [{"wiring": w, "depth": d, "learning_rate": tr.best(w, d)}
                                        for w in GRID_WIRINGS for d in tr.depths if tr.best(w, d) is not None]},
            "points": [{"wiring": w, "depth": d, "learning_rate": lr, "sweep": runs[0].sweep_name,
                        "seeds": [stats.seed_of(r) for r in runs],
                        "final_val_loss": tr.summaries[(w, d, lr)]}
                       for (w, d, lr), runs in sorted(tr.pts.items(),
                                                      key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0))],
            "excluded": [{"sweep": n, "id": rid, "reason": why} for n, rid, why in res.excluded],
            "claims": [asdict(c) for c in res.claims],
            "stability_map": {"source": res.map.source, "cells": stability_map.cells_json(res.map)},
            "pre_post": [vars(text.p_syn), vars(text.p_text)],
            "text": {"criterion": vars(text.crit), "findings": [f.to_json() for f in text.findings],
                     "stability_map": {"source": text.map.source, "cells": stability_map.cells_json(text.map)},
                     "refused": rules_check.refused_json(text.refused)},
            "convergence": convergence.findings_json(res.conv),
            "escape_law_core": escape_core.core_json(res.law_core or escape_core.Core(False)),
            "signal": signal_text.findings_json(res.signal or signal_study.Judged({}, {}, [])),
            "escape_law": law_json(res.law)}


def law_json(st) -> dict:
    """findings.json's "escape_law": the opt-in law judged from the study folder's run folders
    (escape_study.study_json), or not run."""
    if st is None:
        return {"present": False, "verdict": "not run", "how": escape_core.COMMAND_FULL,
                "rules": escape_core.RULES_FILE}
    return {"present": True, "rules": escape_core.RULES_FILE, **escape_study.study_json(st)}
