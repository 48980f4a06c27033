"""The escape law's core (scripts/stacklab/studies/escape/default_tier.py, report/law.py, the results tables of
report/__init__.py): a sweep absent is "not run"; fewer than 3 depths escaped is "no fit" with its
reason and the censored depth's lower bound; 3 escaped depths are fitted; the report shows the figure
and one paragraph under the headline, writes OUT/results/escape_law_core.csv and copies it with
--results-to (never from a --tiny study)."""
import contextlib
import csv
import io
import json
import os
import tempfile
import unittest

import fabricate
from full_run import full_run_only
from test_report_unchanged import write_study

from stacklab.studies.escape import default_tier as ec
from stacklab import report
from stacklab.report import law

UNI = 3.4356  # the unigram loss on base.json's val batches


def core_run(wiring, depth, lr, seed, escape, last=3000, every=50):
    """A run of escape_law_core: on the plateau until `escape` (None: never, up to `last`), where it
    stops (train.stop_below_unigram)."""
    end = escape if escape is not None else last
    evals = [(s, 3.44 if escape is None or s < escape else 3.30) for s in range(0, end + 1, every)]
    r = fabricate.run(wiring, depth, lr, seed, evals[-1][1], evals=evals)
    r.config["train"].update(eval_interval=every, max_iters=last, stop_below_unigram=0.1)
    r.config["model"]["init"] = "normal"
    r.summary["reference_losses"]["unigram_on_val"] = UNI
    r.summary.update(steps=end, wall_seconds=2.0 * depth)
    if escape is not None:
        r.summary["stopped"] = {"reason": "escaped", "step": escape, "margin": 0.1, "val_loss": 3.30,
                                "unigram_on_val": UNI}
    r.records["start"][0]["reference_losses"]["unigram_on_val"] = UNI
    return r


# f(layernorm(x)) at 3e-4: L = 1 and 2 escape, L = 3 never (2 depths escaped); f(x) at 1e-3: all three
STEPS = {("pre-layernorm-nores", 3e-4): {1: (100, 150, 100), 2: (300, 350, 450), 3: (None, None, None)},
         ("none-nores", 1e-3): {1: (50, 100, 50), 2: (250, 300, 250), 3: (1200, 1500, 1100)}}


def core_runs():
    return [(f"L{d}-{w}-s{s}", core_run(w, d, lr, s, step))
            for (w, lr), by in STEPS.items() for d, steps in by.items() for s, step in zip((30, 31, 32), steps)]


class StoppedOnEscape(unittest.TestCase):
    # Found by the first real run of escape_law_core: every run it stopped read as "pending" (completed
    # below its horizon, as a copy not yet extended), so the core was all excluded.
    def test_a_run_stopped_on_escape_under_its_margin_is_done_below_its_horizon(self):
        r = core_run("none-nores", 2, 1e-3, 30, 300)
        self.assertTrue(r.stopped_on_escape)
        self.assertIsNone(r.pending)
        self.assertEqual(r.status, "completed")

    def test_a_run_stopped_on_escape_stays_done_when_a_later_stage_gives_its_sweep_more_steps(self):
        # Found before the escape law's stage 1: --on-change extend leaves an escaped run alone, its
        # config.json at stage 0's 3000, while the sweep's manifest says 12000.
        r = core_run("none-nores", 2, 1e-3, 30, 300)
        r.in_sweep, r.sweep_max_iters = True, 12000
        self.assertIsNone(r.pending)
        self.assertEqual(r.status, "completed")
        r.config["train"]["stop_below_unigram"] = 0.2  # stopped under another margin: it would go on
        self.assertEqual(r.status, "pending")

    def test_a_stop_under_another_margin_or_none_stays_pending(self):
        r = core_run("none-nores", 2, 1e-3, 30, 300)
        r.config["train"]["stop_below_unigram"] = 0.2
        self.assertEqual(r.status, "pending")
        r = core_run("none-nores", 2, 1e-3, 30, 300)
        del r.summary["stopped"]
        self.assertIn("not yet extended", r.pending)


