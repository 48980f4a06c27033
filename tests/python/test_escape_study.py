"""The escape law's opt-in study judged from its results tables (scripts/stacklab/studies/escape/study.py):
each depth's best rate is the one whose seeds escape earliest; a read with 3 escaped depths is fitted
and predicts at 8, 32 and 96; with fewer it is "no fit" with the strongest lower bound on the growth;
diverged runs are left out and named; the probe's ratios sit beside each depth; the command reads the
committed tables, writes the figure and the JSON, and names a missing or broken table."""
import ast
import contextlib
import csv
import dataclasses
import functools
import glob
import io
import json
import math
import os
import tempfile
import types
import unittest
from unittest import mock

import fabricate
from full_run import full_run_only
from test_escape_core import core_runs
from test_report_unchanged import write_study

from stacklab.studies.escape import default_tier as ec
from stacklab.studies.escape import fit as law
from stacklab import report
from stacklab.studies.escape import tables as er
from stacklab.studies.escape import study as es
from stacklab.report import law_study as ls

RULES = ec.load_rules()


def row(wiring, depth, lr, seed, escape, steps=3000, init="normal", censored=None):
    return {"sweep": "escape_law", "run": f"L{depth}-{wiring}-lr{lr:g}-s{seed}", "wiring": wiring, "depth": depth,
            "learning_rate": f"{lr:g}", "init": init, "seed": seed,
            "steps": escape if escape is not None else steps, "escape_step": "" if escape is None else escape,
            "censored": censored or ("no" if escape is not None else "yes"), "best_val_loss": 3.3,
            "final_val_loss": 3.3, "unigram_reference": "unigram_on_val", "cpu_model": "Test CPU",
            "openblas_core": "Haswell", "commit": "abcdef0123" + "0" * 30}


def write(path, rows, columns=er.COLUMNS):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


# f(layernorm(x)): at 3e-4 L = 1-3 escape (x~4 a layer), L = 4 never; at 1e-4 everything later
FITTED = ([row("pre-layernorm-nores", d, 3e-4, s, st) for d, sts in
           {1: (100, 150, 100, 150, 100), 2: (450, 500, 600, 400, 550), 3: (2000, 2400, 1900, 2600, 2200),
            4: (None,) * 5}.items() for s, st in zip(range(30, 35), sts)]
          + [row("pre-layernorm-nores", d, 1e-4, s, st) for d, sts in
             {1: (300,) * 5, 2: (1500,) * 5, 3: (None,) * 5, 4: (None,) * 5}.items()
             for s, st in zip(range(30, 35), sts)])
# f(x): only L = 1 and 2 escape, one L = 2 run diverged
TWO = ([row("none-nores", d, 1e-3, s, st) for d, sts in {1: (200,) * 5, 2: (800,) * 5, 3: (None,) * 5}.items()
        for s, st in zip(range(30, 35), sts)]
       + [row("none-nores", 2, 1e-3, 35, None, censored="diverged")])


def study(rows, probe=None, scaled=()):
    with tempfile.TemporaryDirectory() as d:
        write(os.path.join(d, "t.csv"), rows)
        return es.judge(es.read_table(os.path.join(d, "t.csv")), RULES, probe=probe, scaled_rows=scaled)


PROBE = {("pre-layernorm-nores", d): (r, 1.0) for d, r in {1: 0.56, 2: 0.4, 3: 0.29, 4: 0.22}.items()}
SCALED = [es.Row(f"s{s}", "pre-layernorm-nores", 2, 3e-4, "scaled", s, 900, 900, False, "", "") for s in range(30, 35)]


def fitted_rows():
    with tempfile.TemporaryDirectory() as d:
        write(os.path.join(d, "t.csv"), FITTED)
        return es.read_table(os.path.join(d, "t.csv"))


@functools.lru_cache(maxsize=None)
def fitted():
    """The fitted study, judged once for every test that reads it (its fits take seconds)."""
    return study(FITTED, probe=PROBE, scaled=SCALED)


class BestRates(unittest.TestCase):
    @full_run_only
    def test_each_depth_takes_the_rate_whose_seeds_escape_earliest_and_a_tie_the_lower_rate(self):
        st = fitted()
        self.assertEqual(st.wirings[0].best.rate, {1: 3e-4, 2: 3e-4, 3: 3e-4, 4: 1e-4})


