"""The claims' files and runs: claims.json and claims_round2.json read, claims.json's outcome of a
training run (trained, diverged, plateau, or incomplete), and the RunSet, the runs of the claims
sweeps matched to a claim's configs by their config values (not by run ids), with why a config or
seed has no usable run.

    rs = load_runset("runs/deep_stacking", "quick")   # the claims sweeps' runs under OUT/<sweep>
    runs, missing = rs.train(point)                   # {seed: finished run at the horizon}, [why not]
    outcome(run)    # "trained" | "diverged" | "plateau" as claims.json defines them ("incomplete" else)

A key a claim does not name must hold its value in configs/base.json (model, data, optimiser,
batch), else stacklab's default (DEFAULTS). Not here: each claim's rule (claim_rules.py), the
verdicts and the command line (claims.py).
"""
import functools
import json
import math
import os
import re

from stacklab.runs import tier_lists as tier
from stacklab.runs import checkpoint_config, runlog
from stacklab.studies import rules_check

CLAIMS_PATH = os.path.join(tier.QUICK_DIR, "claims.json")
ROUND2_PATH = os.path.join(tier.QUICK_DIR, "claims_round2.json")
BASE_PATH = os.path.join(tier.ROOT, "configs", "base.json")
# The keys claims.json names that base.json leaves out, and model.emb_scale and model.attention_kind,
# which every run must share with its claim's config too (a unit-scale run never stands in for one
# drawn at init_std, nor a shaped-attention run for a softmax one). Their
# values are stacklab's defaults, read from config_defaults.json (`stacklab validate --defaults`, pinned
# to the binary by test_checkpoint_config). A run whose config lacks one of these keys was made before
# stacklab had it, so it ran with the default.
DEFAULT_KEYS = ("model.residual_scale", "model.mlp", "model.qk_norm", "optim.warmup_iters", "model.emb_scale",
                "model.attention_kind")
DEFAULTS = {key: tier.get_key(checkpoint_config.defaults(), key) for key in DEFAULT_KEYS}
AXES = ("model.n_layer", "model.init", "optim.learning_rate")  # a claim's configs: lists crossed with variants


def load_claims(path: str | None = None) -> dict:
    with open(path or CLAIMS_PATH, encoding="utf-8") as f:
        return json.load(f)


def margin(definitions: dict) -> float:
    """The trained / plateau margin in nats: the definitions' `margin` (claims.json, claims_round2.json),
    the number their `trained` and `plateau` texts state (test_claims pins the two equal)."""
    m = definitions.get("margin")
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not m > 0:
        raise ValueError(f"claims.json: definitions.margin: expected a positive number of nats, got {m!r}")
    return float(m)


def outcome(run, definitions: dict | None = None) -> str:
    """claims.json's classification of a training run: "diverged" (its summary says so:
    runlog.is_diverged), "trained" (completed, final val loss more than the margin below its own
    unigram loss), "plateau" (completed, at or above unigram - margin); "incomplete" for anything
    else (interrupted, failed, no final loss or unigram): not a result."""
    if runlog.is_diverged(run):
        return "diverged"
    uni, final = run.reference_losses.get("unigram"), run.final_val_loss
    if not runlog.is_completed(run) or uni is None or final is None:
        return "incomplete"
    m = margin(definitions) if definitions is not None else default_margin()
    return "trained" if final < uni - m else "plateau"


@functools.cache
def default_margin() -> float:
    """The margin of the claims.json in the repository, read once (outcome() is called per run)."""
    return margin(load_claims()["definitions"])


# ---- the runs of a claim -----------------------------------------------------------------------

def depths(claim: dict, tier_name: str) -> list:
    """The claim's depths at this tier: the quick tier's from its metric's "(quick: {...})", if any."""
    ds = claim["configs"].get("model.n_layer", [])
    m = re.search(r"\(quick: \{([0-9, ]+)\}\)", claim.get("metric", ""))
    if tier_name == "quick" and m:
        return [int(x) for x in m.group(1).split(",")]
    return list(ds)


def points(claim: dict, tier_name: str) -> list:
    """[(variant name, {dotted key: value})]: every config the claim names, axes x variants."""
    cfg = claim["configs"]
    axes = {k: (depths(claim, tier_name) if k == "model.n_layer" else cfg[k]) for k in AXES if k in cfg}
    combos = [{}]
    for k, vs in axes.items():
        combos = [dict(c, **{k: v}) for c in combos for v in vs]
    return [(name, dict(c, **var)) for name, var in cfg["variants"].items() for c in combos]


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9)
    return a == b


def run_value(run, key):
    """The run's value of a dotted key; a DEFAULTS key its config lacks holds its default (the run
    was made before stacklab had the key, whose default keeps the old behaviour)."""
    v = tier.get_key(run.config, key)
    return DEFAULTS.get(key) if v is None else v


