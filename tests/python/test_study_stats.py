"""The seed statistics (scripts/stacklab/study_stats.py) against hand-worked values."""
import unittest

from stacklab import study_stats as st


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
