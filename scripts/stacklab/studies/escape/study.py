"""Issue 45's escape law, the opt-in study, judged (configs/experiments/escape_law_rules.json): per
wiring without a residual, every (depth, rate) cell's seeds and escape steps, the law read at each
depth's best rate and at each rate held across depths (default_tier.read_points: the fit, its forms,
predictions at 8, 32 and 96, the falsifier), the rank and gradient ratios at init beside each depth,
the escape step against -ln(rank ratio) where a read is fitted, the second knob, and the scaled-init
arm beside the normal runs. From the committed tables (from_tables: a lost machine loses no verdict)
or a study folder's runs (from_root: the report's way in, judged once by judge.py into Result.law);
the deep runs, the second path and the pooled rank line are checks.py's:

    st = from_tables("docs/results")          # or judge(read_table(...), rules, ...), from_root(root)
    study_json(st)                            # the judgement as data (findings.json's "escape_law")
    python3 -m stacklab.studies.escape.study [--results docs/results] [--figure F.png] [--json F.json]
    python3 -m stacklab.studies.escape.study --write-probe runs/deep_stacking/escape_law_probe --results docs/results
The command prints report/law_study.markdown (this module draws and writes nothing) and exits 0 when
every read is made, 3 when runs are missing or a table is absent, 2 on a table it cannot read.
Not here: the fit (fit.py), the tables (rows.py, tables.py), the core (default_tier.py), the text and
the figure (report/law_study.py).
"""
import math
import os
import sys
from dataclasses import dataclass, field

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab.studies.escape import tables as er
from stacklab.studies import rules_check
from stacklab.runs import runlog
# the tables and the checks, split out of this module: their names stay readable here (escape_study.X)
from stacklab.studies.escape.rows import (  # noqa: F401
    ATTN_PROBE_SWEEP, ATTN_SWEEP, ATTN_TABLE, DEEP_SWEEP, DEEP_TABLE, PROBE_COLUMNS, PROBE_FIELDS, PROBE_SWEEP,
    PROBE_SWEEPS, PROBE_TABLE, SCALED_TABLE, SECOND_PATH_SWEEP, SECOND_PATH_TABLE, STAGE0, SWEEP_FILES, TABLE, Row,
    _cells, _obs, best_rates, eval_interval, named_runs, probe_rows, read_probe_table, read_table, row_of,
    write_probe_table)
from stacklab.studies.escape.checks import (  # noqa: F401
    DeepTest, PathCheck, PooledRank, Robustness, deep_tests, path_checks, pooled_rank, pooled_why, robustness,
    supersede)

# The rules' law.reads: "every rate is fitted where 3 or more depths have a run" (a held read is
# made); law.fit_when then says whether it is fitted (3 escaped depths) or "no fit".
MIN_DEPTHS_RUN = 3
# The rules' second_knob.when: "fewer than 4 depths escape within the cap for a wiring at its best rates".
KNOB_DEPTHS = 4


# ---- the judgement ------------------------------------------------------------------------------

@dataclass
class WiringLaw:
    wiring: str
    formula: str
    cells: dict                    # {(depth, rate): [(seed, escape step or None, last eval step)]}
    obs: dict                      # {(depth, rate): [escape_law.Obs]}
    best: ec.Wiring = None         # the read at each depth's best rate (rate: {depth: rate})
    held: dict = field(default_factory=dict)     # {rate: ec.Wiring}, every rate with runs at 3+ depths
    probe: dict = field(default_factory=dict)    # {depth: (rank ratio, gradient ratio)}
    rank_fit: object = None        # escape_law.FormFit of ln step on -ln(rank ratio), at the best rates
    rank_delta: dict = field(default_factory=dict)  # {form: AIC - lowest} over the depth forms and "linear"
    rank_best: str = None          # the winner of the depth forms and "linear" by the rules' rule, or None
    knob: str = ""                 # "applies" | "does not apply" | "open" | "pending": the rules' second knob
    knob_why: str = ""
    named: dict = field(default_factory=dict)    # {(depth, rate): seeds the sweeps name}, run or not
    pending: dict = field(default_factory=dict)  # {(depth, rate): "3 of 5 seeds"}: runs not in the tables
    rank_why: str = ""             # why the rank read is not made ("" when it is)
    robust: object = None          # checks.Robustness of the best-rate read at the rules' deepest prediction

    @property
    def depths(self) -> list:
        return sorted({d for d, _ in self.cells} | {d for d, _ in self.named})

    @property
    def rates(self) -> list:
        return sorted({r for _, r in self.cells} | {r for _, r in self.named})

    def pending_at(self, rate=None) -> list:
        """["L = 4 at 3e-05: 3 of 5 seeds"]: the points whose runs are not all in the tables, at `rate` (None:
        every rate, as the best-rate read may take any). A read over them is pending, not a verdict."""
        return [f"L = {d} at {r:g}: {why}" for (d, r), why in sorted(self.pending.items()) if rate in (None, r)]


