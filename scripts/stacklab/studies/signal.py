"""Issue 45's part 2, "the residual, or the signal?", judged by configs/experiments/signal_rules.json:
the points of its sweeps (an attention kind or a one-sub-layer stack, at a depth), each with its
seeds' escape steps (train.stop_below_unigram's criterion, escape_results.run_escape), whether it
trains (the rules' word for leaving the plateau: at least `need` of its seeds escaped within the
horizon), its rank ratio at init (the probe sweep), and the verdicts the rules give.

    res = judge("runs/signal", load_rules())  # Judged: points, verdicts
    res = judge_tables("docs/results", load_rules())  # the same from the committed signal_*.csv tables
    python3 -m stacklab.studies.signal runs/signal [--results docs/results]
    python3 -m stacklab.studies.signal docs/results      # a folder of tables, not of runs: read them
The Judged as text (the table, the verdict's lines, markdown for docs/study.md) and as findings.json's
"signal": signal_text.py, which the report's section (report/signal.py) renders from too.
Not here: the runs (`reproduce.sh --signal`, or stacklab sweep configs/experiments/signal_*.json), the
escape criterion (escape_results.py), the law's fit (escape_law.py).
"""
import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass, field

from stacklab.studies.escape import tables as er
from stacklab.runs import tier_lists as tier
from stacklab.studies import rules_check
from stacklab.runs import runlog
from stacklab.studies.escape.tables import finished_runs, run_escape, write_results_csv
from stacklab.runs.tier_lists import SIGNAL_SWEEPS
from stacklab.paths import in_root

RULES_FILE = "configs/experiments/signal_rules.json"
RULES = in_root(RULES_FILE)
COMMAND = "bash scripts/reproduce.sh --signal"
PROBE_SWEEP = "signal_probe"
TRAIN_SWEEPS = tuple(n for n in SIGNAL_SWEEPS if n != PROBE_SWEEP)  # signal_shaped, signal_sublayer
KINDS = ("softmax", "shaped", "shaped_no_identity")


def load_rules(path=None) -> dict:
    with open(path or RULES, encoding="utf-8") as f:
        return json.load(f)


def point_of(config: dict) -> str:
    """The point a run or probe belongs to, from its config: the attention kind of a full block,
    else which sub-layer its one-sub-layer stack keeps."""
    m = config.get("model") or {}
    if m.get("mlp", True) is False:
        return "attn-only"
    if m.get("attention", True) is False:
        return "mlp-only"
    return m.get("attention_kind", "softmax")


def fixed_settings(rules: dict, tiny: bool = False) -> tuple:
    """(training runs', probes' settings) the rules fix (rules_check: {key: [allowed values]}): the sweep
    files they judge, and their own seeds, horizon H (train.max_iters) and escape margin
    (train.stop_below_unigram). A --tiny study ran the files scaled down: its runs are held to those."""
    train = rules_check.settings(TRAIN_SWEEPS, tiny=tiny)
    if not tiny:
        train = rules_check.narrow(train, {"train.seed": (rules.get("seeds") or {}).get("runs") or [],
                                           "train.max_iters": [(rules.get("horizon") or {}).get("H")],
                                           "train.stop_below_unigram": [(rules.get("escaped") or {}).get("margin")]})
    return train, rules_check.settings(PROBE_SWEEP, tiny=tiny)


