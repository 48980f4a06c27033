"""An extension sweep's runs on disk (issue 48), as report.Sweep and the convergence study read them:
a copy `tier.py extend` made and the sweep has not continued yet (its summary completed at the
source's horizon, its config at that horizon or, after a kill early in `train --resume
--train.max_iters=N`, at the new one) and a run folder without config.json are pending: listed, and
in no number (no seed twice in a point, no point at the source's horizon from the extension sweep).
The sweeps are fabricated (fabricate.write_sweep_dir) at the rules' H and 4H (convergence_rules.json: the
judge does not judge a run off its rules).
"""
import contextlib
import copy
import io
import os
import shutil
import tempfile
import unittest

import fabricate
from fabricate import curve, long_run

from stacklab import report
from stacklab.runs import runlog
from stacklab.studies import convergence as cv
from stacklab.report import convergence as rc
from stacklab.report import doc as report_doc

H = cv.load_rules()["horizon"]["measured"]["H"]
LONG = cv.load_rules()["extend_factor"] * H
SEEDS = (20, 21, 22)
WIRING = "pre-layernorm-nores"
NO_SHORT = {"syn_tr": None, "text_tr": None, "syn_map": None, "syn_map_name": "", "text_map": None,
            "text_map_name": ""}


def source(depth, seed):
    """converge_synth's run: L = 2 escapes at 300, L = 8 stays on the plateau for H steps."""
    return long_run(WIRING, depth, 3e-4, seed, curve(H, 50, 300 if depth == 2 else None, tau=50))


def quiet(fn, *args, **kwargs):
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


class ExtensionRuns(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.root)
        fabricate.write_sweep_dir(self.root, "converge_synth",
                                  [(f"L{d}-s{s}", source(d, s)) for d in (2, 8) for s in SEEDS], max_iters=H)

    def extension(self, runs, config=True):
        fabricate.write_sweep_dir(self.root, "converge_synth_long", runs, max_iters=LONG, config=config)
        sweeps = {n: quiet(report.Sweep, self.root, n) for n in ("converge_synth", "converge_synth_long")}
        study = quiet(cv.judge, sweeps, NO_SHORT)
        rc.section(report_doc.Doc(), study, {})  # the section renders (a run without config.json: TypeError)
        return sweeps, cv.findings_json(study)

    def assert_no_seed_twice(self, fj):
        for p in fj["points"]:
            seeds = [s["seed"] for s in p["seeds"]]
            self.assertEqual(len(seeds), len(set(seeds)), f"seeds {seeds} at L={p['depth']}, {p['horizon']} steps")

    # Pins issue 48 item 1 (and the Python side of item 2): two copies not yet extended counted as more
    # seeds at H (seed 20 five times in findings.json, "10 never escaped" for 6 runs), and one whose
    # config a killed `train --resume` had rewritten as "never escaped within 4H".
    def test_a_copy_not_yet_extended_is_pending_and_in_no_number(self):
        extended = long_run(WIRING, 8, 3e-4, 20, curve(LONG, 50, 2000, tau=50))
        not_yet = copy.deepcopy(source(8, 21))
        killed = copy.deepcopy(source(8, 22))
        killed.config["train"]["max_iters"] = LONG  # config.json rewritten, summary still the old one
        sweeps, fj = self.extension([("L8-s20", extended), ("L8-s21", not_yet), ("L8-s22", killed)])
        long_sweep = sweeps["converge_synth_long"]
        self.assertEqual([r.sweep_id for r in long_sweep.runs], ["L8-s20"])
        self.assertEqual(long_sweep.excluded, [
            (rid, f"pending: completed {H} of the {LONG} steps its sweep gives it (not yet extended)")
            for rid in ("L8-s21", "L8-s22")])
        self.assertEqual(long_sweep.excluded_runs, {})  # not counted as unjudged seeds either
        self.assert_no_seed_twice(fj)
        at = {(p["depth"], p["horizon"]): p for p in fj["points"]}
        self.assertEqual(sorted(at), [(2, H), (8, H), (8, LONG)])
        self.assertEqual([s["seed"] for s in at[(8, H)]["seeds"]], [20, 21, 22])
        self.assertEqual(at[(8, H)]["counts"], "3 never escaped")
        self.assertEqual([(s["seed"], s["outcome"]) for s in at[(8, LONG)]["seeds"]], [(20, "converged")])

    # Pins issue 48 item 11: a cell that lost seeds (pending, unfinished, never started) did not say so.
    def test_a_cell_that_lost_seeds_says_k_of_n(self):
        extended = long_run(WIRING, 8, 3e-4, 20, curve(LONG, 50, 2000, tau=50))
        fabricate.write_sweep_dir(self.root, "converge_synth_long", [("L8-s20", extended), ("L8-s21", source(8, 21))],
                                  max_iters=LONG)
        sweeps = {n: quiet(report.Sweep, self.root, n) for n in ("converge_synth", "converge_synth_long")}
        study = quiet(cv.judge, sweeps, NO_SHORT)
        _, rows = rc.verdict_table(study, "synthetic")
        l8 = rows[0][2]
        self.assertEqual(l8[0], f"{H} steps: **never escaped** (3 never escaped); final 3.4400 (3.4400-3.4400); "
                                "lr 0.0003")
        self.assertEqual(l8[1], f"{LONG} steps: **converged** (1 converged; 1 of 2 seeds); final 1.0000; lr 0.0003")
        at = {(p["depth"], p["horizon"]): p for p in cv.findings_json(study)["points"]}
        self.assertEqual((at[(8, H)]["seeds_planned"], at[(8, LONG)]["seeds_planned"]), (3, 2))

    def test_a_sweeps_run_the_manifest_gives_a_longer_horizon_is_pending_in_every_reader(self):
        fabricate.write_sweep_dir(self.root, "converge_synth_long", [("L8-s21", copy.deepcopy(source(8, 21)))],
                                  max_iters=LONG)
        run, = quiet(runlog.sweep_runs, os.path.join(self.root, "converge_synth_long"))
        self.assertEqual(run.status, "pending")
        self.assertFalse(runlog.is_completed(run))
        self.assertEqual(runlog.status_mark(run),
                         f" [pending: completed {H} of the {LONG} steps its sweep gives it (not yet extended)]")
        alone = quiet(runlog.load_run, run.path)  # read by itself: done at its own config's horizon
        self.assertEqual(alone.status, "completed")

    # Pins issue 48 item 3 (report side): a run folder without config.json but with a completed summary
    # (a kill during tier.py extend's copy) was taken as done and --report-only ended in a TypeError.
    def test_a_run_without_config_json_is_pending_not_done(self):
        no_config = copy.deepcopy(source(8, 21))
        sweeps, fj = self.extension([("L8-s21", no_config)], config={"L8-s21"})
        long_sweep = sweeps["converge_synth_long"]
        self.assertEqual(long_sweep.runs, [])
        self.assertEqual(long_sweep.excluded, [("L8-s21", "pending: no config.json (a copy interrupted midway or a "
                                                "deleted config): done under no config")])
        self.assert_no_seed_twice(fj)
        self.assertEqual(sorted((p["depth"], p["horizon"]) for p in fj["points"]), [(2, H), (8, H)])


if __name__ == "__main__":
    unittest.main()
