"""The convergence study (issue 36), judged by configs/experiments/convergence_rules.json (fixed
before its runs): each run converged, still learning, never escaped or diverged; each point
(source, wiring, depth, rate, horizon) by its seeds' majority; the escape step of the stacks
without a residual against depth, fitted as exponential or polynomial growth with its spread over
seeds (the escape law's fit, studies/escape/fit.py, read by this study's rule: growth_fit); pre- vs
post-norm at L = 32 per init and source (rule P and which ends lower); and each short-horizon
statement beside its long verdict, reversals named (those two: convergence_short.py).
Every threshold is read from the rules file.
Not here: loading sweeps, tables and figures (the report), running anything.

    rules = load_rules()
    points = point_verdicts(runs, rules)          # [Point], one per (source, wiring, depth, lr, horizon)
    fits = escape_fits(runs, rules)               # {(source, wiring): Fit} for the stacks without a residual
    cells = pre_post(runs, rules, "synthetic")    # rule P and which ends lower, per init
"""
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field


from stacklab.studies import rules_check
from stacklab.runs import runlog
from stacklab.studies import prepost_map as stability_map
from stacklab.studies import stats
from stacklab.studies.escape import fit as law
from stacklab.studies.findings import rounding_ssr
from stacklab.runs.tier_lists import CONVERGE_SWEEPS
# pre vs post and short against long (convergence_short.py): their names stay readable here (convergence.X)
from stacklab.studies.convergence_short import (  # noqa: F401
    PrePost, compare, long_statements, post_lower, pre_post_map, short_map, short_statements, which_lower)
from stacklab.paths import in_root

RULES_PATH = in_root("configs", "experiments", "convergence_rules.json")
OUTCOMES = ("converged", "still learning", "never escaped", "diverged")
SOURCES = ("synthetic", "text")  # in the report's order
COMMAND = "bash scripts/reproduce.sh --converge"
RULES_FILE = "configs/experiments/convergence_rules.json"


def load_rules(path=None) -> dict:
    with open(path or RULES_PATH, encoding="utf-8") as f:
        return json.load(f)


def fixed_settings(rules: dict, tiny: bool = False) -> dict:
    """{sweep: what the rules fix for its runs} (rules_check): the converge sweep files, and the rules' own
    seeds and horizons (synthetic H and extend_factor x H, text its horizon). A --tiny study ran the files
    scaled down: its runs are held to those."""
    out = {}
    H = rules["horizon"]["measured"]["H"]
    for name in CONVERGE_SWEEPS:
        alts = rules_check.settings(name, tiny=tiny)
        if not tiny:
            alts = [rules_check.narrow([alt], {
                "train.seed": rules["seeds"]["runs"],
                "train.max_iters": ([rules["sources"]["text"]["horizon"]] if alt.get("data.source") == ["text"]
                                    else [H, rules["extend_factor"] * H])})[0] for alt in alts]
        out[name] = alts
    return out


# ---- what a run is ---------------------------------------------------------------------------

def source_of(run) -> str:
    """"text" for a run on a text file, else "synthetic" (configs/base.json's Markov source)."""
    return "text" if (run.config.get("data") or {}).get("source") == "text" else "synthetic"


def horizon_of(run):
    """The run's horizon: its train.max_iters, else its last eval step."""
    n = (run.config.get("train") or {}).get("max_iters")
    if n is None:
        evals = [r["step"] for r in run.records["eval"] if isinstance(r.get("step"), (int, float))]
        n = max(evals) if evals else None
    return n


def evals_of(run):
    return sorted((r["step"], r["val_loss"]) for r in run.records["eval"]
                  if r.get("val_loss") is not None and isinstance(r.get("step"), (int, float))
                  and math.isfinite(r["val_loss"]))


def last_improvement(run, fraction: float):
    """How much the best val loss so far fell over the last `fraction` of the run's last eval step N:
    min(val at steps <= (1 - fraction) N) - min(every val); None without an eval in both parts."""
    ev = evals_of(run)
    if not ev:
        return None
    n = ev[-1][0]
    before = [v for s, v in ev if s <= (1 - fraction) * n]
    if not before or n <= 0:
        return None
    return min(before) - min(v for _, v in ev)