class Reads(unittest.TestCase):
    @full_run_only
    def test_three_escaped_depths_are_fitted_and_predict_a_later_escape_at_8_32_and_96(self):
        wl = fitted().wirings[0]
        self.assertEqual(wl.best.verdict, "fitted")
        preds = next(iter(wl.best.predictions.values()))
        self.assertLess(preds[8][0], preds[32][0])
        self.assertLess(preds[32][0], preds[96][0])
        self.assertGreater(preds[8][0], 3000)  # L = 4 never escaped within 3000

    @full_run_only
    def test_a_rate_held_across_depths_is_read_and_one_with_two_escaped_depths_is_no_fit(self):
        wl = fitted().wirings[0]
        self.assertEqual(wl.held[3e-4].verdict, "fitted")
        self.assertEqual(wl.held[1e-4].verdict, "no fit")
        self.assertIn("fewer than 3 depths escaped (2 of 4)", wl.held[1e-4].why)

    def test_two_escaped_depths_give_no_fit_with_the_strongest_bound_in_the_text(self):
        st = study(TWO)
        text = ls.markdown(st, RULES)
        self.assertEqual(st.wirings[0].best.verdict, "no fit")
        # from L = 2 (800) to L = 3 censored at 3000: at least x3.75 a layer
        self.assertIn("from L = 2 to 3 the median grows at least x3.75 a layer", text)

    def test_a_diverged_run_is_left_out_and_named(self):
        st = study(TWO)
        self.assertEqual([r for r, _ in st.excluded], ["L2-none-nores-lr0.001-s35"])
        self.assertEqual(len(st.wirings[0].cells[(2, 1e-3)]), 5)


class RulesDetails(unittest.TestCase):
    @full_run_only
    def test_the_falsifier_is_judged_only_at_the_held_rates_the_rules_name(self):
        wl = fitted().wirings[0]
        self.assertIsNotNone(wl.held[3e-4].falsifier)  # 3e-4: one of the rules' falsifier.rates
        self.assertIsNone(wl.best.falsifier)

    def test_a_depth_stopped_before_the_shallower_median_escape_bounds_nothing(self):
        # L = 2 escapes at 5000 in stage 1; L = 5 ended at H0 = 3000: no "at least x0.7 a layer"
        rows = ([row("none-nores", 1, 1e-3, s, 200) for s in range(30, 35)]
                + [row("none-nores", 2, 1e-3, s, 5000, steps=12000) for s in range(30, 35)]
                + [row("none-nores", 5, 1e-3, s, None) for s in range(30, 35)])
        self.assertEqual(study(rows).wirings[0].best.bounds, [])

    def test_a_run_of_another_init_in_the_main_table_is_left_out_and_named(self):
        st = study(TWO + [row("none-nores", 1, 1e-3, 36, 150, init="scaled")])
        self.assertIn(("L1-none-nores-lr0.001-s36", "init scaled, not the fit's normal"), st.excluded)
        self.assertEqual(len(st.wirings[0].cells[(1, 1e-3)]), 5)


class SecondKnob(unittest.TestCase):
    @full_run_only
    def test_it_is_open_while_a_depth_short_of_its_cap_could_make_four_escaped_depths(self):
        wl = fitted().wirings[0]  # L = 1-3 escape, L = 4 never within 3000, its decided cap 12000
        self.assertEqual((wl.knob, wl.knob_why),
                         ("open", "escapes at 3 depths (L = 1, 2, 3); L = 4 reached 3000 of its cap 12000"))
        self.assertIn("second knob (attention-only stacks, when fewer than 4 depths escape within their caps): "
                      "open", ls.markdown(fitted(), RULES))

    @full_run_only
    def test_it_applies_once_every_depth_without_an_escape_ran_to_a_cap_a_decision_lowered(self):
        rules = json.loads(json.dumps(RULES))
        rules["horizons"]["decided"]["cap"] = {"1": 3000, "2": 3000, "3": 3000, "4": 3000}
        st = es.judge(fitted_rows(), rules)  # judged once: its fits take seconds
        self.assertEqual(st.wirings[0].knob, "applies")
        self.assertEqual(es.study_json(st)["wirings"][0]["second_knob"]["verdict"], "applies")

    def test_it_applies_when_too_few_depths_were_run_to_reach_four(self):
        self.assertEqual(study(TWO).wirings[0].knob, "applies")  # L = 1, 2 escape, only L = 3 left

    @full_run_only
    def test_four_escaped_depths_need_no_second_knob(self):
        rows = [row("none-nores", d, 1e-3, s, 200 * 4 ** d) for d in (1, 2, 3, 4) for s in range(30, 35)]
        self.assertEqual(study(rows).wirings[0].knob, "does not apply")


