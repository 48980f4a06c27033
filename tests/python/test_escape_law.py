"""The escape law's fit (scripts/stacklab/studies/escape/fit.py), its run tables (escape_results.py) and its
figure (plot_escape_law.py), on synthetic data drawn from each form with a fixed numpy seed: the
fit recovers the parameters it was drawn with, censored runs pull it (a fit taking them as escapes
is wrong), AIC picks the generating form, the profile interval covers the truth, the falsifier
fires when the law predicts an escape before 22000 at L = 8 and not otherwise.
    PYTHONPATH=scripts /usr/bin/python3 -m unittest tests/python/test_escape_law.py
"""
import csv
import math
import os
import tempfile
import unittest

import numpy as np

import fabricate
from full_run import full_run_only
from stacklab.studies.escape import fit as el
from stacklab.studies.escape import tables as er

DEPTHS = (1, 2, 3, 4, 5, 6, 8)
TRUE = {"exponential": (5.0, 0.6), "power": (5.0, 2.0), "doubly exponential": (1.6, 0.12)}


def draw(form, theta, sigma, seed, depths=DEPTHS, seeds=5, every=50, cap=48000):
    """Runs whose ln escape step is Normal(mu(L), sigma), seen on an eval grid of `every` steps and
    censored at `cap`."""
    rng = np.random.default_rng(seed)
    out = []
    for d in depths:
        for _ in range(seeds):
            t = math.exp(float(el.mu(form, theta, d)) + sigma * rng.standard_normal())
            out.append(el.never_within(d, cap) if t > cap else el.escaped_at(d, math.ceil(t / every) * every, every))
    return out


class ExactPoints(unittest.TestCase):
    """fit_points: the same law where every escape step is seen exactly, the censored likelihood's limit."""

    def test_exact_steps_give_the_censored_likelihoods_maximum_by_least_squares(self):
        steps = {1: 420.0, 2: 900.0, 3: 2300.0, 4: 4100.0, 6: 21000.0}
        x, y = list(steps), [math.log(s) for s in steps.values()]
        ls = el.fit_points(x, y, "exponential")
        # each interval shrunk to a width of 1e-6 of its step: the probability is density x width
        narrow = [el.Obs(d, s * (1 - 1e-6), s) for d, s in steps.items()]
        ml = el.fit_form(narrow, "exponential")
        self.assertAlmostEqual(ls.theta[0], ml.theta[0], places=3)
        self.assertAlmostEqual(ls.theta[1], ml.theta[1], places=3)
        self.assertAlmostEqual(ls.sigma, ml.sigma, places=3)
        self.assertAlmostEqual(ls.ssr, sum((v - ls.mu_at(d)) ** 2 for d, v in zip(x, y)), places=12)

    def test_the_power_form_is_a_line_in_ln_depth_and_one_depth_fits_nothing(self):
        f = el.fit_points([2, 8, 32], [math.log(10 * L ** 2) for L in (2, 8, 32)], "power")
        self.assertAlmostEqual(f.theta[1], 2.0)
        self.assertAlmostEqual(f.median_at(4), 160.0)
        self.assertIsNone(el.fit_points([8, 8], [5.0, 6.0], "exponential"))
        with self.assertRaisesRegex(ValueError, "doubly exponential"):
            el.fit_points([1, 2], [5.0, 6.0], "doubly exponential")


