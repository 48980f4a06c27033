"""signal_study (issue 45 part 2) judges fabricated sweeps by configs/experiments/signal_rules.json:
a point trains when 2 of its 3 seeds escape; each outcome gives the verdict the rules fix."""
import json
import os
import tempfile
import unittest

import fabricate
from stacklab import signal_study as ss

with open(ss.RULES, encoding="utf-8") as f:
    RULES = json.load(f)

ESCAPES = [(0, 3.5), (50, 3.44), (100, 3.2)]      # 3.2 <= 3.4356 - 0.1 at step 100
STALLS = [(0, 3.5), (50, 3.44), (100, 3.43)]


def _run(point, depth, seed, escapes):
    r = fabricate.run("pre-layernorm-nores", depth, 3e-4, seed, 3.2 if escapes else 3.43,
                      evals=ESCAPES if escapes else STALLS)
    m = r.config["model"]
    if point in ss.KINDS:
        m["attention_kind"] = point
    else:
        m["mlp" if point == "attn-only" else "attention"] = False
    r.config["train"]["eval_interval"] = 50
    r.summary["reference_losses"]["unigram_on_val"] = 3.4356
    return r


def _write(root, outcome):
    """outcome: {(point, depth): number of the 3 seeds that escape}; every other planned point stalls."""
    sweeps = {"signal_shaped": [], "signal_sublayer": []}
    for point, depth in ss.PLAN:
        k = outcome.get((point, depth), 0)
        sweep = "signal_shaped" if point in ss.KINDS else "signal_sublayer"
        for i, seed in enumerate((40, 41, 42)):
            sweeps[sweep].append((f"L{depth}-{point}-s{seed}", _run(point, depth, seed, i < k)))
    for name, runs in sweeps.items():
        fabricate.write_sweep_dir(root, name, runs)


class Verdicts(unittest.TestCase):
    def judge(self, outcome):
        with tempfile.TemporaryDirectory() as root:
            _write(root, outcome)
            return ss.judge(root, RULES)

    def test_shaped_training_at_both_depths_where_softmax_stalls_is_sufficient_but_not_necessary(self):
        res = self.judge({("shaped", 8): 3, ("shaped", 32): 2})
        self.assertEqual(res.missing, [])
        self.assertEqual(res.verdicts["overall"],
                         "a residual is sufficient but not necessary: a stack that keeps its signal trains without one")
        self.assertEqual(res.verdicts["control"][8], "the control does not train: the identity term is credited")

    def test_one_seed_of_three_is_not_training(self):
        res = self.judge({("shaped", 8): 1, ("shaped", 32): 1})
        self.assertEqual(res.verdicts["overall"],
                         "in this lab, nothing but a residual trains at L >= 8 (within H, at 3e-4)")
        self.assertIn("Verdict: in this lab, nothing but a residual trains at L >= 8 (within H, at 3e-4).\n",
                      ss.markdown(res))
        self.assertEqual(res.points[("shaped", 8)].escaped, 1)
        self.assertFalse(res.points[("shaped", 8)].trains)

    def test_shaped_at_8_only_is_partial_and_names_the_depths(self):
        res = self.judge({("shaped", 8): 3})
        self.assertEqual(res.verdicts["overall"],
                         "partial: shaped attention trains without a residual at L = 8 but not at L = 32 within H")

    def test_a_control_that_trains_too_credits_the_zero_query_init(self):
        res = self.judge({("shaped", 8): 3, ("shaped_no_identity", 8): 2, ("shaped", 32): 3})
        self.assertIn("zero-query init", res.verdicts["control"][8])

    def test_softmax_training_at_a_depth_is_not_told_apart_there(self):
        res = self.judge({("softmax", 8): 3, ("shaped", 8): 3, ("shaped", 32): 3})
        self.assertIn("not told apart", res.verdicts["depth"][8])
        self.assertTrue(res.verdicts["overall"].startswith("partial"))

    def test_the_sub_layer_whose_stack_alone_stalls_is_named(self):
        res = self.judge({("mlp-only", 8): 3, ("attn-only", 2): 3, ("mlp-only", 2): 3})
        self.assertIn("attention stalls the signal", res.verdicts["sublayer"][8])
        self.assertIn("not told apart (both train)", res.verdicts["sublayer"][2])
        self.assertIn("not told apart (neither trains)", res.verdicts["sublayer"][32])

    def test_unfinished_points_are_listed_not_judged(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {("shaped", 8): 3})
            d = os.path.join(root, "signal_shaped")
            for seed in (41, 42):  # two L = 32 shaped seeds still running
                with open(os.path.join(d, f"L32-shaped-s{seed}", "summary.json"), "w", encoding="utf-8") as f:
                    json.dump({"status": "running"}, f)
            res = ss.judge(root, RULES)
        self.assertIn(("shaped", 32), res.missing)
        self.assertTrue(res.verdicts["overall"].startswith("not judged"))
        self.assertIn("(1 of 3 seeds finished)", ss.markdown(res))