class RunSet:
    """The runs of the claims sweeps, matched to a claim's configs."""

    def __init__(self, runs, tier_name="quick", claims=None, base=None):
        self.runs, self.tier = list(runs), tier_name
        self.claims = claims or load_claims()
        self.defs = self.claims["definitions"]
        self.seeds = list(self.defs["seeds"][tier_name])
        self.horizon = self.defs["horizon"][tier_name]
        self.base = base if base is not None else tier.read_json(BASE_PATH)
        # What a run must share with its claim's config: the keys the claims name, and base.json's
        # model, data and optimiser and its batch (definitions.common); not seeds, names, logging.
        named = {k for c in self.claims["claims"] for _, p in points(c, "full") for k in p}
        common = {f"{sec}.{k}" for sec in ("model", "data", "optim") for k in (self.base.get(sec) or {})}
        self.keys = sorted(named | common | set(DEFAULTS) | {"train.batch_size"})

    def expected(self, point, key):
        if key in point:
            return point[key]
        v = tier.get_key(self.base, key)
        return DEFAULTS.get(key) if v is None else v

    def matches(self, run, point, probe):
        keys = [k for k in self.keys if not (probe and k.startswith("optim."))]  # a probe has no optimiser
        return all(same(run_value(run, k), self.expected(point, k)) for k in keys)

    def off_rules(self, point, probe, seed=None) -> list:
        """The [rules_check.Difference] of a run (or probe) of this point (its own keys, the claim's, equal;
        `seed` for a training run) whose other settings differ from what the claims fix (base.json's model,
        data, optimiser, batch and DEFAULTS): why it was not judged. [] when there is none."""
        keys = [k for k in self.keys if not (probe and k.startswith("optim."))]
        fixed = [{k: [self.expected(point, k)] for k in keys}]
        for r in self.runs:
            if bool(r.is_probe) != probe or (not probe and (r.config.get("train") or {}).get("seed") != seed):
                continue
            if not all(same(run_value(r, k), v) for k, v in point.items()):
                continue
            config = json.loads(json.dumps(r.config))
            for k in DEFAULT_KEYS:  # a key the run lacks holds its default (run_value)
                if tier.get_key(config, k) is None:
                    sec, leaf = k.split(".", 1)
                    config.setdefault(sec, {})[leaf] = DEFAULTS[k]
            diffs = rules_check.differences(config, fixed)
            if diffs:
                return diffs
        return []

    def probe(self, point):
        """{seed: that seed's layers} of the first probe matching the point (tier seeds only)."""
        for r in self.runs:
            if r.is_probe and self.matches(r, point, True):
                return {s["seed"]: s for s in r.probe_per_seed if s.get("seed") in self.seeds}
        return {}

    def horizon_of(self, claim):
        """The claim's horizon at this tier: its configs' own "horizon" (round 2's C4r2), else the
        definitions'."""
        return (claim["configs"].get("horizon") or self.defs["horizon"])[self.tier]

    def train(self, point, horizon=None):
        """({seed: run} of finished runs at the horizon (default the tier's), [why a seed is missing])."""
        horizon = horizon or self.horizon
        got, why = {}, {}
        for r in self.runs:
            seed = (r.config.get("train") or {}).get("seed")
            if r.is_probe or seed not in self.seeds or seed in got or not self.matches(r, point, False):
                continue
            steps = (r.config.get("train") or {}).get("max_iters")
            if steps != horizon:
                why[seed] = f"ran {steps} steps, the claim's horizon at the {self.tier} tier is {horizon}"
            elif outcome(r, self.defs) == "incomplete":
                why[seed] = f"status {r.status}"
            else:
                got[seed] = r
        for s in self.seeds:
            if s not in got and s not in why:
                diffs = self.off_rules(point, False, s)
                if diffs:
                    why[s] = f"not judged, its run's settings differ from the claim's: {rules_check.describe(diffs)}"
        return got, [f"seed {s}" + (f" ({why[s]})" if s in why else "") for s in self.seeds if s not in got]

    def missing(self, claim):
        """Human-readable list of the claim's configs and seeds with no usable run."""
        out = []
        for name, p in points(claim, self.tier):
            where = f"{name} " + " ".join(f"{k.split('.')[-1]}={v}" for k, v in p.items() if k in AXES)
            if claim["configs"]["mode"] == "probe":
                have = self.probe(p)
                lost = [s for s in self.seeds if s not in have]
                if lost:
                    diffs = [] if have else self.off_rules(p, True)
                    off = (f" (not judged, its probe's settings differ from the claim's: "
                           f"{rules_check.describe(diffs)})" if diffs else "")
                    out.append(f"{where}: probe seed(s) {', '.join(map(str, lost))}{off}")
            else:
                lost = self.train(p, self.horizon_of(claim))[1]
                if lost:
                    out.append(f"{where}: {', '.join(lost)}")
        return out


def claims_runs(out_dir: str) -> list:
    """The runs of the claims sweeps (both rounds) under out_dir: OUT/<sweep>/..."""
    dirs = [os.path.join(out_dir, s) for s in tier.CLAIMS_SWEEPS if os.path.isdir(os.path.join(out_dir, s))]
    # Each sweep's runs are the ones its manifest lists (runlog.sweep_runs), never a <dir>.changed-N beside them.
    return [r for d in dirs for r in runlog.sweep_runs(d)]


def load_runset(out_dir: str, tier_name: str = "quick", claims: dict | None = None) -> RunSet:
    return RunSet(claims_runs(out_dir), tier_name, claims)
