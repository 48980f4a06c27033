"""The training points the findings are judged on: (wiring, depth, learning rate) pooled over the
training sweeps, each point's seeds and final-loss summary, the reference losses, the runs left out
(Training); a run's first/last block gradient ratio in training (train_ratios, finding 2); a point's
seeds as "0/1/2" (seed_list). findings.py re-exports the three, its importers' names.
Not here: the findings' rules (findings.py), the seed statistics (stats.py), loading sweeps (report.py).
"""
import numpy as np

from stacklab.studies import stats


def train_ratios(run):
    """first/last block grad-norm ratio at step 0 and the median over the later layers records."""
    recs = sorted(run.records["layers"], key=lambda r: r.get("step", 0))

    def ratio(rec):
        g = rec.get("grad_norm") or []
        return g[0] / g[-1] if g and g[0] is not None and g[-1] else None
    at0 = ratio(recs[0]) if recs and recs[0].get("step") == 0 else None
    later = [x for x in (ratio(r) for r in recs if r.get("step", 0) > 0) if x is not None]
    return at0, (float(np.median(later)) if later else None), len(later)


class Training:
    """The training points (wiring, depth, learning rate) pooled over the training sweeps
    (train_grid, lr_grid: each point lives in one of them), seeds within a point."""

    def __init__(self, sweeps):
        self.sweeps = sweeps
        self.runs = [r for s in sweeps for r in s.runs]
        self.pts = stats.points(self.runs)
        # Each point's final val loss over its seeds (study_stats.summarize_loss), computed once: the
        # report's tables and findings.json's points read it here.
        self.summaries = {pt: stats.summarize_loss([r.final_val_loss for r in runs]) for pt, runs in self.pts.items()}
        self.ref_lr = stats.reference_rate(self.pts)
        self.refs = next((r.reference_losses for r in self.runs if r.reference_losses), {})
        self.unigram = self.refs.get("unigram")
        self.excluded = [(s, rid, why) for s in sweeps for rid, why in s.excluded]
        # A point whose every seed was left out still gets its row and column (saying so).
        left = [r for s in sweeps for r in getattr(s, "excluded_runs", {}).values() if r.config]
        self.depths = sorted({d for (_, d, _) in self.pts} | {r.n_layer for r in left if r.n_layer})
        self.rates = sorted({lr for (_, _, lr) in self.pts if lr is not None}
                            | {stats.learning_rate(r) for r in left if stats.learning_rate(r) is not None})

    def seeds(self, wiring, depth, lr):
        return self.pts.get((wiring, depth, lr), [])

    def summary(self, wiring, depth, lr) -> dict:
        """The point's final val loss over its seeds (n = 0 for a point without a completed run)."""
        return self.summaries.get((wiring, depth, lr)) or stats.summarize_loss([])

    def finals(self, wiring, depth, lr):
        return [r.final_val_loss for r in self.seeds(wiring, depth, lr)]

    def best(self, wiring, depth):
        return stats.best_rate(self.pts, wiring, depth)

    def excluded_at(self, wiring, depth, lr=None):
        """[(id, reason)] of the runs left out at (wiring, depth), at rate lr when given. A run
        that never started has no config: its id (L<depth>-<wiring>-s<seed>) places it, at the
        sweep's rate when the sweep has one."""
        out = []
        for s, rid, why in self.excluded:
            run = getattr(s, "excluded_runs", {}).get(rid)
            if run is not None and run.config:
                here = (run.wiring, run.n_layer) == (wiring, depth)
                rate = stats.learning_rate(run)
            else:
                here = rid.startswith(f"L{depth}-{wiring}-")
                rates = {stats.learning_rate(r) for r in s.runs}
                rate = rates.pop() if len(rates) == 1 else None
            if here and (lr is None or rate == lr):
                out.append((rid, why))
        return out

    def planned_depths(self):
        out = set()
        for s in self.sweeps:
            for e in s.manifest.get("runs", []):
                head = e.get("id", "").split("-")[0]
                if head.startswith("L") and head[1:].isdigit():
                    out.add(int(head[1:]))
        return sorted(out)


def seed_list(runs):
    return "/".join(str(stats.seed_of(r)) for r in sorted(runs, key=lambda r: stats.seed_of(r) or 0))