ATTN = "none-nores" + er.ATTN_ONLY
# The rank ratio at init of f(x)'s full and attention-only stacks, and escape steps set by it alone:
# 100 exp(2 x), x = -ln(rank ratio), so that at each L the attention-only stack (more rank kept) escapes
# earlier than the full one, which no curve of depth alone shared by both fits
RANKS = {"none-nores": {1: 0.7, 2: 0.35, 3: 0.15}, ATTN: {1: 0.85, 2: 0.65, 3: 0.5, 4: 0.38}}
KNOB = [row(w, d, 1e-3, s, int(round(100 / r ** 2 * (1 + 0.05 * (s - 31)) / 50.0)) * 50)
        for w, rs in RANKS.items() for d, r in rs.items() for s in range(30, 33)]
KNOB_PROBE = {(w, d): (r, 1.0) for w, rs in RANKS.items() for d, r in rs.items()}


@functools.lru_cache(maxsize=None)
def knob_study():
    """KNOB judged once with its probe (the pooled fits take seconds)."""
    return study(KNOB, probe=KNOB_PROBE)


class AttentionOnly(unittest.TestCase):
    @full_run_only
    def test_an_attention_only_stack_is_a_wiring_of_its_own_with_its_formula_and_no_knob_of_its_own(self):
        st = knob_study()
        self.assertEqual([wl.wiring for wl in st.wirings], ["none-nores", ATTN])
        attn = st.wirings[1]
        self.assertEqual((attn.formula, attn.knob), ("f(x), attention-only blocks", ""))
        self.assertEqual(attn.best.escaped_depths, [1, 2, 3, 4])
        text = ls.markdown(st, RULES)
        self.assertIn("**`f(x), attention-only blocks`**", text)
        self.assertEqual(text.count("The rules' second knob"), 1)  # the full stack's line only

    def test_a_run_or_probe_without_its_mlp_is_named_attention_only_in_the_tables(self):
        run = types.SimpleNamespace(wiring="none-nores", config={"model": {"mlp": False}})
        self.assertEqual(er.wiring_of(run), ATTN)
        run.config = {"model": {"n_layer": 2}}
        self.assertEqual(er.wiring_of(run), "none-nores")

    @full_run_only
    def test_the_pooled_rank_line_wins_where_the_rank_ratio_and_not_depth_sets_the_escape(self):
        (p,) = knob_study().pooled
        self.assertEqual(p.wiring, "none-nores")
        self.assertEqual(p.best, "linear")
        self.assertAlmostEqual(p.fit.theta[1], 2.0, delta=0.2)  # the slope the steps were made with
        self.assertGreaterEqual(min(d for f, d in p.delta.items() if f != "linear"), law.DELTA_AIC)
        self.assertIn("the rank line wins", ls.markdown(knob_study(), RULES))
        self.assertEqual(es.study_json(knob_study())["pooled_rank"][0]["best"], "linear")

    @full_run_only
    def test_no_pooled_read_without_a_rank_ratio_at_every_depth_of_both_stacks(self):
        full, attn = knob_study().wirings
        missing = dataclasses.replace(attn, probe={d: v for d, v in attn.probe.items() if d != 4})
        self.assertIsNone(es.pooled_rank(full, missing, 3))
        self.assertIsNotNone(es.pooled_rank(full, attn, 3))


def second_path(scale_at_3):
    """FITTED's best-rate runs at 3e-4 on a second path: the same escape steps, L = 3's times scale_at_3."""
    rows = [dict(r, openblas_core="Haswell") for r in FITTED
            if r["learning_rate"] == "0.0003" and r["escape_step"] != ""]
    for r in rows:
        if r["depth"] == 3:
            r["escape_step"] = r["steps"] = int(r["escape_step"] * scale_at_3)
    return rows_of(rows)