@dataclass
class Study:
    wirings: list                  # [WiringLaw] in the rules' order
    runs: int
    excluded: list                 # [(run, why)]: diverged runs (no escape interval), runs of another init
    reached: dict                  # {depth: the longest run's steps}: the stage each depth reached
    scaled: list = field(default_factory=list)   # [(wiring, depth, rate, normal seeds, scaled seeds)]
    cpu_model: str = ""
    commits: list = field(default_factory=list)
    margin: float = 0.1
    superseded: list = field(default_factory=list)  # run ids replaced by DEEP_SWEEP's longer runs
    disagree: list = field(default_factory=list)    # deeper runs whose first steps did not repeat their run
    tests: list = field(default_factory=list)       # [DeepTest]: the committed predictions against the deep runs
    pooled: list = field(default_factory=list)      # [PooledRank]: the second knob's pooled rank line
    paths: list = field(default_factory=list)       # [PathCheck]: the rules' second_path
    refused: list = field(default_factory=list)     # [(sweep, run, [rules_check.Difference])]: off the rules
    missing: int = 0                                # runs the sweeps name that no table holds
    not_made: list = field(default_factory=list)    # [(read, why)]: reads the tables cannot give
    absent: list = field(default_factory=list)      # tables not read (main: the files not in --results)
    rules: dict = field(default_factory=dict)       # the rules it was judged by (the text reads its wirings)

    @property
    def complete(self) -> bool:
        """Every read the rules ask for made, none pending: no run missing, no read not made."""
        return not self.missing and not self.not_made and not any(t.pending for t in self.tests) and \
            not any(c.pending for c in self.paths)


def caps(rules) -> dict:
    """{depth: the step cap}: the rules' horizons.cap, or horizons.decided.cap where a decision made
    before a stage's runs changed it."""
    h = rules["horizons"]
    cap = (h.get("decided") or {}).get("cap") or h["cap"]
    return {int(d): int(s) for d, s in cap.items()}


def second_knob(wl: WiringLaw, cap: dict) -> tuple:
    """(verdict, why): the rules' second knob applies to a wiring when fewer than KNOB_DEPTHS depths
    escape within their caps at its best rates; "open" while depths not yet at their cap could still
    make up the count."""
    escaped = wl.best.escaped_depths
    reached = {d: max((h for (dd, _), c in wl.cells.items() if dd == d for _, _, h in c), default=0)
               for d in wl.depths}
    short = [d for d in wl.depths if d not in escaped and d in cap and reached[d] < cap[d]]
    have = f"escapes at {len(escaped)} depth{'s' * (len(escaped) != 1)}" + (
        f" (L = {', '.join(map(str, escaped))})" if escaped else "")
    if wl.pending:  # the best rates and their escapes may change with the runs not in the tables
        return "pending", f"{have} so far; runs missing at {len(wl.pending)} point{'s' * (len(wl.pending) != 1)}"
    if len(escaped) >= KNOB_DEPTHS:
        return "does not apply", have
    if len(escaped) + len(short) < KNOB_DEPTHS:
        return "applies", f"{have}; every other depth ran to its cap"
    left = ", ".join(f"L = {d} reached {reached[d]} of its cap {cap[d]}" for d in short)
    return "open", f"{have}; {left}"


def stacks(rules) -> list:
    """[(wiring id, formula)]: the rules' wirings, then each one's attention-only stack (the second knob's,
    escape_results.ATTN_ONLY), in that order."""
    ws = list(rules["wirings"].items())
    return ws + [(w + er.ATTN_ONLY, f"{f}, attention-only blocks") for w, f in ws]


