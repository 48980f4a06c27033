"""Reads stacklab run directories (config.json, metrics.jsonl, summary.json) and probe files.

Shared by plot_run.py and plot_compare.py. Tolerant: a missing or unreadable file, a torn last
line of metrics.jsonl, a non-finite value written as null give a warning on stderr and an empty
or None field, never an exception. Not here: plotting, anything that needs numpy.

    run = load_run("runs/quickstart")      # or a probe JSON written by `stacklab probe`
    runs = find_runs(["runs/depth_sweep"])  # a sweep's runs (its manifest.json), or run dirs below a folder
    runs = sweep_runs("runs/depth_sweep")   # exactly the runs the sweep's manifest.json lists
    print(label(run))                       # "L=32 pre-norm residual: x + f(layernorm(x))"
"""
import json
import os
import re
import sys
from dataclasses import dataclass, field

RUN_FILES = ("metrics.jsonl", "config.json", "summary.json")
MANIFEST = "manifest.json"  # <sweep out_dir>/manifest.json, written by `stacklab sweep` (src/sweep/common.cpp)
# A run directory `stacklab sweep --on-change rerun` moved aside (src/sweep/local.cpp): never one of
# the sweep's runs, so never read as one.
CHANGED_DIR = re.compile(r"\.changed-[0-9]+$")
# A manifest entry's horizon: the sweep's override of train.max_iters (src/sweep/common.cpp writes
# each run's overrides as the command line's "--key=value").
MAX_ITERS_OVERRIDE = re.compile(r"^(?:--)?train\.max_iters=([0-9]+)$")
# The record kinds of metrics.jsonl, as `stacklab registry --records --json` declares them
# (tests/python/test_record_schema.py checks the two agree).
KINDS = ("start", "resume", "train", "eval", "layers", "diverged")


def warn(msg):
    print(f"runlog: warning: {msg}", file=sys.stderr)


