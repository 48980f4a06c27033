"""The opt-in escape law's checks beside its reads (issue 45, configs/experiments/escape_law_rules.json):
the deep runs that supersede the stage-0 runs of their points (supersede) and test the predictions the
rules committed before them (deep_tests, DeepTest); the second numeric path's runs read in place of the
main path's (path_checks, PathCheck); the second knob's rank line over a wiring's full-block and
attention-only stacks pooled (pooled_rank, PooledRank); the best-rate read's prediction refitted without
each depth and on every 3 escaped depths (robustness, Robustness). Each takes study.py's WiringLaw reads and
returns data; study.judge calls them. Not here: the reads themselves (study.py, default_tier.read_points),
the text (report/law_study.py).
"""
import itertools
import math
import statistics
from dataclasses import dataclass, field

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab.studies.escape.rows import ATTN_PROBE_SWEEP, PROBE_SWEEP, Row, _cells, best_rates


@dataclass
class PooledRank:
    """The rules' second_knob.written.read: the rank line fitted over a wiring's full-block and
    attention-only stacks at their best rates, pooled, against each depth form fitted to the same runs
    (one curve for both stacks at each L)."""
    wiring: str
    points: list                   # [(stack wiring id, depth, rank ratio)] of the pooled runs
    fit: object                    # escape_law.FormFit of the rank line
    delta: dict                    # {form: AIC - lowest} over the depth forms and "linear"
    best: str | None               # the winner by the rules' rule, or None: not told apart
    pending: list = field(default_factory=list)  # points of either stack whose runs are not all in the tables


@dataclass
class PathCheck:
    """The rules' second_path for one wiring: its points on both paths, the law read at each depth's best
    rate with the second path's runs in place of the main path's, and whether it holds."""
    wiring: str
    kernels: str                   # the second path's OpenBLAS kernels, as its runs recorded them
    points: list                   # [(depth, rate, main seeds, second seeds, outside the main range)]
    main_form: str                 # each path's winning form, "not told apart" or "no fit"
    second_form: str
    main_96: tuple | None          # (median, lo, hi) at L = 96 of each path's winner (lowest AIC if none)
    second_96: tuple | None
    holds: bool | None             # None: a path's read is not fitted, or pending
    pending: list = field(default_factory=list)  # ["L = 2 at 0.0003: 3 of 5 seeds on the second path"]


@dataclass
class DeepTest:
    """One depth of the rules' out-of-sample test: the median escape step at the depth's best rate among
    the deep runs (None: censored at `last`), and per form its committed interval and whether the
    median contradicts it."""
    wiring: str
    depth: int
    rate: float
    seeds: list                    # [(seed, escape step or None, last eval step)]
    median: float | None
    last: int
    forms: dict                    # {form: ((median, lo, hi), contradicted, or None while pending)}
    pending: int = 0               # runs at the depth's deep points still censored short of the others, or
    #                                not in DEEP_TABLE at all (missing)
    missing: int = 0               # runs of DEEP_SWEEP at the depth that its table does not hold


def _point(r: Row) -> tuple:
    return (r.wiring, r.depth, r.rate, r.init, r.seed)


def supersede(rows, deeper) -> tuple:
    """(rows, superseded, disagree): `rows` with each run that a run of `deeper` repeats for longer
    (the same wiring, depth, rate, init and seed) replaced by it, deeper runs of new points added;
    the replaced runs' ids; and the deeper runs that escaped within the steps their stage-0 run had
    run without escaping, or escaped at another step (the first steps should be the same bits: same
    binary, config and seed)."""
    by_point = {_point(r): r for r in deeper}
    out, superseded, disagree = [], [], []
    for r in rows:
        d = by_point.pop(_point(r), None)
        if d is None:
            out.append(r)
            continue
        superseded.append(r.run)
        out.append(d)
        same = (d.escape == r.escape if r.escape is not None
                else d.escape is None or d.escape > r.steps)
        if not same and not (r.diverged or d.diverged):
            disagree.append(f"{d.run} (escape {d.escape}, its first run {r.escape or 'none'} within {r.steps})")
    return out + list(by_point.values()), superseded, disagree


