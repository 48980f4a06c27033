"""Issue 45's escape law, the opt-in study, judged from its results tables: per wiring without a
residual, every (depth, rate) cell's seeds and escape steps (the depth x rate grid that re-judges
finding 5 at long horizons and low rates), the law read at each depth's best rate and at each rate
held across depths (escape_core.read_points: the rules' fit, its forms, predictions at 8, 32 and 96
and the falsifier), the rank ratio and first/last gradient ratio at init beside each depth (the probe
sweep), the escape step against -ln(rank ratio) where a read is fitted, and the scaled-init arm beside
the normal runs at its points. Everything from configs/experiments/escape_law_rules.json.

It reads the committed tables (docs/results/escape_law.csv, escape_law_scaled.csv, escape_law_deep.csv,
escape_law_probe.csv, the second knob's escape_law_attn.csv and escape_law_attn_probe.csv and the second
numeric path's escape_law_haswell.csv where they exist), not the run folders, so a lost machine loses
no verdict. An attention-only stack (model.mlp = false) is read as a wiring of its own (its id +
escape_results.ATTN_ONLY), and beside its full-block wiring the rank line is fitted over both pooled
(PooledRank). The second path's runs replace the main path's of their points in a read of their own
(PathCheck). escape_law_deep's longer runs supersede the stage-0 runs of their points, and are the
out-of-sample test of the predictions the rules committed before them (horizons.decided.stage_2_decided.predictions):

    st = judge(read_table("docs/results/escape_law.csv"), rules, probe=read_probe_table(...))
    print(markdown(st))                       # the grid, the reads, the predictions (docs/study.md)
    study_json(st)                            # the same as data
    python3 -m stacklab.studies.escape.study [--results docs/results] [--figure F.png] [--json F.json]
    python3 -m stacklab.studies.escape.study --write-probe runs/deep_stacking/escape_law_probe --results docs/results
A stage not yet run leaves its runs censored at the horizon they reached (the table's steps): the
text says which horizon each depth reached, and the reads are of what ran.
Not here: the fit (escape_law.py), reading run folders (escape_results.py), the core (escape_core.py).
"""
import argparse
import csv
import json
import math
import os
import statistics
import sys
from dataclasses import dataclass, field

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab.studies.escape import tables as er
from stacklab.studies import rules_check
from stacklab.runs import runlog

TABLE = "escape_law.csv"
SCALED_TABLE = "escape_law_scaled.csv"
# The rules' horizons.decided.stage_2_decided: longer runs of some stage-0 points in their own sweep; each
# supersedes the run of its (wiring, depth, rate, init, seed) in the law's reads.
DEEP_SWEEP = "escape_law_deep"
DEEP_TABLE = DEEP_SWEEP + ".csv"
PROBE_SWEEP = "escape_law_probe"
PROBE_TABLE = PROBE_SWEEP + ".csv"
# The rules' second_knob.written: attention-only stacks of a wiring (model.mlp = false), their runs and
# their probes in sweeps of their own; their rows carry the wiring id + escape_results.ATTN_ONLY.
ATTN_SWEEP = "escape_law_attn"
ATTN_TABLE = ATTN_SWEEP + ".csv"
ATTN_PROBE_SWEEP = "escape_law_attn_probe"
# The rules' second_path: some best-rate points run again on another product path (OpenBLAS alone, its
# Haswell kernels), read in place of the main path's runs of the same points.
SECOND_PATH_SWEEP = "escape_law_haswell"
SECOND_PATH_TABLE = SECOND_PATH_SWEEP + ".csv"
PROBE_SWEEPS = (PROBE_SWEEP, ATTN_PROBE_SWEEP)  # the law's probe sweeps: their tables are probe tables
# The sweep file naming every run of each training sweep's table (a staged sweep's stage files name the same
# runs): a point of the law with fewer of them in the tables is pending (escape_results.sweep_points).
SWEEP_FILES = {"escape_law": "escape_law_h0.json", ATTN_SWEEP: "escape_law_attn_h0.json",
               "escape_law_scaled": "escape_law_scaled_h0.json", DEEP_SWEEP: "escape_law_deep.json",
               SECOND_PATH_SWEEP: "escape_law_haswell.json"}