@dataclass
class Point:
    name: str
    depth: int
    seeds: list = field(default_factory=list)   # [(seed, escape step or None, last eval step)]
    rank_ratio: list = field(default_factory=list)  # the last stream's rank ratio at init per probe seed
    need: int = 2
    refused: int = 0           # its finished runs not judged: their settings differ from the rules'
    probe_refused: bool = False  # its probe not read: its settings differ from the rules'
    no_probe: str = "not probed"  # what the table says without a rank ratio (read from tables: not in them)

    @property
    def escaped(self) -> int:
        return sum(1 for _, s, _ in self.seeds if s is not None)

    @property
    def trains(self) -> bool:
        return self.escaped >= self.need

    @property
    def complete(self) -> bool:
        return len(self.seeds) >= 3

    def steps_text(self) -> str:
        esc = sorted(s for _, s, _ in self.seeds if s is not None)
        cens = [last for _, s, last in self.seeds if s is None]
        parts = []
        if esc:
            med = statistics.median(esc)
            parts.append(f"median {med:g}, range {esc[0]}-{esc[-1]}" if len(esc) > 1 else f"{esc[0]}")
        if cens:
            parts.append(f"{len(cens)} never within {min(cens)}" if len(set(cens)) == 1
                         else f"{len(cens)} never within {min(cens)}-{max(cens)}")
        if self.refused:
            parts.append(f"{self.refused} not judged (settings differ from the rules')")
        return "; ".join(parts) or "no run"

    def rank_text(self) -> str:
        if not self.rank_ratio:
            return "not judged (its probe's settings differ from the rules')" if self.probe_refused else self.no_probe
        return f"{statistics.median(self.rank_ratio):.3g}"

    def trains_text(self) -> str:
        if self.complete:
            return "yes" if self.trains else "no"
        refused = f", {self.refused} not judged" if self.refused else ""
        return f"({len(self.seeds)} of 3 seeds finished{refused})"


@dataclass
class Judged:
    points: dict       # (name, depth) -> Point
    verdicts: dict     # depth -> text; "control", "sublayer": {depth: text}
    missing: list      # (name, depth) of the rules' points with fewer than 3 finished seeds
    sweeps: list = field(default_factory=list)  # the signal sweeps the folder holds (SIGNAL_SWEEPS' order)
    rules: dict = field(default_factory=dict)   # signal_rules.json, as judged
    refused: list = field(default_factory=list)  # [(sweep, run id, [rules_check.Difference])]: not judged
    tables: list = field(default_factory=list)   # the results tables read (judge_tables), [] for run folders
    machines: list = field(default_factory=list)  # [(cpu model, commit)] the tables' runs name

    @property
    def present(self) -> bool:
        """Whether the folder holds any of the signal sweeps (else the study was not run there)."""
        return bool(self.sweeps)


def _seed(run) -> int:
    return int(((run.config.get("train") or {}).get("seed")) or 0)


def load_points(root: str, need: int = 2, rules: dict | None = None, tiny: bool = False) -> tuple:
    """({(point, depth): Point}, refused) from the study folder's signal sweeps: each finished run's escape
    (the rules' margin), each probe's rank ratios; a run or probe whose config differs from what the rules
    fix (fixed_settings) is not judged: counted on its point and listed in refused, [(sweep, run id,
    [rules_check.Difference])]."""
    rules = rules if rules is not None else load_rules()
    train_fixed, probe_fixed = fixed_settings(rules, tiny)
    margin = (rules.get("escaped") or {}).get("margin", 0.1)
    pts, refused = {}, []
    for sweep in TRAIN_SWEEPS:
        d = os.path.join(root, sweep)
        if not os.path.isdir(d):
            continue
        for e, run in finished_runs(d):
            key = (point_of(run.config), int(run.n_layer))
            p = pts.setdefault(key, Point(key[0], key[1], need=need))
            diffs = rules_check.differences(run.config, train_fixed)
            if diffs:
                p.refused += 1
                refused.append((sweep, e.id, diffs))
                continue
            _, step, last = run_escape(run, margin=margin)
            p.seeds.append((_seed(run), step, last))
    d = os.path.join(root, PROBE_SWEEP)
    if os.path.isdir(d):
        _, entries = runlog.sweep_entries(d)
        for e in entries:
            if not os.path.isfile(e.path):
                continue
            with open(e.path, encoding="utf-8") as f:
                probe = json.load(f)
            cfg = probe.get("config") or {}
            key = (point_of(cfg), int((cfg.get("model") or {}).get("n_layer", 0)))
            p = pts.setdefault(key, Point(key[0], key[1], need=need))
            diffs = rules_check.differences(cfg, probe_fixed, probe=True)
            if diffs:
                p.probe_refused = True
                refused.append((PROBE_SWEEP, e.id, diffs))
                continue
            p.rank_ratio = [s["layers"]["rank_ratio"][-1] for s in probe.get("seeds", [])
                            if (s.get("layers") or {}).get("rank_ratio")]
    return pts, refused