@dataclass
class Run:
    path: str                      # the run dir, or the probe file
    config: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)
    records: dict = field(default_factory=lambda: {k: [] for k in KINDS})  # kind -> [record]
    summary: dict | None = None
    is_probe: bool = False
    has_metrics: bool = False      # metrics.jsonl existed and was readable
    probe_seeds: int = 0
    probe_layer_metrics: list | None = None  # a probe file's metric descriptors
    probe_per_seed: list = field(default_factory=list)  # a probe file's seeds: [{seed, loss, <metric>: [...]}]
    has_config: bool = True        # config.json existed and was readable (load_run)
    in_sweep: bool = False         # read as a run its sweep's manifest lists (load_entry)
    sweep_max_iters: int | None = None  # the horizon its sweep's manifest gives it, when it sets one

    @property
    def name(self):
        return os.path.basename(os.path.normpath(self.path))

    @property
    def start(self):
        return self.records["start"][0] if self.records["start"] else {}

    @property
    def n_layer(self):
        n = self.config.get("model", {}).get("n_layer") or self.start.get("n_layer")
        if n is None and self.records["layers"]:
            n = len(self.records["layers"][0].get("grad_norm") or []) or None
        return n

    @property
    def wiring(self):
        """The short wiring id, e.g. "pre-layernorm-res"; runs are grouped by it."""
        return self.derived.get("wiring") or self.start.get("wiring") or "unknown-wiring"

    @property
    def formula(self):
        """The block formula in words, e.g. "pre-norm residual: x + f(layernorm(x))"."""
        return self.derived.get("formula") or self.start.get("formula") or self.wiring

    @property
    def status(self):
        """summary.json's status ("completed" | "diverged" | "interrupted" | "running" |
        "failed"), "probe" for a probe file, "incomplete" without a summary, and "pending" for a
        run whose summary says completed but that is not done (`pending` says why). The trainer
        decides divergence (a non-finite loss or one above 10 x ln(vocab_size)); nothing here judges a loss."""
        if self.is_probe:
            return "probe"
        if self.summary and self.summary.get("status"):
            if self.summary["status"] == "completed" and self.pending:
                return "pending"
            return self.summary["status"]
        return "incomplete"

    @property
    def pending(self) -> str | None:
        """Why a run whose summary.json says completed is not done, None when it is: a copy an
        extension sweep has not continued yet (completed below the horizon its sweep's manifest or its
        own config.json gives it, as `train --resume --train.max_iters=N` leaves it when stopped before
        its summary says running), or a run of a sweep without config.json (a copy interrupted
        midway, a deleted config), done under no config. Such a run is in no number."""
        if self.is_probe or not self.summary or self.summary.get("status") != "completed":
            return None
        if self.in_sweep and not self.has_config:
            return "no config.json (a copy interrupted midway or a deleted config): done under no config"
        own = (self.config.get("train") or {}).get("max_iters")
        steps = self.summary.get("steps")
        horizon = self.sweep_max_iters if self.sweep_max_iters is not None else own
        if isinstance(steps, int) and isinstance(horizon, int) and steps < horizon and not self.stopped_on_escape:
            whose = "its sweep" if self.sweep_max_iters is not None else "its config.json"
            return f"completed {steps} of the {horizon} steps {whose} gives it (not yet extended)"
        # A run stopped on escape is done at any longer horizon (stacklab sweep --on-change extend leaves
        # it alone, config.json and all: provenance.cpp's done_on_escape), so a later stage's sweep
        # giving it more steps makes it no less done.
        if (self.sweep_max_iters is not None and isinstance(own, int) and own != self.sweep_max_iters
                and not self.stopped_on_escape):
            return f"its config.json says train.max_iters {own}, its sweep {self.sweep_max_iters}"
        return None

    @property
    def stopped_on_escape(self) -> bool:
        """Whether train.stop_below_unigram ended the run, under the margin its config.json still asks for:
        summary.json's stopped {reason "escaped", margin}. Such a run is done below its horizon (the
        binary's rule, src/train/escape_stop.cpp stopped_on_escape), not a copy waiting to be extended."""
        st = (self.summary or {}).get("stopped")
        margin = (self.config.get("train") or {}).get("stop_below_unigram")
        return (isinstance(st, dict) and st.get("reason") == "escaped" and isinstance(margin, (int, float))
                and margin > 0 and st.get("margin") == margin)

    @property
    def diverged_step(self):
        d = (self.summary or {}).get("divergence")
        if isinstance(d, dict) and d.get("step") is not None:
            return d["step"]
        return self.records["diverged"][0].get("step") if self.records["diverged"] else None

    @property
    def last_step(self):
        steps = [r["step"] for recs in self.records.values() for r in recs
                 if isinstance(r.get("step"), (int, float))]
        return max(steps) if steps else None

    @property
    def reference_losses(self):
        return (self.start.get("reference_losses") or (self.summary or {}).get("reference_losses")
                or {})

    @property
    def final_val_loss(self):
        """summary's final_val_loss, else the last eval's; None when unknown or non-finite."""
        v = (self.summary or {}).get("final_val_loss")
        if v is None:
            evals = [r.get("val_loss") for r in self.records["eval"] if r.get("val_loss") is not None]
            v = evals[-1] if evals else None
        return v

    @property
    def layer_metrics(self):
        """The per-layer metric descriptors, [{name, axis ("block" | "boundary"), label,
        description, ...}]: what stacklab wrote into the start record (or the probe file). For
        a run from before they were written, inferred from the first layers record: a list of
        n_layer values is per block, n_layer + 1 per boundary, and the key is the label."""
        given = self.probe_layer_metrics if self.is_probe else self.start.get("layer_metrics")
        recs, n = self.records["layers"], self.n_layer
        if isinstance(given, list) and given:
            return [d for d in given if isinstance(d, dict) and d.get("name")]
        if not recs or not n:
            return []
        out, seen = [], set()
        for rec in recs:
            for key, v in rec.items():
                if key not in seen and isinstance(v, list) and len(v) in (n, n + 1):
                    seen.add(key)
                    axis = "block" if len(v) == n else "boundary"
                    out.append({"name": key, "axis": axis, "label": key, "description": key})
        return out

    def layers_at(self, step):
        """The layers record at `step`, else the nearest one; None when there is none."""
        recs = self.records["layers"]
        if not recs:
            return None
        return min(recs, key=lambda r: (abs(r.get("step", 0) - step), r.get("step", 0)))