def judge(rows, rules, probe=None, scaled_rows=(), interval=None, deep_rows=(), second_rows=(), named=None,
          absent=None) -> Study:
    """The study judged from its table rows (read_table), the probe table ({(wiring, depth): (rank, grad)}),
    the scaled arm's rows, the longer runs that supersede some rows (DEEP_SWEEP's) and the second
    path's runs (SECOND_PATH_SWEEP's, read in path_checks). named: {sweep: {(wiring, depth, rate, init):
    seeds}} the sweep files name (named_runs) for the sweeps read: a point with fewer of them in the tables
    is pending ("3 of 5 seeds"), and so is every read over it (in the text and the JSON); without it each
    point in the tables is held to the rules' seeds.runs. absent: {sweep: "escape_law_probe.csv absent"},
    the tables not found, named in the reads they stop."""
    interval = interval or eval_interval()
    named, absent = named or {}, absent or {}
    rows, superseded, disagree = supersede(list(rows), list(deep_rows))
    fit_init, arm = rules["init"]["fit"], rules["init"]["second_arm"]
    excluded = [(r.run, "diverged: no escape interval") for r in list(rows) + list(scaled_rows) if r.diverged]
    excluded += [(r.run, f"init {r.init}, not the fit's {fit_init}") for r in rows
                 if not r.diverged and r.init != fit_init]
    excluded += [(r.run, f"init {r.init}, not the second arm's {arm['init']}") for r in scaled_rows
                 if not r.diverged and r.init != arm["init"]]
    usable = [r for r in rows if not r.diverged and r.init == fit_init]
    reached = {}
    for r in usable:
        reached[r.depth] = max(reached.get(r.depth, 0), r.steps)
    # the seeds each point of the main grid should hold, those it holds (a diverged run is done), and the
    # deep sweep's likewise: a point short of either is pending
    want, have, deep_want, deep_have = {}, {}, named.get(DEEP_SWEEP, {}), {}
    for s in ("escape_law", ATTN_SWEEP):
        for p, seeds in named.get(s, {}).items():
            want.setdefault(p, set()).update(seeds)
    for src, got in ((rows, have), (deep_rows, deep_have)):
        for r in src:
            got.setdefault((r.wiring, r.depth, r.rate, r.init), set()).add(r.seed)
    for p in have:
        want.setdefault(p, set(rules["seeds"]["runs"]))
    missing = sum(len(s - have.get(p, set())) for p, s in want.items())
    missing += sum(len(s - deep_have.get(p, set())) for p, s in deep_want.items())
    wirings, not_made = [], []
    for w, formula in stacks(rules):
        mine = [r for r in usable if r.wiring == w]
        wanted = {(p[1], p[2]): s for p, s in want.items() if p[0] == w and p[3] == fit_init}
        if not mine and not wanted:
            continue
        cells, obs = _cells(mine, interval)
        wl = WiringLaw(w, formula, cells, obs, named={k: len(s) for k, s in wanted.items()})
        for (d, lr), s in sorted(wanted.items()):
            p = (w, d, lr, fit_init)
            gaps = [f"{len(s & have.get(p, set()))} of {len(s)} seeds"] if s - have.get(p, set()) else []
            dw = deep_want.get(p, set())
            if dw - deep_have.get(p, set()):
                gaps.append(f"{len(dw & deep_have.get(p, set()))} of {len(dw)} runs of {DEEP_SWEEP}")
            if gaps:
                wl.pending[(d, lr)] = "; ".join(gaps)
        chosen = best_rates(obs)
        seeds = {d: cells[(d, lr)] for d, lr in chosen.items()}
        wl.best = ec.read_points(w, formula, chosen, seeds, [o for d, lr in chosen.items() for o in obs[(d, lr)]],
                                 rules)
        wl.robust = robustness(wl.best, max(rules["law"]["prediction"]["depths"]))
        for lr in wl.rates:
            at = {d: cells[(d, r)] for d, r in cells if r == lr}
            if len(at) >= MIN_DEPTHS_RUN:
                wl.held[lr] = ec.read_points(w, formula, lr, at, [o for (d, r), os_ in obs.items() if r == lr
                                                                  for o in os_], rules)
        wl.probe = {d: v for (pw, d), v in (probe or {}).items() if pw == w}
        ranks = {d: v[0] for d, v in wl.probe.items() if v[0]}
        # the rules' second_knob.rank: a ratio at every depth of the fit, so that the linear form and
        # the depth forms are fitted to the same runs and compared by the same 2-unit rule
        no_ratio = [d for d in sorted(wl.best.seeds) if d not in ranks]
        if wl.best.verdict != "fitted":
            wl.rank_why = "the read at the best rates is not fitted, " + wl.best.why.split(":")[0]
        elif no_ratio:
            sweep = ATTN_PROBE_SWEEP if w.endswith(er.ATTN_ONLY) else PROBE_SWEEP
            wl.rank_why = (f"no rank ratio at init at L = {', '.join(map(str, no_ratio))} ("
                           + absent.get(sweep, f"not in {sweep}'s table") + ")")
            not_made.append((f"`{formula}` against x = -ln(rank ratio at init)", wl.rank_why))
        else:
            wl.rank_fit = law.fit_rank(wl.best.obs, ranks)
            wl.rank_best, wl.rank_delta = law.compare({**wl.best.fits, "linear": wl.rank_fit})
        if not w.endswith(er.ATTN_ONLY):  # an attention-only stack is the knob itself
            wl.knob, wl.knob_why = second_knob(wl, caps(rules))
        wirings.append(wl)
    by_id = {wl.wiring: wl for wl in wirings}
    pooled, need = [], rules["law"]["min_escaped_depths"]
    for wl in wirings:
        if wl.wiring.endswith(er.ATTN_ONLY):
            continue
        attn, what = by_id.get(wl.wiring + er.ATTN_ONLY), f"the second knob's read of `{wl.formula}`"
        if attn is None:  # the knob's runs are due where it applies
            if wl.knob == "applies":
                not_made.append((what, "no attention-only runs in the tables ("
                                 + absent.get(ATTN_SWEEP, f"not in {ATTN_TABLE}") + ")"))
            continue
        p = pooled_rank(wl, attn, need)
        if p is not None:
            pooled.append(p)
        elif any(not (x.probe.get(d) or (None,))[0] for x in (wl, attn) for d in x.best.seeds):
            not_made.append((what, pooled_why(wl, attn, need, absent)))
    scaled = []
    for wl in wirings:
        for d in arm["depths"]:
            for lr in arm["rates"]:
                sc = [x for x in scaled_rows if x.wiring == wl.wiring and x.depth == d and x.rate == lr
                      and x.init == arm["init"] and not x.diverged]
                if sc:
                    scaled.append((wl.wiring, d, lr, wl.cells.get((d, lr), []),
                                   [(x.seed, x.escape, x.steps) for x in sorted(sc, key=lambda x: x.seed)]))
    cpus = sorted({r.cpu_model for r in rows if r.cpu_model})
    commits = sorted({r.commit[:7] for r in rows if r.commit})
    return Study(wirings, len(rows), excluded, reached, scaled, ", ".join(cpus), commits,
                 rules["escaped"]["margin"], superseded, disagree,
                 deep_tests(wirings, list(deep_rows), rules, deep_want), pooled,
                 path_checks(wirings, list(second_rows), rules, interval, named.get(SECOND_PATH_SWEEP)),
                 missing=missing, not_made=not_made, absent=sorted(set(absent.values())), rules=rules)