def deep_tests(wirings, deep_rows, rules, named=None) -> list:
    """The rules' stage_2_decided.test: at each depth with a committed prediction, the deep runs' best
    rate, its median escape step, and per form whether that median lies outside the form's interval
    (a median censored at N lies above N: it contradicts only an interval ending below N). named: {(wiring,
    depth, rate, init): seeds} DEEP_SWEEP's file names: a depth it names stays when its table lacks runs there,
    pending with their count (its stage-0 runs, censored at 3000, test no prediction), as does a depth where
    a run is censored short of the others (a stage-0 run not yet repeated, a run stopped mid-way)."""
    pred = rules["horizons"].get("decided", {}).get("stage_2_decided", {}).get("predictions")
    named = named or {}
    if not pred or not (deep_rows or named):
        return []
    forms = {f: {int(d): tuple(v) for d, v in p.items()} for f, p in pred.items() if isinstance(p, dict)}
    out = []
    for wl in wirings:
        have, want = {}, {}  # {(depth, rate): seeds} in the deep table, and named by its sweep file
        for r in deep_rows:
            if r.wiring == wl.wiring:
                have.setdefault((r.depth, r.rate), set()).add(r.seed)
        for (w, d, lr, _), seeds in named.items():
            if w == wl.wiring:
                want.setdefault((d, lr), set()).update(seeds)
        for d in sorted({d for d, _ in list(have) + list(want)}):
            if not any(d in p for p in forms.values()):
                continue
            rates = sorted({lr for dd, lr in list(have) + list(want) if dd == d})
            ran = [r for r in rates if wl.obs.get((d, r))]
            lr = best_rates({(d, r): wl.obs[(d, r)] for r in ran})[d] if ran else rates[0]
            seeds = wl.cells.get((d, lr), [])
            # a run not yet repeated (or stopped early) is censored short of the horizon: no verdict yet
            at = [(r, x) for r in rates for x in wl.cells.get((d, r), [])]
            horizon = max((h for _, (_, _, h) in at), default=0)
            short = {(r, s) for r, (s, x, h) in at if x is None and h < horizon}
            missing = {(r, s) for r in rates for s in want.get((d, r), set()) - have.get((d, r), set())}
            pending = len(short | missing)
            med = statistics.median([x if x is not None else math.inf for _, x, _ in seeds]) if seeds else math.inf
            last = max((h for _, _, h in seeds), default=0)
            res = {}
            for f, p in forms.items():
                if d in p:
                    m, lo, hi = p[d]
                    res[f] = (p[d], None if pending else hi < last if math.isinf(med) else not lo <= med <= hi)
            out.append(DeepTest(wl.wiring, d, lr, seeds, None if math.isinf(med) else med, last, res, pending,
                                len(missing)))
    return out


def pooled_rank(full, attn, need: int):
    """The PooledRank of a wiring and its attention-only stack, or None unless both have a rank ratio at
    every depth of their best-rate reads and the pooled runs escape at `need` or more distinct points."""
    parts = [(wl, {d: v[0] for d, v in wl.probe.items() if v[0]}) for wl in (full, attn)]
    if any(not all(d in ranks for d in wl.best.seeds) for wl, ranks in parts):
        return None
    escaped = {(wl.wiring, d) for wl, _ in parts for d in wl.best.escaped_depths}
    if len(escaped) < need:
        return None
    obs = [o for wl, _ in parts for o in wl.best.obs]
    rank_obs = [o for wl, ranks in parts for o in law.with_rank_covariate(wl.best.obs, ranks)]
    fits = {**law.fit_all(obs), "linear": law.fit_form(rank_obs, "linear")}
    best, delta = law.compare(fits)
    pts = [(wl.wiring, d, ranks[d]) for wl, ranks in parts for d in sorted(wl.best.seeds)]
    return PooledRank(full.wiring, pts, fits["linear"], delta, best, full.pending_at() + attn.pending_at())


def pooled_why(full, attn, need: int, absent: dict) -> str:
    """Why pooled_rank makes no read of the two stacks: the depths without a rank ratio at init (and the probe
    table absent, where it is), or too few escaped points."""
    gaps = []
    for wl, sweep in ((full, PROBE_SWEEP), (attn, ATTN_PROBE_SWEEP)):
        no = [d for d in sorted(wl.best.seeds) if not (wl.probe.get(d) or (None,))[0]]
        if no:
            gaps.append(f"{wl.formula} at L = {', '.join(map(str, no))}" + (f" ({absent[sweep]})" if sweep in absent
                                                                            else ""))
    if gaps:
        return "no rank ratio at init for " + "; ".join(gaps)
    return f"fewer than {need} of the pooled points escaped"


def _median(seeds) -> float:
    return statistics.median([x if x is not None else math.inf for _, x, _ in seeds])


def _winner(read: ec.Wiring) -> str:
    return read.best or ("not told apart" if read.verdict == "fitted" else "no fit")


def _at_96(read: ec.Wiring):
    if read.verdict != "fitted":
        return None
    form = read.best or min(read.fits, key=lambda f: read.fits[f].aic)
    return read.predictions.get(form, {}).get(96)


