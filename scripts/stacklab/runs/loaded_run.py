"""The Run: one run folder (or `stacklab probe` file) as read, and what its fields say: its status
(completed, diverged, pending, ...), whether it is pending and why, whether it stopped on escape, its
final val loss, its reference losses and its per-layer metric descriptors.

    run.status, run.pending, run.final_val_loss, run.layers_at(step), run.layer_metrics

Not here: reading the files into a Run (run_files.py), sweeps (sweep_dirs.py), the one-line
definitions every reader shares (runlog.py: is_diverged, label, ...). Needs no numpy.
"""
import os
from dataclasses import dataclass, field

# The record kinds of metrics.jsonl, as `stacklab registry --records --json` declares them
# (tests/python/test_record_schema.py checks the two agree).
KINDS = ("start", "resume", "train", "eval", "layers", "diverged")


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