def _trains(pts, name, depth):
    p = pts.get((name, depth))
    return None if p is None or not p.complete else p.trains


def rule_sentence(text: str) -> str:
    """The sentence a verdict rule writes, from its text in the rules: after the condition's ": ", without
    the quotes around it and the final period ("...: 'a, b' (c)." -> "a, b (c)")."""
    s = text.split(": ", 1)[1].rstrip(".")
    if s.startswith("'") and "'" in s[1:]:
        end = s.index("'", 1)
        s = s[1:end] + s[end + 1:]
    return s


def _unjudged(pts, names, depth) -> str:
    """Why a verdict at a depth is not made: "not run", or that runs there break the rules."""
    n = sum(pts[(k, depth)].refused for k in names if (k, depth) in pts)
    return f"not judged ({n} runs' settings differ from the rules')" if n else "not run"


def verdicts(pts: dict, rules: dict) -> dict:
    """The rules' criteria (signal_rules.json criteria) applied to the points."""
    crit = rules["criteria"]["verdict"]
    out = {"depth": {}, "control": {}, "sublayer": {}}
    shaped_at = {}
    for L in (8, 32):
        soft, shaped = _trains(pts, "softmax", L), _trains(pts, "shaped", L)
        if soft is None or shaped is None:
            out["depth"][L] = _unjudged(pts, ("softmax", "shaped"), L)
            continue
        if soft:
            out["depth"][L] = "not told apart (softmax attention itself trains here)"
        else:
            out["depth"][L] = ("shaped trains without a residual, softmax does not" if shaped
                               else "neither shaped nor softmax trains without a residual")
        shaped_at[L] = shaped and not soft
    if set(shaped_at) == {8, 32}:
        if all(shaped_at.values()):
            out["overall"] = rule_sentence(crit["sufficient_not_necessary"])
        elif not any(shaped_at.values()):
            out["overall"] = rule_sentence(crit["residual_only"])
        else:
            yes = [L for L, v in shaped_at.items() if v]
            no = [L for L, v in shaped_at.items() if not v]
            out["overall"] = (f"partial: shaped attention trains without a residual at L = {yes[0]} but not at "
                              f"L = {no[0]} within H")
    else:
        out["overall"] = "not judged: " + ", ".join(f"L = {L} {out['depth'][L]}" for L in (8, 32)
                                                    if L not in shaped_at)
    for L in (8, 32):
        shaped, ctrl = _trains(pts, "shaped", L), _trains(pts, "shaped_no_identity", L)
        if shaped is None or ctrl is None:
            out["control"][L] = _unjudged(pts, ("shaped", "shaped_no_identity"), L)
        elif shaped and ctrl:
            out["control"][L] = "the control trains too: the zero-query init, not the identity term, keeps it trainable"
        elif shaped:
            out["control"][L] = "the control does not train: the identity term is credited"
        else:
            out["control"][L] = "shaped does not train: nothing to credit"
    for L in (2, 8, 32):
        a, m = _trains(pts, "attn-only", L), _trains(pts, "mlp-only", L)
        if a is None or m is None:
            out["sublayer"][L] = _unjudged(pts, ("attn-only", "mlp-only"), L)
        elif a == m:
            out["sublayer"][L] = "not told apart (" + ("both train" if a else "neither trains") + ")"
        else:
            out["sublayer"][L] = ("attention stalls the signal: the MLP-only stack trains, the attention-only "
                                  "stack does not" if m else
                                  "the MLP stalls the signal: the attention-only stack trains, the MLP-only does not")
    out["rank"] = rank_reading(pts)
    return out


