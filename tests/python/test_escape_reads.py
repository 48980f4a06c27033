"""What escape_study says of a read it cannot make, or not yet, and of a bound the data do not give (issue 60):
a point with fewer runs than its sweep names says "k of n seeds" and every read over it is pending, in the text
and the JSON, not a verdict from a smaller point (defect 3); a depth whose escape_law_deep runs are missing keeps
its row of the committed predictions, pending with the count, instead of falling back to its stage-0 runs
(defect 4); without the probe table every read against -ln(rank ratio) and the second knob's read are named as
not made, with why, and the command exits 3 (defect 5); an end of a 95 % interval the data do not bound is "no
bound" in the text and null in the JSON, never a number (defect 6)."""
import contextlib
import io
import math
import os
import tempfile
import unittest

from full_run import full_run_only
from test_escape_study import ATTN, TWO, deep_rules, row, rows_of, write

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab.studies.escape import study as es
from stacklab.report import law_study as ls

RULES = ec.load_rules()
SEEDS = range(30, 35)  # the rules' seeds.runs
# f(layernorm(x)) at 3e-4: L = 1-3 escape, L = 4 never within 3000: a fitted read; at 1e-4 two depths
THREE = ([row("pre-layernorm-nores", d, 3e-4, s, st) for d, sts in
          {1: (100, 150, 100, 150, 100), 2: (450, 500, 600, 400, 550), 3: (2000, 2400, 1900, 2600, 2200),
           4: (None,) * 5}.items() for s, st in zip(SEEDS, sts)]
         + [row("pre-layernorm-nores", d, 1e-4, s, st) for d, sts in {1: (300,) * 5, 2: (1500,) * 5}.items()
            for s, st in zip(SEEDS, sts)])
# each depth escapes at one rate only: a fitted best-rate read and no read held across depths (fewer fits)
STAIR = [row("pre-layernorm-nores", d, lr, s, st) for d, lr, sts in
         ((1, 1e-3, (100, 150, 100, 150, 100)), (2, 3e-4, (450, 500, 600, 400, 550)),
          (3, 1e-4, (2000, 2400, 1900, 2600, 2200))) for s, st in zip(SEEDS, sts)]
WITHOUT_33_34 = [r for r in THREE if not (r["depth"] == 2 and r["learning_rate"] == "0.0003" and r["seed"] >= 33)]


@full_run_only
class MissingRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.st = es.judge(rows_of(WITHOUT_33_34), RULES)
        cls.text = ls.markdown(cls.st, RULES)
        cls.js = es.study_json(cls.st)

    def test_a_point_with_fewer_seeds_than_the_rules_name_says_k_of_n_and_pending(self):
        # the case: two seeds of L4-pre-layernorm-nores at 3e-5 removed read "3/3 · 6000", a whole point
        self.assertIn("| 2 | 5/5 · 1500 (1500) | 3/3 · 500 (450-600) (3 of 5 seeds: pending) |",
                      self.text.replace("**", ""))
        self.assertEqual(self.st.missing, 2)
        self.assertIn("**2 runs the sweep files name are not in the tables**", self.text)

    def test_the_best_rate_read_over_it_is_pending_not_a_verdict_in_the_text_and_the_json(self):
        self.assertIn("- At each depth best rate (L = 1: 0.0003, L = 2: 0.0003, L = 3: 0.0003, L = 4: 0.0003 (none "
                      "escaped: the tie's lower rate)): pending (runs missing: L = 2 at 0.0003: 3 of 5 seeds); from "
                      "the runs in the tables, no verdict: 3 depths escaped", self.text)
        best = self.js["wirings"][0]["best"]
        self.assertEqual((best["verdict"], best["read_so_far"], best["pending"]),
                         ("pending", "fitted", ["L = 2 at 0.0003: 3 of 5 seeds"]))
        self.assertFalse(self.js["complete"])

    def test_the_read_held_at_the_short_rate_is_pending_and_its_falsifier_gives_no_verdict(self):
        self.assertEqual(self.st.wirings[0].pending_at(1e-4), [])  # a read held at 1e-4 would be a verdict
        held = self.js["wirings"][0]["held"]
        self.assertEqual(held["0.0003"]["verdict"], "pending")
        self.assertIsNone(held["0.0003"]["falsifier"]["fires"])
        self.assertIn("falsifier: at L = 8 the law's median escape step is", self.text)
        self.assertNotIn("not falsified", self.text)
        self.assertEqual(self.st.wirings[0].knob, "pending")

    def test_the_sweep_files_name_the_points_and_seeds_a_table_should_hold(self):
        named = es.named_runs([es.DEEP_SWEEP, "escape_law"])
        self.assertEqual(named[es.DEEP_SWEEP][("pre-layernorm-nores", 6, 3e-5, "normal")], set(SEEDS))
        self.assertEqual(len(named["escape_law"]), 3 * 7 * 5)
        # a point the sweep names with no run at all: a cell "not run (0 of 5 seeds: pending)"
        want = {("pre-layernorm-nores", 3, 1e-4, "normal"): set(SEEDS)}
        st = es.judge(rows_of(TWO), RULES, named={"escape_law": want})
        self.assertIn("not run (0 of 5 seeds: pending)", ls.markdown(st, RULES))
        self.assertEqual(st.missing, 5)