class Judged(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.core = ec.judge_core(fabricate.FakeSweep(ec.SWEEP, [r for _, r in core_runs()]))

    def test_an_absent_sweep_is_not_run(self):
        core = ec.judge_core(None)
        self.assertFalse(core.present)
        self.assertEqual(ec.core_json(core)["verdict"], "not run")
        self.assertIn("not run in this folder", law.paragraph(core, []))

    def test_every_seed_and_depth_is_read_in_the_rules_wiring_order(self):
        pre, none = self.core.wirings
        self.assertEqual((pre.wiring, pre.rate, none.wiring, none.rate),
                         ("pre-layernorm-nores", 3e-4, "none-nores", 1e-3))
        self.assertEqual(pre.seeds[2], [(30, 300, 300), (31, 350, 350), (32, 450, 450)])
        self.assertEqual(pre.seeds[3], [(30, None, 3000), (31, None, 3000), (32, None, 3000)])
        self.assertEqual((pre.escaped_depths, pre.n_censored), ([1, 2], 3))
        self.assertEqual(pre.median(2), (350, 450))

    def test_fewer_than_three_escaped_depths_read_no_law_and_bound_the_growth(self):
        pre = self.core.wirings[0]
        self.assertEqual(pre.verdict, "no fit")
        self.assertEqual(pre.why, "fewer than 3 depths escaped (2 of 3): no law read")
        self.assertEqual(pre.fits, {})
        (b,) = pre.bounds
        self.assertEqual((b["depth"], b["from"], b["horizon"]), (3, 2, 3000))
        self.assertAlmostEqual(b["factor_above"], 3000 / 350)

    def test_three_escaped_depths_are_fitted_with_predictions_and_the_falsifier(self):
        none = self.core.wirings[1]
        self.assertEqual(none.verdict, "fitted")
        self.assertEqual(set(none.fits), {"exponential", "power", "doubly exponential"})
        for preds in none.predictions.values():
            m, lo, hi = preds[8]
            self.assertLessEqual(lo, m)
            self.assertLessEqual(m, hi)
        self.assertIsNotNone(none.falsifier)
        j = ec.core_json(self.core)
        self.assertEqual([w["verdict"] for w in j["wirings"]], ["no fit", "fitted"])
        json.dumps(j, allow_nan=True)  # serialisable as findings.json writes it

    def test_the_paragraph_gives_medians_with_the_seeds_range_and_the_cpu(self):
        text = law.paragraph(self.core, [{"stage": "start", "cpu_model": "Fabricated Xeon"}])
        self.assertIn("`f(layernorm(x))` at lr 0.0003: L=1: 100 (seeds 100-150); L=2: 350 (seeds 300-450); "
                      "L=3: never within 3000 (3 of 3 seeds); fewer than 3 depths escaped (2 of 3): no law read; "
                      "from L=2 to L=3 the median grows at least x8.57 (L=3 censored at 3000)", text)
        self.assertIn("on Fabricated Xeon", text)
        self.assertIn("18 runs", text)

    def test_a_depth_with_some_seeds_censored_names_each(self):
        w = ec.Wiring("none-nores", "f(x)", 1e-3, {2: [(30, 600, 600), (31, None, 3000), (32, 650, 650)]}, [],
                      "no fit", "")
        self.assertEqual(law.depth_text(w, 2, 3000), "L=2: 650 (seeds 600, > 3000, 650)")

    def test_the_figure_is_a_png(self):
        with tempfile.TemporaryDirectory() as root:
            written = []
            rel = law.figure(root, self.core, written)
            with open(os.path.join(root, rel), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertEqual(written, [os.path.join(root, rel)])


@full_run_only
class OffTheRules(unittest.TestCase):
    """Issue 60, defect 1: a core run whose settings differ from what escape_law_rules.json and
    escape_law_core.json fix is not judged, named with the keys that differ in the text and the JSON."""

    def test_a_run_off_the_rules_is_not_read_and_is_named_with_its_keys(self):
        runs = [r for _, r in core_runs()]
        runs[0].config["model"]["n_embd"] = 16        # L = 1, f(layernorm(x)), seed 30
        runs[1].config["train"]["max_iters"] = 20     # seed 31
        runs[2].config["optim"]["learning_rate"] = 0.01
        core = ec.judge_core(fabricate.FakeSweep(ec.SWEEP, runs))
        self.assertEqual(core.runs, 15)
        self.assertNotIn(1, core.wirings[0].seeds)
        j = ec.core_json(core)
        self.assertEqual([(x["run"], [d["key"] for d in x["differs"]]) for x in j["refused"]],
                         [("L1-pre-layernorm-nores-lr0.0003-s30", ["model.n_embd"]),
                          ("L1-pre-layernorm-nores-lr0.0003-s31", ["train.max_iters"]),
                          ("L1-pre-layernorm-nores-lr0.0003-s32", ["optim.learning_rate"])])
        text = law.paragraph(core, [])
        self.assertIn("3 run(s) not judged, their settings differ from the rules' (model.n_embd 16 (the rules: 64): "
                      "1 run (escape_law_core/L1-pre-layernorm-nores-lr0.0003-s30); train.max_iters 20 (the rules: "
                      "3000)", text)

    def test_a_tiny_study_is_held_to_the_core_scaled_down(self):
        runs = [r for _, r in core_runs()]
        self.assertEqual(len(ec.judge_core(fabricate.FakeSweep(ec.SWEEP, runs), tiny=True).refused), 18)


class LeftOut(unittest.TestCase):
    # issue 60: the paragraph said "(1 of 1 seeds)" where one of two seeds was excluded
    def core_with(self, diverged):
        runs = [(rid, r) for rid, r in core_runs() if rid.split("-")[1] == "pre"]  # f(layernorm(x)): no fit, quick
        for rid, r in runs:
            if rid in diverged:
                r.summary["status"] = "diverged"
        return ec.judge_core(fabricate.FakeSweep(ec.SWEEP, [r for _, r in runs]))

    def test_a_depth_counts_the_seeds_it_left_out_and_names_them(self):
        core = self.core_with({"L3-pre-layernorm-nores-s31"})
        text = law.paragraph(core, [])
        self.assertIn("L=3: never within 3000 (2 of 3 seeds; seed 31 left out: diverged)", text)
        depth = ec.core_json(core)["wirings"][0]["depths"][2]
        self.assertEqual(depth["left_out"], [{"seed": 31, "reason": "diverged"}])

    def test_a_depth_whose_every_seed_was_left_out_is_still_named(self):
        core = self.core_with({f"L2-pre-layernorm-nores-s{s}" for s in (30, 31, 32)} | {"L1-pre-layernorm-nores-s30"})
        text = law.paragraph(core, [])
        self.assertIn("L=1: 125 (seeds 100-150; 2 of 3 seeds, seed 30 left out: diverged); "
                      "L=2: no seed judged (seeds 30, 31, 32 left out: diverged); L=3: never within 3000 (3 of 3 "
                      "seeds)", text)


@full_run_only
class InTheReport(unittest.TestCase):
    def test_the_report_shows_the_core_under_the_headline_and_writes_its_results_table(self):
        with tempfile.TemporaryDirectory() as root:
            sweeps = write_study(root)
            fabricate.write_sweep_dir(root, ec.SWEEP, core_runs())
            sweeps[ec.SWEEP] = report.Sweep(root, ec.SWEEP)
            # an opt-in stage of the whole law in the same folder: a results table, not an extra
            fabricate.write_sweep_dir(root, "escape_law_h0", core_runs()[:2])
            sweeps["escape_law_h0"] = report.Sweep(root, "escape_law_h0")
            with contextlib.redirect_stdout(io.StringIO()):
                md_path, _, fj = report.write_report(root, sweeps)
            with open(md_path, encoding="utf-8") as f:
                md = f.read()
            self.assertLess(md.index("![figures/front/"), md.index("**The escape law's core**: "))
            self.assertLess(md.index("**The escape law's core**: "), md.index("Quick tier: "))
            self.assertIn(law.FIGURE, md)
            self.assertTrue(fj["escape_law_core"]["present"])
            self.assertNotIn("## Extras", md, "the law's sweeps are no extras: the fixture has none")
            with open(os.path.join(root, "results", "escape_law_core.csv"), encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            self.assertEqual(len(rows), 18)
            self.assertEqual({r["cpu_model"] for r in rows}, {"fabricated CPU"})
            self.assertEqual(sum(r["censored"] == "yes" for r in rows), 3)

            dest = os.path.join(root, "docs", "results")
            self.assertEqual(report.copy_results(root, dest), [os.path.join(dest, "escape_law_core.csv"),
                                                               os.path.join(dest, "escape_law_h0.csv")])
            with open(os.path.join(dest, "escape_law_core.csv"), encoding="utf-8") as f:
                self.assertEqual(len(list(csv.DictReader(f))), 18)

    def test_results_are_not_copied_from_a_tiny_study_nor_from_a_folder_without_them(self):
        with tempfile.TemporaryDirectory() as root:
            with self.assertRaisesRegex(ValueError, "no results tables"):
                report.copy_results(root, os.path.join(root, "dest"))
            os.makedirs(os.path.join(root, "results"))
            with open(os.path.join(root, "results", "escape_law_core.csv"), "w", encoding="utf-8") as f:
                f.write("sweep\n")
            with open(os.path.join(root, "timing.jsonl"), "w", encoding="utf-8") as f:
                f.write('{"stage": "start", "tiny": true}\n')
            with self.assertRaisesRegex(ValueError, "--tiny"):
                report.copy_results(root, os.path.join(root, "dest"))
            self.assertFalse(os.path.exists(os.path.join(root, "dest")))


if __name__ == "__main__":
    unittest.main()