PROBE_COLUMNS = ("wiring", "depth", "seeds", "rank_ratio", "grad_ratio_first_last", "cpu_model", "commit")
STAGE0 = os.path.join(os.path.dirname(ec.RULES_PATH), "escape_law_h0.json")
FIGURE = "escape_law.png"
# The rules' law.reads: "every rate is fitted where 3 or more depths have a run" (a held read is
# made); law.fit_when then says whether it is fitted (3 escaped depths) or "no fit".
MIN_DEPTHS_RUN = 3
# The rules' second_knob.when: "fewer than 4 depths escape within the cap for a wiring at its best rates".
KNOB_DEPTHS = 4


def eval_interval(path=STAGE0) -> int:
    """The eval interval every run of the law uses (escape_law_h0.json's overrides): an escape seen at
    eval step s happened in (s - interval, s]."""
    with open(path, encoding="utf-8") as f:
        return int(json.load(f)["overrides"]["train.eval_interval"])


# ---- the tables ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One finished run of the law from a results table (escape_results.COLUMNS)."""
    run: str
    wiring: str
    depth: int
    rate: float
    init: str
    seed: int
    steps: int
    escape: int | None   # the first eval step at or below the unigram reference - margin
    diverged: bool
    cpu_model: str
    commit: str
    kernels: str = ""    # the OpenBLAS kernels its start record names


def row_of(r: dict) -> Row:
    """A Row from one results-table line (a csv.DictReader dict or an escape_results.rows_of dict)."""
    esc = r["escape_step"]
    return Row(r["run"], r["wiring"], int(r["depth"]), float(r["learning_rate"]), r["init"], int(r["seed"]),
               int(float(r["steps"])), int(float(esc)) if esc not in ("", None) else None,
               r["censored"] == "diverged", r.get("cpu_model", ""), r.get("commit", ""), r.get("openblas_core", ""))


def read_table(path) -> list:
    """The rows of a results table (escape_results.write_results_csv) as Rows; escape_results.TableError (a
    ValueError) naming the file and line when a row is not whole: a field missing, not a number where one
    is due, censored not agreeing with the escape step, a cut commit, or a last line without its newline (a
    torn write). escape_results.read_results_csv checks every row."""
    return [row_of(r) for r in er.read_results_csv(path)]


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


def probe_rows(probe_dir, cpu_model="", commit="") -> list:
    """One dict per probe of the probe sweep (PROBE_COLUMNS): its wiring, depth, seeds, the last
    stream's rank ratio at init (mean over seeds, escape_law.rank_ratio_of_probe) and the first/last
    gradient ratio, in run-id order."""
    _, entries = runlog.sweep_entries(probe_dir)
    out = []
    for e in sorted(entries, key=lambda e: e.id):
        path = e.path  # a probe sweep's entry is its probe.json
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            p = json.load(f)
        m = p.get("config", {}).get("model", {})
        norm, pos = m.get("norm", "none"), m.get("norm_position", "pre")
        wiring = (f"{pos}-{norm}-nores" if norm != "none" else "none-nores") + er.stack_suffix(m)
        out.append({"wiring": wiring, "depth": m.get("n_layer"), "seeds": len(p.get("seeds") or []),
                    "rank_ratio": er._num(law.rank_ratio_of_probe(p)),
                    "grad_ratio_first_last": er._num(p.get("ratio_first_last")),
                    "cpu_model": cpu_model, "commit": commit})
    return out


