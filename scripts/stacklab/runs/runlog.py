"""What every reader of runs shares: the one definition of a diverged and a completed run, a run's
label and status mark, the data set it trained on, a study folder's timing records; and, re-exported
from the modules that hold them, the names everything imports from here (Run, load_run, find_runs,
sweep_runs, sweep_entries, ...), so `from stacklab.runs import runlog` is the one import a reader needs.

    run = load_run("runs/quickstart")      # or a probe JSON written by `stacklab probe`
    runs = find_runs(["runs/depth_sweep"])  # a sweep's runs (its manifest.json), or run dirs below a folder
    runs = sweep_runs("runs/depth_sweep")   # exactly the runs the sweep's manifest.json lists
    print(label(run))                       # "L=32 pre-norm residual: x + f(layernorm(x))"

Shared by plot_run.py and plot_compare.py. Tolerant: a missing or unreadable file, a torn last
line of metrics.jsonl, a non-finite value written as null give a warning on stderr and an empty
or None field, never an exception. Not here: the Run and what its fields say (loaded_run.py),
reading one run's files (run_files.py), a sweep's runs and finding runs (sweep_dirs.py); plotting,
anything that needs numpy.
"""
import json
import os

from stacklab.runs.loaded_run import KINDS, Run  # noqa: F401  (runlog's public names, re-exported)
from stacklab.runs.run_files import (RUN_FILES, _is_run_dir, _read_json, is_probe_file,  # noqa: F401  (as above)
                                     load_probe, load_run, read_metrics, warn)
from stacklab.runs.sweep_dirs import (CHANGED_DIR, MANIFEST, MAX_ITERS_OVERRIDE, SweepEntry,  # noqa: F401  (as above)
                                      find_runs, is_sweep_dir, load_entry, sweep_entries, sweep_runs)


def is_diverged(run) -> bool:
    """The one definition of a diverged run for every table, finding and figure: its summary.json
    says status "diverged". No loss threshold here: the trainer applies its rule and says so."""
    return run.status == "diverged"


def is_completed(run) -> bool:
    """A training run whose summary.json says status "completed" (its numbers may be used)."""
    return run.status == "completed"


def status_mark(run):
    """"" for a completed run or a probe, else e.g. " [diverged at step 120]", " [incomplete]"."""
    s = run.status
    if s in ("completed", "probe"):
        return ""
    if is_diverged(run):
        step = run.diverged_step
        return f" [diverged at step {step}]" if step is not None else " [diverged]"
    if s == "pending":
        return f" [pending: {run.pending}]"
    where = f" at step {run.last_step}" if run.last_step is not None else ""
    if s in ("interrupted", "running"):
        return f" [incomplete: {s}{where}]"
    return f" [incomplete{where}]"


def data_set(run):
    """(key, label) of the data a run trained on, None when its config does not say (a probe, a
    run without config.json). Runs of different keys have losses in different units of difficulty:
    a text file (its size and hash from provenance.json when there, else its data.path) or a
    Markov source of its own order, alpha and seed."""
    d = run.config.get("data") if not run.is_probe else None
    if not isinstance(d, dict) or "source" not in d:
        return None
    if d["source"] == "text":
        prov = _read_json(os.path.join(run.path, "provenance.json"), "provenance") or {}
        f = (prov.get("data") or {}).get("file") if isinstance(prov, dict) else None
        path = d.get("path", "")
        key = ("text", f.get("bytes"), f.get("fnv1a64")) if isinstance(f, dict) else ("text", os.path.normpath(path))
        return key, f"text {path}"
    params = tuple((k, d.get(k)) for k in ("order", "alpha", "seed") if k in d)
    return (d["source"], *params), " ".join([d["source"], *(f"{k}={v}" for k, v in params)])


def label(run):
    """The wiring formula with depth, marked when the run did not complete."""
    depth = run.n_layer if run.n_layer is not None else "?"
    text = f"L={depth} {run.formula}{status_mark(run)}"
    if run.is_probe:
        text += f" [probe, {run.probe_seeds} seed{'s' if run.probe_seeds != 1 else ''}]"
    return text


def read_timing(root) -> list:
    """A study folder's timing.jsonl records (scripts/reproduce.sh writes them), in order; a line
    that is no JSON is skipped, a folder without the file has none."""
    stages = []
    path = os.path.join(root, "timing.jsonl")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    stages.append(json.loads(line))
                except ValueError:
                    pass
    return stages


def study_start(root) -> dict:
    """The last start record of a study folder's timing.jsonl (the latest invocation of
    reproduce.sh: its tier, --tiny, CPU model, commit), else {}."""
    starts = [r for r in read_timing(root) if isinstance(r, dict) and r.get("stage") == "start"]
    return starts[-1] if starts else {}