def _read_json(path, what):
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        warn(f"{path}: unreadable {what} ({e}); ignoring it")
        return None


def read_metrics(path):
    """Records of a metrics.jsonl grouped by kind. A last line without a newline (a torn write)
    is dropped; other unparsable lines are dropped with a warning."""
    records = {k: [] for k in KINDS}
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1].strip():
        warn(f"{path}: last line has no trailing newline (torn write?); ignoring it")
    lines = lines[:-1]  # everything after the last newline: empty or torn
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            warn(f"{path}:{i}: not a JSON object; ignoring the line")
            continue
        if not isinstance(rec, dict) or "kind" not in rec:
            warn(f"{path}:{i}: record without 'kind'; ignoring it")
            continue
        records.setdefault(rec["kind"], []).append(rec)
    return records


def is_probe_file(path):
    if not (path.endswith(".json") and os.path.isfile(path)):
        return False
    if os.path.basename(path) in ("config.json", "summary.json", "manifest.json"):
        return False
    j = _read_json(path, "JSON file")
    return isinstance(j, dict) and isinstance(j.get("mean"), dict) and "seeds" in j


def load_probe(path):
    """A `stacklab probe` file as a Run with one step-0 layers record: the seed means."""
    j = _read_json(path, "probe file") or {}
    run = Run(path=path, config=j.get("config") or {}, derived=j.get("derived") or {},
              is_probe=True, has_metrics=True)
    mean = dict(j.get("mean") or {})
    mean.update(kind="layers", step=0)
    if j.get("ratio_first_last") is not None:
        mean["ratio_first_last"] = j["ratio_first_last"]
    seeds = j.get("seeds") or []
    run.probe_seeds = len(seeds)
    run.probe_layer_metrics = j.get("layer_metrics")
    run.probe_per_seed = [dict(s.get("layers") or {}, seed=s.get("seed"), loss=s.get("loss"))
                          for s in seeds if isinstance(s, dict)]
    if mean.get("loss") is None and seeds:
        losses = [s.get("loss") for s in seeds if s.get("loss") is not None]
        mean["loss"] = sum(losses) / len(losses) if losses else None
    run.records["layers"].append(mean)
    return run


def load_run(path):
    """A run directory (or a probe file) as a Run; missing pieces warn and stay empty."""
    if os.path.isfile(path):
        return load_probe(path)
    run = Run(path=path)
    cfg = _read_json(os.path.join(path, "config.json"), "config")
    if cfg is None:
        run.has_config = False
        warn(f"{os.path.join(path, 'config.json')}: missing or unreadable; using metrics only")
    else:
        run.derived = cfg.get("derived") or {}
        run.config = {k: v for k, v in cfg.items() if k != "derived"}
    metrics = os.path.join(path, "metrics.jsonl")
    if os.path.isfile(metrics):
        try:
            run.records = read_metrics(metrics)
            run.has_metrics = True
        except OSError as e:
            warn(f"{metrics}: cannot read ({e})")
    else:
        warn(f"{metrics}: no such file")
    run.summary = _read_json(os.path.join(path, "summary.json"), "summary")
    return run


def _is_run_dir(path):
    return any(os.path.isfile(os.path.join(path, f)) for f in RUN_FILES)


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