def from_root(root, rules=None):
    """The study judged from a study folder's run folders (root/escape_law and, where they were run,
    the scaled arm, the deep runs, the second knob's, the second path's and the probe sweeps: the
    report's way in), or None when root holds no escape_law sweep."""
    sweep = os.path.join(root, "escape_law")
    if not os.path.isfile(os.path.join(sweep, "manifest.json")):
        return None
    rules = rules or ec.load_rules()
    margin = rules["escaped"]["margin"]
    cpu, commit = er.study_machine(root)
    tiny, refused = rules_check.is_tiny(root), []  # runs off the rules (escape_core.fixed_settings): not judged

    def present(name):
        return os.path.isfile(os.path.join(root, name, "manifest.json"))

    def rows_of(name):  # the sweep's rows of the rules' runs, none when it was not run
        if not present(name):
            return []
        d, fixed = os.path.join(root, name), ec.fixed_settings(rules, name, tiny)
        off = [(name, e.id, diffs) for e, run in er.finished_runs(d)
               for diffs in [rules_check.differences(run.config, fixed)] if diffs]
        refused.extend(off)
        return [row_of(r) for r in er.rows_of(d, margin, cpu, commit) if r["run"] not in {x[1] for x in off}]
    rows = rows_of("escape_law") + rows_of(ATTN_SWEEP)
    scaled, deep, second = rows_of("escape_law_scaled"), rows_of(DEEP_SWEEP), rows_of(SECOND_PATH_SWEEP)
    probe = None
    for name in filter(present, PROBE_SWEEPS):
        probe_dir, fixed, bad = os.path.join(root, name), ec.fixed_settings(rules, name, tiny), set()
        for r in runlog.sweep_runs(probe_dir):
            diffs = rules_check.differences(r.config, fixed, probe=True)
            if diffs:  # its point's rank ratio is not read
                refused.append((name, rules_check.run_id(r), diffs))
                bad.add((er.wiring_of(r), r.n_layer))
        probe = {**(probe or {}),
                 **{(r["wiring"], int(r["depth"])): tuple(float(r[k]) if r[k] else None
                                                          for k in ("rank_ratio", "grad_ratio_first_last"))
                    for r in probe_rows(probe_dir) if isinstance(r["depth"], int)
                    and (r["wiring"], r["depth"]) not in bad}}
    # the runs each sweep should hold (its sweep file's): the main grid's and the deep runs' always, the
    # optional arms' where they were run; a sweep not run stops the reads it feeds, named with it
    ran = {s for s in SWEEP_FILES if present(s)}
    absent = {s: f"{s} not run in this folder" for s in (PROBE_SWEEP, DEEP_SWEEP) if not present(s)}
    if present(ATTN_SWEEP) and not present(ATTN_PROBE_SWEEP):
        absent[ATTN_PROBE_SWEEP] = f"{ATTN_PROBE_SWEEP} not run in this folder"
    st = judge(rows, rules, probe=probe, scaled_rows=scaled, deep_rows=deep, second_rows=second,
               named=named_runs(ran | {"escape_law", DEEP_SWEEP}), absent=absent)
    st.refused = refused
    return st


