"""The record schema is declared once, in C++ (src/train/records.cpp), and printed by
`stacklab registry --records --json`: the run-log reader knows the same record kinds, and every
key it reads from metrics.jsonl and summary.json is a declared one. Needs a built stacklab
($STACKLAB_BIN, else build/stacklab); without one the tests are skipped, loudly."""
import json
import os
import subprocess
import unittest

from stacklab.runs import runlog

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("STACKLAB_BIN") or os.path.join(ROOT, "build", "stacklab")

# What runlog.Run reads, per record kind (its accessors: n_layer, wiring, formula, final loss,
# divergence, layer metrics).
READS = {
    "start": ["n_layer", "wiring", "formula", "reference_losses", "layer_metrics"],
    "eval": ["step", "val_loss"],
    "layers": ["step", "grad_norm"],  # grad_norm: from the layer-metric registry
    "diverged": ["step"],
}
SUMMARY_READS = ["status", "divergence", "final_val_loss", "reference_losses"]


def schema():
    out = subprocess.run([BIN, "registry", "--records", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


@unittest.skipUnless(os.access(BIN, os.X_OK), f"no stacklab binary at {BIN} (build it first)")
class RecordSchema(unittest.TestCase):
    def setUp(self):
        self.schema = schema()

    def keys_of(self, kind):
        for entry in self.schema["metrics.jsonl"]:
            if kind in entry["kinds"]:
                return {f["key"] for f in entry["fields"]}
        self.fail(f"the schema declares no record kind {kind!r}")

    def test_runlog_knows_exactly_the_declared_record_kinds(self):
        declared = {k for entry in self.schema["metrics.jsonl"] for k in entry["kinds"]}
        self.assertEqual(set(runlog.KINDS), declared)

    def test_every_record_key_runlog_reads_is_declared(self):
        for kind, keys in READS.items():
            declared = self.keys_of(kind)
            for k in keys:
                self.assertIn(k, declared, f"runlog reads {kind}.{k}, which no one declares")

    def test_every_summary_key_runlog_reads_is_declared(self):
        declared = {f["key"] for f in self.schema["summary.json"]["fields"]}
        for k in SUMMARY_READS:
            self.assertIn(k, declared, f"runlog reads summary.json's {k}, which no one declares")


if __name__ == "__main__":
    unittest.main()
