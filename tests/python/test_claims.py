"""The claims of configs/experiments/claims.json judged by scripts/stacklab/studies/claims.py:
outcome() on a trained, diverged, plateau and interrupted run; runs matched to a claim's configs by
their values; the verdicts read from an output directory and compared over several; the claims
sweeps hold exactly the configs the claims name; the defaults claims.py assumes are the binary's.
Each claim's rule on fabricated run sets: test_claim_rules.py (round 1) and test_claims_round2.py.
Unigram loss 3.412 (fabricate.REFS), margin 0.05."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import fabricate
from stacklab.studies import claims as cl
from stacklab.runs import tier_lists as tier
from stacklab.runs import checkpoint_config, runlog

DOC = cl.load_claims()
DOC2 = cl.load_claims(cl.ROUND2_PATH)
CLAIM = {c["id"]: c for c in DOC["claims"] + DOC2["claims"]}
ROUND2_IDS = ["C1r2", "C2r2", "C3r2", "C4r2", "C7r2"]
SEEDS = (0, 1, 2)


class Outcome(unittest.TestCase):
    # unigram 3.412, margin 0.05: trained below 3.362, plateau at or above it
    def test_trained_plateau_diverged_and_incomplete(self):
        self.assertEqual(cl.margin(DOC["definitions"]), 0.05)
        self.assertEqual(cl.outcome(fabricate.claim_run({}, 0, 3.30)), "trained")
        self.assertEqual(cl.outcome(fabricate.claim_run({}, 0, 3.40)), "plateau")
        self.assertEqual(cl.outcome(fabricate.claim_run({}, 0, 3.46, "diverged", diverged_step=12)), "diverged")
        self.assertEqual(cl.outcome(fabricate.claim_run({}, 0, 3.30, "interrupted")), "incomplete")

    def test_a_loss_exactly_the_margin_below_unigram_is_a_plateau(self):
        edge = fabricate.REFS["unigram"] - 0.05
        self.assertEqual(cl.outcome(fabricate.claim_run({}, 0, edge)), "plateau")
        self.assertEqual(cl.outcome(fabricate.claim_run({}, 0, edge - 1e-9)), "trained")

    def test_the_margin_must_be_a_positive_number(self):
        self.assertEqual(cl.margin({"margin": 0.2}), 0.2)
        for bad in ({}, {"margin": "0.05"}, {"margin": 0}, {"margin": True}):
            with self.assertRaises(ValueError):
                cl.margin(bad)

    def test_each_rounds_texts_state_its_margin(self):
        # the second copy of the number: the definitions' prose, which the report and readers quote
        for _, doc in cl.rounds():
            d = doc["definitions"]
            self.assertIn(f"more than {d['margin']:g} nats below the unigram loss", d["trained"])
            self.assertIn(f"at or above unigram - {d['margin']:g}", d["plateau"])


class RunMatching(unittest.TestCase):
    POINT = {"model.n_layer": 32, "model.init": "xavier", "model.norm_position": "post", "model.residual": True}

    def test_a_unit_scale_run_never_stands_in_for_a_point_that_does_not_name_the_embedding_scale(self):
        rs = cl.RunSet([], "quick", DOC)
        unit = fabricate.claim_probe({**self.POINT, "model.emb_scale": "unit"}, {0: {"grad_norm": [1.0]}})
        self.assertFalse(rs.matches(unit, self.POINT, True))
        self.assertTrue(rs.matches(unit, {**self.POINT, "model.emb_scale": "unit"}, True))

    def test_a_shaped_attention_run_never_stands_in_for_a_point_of_softmax_attention(self):
        rs = cl.RunSet([], "quick", DOC)
        shaped = fabricate.claim_probe({**self.POINT, "model.attention_kind": "shaped"}, {0: {"grad_norm": [1.0]}})
        self.assertFalse(rs.matches(shaped, self.POINT, True))
        self.assertTrue(rs.matches(shaped, {**self.POINT, "model.attention_kind": "shaped"}, True))
        old = fabricate.claim_probe(self.POINT, {0: {"grad_norm": [1.0]}})
        old.config["model"].pop("attention_kind", None)  # made before the key: softmax attention
        self.assertTrue(rs.matches(old, self.POINT, True))

    def test_a_run_made_before_the_embedding_scale_existed_holds_its_default(self):
        # Its config has no model.emb_scale: it drew its embeddings N(0, init_std), "init_std".
        rs = cl.RunSet([], "quick", DOC)
        old = fabricate.claim_probe(self.POINT, {0: {"grad_norm": [1.0]}})
        del old.config["model"]["emb_scale"]
        self.assertTrue(rs.matches(old, self.POINT, True))
        self.assertTrue(rs.matches(old, {**self.POINT, "model.emb_scale": "init_std"}, True))
        self.assertFalse(rs.matches(old, {**self.POINT, "model.emb_scale": "unit"}, True))


class FromAnOutputDirectory(unittest.TestCase):
    def test_probe_files_and_run_dirs_are_read_and_missing_claims_say_not_run(self):
        with tempfile.TemporaryDirectory() as out:
            p = dict(cl.points(CLAIM["C3"], "quick")[0][1])
            d = os.path.join(out, "claims_probe", "L32-post")
            os.makedirs(d)
            with open(os.path.join(d, "probe.json"), "w") as fh:
                json.dump({"config": fabricate.claim_config(p), "mean": {"grad_norm": [0.1] + [1.0] * 31},
                           "seeds": [{"seed": s, "loss": 3.5, "layers": {"grad_norm": [0.1] + [1.0] * 31}}
                                     for s in SEEDS]}, fh)
            with open(os.path.join(out, "claims_probe", "manifest.json"), "w") as fh:  # its runs: the manifest's
                json.dump({"name": "claims_probe", "mode": "probe",
                           "runs": [{"id": "L32-post", "dir": "L32-post"}]}, fh)
            rs = cl.load_runset(out, "quick", DOC)
            self.assertEqual(sorted(rs.probe(p)), [0, 1, 2])
            verdicts = cl.evaluate_all(out)
            self.assertEqual([v.id for v in verdicts], [f"C{i}" for i in range(1, 8)] + ROUND2_IDS)
            self.assertEqual([v.round for v in verdicts], [1] * 7 + [2] * 5)
            self.assertEqual({v.verdict for v in verdicts}, {"not run"})
            self.assertNotIn("post-xavier", next(v for v in verdicts if v.id == "C3").value)  # that one is there
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(cl.main([out, "--json", os.path.join(out, "v.json")]), 0)
            self.assertIn("| C6 | 1 | Bachlechner et al. 2020, arXiv 2003.04887 | **not run** | "
                          "runs missing (1 config): rezero n_layer=96", printed.getvalue())
            self.assertIn("| C2 | 1 | Xiong et al. 2020, arXiv 2002.04745, Lemma 1", printed.getvalue())
            self.assertIn("| C4r2 | 2 | Xiong et al. 2020", printed.getvalue())
            with open(os.path.join(out, "v.json")) as fh:
                self.assertEqual(len(json.load(fh)["claims"]), 12)


class OverSeveralRuns(unittest.TestCase):
    def test_a_verdict_shared_by_every_run_stands_and_one_that_differs_is_mixed(self):
        self.assertEqual(cl.over_runs(["seen", "seen"]), "seen")
        self.assertEqual(cl.over_runs(["not seen", "not seen", "not seen"]), "not seen")
        self.assertEqual(cl.over_runs(["not seen", "seen"]), "mixed")
        self.assertEqual(cl.over_runs(["seen", "not run"]), "not run")

    def test_compare_prints_each_dirs_verdict_and_the_verdict_over_them(self):
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(cl.main([a, "--compare", b, "--json", os.path.join(a, "v.json")]), 0)
            lines = printed.getvalue().splitlines()
            self.assertEqual(lines[0], f"| claim | `{a}` | `{b}` | over the runs |")
            self.assertEqual(len(lines), 2 + 12)
            self.assertTrue(all(line.endswith("| **not run** |") for line in lines[2:]), lines)
            with open(os.path.join(a, "v.json")) as fh:
                doc = json.load(fh)
            self.assertEqual(doc["dirs"], [a, b])
            self.assertEqual([c["over_runs"] for c in doc["claims"]], ["not run"] * 12)
            self.assertEqual(len(doc["claims"][0]["verdicts"]), 2)

    def test_compare_says_mixed_where_the_dirs_verdicts_differ(self):
        def verdict(cid, seen):
            return cl.ClaimVerdict(id=cid, claim="", source="", rule="", value=f"{cid} value",
                                   verdict="seen" if seen else "not seen", details="")
        table = cl.compare_table(["a", "b"], [[verdict("C6", True), verdict("C7", False)],
                                              [verdict("C6", True), verdict("C7", True)]])
        rows = table.splitlines()[2:]
        self.assertEqual(rows[0], "| C6 | seen: C6 value | seen: C6 value | **seen** |")
        self.assertEqual(rows[1], "| C7 | not seen: C7 value | seen: C7 value | **mixed** |")

    def test_a_missing_dir_to_compare_is_named(self):
        with tempfile.TemporaryDirectory() as a:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(cl.main([a, "--compare", os.path.join(a, "nope")]), 1)
            self.assertIn("nope: no such directory", err.getvalue())


def sweep_points(path):
    """A sweep file's points as full configs (overrides, grid x variants), seeds aside."""
    s = tier.read_json(path)
    combos = [dict(s.get("overrides") or {})]
    for k, vs in (s.get("grid") or {}).items():
        combos = [dict(c, **{k: v}) for c in combos for v in vs]
    vs = [{k: v for k, v in var.items() if k != "name"} for var in s.get("variants") or [{}]]
    return [dict(c, **v) for c in combos for v in vs], s


