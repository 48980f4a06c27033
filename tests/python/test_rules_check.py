"""rules_check (issue 60, defect 1): what a study's rules fix, read from the sweep files they judge and
their own fields, and a run's config held against it: the keys that differ, with the run's and the
rules' values; nothing for a run of the rules, nor for the keys a run may set as it likes."""
import json
import os
import tempfile
import unittest

import fabricate
from stacklab.runs import tier_lists as tier
from stacklab.studies import convergence, rules_check, signal as signal_study


def values(fixed, key):
    return rules_check.allowed(fixed, key)


class Settings(unittest.TestCase):
    def test_a_sweep_file_fixes_its_base_overrides_grid_variants_and_seeds(self):
        f = rules_check.settings("signal_shaped")
        self.assertEqual(len(f), 3)                                    # one alternative per variant
        self.assertEqual(values(f, "model.n_embd"), [64])              # configs/base.json
        self.assertEqual(values(f, "train.max_iters"), [5500])         # the overrides
        self.assertEqual(f[0]["model.n_layer"], [8, 32])               # the grid
        self.assertEqual([a["model.attention_kind"] for a in f], [["softmax"], ["shaped"], ["shaped_no_identity"]])
        self.assertEqual(values(f, "train.seed"), [40, 41, 42])        # its seeds, not base.json's 1337
        self.assertEqual(values(f, "model.dropout"), [0.0])            # stacklab's default

    def test_a_key_one_variant_sets_holds_its_default_in_the_others(self):
        attn_only, mlp_only = rules_check.settings("signal_sublayer")
        self.assertEqual((attn_only["model.mlp"], attn_only["model.attention"]), ([False], [True]))
        self.assertEqual((mlp_only["model.mlp"], mlp_only["model.attention"]), ([True], [False]))

    def test_a_sweep_of_several_stages_allows_each_stages_horizon(self):
        self.assertEqual(values(rules_check.settings("escape_law"), "train.max_iters"), [3000, 12000, 48000])

    def test_a_tiny_study_is_held_to_the_files_as_tiny_scales_them(self):
        f = rules_check.settings("signal_shaped", tiny=True)
        self.assertEqual(values(f, "train.max_iters"), [tier.TINY["train.max_iters"]])
        self.assertEqual(values(f, "model.n_embd"), [16])
        self.assertEqual(values(f, "train.seed"), [40, 41])

    def test_the_full_tier_reads_its_own_file_where_it_widens_a_sweep(self):
        quick, full = rules_check.settings("text_train"), rules_check.settings("text_train", "full")
        self.assertNotEqual(values(quick, "train.max_iters"), values(full, "train.max_iters"))

    def test_a_name_without_a_sweep_file_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "no sweep file named 'no_such_sweep'"):
            rules_check.settings("no_such_sweep")

    def test_the_rules_own_fields_narrow_what_the_files_allow(self):
        f = rules_check.narrow([{"train.seed": [0, 1, 2], "model.n_layer": [2]}], {"train.seed": [1, 5], "x.y": [3]})
        self.assertEqual(f, [{"train.seed": [1], "model.n_layer": [2], "x.y": [3]}])

    def test_every_judges_rules_agree_with_the_sweep_files_they_judge(self):
        # a key the rules fix that their files do not allow would refuse every run: the rules and files disagree
        fixed = (list(signal_study.fixed_settings(signal_study.load_rules()))
                 + list(convergence.fixed_settings(convergence.load_rules()).values()))
        for alternatives in fixed:
            for alt in alternatives:
                self.assertEqual([k for k, v in alt.items() if not v], [])