def run_outcome(run, rules: dict) -> str | None:
    """One of OUTCOMES, or None for a run that neither finished nor diverged (not judged)."""
    if runlog.is_diverged(run):
        return "diverged"
    if not runlog.is_completed(run):
        return None
    step, _ = stats.escape_step(run, run.reference_losses.get("unigram"), rules["escaped"]["margin"])
    if step is None:
        return "never escaped"
    c = rules["converged"]
    gain = last_improvement(run, c["last_fraction"])
    return "converged" if gain is not None and gain < c["max_improvement"] else "still learning"


def majority(outcomes) -> str:
    """The outcome of more than half the judged seeds; "mixed" without one, "not judged" without any
    (every seed still running, stopped or pending)."""
    judged = [o for o in outcomes if o is not None]
    if not judged:
        return "not judged"
    top, k = Counter(judged).most_common(1)[0]
    return top if 2 * k > len(judged) else "mixed"


# ---- verdicts per point ----------------------------------------------------------------------

@dataclass
class Point:
    source: str
    wiring: str
    depth: int
    lr: float
    horizon: int
    verdict: str
    seeds: list = field(default_factory=list)  # [(seed, outcome, escape step or None, last eval step, final)]
    planned: int | None = None  # the seeds its sweeps give it (their manifests), None when unknown

    @property
    def lost(self) -> str:
        """"k of n seeds" when fewer seeds were judged than its sweeps planned (pending, running,
        stopped, failed or never started), else ""."""
        k = sum(o is not None for _, o, _, _, _ in self.seeds)
        return f"{k} of {self.planned} seeds" if self.planned is not None and k < self.planned else ""

    @property
    def counts(self) -> str:
        c = Counter(o for _, o, _, _, _ in self.seeds)
        return ", ".join(f"{c[o]} {o}" for o in OUTCOMES if c[o]) or "none judged"

    @property
    def judged(self) -> bool:
        """Some seed finished or diverged: the point says something at its horizon."""
        return any(o is not None for _, o, _, _, _ in self.seeds)

    @property
    def escape_judged(self) -> bool:
        """Some seed finished without diverging: the point says whether and when it escaped."""
        return any(o not in (None, "diverged") for _, o, _, _, _ in self.seeds)

    @property
    def finals(self):
        return [f for _, o, _, _, f in self.seeds if o not in (None, "diverged") and f is not None]


def point_key(run):
    return (source_of(run), run.wiring, run.n_layer, stats.learning_rate(run), horizon_of(run))


def planned_seeds(runs):
    """The seeds a point's sweeps give it: the sum over the sweeps its runs come from of each one's
    seed count (run.sweep_seeds, set by the report's reader), None when a run does not say."""
    per_sweep = {}
    for r in runs:
        n = getattr(r, "sweep_seeds", None)
        if n is None:
            return None
        per_sweep[getattr(r, "sweep_name", None)] = n
    return sum(per_sweep.values())


def same_experiment(run) -> str:
    """A run's config without what names it (train.name, train.out_dir): two runs with the same are one
    experiment run twice."""
    cfg = json.loads(json.dumps(run.config))
    for k in ("name", "out_dir"):
        (cfg.get("train") or {}).pop(k, None)
    return json.dumps(cfg, sort_keys=True)


def one_per_seed(rs: list) -> list:
    """A point's runs with each seed once. The --tiny study caps depths at 2, so its L = 8 and L = 32
    variants become copies of its L = 2 run: one experiment, counted once (a finished copy kept
    before an unfinished one). Two runs of one seed at one point under different configs are refused,
    named: counted twice they would be two seeds."""
    by = defaultdict(list)
    for r in rs:
        by[stats.seed_of(r)].append(r)
    out = []
    for seed, same in by.items():
        if seed is None:
            out += same
            continue
        same.sort(key=lambda r: (not (runlog.is_completed(r) or runlog.is_diverged(r)), r.path))
        for r in same[1:]:
            if same_experiment(r) != same_experiment(same[0]):
                raise ValueError(f"convergence: {same[0].path} and {r.path} are both seed {seed} of the point "
                                 f"{point_key(r)} but differ in config: a seed counts once, so one of them is "
                                 "not this point's (move it out of the study folder, or give it another seed)")
        out.append(same[0])
    return out


