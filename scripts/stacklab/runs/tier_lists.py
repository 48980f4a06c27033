"""The study's tiers as data: which sweeps each tier and option runs, read from the one file that
holds them, configs/experiments/tiers.json; and a tier's sweep file as `tier.py prepare` writes it.

    from stacklab.runs.tier_lists import CLAIMS_SWEEPS, COVERED_BY   # the judges' and the report's lists
    tier_sweeps("quick", claims=True)      # the sweeps one invocation runs
    prepared(path, is_tiny=True)           # a sweep file as prepared (what rules_check compares runs with)

The names are tiers.json's: QUICK_SWEEPS, CLAIMS_SWEEPS, TEXT_SWEEPS, CONVERGE_SWEEPS, SIGNAL_SWEEPS,
FULL_SWEEPS (the full tier's own and the lists its "with" names), COVERED_BY, EXTENDS, FULL_SEEDS,
FULL_RATES, HORIZON_FACTOR, OWN_RATES, FULL_ADD_DEPTHS and TINY. A file that lacks a field or holds
one of the wrong type raises TierError naming the file and the field, on import.
Not here: running the tiers (scripts/tiers/, behind scripts/tier.py: prepare, size, extend,
full-configs), judging their runs (studies/).
"""
import json
import os

from stacklab import paths

ROOT = paths.ROOT
QUICK_DIR = paths.EXPERIMENTS
FULL_DIR = os.path.join(QUICK_DIR, "full")
TIERS_PATH = os.path.join(QUICK_DIR, "tiers.json")
LIST_NAMES = ("quick", "claims", "text", "converge", "signal", "full")  # tiers.json's sweep lists


class TierError(Exception):
    """A tier's file (tiers.json, a sweep file, a base config) missing, unreadable or malformed."""


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise TierError(f"{path}: cannot read ({e.strerror})")
    except ValueError as e:
        raise TierError(f"{path}: not valid JSON ({e})")


def get_key(cfg, dotted):
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _field(doc, dotted, kind, path):
    """tiers.json's field `dotted` (a.b), checked to be a `kind` ("names", "map", "numbers", "object")."""
    v = get_key(doc, dotted)
    ok = {"names": lambda x: isinstance(x, list) and all(isinstance(n, str) and n for n in x),
          "numbers": lambda x: isinstance(x, list) and all(isinstance(n, (int, float)) for n in x),
          "map": lambda x: isinstance(x, dict) and all(isinstance(k, str) and isinstance(n, str) for k, n in x.items()),
          "object": lambda x: isinstance(x, dict),
          "int": lambda x: isinstance(x, int) and not isinstance(x, bool) and x >= 1}[kind]
    if v is None or not ok(v):
        what = {"names": "a list of sweep names", "numbers": "a list of numbers", "map": "an object of names",
                "object": "an object", "int": "a whole number >= 1"}[kind]
        raise TierError(f"{path}: field '{dotted}' must be {what}, got {json.dumps(v)}")
    return v