def rank_reading(pts: dict) -> dict:
    """criteria.sublayer's last question: whether the points that train are the ones whose rank ratio
    at init is higher. Over the finished, probed points of each depth, and of all depths together
    ("all"): the medians' range of those that train and of those that do not, and "yes" when every one
    that trains starts higher than every one that does not."""
    judged = [p for p in pts.values() if p.complete and p.rank_ratio]
    if not judged:
        return {"all": "no finished point has a rank ratio at init: nothing to compare"}
    groups = {L: [p for p in judged if p.depth == L] for L in sorted({p.depth for p in judged})}
    groups["all"] = judged
    out = {}
    for key, ps in groups.items():
        yes = sorted(statistics.median(p.rank_ratio) for p in ps if p.trains)
        no = sorted(statistics.median(p.rank_ratio) for p in ps if not p.trains)
        if not yes or not no:
            out[key] = ("every point trains" if yes else "no point trains") + ": nothing to compare"
            continue
        text = (f"those that train start at {yes[0]:.3g}-{yes[-1]:.3g}, those that do not at "
                f"{no[0]:.3g}-{no[-1]:.3g}: ")
        out[key] = text + ("yes, every point that trains starts higher" if yes[0] > no[-1] else
                           "no, a point that does not train starts higher than one that does")
    return out


PLAN = [(k, L) for L in (8, 32) for k in KINDS] + [(s, L) for L in (2, 8, 32) for s in ("attn-only", "mlp-only")]


def judge(root: str, rules: dict) -> Judged:
    """The study in root judged by the rules; a run whose settings differ from theirs (a --tiny study:
    from theirs scaled down) is not judged, and listed in Judged.refused with the keys that differ."""
    need = 2
    pts, refused = load_points(root, need, rules, rules_check.is_tiny(root))
    missing = [key for key in PLAN if key not in pts or not pts[key].complete]
    sweeps = [n for n in SIGNAL_SWEEPS if runlog.is_sweep_dir(os.path.join(root, n))]
    return Judged(pts, verdicts(pts, rules), missing, sweeps, rules, refused)


TABLE_NOTE = "not in the results tables"  # a table row holds no rank ratio: signal_probe writes no table


def variants(sweep: str) -> dict:
    """{variant name: its dotted keys} of the rules' sweep file: the variant names are the points (PLAN), and
    a run's id ends with its variant's name and seed ("L8-pre-layernorm-nores-shaped-s40")."""
    (path,) = rules_check.sweep_files(sweep)
    return {v["name"]: {k: x for k, x in v.items() if k != "name"}
            for v in tier.read_json(path).get("variants") or [] if isinstance(v, dict) and "name" in v}


def _nest(flat: dict) -> dict:
    out = {}
    for key, v in flat.items():
        node = out
        *head, leaf = key.split(".")
        for part in head:
            node = node.setdefault(part, {})
        node[leaf] = v
    return out


