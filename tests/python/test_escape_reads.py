"""What escape_study says of a read it cannot make, or not yet, and of a bound the data do not give (issue 60):
an end of a 95 % interval the data do not bound is "no bound" in the text and null in the JSON, never a number
(defect 6)."""
import math
import os
import tempfile
import unittest

from stacklab import escape_core as ec
from stacklab import escape_law as law
from stacklab import escape_study as es


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
        text = es.read_line("At lr 0.0003 held across depths", w)
        self.assertIn("L = 8: 5.06e+25 (2e+21-3.75e+31), L = 32: > 4.6e+299 (no bound either side), "
                      "L = 96: > 4.6e+299 (all above 4.6e+299)", text)
        self.assertNotIn("inf", text)
        js = es._read_json(w)["predictions"]["doubly exponential"]
        self.assertEqual(js[1], {"depth": 32, "median": None, "lo": None, "hi": None})

    def test_an_interval_open_at_one_end_names_that_end(self):
        w = read_with({8: (5.44e4, None, 6.73e4), 32: (4.47e6, 2.87e6, None)})
        self.assertIn("L = 8: 5.44e+04 (no lower bound to 6.73e+04), L = 32: 4.47e+06 (2.87e+06 to no upper bound)",
                      es.read_line("At each depth best rate", w))

    def test_the_figure_leaves_an_end_without_a_bound_undrawn(self):
        from stacklab.plot_escape_law import plot_escape_law
        obs = [law.escaped_at(d, s, 50) for d, s in ((1, 100), (2, 500), (3, 9000))] + [law.never_within(4, 12000)]
        fit = law.FormFit("power", (4.6, 4.0), 0.3, -10.0, 4, 1)
        given = {1: (100, 60, 160), 2: (500, None, 900), 3: (9000, 5000, None), 4: (1e5, None, None),
                 96: (1e12, 1e9, None)}
        with tempfile.TemporaryDirectory() as d:
            out = plot_escape_law({"f(layernorm(x))": (obs, fit, given)}, os.path.join(d, "law.png"), predict_at=96)
            self.assertGreater(os.path.getsize(out), 5000)


if __name__ == "__main__":
    unittest.main()
