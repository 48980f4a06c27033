"""A run's config against what a study's rules fix (issue 60): the one check every judge that reads a
rules file makes before it judges a run. A rules file fixes a run's settings through the sweep files
it judges (configs/experiments/<sweep>.json, committed with the rules before their runs: base.json,
overrides, grid, variants, seeds) and through fields of its own (a horizon, a margin, seeds). A run
whose config holds another value of such a key is not a run of the rules: its judge refuses it, or
names it "not judged" with the keys that differ, and judges the others.

    fixed = settings(["signal_shaped", "signal_sublayer"])     # [{dotted key: [values]}], one per variant
    fixed = narrow(fixed, {"train.max_iters": [5500]})         # what the rules' own fields fix
    diffs = differences(run.config, fixed)                     # [Difference(key, value, allowed)], [] if ok
    describe(diffs)        # "train.max_iters 20 (the rules: 5500); model.n_embd 16 (the rules: 64)"

A study made with --tiny (its timing.jsonl start record) ran the sweep files scaled down as
`tier.py prepare --tiny` writes them: its runs are compared with those (tiny=True), and the report's
tier line says "(--tiny)". The full tier's files (configs/experiments/full/) stand in for a sweep the
full tier widens. A key the run's config does not hold is not compared (the binary writes every key
into config.json; a run made before a key existed ran with its default, which the rules' files assume
too). Keys that change no number a judge reads are never compared (NOT_MEASURED); data.path is
compared by its file (the last two parts of the path), not where the study folder kept it.
Not here: which runs a judge reads, its verdicts, its text.
"""
import copy
import functools
import json
import math
import os
from typing import NamedTuple

from stacklab.runs import tier_lists as tier
from stacklab.runs import checkpoint_config, runlog

# What a run may set as it likes: its name and folder, its threads, its checkpoints (and what it keeps of
# them) and logging.
NOT_MEASURED = ("description", "extends", "train.name", "train.out_dir", "train.threads", "train.ckpt_interval",
                "train.save_best", "train.keep_final", "log.")
PROBE_KEYS = ("model.", "data.")  # a probe trains nothing: its model and data are what it measures


class Difference(NamedTuple):
    key: str        # the dotted key, "model.n_embd"
    value: object   # the run's value
    allowed: list   # the values the rules allow there

    def to_json(self) -> dict:
        return {"key": self.key, "value": self.value, "rules": list(self.allowed)}


def flatten(cfg: dict, prefix: str = "") -> dict:
    """{dotted key: value} of a config's sections (nested dicts; a list or scalar is a value)."""
    out = {}
    for k, v in (cfg or {}).items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        elif prefix:  # a top-level scalar (description, extends) is no setting
            out[f"{prefix}{k}"] = v
    return out


def _base(path: str) -> dict:
    """The flattened config of a base file, its `extends` chain applied (the file's keys over its parent's)."""
    cfg = tier.read_json(path)
    parent = cfg.get("extends")
    out = _base(os.path.join(os.path.dirname(path), parent)) if isinstance(parent, str) else {}
    out.update(flatten(cfg))
    return out


@functools.lru_cache(maxsize=None)
def _index(folder: str) -> dict:
    """{sweep name: [paths of the sweep files of that name]} of a configs folder (rules files have no "base")."""
    out = {}
    for f in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not f.endswith(".json"):
            continue
        try:
            doc = tier.read_json(os.path.join(folder, f))
        except tier.TierError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("name"), str) and isinstance(doc.get("base"), str):
            out.setdefault(doc["name"], []).append(os.path.join(folder, f))
    return out


def sweep_files(name: str, tier_name: str = "quick") -> list:
    """The sweep files that write the study folder's sweep `name` (escape_law: its stages h0, h1, h2):
    the full tier's where the full tier widens the sweep, else configs/experiments/'s."""
    if tier_name == "full" and _index(tier.FULL_DIR).get(name):
        return list(_index(tier.FULL_DIR)[name])
    return list(_index(tier.QUICK_DIR).get(name, []))