class Differences(unittest.TestCase):
    FIXED = rules_check.settings(["signal_shaped", "signal_sublayer"])

    def test_the_issues_settings_are_named_with_the_runs_and_the_rules_values(self):
        cfg = {"model": {"n_embd": 16, "n_layer": 8}, "optim": {"learning_rate": 0.01},
               "train": {"max_iters": 20, "seed": 40}}
        d = rules_check.differences(cfg, self.FIXED)
        self.assertEqual([x.key for x in d], ["model.n_embd", "optim.learning_rate", "train.max_iters"])
        self.assertEqual(rules_check.describe(d), "model.n_embd 16 (the rules: 64); optim.learning_rate 0.01 "
                                                  "(the rules: 0.0003); train.max_iters 20 (the rules: 5500)")
        self.assertEqual(d[0].to_json(), {"key": "model.n_embd", "value": 16, "rules": [64]})

    def test_a_run_of_the_rules_differs_in_nothing_it_may_set_as_it_likes(self):
        cfg = {"model": {"n_layer": 32, "attention_kind": "shaped"}, "optim": {"learning_rate": 3e-4},
               "train": {"seed": 42, "max_iters": 5500, "threads": 1, "out_dir": "/x", "name": "y",
                         "ckpt_interval": 7, "save_best": True}, "log": {"layer_interval": 1}}
        self.assertEqual(rules_check.differences(cfg, self.FIXED), [])

    def test_a_value_outside_a_grid_names_every_value_the_rules_allow(self):
        d = rules_check.differences({"model": {"n_layer": 4, "attention_kind": "shaped"}}, self.FIXED)
        self.assertEqual(rules_check.describe(d), "model.n_layer 4 (the rules: one of 8, 32)")

    def test_a_combination_no_variant_has_is_named_against_the_closest(self):
        # an attention-only stack of shaped attention: each value is allowed somewhere, the pair nowhere
        d = rules_check.differences({"model": {"mlp": False, "attention_kind": "shaped", "n_layer": 8}}, self.FIXED)
        self.assertEqual(len(d), 1)
        self.assertIn(d[0].key, ("model.mlp", "model.attention_kind"))

    def test_a_bool_is_not_a_number(self):
        self.assertEqual([x.key for x in rules_check.differences({"model": {"residual": 0}}, self.FIXED)],
                         ["model.residual"])

    def test_a_probe_is_held_to_its_model_and_data(self):
        self.assertEqual(rules_check.differences({"train": {"max_iters": 1}, "optim": {"learning_rate": 1}},
                                                 self.FIXED, probe=True), [])
        self.assertEqual([x.key for x in rules_check.differences({"model": {"n_head": 2}}, self.FIXED, probe=True)],
                         ["model.n_head"])

    def test_a_text_file_is_compared_by_its_name_not_where_the_study_kept_it(self):
        fixed = rules_check.settings("text_point")
        same = {"data": {"path": "/elsewhere/data/shakespeare_char/input.txt"}}
        other = {"data": {"path": "/elsewhere/data/other/input.txt"}}
        self.assertEqual(rules_check.differences(same, fixed), [])
        self.assertEqual([x.key for x in rules_check.differences(other, fixed)], ["data.path"])


class EscapeStudyFromRunFolders(unittest.TestCase):
    """escape_study.from_root (the report's way into the opt-in law) reads only the runs and probes of the
    rules: one off them is left out of every read and named with its keys."""

    def test_a_run_off_the_rules_is_not_read_and_is_named(self):
        from test_escape_core import core_runs
        from stacklab.studies.escape import study as escape_study
        runs = core_runs()[:9]  # f(layernorm(x)) at 3e-4, L = 1-3, seeds 30-32
        runs[3][1].config["model"]["n_embd"] = 16          # L = 2, seed 30
        runs[4][1].config["optim"]["learning_rate"] = 0.01  # L = 2, seed 31: outside the rules' rates
        with tempfile.TemporaryDirectory() as root:
            fabricate.write_sweep_dir(root, "escape_law", runs)
            st = escape_study.from_root(root)
        self.assertEqual([(s, r, [d.key for d in ds]) for s, r, ds in st.refused],
                         [("escape_law", runs[3][0], ["model.n_embd"]),
                          ("escape_law", runs[4][0], ["optim.learning_rate"])])
        self.assertEqual(st.wirings[0].cells[(2, 3e-4)], [(32, 450, 450)])
        self.assertEqual(escape_study.study_json(st)["refused"][0]["differs"],
                         [{"key": "model.n_embd", "value": 16, "rules": [64]}])


class Tiny(unittest.TestCase):
    def test_a_study_folder_says_whether_it_was_made_with_tiny(self):
        with tempfile.TemporaryDirectory() as root:
            self.assertFalse(rules_check.is_tiny(root))
            with open(os.path.join(root, "timing.jsonl"), "w", encoding="utf-8") as f:
                f.write(json.dumps({"stage": "start", "tiny": True}) + "\nnot json\n")
            self.assertTrue(rules_check.is_tiny(root))


if __name__ == "__main__":
    unittest.main()