def load(path=TIERS_PATH) -> dict:
    """tiers.json as {name: value} under the module's names (QUICK_SWEEPS, ..., TINY), checked."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise TierError(f"{path}: not a JSON object")
    lists = {n: tuple(_field(doc, f"{n}.sweeps", "names", path)) for n in LIST_NAMES}
    full_with = _field(doc, "full.with", "names", path)
    for n in full_with:
        if n not in lists or n == "full":
            raise TierError(f"{path}: field 'full.with' names '{n}', not one of tiers.json's lists "
                            f"({', '.join(x for x in LIST_NAMES if x != 'full')})")
    depths = _field(doc, "full_tier.add_depths", "object", path)
    for name in depths:
        _field(depths, name, "numbers", f"{path}: full_tier.add_depths")
    return {
        "QUICK_SWEEPS": lists["quick"], "CLAIMS_SWEEPS": lists["claims"], "TEXT_SWEEPS": lists["text"],
        "CONVERGE_SWEEPS": lists["converge"], "SIGNAL_SWEEPS": lists["signal"],
        "FULL_SWEEPS": lists["full"] + sum((lists[n] for n in full_with), ()),
        "COVERED_BY": dict(_field(doc, "covered_by.sweeps", "map", path)),
        "EXTENDS": dict(_field(doc, "extends.sweeps", "map", path)),
        "FULL_SEEDS": list(_field(doc, "full_tier.seeds", "numbers", path)),
        "FULL_RATES": list(_field(doc, "full_tier.rates", "numbers", path)),
        "HORIZON_FACTOR": _field(doc, "full_tier.horizon_factor", "int", path),
        "OWN_RATES": tuple(_field(doc, "full_tier.own_rates", "names", path)),
        "FULL_ADD_DEPTHS": {k: list(v) for k, v in depths.items()},
        "TINY": dict(_field(doc, "tiny.overrides", "object", path)),
    }


_DATA = load()
QUICK_SWEEPS = _DATA["QUICK_SWEEPS"]
CLAIMS_SWEEPS = _DATA["CLAIMS_SWEEPS"]      # round 1, then round 2
TEXT_SWEEPS = _DATA["TEXT_SWEEPS"]
CONVERGE_SWEEPS = _DATA["CONVERGE_SWEEPS"]
SIGNAL_SWEEPS = _DATA["SIGNAL_SWEEPS"]
FULL_SWEEPS = _DATA["FULL_SWEEPS"]
COVERED_BY = _DATA["COVERED_BY"]            # {quick sweep: the sweep that holds its cells}
EXTENDS = _DATA["EXTENDS"]                  # {extension sweep: the sweep whose runs it continues}
FULL_SEEDS = _DATA["FULL_SEEDS"]
FULL_RATES = _DATA["FULL_RATES"]
HORIZON_FACTOR = _DATA["HORIZON_FACTOR"]
OWN_RATES = _DATA["OWN_RATES"]
FULL_ADD_DEPTHS = _DATA["FULL_ADD_DEPTHS"]
TINY = _DATA["TINY"]


def tier_sweeps(tier, claims=False, text=False, converge=False, signal=False):
    """The sweep names of a tier: the full tier's, or the quick tier's with the claims sweeps
    (--claims), the text study's (--text) added; either with the convergence study's (--converge)
    and the residual-or-signal study's (--signal) added; a quick sweep whose cells an added sweep
    holds (COVERED_BY) is left out, so no config runs twice."""
    extra = (CONVERGE_SWEEPS if converge else ()) + (SIGNAL_SWEEPS if signal else ())
    if tier == "full":
        return FULL_SWEEPS + extra
    names = QUICK_SWEEPS + (CLAIMS_SWEEPS if claims else ()) + (TEXT_SWEEPS if text else ()) + extra
    return tuple(n for n in names if COVERED_BY.get(n) not in names)


# ---- a tier's sweep file as prepared ---------------------------------------------------------

def base_value(sweep_path, sweep, key):
    """A key's value in a sweep: its overrides, else its base config (following `extends`)."""
    if key in (sweep.get("overrides") or {}):
        return sweep["overrides"][key]
    path = os.path.join(os.path.dirname(sweep_path), sweep["base"])
    seen = set()
    while path and path not in seen:
        seen.add(path)
        cfg = read_json(path)
        v = get_key(cfg, key)
        if v is not None:
            return v
        ext = cfg.get("extends")
        path = os.path.join(os.path.dirname(path), ext) if ext else None
    return None