@full_run_only
class SecondPath(unittest.TestCase):
    def test_the_same_escapes_on_a_second_path_hold_the_law_and_name_its_kernels(self):
        (c,) = es.path_checks(fitted().wirings, second_path(1.0), RULES, 50)
        self.assertEqual((c.wiring, c.kernels, c.holds), ("pre-layernorm-nores", "Haswell", True))
        self.assertEqual(c.main_form, c.second_form)
        self.assertEqual(c.main_96, c.second_96)
        self.assertEqual([(d, o) for d, _, _, _, o in c.points], [(1, False), (2, False), (3, False)])

    def test_a_point_whose_median_leaves_the_main_paths_range_is_named(self):
        st = dataclasses.replace(fitted(), paths=es.path_checks(fitted().wirings, second_path(2.0), RULES, 50))
        (c,) = st.paths
        self.assertEqual([(d, o) for d, _, _, _, o in c.points], [(1, False), (2, False), (3, True)])
        self.assertIsNotNone(c.holds)
        self.assertIn("| f(layernorm(x)) | 3 | 0.0003 | 5/5 · 2200 (1900-2600) | 5/5 · 4400 (3800-5200) (outside "
                      "the main path's range) |", ls.markdown(st, RULES))
        self.assertEqual(es.study_json(st)["second_path"][0]["points"][2]["outside"], True)


def deep_rules():
    rules = json.loads(json.dumps(RULES))
    rules["horizons"]["decided"]["stage_2_decided"]["predictions"] = {
        "made": "for the test", "power": {"3": [2000, 1500, 2500]}, "exponential": {"3": [5000, 4000, 6000]},
        "doubly exponential": {"3": [40000, 30000, 50000]}}
    return rules


def rows_of(rows):
    with tempfile.TemporaryDirectory() as d:
        write(os.path.join(d, "t.csv"), rows)
        return es.read_table(os.path.join(d, "t.csv"))


# f(x)'s L = 3 runs at 1e-3, censored at 3000 in stage 0, repeated to 12000 (escaping at 4500-5000) and
# at a new rate 3e-4 (one seed out)
DEEP = ([row("none-nores", 3, 1e-3, s, st, steps=12000) for s, st in zip(range(30, 35), (4500, 4600, 4700, 4800, 5000))]
        + [row("none-nores", 3, 3e-4, s, st, steps=12000) for s, st in zip(range(30, 35), (9000,) + (None,) * 4)])


@functools.lru_cache(maxsize=None)
def deep_study():
    """TWO with DEEP's repeats, judged once (f(x) then escapes at 3 depths: fitted, seconds)."""
    return es.judge(rows_of(TWO), deep_rules(), deep_rows=rows_of(DEEP))