class MissingDeepRuns(unittest.TestCase):
    # f(x)'s L = 3 at 1e-3 and 3e-4: the deep sweep names 10 runs (seeds 30-34 each), none in its table
    NAMED = {es.DEEP_SWEEP: {("none-nores", 3, lr, "normal"): set(SEEDS) for lr in (1e-3, 3e-4)}}

    def test_the_predictions_row_stays_pending_with_the_count_when_the_deep_table_lacks_the_depth(self):
        st = es.judge(rows_of(TWO), deep_rules(), named=self.NAMED)
        (t,) = st.tests
        self.assertEqual((t.depth, t.pending, t.missing), (3, 10, 10))
        self.assertEqual({bad for _, bad in t.forms.values()}, {None})
        text = ls.markdown(st, deep_rules())
        self.assertIn("| f(x) | 3 | 0.001 | 0/5 · > 3000 (pending: 10 runs of escape_law_deep not in its table) | "
                      "2e+03 (1.5e+03-2.5e+03): pending |", text)
        self.assertIn("| 3 | 0/5 · > 3000 (0 of 5 runs of escape_law_deep: pending) |", text)
        self.assertEqual(es.study_json(st)["deep_tests"][0]["missing"], 10)

    def test_the_depth_does_not_fall_back_to_its_stage_0_runs_as_if_complete(self):
        st = es.judge(rows_of(TWO), deep_rules(), named=self.NAMED)
        wl = st.wirings[0]
        self.assertEqual(wl.pending, {(3, 1e-3): "0 of 5 runs of escape_law_deep"})
        self.assertTrue(ls.read_line("best", wl.best, wl.pending_at()).startswith(
            "best: pending (runs missing: L = 3 at 0.001: 0 of 5 runs of escape_law_deep)"))

    def test_the_deep_runs_there_make_the_row_a_verdict_again(self):
        deep = [row("none-nores", 3, lr, s, None, steps=12000) for lr in (1e-3, 3e-4) for s in SEEDS]
        st = es.judge(rows_of(TWO), deep_rules(), deep_rows=rows_of(deep), named=self.NAMED)
        (t,) = st.tests
        self.assertEqual((t.pending, t.missing), (0, 0))
        self.assertNotIn(None, {bad for _, bad in t.forms.values()})


