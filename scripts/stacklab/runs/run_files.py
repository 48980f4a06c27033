"""Reading one run folder (config.json, metrics.jsonl, summary.json) or one `stacklab probe` file
into a Run. Tolerant: a missing or unreadable file, a torn last line of metrics.jsonl give a warning
on stderr ("runlog: warning: ...") and an empty or None field, never an exception.

    run = load_run("runs/quickstart")       # a run dir, or a probe JSON written by `stacklab probe`
    records = read_metrics(path)            # metrics.jsonl's records by kind

Not here: what a Run's fields mean (loaded_run.py), sweeps and finding runs below a folder
(sweep_dirs.py).
"""
import json
import os
import sys

from stacklab.runs.loaded_run import KINDS, Run

RUN_FILES = ("metrics.jsonl", "config.json", "summary.json")


def warn(msg):
    print(f"runlog: warning: {msg}", file=sys.stderr)


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