def table_points(folder: str, rules: dict, need: int = 2) -> tuple:
    """({(point, depth): Point}, refused, tables read, [(cpu model, commit)]) from the results tables
    folder/<sweep>.csv of the training sweeps (escape_results.read_results_csv: every row checked, a torn
    or cut table refused with escape_results.TableError naming its line; each row's escape step is the one
    write_results_csv took under the rules' margin). A row's point is the variant its
    run id names (the sweep file's variants; a wiring column that names one must agree, else TableError);
    its settings are held against the rules as a run's are (rules_check: depth, rate, init, seed, the
    variant's keys, and a censored run's steps as its horizon), and a row off them is refused. The tables
    hold no rank ratio (signal_probe writes no table): every point says TABLE_NOTE there."""
    train_fixed, _ = fixed_settings(rules)
    pts, refused, read, machines = {}, [], [], []
    for sweep in TRAIN_SWEEPS:
        path = os.path.join(folder, sweep + ".csv")
        if not os.path.isfile(path):
            continue
        read.append(path)
        names = variants(sweep)
        for line, r in enumerate(er.read_results_csv(path), start=2):
            seed = int(r["seed"])
            name = next((n for n in names if r["run"].endswith(f"-{n}-s{seed}")), None)
            named = next((n for n in names if n != "softmax" and r["wiring"].endswith("-" + n)), None)
            if name is None or (named is not None and named != name):
                raise er.TableError(f"{path}:{line}: run {r['run']!r} (wiring {r['wiring']!r}) names none of "
                                    f"{sweep}'s points ({', '.join(names)}) or another than its wiring")
            key = (name, int(r["depth"]))
            p = pts.setdefault(key, Point(name, key[1], need=need, no_probe=TABLE_NOTE))
            step = int(r["escape_step"]) if r["escape_step"] else None
            flat = {"model.n_layer": key[1], "model.init": r["init"], "optim.learning_rate": float(r["learning_rate"]),
                    "train.seed": seed, **names[name]}
            if step is None:  # never escaped within the steps it ran: its horizon
                flat["train.max_iters"] = int(r["steps"])
            diffs = rules_check.differences(_nest(flat), train_fixed)
            if diffs:
                refused.append((sweep, r["run"], diffs))
                p.refused += 1
                continue
            # a diverged run never escaped, as judge() reads one (escape_results.run_escape)
            p.seeds.append((seed, step, int(r["steps"]) if step is None else step))
            machines.append((r["cpu_model"], r["commit"]))
    return pts, refused, read, sorted(set(machines))


def judge_tables(folder: str, rules: dict) -> Judged:
    """The study judged from its committed results tables (folder/signal_shaped.csv, signal_sublayer.csv),
    as judge() does from run folders: the same points, verdicts and refusals, without rank ratios."""
    need = 2
    pts, refused, read, machines = table_points(folder, rules, need)
    missing = [key for key in PLAN if key not in pts or not pts[key].complete]
    sweeps = [os.path.splitext(os.path.basename(p))[0] for p in read]
    return Judged(pts, verdicts(pts, rules), missing, sweeps, rules, refused, read, machines)


def holds_tables(folder: str) -> bool:
    """Whether folder holds a training sweep's results table and none of the sweeps' run folders."""
    return (any(os.path.isfile(os.path.join(folder, s + ".csv")) for s in TRAIN_SWEEPS)
            and not any(runlog.is_sweep_dir(os.path.join(folder, s)) for s in SIGNAL_SWEEPS))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m stacklab.studies.signal", description=__doc__.split("\n")[0])
    ap.add_argument("root", help="the folder holding signal_shaped/, signal_sublayer/, signal_probe/, or the "
                                 "results tables signal_shaped.csv and signal_sublayer.csv (docs/results)")
    ap.add_argument("--rules", default=RULES)
    ap.add_argument("--results", help="write one CSV per training sweep here (docs/results)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.root):
        print(f"signal_study: {a.root} is not a folder", file=sys.stderr)
        return 2
    tables = holds_tables(a.root)
    if tables and a.results:
        print(f"signal_study: {a.root} holds results tables, not run folders: --results writes tables from runs",
              file=sys.stderr)
        return 2
    try:
        res = judge_tables(a.root, load_rules(a.rules)) if tables else judge(a.root, load_rules(a.rules))
    except ValueError as e:  # escape_results.TableError: a table cut or not as written, its line named
        print(f"signal_study: {e}", file=sys.stderr)
        return 2
    from stacklab.studies.signal_text import markdown  # the text renders a Judged: it imports this module
    sys.stdout.write(markdown(res))
    if res.refused:  # no results table holds a run the rules do not cover
        print(f"signal_study: {len(res.refused)} runs or probes in {a.root} were not judged: their settings differ "
              f"from the rules' ({RULES_FILE}; see above)" + ("; no results table written" if a.results else ""),
              file=sys.stderr)
        return 2
    if a.results:
        for sweep in TRAIN_SWEEPS:
            d = os.path.join(a.root, sweep)
            if os.path.isdir(d):
                n = write_results_csv(d, os.path.join(a.results, sweep + ".csv"), root=a.root)
                print(f"{sweep}: {n} runs -> {os.path.join(a.results, sweep + '.csv')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
