"""The escape law's core judged (issue 45, part 5): the default tier's sweep escape_law_core, per
wiring (each at the one rate it holds across depths, configs/experiments/escape_law_rules.json's
budget.core) the escape step of every seed at every depth, the censored runs, and the law fitted by
escape_law.fit_all when law.min_escaped_depths (3) depths have a run that escaped; with fewer, "no
fit" and, as the rules say, the censored depths bound the growth from below. A fit gives each form's
AIC, the winner by the rules' 2-unit threshold (or "not told apart"), the prediction at the rules'
depths and the falsifier at L = 8 / 22000 (the core's rates are the falsifier's).

    core = judge_core(sweep)            # sweep: report.Sweep of escape_law_core, or None
    core_json(core)                     # findings.json's "escape_law_core"
Not here: the fit (escape_law.py), the runs as intervals (escape_results.py), the text (report/law.py).
"""
import json
import math
from dataclasses import dataclass, field

from stacklab.studies.escape import fit as law
from stacklab.studies.escape import tables as er
from stacklab.studies import rules_check
from stacklab.studies import stats
from stacklab.paths import in_root

SWEEP = "escape_law_core"
RULES_FILE = "configs/experiments/escape_law_rules.json"
RULES_PATH = in_root(RULES_FILE)
COMMAND_FULL = "stacklab sweep configs/experiments/escape_law_h0.json (then _h1, _h2 with --on-change extend)"


def load_rules(path=None) -> dict:
    with open(path or RULES_PATH, encoding="utf-8") as f:
        return json.load(f)


def fixed_settings(rules: dict, sweep: str = SWEEP, tiny: bool = False) -> list:
    """What the rules fix for a run of one of the law's sweeps (rules_check): its sweep files (escape_law:
    every stage's), and the rules' own depths, rates, seeds (the core's seeds.core) and escape margin
    (train.stop_below_unigram); for the core also its horizon H0. A --tiny study ran the files scaled down:
    its runs are held to those."""
    alts = rules_check.settings(sweep, tiny=tiny)
    if tiny:
        return alts
    own = {"model.n_layer": rules["depths"], "optim.learning_rate": rules["rates"],
           "train.seed": rules["seeds"]["core" if sweep == SWEEP else "runs"],
           "train.stop_below_unigram": [rules["escaped"]["margin"]]}
    if sweep == SWEEP:
        own["train.max_iters"] = [rules["horizons"]["H0"]]
    if sweep.endswith("_probe"):  # a probe sweep (escape_law_probe, escape_law_attn_probe): its model only
        own = {"model.n_layer": rules["depths"]}
    return rules_check.narrow(alts, own)


@dataclass
class Wiring:
    """One wiring of the core at its rate: every seed's escape step per depth and the law's read."""
    wiring: str
    formula: str
    rate: float
    seeds: dict          # {depth: [(seed, escape step or None, last eval step)]}, seeds ascending
    obs: list            # [escape_law.Obs], the runs pooled over depths (the fit's data)
    verdict: str         # "fitted" | "no fit"
    why: str             # the reason in words ("fewer than 3 depths escaped: no law read")
    fits: dict = field(default_factory=dict)         # {form: escape_law.FormFit}
    best: str = None                                 # the winning form; None: not told apart or no fit
    delta_aic: dict = field(default_factory=dict)    # {form: AIC - lowest}
    predictions: dict = field(default_factory=dict)  # {form: {depth: (median, lo, hi)}}
    falsifier: object = None                         # escape_law.Falsifier of the best (else the lowest-AIC) form
    bounds: list = field(default_factory=list)       # [{depth, horizon, from, factor_above, p_above}]
    left_out: dict = field(default_factory=dict)     # {depth: [(seed, why)]}: its runs there not judged

    @property
    def escaped_depths(self) -> list:
        return sorted(d for d, ss in self.seeds.items() if any(s is not None for _, s, _ in ss))

    @property
    def n_censored(self) -> int:
        return sum(s is None for ss in self.seeds.values() for _, s, _ in ss)

    def median(self, depth):
        """(median escape step over seeds or None when the median is censored, the longest last eval)."""
        return stats.median_escape([(s, last) for _, s, last in self.seeds.get(depth, [])])


