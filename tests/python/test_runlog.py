"""The run-log reader (scripts/stacklab/runs/runlog.py): one definition of a diverged run (what
summary.json's status says), and metrics.jsonl lines it cannot use (a torn last line, a line that
is not JSON, a record without its keys) dropped with a warning, never an exception."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import fabricate
from stacklab.runs import runlog


class IsDiverged(unittest.TestCase):
    def test_a_run_is_diverged_when_its_summary_says_so(self):
        r = fabricate.run("none-nores", 8, 0.01, 1, None, status="diverged", diverged_step=133)
        self.assertTrue(runlog.is_diverged(r))
        self.assertEqual(runlog.status_mark(r), " [diverged at step 133]")

    def test_a_huge_loss_in_a_completed_run_is_not_called_diverged_here(self):
        r = fabricate.run("none-nores", 8, 0.01, 1, 24967.7744)  # the trainer's call, not ours
        self.assertFalse(runlog.is_diverged(r))
        self.assertTrue(runlog.is_completed(r))

    def test_a_run_without_a_summary_is_incomplete_even_with_a_diverged_record(self):
        r = fabricate.run("none-nores", 8, 0.01, 1, None)
        r.summary = None
        r.records["diverged"] = [{"step": 5, "kind": "diverged"}]
        self.assertFalse(runlog.is_diverged(r))
        self.assertEqual(r.status, "incomplete")


START = {"step": 0, "kind": "start", "n_layer": 2, "wiring": "pre-layernorm-res"}
TRAIN = {"step": 10, "kind": "train", "loss": 3.2}
EVAL = {"step": 10, "kind": "eval", "val_loss": 3.3}


class StudyStart(unittest.TestCase):
    def test_the_last_start_record_is_the_study_s_and_a_torn_line_is_skipped(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "timing.jsonl"), "w", encoding="utf-8") as f:
                f.write(json.dumps({"stage": "start", "tiny": True, "cpu_model": "A"}) + "\n")
                f.write(json.dumps({"stage": "sweep", "seconds": 3}) + "\n")
                f.write(json.dumps({"stage": "start", "tiny": False, "cpu_model": "B"}) + "\n")
                f.write('{"stage": "start", "tiny": tr')  # torn by a kill
            self.assertEqual(len(runlog.read_timing(d)), 3)
            self.assertEqual(runlog.study_start(d)["cpu_model"], "B")
            self.assertFalse(runlog.study_start(d)["tiny"])

    def test_a_folder_without_timing_has_no_start(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(runlog.study_start(d), {})
            self.assertEqual(runlog.read_timing(d), [])


class ReadMetrics(unittest.TestCase):
    """read_metrics on a metrics.jsonl written byte for byte; returns (records, warnings)."""

    def read(self, data: bytes):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "metrics.jsonl")
            with open(path, "wb") as f:
                f.write(data)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                recs = runlog.read_metrics(path)
        return recs, err.getvalue()

    @staticmethod
    def lines(*recs):
        return b"".join(json.dumps(r).encode() + b"\n" for r in recs)

    def test_whole_lines_are_grouped_by_kind_without_a_warning(self):
        recs, err = self.read(self.lines(START, TRAIN, EVAL))
        self.assertEqual([len(recs[k]) for k in ("start", "train", "eval", "layers")], [1, 1, 1, 0])
        self.assertEqual(recs["eval"][0]["val_loss"], 3.3)
        self.assertEqual(err, "")

    def test_a_torn_last_line_is_dropped_with_a_warning(self):
        # what a run killed mid-write leaves: the last record cut, no trailing newline
        recs, err = self.read(self.lines(START, TRAIN) + b'{"step": 20, "kind": "eval", "val_lo')
        self.assertEqual(recs["eval"], [])
        self.assertEqual(len(recs["train"]), 1)
        self.assertIn("no trailing newline", err)

    def test_a_complete_last_line_without_newline_is_dropped_too(self):
        # the reader cannot tell a whole record from a torn one without its newline: it drops it
        recs, err = self.read(self.lines(START) + json.dumps(EVAL).encode())
        self.assertEqual(recs["eval"], [])
        self.assertIn("torn write", err)

    def test_a_line_that_is_not_json_is_dropped_and_named_by_its_line_number(self):
        recs, err = self.read(self.lines(START) + b"loss went up here\n" + self.lines(EVAL))
        self.assertEqual((len(recs["start"]), len(recs["eval"])), (1, 1))
        self.assertIn("metrics.jsonl:2: not a JSON object", err)

    def test_a_record_without_its_kind_is_dropped(self):
        recs, err = self.read(self.lines(START, {"step": 10, "loss": 3.2}, EVAL))
        self.assertEqual(sum(len(v) for v in recs.values()), 2)
        self.assertIn("metrics.jsonl:2: record without 'kind'", err)

    def test_a_json_line_that_is_not_an_object_is_dropped(self):
        recs, err = self.read(self.lines(START) + b"[1, 2, 3]\n")
        self.assertEqual(sum(len(v) for v in recs.values()), 1)
        self.assertIn("metrics.jsonl:2: record without 'kind'", err)

    def test_a_record_of_an_unknown_kind_is_kept_under_that_kind(self):
        recs, _ = self.read(self.lines(START, {"step": 3, "kind": "checkpoint"}))
        self.assertEqual(recs["checkpoint"], [{"step": 3, "kind": "checkpoint"}])

    def test_an_eval_without_val_loss_gives_no_final_loss(self):
        # a record missing its value key is kept, and readers of the value skip it
        recs, _ = self.read(self.lines(START, {"step": 10, "kind": "eval"}))
        run = runlog.Run(path="x", records=recs)
        self.assertEqual(len(recs["eval"]), 1)
        self.assertIsNone(run.final_val_loss)

    def test_blank_lines_are_skipped_silently(self):
        recs, err = self.read(self.lines(START) + b"\n  \n" + self.lines(EVAL))
        self.assertEqual((len(recs["start"]), len(recs["eval"])), (1, 1))
        self.assertEqual(err, "")


class LoadRun(unittest.TestCase):
    def test_a_run_dir_with_an_unreadable_summary_loads_with_a_warning(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "metrics.jsonl"), "w") as f:
                f.write(json.dumps(START) + "\n")
            with open(os.path.join(d, "summary.json"), "w") as f:
                f.write('{"status": "compl')  # torn
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                run = runlog.load_run(d)
        self.assertIsNone(run.summary)
        self.assertEqual(run.status, "incomplete")
        self.assertEqual(run.n_layer, 2)
        self.assertIn("summary.json: unreadable summary", err.getvalue())
        self.assertIn("config.json: missing or unreadable", err.getvalue())


if __name__ == "__main__":
    unittest.main()
