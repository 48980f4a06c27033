"""The report's section "The residual, or the signal?" (report/signal.py; issue 45 part 2) on a study
folder that holds fabricated signal sweeps (test_signal_study's runs, on disk, with a probe of two
points) beside the base sweeps of test_report_convergence: its table, the verdict the rules give, its
row in the summary, findings.json's "signal"; the unfinished points listed as not judged, and the runs
whose settings differ from the rules' named with their keys; and, on a folder without the sweeps, one
line saying what runs them."""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

from test_report_convergence import base_sweeps, section_of
from test_signal_study import RULES, _write

from stacklab import report
from stacklab.studies import signal as ss, signal_text as st
from stacklab.report import signal as rs
from stacklab.report.doc import Doc
from stacklab.report.figures import figure_caption

NOT_RUN = "The residual-or-signal study (issue 45 part 2) was not run: `bash scripts/reproduce.sh --signal` runs it."


def write_probe(root, ranks):
    """root/signal_probe: one probe.json per (point, depth) of `ranks`, its 3 seeds' last rank ratios."""
    d = os.path.join(root, ss.PROBE_SWEEP)
    entries = []
    for (point, depth), rr in ranks.items():
        model = {"n_layer": depth, "attention_kind": point}
        rid = f"L{depth}-{point}"
        os.makedirs(os.path.join(d, rid))
        with open(os.path.join(d, rid, "probe.json"), "w", encoding="utf-8") as f:
            json.dump({"config": {"model": model},
                       "seeds": [{"seed": 40 + i, "layers": {"rank_ratio": [1.0, r]}} for i, r in enumerate(rr)]}, f)
        entries.append({"id": rid, "dir": rid, "seeds": [40, 41, 42], "status": "completed"})
    with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump({"name": ss.PROBE_SWEEP, "mode": "probe", "runs": entries}, f)


def write_report(root, with_signal):
    """(report.md, findings.json, the verdict lines it printed, the sweeps) of the report on the base
    sweeps, with the signal sweeps loaded as report.main loads every sweep folder when `with_signal`."""
    sweeps = base_sweeps()
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()):
        if with_signal:
            sweeps.update({n: report.Sweep(root, n) for n in ss.TRAIN_SWEEPS})
        md_path, _, fj = report.write_report(root, sweeps)
    with open(md_path, encoding="utf-8") as f:
        return f.read(), fj, out.getvalue().splitlines(), sweeps


class WithSignalSweeps(unittest.TestCase):
    """Shaped attention escapes in 3 of 3 seeds at L = 8 and 2 of 3 at L = 32, everything else stalls."""

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="report45-")
        _write(cls.root, {("shaped", 8): 3, ("shaped", 32): 2})
        write_probe(cls.root, {("shaped", 8): [0.9, 0.92, 0.91], ("softmax", 8): [0.05, 0.04, 0.06]})
        cls.md, cls.fj, cls.printed, cls.sweeps = write_report(cls.root, with_signal=True)
        cls.sec = section_of(cls.md, rs.ANCHOR).split("\n<a id=", 1)[0]
        cls.summary = section_of(cls.md, "summary")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_the_section_follows_the_convergence_section_under_its_title(self):
        self.assertLess(self.md.index('<a id="convergence">'), self.md.index(f'<a id="{rs.ANCHOR}">'))
        self.assertTrue(self.sec.lstrip().startswith("## The residual, or the signal?"))
        self.assertNotIn(NOT_RUN, self.md)

    def test_the_table_holds_each_points_escapes_steps_training_and_rank_ratio(self):
        self.assertIn("| point | L | escaped within H | escape steps | trains | rank ratio at init (median of 3) |",
                      self.sec)
        self.assertIn("| shaped | 8 | 3 of 3 | median 100, range 100-100 | yes | 0.91 |", self.sec)
        self.assertIn("| softmax | 8 | 0 of 3 | 3 never within 100 | no | 0.05 |", self.sec)
        self.assertIn("| shaped | 32 | 2 of 3 | median 100, range 100-100; 1 never within 100 | yes | not probed |",
                      self.sec)

    def test_the_verdict_is_the_rules_sentence_with_its_parts(self):
        self.assertIn("Verdict: **a residual is sufficient but not necessary: a stack that keeps its signal trains "
                      "without one**.", self.sec)
        self.assertIn("- L = 8: shaped trains without a residual, softmax does not; control: the control does not "
                      "train: the identity term is credited.", self.sec)
        self.assertIn(f"within H = {RULES['horizon']['H']} steps", self.sec)
        self.assertNotIn("Not judged", self.sec)

    def test_it_says_once_that_trains_is_the_rules_word_for_leaving_the_plateau(self):
        # issue 57 section 4: the verdicts keep the rules' word; the section scopes it once, the summary row
        # says "leaves the plateau" and that learning beyond symbol pairs is not measured
        self.assertEqual(self.sec.count(st.TRAINS_MEANS), 1)
        self.assertIn("learns beyond symbol pairs (the bigram predictor's loss) is not measured", st.TRAINS_MEANS)
        row = next(ln for ln in self.summary.splitlines() if ln.startswith("| [signal](#signal) |"))
        self.assertIn("shaped attention leaves the plateau at L = 8 and 32 where softmax attention does not", row)
        self.assertIn("learning beyond symbol pairs, the bigram line, is not measured by these runs", row)
        self.assertEqual(st.markdown(ss.judge(self.root, RULES)).count(st.TRAINS_MEANS), 1)

    def test_the_summary_has_its_row_with_the_deciding_escapes(self):
        row = next(ln for ln in self.summary.splitlines() if ln.startswith("| [signal](#signal) |"))
        self.assertIn("L = 8: shaped 3 of 3 escaped, softmax 0 of 3 escaped; L = 32: shaped 2 of 3 escaped, "
                      "softmax 0 of 3 escaped", row)
        self.assertTrue(row.endswith("| **a residual is sufficient but not necessary: a stack that keeps its signal "
                                     "trains without one** |"))
        self.assertNotIn("[The residual, or the signal?](#signal): not run", self.summary)

    def test_the_signal_sweeps_are_no_extras_and_their_figures_say_what_they_support(self):
        self.assertNotIn('<a id="extras">', self.md)
        caption = figure_caption(os.path.join("figures", "signal_shaped", "final_loss_vs_depth.png"),
                                 self.sweeps["probe_grid"], None, self.sweeps)
        self.assertTrue(caption.endswith("Supports: the residual, or the signal? (issue 45 part 2)."), caption)

    def test_the_verdict_is_printed_with_the_others(self):
        self.assertIn("the residual, or the signal?: a residual is sufficient but not necessary: a stack that keeps "
                      "its signal trains without one", self.printed)

    def test_findings_json_holds_the_same_verdict(self):
        with open(os.path.join(self.root, "findings.json"), encoding="utf-8") as f:
            sig = json.load(f)["signal"]
        self.assertEqual(sig, self.fj["signal"])
        self.assertTrue(sig["present"])
        self.assertEqual(sig["sweeps"], list(ss.SIGNAL_SWEEPS))
        self.assertIn("a residual is sufficient but not necessary", sig["verdict"])
        shaped8 = next(p for p in sig["points"] if (p["point"], p["depth"]) == ("shaped", 8))
        self.assertEqual((shaped8["escaped"], shaped8["trains"], shaped8["rank_ratio_at_init"]),
                         (3, True, [0.9, 0.92, 0.91]))