def point_verdicts(runs, rules: dict, init: str = "scaled") -> list:
    """[Point] over the training runs under `init` (the study's; the pre- vs post-norm cells judge
    xavier), in source, wiring, depth, horizon order; each seed once (one_per_seed)."""
    groups = defaultdict(list)
    for r in runs:
        if not r.is_probe and (r.config.get("model") or {}).get("init", init) == init:
            groups[point_key(r)].append(r)
    out = []
    for (src, w, d, lr, h), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0,
                                                                         kv[0][4] or 0)):
        seeds = []
        rs = one_per_seed(rs)
        for r in sorted(rs, key=lambda r: stats.seed_of(r) or 0):
            step, last = stats.escape_step(r, r.reference_losses.get("unigram"), rules["escaped"]["margin"])
            seeds.append((stats.seed_of(r), run_outcome(r, rules), step, last, r.final_val_loss))
        out.append(Point(src, w, d, lr, h, majority(o for _, o, _, _, _ in seeds), seeds, planned_seeds(rs)))
    return out


# ---- the escape step against depth -----------------------------------------------------------

def growth_fit(points, min_ratio: float) -> dict:
    """The escape-fit rule on [(depth, escape step or None, horizon)]: the verdict, the exponential
    fit ln s = a + b L (factor exp(b) per layer), the polynomial one ln s = c + p ln L, and for a depth
    that never escaped the lower bounds its censoring gives beside the deepest shallower escaped one.
    No points (no depth has a judged seed): "not judged", never "never escaped".

    The fits are the escape law's own (studies/escape/fit.py: its "exponential" and "power" forms, by
    fit_points): the convergence rules fit the escaped depths' steps as exact points, where the law's
    interval-censored likelihood is least squares; the depths that never escaped enter as the bounds
    here, not the fit. The verdict is this rules file's read of those fits: the SSRs' ratio against
    min_ratio (with equal n, a likelihood ratio; the law's own rule, AIC by 2, is escape/'s)."""
    pts = sorted(points)
    esc = [(d, s) for d, s, _ in pts if s is not None and s > 0]
    out = {"escaped": len(esc), "depths": [d for d, _, _ in pts], "factor": None, "p": None,
           "ssr_exp": None, "ssr_poly": None, "exact_exp": None, "exact_poly": None, "intercept_exp": None,
           "intercept_poly": None, "bounds": []}
    for d, s, h in pts:
        if s is not None or h is None:
            continue
        below = [(d0, s0) for d0, s0 in esc if d0 < d]
        if below:
            d0, s0 = below[-1]
            out["bounds"].append({"depth": d, "horizon": h, "from": d0, "factor_above": (h / s0) ** (1 / (d - d0)),
                                  "p_above": math.log(h / s0) / math.log(d / d0)})
    if len(esc) >= 2:
        ds, ls = [d for d, _ in esc], [math.log(s) for _, s in esc]
        e, q = law.fit_points(ds, ls, "exponential"), law.fit_points(ds, ls, "power")  # one point a depth
        level = rounding_ssr(ls)  # an SSR at or below it is an exact fit: rounding, not a residual
        out.update(factor=math.exp(e.theta[1]), p=q.theta[1], ssr_exp=e.ssr, ssr_poly=q.ssr, exact_exp=e.ssr <= level,
                   exact_poly=q.ssr <= level, intercept_exp=e.theta[0], intercept_poly=q.theta[0])
    if not pts:
        out["verdict"] = "not judged"
    elif not esc:
        out["verdict"] = "never escaped"
    elif len(esc) < 2:
        out["verdict"] = "no fit"
    elif len(esc) == 2:
        out["verdict"] = "grows, form not told apart (2 depths)" if esc[1][1] > esc[0][1] else "no growth"
    else:
        # An exact fit's SSR counts as 0: its digits are rounding, and differ between CPUs' kernels.
        s_exp, s_poly = (0.0 if out["exact_exp"] else out["ssr_exp"]), (0.0 if out["exact_poly"] else out["ssr_poly"])
        exp_better = s_exp <= s_poly
        best, other = (s_exp, s_poly) if exp_better else (s_poly, s_exp)
        slope = math.log(out["factor"]) if exp_better else out["p"]
        if slope <= 0 or (out["exact_exp"] and out["exact_poly"]):  # both exact: every depth escaped alike
            out["verdict"] = "no growth"
        elif best <= min_ratio * other:
            out["verdict"] = "exponential" if exp_better else "polynomial"
        else:
            out["verdict"] = "not told apart"
    return out