class TheClaimsSweepsHoldTheClaimsConfigs(unittest.TestCase):
    """Each claims sweep runs at one round's seeds; per round, every config its claims name is one
    point of its sweeps, at the claim's horizon; no sweep point is left over (the map aside)."""

    def check(self, tier_name, folder):
        sweeps = {name: sweep_points(os.path.join(folder, name + ".json")) for name in tier.CLAIMS_SWEEPS}
        used = set()
        for rnd, doc in cl.rounds():
            rs = cl.RunSet([], tier_name, doc)
            mine = [n for n, (_, s) in sweeps.items() if s["seeds"] == doc["definitions"]["seeds"][tier_name]]
            self.assertTrue(mine, f"round {rnd}: no sweep at its seeds")
            made = [(n, sweeps[n][1].get("mode", "train"), fabricate.claim_config(p)) for n in mine
                    for p in sweeps[n][0]]
            horizons = {rs.horizon_of(c) for c in doc["claims"] if c["configs"]["mode"] == "train"}
            for n in mine:
                o = sweeps[n][1].get("overrides") or {}
                if sweeps[n][1].get("mode", "train") == "train":
                    self.assertIn(o["train.max_iters"], horizons, n)
                    self.assertFalse(o["train.save_best"], n)
            for c in doc["claims"]:
                for vname, p in cl.points(c, tier_name):
                    probe = c["configs"]["mode"] == "probe"
                    hits = [i for i, (_, mode, cfg) in enumerate(made)
                            if (mode == "probe") == probe and rs.matches(runlog.Run(path="x", config=cfg), p, probe)
                            and (probe or cfg["train"]["max_iters"] == rs.horizon_of(c))]
                    self.assertEqual(len(hits), 1, f"{tier_name}: {c['id']} {vname} {p}: in {len(hits)} sweep points")
                    used.update((rnd, i) for i in hits)
            extra = [(n, cfg["model"]) for i, (n, _, cfg) in enumerate(made)
                     if (rnd, i) not in used and n != "stability_map"]
            self.assertEqual(extra, [], f"round {rnd}: sweep points no claim names (the stability map aside)")
        for n, (_, s) in sweeps.items():
            self.assertIn(s["seeds"], [d["definitions"]["seeds"][tier_name] for _, d in cl.rounds()], n)

    def test_quick_tier(self):
        self.check("quick", tier.QUICK_DIR)

    def test_full_tier(self):
        self.check("full", tier.FULL_DIR)


class Defaults(unittest.TestCase):
    def test_the_defaults_claims_py_assumes_are_config_defaults_jsons(self):
        # config_defaults.json is pinned to the binary (test_checkpoint_config); each key must be in it
        d = checkpoint_config.defaults()
        self.assertEqual(set(cl.DEFAULTS), set(cl.DEFAULT_KEYS))
        for key in cl.DEFAULT_KEYS:
            self.assertIsNotNone(tier.get_key(d, key), key)
            self.assertEqual(cl.DEFAULTS[key], tier.get_key(d, key), key)
        self.assertEqual(cl.DEFAULTS["model.emb_scale"], "init_std")
        self.assertEqual(cl.DEFAULTS["model.attention_kind"], "softmax")


if __name__ == "__main__":
    unittest.main()