def path_checks(wirings, second_rows, rules, interval, named=None) -> list:
    """The rules' second_path: per wiring with runs on the second path, those runs in place of the main
    path's of the same (depth, rate, seed), the law read again at each depth's best rate, and the
    verdict: the same form wins and each path's median at L = 96 lies in the other's interval; pending (no
    verdict) while a point of either path lacks runs (named: {(wiring, depth, rate, init): seeds}
    SECOND_PATH_SWEEP's file names; without it the rules' seeds.runs at each point run)."""
    out = []
    for wl in wirings:
        mine = sorted((r for r in second_rows if r.wiring == wl.wiring and not r.diverged),
                      key=lambda r: (r.depth, r.rate, r.seed))
        want = {(d, lr): set(s) for (w, d, lr, _), s in (named or {}).items() if w == wl.wiring}
        if not mine and not want:
            continue
        ran = {}
        for r in second_rows:
            if r.wiring == wl.wiring:
                ran.setdefault((r.depth, r.rate), set()).add(r.seed)
        pending = [f"L = {d} at {lr:g}: {len(ran.get((d, lr), set()) & s)} of {len(s)} seeds on the second path"
                   for (d, lr), s in sorted({**{k: set(rules["seeds"]["runs"]) for k in ran}, **want}.items())
                   if s - ran.get((d, lr), set())]
        pending += [f"main path {p}" for p in wl.pending_at()]
        cells, obs = _cells(mine, interval)
        by_seed = {(d, lr): {s for s, _, _ in c} for (d, lr), c in cells.items()}
        mixed_cells = {k: [x for x in c if x[0] not in by_seed.get(k, ())] for k, c in wl.cells.items()}
        mixed_obs = {k: [o for x, o in zip(wl.cells[k], wl.obs[k]) if x[0] not in by_seed.get(k, ())]
                     for k in wl.cells}
        for k in cells:
            mixed_cells[k] = sorted(mixed_cells.get(k, []) + cells[k])
            mixed_obs[k] = mixed_obs.get(k, []) + obs[k]
        chosen = best_rates(mixed_obs)
        read = ec.read_points(wl.wiring, wl.formula, chosen, {d: mixed_cells[(d, lr)] for d, lr in chosen.items()},
                              [o for d, lr in chosen.items() for o in mixed_obs[(d, lr)]], rules)
        points = []
        for d, lr in sorted(set(cells) | set(want)):
            main, c = wl.cells.get((d, lr), []), cells.get((d, lr), [])
            esc = [x for _, x, _ in main if x is not None]
            lo, hi = (min(esc), max(esc)) if esc else (math.inf, math.inf)
            if len(esc) < len(main):
                hi = math.inf
            points.append((d, lr, main, c, bool(c) and not lo <= _median(c) <= hi))
        m96, s96 = _at_96(wl.best), _at_96(read)
        holds = (None if m96 is None or s96 is None or pending else
                 _winner(wl.best) == _winner(read) and law.within(m96[0], *s96[1:]) and law.within(s96[0], *m96[1:]))
        kernels = ", ".join(sorted({r.kernels for r in mine if r.kernels})) or "not recorded"
        out.append(PathCheck(wl.wiring, kernels, points, _winner(wl.best), _winner(read), m96, s96, holds, pending))
    return out


@dataclass
class Robustness:
    """How far a fitted read's prediction at one depth moves when its runs are cut (issue 57, section 4;
    docs/log/2026-12-07-escape-law-robustness-amd.md did it by hand): the read's winning form (its lowest
    AIC when the forms are not told apart) refitted without each depth's runs (the censored depths kept
    in), and on the runs of every 3 of its escaped depths alone; each refit's median escape step at `at`."""
    form: str
    at: float
    without: dict                  # {depth left out: median at `at`}
    subsets: dict                  # {(three escaped depths): median at `at`}

    @staticmethod
    def span(values: dict):
        """((lowest median, its key), (highest median, its key)), or None without values."""
        if not values:
            return None
        order = sorted(values, key=lambda k: values[k])
        return (values[order[0]], order[0]), (values[order[-1]], order[-1])


def robustness(read, at: float):
    """The Robustness of a default_tier.Wiring read at depth `at`, or None when the read is not fitted."""
    if read is None or read.verdict != "fitted" or not read.fits:
        return None
    form = read.best or min(read.fits, key=lambda f: read.fits[f].aic)
    depths = sorted({o.depth for o in read.obs})

    def median(obs):
        return law.fit_form(obs, form).median_at(at) if len(obs) >= 3 else None
    without = {d: median([o for o in read.obs if o.depth != d]) for d in depths}
    subsets = {ds: median([o for o in read.obs if o.depth in ds])
               for ds in itertools.combinations(sorted(read.escaped_depths), 3)}
    return Robustness(form, at, {d: m for d, m in without.items() if m is not None},
                      {k: m for k, m in subsets.items() if m is not None})