@dataclass
class Fit:
    source: str
    wiring: str
    rows: list          # [(depth, lr, horizon, [escape step or None per seed], median or None)]
    median_fit: dict
    seed_fits: dict     # seed -> growth_fit of that seed's own escape steps
    not_judged: list = field(default_factory=list)  # [(depth, longest horizon)]: no seed finished at any horizon


def escape_fits(runs, rules: dict) -> dict:
    """{(source, wiring): Fit} for the wirings of escape_fit.wirings, each depth at its longest horizon
    with a seed that finished without diverging (the synthetic L = 8 and 32 stacks at 4H, L = 2 at H;
    while the extension runs, or where every seed there diverged, H), scaled init. A depth with no
    such seed at any horizon is not judged (Fit.not_judged), never "never escaped"."""
    rule = rules["escape_fit"]
    longest, unjudged = {}, {}
    for pt in point_verdicts(runs, rules):
        if pt.wiring not in rule["wirings"]:
            continue
        key = (pt.source, pt.wiring, pt.depth)
        best = longest if pt.escape_judged else unjudged
        if key not in best or (pt.horizon or 0) > (best[key].horizon or 0):
            best[key] = pt
    out = {}
    for src, w in sorted({(s, w) for s, w, _ in list(longest) + list(unjudged)}):
        pts = [longest[k] for k in sorted(k for k in longest if k[:2] == (src, w))]
        not_judged = [(k[2], unjudged[k].horizon) for k in sorted(unjudged) if k[:2] == (src, w) and k not in longest]
        rows, per_seed = [], defaultdict(list)
        for pt in pts:
            judged = [(sd, o, s, last) for sd, o, s, last, _ in pt.seeds if o is not None and o != "diverged"]
            med, _ = stats.median_escape([(s, last) for _, _, s, last in judged])
            rows.append((pt.depth, pt.lr, pt.horizon, [s for _, _, s, _ in judged], med))
            for sd, _, s, last in judged:
                per_seed[sd].append((pt.depth, s, last))
        med_fit = growth_fit([(d, m, h) for d, _, h, _, m in rows], rule["min_ratio"])
        seed_fits = {sd: growth_fit(p, rule["min_ratio"])
                     for sd, p in sorted(per_seed.items(), key=lambda kv: kv[0] or 0)}
        out[(src, w)] = Fit(src, w, rows, med_fit, seed_fits, not_judged)
    return out


def pre_post(runs, rules: dict, source: str) -> PrePost:
    """Rule P at convergence (study_text.pre_post on the cells named here) and which ends lower per init."""
    return pre_post_map(stability_map.build([r for r in runs if not r.is_probe and source_of(r) == source]),
                        rules, source)


# ---- the study: the converge sweeps of an output folder judged ------------------------------------

@dataclass
class Study:
    """The convergence runs judged, and the short verdicts set beside them."""
    rules: dict
    sweeps: list        # the converge sweeps OUT holds
    runs: list          # every run they list that was loaded (finished, diverged or not)
    points: list        # [convergence.Point]
    fits: dict          # (source, wiring) -> convergence.Fit
    pp: dict            # source -> convergence.PrePost
    short_pp: dict      # source -> convergence.PrePost on the short horizon's map
    short: dict         # (statement id, source) -> short verdict
    short_from: dict    # (statement id, source) -> where the short verdict was read
    rows: list          # convergence.compare's rows
    refused: list = field(default_factory=list)  # [(sweep, run id, [rules_check.Difference])]: not judged

    @property
    def present(self) -> bool:
        return bool(self.points) or bool(self.refused)

    @property
    def sources(self) -> list:
        return [s for s in SOURCES if any(p.source == s for p in self.points)]

    @property
    def reversals(self) -> list:
        return [r for r in self.rows if r[5]]


