"""stacklab.runs.checkpoint_config, the Python copy of the binary's checkpoint config check, on the cases
tests/train/checkpoint_test.cpp runs the binary's through (tests/fixtures/checkpoint_config_cases.json):
the same differing keys, in the same order, and the same list of keys a reader lets differ. Its
defaults (config_defaults.json) are the binary's: the GoogleTest pins them, and so does this test when
a binary is built.
"""
import copy
import json
import os
import subprocess
import unittest

from stacklab.runs import checkpoint_config as cc
from stacklab import paths

CASES_PATH = os.path.join(paths.ROOT, "tests", "fixtures", "checkpoint_config_cases.json")
BIN = os.environ.get("STACKLAB_BIN") or os.path.join(paths.ROOT, "build", "stacklab")


def set_dotted(j: dict, dotted: str, value) -> None:
    *path, leaf = dotted.split(".")
    for k in path:
        j = j.setdefault(k, {})
    j[leaf] = value


def erase_dotted(j: dict, dotted: str) -> None:
    *path, leaf = dotted.split(".")
    for k in path:
        j = j[k]
    del j[leaf]


def case_config(keys: dict) -> dict:
    """stacklab's defaults (train.name 'run') with a case's dotted keys set (as the GoogleTest)."""
    j = cc.defaults()
    j["train"]["name"] = "run"
    for k, v in keys.items():
        set_dotted(j, k, copy.deepcopy(v))
    return j


class SharedCases(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(CASES_PATH, encoding="utf-8") as f:
            cls.doc = json.load(f)

    def test_a_reader_lets_the_fixtures_keys_differ(self):
        self.assertEqual(list(cc.READER_MAY_DIFFER), self.doc["reader_may_differ"])

    def test_differences_are_the_fixtures(self):
        self.assertGreaterEqual(len(self.doc["cases"]), 10)
        for c in self.doc["cases"]:
            with self.subTest(c["name"]):
                written = case_config(c.get("written", {}))
                for k in c.get("written_lacks", []):
                    erase_dotted(written, k)
                may = cc.READER_MAY_DIFFER if c["may_differ"] == "reader" else c["may_differ"]
                self.assertEqual(cc.checkpoint_differences(written, case_config(c["expected"]), may),
                                 c["differences"])

    def test_the_message_names_each_key_with_both_values(self):
        written, expected = case_config({"data.path": "b.txt"}), case_config({"data.path": "a.txt"})
        self.assertEqual(cc.mismatch("B/latest.safetensors", written, expected, "A/config.json"),
                         "B/latest.safetensors: written with a different config: 'data.path' is \"b.txt\" in the "
                         "checkpoint but \"a.txt\" in A/config.json")
        self.assertIsNone(cc.mismatch("p", expected, expected, "A/config.json"))

    def test_a_run_config_lacking_a_key_or_a_section_reads_as_the_defaults(self):
        d = cc.defaults()
        cfg = {"model": {"n_layer": 3}, "derived": {"wiring": "x"}}
        full = cc.with_defaults(cfg)
        self.assertNotIn("derived", full)
        self.assertEqual(full["model"]["n_layer"], 3)
        self.assertEqual(full["model"]["qk_norm"], d["model"]["qk_norm"])
        self.assertEqual(full["log"], d["log"])
        self.assertEqual(cfg, {"model": {"n_layer": 3}, "derived": {"wiring": "x"}})  # not modified


class Defaults(unittest.TestCase):
    @unittest.skipUnless(os.access(BIN, os.X_OK), f"no stacklab binary at {BIN} (build it first)")
    def test_the_copy_is_stacklab_validate_defaults(self):
        out = subprocess.run([BIN, "validate", "--defaults"], check=True, capture_output=True, text=True).stdout
        self.assertEqual(cc.config_differences(cc.defaults(), json.loads(out)), [],
                         "regenerate: build/stacklab validate --defaults > scripts/stacklab/config_defaults.json")


if __name__ == "__main__":
    unittest.main()