def _norm(key: str, v):
    """A value as compared: data.path by its file (the last two parts), the rest as it is."""
    if key == "data.path" and isinstance(v, str) and v:
        return "/".join(os.path.normpath(v).split(os.sep)[-2:])
    return v


def _add(allowed: dict, key: str, v):
    v = _norm(key, v)
    if not any(same(v, a) for a in allowed.setdefault(key, [])):
        allowed[key].append(v)


def sweep_settings(path: str, tiny: bool = False) -> list:
    """What one sweep file fixes: one {dotted key: [allowed values]} per variant (its runs are one of
    them): stacklab's defaults under the base config under the overrides under the variant, each grid
    key's values, the sweep's seeds as train.seed; scaled down as --tiny scales it when tiny."""
    s = tier.prepared(path, tiny)
    common = flatten(checkpoint_config.defaults())  # what a key neither the base nor the sweep sets holds
    common.update(_base(s["base"]))
    common.update(s.get("overrides") or {})
    if s.get("seeds"):  # a sweep's seeds replace its base's train.seed
        common.pop("train.seed", None)
    grid = s.get("grid") or {}
    variants = [v for v in (s.get("variants") or [{}]) if isinstance(v, dict)] or [{}]
    out = []
    for v in variants:
        allowed = {}
        for key in (set(common) | set(grid) | set(v)) - {"name"}:
            for x in ([v[key]] if key in v else grid[key] if key in grid else [common[key]]):
                _add(allowed, key, x)
        for seed in s.get("seeds") or []:
            _add(allowed, "train.seed", seed)
        if allowed.get("data.source") == ["text"]:  # the text file sets the vocabulary (src/train/setup.cpp)
            allowed.pop("model.vocab_size", None)
        out.append(allowed)
    return out


def settings(names, tier_name: str = "quick", tiny: bool = False) -> list:
    """What the sweep files of the named sweeps fix: [{key: [values]}], one per variant of each file (a run
    of the rules matches one of them); ValueError when a name has no sweep file (a rules file naming a
    sweep that is not there is a broken repository, not a run)."""
    out = []
    for name in ([names] if isinstance(names, str) else names):
        files = sweep_files(name, tier_name)
        if not files:
            raise ValueError(f"rules_check: no sweep file named {name!r} in {tier.QUICK_DIR}")
        for path in files:
            out += sweep_settings(path, tiny)
    return out


def allowed(fixed: list, key: str) -> list:
    """Every value of `key` some alternative of `fixed` allows, in first-seen order."""
    out = {}
    for alt in fixed:
        for v in alt.get(key, []):
            _add(out, key, v)
    return out.get(key, [])


def narrow(fixed: list, own: dict) -> list:
    """`fixed` with what a rules file's own fields fix ({key: [values]}) in every alternative: a key both
    fix keeps the values both allow; a key only the rules fix is added."""
    out = []
    for alt in fixed:
        alt = {k: list(v) for k, v in alt.items()}
        for key, values in own.items():
            values = [_norm(key, v) for v in values]
            alt[key] = [v for v in alt[key] if any(same(v, w) for w in values)] if key in alt else values
        out.append(alt)
    return out