def sweep_runs(sweep) -> list:
    """A report.Sweep's usable runs and its excluded ones that were loaded (diverged, unfinished):
    the convergence rules judge a diverged run, and count an unfinished one as not judged. Each is
    tagged with its sweep and the sweep's seed count (its manifest's), so that a point says "k of
    n seeds" when seeds are missing."""
    seeds = {s for e in sweep.manifest.get("runs", []) if isinstance(e, dict)
             for s in (e.get("seeds") or []) if isinstance(e.get("seeds"), list)}
    runs = list(sweep.runs) + [r for r in getattr(sweep, "excluded_runs", {}).values() if r.config]
    for r in runs:
        r.sweep_name, r.sweep_seeds = sweep.name, len(seeds) or None
    return runs


def judge(sweeps: dict, short_args: dict, tiny: bool = False) -> Study:
    """The convergence study from the converge sweeps among `sweeps` (name -> report.Sweep), and
    the short statements from `short_args` (short_statements' keyword arguments but rules). A run
    whose settings differ from what the rules fix (fixed_settings; `tiny`: a --tiny study's, scaled
    down) is not judged: Study.refused names it with the keys that differ, and its point counts one
    seed fewer ("k of n seeds")."""
    rules = load_rules()
    present = [n for n in CONVERGE_SWEEPS if n in sweeps]
    fixed = fixed_settings(rules, tiny) if present else {}
    runs, refused = [], []
    for n in present:
        kept, off = rules_check.split(sweep_runs(sweeps[n]), fixed[n], n)
        runs += kept
        refused += off
    points = point_verdicts(runs, rules)
    fits = escape_fits(runs, rules)
    pp = {src: pre_post(runs, rules, src) for src in sorted({source_of(r) for r in runs})}
    short, where, short_pp = short_statements(rules=rules, **short_args)
    rows = compare(short, long_statements(points, pp, rules), rules) if points else []
    return Study(rules, present, runs, points, fits, pp, short_pp, short, where, rows, refused)


def findings_json(study: Study) -> dict:
    """findings.json's "convergence": every point, fit, pre/post cell and short/long row."""
    if not study.present:
        return {"present": False, "how": COMMAND, "rules": RULES_FILE}
    return {
        "present": True, "rules": RULES_FILE, "fixed_on": study.rules["fixed_on"], "sweeps": study.sweeps,
        "points": [{"source": p.source, "wiring": p.wiring, "depth": p.depth, "learning_rate": p.lr,
                    "horizon": p.horizon, "verdict": p.verdict, "counts": p.counts, "seeds_planned": p.planned,
                    "final_val_loss": stats.summarize_loss(p.finals),
                    "seeds": [{"seed": sd, "outcome": o, "escape_step": s, "last_eval_step": last, "final_val_loss": f}
                              for sd, o, s, last, f in p.seeds]} for p in study.points],
        "escape_fits": [{"source": f.source, "wiring": f.wiring, "verdict": f.median_fit["verdict"],
                         "rows": [{"depth": d, "learning_rate": lr, "horizon": h, "escape_steps": ss, "median": m}
                                  for d, lr, h, ss, m in f.rows],
                         "median_fit": f.median_fit, "seed_fits": {str(k): v for k, v in f.seed_fits.items()},
                         "not_judged": [{"depth": d, "horizon": h} for d, h in f.not_judged]}
                        for f in study.fits.values()],
        "pre_post": [vars(p) for p in study.pp.values()],
        "pre_post_short": [vars(p) for p in study.short_pp.values()],
        "short_vs_long": [{"id": sid, "source": src, "statement": text, "short": sv,
                           "short_from": study.short_from.get((sid, src)), "long": lv, "reversal": note}
                          for sid, src, text, sv, lv, note in study.rows],
        "reversals": [{"id": r[0], "source": r[1], "note": r[5]} for r in study.reversals],
        "refused": rules_check.refused_json(study.refused),
    }