class DeepRuns(unittest.TestCase):
    @full_run_only
    def test_a_longer_repeat_supersedes_its_stage_0_run_and_a_new_point_is_added(self):
        st = deep_study()
        wl = st.wirings[0]
        self.assertEqual(sorted(st.superseded), [f"L3-none-nores-lr0.001-s{s}" for s in range(30, 35)])
        self.assertEqual([x for _, x, _ in wl.cells[(3, 1e-3)]], [4500, 4600, 4700, 4800, 5000])
        self.assertEqual(len(wl.cells[(3, 3e-4)]), 5)
        self.assertEqual(wl.best.escaped_depths, [1, 2, 3])
        self.assertEqual(st.disagree, [])
        self.assertIn("5 stage-0 runs are read through their longer repeats in escape_law_deep", ls.markdown(st, RULES))

    @full_run_only
    def test_a_repeat_that_escapes_before_its_first_run_ended_on_the_plateau_is_named(self):
        deep = [row("none-nores", 3, 1e-3, 30, 2000, steps=12000)]
        st = es.judge(rows_of(TWO), RULES, deep_rows=rows_of(deep))
        self.assertEqual(st.disagree, ["L3-none-nores-lr0.001-s30 (escape 2000, its first run none within 3000)"])
        self.assertIn("**Not the same runs**", ls.markdown(st, RULES))

    @full_run_only
    def test_the_committed_predictions_are_judged_at_the_deep_runs_best_rate(self):
        rules = deep_rules()
        st = deep_study()
        (t,) = st.tests
        self.assertEqual((t.depth, t.rate, t.median), (3, 1e-3, 4700))
        self.assertEqual({f: bad for f, (_, bad) in t.forms.items()},
                         {"power": True, "exponential": False, "doubly exponential": True})
        text = ls.markdown(st, rules)
        self.assertIn("| f(x) | 3 | 0.001 | 5/5 · 4700 (4500-5000) | 2e+03 (1.5e+03-2.5e+03): contradicted | "
                      "5e+03 (4e+03-6e+03): holds | 4e+04 (3e+04-5e+04): contradicted |", text)

    def test_a_median_censored_at_n_contradicts_only_an_interval_that_ends_below_n(self):
        deep = [row("none-nores", 3, 1e-3, s, None, steps=12000) for s in range(30, 35)]
        (t,) = es.judge(rows_of(TWO), deep_rules(), deep_rows=rows_of(deep)).tests
        self.assertIsNone(t.median)
        self.assertEqual({f: bad for f, (_, bad) in t.forms.items()},
                         {"power": True, "exponential": True, "doubly exponential": False})

    def test_no_verdict_while_a_run_at_the_depth_is_still_short_of_the_others(self):
        # one seed repeated to 12000, the other four still the stage-0 runs censored at 3000
        deep = [row("none-nores", 3, 1e-3, 30, None, steps=12000)]
        st = es.judge(rows_of(TWO), deep_rules(), deep_rows=rows_of(deep))
        (t,) = st.tests
        self.assertEqual(t.pending, 4)
        self.assertEqual({bad for _, bad in t.forms.values()}, {None})
        self.assertIn("(4 runs not yet at the horizon)", ls.markdown(st, deep_rules()))


class Staged(unittest.TestCase):
    def test_a_run_awaiting_its_next_stage_is_read_censored_at_the_steps_it_reached(self):
        # the manifest of a stage-1 sweep (12000) over stage 0's runs: the L = 3 runs, on the plateau
        # to 3000, are pending (not yet extended), and the law still reads them as never within 3000
        with tempfile.TemporaryDirectory() as root:
            fabricate.write_sweep_dir(root, "escape_law", core_runs()[:9], max_iters=12000)
            rows = er.rows_of(os.path.join(root, "escape_law"), 0.1)
            self.assertEqual(len(rows), 9)
            self.assertEqual([(r["depth"], r["steps"], r["censored"]) for r in rows if r["depth"] == 3],
                             [(3, 3000, "yes")] * 3)
            st = es.from_root(root)
            self.assertEqual(st.wirings[0].cells[(3, 3e-4)], [(30, None, 3000), (31, None, 3000), (32, None, 3000)])


class Grid(unittest.TestCase):
    def test_a_cell_says_how_many_seeds_escaped_their_median_and_range(self):
        self.assertEqual(ls.cell_text([(30, 450, 450), (31, 500, 500), (32, None, 3000)]), "2/3 · 500 (450-500)")
        self.assertEqual(ls.cell_text([(30, None, 3000), (31, 700, 700), (32, None, 3000)]), "1/3 · > 3000 (700)")
        self.assertEqual(ls.cell_text([(30, None, 3000)] * 2), "0/2 · > 3000")

    def test_the_probe_ratios_stand_beside_each_depth_and_a_missing_one_says_so(self):
        st = study(TWO, probe={("none-nores", 1): (0.7, 1.0), ("none-nores", 2): (0.5, 6.7e-4)})
        text = ls.markdown(st, RULES)
        self.assertIn("| 1 | **5/5 · 200 (200)** | 0.7 | 1 |", text)
        self.assertIn("| 3 | 0/5 · > 3000 | not probed | not probed |", text)

    @full_run_only
    def test_the_rank_fit_needs_three_escaped_depths_with_a_ratio(self):
        wl = fitted().wirings[0]
        self.assertIsNotNone(wl.rank_fit)
        self.assertGreater(wl.rank_fit.theta[1], 0)  # a lower rank ratio, a later escape
        self.assertIn("linear", wl.rank_delta)
        self.assertIsNone(study(TWO, probe={("none-nores", 1): (0.7, 1.0)}).wirings[0].rank_fit)

    @full_run_only
    def test_the_scaled_arm_stands_beside_the_normal_runs_at_its_points(self):
        st = fitted()
        self.assertEqual([(w, d, lr) for w, d, lr, _, _ in st.scaled], [("pre-layernorm-nores", 2, 3e-4)])
        self.assertIn("| f(layernorm(x)) | 2 | 0.0003 | 5/5 · 500 (400-600) | 5/5 · 900 (900) |",
                      ls.markdown(st, RULES))


