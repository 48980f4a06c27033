"""stacklab.verdicts: every verdict of a findings.json, and two studies compared on them (issue 46's
promise that a change of rounding leaves every verdict as it was)."""
import contextlib
import copy
import io
import json
import os
import tempfile
import unittest

from test_signal_study import RULES, _write

from stacklab import signal_study as ss
from stacklab import verdicts as v

PINNED = os.path.join(os.path.dirname(__file__), "data", "report_unchanged", "findings.json")


def run_command(x: dict, y: dict) -> tuple:
    """`python3 -m stacklab.verdicts` on files holding x and y: the exit codes of x against y, of x
    against itself and of y against itself, and what it printed."""
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.json"), os.path.join(d, "b.json")
        for path, doc in ((a, x), (b, y)):
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(doc, fh)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            codes = (v.main([a, b]), v.main([a, a]), v.main([b, b]))
    return codes + (out.getvalue(),)


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
        differ, same, _, out = run_command(self.f, g)
        self.assertEqual((differ, same), (1, 0))
        self.assertIn("finding 2", out)


def with_signal(f: dict, outcome: dict) -> dict:
    """The findings `f` with findings.json's "signal" of test_signal_study's fabricated folder for `outcome`."""
    with tempfile.TemporaryDirectory() as root:
        _write(root, outcome)
        return dict(copy.deepcopy(f), signal=json.loads(json.dumps(ss.findings_json(ss.judge(root, RULES)))))


class SignalVerdicts(unittest.TestCase):
    """The residual-or-signal study's verdicts (findings.json's "signal", issue 45 part 2)."""

    def setUp(self):
        with open(PINNED, encoding="utf-8") as f:
            self.f = json.load(f)
        self.sufficient = with_signal(self.f, {("shaped", 8): 3, ("shaped", 32): 3})

    def test_its_verdict_its_parts_and_each_point_are_read(self):
        names = v.verdicts(self.sufficient)
        self.assertEqual(names["signal"], "a residual is sufficient but not necessary: a stack that keeps its signal "
                                          "trains without one")
        self.assertEqual(names["signal L=8"], "shaped trains without a residual, softmax does not")
        self.assertEqual(names["signal control L=32"], "the control does not train: the identity term is credited")
        self.assertEqual(names["signal sub-layers L=2"], "not told apart (neither trains)")
        self.assertEqual((names["signal shaped L=8"], names["signal softmax L=8"]), ("trains", "does not train"))

    def test_a_study_that_did_not_run_it_has_no_signal_verdict(self):
        not_run = dict(self.f, signal=ss.findings_json(ss.Judged({}, {}, [])))
        self.assertFalse([k for k in v.verdicts(not_run) if k.startswith("signal")])
        self.assertEqual(v.compare(self.f, not_run), [])
        self.assertIn(("signal", "absent", self.sufficient["signal"]["verdict"]), v.compare(not_run, self.sufficient))

    def test_a_differing_signal_verdict_is_named_and_the_command_exits_1(self):
        residual_only = with_signal(self.f, {("shaped", 8): 1})
        diff = dict((name, (a, b)) for name, a, b in v.compare(self.sufficient, residual_only))
        self.assertEqual(diff["signal"], (self.sufficient["signal"]["verdict"],
                                          "in this lab, nothing but a residual trains at L >= 8 (within H, at 3e-4)"))
        self.assertEqual(diff["signal shaped L=8"], ("trains", "does not train"))
        self.assertNotIn("signal softmax L=8", diff)
        differ, _, same, out = run_command(self.sufficient, residual_only)
        self.assertEqual((differ, same), (1, 0))
        self.assertIn("verdicts: signal: a residual is sufficient but not necessary", out)


if __name__ == "__main__":
    unittest.main()
