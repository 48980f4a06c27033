"""The tables under docs/results/ are read whole or not at all (issue 60, defect 2): a table whose last line
was cut while being written (a torn write: no newline at its end), a row with a field too few, a value of the
wrong type, censored disagreeing with the escape step, a cut commit or a run twice is refused, naming the file
and line, and escape_study exits 2; a probe table likewise; report --results-to copies no table that is not
whole. The committed tables all read."""
import contextlib
import glob
import io
import os
import shutil
import tempfile
import unittest

from stacklab.studies.escape import tables as er
from stacklab.studies.escape import study as es
from stacklab import report

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "results")
FIRST = ("escape_law,L1-none-nores-learning_rate0.0001-s30,none-nores,1,0.0001,normal,30,4150,4150,no,3.33514,"
         "3.33514,unigram_on_val,Intel(R) Xeon(R) Processor,Prescott,3bcbed7f465810f956a18f812ca4030b28674f40\n")


def committed(name):
    with open(os.path.join(RESULTS, name), encoding="utf-8", newline="") as f:
        return f.read()


def judged(folder):
    """(exit code, stderr) of escape_study on a results folder."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = es.main(["--results", folder])
    return rc, err.getvalue()


class TornTables(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.table = os.path.join(self.dir, es.TABLE)
        text = committed(es.TABLE)
        self.assertIn(FIRST, text)
        # the first run moved to the end: the rows the issue cut, as the last line written
        self.rest = text.replace(FIRST, "")
        self.last = len(self.rest.splitlines()) + 1

    def write(self, text):
        with open(self.table, "w", encoding="utf-8", newline="") as f:
            f.write(text)

    def test_a_last_line_cut_inside_the_escape_step_is_refused_with_exit_2_naming_its_line(self):
        # the first case: "...,30,4150,41" read as an escape at step 41 (5/5 · 3950 (41-4150))
        self.write(self.rest + FIRST[:FIRST.index(",30,4150,4150") + len(",30,4150,41")])
        rc, err = judged(self.dir)
        self.assertEqual(rc, 2)
        self.assertIn(f"{self.table}:{self.last}: the last line ends without a newline: a torn write", err)

    def test_a_last_line_cut_after_the_steps_is_refused_not_read_as_never_escaped(self):
        self.write(self.rest + FIRST[:FIRST.index(",30,4150,4150") + len(",30,4150,")])
        rc, err = judged(self.dir)
        self.assertEqual(rc, 2)
        self.assertIn(f"{self.table}:{self.last}: the last line ends without a newline", err)

    def test_a_table_missing_its_last_60_bytes_is_refused(self):
        self.write(committed(es.TABLE)[:-60])  # head -c -60
        rc, err = judged(self.dir)
        self.assertEqual(rc, 2)
        self.assertIn(f"{self.table}:526: the last line ends without a newline", err)

    def test_a_row_cut_short_inside_the_table_is_refused_by_its_field_count(self):
        cut = FIRST[:FIRST.index(",30,4150,4150") + len(",30,4150,41")] + "\n"
        self.write(self.rest.replace("\n", "\n" + cut, 1))
        with self.assertRaisesRegex(ValueError, f"{self.table}:2: not a results-table row \\(9 fields, the "
                                                "header has 16\\)"):
            es.read_table(self.table)


class BrokenRows(unittest.TestCase):
    def check(self, old, new, message):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, es.TABLE)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(committed(es.TABLE).replace(FIRST, FIRST.replace(old, new, 1), 1))
            with self.assertRaises(ValueError) as cm:
                es.read_table(path)
            self.assertIn(f"{path}:2: not a results-table row ({message}", str(cm.exception))

    def test_each_field_is_checked_for_its_type(self):
        self.check(",normal,30,4150,4150,", ",normal,thirty,4150,4150,", "seed 'thirty'")
        self.check(",normal,30,4150,4150,", ",normal,30,4150.5,4150,", "steps '4150.5': not an integer")
        self.check(",1,0.0001,normal,", ",1,-0.0001,normal,", "learning_rate '-0.0001'")
        self.check(",unigram_on_val,", ",unigram_on_vl,", "unigram_reference 'unigram_on_vl'")

    def test_censored_must_be_yes_no_or_diverged_and_agree_with_the_escape_step(self):
        self.check(",4150,no,", ",4150,maybe,", "censored 'maybe': not one of yes, no, diverged")
        self.check(",4150,no,", ",4150,yes,", "censored 'yes' with escape_step '4150'")
        self.check(",4150,4150,no,", ",4150,,no,", "censored 'no' with escape_step ''")
        self.check(",4150,4150,no,", ",4150,4200,no,", "escape_step 4200 after the 4150 steps run")

    def test_a_cut_commit_is_refused(self):
        self.check("3bcbed7f465810f956a18f812ca4030b28674f40", "3bcbed7f4658", "commit '3bcbed7f4658'")

    def test_a_run_twice_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, es.TABLE)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(committed(es.TABLE) + FIRST)
            with self.assertRaisesRegex(ValueError, ":527: not a results-table row \\(run L1-none-nores-learning_"
                                                    "rate0.0001-s30 again, first at line 2\\)"):
                es.read_table(path)


class ProbeTables(unittest.TestCase):
    def test_a_torn_probe_table_is_refused_with_exit_2(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copyfile(os.path.join(RESULTS, es.TABLE), os.path.join(d, es.TABLE))
            with open(os.path.join(d, es.PROBE_TABLE), "w", encoding="utf-8", newline="") as f:
                f.write(committed(es.PROBE_TABLE)[:-20])
            rc, err = judged(d)
            self.assertEqual(rc, 2)
            self.assertIn(f"{es.PROBE_TABLE}:22: the last line ends without a newline", err)

    def test_a_probe_row_with_a_ratio_that_is_not_a_number_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, es.PROBE_TABLE)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(committed(es.PROBE_TABLE).replace(",0.725103,", ",0.72x,", 1))
            with self.assertRaisesRegex(ValueError, f"{path}:2: not a probe-table row \\(rank_ratio '0.72x'"):
                es.read_probe_table(path)


class Committed(unittest.TestCase):
    def test_every_committed_table_reads_whole(self):
        names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(RESULTS, "*.csv")))
        self.assertIn("signal_shaped.csv", names)
        for name in names:
            with self.subTest(table=name):
                path = os.path.join(RESULTS, name)
                rows = (es.read_probe_table(path) if name[:-4] in es.PROBE_SWEEPS else er.read_results_csv(path))
                self.assertEqual(len(rows), len(committed(name).splitlines()) - 1)


class CopiedIntoTheRepository(unittest.TestCase):
    def test_report_results_to_copies_no_table_when_one_is_torn(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "results"))
            shutil.copyfile(os.path.join(RESULTS, "escape_law_core.csv"),
                            os.path.join(root, "results", "escape_law_core.csv"))
            with open(os.path.join(root, "results", "escape_law_deep.csv"), "w", encoding="utf-8") as f:
                f.write(committed("escape_law_deep.csv")[:-30])
            dest = os.path.join(root, "docs", "results")
            with self.assertRaisesRegex(ValueError, "escape_law_deep.csv:21: the last line ends without a newline"):
                report.copy_results(root, dest)
            self.assertFalse(os.path.exists(dest))


if __name__ == "__main__":
    unittest.main()