class JudgesOnly(unittest.TestCase):
    """studies/escape/ judges and returns data; the text and the figure are report/law_study.py's."""

    def test_no_module_of_studies_escape_draws_or_writes_text_but_through_its_command(self):
        folder = os.path.dirname(es.__file__)
        for path in sorted(glob.glob(os.path.join(folder, "*.py"))):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
            self.assertFalse(defs & {"markdown", "figure", "read_line", "grid_table", "cell_text"}, path)
            for fn in tree.body:
                if not isinstance(fn, ast.FunctionDef) or fn.name in ("main", "__getattr__"):
                    continue
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom):
                        self.assertFalse(node.module.startswith(("stacklab.plots", "stacklab.report", "matplotlib")),
                                         f"{path}: {fn.name} imports {node.module}")
            for node in tree.body:
                if isinstance(node, ast.ImportFrom):
                    self.assertFalse(node.module.startswith(("stacklab.plots", "stacklab.report")), path)

    def test_the_texts_old_names_still_answer_from_the_study_module(self):
        for name in es.RENDERED:
            self.assertIs(getattr(es, name), getattr(ls, name))
        with self.assertRaises(AttributeError):
            getattr(es, "no_such_name")

    @full_run_only
    def test_the_text_reads_the_rules_the_study_was_judged_by(self):
        st = fitted()
        self.assertEqual(st.rules, RULES)
        self.assertEqual(ls.markdown(st), ls.markdown(st, RULES))


class ReadScope(unittest.TestCase):
    """Issue 57, section 4: the best-rate read says what its prediction rests on and how far it moves."""

    def test_the_robustness_refits_the_winning_form_without_each_depth_and_on_each_three_escaped_depths(self):
        wl = fitted().wirings[0]
        r, b = wl.robust, wl.best
        self.assertEqual(r.form, b.best or min(b.fits, key=lambda f: b.fits[f].aic))
        self.assertEqual(r.at, 96)
        self.assertEqual(sorted(r.without), sorted({o.depth for o in b.obs}))
        self.assertEqual(len(r.subsets), math.comb(len(b.escaped_depths), 3))
        d = sorted(r.without)[0]
        self.assertEqual(r.without[d], law.fit_form([o for o in b.obs if o.depth != d], r.form).median_at(96))
        js = es.study_json(fitted())["wirings"][0]["robustness"]
        self.assertEqual((js["fitted"], js["at"], len(js["without"])), (r.form, 96, len(r.without)))

    def test_the_fitted_read_names_its_premise_and_its_range_and_a_no_fit_its_scope(self):
        text = ls.markdown(fitted(), RULES)
        self.assertIn("(premise: the envelope of the best rates on a grid of half-decade rates", text)
        self.assertIn("not the step it learns the task; how far its", text)
        self.assertIn("refitted without one depth: ", text)
        self.assertIn("on 3 escaped depths alone: ", text)
        st = study(TWO)
        self.assertIsNone(st.wirings[0].robust)
        self.assertIn("(scope: ", ls.markdown(st, RULES))
        self.assertIn("set after stage 0's runs", ls.markdown(st, RULES))