@full_run_only
class ProbeTableAbsent(unittest.TestCase):
    def test_the_read_against_the_rank_ratio_is_named_as_not_made_with_why(self):
        st = es.judge(rows_of(STAIR), RULES, absent={es.PROBE_SWEEP: "docs/results/escape_law_probe.csv absent"})
        self.assertIn("- Against x = -ln(rank ratio at init), at the best rates: not made: no rank ratio at init at "
                      "L = 1, 2, 3 (docs/results/escape_law_probe.csv absent).", ls.markdown(st, RULES))
        # the knob applies (3 depths escape, none short of its cap): its attention-only runs are due too
        self.assertEqual(st.not_made, [
            ("`f(layernorm(x))` against x = -ln(rank ratio at init)",
             "no rank ratio at init at L = 1, 2, 3 (docs/results/escape_law_probe.csv absent)"),
            ("the second knob's read of `f(layernorm(x))`",
             "no attention-only runs in the tables (not in escape_law_attn.csv)")])
        self.assertFalse(st.complete)
        self.assertIn("no rank ratio", es.study_json(st)["wirings"][0]["rank_not_made"])

    def test_the_second_knobs_pooled_read_is_named_as_not_made_with_why(self):
        # f(x) with full and attention-only blocks, two depths each (no fit: quick), no probe table of either
        rows = [row(w, d, 1e-3, s, 200 * d) for w in ("none-nores", ATTN) for d in (1, 2) for s in SEEDS]
        st = es.judge(rows_of(rows), RULES, absent={es.PROBE_SWEEP: "escape_law_probe.csv absent",
                                                    es.ATTN_PROBE_SWEEP: "escape_law_attn_probe.csv absent"})
        self.assertEqual(st.pooled, [])
        self.assertIn("Not made: the second knob's read of `f(x)`: no rank ratio at init for f(x) at L = 1, 2 "
                      "(escape_law_probe.csv absent); f(x), attention-only blocks at L = 1, 2 "
                      "(escape_law_attn_probe.csv absent).", ls.markdown(st, RULES))

    def test_the_command_names_the_reads_not_made_and_exits_3(self):
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, es.TABLE), STAIR)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = es.main(["--results", d])
            self.assertEqual(rc, 3)
            self.assertIn(f"not made: no rank ratio at init at L = 1, 2, 3 ({os.path.join(d, es.PROBE_TABLE)} "
                          "absent)", out.getvalue())
            self.assertIn("exit 3", err.getvalue())


def read_with(predictions) -> ec.Wiring:
    """A fitted read of f(layernorm(x)) whose doubly exponential form predicts `predictions` ({depth: (median,
    lo, hi)}), as escape_core.read_points makes it."""
    fit = law.FormFit("doubly exponential", (1.09, 0.377), 0.27, -10.0, 15, 5)
    return ec.Wiring("pre-layernorm-nores", "f(layernorm(x))", 3e-4, {}, [], "fitted",
                     "3 depths escaped; doubly exponential wins by AIC", fits={"doubly exponential": fit},
                     best="doubly exponential", delta_aic={"doubly exponential": 0.0},
                     predictions={"doubly exponential": predictions})


class NoBound(unittest.TestCase):
    def test_an_end_the_data_do_not_bound_is_said_so_in_the_text_and_null_in_the_json(self):
        # the committed study printed "L = 32: inf (1-inf)" and "L = 96: inf (4.6e+299-inf)": 1 and inf were
        # predict()'s markers for an end not found, and inf a median past the largest step reported
        w = read_with({8: (5.06e25, 2e21, 3.75e31), 32: (math.inf, None, None), 96: (math.inf, math.exp(690), None)})
        text = ls.read_line("At lr 0.0003 held across depths", w)
        self.assertIn("L = 8: 5.06e+25 (2e+21-3.75e+31), L = 32: > 4.6e+299 (no bound either side), "
                      "L = 96: > 4.6e+299 (all above 4.6e+299)", text)
        self.assertNotIn("inf", text)
        js = es._read_json(w)["predictions"]["doubly exponential"]
        self.assertEqual(js[1], {"depth": 32, "median": None, "lo": None, "hi": None})

    def test_an_interval_open_at_one_end_names_that_end(self):
        w = read_with({8: (5.44e4, None, 6.73e4), 32: (4.47e6, 2.87e6, None)})
        self.assertIn("L = 8: 5.44e+04 (no lower bound to 6.73e+04), L = 32: 4.47e+06 (2.87e+06 to no upper bound)",
                      ls.read_line("At each depth best rate", w))

    @full_run_only
    def test_the_figure_leaves_an_end_without_a_bound_undrawn(self):
        from stacklab.plots.escape_law import plot_escape_law
        obs = [law.escaped_at(d, s, 50) for d, s in ((1, 100), (2, 500), (3, 9000))] + [law.never_within(4, 12000)]
        fit = law.FormFit("power", (4.6, 4.0), 0.3, -10.0, 4, 1)
        given = {1: (100, 60, 160), 2: (500, None, 900), 3: (9000, 5000, None), 4: (1e5, None, None),
                 96: (1e12, 1e9, None)}
        with tempfile.TemporaryDirectory() as d:
            out = plot_escape_law({"f(layernorm(x))": (obs, fit, given)}, os.path.join(d, "law.png"), predict_at=96)
            self.assertGreater(os.path.getsize(out), 5000)


if __name__ == "__main__":
    unittest.main()
