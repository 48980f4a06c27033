"""The stability map: where pre-norm, post-norm, post-norm with warm-up and DeepNorm train, per
init, learning rate and depth (the training runs under OUT/stability_map/). Each run's outcome is
trained, diverged or plateau as claims.json defines them (claims.outcome); a cell counts its seeds'
outcomes.
The text is generated from the counts (report/map.py). Not here: the figure (plots/prepost_map.py,
scripts/plot_stability_map.py), running the sweep (reproduce.sh --claims), the report's layout.
"""
import os
from collections import Counter
from dataclasses import dataclass, field

from stacklab.studies import claims
from stacklab.runs import runlog

SWEEP = "stability_map"
FIGURE = "stability_map.png"
RUN_COMMAND = "bash scripts/reproduce.sh --claims"
# The wirings of the map, in panel order, each named by its formula (STYLE.md: a variant by its formula).
WIRINGS = {"pre": "pre-norm: x + f(norm(x))", "post": "post-norm: norm(x + f(x))",
           "post-warmup": "post-norm with warm-up: norm(x + f(x)), lr warmed up",
           "deepnorm": "DeepNorm: norm(alpha x + f(x))"}
OUTCOMES = ("trained", "diverged", "plateau")


# ---- what a run is ---------------------------------------------------------------------------

def wiring_of(run) -> str | None:
    """The map's wiring of a run, from its config (not its directory name); None for any other."""
    m, o = run.config.get("model") or {}, run.config.get("optim") or {}
    if not m.get("residual", True) or m.get("norm") == "none":  # every map wiring has a norm: x + f(x) is none
        return None
    pos, scale = m.get("norm_position"), m.get("residual_scale") or "none"
    warm = (o.get("warmup_iters") or 0) > 0 and (o.get("schedule") or "constant") != "constant"
    if pos == "pre" and scale == "none" and not warm:
        return "pre"
    if pos == "post" and scale == "none":
        return "post-warmup" if warm else "post"
    if pos == "post" and scale == "deepnorm" and not warm:
        return "deepnorm"
    return None


def point_of(run):
    """(wiring, init, depth, learning rate) of a map run, or None for a run outside the map."""
    w = wiring_of(run)
    init = (run.config.get("model") or {}).get("init")
    lr = (run.config.get("optim") or {}).get("learning_rate")
    if w is None or init is None or lr is None or not run.n_layer:
        return None
    return w, init, run.n_layer, float(lr)


# ---- the cells -------------------------------------------------------------------------------

@dataclass
class Cell:
    trained: int = 0
    diverged: int = 0
    plateau: int = 0
    unfinished: int = 0
    finals: list = field(default_factory=list)  # final val losses of the completed seeds

    @property
    def n(self):
        return self.trained + self.diverged + self.plateau

    @property
    def counts(self):
        return f"{self.trained}/{self.diverged}/{self.plateau}"

    @property
    def majority(self):
        """The outcome of most seeds; "tie" when two share the most, "empty" without a judged seed."""
        if not self.n:
            return "empty"
        c = Counter({k: getattr(self, k) for k in OUTCOMES}).most_common()
        return "tie" if len(c) > 1 and c[0][1] == c[1][1] else c[0][0]

    @property
    def mean_final(self):
        return sum(self.finals) / len(self.finals) if self.finals else None


@dataclass
class MapData:
    cells: dict          # (wiring, init, depth, lr) -> Cell
    wirings: list
    inits: list
    depths: list
    rates: list
    source: str = ""     # what classified the runs

    def cell(self, w, init, d, lr):
        return self.cells.get((w, init, d, lr), Cell())

    @property
    def empty(self):
        return not self.cells


def build(runs, outcome=None) -> MapData:
    """The map's cells from training runs; runs outside the map (other wirings) are ignored."""
    source = "the given outcome function"
    if outcome is None:
        outcome, source = claims.outcome, "claims.outcome"
    cells = {}
    for r in runs:
        if r.is_probe:
            continue
        pt = point_of(r)
        if pt is None:
            continue
        c = cells.setdefault(pt, Cell())
        finished = runlog.is_diverged(r) or (runlog.is_completed(r) and r.final_val_loss is not None)
        o = outcome(r) if finished else None
        if o in OUTCOMES:
            setattr(c, o, getattr(c, o) + 1)
            if o != "diverged":
                c.finals.append(r.final_val_loss)
        else:
            c.unfinished += 1
    keys = list(cells)
    return MapData(cells, [w for w in WIRINGS if any(k[0] == w for k in keys)],
                   sorted({k[1] for k in keys}), sorted({k[2] for k in keys}), sorted({k[3] for k in keys}), source)


