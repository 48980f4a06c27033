"""The escape-law study's runs as data: each run's escape interval (escape_law.Obs) by the rules'
escape criterion, the law's points (wiring, rate, init) -> runs, each depth's best rate, and the
results table docs/results/<sweep>.csv, one line per finished run, so that a lost run folder loses
no figure. The escape criterion is train.stop_below_unigram's (src/train/escape_stop.h): the first
eval at or below the run's unigram loss on its val batches (reference_losses.unigram_on_val; the
population "unigram" where a run predates it) minus the margin.

    obs, row = run_escape(run, margin=0.1)        # Obs (None: diverged or unfinished) and its CSV row
    write_results_csv("runs/escape_law/escape_l1", "docs/results/escape_l1.csv")
Not here: the fit (escape_law.py), the figure (plot_escape_law.py).
"""
import csv
import itertools
import json
import math
import os
from collections import defaultdict

from stacklab.runs import runlog
from stacklab.studies import stats
from stacklab.studies.escape.fit import escaped_at, never_within

COLUMNS = ("sweep", "run", "wiring", "depth", "learning_rate", "init", "seed", "steps", "escape_step",
           "censored", "best_val_loss", "final_val_loss", "unigram_reference", "cpu_model", "openblas_core",
           "commit")


def unigram_reference(run):
    """(value, name): reference_losses.unigram_on_val where the run records it, else "unigram"."""
    refs = run.reference_losses or {}
    if refs.get("unigram_on_val") is not None:
        return refs["unigram_on_val"], "unigram_on_val"
    return refs.get("unigram"), "unigram"


def evals(run):
    return sorted((r["step"], r["val_loss"]) for r in run.records["eval"]
                  if r.get("val_loss") is not None and isinstance(r.get("step"), (int, float))
                  and math.isfinite(r["val_loss"]))


def awaiting_extension(run) -> bool:
    """A run completed at an earlier stage's horizon that a later stage's sweep has not continued yet
    (Run.pending: summary.json completed below the horizon its sweep now gives it, config.json
    present). Its evals up to there are true, so the law reads it as never escaped within the
    steps it reached; every other number leaves it out (runlog's pending)."""
    s = run.summary or {}
    return (run.status == "pending" and s.get("status") == "completed" and run.has_config
            and isinstance(s.get("steps"), int) and not run.stopped_on_escape
            and "not yet extended" in (run.pending or ""))


def reached(run) -> bool:
    """Whether the law reads the run: completed, or completed at an earlier stage and awaiting its
    extension (censored at the steps it reached)."""
    return runlog.is_completed(run) or awaiting_extension(run)


def run_escape(run, margin: float):
    """(Obs or None, escape step or None, last eval step) of a finished run: escaped at the first
    eval at or below the reference - margin, in (previous eval step, that step]; else censored at
    its last eval (a run awaiting a later stage's extension at the steps it reached). A diverged or
    unfinished run has no Obs."""
    ev = evals(run)
    last = ev[-1][0] if ev else None
    if runlog.is_diverged(run) or not reached(run) or not ev:
        return None, None, last
    ref, _ = unigram_reference(run)
    step, _ = stats.escape_step(run, ref, margin)
    if step is None:
        return never_within(run.n_layer, last), None, last
    prev = max((s for s, _ in ev if s < step), default=None)
    interval = ((run.config.get("train") or {}).get("eval_interval") or (step - prev if prev is not None else step))
    return escaped_at(run.n_layer, step, interval, prev), step, last


def init_of(run) -> str:
    return (run.config.get("model") or {}).get("init", "normal")


# The wiring id's suffix for an attention-only stack (model.mlp = false: the rules' second knob), which
# the wiring id alone does not show: "none-nores" + ATTN_ONLY is f(x) with attention-only blocks.
ATTN_ONLY = "-attn-only"


def stack_suffix(model: dict) -> str:
    """ATTN_ONLY for a model section with model.mlp = false, else ""."""
    return ATTN_ONLY if (model or {}).get("mlp", True) is False else ""