def same(a, b) -> bool:
    """Equal as settings: numbers to a relative 1e-9 (3e-4 is 0.0003), a bool only to a bool."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)
    return a == b


def compared(key: str, probe: bool = False) -> bool:
    if any(key == k or (k.endswith(".") and key.startswith(k)) for k in NOT_MEASURED):
        return False
    return not probe or key.startswith(PROBE_KEYS)


def _differ(run: dict, alt: dict, probe: bool) -> list:
    out = []
    for key in sorted(alt):
        if not compared(key, probe) or key not in run:
            continue
        if not any(same(_norm(key, run[key]), a) for a in alt[key]):
            out.append(Difference(key, run[key], list(alt[key])))
    return out


def differences(config: dict, fixed: list, probe: bool = False) -> list:
    """[] for a run of the rules (its config matches an alternative of `fixed`), else the [Difference] of
    the alternative it is closest to (fewest keys differ), in key order: each key the rules fix whose
    value in the run's config is not one they allow there. probe: a probe's config (its model and data
    compared only)."""
    run = flatten(config or {})
    best = None
    for alt in fixed:
        d = _differ(run, alt, probe)
        if not d:
            return []
        if best is None or len(d) < len(best):
            best = d
    return best or []


def _value(v) -> str:
    return json.dumps(v) if isinstance(v, (bool, str)) or v is None else f"{v:g}" if isinstance(v, float) else str(v)


def describe(diffs: list) -> str:
    """"train.max_iters 20 (the rules: 5500); optim.learning_rate 0.01 (the rules: 0.0003)"; a key with
    several allowed values lists them ("one of 2, 8, 32")."""
    parts = []
    for d in diffs:
        allowed = [_value(a) for a in d.allowed]
        rules = allowed[0] if len(allowed) == 1 else "one of " + ", ".join(allowed) if allowed else "none"
        parts.append(f"{d.key} {_value(d.value)} (the rules: {rules})")
    return "; ".join(parts)


def run_id(run) -> str:
    """A run's id in its sweep: its sweep_id where the reader set one, else its folder's name (a probe's:
    the folder holding its probe.json)."""
    rid = getattr(run, "sweep_id", None)
    if rid:
        return rid
    path = os.path.normpath(run.path)
    return os.path.basename(os.path.dirname(path) if path.endswith(".json") else path)


def split(runs, fixed: list, sweep: str) -> tuple:
    """(the runs of the rules, [(sweep, run id, [Difference])] of the others); a probe is held to its model
    and data."""
    kept, refused = [], []
    for r in runs:
        diffs = differences(r.config, fixed, probe=bool(getattr(r, "is_probe", False)))
        if diffs:
            refused.append((sweep, run_id(r), diffs))
        else:
            kept.append(r)
    return kept, refused


def judged_sweep(sweep, fixed: list) -> tuple:
    """(the sweep as its judge reads it, refused): a report.Sweep (or anything with .name and .runs) whose
    runs off the rules are left out of a shallow copy's runs, and named in refused; the sweep itself when
    none is (None stays None)."""
    if sweep is None:
        return None, []
    kept, refused = split(sweep.runs, fixed, sweep.name)
    if not refused:
        return sweep, []
    out = copy.copy(sweep)
    out.runs = kept
    return out, refused


SHOWN = 6  # runs named per line of refused_lines (findings.json names every one)


def refused_lines(refused: list) -> list:
    """One line per way runs differ from the rules, [(sweep, run id, [Difference])] grouped: the keys with the
    runs' and the rules' values, then the runs ("signal_shaped/L8-...-s40, ... and 30 more"), so that many
    runs broken alike read once."""
    groups = {}
    for sweep, rid, diffs in refused:
        groups.setdefault(describe(diffs), []).append(f"{sweep}/{rid}")
    return [f"{text}: {len(runs)} run{'s' if len(runs) > 1 else ''} ({', '.join(runs[:SHOWN])}"
            + (f" and {len(runs) - SHOWN} more" if len(runs) > SHOWN else "") + ")"
            for text, runs in groups.items()]


def refused_json(refused: list) -> list:
    """findings.json's list of the runs not judged: [{sweep, run, differs: [{key, value, rules}]}]."""
    return [{"sweep": sweep, "run": rid, "differs": [d.to_json() for d in diffs]} for sweep, rid, diffs in refused]


def keys(diffs: list) -> str:
    """The keys alone, "train.max_iters, model.n_embd", for a line that names many runs."""
    return ", ".join(d.key for d in diffs)


def is_tiny(root: str) -> bool:
    """Whether the study folder was made with --tiny: its timing.jsonl's last start record says so."""
    return bool(runlog.study_start(root).get("tiny"))