def write_probe_table(probe_dir, out_csv, root=None) -> int:
    """Writes probe_rows to out_csv (the CPU and commit from root's, default the sweep's parent's,
    timing.jsonl); returns the number of probes. ValueError when the folder holds no probe.json."""
    cpu, commit = er.study_machine(root or os.path.dirname(os.path.normpath(probe_dir)))
    rows = probe_rows(probe_dir, cpu, commit)
    if not rows:
        name = os.path.basename(os.path.normpath(probe_dir))
        raise ValueError(f"{probe_dir}: no probe.json of a probe sweep (run `stacklab sweep "
                         f"configs/experiments/{name}.json` first)")
    os.makedirs(os.path.dirname(os.path.abspath(out_csv)), exist_ok=True)
    with open(out_csv, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=PROBE_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return len(rows)


# Each column of PROBE_COLUMNS: how its text is read (escape_results.read_rows).
PROBE_FIELDS = {"wiring": er.nonempty, "depth": er.integer(1), "seeds": er.integer(0),
                "rank_ratio": er.optional(er.positive), "grad_ratio_first_last": er.optional(er.finite),
                "cpu_model": er.any_text, "commit": er.commit_field}


def read_probe_table(path) -> dict:
    """{(wiring, depth): (rank ratio, gradient ratio first/last)} from a probe table, every row checked as a
    results table's are (escape_results.read_rows: field count, types, commit, a torn last line, a
    (wiring, depth) twice); escape_results.TableError naming the file and line otherwise."""
    return {(r["wiring"], int(r["depth"])): (float(r["rank_ratio"]) if r["rank_ratio"] else None,
                                             float(r["grad_ratio_first_last"]) if r["grad_ratio_first_last"] else None)
            for r in er.read_rows(path, PROBE_FIELDS, key=("wiring", "depth"), what="probe-table row")}


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

    @property
    def complete(self) -> bool:
        """Every read the rules ask for made, none pending: no run missing, no read not made."""
        return not self.missing and not self.not_made and not any(t.pending for t in self.tests) and \
            not any(c.pending for c in self.paths)


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


def _obs(row: Row, interval: int):
    if row.escape is None:
        return law.never_within(row.depth, row.steps)
    return law.escaped_at(row.depth, row.escape, interval)


def _cells(rows, interval):
    cells, obs = {}, {}
    for r in sorted(rows, key=lambda r: (r.depth, r.rate, r.seed)):
        cells.setdefault((r.depth, r.rate), []).append((r.seed, r.escape, r.steps))
        obs.setdefault((r.depth, r.rate), []).append(_obs(r, interval))
    return cells, obs


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


def best_rates(obs: dict) -> dict:
    """{depth: rate}: at each depth the rate whose runs escape earliest (the rules' reads (1): lowest
    median escape step over seeds, a censored run +inf; ties: fewer censored, then the lower rate)."""
    out = {}
    for d in sorted({d for d, _ in obs}):
        rates = [r for dd, r in obs if dd == d]
        out[d] = min(rates, key=lambda r: (er._median_key(obs[(d, r)]), r))
    return out


def stacks(rules) -> list:
    """[(wiring id, formula)]: the rules' wirings, then each one's attention-only stack (the second knob's,
    escape_results.ATTN_ONLY), in that order."""
    ws = list(rules["wirings"].items())
    return ws + [(w + er.ATTN_ONLY, f"{f}, attention-only blocks") for w, f in ws]


def pooled_rank(full: WiringLaw, attn: WiringLaw, need: int):
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


def pooled_why(full: WiringLaw, attn: WiringLaw, need: int, absent: dict) -> str:
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


def named_runs(sweeps) -> dict:
    """{sweep: {(wiring, depth, rate, init): seeds}}: the runs each of `sweeps` names in its sweep file
    (SWEEP_FILES, escape_results.sweep_points), the runs its table holds once they are all done."""
    folder = os.path.dirname(ec.RULES_PATH)
    return {s: er.sweep_points(os.path.join(folder, SWEEP_FILES[s])) for s in sweeps}


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
                 missing=missing, not_made=not_made, absent=sorted(set(absent.values())))


# ---- the text -----------------------------------------------------------------------------------

def _g(x) -> str:
    return "inf" if x is None or (isinstance(x, float) and math.isinf(x)) else f"{x:.3g}"


