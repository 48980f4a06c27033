"""The runs of a sweep, the one definition every reader of a sweep uses (plots, report, claims,
stability map, tier tools): the runs its manifest.json lists, never the folders beside them; and
finding runs under paths that mix run dirs, sweep dirs and probe files.

    runs = sweep_runs("runs/depth_sweep")   # exactly the runs the sweep's manifest.json lists
    runs = find_runs(["runs/depth_sweep"])  # a sweep's runs, or run dirs below a folder

Not here: reading one run (run_files.py), what a Run's fields mean (loaded_run.py).
"""
import json
import os
import re
from dataclasses import dataclass

from stacklab.runs.run_files import RUN_FILES, _is_run_dir, _read_json, is_probe_file, load_run, warn

MANIFEST = "manifest.json"  # <sweep out_dir>/manifest.json, written by `stacklab sweep` (src/sweep/common.cpp)
# A run directory `stacklab sweep --on-change rerun` moved aside (src/sweep/local.cpp): never one of
# the sweep's runs, so never read as one.
CHANGED_DIR = re.compile(r"\.changed-[0-9]+$")
# A manifest entry's horizon: the sweep's override of train.max_iters (src/sweep/common.cpp writes
# each run's overrides as the command line's "--key=value").
MAX_ITERS_OVERRIDE = re.compile(r"^(?:--)?train\.max_iters=([0-9]+)$")


def is_sweep_dir(path) -> bool:
    """A `stacklab sweep` out_dir: it holds manifest.json."""
    return os.path.isfile(os.path.join(path, MANIFEST))


@dataclass
class SweepEntry:
    id: str
    path: str      # what load_run reads: the run dir (train) or its probe.json (probe)
    status: str    # the sweep's word for it when the manifest was written
    entry: dict    # the manifest's record (id, dir, overrides, seeds, status, job)

    @property
    def max_iters(self) -> int | None:
        """The horizon the sweep gives this run (its train.max_iters override), None when it sets none."""
        for o in self.entry.get("overrides") or []:
            m = MAX_ITERS_OVERRIDE.match(str(o))
            if m:
                return int(m.group(1))
        return None


def load_entry(e: SweepEntry):
    """A sweep's run (load_run) that knows it is one and the horizon its sweep gives it, so that a
    copy not yet extended or a run without config.json reads as pending (Run.pending)."""
    run = load_run(e.path)
    if not run.is_probe:
        run.in_sweep, run.sweep_max_iters = True, e.max_iters
    return run


def sweep_entries(sweep_dir) -> tuple[dict, list[SweepEntry]]:
    """The runs of a sweep: the one definition every reader of a sweep uses (plots, report, claims,
    stability map, tier tools). They are the runs its manifest.json lists, at <sweep>/<dir>, never
    the folders beside them (a `<dir>.changed-N` kept by --on-change rerun, a run copied in by
    hand). Returns (manifest, entries); ({}, []) with a warning when the manifest is missing or is
    not a sweep manifest. An entry's path may not exist yet (a run not started)."""
    path = os.path.join(sweep_dir, MANIFEST)
    if not os.path.isfile(path):
        warn(f"{sweep_dir}: not a sweep directory (no {MANIFEST}); no runs taken from it")
        return {}, []
    manifest = _read_json(path, "manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("runs"), list):
        if manifest is not None:
            warn(f"{path}: not a stacklab sweep manifest (no \"runs\" list); no runs taken from it")
        return {}, []
    probe = manifest.get("mode") == "probe"
    out = []
    for e in manifest["runs"]:
        if not isinstance(e, dict) or not isinstance(e.get("id"), str):
            warn(f"{path}: a run entry without an \"id\" ({json.dumps(e)[:80]}); ignoring it")
            continue
        d = os.path.join(sweep_dir, str(e.get("dir") or e["id"]))
        out.append(SweepEntry(e["id"], os.path.join(d, "probe.json") if probe else d, str(e.get("status", "?")), e))
    return manifest, out


def sweep_runs(sweep_dir) -> list:
    """The sweep's runs (sweep_entries) that exist on disk, loaded; the ones not started are left
    out (`stacklab sweep --status` counts them)."""
    _, entries = sweep_entries(sweep_dir)
    return [load_entry(e) for e in entries if os.path.exists(e.path)]


def find_runs(paths, depth=2):
    """Runs under each path, sorted by (wiring, n_layer, path). A run dir or probe file is itself;
    a sweep dir (with manifest.json) gives the runs its manifest lists (sweep_runs), as long as
    they lie at most `depth` levels below the path. A folder that is neither (runs you trained into one place)
    is walked up to `depth` levels for run dirs and probe files, with a note, skipping the
    `*.changed-N` folders a sweep moved aside."""
    found, seen = [], set()

    def add(run):
        real = os.path.realpath(run.path)
        if real not in seen:
            seen.add(real)
            found.append(run)

    def visit(p, level):
        if os.path.isdir(p) and _is_run_dir(p) or is_probe_file(p):
            add(load_run(p))
            return level > 0  # a run found by walking, not given nor listed by a manifest
        if os.path.isdir(p) and is_sweep_dir(p) and level < depth:  # its runs one level down
            for run in sweep_runs(p):
                add(run)
            return False
        walked = False
        if os.path.isdir(p) and level < depth:
            for child in sorted(os.listdir(p)):
                if CHANGED_DIR.search(child):
                    warn(f"{os.path.join(p, child)}: a run moved aside by --on-change rerun; left out")
                    continue
                walked = visit(os.path.join(p, child), level + 1) or walked
        return walked

    for p in paths:
        if not os.path.exists(p):
            warn(f"{p}: no such file or directory")
            continue
        before = len(found)
        if visit(p, 0):
            warn(f"{p}: holds run dirs outside any sweep's {MANIFEST}; taking every run dir found below it")
        if len(found) == before:
            warn(f"{p}: no run directories (with {', '.join(RUN_FILES)}) or probe files found")
    found.sort(key=lambda r: (r.wiring, r.n_layer or 0, r.path))
    return found