class Numerics(unittest.TestCase):
    def test_erfc_matches_the_standard_librarys_to_its_stated_precision(self):
        for x in (-3.0, -0.5, 0.0, 0.7, 2.0, 5.0, 9.0):
            self.assertAlmostEqual(float(el._erfc(x)) / math.erfc(x), 1.0, delta=2e-7)

    def test_an_interval_far_in_the_upper_tail_keeps_its_probability(self):
        p = float(el.interval_prob(8.0, 9.0))
        self.assertAlmostEqual(p / (0.5 * math.erfc(8 / math.sqrt(2)) - 0.5 * math.erfc(9 / math.sqrt(2))), 1.0,
                               delta=1e-5)

    def test_nelder_mead_finds_rosenbrocks_minimum(self):
        x, f = el.nelder_mead(lambda p: (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2, [-1.2, 1.0])
        self.assertAlmostEqual(x[0], 1.0, delta=1e-3)
        self.assertAlmostEqual(x[1], 1.0, delta=1e-3)

    def test_an_escape_is_an_interval_of_one_eval_and_a_censored_run_is_open_above(self):
        self.assertEqual(el.escaped_at(2, 400, 50), el.Obs(2.0, 350.0, 400.0))
        self.assertEqual(el.escaped_at(2, 400, 50, previous=300), el.Obs(2.0, 300.0, 400.0))
        self.assertTrue(el.never_within(3, 6000).censored)


class Fit(unittest.TestCase):
    def test_each_form_is_recovered_from_censored_quantised_runs_drawn_from_it(self):
        for form, theta in TRUE.items():
            obs = draw(form, theta, 0.3, seed=1)
            fit = el.fit_form(obs, form)
            with self.subTest(form=form, censored=fit.n_censored):
                self.assertAlmostEqual(fit.theta[1], theta[1], delta=0.25 * abs(theta[1]))
                self.assertAlmostEqual(fit.sigma, 0.3, delta=0.12)
                self.assertAlmostEqual(fit.mu_at(8), float(el.mu(form, theta, 8)), delta=0.5)

    def test_censored_runs_pull_the_fit_and_taking_them_as_escapes_is_wrong(self):
        theta = (5.0, 0.9)  # median 148 at L = 1, 200000 at L = 8: the deep runs are censored at 12000
        obs = draw("exponential", theta, 0.3, seed=2, cap=12000)
        self.assertGreaterEqual(sum(o.censored for o in obs), 10)
        fit = el.fit_form(obs, "exponential")
        naive = el.fit_form([el.escaped_at(o.depth, o.lo, 50) if o.censored else o for o in obs], "exponential")
        self.assertLess(abs(fit.theta[1] - 0.9), 0.15, "the censored likelihood finds the slope")
        self.assertLess(naive.theta[1], 0.9 - 0.2, "escapes at the cap flatten the slope")

    def test_aic_picks_the_form_the_runs_were_drawn_from(self):
        for form, theta in TRUE.items():
            obs = draw(form, theta, 0.25, seed=3, seeds=6)
            winner, delta = el.compare(el.fit_all(obs))
            with self.subTest(form=form, delta=delta):
                self.assertEqual(winner, form)

    def test_forms_within_two_aic_units_are_not_told_apart(self):
        fits = {f: el.FormFit(f, (0, 0), 1.0, ll, 10, 0) for f, ll in
                (("exponential", -10.0), ("power", -10.5), ("doubly exponential", -20.0))}
        winner, delta = el.compare(fits)
        self.assertIsNone(winner)
        self.assertAlmostEqual(delta["power"], 1.0)

    @full_run_only
    def test_the_profile_interval_covers_the_true_median_at_L8(self):
        truth, covered, n = float(el.mu("exponential", TRUE["exponential"], 8)), 0, 8
        for seed in range(n):
            obs = draw("exponential", TRUE["exponential"], 0.4, seed=100 + seed, depths=(1, 2, 3, 4, 5), seeds=5)
            m, lo, hi = el.predict(obs, el.fit_form(obs, "exponential"), 8)
            self.assertLess(lo, m)
            self.assertLess(m, hi)
            covered += lo <= math.exp(truth) <= hi
        self.assertGreaterEqual(covered, n - 2, "a 95 % interval misses at most 2 of 8")

    def test_the_interval_is_open_above_when_the_data_do_not_bound_it_and_says_no_bound(self):
        # One depth escaped, the deeper ones censored: the growth is bounded below, not above. The open end
        # is None ("no bound" in words, null in JSON), not a number such as inf (issue 60, defect 6).
        obs = [el.escaped_at(2, 400, 50), el.escaped_at(2, 450, 50), el.escaped_at(2, 600, 50)]
        obs += [el.never_within(d, 3000) for d in (3, 3, 3, 4, 4, 4)]
        _, lo, hi = el.predict(obs, el.fit_form(obs, "exponential"), 96)
        self.assertIsNone(hi)
        self.assertGreater(lo, 3000)
        self.assertEqual(el.interval_text(lo, hi), f"{lo:.3g} to no upper bound")

    def test_a_doubly_exponential_interval_past_1e300_gets_no_lower_end_of_1(self):
        # issue 60, defect 6: f(layernorm(x)) at 3e-4 held across depths printed "L = 32: inf (1-inf)": the
        # search for the lower end stepped from mu = 2.5e5 straight past mu = 0 and gave up with 1.0, predict's
        # old marker for "no bound", while the data put the lower end far above 1e300
        obs = [el.escaped_at(1, s, 50) for s in (100, 150, 100)] + [el.escaped_at(2, s, 50) for s in (450, 500, 600)]
        obs += [el.escaped_at(3, s, 50) for s in (6600, 9750, 9750)]
        obs += [el.never_within(d, 12000) for d in (3, 3, 4, 4, 4)]
        fit = el.fit_form(obs, "doubly exponential")
        m, lo, hi = el.predict(obs, fit, 32)
        self.assertTrue(math.isinf(m))
        self.assertIsNotNone(lo)
        self.assertGreater(lo, 1e299)
        self.assertIsNone(hi)
        self.assertEqual(f"{el.step_text(m)} ({el.interval_text(lo, hi)})", "> 4.6e+299 (all above 4.6e+299)")

    def test_an_end_and_a_step_in_words(self):
        self.assertEqual(el.step_text(None), "no bound")
        self.assertEqual(el.step_text(4.47e6), "4.47e+06")
        self.assertEqual(el.step_text(math.inf), "> 4.6e+299")
        self.assertEqual(el.interval_text(None, 2e21), "no lower bound to 2e+21")
        self.assertEqual(el.interval_text(None, None), "no bound either side")
        self.assertEqual(el.interval_text(2.87e6, 7.07e6), "2.87e+06-7.07e+06")
        self.assertTrue(el.within(5.0, None, 6.0))
        self.assertFalse(el.within(7.0, None, 6.0))

    def test_the_rank_fit_recovers_a_slope_in_minus_log_rank_ratio(self):
        ratio = {d: math.exp(-0.5 * d) for d in DEPTHS}  # -ln ratio = 0.5 L: slope 0.6 / 0.5 = 1.2
        obs = draw("exponential", (5.0, 0.6), 0.3, seed=4)
        fit = el.fit_rank(obs, ratio)
        self.assertAlmostEqual(fit.theta[1], 1.2, delta=0.3)
        self.assertEqual(el.rank_ratio_of_probe({"mean": {"rank_ratio": [0.9, 0.5, 0.25]}}), 0.25)


class Falsifier(unittest.TestCase):
    def test_it_fires_when_the_law_predicts_an_escape_before_22000_at_L8(self):
        fast = el.FormFit("exponential", (5.0, 0.5), 0.3, -1.0, 10, 0)   # median e^9 = 8100 at L = 8
        slow = el.FormFit("exponential", (5.0, 0.7), 0.3, -1.0, 10, 0)   # median e^10.6 = 40000
        f, s = el.falsifier(fast), el.falsifier(slow)
        self.assertTrue(f.fires)
        self.assertLess(f.chance_all_never, 0.01)
        self.assertFalse(s.fires)
        self.assertGreater(s.chance_all_never, 0.5)
        self.assertIn("FALSIFIED", f.text)


class Tables(unittest.TestCase):
    def _sweep(self, root):
        esc = fabricate.run("pre-layernorm-nores", 2, 3e-4, 30, 3.2,
                            evals=[(0, 3.5), (50, 3.44), (100, 3.30), (150, 3.2)])
        never = fabricate.run("pre-layernorm-nores", 3, 3e-4, 30, 3.43,
                              evals=[(0, 3.5), (50, 3.44), (100, 3.43)])
        for r in (esc, never):
            r.config["train"]["eval_interval"] = 50
            r.config["model"]["init"] = "normal"
            r.summary["reference_losses"]["unigram_on_val"] = 3.4356
            r.records["start"][0]["reference_losses"]["unigram_on_val"] = 3.4356
            r.records["start"][0]["numeric_path"] = {"openblas_core": "Haswell"}
        with open(os.path.join(root, "timing.jsonl"), "w", encoding="utf-8") as f:
            f.write('{"stage": "start", "cpu_model": "AMD EPYC", "commit": "abc123"}\n')
        return fabricate.write_sweep_dir(root, "escape_law", [("b-never", never), ("a-esc", esc)])

    def test_each_finished_run_is_one_line_in_run_order_and_the_same_folder_gives_the_same_bytes(self):
        with tempfile.TemporaryDirectory() as root:
            d = self._sweep(root)
            out = os.path.join(root, "docs", "results", "escape_law.csv")
            self.assertEqual(er.write_results_csv(d, out), 2)
            with open(out, encoding="utf-8") as f:
                text = f.read()
            rows = list(csv.DictReader(text.splitlines()))
            self.assertEqual([r["run"] for r in rows], ["a-esc", "b-never"])
            self.assertEqual((rows[0]["escape_step"], rows[0]["censored"]), ("100", "no"),
                             "3.30 <= 3.4356 - 0.1, and 3.44 is not")
            self.assertEqual((rows[1]["escape_step"], rows[1]["censored"]), ("", "yes"))
            self.assertEqual((rows[0]["cpu_model"], rows[0]["commit"], rows[0]["openblas_core"]),
                             ("AMD EPYC", "abc123", "Haswell"))
            self.assertEqual(rows[0]["unigram_reference"], "unigram_on_val")
            er.write_results_csv(d, out)
            with open(out, encoding="utf-8") as f:
                self.assertEqual(f.read(), text)

    def test_runs_become_intervals_and_each_depths_best_rate_is_the_earliest(self):
        a = fabricate.run("none-nores", 2, 1e-3, 30, 3.0, evals=[(0, 3.5), (50, 3.4), (100, 3.0)])
        b = fabricate.run("none-nores", 2, 3e-4, 30, 3.4, evals=[(0, 3.5), (50, 3.4), (100, 3.4)])
        for r in (a, b):
            r.config["train"]["eval_interval"] = 50
        pts = er.points([a, b], 0.1)
        obs, chosen = er.best_rate_obs(pts, "none-nores")
        self.assertEqual(chosen, {2: 1e-3})
        self.assertEqual(obs, [el.Obs(2.0, 50.0, 100.0)])
        self.assertEqual(er.held_rate_obs(pts, "none-nores", 3e-4), [el.never_within(2, 100)])


class Figure(unittest.TestCase):
    @full_run_only
    def test_it_writes_a_png_of_points_arrows_the_law_and_its_prediction(self):
        from stacklab.plots.escape_law import plot_escape_law
        obs = draw("exponential", (5.0, 0.9), 0.3, seed=5, depths=(1, 2, 3, 4), seeds=3, cap=12000)
        fit = el.fit_form(obs, "exponential")
        with tempfile.TemporaryDirectory() as d:
            out = plot_escape_law({"f(layernorm(x))": (obs, fit)}, os.path.join(d, "escape_law.png"))
            with open(out, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertGreater(os.path.getsize(out), 5000)


if __name__ == "__main__":
    unittest.main()