def _n(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _read_json(w: ec.Wiring, pending=()) -> dict:
    """A read as data; pending (its points' runs not all in the tables): verdict "pending", the read from
    the runs in the tables under read_so_far, the falsifier without a verdict."""
    rate = {str(d): r for d, r in w.rate.items()} if isinstance(w.rate, dict) else w.rate
    return {"verdict": "pending" if pending else w.verdict, "read_so_far": w.verdict if pending else None,
            "pending": list(pending), "why": w.why, "rate": rate,
            "escaped_depths": w.escaped_depths, "bounds": w.bounds, "best": w.best,
            "fits": {f: {"theta": list(x.theta), "sigma": x.sigma, "loglik": x.loglik, "aic": x.aic}
                     for f, x in w.fits.items()},
            "predictions": {f: [{"depth": d, "median": _n(m), "lo": _n(lo), "hi": _n(hi)}
                                for d, (m, lo, hi) in sorted(p.items())] for f, p in w.predictions.items()},
            "falsifier": None if w.falsifier is None else {"median": _n(w.falsifier.median),
                                                           "fires": None if pending else w.falsifier.fires,
                                                           "chance_all_never": w.falsifier.chance_all_never}}


def study_json(st: Study) -> dict:
    return {"runs": st.runs, "excluded": [{"run": r, "reason": y} for r, y in st.excluded],
            "refused": rules_check.refused_json(st.refused),
            "reached": {str(d): s for d, s in sorted(st.reached.items())}, "cpu_model": st.cpu_model,
            "superseded": st.superseded, "disagree": st.disagree,
            "deep_tests": [{"wiring": t.wiring, "depth": t.depth, "learning_rate": t.rate, "median": t.median,
                            "last": t.last, "pending": t.pending, "missing": t.missing,
                            "forms": {f: {"predicted": list(p), "contradicted": bad}
                                      for f, (p, bad) in t.forms.items()}}
                           for t in st.tests],
            "commits": st.commits, "complete": st.complete, "missing": st.missing, "absent": st.absent,
            "not_made": [{"read": what, "why": why} for what, why in st.not_made],
            "second_path": [{"wiring": c.wiring, "kernels": c.kernels, "main_form": c.main_form,
                             "second_form": c.second_form,
                             "main_96": None if c.main_96 is None else [_n(x) for x in c.main_96],
                             "second_96": None if c.second_96 is None else [_n(x) for x in c.second_96],
                             "holds": c.holds, "pending": c.pending,
                             "points": [{"depth": d, "learning_rate": lr, "outside": o,
                                         "main": [{"seed": sd, "step": x, "last": h} for sd, x, h in m],
                                         "second": [{"seed": sd, "step": x, "last": h} for sd, x, h in sc]}
                                        for d, lr, m, sc, o in c.points]}
                            for c in st.paths],
            "pooled_rank": [{"wiring": p.wiring, "points": [{"wiring": w, "depth": d, "rank_ratio": r}
                                                            for w, d, r in p.points],
                             "theta": list(p.fit.theta), "sigma": p.fit.sigma, "delta_aic": p.delta,
                             "best": p.best, "pending": p.pending} for p in st.pooled],
            "wirings": [{"wiring": wl.wiring, "formula": wl.formula,
                         "cells": [{"depth": d, "learning_rate": r,
                                    "escape_steps": [{"seed": s, "step": x, "last": h}
                                                     for s, x, h in wl.cells.get((d, r), [])],
                                    "seeds_named": wl.named.get((d, r)), "pending": wl.pending.get((d, r))}
                                   for d in wl.depths for r in wl.rates if (d, r) in wl.cells or (d, r) in wl.named],
                         "best": _read_json(wl.best, wl.pending_at()),
                         "held": {f"{lr:g}": _read_json(w, wl.pending_at(lr)) for lr, w in sorted(wl.held.items())},
                         "probe": {str(d): {"rank_ratio": v[0], "grad_ratio_first_last": v[1]}
                                   for d, v in sorted(wl.probe.items())},
                         "rank_fit": None if wl.rank_fit is None else {
                             "theta": list(wl.rank_fit.theta), "sigma": wl.rank_fit.sigma,
                             "delta_aic": wl.rank_delta, "best": wl.rank_best, "pending": wl.pending_at()},
                         "robustness": None if wl.robust is None else {
                             "fitted": wl.robust.form, "at": wl.robust.at,
                             "without": [{"depth": d, "median": _n(m)} for d, m in sorted(wl.robust.without.items())],
                             "subsets": [{"depths": list(k), "median": _n(m)}
                                         for k, m in sorted(wl.robust.subsets.items())]},
                         "rank_not_made": wl.rank_why or None,
                         "second_knob": {"verdict": wl.knob or None, "why": wl.knob_why or None}}
                        for wl in st.wirings]}


def from_tables(results, rules=None) -> Study:
    """The study judged from the committed tables in the folder `results` (rows.py names them): the main
    grid's and the second knob's, the scaled arm's, the deep runs', the second path's, and the probe tables.
    ValueError (the file named) when results holds no escape_law.csv; a table that is not whole raises
    escape_results.TableError (a ValueError) naming its file and line. A table the rules' reads need and
    results does not hold is named in Study.absent."""
    table = os.path.join(results, TABLE)
    if not os.path.isfile(table):
        raise ValueError(f"{table}: no results table of the escape law (escape_results.write_results_csv "
                         "writes it from runs/deep_stacking/escape_law)")
    rules = rules or ec.load_rules()
    probe, absent = None, {}
    for sweep in PROBE_SWEEPS:
        path = os.path.join(results, sweep + ".csv")
        if os.path.isfile(path):
            probe = {**(probe or {}), **read_probe_table(path)}
        elif sweep == PROBE_SWEEP or os.path.isfile(os.path.join(results, ATTN_TABLE)):
            absent[sweep] = f"{path} absent"
    # the runs each table should hold: the main grid's and the deep runs' always (the rules decided both),
    # the optional arms' where their table is here
    tables = {s for s in SWEEP_FILES if os.path.isfile(os.path.join(results, s + ".csv"))}
    for sweep in {"escape_law", DEEP_SWEEP} - tables:
        absent[sweep] = f"{os.path.join(results, sweep + '.csv')} absent"
    named = named_runs(tables | {"escape_law", DEEP_SWEEP})

    def rows_in(name):  # a table's rows, none when it is not here
        path = os.path.join(results, name)
        return read_table(path) if os.path.isfile(path) else []
    return judge(read_table(table) + rows_in(ATTN_TABLE), rules, probe=probe, second_rows=rows_in(SECOND_PATH_TABLE),
                 scaled_rows=rows_in(SCALED_TABLE), deep_rows=rows_in(DEEP_TABLE), named=named, absent=absent)


# The text and the figure moved to report/law_study.py: their old names here still answer (PEP 562).
RENDERED = ("FIGURE", "cell_text", "grid_table", "pending_text", "read_line", "markdown", "figure")


def __getattr__(name):
    if name in RENDERED:
        from stacklab.report import law_study
        return getattr(law_study, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv=None) -> int:
    """The command line (report/law_study.main: the tables judged, the text printed, the figure drawn)."""
    from stacklab.report import law_study
    return law_study.main(argv)


if __name__ == "__main__":
    sys.exit(main())