@dataclass
class Core:
    present: bool
    wirings: list = field(default_factory=list)   # [Wiring] in the sweep's variant order
    runs: int = 0                                 # finished runs read
    excluded: list = field(default_factory=list)  # [(run id, why)]
    horizon: int = None                           # train.max_iters of the runs
    margin: float = None
    min_depths: int = 3
    run_seconds: float = None                     # the runs' summary.json wall_seconds added up
    refused: list = field(default_factory=list)   # [(sweep, run id, [rules_check.Difference])]: not judged


def _bounds(wiring_seeds) -> list:
    """Lower bounds on the growth beside each depth whose median is censored, from the deepest shallower
    depth whose median escaped (as convergence.growth_fit gives them)."""
    meds = {d: stats.median_escape([(s, last) for _, s, last in ss]) for d, ss in wiring_seeds.items()}
    out = []
    for d in sorted(meds):
        med, h = meds[d]
        below = [(d0, m0) for d0, (m0, _) in sorted(meds.items()) if d0 < d and m0]
        if med is not None or h is None or not below:
            continue
        d0, s0 = below[-1]
        if h <= s0:  # a depth stopped before the shallower one's median escape bounds nothing
            continue
        out.append({"depth": d, "horizon": h, "from": d0, "factor_above": (h / s0) ** (1 / (d - d0)),
                    "p_above": math.log(h / s0) / math.log(d / d0)})
    return out


def read_wiring(w, formula, rate, runs, rules) -> Wiring:
    margin = rules["escaped"]["margin"]
    seeds, obs = {}, []
    for r in sorted(runs, key=lambda r: (r.n_layer, stats.seed_of(r) or 0)):
        o, step, last = er.run_escape(r, margin)
        if o is None:
            continue
        seeds.setdefault(r.n_layer, []).append((stats.seed_of(r), step, last))
        obs.append(o)
    return read_points(w, formula, rate, seeds, obs, rules)


def read_points(w, formula, rate, seeds, obs, rules) -> Wiring:
    """The law's read of one wiring's runs (seeds: {depth: [(seed, escape step or None, last eval)]},
    obs: their escape_law.Obs; rate: the rate held, or {depth: rate} for the best-rate read): "no fit"
    with the growth's lower bounds under rules.law.min_escaped_depths escaped depths, else the forms
    fitted, compared, their predictions at the rules' depths and the falsifier. Used by read_wiring
    (the core, from runs) and escape_study.py (the opt-in law, from its results table)."""
    need = rules["law"]["min_escaped_depths"]
    out = Wiring(w, formula, rate, seeds, obs, "no fit", "", bounds=_bounds(seeds))
    n_esc = len(out.escaped_depths)
    if n_esc < need:
        out.why = f"fewer than {need} depths escaped ({n_esc} of {len(seeds)}): no law read"
        return out
    out.verdict = "fitted"
    out.fits = law.fit_all(obs)
    out.best, out.delta_aic = law.compare(out.fits)
    told = (f"{out.best} wins by AIC" if out.best
            else f"the forms are not told apart (AIC within {law.DELTA_AIC:g})")
    out.why = f"{n_esc} depths escaped; {told}"
    shown = [out.best] if out.best else list(out.fits)
    depths = sorted(set(seeds) | set(rules["law"]["prediction"]["depths"]))
    out.predictions = {f: {d: law.predict(obs, out.fits[f], d) for d in depths} for f in shown}
    fz = rules["law"]["falsifier"]
    if not isinstance(rate, dict) and any(math.isclose(rate, r) for r in fz["rates"]):  # held at its rates only
        lowest = out.best or min(out.fits, key=lambda f: out.fits[f].aic)
        out.falsifier = law.falsifier(out.fits[lowest], fz["depth"], fz["horizon"], fz["n_never"])
    return out


