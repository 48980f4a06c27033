"""signal_study (issue 45 part 2) judges fabricated sweeps by configs/experiments/signal_rules.json:
a point trains when 2 of its 3 seeds escape; each outcome gives the verdict the rules fix; a run off
the rules is not judged (issue 60); the committed results tables are judged as run folders are."""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

import fabricate
from stacklab.studies import signal as ss, signal_text as st

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


# The issue's repro (issue 60, defect 1): copies of the rules' sweep files with these settings, swept.
OFF_RULES = {"train": {"max_iters": 20}, "model": {"n_embd": 16}, "optim": {"learning_rate": 0.01}}


def _write(root, outcome, change=None):
    """outcome: {(point, depth): number of the 3 seeds that escape}; every other planned point stalls.
    change: {section: {key: value}} set in every run's config (a study run off the rules)."""
    sweeps = {"signal_shaped": [], "signal_sublayer": []}
    for point, depth in ss.PLAN:
        k = outcome.get((point, depth), 0)
        sweep = "signal_shaped" if point in ss.KINDS else "signal_sublayer"
        for i, seed in enumerate((40, 41, 42)):
            r = _run(point, depth, seed, i < k)
            for sec, kv in (change or {}).items():
                r.config.setdefault(sec, {}).update(kv)
            sweeps[sweep].append((f"L{depth}-{point}-s{seed}", r))
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
                      st.markdown(res))
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
        self.assertIn("(1 of 3 seeds finished)", st.markdown(res))


class OffTheRules(unittest.TestCase):
    """Issue 60, defect 1: a run whose settings differ from what the rules fix (their sweep files, their
    seeds, H and margin) is not judged: named with the keys that differ, in the text and the JSON, and
    no verdict is read from it."""

    def judge(self, change, outcome=None):
        with tempfile.TemporaryDirectory() as root:
            _write(root, outcome or {("shaped", 8): 1, ("shaped", 32): 1}, change)
            return ss.judge(root, RULES)

    def test_runs_at_the_issues_settings_are_not_judged_and_no_verdict_is_written(self):
        res = self.judge(OFF_RULES)
        self.assertEqual(len(res.refused), 3 * len(ss.PLAN))
        self.assertEqual(sorted(d.key for d in res.refused[0][2]),
                         ["model.n_embd", "optim.learning_rate", "train.max_iters"])
        self.assertEqual(res.verdicts["overall"],
                         "not judged: L = 8 not judged (6 runs' settings differ from the rules'), L = 32 not judged (6 "
                         "runs' settings differ from the rules')")
        self.assertNotIn("nothing but a residual", st.markdown(res))
        self.assertEqual(res.points[("shaped", 8)].seeds, [])
        self.assertEqual(len(res.missing), len(ss.PLAN))

    def test_the_text_names_the_keys_with_the_runs_and_the_rules_values(self):
        md = st.markdown(self.judge(OFF_RULES))
        self.assertIn("- not judged, their settings differ from the rules' (configs/experiments/signal_rules.json "
                      "and its sweep files):\n  - model.n_embd 16 (the rules: 64); optim.learning_rate 0.01 "
                      "(the rules: 0.0003); train.max_iters 20 (the rules: 5500): 36 runs "
                      "(signal_shaped/L32-shaped-s40, "
                      "signal_shaped/L32-shaped-s41, ", md)
        self.assertIn("and 30 more)", md)
        self.assertIn("| shaped | 8 | none judged | 3 not judged (settings differ from the rules') | (0 of 3 seeds "
                      "finished, 3 not judged) |", md)

    def test_the_json_names_each_run_and_its_keys(self):
        fj = json.loads(json.dumps(st.findings_json(self.judge({"model": {"n_embd": 16}}))))
        self.assertTrue(fj["present"])
        self.assertTrue(fj["verdict"].startswith("not judged"))
        self.assertEqual(len(fj["refused"]), 36)
        self.assertEqual(fj["refused"][0], {"sweep": "signal_shaped", "run": "L32-shaped-s40",
                                            "differs": [{"key": "model.n_embd", "value": 16, "rules": [64]}]})

    def test_a_rate_outside_the_rules_grid_on_some_runs_leaves_the_others_judged(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {("shaped", 8): 3, ("shaped", 32): 3})
            extra = _run("shaped", 8, 43, True)  # a fourth seed, at another rate and seed: off the rules
            extra.config["optim"]["learning_rate"] = 1e-3
            fabricate.write_sweep_dir(root, "signal_shaped", [(f"L{d}-{p}-s{sd}", _run(p, d, sd, p == "shaped"))
                                                              for p, d in ss.PLAN if p in ss.KINDS
                                                              for sd in (40, 41, 42)] + [("L8-shaped-s43", extra)])
            res = ss.judge(root, RULES)
        self.assertEqual([(s, r, [d.key for d in ds]) for s, r, ds in res.refused],
                         [("signal_shaped", "L8-shaped-s43", ["optim.learning_rate", "train.seed"])])
        self.assertEqual(res.verdicts["overall"],
                         "a residual is sufficient but not necessary: a stack that keeps its signal trains without one")

    def test_a_run_of_the_rules_is_judged(self):
        res = self.judge({"train": {"max_iters": 5500, "stop_below_unigram": 0.1}, "model": {"n_embd": 64}})
        self.assertEqual(res.refused, [])
        self.assertEqual(res.verdicts["overall"], "in this lab, nothing but a residual trains at L >= 8 (within H, "
                                                  "at 3e-4)")

    def test_the_command_exits_2_naming_them(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {}, OFF_RULES)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = ss.main([root])
        self.assertEqual(rc, 2)
        self.assertIn("train.max_iters 20 (the rules: 5500)", out.getvalue())
        self.assertIn("36 runs or probes", err.getvalue())


RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "results")


def tables(test, edit=None) -> str:
    """A temp folder (removed after `test`) with copies of the committed signal tables
    (docs/results/signal_*.csv); edit(name, text) -> text changes one before it is written."""
    root = tempfile.mkdtemp(prefix="signal-tables-")
    test.addCleanup(shutil.rmtree, root, True)
    for name in ss.TRAIN_SWEEPS:
        with open(os.path.join(RESULTS, name + ".csv"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(root, name + ".csv"), "w", encoding="utf-8") as f:
            f.write(edit(name, text) if edit else text)
    return root


def run_main(*argv) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = ss.main(list(argv))
    return code, out.getvalue(), err.getvalue()


class FromTheResultsTables(unittest.TestCase):
    """Issue 60, defect 10: `signal_study docs/results` said every point was "not run" (it read run folders
    only); the committed tables are judged as the run folders are, every row checked."""

    def test_the_committed_tables_give_the_committed_verdict(self):
        code, out, _ = run_main(RESULTS)
        self.assertEqual(code, 0)
        self.assertIn("Verdict: partial: shaped attention trains without a residual at L = 8 but not at L = 32 "
                      "within H.", out)
        self.assertIn("| shaped | 8 | 3 of 3 | median 50, range 50-100 | yes | not in the results tables |", out)
        self.assertIn("| mlp-only | 8 | 3 of 3 | median 50, range 50-50 | yes |", out)
        self.assertIn("| attn-only | 8 | 0 of 3 | 3 never within 5500 | no |", out)
        self.assertIn("- sub-layers at L = 8: attention stalls the signal", out)
        self.assertNotIn("not run", out)
        self.assertIn("Read from the results tables", out)

    def test_the_json_names_the_tables(self):
        res = ss.judge_tables(RESULTS, RULES)
        fj = st.findings_json(res)
        self.assertTrue(fj["present"])
        self.assertEqual([os.path.basename(t) for t in fj["tables"]], ["signal_shaped.csv", "signal_sublayer.csv"])
        self.assertEqual((fj["not_judged"], fj["refused"]), ([], []))

    def test_a_torn_table_is_refused_naming_its_line(self):
        root = tables(self, lambda name, text: text[:-30] if name == "signal_sublayer" else text)
        code, _, err = run_main(root)
        self.assertEqual(code, 2)
        self.assertIn("signal_sublayer.csv:19: the last line ends without a newline", err)

    def test_a_row_off_the_rules_is_not_judged_and_named(self):
        def edit(name, text):
            if name != "signal_shaped":
                return text
            return text.replace("L8-pre-layernorm-nores-shaped-s41,pre-layernorm-nores-shaped,8,0.0003",
                                "L8-pre-layernorm-nores-shaped-s41,pre-layernorm-nores-shaped,8,0.01")
        code, out, _ = run_main(tables(self, edit))
        self.assertEqual(code, 2)
        self.assertIn("optim.learning_rate 0.01 (the rules: 0.0003): 1 run "
                      "(signal_shaped/L8-pre-layernorm-nores-shaped-s41)", out)
        self.assertIn("| shaped | 8 | 2 of 2 |", out)

    def test_a_point_with_a_seed_missing_is_not_judged(self):
        root = tables(self, lambda name, text: "".join(line for line in text.splitlines(keepends=True)
                                                       if not line.startswith("signal_shaped,L32-")
                                                       or not line.split(",")[1].endswith("softmax-s42")))
        res = ss.judge_tables(root, RULES)
        self.assertIn(("softmax", 32), res.missing)
        self.assertEqual(res.verdicts["overall"], "not judged: L = 32 not run")

    def test_a_run_id_that_names_no_point_of_its_sweep_is_refused(self):
        root = tables(self, lambda name, text: text.replace("L8-pre-layernorm-nores-shaped-s40,",
                                                            "L8-pre-layernorm-nores-x-s40,"))
        code, _, err = run_main(root)
        self.assertEqual(code, 2)
        self.assertIn("signal_shaped.csv:", err)
        self.assertIn("names none of signal_shaped's points", err)

    def test_results_are_not_written_from_tables(self):
        with tempfile.TemporaryDirectory() as out:
            self.assertEqual(run_main(RESULTS, "--results", out)[0], 2)
            self.assertEqual(os.listdir(out), [])


class FindingsJson(unittest.TestCase):
    """findings.json's "signal" (judge.py writes it): not run without the sweeps, else the verdict and
    every point with its seeds."""

    def test_a_folder_without_the_signal_sweeps_is_not_run(self):
        with tempfile.TemporaryDirectory() as root:
            res = ss.judge(root, RULES)
        self.assertFalse(res.present)
        self.assertEqual(st.findings_json(res), {"present": False, "verdict": "not run", "how": ss.COMMAND,
                                                 "rules": ss.RULES_FILE})

    def test_the_verdict_its_parts_and_each_points_seeds_are_written(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {("shaped", 8): 3, ("shaped", 32): 2})
            res = ss.judge(root, RULES)
        fj = json.loads(json.dumps(st.findings_json(res)))  # what json.dump writes, read back
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
