"""The seed statistics (scripts/stacklab/studies/stats.py) and the findings' line fit and rank
correlation (study_findings.py) against values worked by hand in the comments."""
import unittest

from stacklab.runs import runlog
from stacklab.studies import findings as sf
from stacklab.studies import stats as st


class Summarize(unittest.TestCase):
    def test_mean_spread_and_interval_of_three_seeds(self):
        s = st.summarize([1.0, 2.0, 3.0])
        # mean 2; sd = sqrt((1 + 0 + 1) / 2) = 1; t(0.975, 2) = 4.303: 2 -+ 4.303 / sqrt(3) = 2 -+ 2.4843
        self.assertEqual((s["n"], s["mean"], s["min"], s["max"]), (3, 2.0, 1.0, 3.0))
        self.assertAlmostEqual(s["ci"][0], -0.4843, places=4)
        self.assertAlmostEqual(s["ci"][1], 4.4843, places=4)

    def test_interval_of_eight_values(self):
        s = st.summarize([2, 4, 4, 4, 5, 5, 7, 9])
        # mean 40 / 8 = 5; squared deviations 9+1+1+1+0+0+4+16 = 32, sd = sqrt(32 / 7) = 2.13809;
        # t(0.975, 7) = 2.365: 5 -+ 2.365 * 2.13809 / sqrt(8) = 5 -+ 1.78777
        self.assertEqual(s["mean"], 5.0)
        self.assertAlmostEqual(s["ci"][0], 3.21223, places=4)
        self.assertAlmostEqual(s["ci"][1], 6.78777, places=4)

    def test_one_seed_has_no_interval_and_missing_values_are_not_counted(self):
        self.assertIsNone(st.summarize([5.0])["ci"])
        self.assertEqual(st.summarize([None])["n"], 0)
        self.assertEqual(st.summarize([1.0, None, float("nan"), 3.0])["mean"], 2.0)  # 1 and 3 only

    def test_the_t_quantile_beyond_the_table(self):
        self.assertEqual(st.t975(1), 12.706)
        self.assertAlmostEqual(st.t975(40), 1.96 + 2.4 / 40)  # 2.02; the exact quantile is 2.021

    def test_the_summary_text(self):
        # [3.1, 3.2, 3.3]: mean 3.2, sd 0.1, 3.2 -+ 4.303 * 0.1 / sqrt(3) = 3.2 -+ 0.2484
        self.assertEqual(st.fmt_summary(st.summarize_loss([3.1, 3.2, 3.3])),
                         "3.200 (3.100-3.300, 95% CI 2.952-3.448, n=3)")
        self.assertEqual(st.fmt_summary(st.summarize_loss([3.4123])), "3.412 (n=1)")
        self.assertEqual(st.fmt_summary(st.summarize_loss([])), "n/a (n=0)")


class SeedRule(unittest.TestCase):
    def test_every_seed_below_the_threshold_is_seen(self):
        self.assertEqual(st.seed_rule([3.1, 3.2, 3.3], 3.35, below=True), (True, 3, 3, "every seed"))

    def test_two_of_three_with_a_wide_interval_is_not_seen(self):
        # [3.1, 3.2, 3.4]: mean 3.2333, sd 0.1528, upper 3.2333 + 4.303 * 0.1528 / sqrt(3) = 3.613 > 3.35
        self.assertEqual(st.seed_rule([3.1, 3.2, 3.4], 3.35, below=True), (False, 2, 3, ""))

    def test_four_of_five_with_an_interval_clear_of_the_threshold_is_seen(self):
        # mean 3.312, sd 0.02683 (4 x 0.012^2 + 0.048^2 = 0.00288, / 4), t(4) = 2.776:
        # upper 3.312 + 2.776 * 0.02683 / sqrt(5) = 3.3453 <= 3.35
        self.assertEqual(st.seed_rule([3.30, 3.30, 3.30, 3.30, 3.36], 3.35, below=True),
                         (True, 4, 5, "interval"))

    def test_above_the_threshold_for_a_stuck_stack(self):
        self.assertEqual(st.seed_rule([3.45, 3.46], 3.362, below=False)[:2], (True, 2))


