"""Fabricated runs for the analysis unit tests (tests/python): in-memory runlog.Run objects with
just the fields the tables, findings and figures read. The package is found through
PYTHONPATH=scripts, as scripts/test.sh's python stage runs these tests:
    PYTHONPATH=scripts MPLBACKEND=Agg /usr/bin/python3 -m unittest discover -s tests/python
Not here: any test.
"""
import json
import math
import os

from stacklab.runs import runlog

REFS = {"uniform": round(math.log(32), 5), "unigram": 3.412, "optimal": 2.251}
FORMULAS = {"pre-layernorm-res": "pre-norm residual: x + f(layernorm(x))",
            "post-layernorm-res": "post-norm residual: layernorm(x + f(x))",
            "none-res": "no norm, residual: x + f(x)",
            "pre-layernorm-nores": "pre-norm, no residual: f(layernorm(x))",
            "post-layernorm-nores": "post-norm, no residual: layernorm(f(x))",
            "none-nores": "no norm, no residual: f(x)"}


def run(wiring, depth, lr, seed, final, status="completed", diverged_step=None, evals=()):
    """A training run as report.py and plot_study.py see it; status is what summary.json says."""
    r = runlog.Run(path=f"/fabricated/L{depth}-{wiring}-lr{lr:g}-s{seed}")
    r.config = {"model": {"n_layer": depth, "vocab_size": 32}, "optim": {"learning_rate": lr},
                "train": {"seed": seed}}
    r.derived = {"wiring": wiring, "formula": FORMULAS.get(wiring, wiring)}
    r.summary = {"status": status, "final_val_loss": final, "reference_losses": dict(REFS),
                 "diverged": status == "diverged",
                 "divergence": {"step": diverged_step, "reason": "loss above 10 x ln(32)"} if diverged_step else None}
    r.records["start"] = [{"step": 0, "kind": "start", "n_layer": depth, "wiring": wiring,
                           "formula": r.derived["formula"], "reference_losses": dict(REFS)}]
    r.records["eval"] = [{"step": s, "kind": "eval", "val_loss": v} for s, v in evals]
    r.has_metrics = True
    return r


def probe(wiring, depth, grad_norm, rank_ratio=None, seeds=3):
    """A `stacklab probe` point as report.py loads it: one step-0 layers record of seed means,
    grad_norm per block (depth values), rank_ratio per boundary (depth + 1 values)."""
    r = runlog.Run(path=f"/fabricated/L{depth}-{wiring}-probe.json", is_probe=True, has_metrics=True,
                   probe_seeds=seeds)
    r.config = {"model": {"n_layer": depth, "vocab_size": 32}}
    r.derived = {"wiring": wiring, "formula": FORMULAS.get(wiring, wiring)}
    rec = {"step": 0, "kind": "layers", "grad_norm": list(grad_norm)}
    if rank_ratio is not None:
        rec["rank_ratio"] = list(rank_ratio)
    r.records["layers"] = [rec]
    return r


class FakeSweep:
    """What study_findings reads of a report.Sweep (training or probe): its runs, the excluded ones."""

    def __init__(self, name, runs):
        self.name, self.manifest = name, {"runs": []}
        self.runs, self.excluded, self.excluded_runs = [], [], {}
        for r in runs:
            rid = os.path.basename(r.path)
            seed = None if r.is_probe else (r.config.get("train") or {}).get("seed")
            self.manifest["runs"].append({"id": rid, **({"seeds": [seed]} if seed is not None else {})})
            if r.is_probe or (runlog.is_completed(r) and r.final_val_loss is not None):
                r.sweep_id, r.sweep_name = rid, name
                self.runs.append(r)
            else:
                self.excluded.append((rid, runlog.status_mark(r).strip(" []") or r.status))
                self.excluded_runs[rid] = r

    def by(self, wiring, depth=None):
        """As report.Sweep.by: the usable runs of one wiring (and depth)."""
        return [r for r in self.runs if r.wiring == wiring and (depth is None or r.n_layer == depth)]


# ---- runs of the claims (configs/experiments/claims.json, scripts/stacklab/studies/claims.py) -------------

def claim_config(overrides, seed=None, steps=150):
    """A full config as a run's config.json holds it: configs/base.json, stacklab's defaults of the
    keys claims.json names (claims.DEFAULTS), then the dotted overrides."""
    from stacklab.runs import tier_lists as tier
    from stacklab.studies import claims
    cfg = json.loads(json.dumps(tier.read_json(claims.BASE_PATH)))
    values = dict(claims.DEFAULTS)
    values["train.max_iters"] = steps
    values.update(overrides)
    for key, v in values.items():
        node = cfg
        *head, leaf = key.split(".")
        for part in head:
            node = node.setdefault(part, {})
        node[leaf] = v
    if seed is not None:
        cfg["train"]["seed"] = seed
    return cfg


def claim_probe(overrides, per_seed):
    """A probe file of a claims sweep: per_seed {seed: {metric: [values]}}."""
    r = runlog.Run(path="/fabricated/" + "-".join(f"{k}{v}" for k, v in overrides.items()) + "/probe.json",
                   is_probe=True, has_metrics=True, probe_seeds=len(per_seed))
    r.config = claim_config(overrides)
    r.probe_per_seed = [dict(layers, seed=s) for s, layers in per_seed.items()]
    return r