def cell_text(seeds) -> str:
    """"5/5 · 750 (700-800)", "0/5 · > 3000", "2/5 · > 3000 (500, 650)", "not run" (no seed)."""
    if not seeds:
        return "not run"
    steps = sorted(s for _, s, _ in seeds if s is not None)
    n, k = len(seeds), len(steps)
    last = max(h for _, _, h in seeds)
    med = statistics.median([s if s is not None else math.inf for _, s, _ in seeds])
    if k == 0:
        return f"0/{n} · > {last}"
    if math.isinf(med):
        return f"{k}/{n} · > {last} ({', '.join(str(s) for s in steps)})"
    spread = f"{steps[0]}" if steps[0] == steps[-1] else f"{steps[0]}-{steps[-1]}"
    return f"{k}/{n} · {med:g} ({spread})"


def grid_table(wl: WiringLaw) -> list:
    """Markdown lines: depth x rate, each cell seeds escaped / seeds and the median escape step (range),
    and where runs the sweeps name are not in the tables how many are ("3 of 5 seeds: pending"), the best
    rate's cell in bold, then the rank and gradient ratios at init."""
    head = ["L"] + [f"lr {r:g}" for r in wl.rates] + ["rank ratio at init", "grad ratio first/last"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    chosen = wl.best.rate if wl.best else {}
    for d in wl.depths:
        row = [str(d)]
        for r in wl.rates:
            c = wl.cells.get((d, r))
            t = cell_text(c) if c else "not run"
            t += f" ({wl.pending[(d, r)]}: pending)" if (d, r) in wl.pending else ""
            row.append(f"**{t}**" if chosen.get(d) == r and c and any(s is not None for _, s, _ in c) else t)
        rank, grad = wl.probe.get(d, (None, None))
        row += [_g(rank) if rank is not None else "not probed", _g(grad) if grad is not None else "not probed"]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def pending_text(pending) -> str:
    """"pending (runs missing: L = 4 at 3e-05: 3 of 5 seeds); from the runs in the tables, no verdict: " for
    a read over points whose runs are not all in the tables, else ""."""
    if not pending:
        return ""
    shown = "; ".join(pending[:4]) + (f"; {len(pending) - 4} more points" if len(pending) > 4 else "")
    return f"pending (runs missing: {shown}); from the runs in the tables, no verdict: "


def read_line(name, w: ec.Wiring, pending=()) -> str:
    """One read in words: no fit with its bounds, or the forms, the winner and the predictions; pending (the
    points whose runs are not all in the tables named, the falsifier given no verdict) where `pending`."""
    head = f"{name}: {pending_text(pending)}"
    if w.verdict != "fitted":
        # the strongest of the censored depths' bounds (the nearest depth's: the deeper ones are weaker)
        top = max(w.bounds, key=lambda x: x["factor_above"], default=None)
        b = (f"; from L = {top['from']} to {top['depth']} the median grows at least x{top['factor_above']:.3g} "
             f"a layer (L = {top['depth']}'s median censored at {top['horizon']})" if top else "")
        return f"{head}{w.why}{b}"
    preds = []
    for form, p in w.predictions.items():
        ps = ", ".join(f"L = {d}: {law.step_text(m)} ({law.interval_text(lo, hi)})"
                       for d, (m, lo, hi) in sorted(p.items()) if d in (8, 32, 96))
        preds.append(f"{form}: {ps}")
    dd = ", ".join(f"{f} {d:+.1f}" for f, d in sorted(w.delta_aic.items(), key=lambda x: x[1]))
    fz = f"; falsifier: {w.falsifier.text}" if w.falsifier is not None else ""
    if pending and fz:
        fz = f"; falsifier: {w.falsifier.text.rsplit(': ', 1)[0]}: pending"
    return f"{head}{w.why} (dAIC {dd}); median escape step, 95 % interval: {'; '.join(preds)}{fz}"


def markdown(st: Study, rules) -> str:
    """The study as markdown for docs/study.md and the report: a header (runs, CPU, commit, steps
    reached per depth), per wiring its grid and reads, the scaled arm, the runs left out."""
    reached = ", ".join(f"L = {d}: {s}" for d, s in sorted(st.reached.items()))
    out = [f"{st.runs} runs read ({len(st.excluded)} diverged, left out), on {st.cpu_model or 'a CPU not recorded'}"
           f" (commit {', '.join(st.commits) or 'not recorded'}). Steps reached per depth (the stage run): {reached}."
           f" A cell: seeds escaped / seeds, then the median escape step over seeds (their range); a run escapes at"
           f" the first eval {st.margin:g} nats under its unigram loss; '> N': the median never escaped within N."
           " Bold: the depth's best rate (the rules' reads (1))."
           + (f" {len(st.superseded)} stage-0 runs are read through their longer repeats in {DEEP_SWEEP}"
              " (the rules' horizons.decided.stage_2_decided)." if st.superseded else "")
           + (f" **{st.missing} runs the sweep files name are not in the tables**: the points that lack them say"
              " how many they hold ('3 of 5 seeds: pending'), and every read over them is pending, not a"
              " verdict." if st.missing else "")
           + (f" Not read: {'; '.join(st.absent)}." if st.absent else ""), ""]
    if st.disagree:
        out += ["**Not the same runs**: these longer repeats did not repeat their first run's escape (another "
                "binary or config?): " + "; ".join(st.disagree) + ".", ""]
    for wl in st.wirings:
        out += [f"**`{wl.formula}`**", ""] + grid_table(wl) + [""]

        def rate_text(d, r, wl=wl):
            escaped = any(x is not None for _, x, _ in wl.cells[(d, r)])
            return f"L = {d}: {r:g}" + ("" if escaped else " (none escaped: the tie's lower rate)")
        chosen = ", ".join(rate_text(d, r) for d, r in sorted(wl.best.rate.items()))
        out.append(f"- {read_line('At each depth best rate (' + chosen + ')', wl.best, wl.pending_at())}.")
        for lr, w in sorted(wl.held.items()):
            out.append(f"- {read_line(f'At lr {lr:g} held across depths', w, wl.pending_at(lr))}.")
        if wl.rank_fit is not None:
            dd = ", ".join(f"{f} {d:+.1f}" for f, d in sorted(wl.rank_delta.items(), key=lambda x: x[1]))
            told = (f"{wl.rank_best} wins" if wl.rank_best else
                    f"not told apart from the depth forms (AIC within {law.DELTA_AIC:g})")
            out.append(f"- Against x = -ln(rank ratio at init), at the best rates: {pending_text(wl.pending_at())}"
                       f"ln step = {wl.rank_fit.theta[0]:.3g} + "
                       f"{wl.rank_fit.theta[1]:.3g} x, sigma {wl.rank_fit.sigma:.3g}; {told} (dAIC: {dd}).")
        elif wl.rank_why:
            out.append(f"- Against x = -ln(rank ratio at init), at the best rates: not made: {wl.rank_why}.")
        if wl.knob:
            out.append(f"- The rules' second knob (attention-only stacks, when fewer than {KNOB_DEPTHS} depths "
                       f"escape within their caps): {wl.knob}: {wl.knob_why}.")
        out.append("")
    for p in st.pooled:
        dd = ", ".join(f"{f} {d:+.1f}" for f, d in sorted(p.delta.items(), key=lambda x: x[1]))
        told = (f"{'the rank line' if p.best == 'linear' else p.best} wins" if p.best else
                f"not told apart (AIC within {law.DELTA_AIC:g})")
        pts = "; ".join(f"{'attention-only' if w.endswith(er.ATTN_ONLY) else 'full'} L = {d}: {r:.3g}"
                        for w, d, r in p.points)
        out += [f"The second knob's read (the rules' second_knob.written.read), "
                f"`{rules['wirings'].get(p.wiring)}` with full and attention-only blocks pooled at their best rates: "
                f"ln step = {p.fit.theta[0]:.3g} + "
                f"{p.fit.theta[1]:.3g} x (x = -ln rank ratio at init), sigma {p.fit.sigma:.3g}, against the depth "
                f"forms with one curve for both stacks: {pending_text(p.pending)}{told} (dAIC: {dd}). Rank ratios at "
                f"init: {pts}.", ""]
    for what, why in st.not_made:
        out += [f"Not made: {what}: {why}.", ""]
    if st.tests:
        out += [f"The predictions committed before {DEEP_SWEEP}'s runs (the rules' horizons.decided."
                "stage_2_decided), against its runs: the median escape step at each depth's best rate among "
                "them; a form is contradicted where that median lies outside its 95 % interval (a median "
                "censored at N lies above N).", "",
                "| wiring | L | best rate | measured | " + " | ".join(st.tests[0].forms) + " |",
                "|---|---|---|---|" + "---|" * len(st.tests[0].forms)]
        for t in st.tests:
            verdict = {True: "contradicted", False: "holds", None: "pending"}
            cells = [f"{_g(m)} ({_g(lo)}-{_g(hi)}): {verdict[bad]}" for (m, lo, hi), bad in t.forms.values()]
            wait = "; ".join(([f"{t.pending - t.missing} runs not yet at the horizon"] if t.pending > t.missing else [])
                             + ([f"pending: {t.missing} runs of {DEEP_SWEEP} not in its table"] if t.missing else []))
            wait = f" ({wait})" if wait else ""
            out.append(f"| {rules['wirings'].get(t.wiring, t.wiring)} | {t.depth} | {t.rate:g} | "
                       f"{cell_text(t.seeds)}{wait} | " + " | ".join(cells) + " |")
        out.append("")
    if st.paths:
        out += [f"On a second numeric path (the rules' second_path, {SECOND_PATH_SWEEP}: OpenBLAS alone, its "
                f"{st.paths[0].kernels} kernels), each depth's best-rate point beside the main path's runs of the "
                "same seeds; the law read again with them in their place. It holds where the same form wins and "
                "each path's median at L = 96 lies in the other's 95 % interval.", "",
                "| wiring | L | lr | main path | second path |", "|---|---|---|---|---|"]
        for c in st.paths:
            for d, lr, main, second, outside in c.points:
                flag = " (outside the main path's range)" if outside else ""
                out.append(f"| {rules['wirings'].get(c.wiring, c.wiring)} | {d} | {lr:g} | "
                           f"{cell_text(main)} | {cell_text(second)}{flag} |")
        out.append("")
        for c in st.paths:
            def at(x):
                return "no fit" if x is None else f"{law.step_text(x[0])} ({law.interval_text(*x[1:])})"
            verdict = {True: "holds", False: "does not hold", None: "not judged (a read is not fitted)"}[c.holds]
            if c.pending:
                verdict = "pending (runs missing: " + "; ".join(c.pending) + ")"
            out.append(f"- `{rules['wirings'].get(c.wiring, c.wiring)}`: main path {c.main_form}, "
                       f"second path {c.second_form}; L = 96: {at(c.main_96)} against "
                       f"{at(c.second_96)}: {verdict}.")
        out.append("")
    if st.scaled:
        out += ["The scaled-init arm beside the normal runs at its points (not fitted):", "",
                "| wiring | L | lr | normal init | scaled init |", "|---|---|---|---|---|"]
        n = len(rules["seeds"]["runs"])
        for w, d, lr, normal, scaled in st.scaled:
            short = f" ({len(scaled)} of {n} seeds: pending)" if len(scaled) < n else ""
            out.append(f"| {rules['wirings'].get(w, w)} | {d} | {lr:g} | "
                       f"{cell_text(normal)} | {cell_text(scaled)}{short} |")
        out.append("")
    if st.excluded:
        out += ["Left out: " + "; ".join(f"{r} ({why})" for r, why in st.excluded) + ".", ""]
    return "\n".join(out)


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
                         "rank_not_made": wl.rank_why or None,
                         "second_knob": {"verdict": wl.knob or None, "why": wl.knob_why or None}}
                        for wl in st.wirings]}


