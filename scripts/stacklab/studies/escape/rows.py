"""The opt-in escape law's inputs (issue 45): its results tables and probe tables read into rows, the
sweeps and tables it reads by name, the runs each sweep file names, and the rows turned into the law's
observations (escape_law.Obs per run, seeds per (depth, rate) cell) with each depth's best rate.
Checked as escape_results.read_rows checks every table (a field missing, a torn last line: TableError,
naming the file and line).

    rows = read_table("docs/results/escape_law.csv")        # [Row]
    probe = read_probe_table("docs/results/escape_law_probe.csv")   # {(wiring, depth): (rank, grad)}
    cells, obs = _cells(rows, eval_interval())    # {(depth, rate): seeds}, {(depth, rate): [Obs]}
Not here: the judgement (study.py), the checks of its predictions (checks.py), writing a results table
from runs (tables.py).
"""
import csv
import json
import os
from dataclasses import dataclass

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab.studies.escape import tables as er
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


def best_rates(obs: dict) -> dict:
    """{depth: rate}: at each depth the rate whose runs escape earliest (the rules' reads (1): lowest
    median escape step over seeds, a censored run +inf; ties: fewer censored, then the lower rate)."""
    out = {}
    for d in sorted({d for d, _ in obs}):
        rates = [r for dd, r in obs if dd == d]
        out[d] = min(rates, key=lambda r: (er._median_key(obs[(d, r)]), r))
    return out


def named_runs(sweeps) -> dict:
    """{sweep: {(wiring, depth, rate, init): seeds}}: the runs each of `sweeps` names in its sweep file
    (SWEEP_FILES, escape_results.sweep_points), the runs its table holds once they are all done."""
    folder = os.path.dirname(ec.RULES_PATH)
    return {s: er.sweep_points(os.path.join(folder, SWEEP_FILES[s])) for s in sweeps}