class FindingsJson(unittest.TestCase):
    """findings.json's "signal" (judge.py writes it): not run without the sweeps, else the verdict and
    every point with its seeds."""

    def test_a_folder_without_the_signal_sweeps_is_not_run(self):
        with tempfile.TemporaryDirectory() as root:
            res = ss.judge(root, RULES)
        self.assertFalse(res.present)
        self.assertEqual(ss.findings_json(res), {"present": False, "verdict": "not run", "how": ss.COMMAND,
                                                 "rules": ss.RULES_FILE})

    def test_the_verdict_its_parts_and_each_points_seeds_are_written(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {("shaped", 8): 3, ("shaped", 32): 2})
            res = ss.judge(root, RULES)
        fj = json.loads(json.dumps(ss.findings_json(res)))  # what json.dump writes, read back
        self.assertEqual(res.sweeps, ["signal_shaped", "signal_sublayer"])
        self.assertTrue(fj["present"])
        self.assertIn("a residual is sufficient but not necessary", fj["verdict"])
        self.assertEqual(fj["depths"][0], {"depth": 8, "verdict": "shaped trains without a residual, softmax does not",
                                           "control": "the control does not train: the identity term is credited"})
        shaped32 = next(p for p in fj["points"] if (p["point"], p["depth"]) == ("shaped", 32))
        self.assertEqual([(x["seed"], x["escape_step"]) for x in shaped32["seeds"]], [(40, 100), (41, 100), (42, None)])
        self.assertEqual((shaped32["escaped"], shaped32["trains"]), (2, True))
        self.assertEqual(fj["not_judged"], [])
        self.assertEqual(len(fj["points"]), len(ss.PLAN))


class Table(unittest.TestCase):
    def test_whether_the_points_that_train_start_with_the_higher_rank_ratio_is_read_per_depth_and_over_all(self):
        def point(name, depth, escaped, ratio):
            return ss.Point(name, depth, seeds=[(40 + i, 50 if i < escaped else None, 5500) for i in range(3)],
                            rank_ratio=[ratio] * 3)
        pts = {("shaped", 8): point("shaped", 8, 3, 0.9), ("softmax", 8): point("softmax", 8, 0, 0.05),
               ("mlp-only", 2): point("mlp-only", 2, 3, 0.4), ("mlp-only", 32): point("mlp-only", 32, 0, 0.8),
               ("unprobed", 8): ss.Point("unprobed", 8, seeds=[(40, None, 5500)] * 3)}
        r = ss.rank_reading(pts)
        self.assertEqual(r[8], "those that train start at 0.9-0.9, those that do not at 0.05-0.05: "
                               "yes, every point that trains starts higher")
        self.assertEqual(r[2], "every point trains: nothing to compare")
        self.assertEqual(r[32], "no point trains: nothing to compare")
        self.assertTrue(r["all"].endswith("no, a point that does not train starts higher than one that does"))
        self.assertIn("0.4-0.9", r["all"])

    def test_escape_steps_read_as_median_and_range_and_censored_runs_as_never_within(self):
        p = ss.Point("shaped", 8, seeds=[(40, 300, 300), (41, 500, 500), (42, None, 5500)])
        self.assertEqual(p.steps_text(), "median 400, range 300-500; 1 never within 5500")
        self.assertTrue(p.trains)

    def test_the_point_of_a_run_comes_from_its_config(self):
        self.assertEqual(ss.point_of({"model": {"attention_kind": "shaped"}}), "shaped")
        self.assertEqual(ss.point_of({"model": {"mlp": False}}), "attn-only")
        self.assertEqual(ss.point_of({"model": {"attention": False}}), "mlp-only")
        self.assertEqual(ss.point_of({"model": {}}), "softmax")


if __name__ == "__main__":
    unittest.main()