class EscapeStep(unittest.TestCase):
    @staticmethod
    def run_with(evals):
        run = runlog.Run(path="x")
        run.records["eval"] = [{"step": s, "kind": "eval", "val_loss": v} for s, v in evals]
        return run

    def test_the_first_eval_a_margin_below_the_unigram_loss(self):
        run = self.run_with([(0, 3.5), (50, 3.35), (100, 3.2)])
        self.assertEqual(st.escape_step(run, 3.43), (100, 100))   # needs <= 3.33: 3.35 is not
        self.assertEqual(st.escape_step(run, 3.2), (None, 100))   # never: censored at its last eval

    def test_the_median_of_escapes_with_censored_runs(self):
        self.assertEqual(st.median_escape([(100, 100), (None, 100), (None, 100)]), (None, 100))
        self.assertEqual(st.median_escape([(100, 300), (200, 300), (None, 300)]), (200, 300))
        self.assertEqual(st.median_escape([(100, 300), (200, 300)]), (150, 300))  # even: the mean of two


class Rates(unittest.TestCase):
    def test_the_reference_rate_is_the_one_every_depth_has(self):
        pts = {("w", 2, 0.001): [], ("w", 2, 0.01): [], ("w", 8, 0.001): []}
        self.assertEqual(st.reference_rate(pts), 0.001)

    def test_among_tied_rates_the_lower_median(self):
        self.assertEqual(st.reference_rate({("w", 2, a): [] for a in (3e-4, 1e-3, 3e-3, 1e-2)}), 1e-3)


class LineFitAndRanks(unittest.TestCase):
    def test_the_least_squares_slope_of_a_small_series(self):
        # x 1..4, y 2, 4, 5, 8: means 2.5 and 4.75; Sxx = 5, Sxy = 4.125 + 0.375 + 0.125 + 4.875 = 9.5;
        # b = 1.9, a = 4.75 - 1.9 * 2.5 = 0; residuals 0.1, 0.2, -0.7, 0.4: SSres 0.70, SStot 18.75,
        # R^2 = 1 - 0.7 / 18.75 = 0.962667
        b, a, r2, ssr = sf.fit_line([1, 2, 3, 4], [2, 4, 5, 8])
        self.assertAlmostEqual(b, 1.9)
        self.assertAlmostEqual(a, 0.0)
        self.assertAlmostEqual(r2, 0.962667, places=6)
        self.assertAlmostEqual(ssr, 0.70)

    def test_no_fit_from_one_x(self):
        self.assertIsNone(sf.fit_line([2, 2], [1, 3]))
        self.assertIsNone(sf.fit_line([2], [1]))

    def test_ties_share_their_rank_and_a_flat_series_has_no_trend(self):
        self.assertEqual(list(sf.ranks([3, 1, 3])), [1.5, 0.0, 1.5])
        self.assertEqual(sf.spearman([2, 4, 8], [3.5, 3.6, 3.7]), 1.0)
        self.assertEqual(sf.spearman([2, 4, 8], [3.5001, 3.5002, 3.4999]), 0.0)  # equal at 1e-3


class SummarizeLoss(unittest.TestCase):
    # The exploded point a user saw: f(x) L=8 lr 1e-2, three seeds, one at 24967.77.
    SEEDS = [3.4594, 24967.7744, 3.4665]

    def test_an_interval_of_a_loss_never_reaches_below_zero(self):
        s = st.summarize_loss(self.SEEDS)
        # mean 8324.9001, sd 14412.2; t(0.975, 2) = 4.303: 8324.90 -+ 35807.1 -> (-27482.2, 44132.0)
        self.assertAlmostEqual(s["mean"], 8324.9001, places=4)
        self.assertEqual(s["ci"][0], 0.0)
        self.assertTrue(s["ci_clipped"])
        self.assertAlmostEqual(s["ci"][1], 44132.04, delta=0.05)

    def test_a_clipped_interval_says_so_in_the_text(self):
        text = st.fmt_summary(st.summarize_loss(self.SEEDS), 4)
        self.assertIn("95% CI 0.0000-44132.04", text)
        self.assertIn("clipped at 0", text)
        self.assertNotIn("CI -", text)

    def test_an_interval_above_zero_is_left_alone(self):
        s = st.summarize_loss([1.0, 2.0, 3.0])  # 2 -+ 4.303 / sqrt(3) = 2 -+ 2.484: reaches -0.484
        self.assertEqual(s["ci"][0], 0.0)
        s = st.summarize_loss([3.1, 3.2, 3.3])
        self.assertFalse(s["ci_clipped"])
        self.assertAlmostEqual(s["ci"][0], 3.2 - 4.303 * 0.1 / 3 ** 0.5, places=4)

    def test_a_difference_of_losses_may_be_negative(self):
        s = st.summarize([-0.2, -0.1, 0.1])  # a gap to the unigram loss: no floor
        self.assertLess(s["ci"][0], 0)
        self.assertFalse(s["ci_clipped"])


if __name__ == "__main__":
    unittest.main()
