"""configs/experiments/claims.json: the published claims the study tests, fixed before their runs.
Each claim names its source (title, year, an arXiv id), its metric, its configs and a rule with
thresholds; every config it names is one stacklab accepts (`stacklab validate`, needs a built
stacklab: $STACKLAB_BIN, else build/stacklab; without one that test is skipped, loudly), and its
metrics are declared layer metrics (`stacklab registry --records --json`)."""
import itertools
import json
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("STACKLAB_BIN") or os.path.join(ROOT, "build", "stacklab")
CLAIMS = os.path.join(ROOT, "configs", "experiments", "claims.json")
ROUND2 = os.path.join(ROOT, "configs", "experiments", "claims_round2.json")  # round 2 (test_claims_round2.py)
LIST_KEYS = ("model.n_layer", "model.init", "optim.learning_rate")  # grid axes of a claim's configs


def load(path=CLAIMS):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def overrides(claim):
    """Every (key, value) combination a claim's configs train or probe: its grid axes crossed with
    each variant (variants may set an axis themselves, e.g. model.init)."""
    cfg = claim["configs"]
    axes = [[(k, v) for v in cfg[k]] for k in LIST_KEYS if k in cfg]
    for name, variant in cfg["variants"].items():
        for combo in itertools.product(*axes):
            o = dict(combo)
            o.update(variant)
            yield name, o


class ClaimsFile(unittest.TestCase):
    def setUp(self):
        self.doc = load()

    def test_every_claim_names_its_source_metric_configs_and_a_rule(self):
        ids = [c["id"] for c in self.doc["claims"]]
        self.assertEqual(ids, [f"C{i}" for i in range(1, len(ids) + 1)], "ids C1, C2, ... in order")
        self.assertGreaterEqual(len(ids), 7)
        for c in self.doc["claims"]:
            with self.subTest(claim=c["id"]):
                src = c["source"]
                self.assertTrue(src["title"] and src["authors"])
                self.assertRegex(str(src["arxiv"]), r"^\d{4}\.\d{5}$")
                self.assertTrue(2015 <= src["year"] <= 2026)
                self.assertTrue(c["claim"].strip() and c["metric"].strip())
                self.assertIn(c["configs"]["mode"], ("train", "probe"))
                self.assertTrue(c["configs"]["variants"])
                rule = c["rule"]
                self.assertIn("seen if", rule["text"])
                self.assertGreater(len(rule), 1, "a rule states its thresholds as values, not only in text")

    def test_the_file_says_when_it_was_fixed(self):
        self.assertRegex(self.doc["fixed_on"], r"^\d{4}-\d{2}-\d{2}$")
        self.assertEqual(set(self.doc["definitions"]["seeds"]), {"quick", "full"})

    def test_the_metrics_named_are_declared_layer_metrics(self):
        named = set(re.findall(r"\b(grad_norm|act_rms|rank_ratio|attn_logit_max|stream_cos|attn_entropy)\b",
                               json.dumps(self.doc)))
        self.assertTrue(named)
        if not os.access(BIN, os.X_OK):
            self.skipTest(f"no stacklab binary at {BIN} (build it first)")
        out = subprocess.run([BIN, "registry", "--markdown"], check=True, capture_output=True, text=True).stdout
        for m in named:
            self.assertIn(f"| `{m}` |", out, f"{m} is not a layer metric of stacklab registry")

    @unittest.skipUnless(os.access(BIN, os.X_OK), f"no stacklab binary at {BIN} (build it first)")
    def test_every_config_a_claim_of_either_round_names_is_valid(self):
        for c in self.doc["claims"] + load(ROUND2)["claims"]:
            for name, o in overrides(c):
                flags = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in o.items()]
                norm = [] if "model.norm" in o else ["--model.norm=layernorm"]  # the claims' common norm
                p = subprocess.run([BIN, "validate", os.path.join(ROOT, "configs", "base.json"), "--quiet"]
                                   + norm + flags, capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, f"{c['id']} {name}: {' '.join(flags)}: {p.stderr.strip()}")


if __name__ == "__main__":
    unittest.main()