def wiring_of(run) -> str:
    """The run's wiring id as the tables name it: its wiring, ATTN_ONLY appended for an attention-only
    stack."""
    return run.wiring + stack_suffix(run.config.get("model"))


def wiring_id(model: dict) -> str:
    """The wiring id a model section gives a run without a residual-scale, norm-scaling, qk-norm or attention
    variant (src/nn/wiring.cpp's wiring_id), ATTN_ONLY appended for an attention-only stack: "pre-layernorm-nores",
    "none-nores-attn-only"."""
    m = model or {}
    norm = m.get("norm", "layernorm")
    head = "none" if norm == "none" else f"{m.get('norm_position', 'pre')}-{norm}"
    return head + ("-res" if m.get("residual", True) else "-nores") + stack_suffix(m)


def sweep_points(path) -> dict:
    """{(wiring, depth, learning rate, init): {seeds}} of every run a sweep file names (its variants x grid x
    seeds, its overrides and base config for what they leave out): the points and seeds a results table of the
    sweep holds once every run of it is done."""
    with open(path, encoding="utf-8") as f:
        sweep = json.load(f)
    base = {}
    if sweep.get("base"):
        with open(os.path.join(os.path.dirname(path), sweep["base"]), encoding="utf-8") as f:
            base = json.load(f)
    grid = sweep.get("grid") or {}
    out = defaultdict(set)
    for variant in sweep.get("variants") or [{}]:
        for combo in itertools.product(*grid.values()):
            keys = {**(sweep.get("overrides") or {}), **dict(zip(grid, combo)), **variant}
            model = {**(base.get("model") or {}),
                     **{k.split(".", 1)[1]: v for k, v in keys.items() if k.startswith("model.")}}
            rate = keys.get("optim.learning_rate", (base.get("optim") or {}).get("learning_rate"))
            seeds = sweep.get("seeds") or [keys.get("train.seed", (base.get("train") or {}).get("seed"))]
            out[(wiring_id(model), int(model["n_layer"]), float(rate), model.get("init", "normal"))] |= set(seeds)
    return dict(out)


def points(runs, margin: float) -> dict:
    """{(wiring, learning rate, init): {depth: [Obs]}} over the finished runs."""
    out = defaultdict(lambda: defaultdict(list))
    for r in runs:
        o, _, _ = run_escape(r, margin)
        if o is not None:
            out[(wiring_of(r), stats.learning_rate(r), init_of(r))][r.n_layer].append(o)
    return {k: dict(v) for k, v in out.items()}


def _median_key(obs):
    """Sort key of a (depth, rate) cell for "best rate": the median of the intervals' upper ends
    (a censored run as +inf), then fewer censored runs."""
    med, _ = stats.median_escape([(None if o.censored else o.hi, o.lo) for o in obs])
    return (math.inf if med is None else med, sum(o.censored for o in obs))


def best_rate_obs(pts: dict, wiring: str, init: str = "normal") -> tuple:
    """(obs, {depth: rate}): at each depth the rate whose runs escape earliest (the lowest median
    escape step, a censored run +inf; ties: fewer censored, then the lower rate), its runs pooled
    over depths: the law read at each depth's best rate."""
    by_depth = defaultdict(dict)
    for (w, lr, i), cells in pts.items():
        if w == wiring and i == init:
            for d, obs in cells.items():
                by_depth[d][lr] = obs
    chosen, obs = {}, []
    for d in sorted(by_depth):
        lr = min(by_depth[d], key=lambda r: (_median_key(by_depth[d][r]), r))
        chosen[d] = lr
        obs += by_depth[d][lr]
    return obs, chosen


def held_rate_obs(pts: dict, wiring: str, rate: float, init: str = "normal") -> list:
    """The runs of one wiring at one rate over every depth: the law read at a rate held across depths."""
    cells = pts.get((wiring, rate, init), {})
    return [o for d in sorted(cells) for o in cells[d]]


# ---- the results table --------------------------------------------------------------------------