def figure(st: Study, path: str, predict_at: float = 96) -> str:
    """Escape step against depth per wiring at each depth's best rate, arrows for censored runs, the
    law's line and band up to `predict_at` and its prediction there, where the read was fitted (a
    provisional fit is drawn to L = 8 only, so that its line does not set the axis)."""
    from stacklab.plots.escape_law import plot_escape_law
    series = {}
    for wl in st.wirings:
        if wl.wiring.endswith(er.ATTN_ONLY):  # the second knob's stacks: in the text, not the law's figure
            continue
        b = wl.best
        form = b.best or (min(b.fits, key=lambda f: b.fits[f].aic) if b.fits else None)
        series[f"{wl.formula}, best rate"] = (b.obs, b.fits.get(form) if form else None, b.predictions.get(form, {}))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    return plot_escape_law(series, path, predict_at=predict_at, band=True,
                           title="Escape step against depth, no residual, each depth at its best rate")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m stacklab.studies.escape.study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="docs/results", help="the folder of the results tables (default: %(default)s)")
    ap.add_argument("--write-probe", metavar="PROBE_DIR", action="append", default=[],
                    help="first write RESULTS/<folder name>.csv from a probe sweep's folder (escape_law_probe, "
                         "escape_law_attn_probe); repeatable")
    ap.add_argument("--figure", help="draw the figure into this PNG")
    ap.add_argument("--predict-at", type=float, default=96, metavar="L",
                    help="draw the fitted law up to depth L and its prediction there (default: %(default)g)")
    ap.add_argument("--json", help="write the judgement as JSON to this file")
    a = ap.parse_args(argv)
    try:
        for probe_dir in a.write_probe:
            out = os.path.join(a.results, os.path.basename(os.path.normpath(probe_dir)) + ".csv")
            n = write_probe_table(probe_dir, out)
            print(f"escape_study: {n} probes -> {out}", file=sys.stderr)
        table = os.path.join(a.results, TABLE)
        if not os.path.isfile(table):
            raise ValueError(f"{table}: no results table of the escape law (escape_results.write_results_csv "
                             "writes it from runs/deep_stacking/escape_law)")
        rules = ec.load_rules()
        probe, absent = None, {}
        for sweep in PROBE_SWEEPS:
            path = os.path.join(a.results, sweep + ".csv")
            if os.path.isfile(path):
                probe = {**(probe or {}), **read_probe_table(path)}
            elif sweep == PROBE_SWEEP or os.path.isfile(os.path.join(a.results, ATTN_TABLE)):
                absent[sweep] = f"{path} absent"
        # the runs each table should hold: the main grid's and the deep runs' always (the rules decided both),
        # the optional arms' where their table is here
        tables = {s for s in SWEEP_FILES if os.path.isfile(os.path.join(a.results, s + ".csv"))}
        for sweep in {"escape_law", DEEP_SWEEP} - tables:
            absent[sweep] = f"{os.path.join(a.results, sweep + '.csv')} absent"
        named = named_runs(tables | {"escape_law", DEEP_SWEEP})
        scaled_path = os.path.join(a.results, SCALED_TABLE)
        deep_path = os.path.join(a.results, DEEP_TABLE)
        attn_path = os.path.join(a.results, ATTN_TABLE)
        rows = read_table(table) + (read_table(attn_path) if os.path.isfile(attn_path) else [])
        second_path = os.path.join(a.results, SECOND_PATH_TABLE)
        st = judge(rows, rules, probe=probe,
                   second_rows=read_table(second_path) if os.path.isfile(second_path) else (),
                   scaled_rows=read_table(scaled_path) if os.path.isfile(scaled_path) else (),
                   deep_rows=read_table(deep_path) if os.path.isfile(deep_path) else (), named=named, absent=absent)
    except (OSError, ValueError) as e:
        print(f"escape_study: {e}", file=sys.stderr)
        return 2
    print(markdown(st, rules))
    if a.figure:
        figure(st, a.figure, a.predict_at)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(study_json(st), f, indent=1)
    if not st.complete:
        print("escape_study: not every read is made: runs missing (pending) or a table absent (not made); "
              "exit 3", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