class Unfinished(unittest.TestCase):
    def test_points_with_fewer_than_three_finished_seeds_are_listed_as_not_judged(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {("shaped", 8): 3, ("shaped", 32): 3})
            for seed in (41, 42):  # two L = 32 softmax seeds still running
                with open(os.path.join(root, "signal_shaped", f"L32-softmax-s{seed}", "summary.json"), "w",
                          encoding="utf-8") as f:
                    json.dump({"status": "running"}, f)
            res = ss.judge(root, RULES)
        doc = Doc()
        rs.section(doc, res, "a fabricated CPU")
        md = doc.markdown()
        self.assertIn("| softmax | 32 | 0 of 1 | 1 never within 100 | (1 of 3 seeds finished) | not probed |", md)
        self.assertIn("Verdict: **not judged: L = 32 not run**.", md)
        self.assertIn("Not judged (not run, or unfinished): softmax at L = 32 (1 of 3 seeds finished).", md)
        self.assertIn("runs on a fabricated CPU", md)
        row, = rs.summary_rows(res)
        self.assertTrue(row[2].endswith("; 1 of 12 points not judged yet"))


class OffTheRules(unittest.TestCase):
    def test_runs_whose_settings_differ_from_the_rules_are_named_not_judged_with_their_keys(self):
        with tempfile.TemporaryDirectory() as root:
            _write(root, {("shaped", 8): 3, ("shaped", 32): 3}, {"model": {"n_embd": 16}})
            res = ss.judge(root, RULES)
        doc = Doc()
        rs.section(doc, res, "a fabricated CPU")
        md = doc.markdown()
        self.assertIn("Not judged, their settings differ from the rules' (`configs/experiments/signal_rules.json` "
                      "and the sweep files it judges):\n\n- model.n_embd 16 (the rules: 64): 36 runs", md)
        self.assertIn("Verdict: **not judged: L = 8 not judged (6 runs' settings differ from the rules')", md)
        row, = rs.summary_rows(res)
        self.assertTrue(row[2].endswith("; 36 runs not judged (settings differ from the rules')"))


class WithoutSignalSweeps(unittest.TestCase):
    def test_the_section_and_the_summary_say_it_was_not_run_and_what_runs_it(self):
        root = tempfile.mkdtemp(prefix="report45-")
        try:
            md, fj, printed, _ = write_report(root, with_signal=False)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        sec = section_of(md, rs.ANCHOR).split("\n<a id=", 1)[0]
        self.assertEqual([ln for ln in sec.splitlines() if ln], ["## The residual, or the signal?", NOT_RUN])
        self.assertIn("[The residual, or the signal?](#signal): not run (`bash scripts/reproduce.sh --signal` runs "
                      "it).", section_of(md, "summary"))
        self.assertNotIn("| [signal](#signal) |", md)
        self.assertIn("the residual, or the signal?: not run", printed)
        self.assertEqual(fj["signal"], {"present": False, "verdict": "not run", "how": ss.COMMAND,
                                        "rules": ss.RULES_FILE})


if __name__ == "__main__":
    unittest.main()