def judge_core(sweep, rules=None, tiny=False) -> Core:
    """The core judged from its Sweep (report.Sweep: usable runs and excluded ones); None or an absent
    sweep: not run. A run whose settings differ from what the rules fix (fixed_settings; `tiny`: a --tiny
    study's, scaled down) is not judged: Core.refused names it with the keys that differ."""
    if sweep is None or not getattr(sweep, "manifest", None):  # no manifest.json: never run
        return Core(False)
    rules = rules or load_rules()
    runs, refused = rules_check.split(sweep.runs, fixed_settings(rules, SWEEP, tiny), SWEEP)
    by = {}
    for r in runs:
        by.setdefault((r.wiring, stats.learning_rate(r)), []).append(r)
    wirings = [read_wiring(w, runs[0].formula.split(": ", 1)[-1], lr, runs, rules)
               for (w, lr), runs in by.items()]
    order = list(rules["wirings"])  # the rules' order: f(layernorm(x)), layernorm(f(x)), f(x)
    wirings.sort(key=lambda x: (order.index(x.wiring) if x.wiring in order else len(order), x.wiring))
    # the runs of a wiring's points its read leaves out (excluded by the sweep: diverged, failed, ...; or
    # refused: other settings), by seed at their depth, so that a depth's count says how many seeds ran
    kept = {id(r) for r in runs}
    off = [(r, why) for rid, why in sweep.excluded
           for r in [getattr(sweep, "excluded_runs", {}).get(rid)] if r is not None]
    off += [(r, f"not judged, {rules_check.keys(diffs)} differ from the rules'")  # split keeps the runs' order
            for r, (_, _, diffs) in zip([r for r in sweep.runs if id(r) not in kept], refused)]
    by_point = {(w.wiring, w.rate): w for w in wirings}
    for r, why in off:
        w = by_point.get((r.wiring, stats.learning_rate(r)))
        if w is not None:
            w.left_out.setdefault(r.n_layer, []).append((stats.seed_of(r), why))
    horizon = max(((r.config.get("train") or {}).get("max_iters") or 0 for r in runs), default=None)
    secs = [(r.summary or {}).get("wall_seconds") for r in runs]
    return Core(True, wirings, len(runs), list(sweep.excluded), horizon or None,
                rules["escaped"]["margin"], rules["law"]["min_escaped_depths"],
                sum(secs) if secs and all(isinstance(x, (int, float)) for x in secs) else None, refused)


def _num(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def core_json(core: Core) -> dict:
    """findings.json's "escape_law_core": not run, or per wiring its seeds' escape steps and the read."""
    if not core.present:
        return {"present": False, "verdict": "not run", "sweep": SWEEP, "rules": RULES_FILE}
    out = {"present": True, "sweep": SWEEP, "rules": RULES_FILE, "runs": core.runs, "horizon": core.horizon,
           "run_seconds": core.run_seconds,
           "margin": core.margin, "min_escaped_depths": core.min_depths,
           "excluded": [{"id": rid, "reason": why} for rid, why in core.excluded],
           "refused": rules_check.refused_json(core.refused), "wirings": []}
    for w in core.wirings:
        out["wirings"].append({
            "wiring": w.wiring, "formula": w.formula, "learning_rate": w.rate, "verdict": w.verdict, "why": w.why,
            "depths": [{"depth": d, "escape_steps": [{"seed": s, "step": st, "last_eval": last}
                                                     for s, st, last in w.seeds.get(d, [])],
                        "median": w.median(d)[0], "censored": sum(st is None for _, st, _ in w.seeds.get(d, [])),
                        "left_out": [{"seed": s, "reason": why} for s, why in w.left_out.get(d, [])]}
                       for d in sorted(set(w.seeds) | set(w.left_out))],
            "escaped_depths": w.escaped_depths, "censored": w.n_censored, "bounds": w.bounds,
            "fits": {f: {"theta": list(x.theta), "sigma": x.sigma, "loglik": x.loglik, "aic": x.aic,
                         "delta_aic": w.delta_aic.get(f)} for f, x in w.fits.items()},
            "best": w.best,
            "predictions": {f: [{"depth": d, "median": _num(m), "lo": _num(lo), "hi": _num(hi)}
                                for d, (m, lo, hi) in sorted(p.items())] for f, p in w.predictions.items()},
            "falsifier": None if w.falsifier is None else {
                "depth": w.falsifier.depth, "horizon": w.falsifier.horizon, "median": _num(w.falsifier.median),
                "chance_all_never": w.falsifier.chance_all_never, "fires": w.falsifier.fires}})
    return out