def load(sweep_dir) -> MapData:
    """The map of OUT/stability_map: the runs its manifest lists (runlog.sweep_runs); an empty map
    when the directory does not exist."""
    return build(runlog.sweep_runs(sweep_dir) if os.path.isdir(sweep_dir) else [])


# ---- the outcomes that fail ----------------------------------------------------------------

FAILS = ("diverged", "plateau")


@dataclass
class MapFacts:
    """What the map's counts show, each cell by its majority (a cell "fails": diverged or plateau)."""
    totals: dict        # runs per outcome and "unfinished"
    post_fails: list    # [(init, depth, lr)] where post-norm fails and pre-norm trains; None without both
    pre_fails: list     # the reverse
    # fixes: "post-warmup" / "deepnorm" -> ([cells where it rescues failing post-norm], [cells of post_fails
    # where it fails too]: only there, where pre-norm trains; elsewhere every wiring may fail, e.g. too few steps)
    fixes: dict
    decides: dict       # wiring -> {its majorities over the inits: [(depth, lr)]}: one init trains, another fails
    decides_none: bool  # more than one init, and the init decides no cell


def map_facts(data: MapData) -> MapFacts:
    """The statements the map's text makes, judged from its cells' majorities."""
    tot = Counter()
    for c in data.cells.values():
        for k in OUTCOMES + ("unfinished",):
            tot[k] += getattr(c, k)

    def cells_where(pred):
        return [(init, d, lr) for init in data.inits for d in data.depths for lr in data.rates if pred(init, d, lr)]

    def maj(w, init, d, lr):
        return data.cell(w, init, d, lr).majority

    post_fails = pre_fails = None
    fixes = {}
    if {"pre", "post"} <= set(data.wirings):
        post_fails = cells_where(lambda i, d, lr: maj("post", i, d, lr) in FAILS and maj("pre", i, d, lr) == "trained")
        pre_fails = cells_where(lambda i, d, lr: maj("pre", i, d, lr) in FAILS and maj("post", i, d, lr) == "trained")
        for fix in ("post-warmup", "deepnorm"):
            if fix in data.wirings:
                failing = cells_where(lambda i, d, lr: maj("post", i, d, lr) in FAILS)
                fixes[fix] = ([c for c in failing if maj(fix, *c) == "trained"],
                              [c for c in post_fails if maj(fix, *c) in FAILS])

    def decides(w, d, lr):  # one init trains where another fails
        m = {maj(w, i, d, lr) for i in data.inits}
        return "trained" in m and bool(m & set(FAILS))

    by_wiring = {}
    if len(data.inits) > 1:
        for w in data.wirings:
            # one pattern of outcomes over the inits (e.g. trained under scaled, plateau under xavier) per
            # sentence, its cells in the inits' order
            patterns = {}
            for d in data.depths:
                for lr in data.rates:
                    if decides(w, d, lr):
                        patterns.setdefault(tuple(maj(w, i, d, lr) for i in data.inits), []).append((d, lr))
            if patterns:
                by_wiring[w] = patterns
    none = len(data.inits) > 1 and not any(decides(w, d, lr)
                                           for w in data.wirings for d in data.depths for lr in data.rates)
    return MapFacts(dict(tot), post_fails, pre_fails, fixes, by_wiring, none)


def cells_json(data: MapData):
    return [{"wiring": w, "init": i, "depth": d, "learning_rate": lr, "trained": c.trained, "diverged": c.diverged,
             "plateau": c.plateau, "unfinished": c.unfinished, "majority": c.majority,
             "mean_final_val_loss": c.mean_final}
            for (w, i, d, lr), c in sorted(data.cells.items())]


# ---- the branch size at initialisation ------------------------------------------------------

BRANCH_SWEEP = "claims_probe"  # its L = 32 points: pre and post under each init
BRANCH_DEPTH = 32


def branch_sizes(probe_runs, depth: int = BRANCH_DEPTH) -> list[dict]:
    """Per (placement, init) at `depth`: the probe's branch_ratio (each sub-layer's branch over the
    stream it is added to, in mean squares) averaged over the blocks, per seed; rows sorted by
    placement then init, each {position, init, seeds: [values], mean, min, max}. Probes from a
    binary without the metric give no row."""
    rows = []
    for r in probe_runs:
        model = (r.config or {}).get("model", {})
        if not r.is_probe or model.get("n_layer") != depth:
            continue
        per_seed = []
        for s in r.probe_per_seed:
            v = [x for x in (s.get("branch_ratio") or []) if x is not None]
            if v:
                per_seed.append(sum(v) / len(v))
        if per_seed:
            rows.append({"position": model.get("norm_position"), "init": model.get("init"), "seeds": per_seed,
                         "mean": sum(per_seed) / len(per_seed), "min": min(per_seed), "max": max(per_seed)})
    return sorted(rows, key=lambda row: (str(row["position"]), str(row["init"])))
