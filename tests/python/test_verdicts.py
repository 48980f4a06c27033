"""stacklab.studies.verdicts: every verdict of a findings.json, and two studies compared on them (issue 46's
promise that a change of rounding leaves every verdict as it was): read from the whole file, so that a
section the old hand-made list left out (the escape law's core) and any field added later are
compared; a section not run reads "not run", not "absent"."""
import contextlib
import copy
import io
import json
import os
import tempfile
import unittest

import fabricate
from full_run import full_run_only
from test_escape_core import core_runs
from test_report_unchanged import write_study
from test_signal_study import RULES, _write

from stacklab.studies.escape import default_tier as ec
from stacklab import report
from stacklab.studies import signal as ss, signal_text as st
from stacklab.studies import verdicts as v

PINNED = os.path.join(os.path.dirname(__file__), "data", "report_unchanged", "findings.json")


def run_command(x: dict, y: dict) -> tuple:
    """`python3 -m stacklab.studies.verdicts` on files holding x and y: the exit codes of x against y, of x
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
        self.assertEqual(names["findings[id=1].seen"], "seen" if self.f["findings"][0]["seen"] else "not seen")
        self.assertEqual(names["pre_post[id=P].verdict"], "seen")
        self.assertIn("claims[id=C1].verdict", names)
        self.assertTrue(any(k.startswith("convergence.points[source=synthetic") for k in names))
        self.assertEqual(names["findings[id=3].parts.ii"], self.f["findings"][2]["parts"]["ii"])

    def test_a_study_agrees_with_itself_and_a_changed_verdict_is_named(self):
        self.assertEqual(v.compare(self.f, copy.deepcopy(self.f)), [])
        g = copy.deepcopy(self.f)
        g["pre_post"][0]["verdict"] = "not seen"
        self.assertEqual(v.compare(self.f, g), [("pre_post[id=P].verdict", "seen", "not seen")])

    def test_a_moved_number_behind_an_unchanged_verdict_is_no_difference(self):
        g = copy.deepcopy(self.f)
        g["points"][0]["final_val_loss"]["mean"] += 0.01
        self.assertEqual(v.compare(self.f, g), [])

    def test_the_command_exits_1_on_a_difference_and_0_on_none(self):
        g = copy.deepcopy(self.f)
        g["findings"][1]["seen"] = not g["findings"][1]["seen"]
        differ, same, _, out = run_command(self.f, g)
        self.assertEqual((differ, same), (1, 0))
        self.assertIn("findings[id=2].seen", out)

    def test_a_verdict_in_a_section_the_old_list_left_out_is_compared(self):
        # issue 58 item 2: the hand-made list never read escape_law_core, whatever its verdict
        g = copy.deepcopy(self.f)
        g["escape_law_core"] = {"present": True, "wirings": [{"wiring": "none-nores", "verdict": "fitted",
                                                              "best": "power", "falsifier": {"fires": False}}]}
        h = copy.deepcopy(g)
        h["escape_law_core"]["wirings"][0].update(best="exponential", falsifier={"fires": True})
        self.assertEqual(v.compare(g, h), [
            ("escape_law_core.wirings[wiring=none-nores].best", "power", "exponential"),
            ("escape_law_core.wirings[wiring=none-nores].falsifier.fires", "not falsified", "falsified")])

    def test_any_new_field_with_a_verdict_key_is_compared_without_a_list_naming_it(self):
        g = dict(copy.deepcopy(self.f), some_new_study={"present": True, "points": [{"depth": 8, "verdict": "x"}]})
        h = copy.deepcopy(g)
        h["some_new_study"]["points"][0]["verdict"] = "y"
        self.assertEqual(v.compare(g, h), [("some_new_study.points[depth=8].verdict", "x", "y")])


def with_signal(f: dict, outcome: dict) -> dict:
    """The findings `f` with findings.json's "signal" of test_signal_study's fabricated folder for `outcome`."""
    with tempfile.TemporaryDirectory() as root:
        _write(root, outcome)
        return dict(copy.deepcopy(f), signal=json.loads(json.dumps(st.findings_json(ss.judge(root, RULES)))))


class SignalVerdicts(unittest.TestCase):
    """The residual-or-signal study's verdicts (findings.json's "signal", issue 45 part 2)."""

    def setUp(self):
        with open(PINNED, encoding="utf-8") as f:
            self.f = json.load(f)
        self.sufficient = with_signal(self.f, {("shaped", 8): 3, ("shaped", 32): 3})

    def test_its_verdict_its_parts_and_each_point_are_read(self):
        names = v.verdicts(self.sufficient)
        self.assertEqual(names["signal.verdict"], "a residual is sufficient but not necessary: a stack that keeps its "
                                                  "signal trains without one")
        self.assertEqual(names["signal.depths[depth=8].verdict"], "shaped trains without a residual, softmax does not")
        self.assertEqual(names["signal.depths[depth=32].control"],
                         "the control does not train: the identity term is credited")
        self.assertEqual(names["signal.sublayer[depth=2].verdict"], "not told apart (neither trains)")
        self.assertEqual((names["signal.points[point=shaped,depth=8].trains"],
                          names["signal.points[point=softmax,depth=8].trains"]), ("trains", "does not train"))

    def test_a_study_that_did_not_run_it_says_not_run_not_absent(self):
        # issue 60, defect 11: `signal: {"present": false}` read as "absent"
        not_run = dict(self.f, signal=st.findings_json(ss.Judged({}, {}, [])))
        self.assertEqual([(k, x) for k, x in v.verdicts(not_run).items() if k.startswith("signal")],
                         [("signal.verdict", "not run")])
        self.assertEqual(v.compare(not_run, copy.deepcopy(not_run)), [])
        diff = {name: (a, b) for name, a, b in v.compare(not_run, self.sufficient)}
        self.assertEqual(diff["signal.verdict"], ("not run", self.sufficient["signal"]["verdict"]))
        self.assertEqual(diff["signal.points[point=shaped,depth=8].trains"], ("not run", "trains"))
        self.assertNotIn("absent", {a for a, _ in diff.values()})

    def test_a_findings_json_from_before_the_section_says_absent(self):
        self.assertNotIn("signal", self.f)
        self.assertIn(("signal.verdict", "absent", self.sufficient["signal"]["verdict"]),
                      v.compare(self.f, self.sufficient))

    def test_a_differing_signal_verdict_is_named_and_the_command_exits_1(self):
        residual_only = with_signal(self.f, {("shaped", 8): 1})
        diff = dict((name, (a, b)) for name, a, b in v.compare(self.sufficient, residual_only))
        self.assertEqual(diff["signal.verdict"], (self.sufficient["signal"]["verdict"],
                                                  "in this lab, nothing but a residual trains at L >= 8 (within H, "
                                                  "at 3e-4)"))
        self.assertEqual(diff["signal.points[point=shaped,depth=8].trains"], ("trains", "does not train"))
        self.assertNotIn("signal.points[point=softmax,depth=8].trains", diff)
        differ, _, same, out = run_command(self.sufficient, residual_only)
        self.assertEqual((differ, same), (1, 0))
        self.assertIn("verdicts: signal.verdict: a residual is sufficient but not necessary", out)


@full_run_only
class EveryField(unittest.TestCase):
    """A findings.json with every section run (the pinned fixture's sweeps, the escape law's core and its
    opt-in sweep, the signal sweeps): each key is a verdict or known not to be one, so a verdict field added
    to findings.json later fails here until verdicts.py reads it (issue 58 item 2)."""

    @classmethod
    def setUpClass(cls):
        with tempfile.TemporaryDirectory() as root:
            sweeps = write_study(root)
            fabricate.write_sweep_dir(root, ec.SWEEP, core_runs())
            sweeps[ec.SWEEP] = report.Sweep(root, ec.SWEEP)
            fabricate.write_sweep_dir(root, "escape_law", core_runs())  # the opt-in law's stage 0, in part
            _write(root, {("shaped", 8): 3})
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                _, _, fj = report.write_report(root, sweeps)
        cls.fj = json.loads(json.dumps(fj))

    def test_every_section_ran(self):
        for section in ("convergence", "escape_law_core", "escape_law", "signal"):
            self.assertTrue(self.fj[section]["present"], section)

    def test_every_key_is_a_verdict_or_known_not_to_be_one(self):
        self.assertEqual(v.unknown_keys(self.fj), [])

    def test_a_new_key_is_named_until_it_is_classified(self):
        g = copy.deepcopy(self.fj)
        g["signal"]["points"][0]["judgement"] = "trains"  # a field no list names
        self.assertEqual(v.unknown_keys(g), ["judgement"])

    def test_the_opt_in_law_and_the_core_are_read(self):
        names = v.verdicts(self.fj)
        self.assertEqual(names["escape_law_core.wirings[wiring=none-nores,learning_rate=0.001].verdict"], "fitted")
        self.assertEqual(names["escape_law_core.wirings[wiring=none-nores,learning_rate=0.001].falsifier.fires"],
                         "not falsified")
        self.assertIn("escape_law.wirings[wiring=none-nores].best.verdict", names)
        self.assertIn("escape_law.wirings[wiring=none-nores].best.best", names)
        self.assertNotIn("escape_law.wirings[wiring=none-nores].best.why", names)
        self.assertTrue(any(k.startswith("stability_map.cells[") and k.endswith(".majority") for k in names))


if __name__ == "__main__":
    unittest.main()