def study_machine(root):
    """(cpu_model, commit) from the study folder's timing.jsonl start record (scripts/reproduce.sh
    writes both; a run folder records neither: its provenance.json holds the config and data
    identity, its start record the OpenBLAS kernels), else ("", "")."""
    start = runlog.study_start(root)
    return (start.get("cpu_model") or "", start.get("commit") or "")


def _num(v, nd=6):
    return "" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{nd}g}"


def finished_runs(sweep_dir):
    """(entry, Run) of each finished run of the sweep (completed, diverged, or completed at an earlier
    stage and awaiting its extension: a staged sweep's table keeps every run between its stages), in
    run-id order."""
    _, entries = runlog.sweep_entries(sweep_dir)
    for e in sorted(entries, key=lambda e: e.id):
        if not os.path.isdir(e.path):
            continue
        run = runlog.load_entry(e)
        if reached(run) or runlog.is_diverged(run):
            yield e, run


def rows_of(sweep_dir, margin: float, cpu_model: str = "", commit: str = "") -> list:
    """One dict per finished run of the sweep (finished_runs: completed, diverged, or awaiting a later
    stage's extension, censored at the steps it reached), in run-id order."""
    name = os.path.basename(os.path.normpath(sweep_dir))
    rows = []
    for e, run in finished_runs(sweep_dir):
        obs, step, last = run_escape(run, margin)
        s = run.summary or {}
        best = s.get("best_val_loss")
        if best is None:
            ev = [v for _, v in evals(run)]
            best = min(ev) if ev else None
        censored = ("diverged" if runlog.is_diverged(run)
                    else "yes" if obs is not None and obs.censored else "no")
        kernels = (run.start.get("numeric_path") or {}).get("openblas_core", "")
        rows.append({"sweep": name, "run": e.id, "wiring": wiring_of(run), "depth": run.n_layer,
                     "learning_rate": _num(stats.learning_rate(run)), "init": init_of(run),
                     "seed": stats.seed_of(run), "steps": s.get("steps", last),
                     "escape_step": "" if step is None else step,
                     "censored": censored,
                     "best_val_loss": _num(best), "final_val_loss": _num(run.final_val_loss),
                     "unigram_reference": unigram_reference(run)[1],
                     "cpu_model": cpu_model, "openblas_core": kernels,
                     "commit": commit})
    return rows


class TableError(ValueError):
    """A table under docs/results/ that cannot be read as written; the message names the file and line."""


def nonempty(v):
    if not v:
        raise ValueError("empty")
    return v


def any_text(v):
    return v


def integer(lowest):
    def parse(v):
        x = float(v)  # "4150" (and "4150.0", as a float step was written) but not "41x"
        if not math.isfinite(x) or not x.is_integer() or x < lowest:
            raise ValueError(f"not an integer >= {lowest}")
        return int(x)
    return parse


def positive(v):
    x = float(v)
    if not math.isfinite(x) or x <= 0:
        raise ValueError("not a finite number > 0")
    return x


def optional(parse):
    def opt(v):
        return None if v == "" else parse(v)
    return opt


def finite(v):
    x = float(v)
    if not math.isfinite(x):
        raise ValueError("not finite")
    return x


def one_of(*allowed):
    def parse(v):
        if v not in allowed:
            raise ValueError(f"not one of {', '.join(allowed)}")
        return v
    return parse


def commit_field(v):
    """A commit as study_machine records it: empty (not recorded), "unknown" (reproduce.sh outside git) or a
    full hexadecimal hash (a cut one is a torn write)."""
    if v in ("", "unknown") or (len(v) in (40, 64) and all(c in "0123456789abcdef" for c in v)):
        return v
    raise ValueError("not a full commit hash (40 hex digits), 'unknown' or empty")