class Command(unittest.TestCase):
    def test_it_reads_the_tables_prints_the_study_and_writes_the_figure_and_json(self):
        with tempfile.TemporaryDirectory() as d:
            write(os.path.join(d, es.TABLE), TWO)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = es.main(["--results", d, "--figure", os.path.join(d, "law.png"), "--predict-at", "8",
                              "--json", os.path.join(d, "law.json")])
            # the sweep files name 525 + 20 runs, this table holds 16: printed, every read pending, exit 3
            self.assertEqual(rc, 3)
            self.assertIn("**`f(x)`**", out.getvalue())
            self.assertGreater(os.path.getsize(os.path.join(d, "law.png")), 10000)
            with open(os.path.join(d, "law.json"), encoding="utf-8") as f:
                js = json.load(f)
            self.assertEqual([w["wiring"] for w in js["wirings"]],
                             ["pre-layernorm-nores", "post-layernorm-nores", "none-nores"])
            self.assertEqual((js["wirings"][2]["best"]["verdict"], js["wirings"][2]["best"]["read_so_far"]),
                             ("pending", "no fit"))
            self.assertEqual(js["excluded"][0]["run"], "L2-none-nores-lr0.001-s35")
            self.assertFalse(js["complete"])

    def test_a_study_with_every_run_its_sweeps_name_exits_0(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(es, "named_runs", lambda sweeps: {}):
            # the sweeps name these runs only: L = 1, 2 escape, L = 3, 4 ran 3000 steps of their cap (the second
            # knob is open, not due), no fit (no read against the rank ratio is due either)
            rows = [row("none-nores", depth, 1e-3, s, 200 * depth if depth < 3 else None)
                    for depth in (1, 2, 3, 4) for s in range(30, 35)]
            write(os.path.join(d, es.TABLE), rows)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(es.main(["--results", d]), 0)

    def test_a_missing_table_or_a_broken_row_is_named_with_exit_code_2(self):
        with tempfile.TemporaryDirectory() as d:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(es.main(["--results", d]), 2)
            self.assertIn("escape_law.csv: no results table", err.getvalue())
            bad = dict(row("none-nores", 1, 1e-3, 30, 200), depth="one")
            write(os.path.join(d, es.TABLE), [bad])
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(es.main(["--results", d]), 2)
            self.assertIn("escape_law.csv:2: not a results-table row", err.getvalue())


def report_md(root, sweeps) -> str:
    """report.md's text of the report written on root (its verdict lines kept off the test's output)."""
    with contextlib.redirect_stdout(io.StringIO()):
        md_path, _, _ = report.write_report(root, sweeps)
    with open(md_path, encoding="utf-8") as f:
        return f.read()


class InTheReport(unittest.TestCase):
    @full_run_only
    def test_a_folder_with_the_law_shows_its_section_figure_and_table_and_one_without_shows_none(self):
        with tempfile.TemporaryDirectory() as root:
            sweeps = write_study(root)
            self.assertNotIn("The escape law (opt-in study)", report_md(root, sweeps))
            # f(layernorm(x)) at 3e-4, L = 1-3, 3 seeds: two depths escape (no fit: fast)
            fabricate.write_sweep_dir(root, "escape_law", core_runs()[:9])
            sweeps["escape_law"] = report.Sweep(root, "escape_law")
            md = report_md(root, sweeps)
            self.assertIn("## The escape law (opt-in study)", md)
            self.assertIn("figures/escape_law/escape_law.png", md)
            self.assertTrue(os.path.isfile(os.path.join(root, "figures", "escape_law", "escape_law.png")))
            # its three seeds of the five the sweep file names, every other point of it not run: pending
            self.assertIn("| 3 | not run (0 of 5 seeds: pending) | not run (0 of 5 seeds: pending) | not run (0 of 5 "
                          "seeds: pending) | 0/3 · > 3000 (3 of 5 seeds: pending) | not run (0 of 5 seeds: pending) | "
                          "not probed | not probed |", md)
            self.assertNotIn("## Extras", md)
            with open(os.path.join(root, "results", "escape_law.csv"), encoding="utf-8") as f:
                self.assertEqual(len(list(csv.DictReader(f))), 9)

    def test_a_probe_sweep_not_yet_run_writes_no_table_and_breaks_nothing(self):
        for name in es.PROBE_SWEEPS:  # the second knob's attention-only probe is a probe sweep too
            with self.subTest(sweep=name), tempfile.TemporaryDirectory() as root:
                sweeps = write_study(root)
                d = os.path.join(root, name)
                os.makedirs(d)
                with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
                    entry = {"id": "L1-none-nores", "dir": "L1-none-nores", "status": "new"}
                    json.dump({"name": name, "mode": "probe", "runs": [entry]}, f)
                err = io.StringIO()
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                    self.assertEqual(report.write_results(root, list(sweeps) + [name]), [])
                self.assertIn("no probe.json yet", err.getvalue())


if __name__ == "__main__":
    unittest.main()