def claim_run(overrides, seed, final, status="completed", steps=150, layers=(), diverged_step=None):
    """A training run of a claims sweep; layers: [(step, {metric: [values]})]."""
    depth = overrides.get("model.n_layer", 4)
    r = run("claim", depth, overrides.get("optim.learning_rate", 1e-3), seed, final, status, diverged_step)
    r.path += "-" + "-".join(f"{k}{v}" for k, v in overrides.items())
    r.config = claim_config(overrides, seed, steps)
    r.records["layers"] = [dict(rec, step=s, kind="layers") for s, rec in layers]
    return r


MAP_VARIANTS = {  # the stability map's wirings as their configs set them (claims.json, C4)
    "pre": ({"norm_position": "pre", "residual_scale": "none"}, {}),
    "post": ({"norm_position": "post", "residual_scale": "none"}, {}),
    "post-warmup": ({"norm_position": "post", "residual_scale": "none"},
                    {"schedule": "warmup_constant", "warmup_iters": 50}),
    "deepnorm": ({"norm_position": "post", "residual_scale": "deepnorm"}, {}),
}
FINALS = {"trained": 3.2, "plateau": 3.42, "diverged": None}  # unigram 3.412: 3.2 trained, 3.42 plateau


def map_run(variant, init, depth, lr, seed, outcome, final=None):
    """A stability-map training run whose outcome (claims.json's definitions) is `outcome`; its
    wiring is in its config only (the path says nothing of it, as a report must not read it)."""
    model, optim = MAP_VARIANTS[variant]
    status = "diverged" if outcome == "diverged" else "completed"
    r = run(f"{model['norm_position']}-layernorm-res", depth, lr, seed,
            final if final is not None else FINALS[outcome], status=status,
            diverged_step=7 if outcome == "diverged" else None)
    r.path = f"/fabricated/stability_map/run{abs(hash((variant, init, depth, lr, seed))) % 10 ** 8}"
    r.config["model"].update(model, init=init, residual=True)
    r.config["optim"].update({"schedule": "constant", "warmup_iters": 0}, **optim)
    return r


# ---- runs of the convergence study (configs/experiments/convergence_rules.json) -------------------

def curve(steps, every, escape_at=None, start=3.45, floor=1.0, tau=None, plateau=3.44):
    """[(step, val loss)] at every `every` steps up to `steps`: on the plateau (above unigram 3.412)
    until `escape_at`, then falling from the plateau toward `floor` with time constant tau (steps)."""
    out = []
    for s in range(0, steps + 1, every):
        if escape_at is None or s < escape_at:
            out.append((s, start if s == 0 else plateau))
        else:
            t = (s - escape_at) / (tau or steps)
            out.append((s, floor + (3.30 - floor) * math.exp(-t)))  # 3.30 <= 3.412 - 0.1: escaped
    return out


def long_run(wiring, depth, lr, seed, evals, init="scaled", source="markov", status="completed", norm=None):
    """A convergence run: its config says its horizon (train.max_iters, the last eval step), init and
    source; a map wiring's position and residual are in its config as stability_map reads them."""
    steps = evals[-1][0] if evals else 0
    final = evals[-1][1] if evals and status == "completed" else None
    r = run(wiring, depth, lr, seed, final, status=status, diverged_step=steps // 2 if status == "diverged" else None,
            evals=evals)
    r.path += f"-{init}-{source}-{steps}"
    norm = norm or ("none" if wiring.startswith("none-") else "layernorm")
    r.config["model"].update(init=init, norm=norm, residual=wiring.endswith("-res"),
                             norm_position=wiring.split("-")[0] if wiring.split("-")[0] in ("pre", "post") else "pre",
                             residual_scale="none")
    r.config["optim"].update(schedule="constant", warmup_iters=0)
    r.config["train"]["max_iters"] = steps
    r.config["data"] = {"source": source}
    r.summary["steps"] = steps
    return r


# ---- runs and sweeps on disk (report.Sweep reads them as the binary leaves them) -----------------

def write_run_dir(path, r, config=True):
    """A fabricated Run as a run directory: config.json (with its derived section; none when config
    is False), summary.json and metrics.jsonl (its start and eval records)."""
    os.makedirs(path, exist_ok=True)
    if config:
        with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
            json.dump(dict(r.config, derived=r.derived), f)
    with open(os.path.join(path, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(r.summary, f)
    with open(os.path.join(path, "metrics.jsonl"), "w", encoding="utf-8") as f:
        for kind in ("start", "eval"):
            for rec in r.records[kind]:
                f.write(json.dumps(rec) + "\n")


def write_sweep_dir(root, name, runs, max_iters=None, config=True):
    """root/name/manifest.json listing each (id, Run) of `runs` (dir = id), every one with the override
    --train.max_iters=max_iters when given (as a sweep file's overrides put it there), and their run
    directories (write_run_dir; `config` a set of ids written without config.json, or a bool)."""
    d = os.path.join(root, name)
    entries = []
    for rid, r in runs:
        write_run_dir(os.path.join(d, rid), r, config=config if isinstance(config, bool) else rid not in config)
        entries.append({"id": rid, "dir": rid, "seeds": [r.config["train"]["seed"]], "status": "completed",
                        "overrides": [f"--train.max_iters={max_iters}"] if max_iters is not None else []})
    with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"name": name, "mode": "train", "base": "base.json", "runs": entries}, f)
    return d