# Each column of COLUMNS: how its text is read (ValueError: not a valid value).
FIELDS = {"sweep": nonempty, "run": nonempty, "wiring": nonempty, "depth": integer(1), "learning_rate": positive,
          "init": nonempty, "seed": integer(0), "steps": integer(0), "escape_step": optional(integer(0)),
          "censored": one_of("yes", "no", "diverged"), "best_val_loss": optional(finite),
          "final_val_loss": optional(finite), "unigram_reference": one_of("unigram_on_val", "unigram"),
          "cpu_model": any_text, "openblas_core": any_text, "commit": commit_field}


def read_rows(path, fields: dict, key=("run",), what="results-table row", check=None) -> list:
    """The rows of a CSV table under docs/results/ as dicts of their text, every row checked: the header holds
    every column of `fields`, each line has as many fields as the header, each value parses by its column's
    function in `fields`, check(row) (a cross-field rule: None, or why the row breaks it) holds, no two rows
    share `key`, and the last line ends with a newline (one without is a torn write: the table was cut while
    being written). TableError naming the file and line otherwise. The one reader of such tables
    (read_results_csv, escape_study.read_probe_table)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except UnicodeDecodeError as e:
        raise TableError(f"{path}: not UTF-8 text ({e})") from None
    if not text:
        raise TableError(f"{path}:1: an empty file, not a table (header: {','.join(fields)})")
    if not text.endswith("\n"):
        raise TableError(f"{path}:{text.count(chr(10)) + 1}: the last line ends without a newline: a torn write "
                         "(the table was cut while being written); write it again from its runs")
    reader = csv.reader(text.splitlines(keepends=True))
    header = next(reader)
    missing = [c for c in fields if c not in header]
    if missing:
        raise TableError(f"{path}:1: not a {what.replace(' row', '')}'s header: no column {', '.join(missing)}")
    out, seen = [], {}
    for values in reader:
        line = reader.line_num
        if len(values) != len(header):
            raise TableError(f"{path}:{line}: not a {what} ({len(values)} fields, the header has {len(header)})")
        r = dict(zip(header, values))
        for col, parse in fields.items():
            try:
                parse(r[col])
            except ValueError as e:
                raise TableError(f"{path}:{line}: not a {what} ({col} {r[col]!r}: {e})") from None
        why = check(r) if check else None
        if why:
            raise TableError(f"{path}:{line}: not a {what} ({why})")
        k = tuple(r[c] for c in key)
        if k in seen:
            raise TableError(f"{path}:{line}: not a {what} ({', '.join(key)} {', '.join(k)} again, first at line "
                             f"{seen[k]})")
        seen[k] = line
        out.append(r)
    return out


def _censored_agrees(r):
    """None, or why a results-table row's censored, escape_step and steps disagree."""
    esc, c = r["escape_step"], r["censored"]
    if (esc != "") != (c == "no"):
        return f"censored {c!r} with escape_step {esc!r}: an escape step goes with censored 'no' only"
    if esc != "" and float(esc) > float(r["steps"]):
        return f"escape_step {esc} after the {r['steps']} steps run"
    return None


def read_results_csv(path) -> list:
    """The rows of a results table (write_results_csv's, COLUMNS) as dicts of their text, each checked (read_rows:
    field count, types, commit, a torn last line, a run twice) and censored agreeing with escape_step (an escape
    step for "no" and only for it, at or before the steps run); TableError naming the file and line otherwise.
    The reader of every results table (escape_law*.csv, signal_*.csv)."""
    return read_rows(path, FIELDS, check=_censored_agrees)


def write_results_csv(sweep_dir, out_csv, margin: float = stats.ESCAPE_MARGIN, root=None) -> int:
    """Writes the sweep's rows_of to out_csv (header first, runs by id; the same folder gives the
    same bytes); the CPU model and commit from root's (default: the sweep's parent's) timing.jsonl.
    Returns the number of runs written."""
    cpu, commit = study_machine(root or os.path.dirname(os.path.normpath(sweep_dir)))
    rows = rows_of(sweep_dir, margin, cpu, commit)
    os.makedirs(os.path.dirname(os.path.abspath(out_csv)), exist_ok=True)
    with open(out_csv, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    return len(rows)