def tiny(sweep):
    """The sweep scaled down by --tiny (TINY's overrides; depths capped at 2, 2 seeds, the first and
    last rate, warm-ups capped at the run's steps)."""
    grid = dict(sweep.get("grid") or {})
    if "model.n_layer" in grid:
        grid["model.n_layer"] = sorted({min(d, 2) for d in grid["model.n_layer"]})
    # A depth set in the overrides or a variant (claims_probe_l32, claims_train) is capped too.
    over = sweep.get("overrides") or {}
    if isinstance(over.get("model.n_layer"), int):
        sweep = dict(sweep, overrides=dict(over, **{"model.n_layer": min(over["model.n_layer"], 2)}))
    if isinstance(sweep.get("variants"), list):
        sweep = dict(sweep, variants=[dict(v, **{"model.n_layer": min(v["model.n_layer"], 2)})
                                      if isinstance(v, dict) and isinstance(v.get("model.n_layer"), int) else v
                                      for v in sweep["variants"]])
    if "optim.learning_rate" in grid and len(grid["optim.learning_rate"]) > 2:
        r = sorted(grid["optim.learning_rate"])
        grid["optim.learning_rate"] = [r[0], r[-1]]
    out = dict(sweep, grid=grid, seeds=(sweep.get("seeds") or [0])[:2])
    out["overrides"] = dict(sweep.get("overrides") or {}, **TINY)
    # A warm-up longer than the run is an invalid config: scale it down with the run.
    steps = TINY["train.max_iters"]
    if "optim.warmup_iters" in grid:
        grid["optim.warmup_iters"] = sorted({min(w, steps) for w in grid["optim.warmup_iters"]})
    if isinstance(sweep.get("variants"), list):
        out["variants"] = [dict(v, **{"optim.warmup_iters": min(v["optim.warmup_iters"], steps)})
                           if isinstance(v, dict) and isinstance(v.get("optim.warmup_iters"), int) else v
                           for v in sweep["variants"]]
    return out


def absolute_data_path(sweep, folder):
    """The sweep with a relative data.path (overrides, grid, variants) made absolute against
    `folder`, the source file's: stacklab sweep reads it relative to the sweep file, and prepare
    writes the copy elsewhere."""
    def fix(v):
        return os.path.normpath(os.path.join(folder, v)) if isinstance(v, str) and v and not os.path.isabs(v) else v
    key = "data.path"
    out = dict(sweep)
    if key in (sweep.get("overrides") or {}):
        out["overrides"] = dict(sweep["overrides"], **{key: fix(sweep["overrides"][key])})
    if key in (sweep.get("grid") or {}):
        out["grid"] = dict(sweep["grid"], **{key: [fix(v) for v in sweep["grid"][key]]})
    if isinstance(sweep.get("variants"), list):
        out["variants"] = [dict(v, **{key: fix(v[key])}) if isinstance(v, dict) and key in v else v
                           for v in sweep["variants"]]
    return out


def prepared(path, is_tiny=False) -> dict:
    """The sweep file at `path` as prepare writes it (but its out_dir): base and a relative data.path made
    absolute, and scaled down by tiny() when is_tiny (an extension keeping its ratio to its source's
    horizon). Also what the study judges compare a run's config with (rules_check.py)."""
    s = read_json(path)
    for key in ("name", "base"):
        if not isinstance(s.get(key), str):
            raise TierError(f"{path}: no '{key}' string")
    folder = os.path.dirname(os.path.abspath(path))
    s = dict(absolute_data_path(s, folder), base=os.path.abspath(os.path.join(folder, s["base"])))
    if is_tiny:
        src = EXTENDS.get(s["name"])
        factor = 1
        if src is not None:  # an extension keeps its ratio to its source's horizon, so --tiny extends too
            src_path = os.path.join(folder, src + ".json")
            factor = (base_value(path, read_json(path), "train.max_iters")
                      // base_value(src_path, read_json(src_path), "train.max_iters"))
        s = tiny(s)
        if factor > 1:
            for key in ("train.max_iters", "optim.lr_decay_iters"):
                if key == "train.max_iters" or key in s["overrides"]:
                    s["overrides"][key] = factor * TINY["train.max_iters"]
    return s
