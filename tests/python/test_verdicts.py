"""stacklab.verdicts: every verdict of a findings.json, and two studies compared on them (issue 46's
promise that a change of rounding leaves every verdict as it was)."""
import contextlib
import copy
import io
import json
import os
import tempfile
import unittest

from stacklab import verdicts as v

PINNED = os.path.join(os.path.dirname(__file__), "data", "report_unchanged", "findings.json")


class Verdicts(unittest.TestCase):
    def setUp(self):
        with open(PINNED, encoding="utf-8") as f:
            self.f = json.load(f)

    def test_the_findings_rule_p_claims_and_convergence_points_are_all_read(self):
        names = v.verdicts(self.f)
        self.assertEqual(names["finding 1"], "seen" if self.f["findings"][0]["seen"] else "not seen")
        self.assertEqual(names["rule P"], "seen")
        self.assertIn("claim C1", names)
        self.assertTrue(any(k.startswith("convergence synthetic") for k in names))

    def test_a_study_agrees_with_itself_and_a_changed_verdict_is_named(self):
        self.assertEqual(v.compare(self.f, copy.deepcopy(self.f)), [])
        g = copy.deepcopy(self.f)
        g["pre_post"][0]["verdict"] = "not seen"
        self.assertEqual(v.compare(self.f, g), [("rule P", "seen", "not seen")])

    def test_a_moved_number_behind_an_unchanged_verdict_is_no_difference(self):
        g = copy.deepcopy(self.f)
        g["points"][0]["final_val_loss"]["mean"] += 0.01
        self.assertEqual(v.compare(self.f, g), [])

    def test_the_command_exits_1_on_a_difference_and_0_on_none(self):
        g = copy.deepcopy(self.f)
        g["findings"][1]["seen"] = not g["findings"][1]["seen"]
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
            for path, doc in ((a, self.f), (b, g)):
                with open(path, "w", encoding="utf-8") as fh:
                    json.dump(doc, fh)
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(v.main([a, b]), 1)
                self.assertEqual(v.main([a, a]), 0)
            self.assertIn("finding 2", out.getvalue())


if __name__ == "__main__":
    unittest.main()
