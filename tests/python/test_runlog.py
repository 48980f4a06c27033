"""One definition of a diverged run (scripts/stacklab/runlog.py): what summary.json's status says."""
import unittest

import fabricate
from stacklab import runlog


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


if __name__ == "__main__":
    unittest.main()
