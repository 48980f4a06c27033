"""The report's tables and findings on fabricated runs (scripts/stacklab/report.py, study_findings.py): a
diverged run (summary.json status) is in no number, and a cell that lost seeds says how many."""
import unittest

import fabricate
from stacklab import report
from stacklab import study_findings as sf


def study():
    """f(x) at L=8: lr 1e-3 three completed seeds; lr 1e-2 two completed, one diverged whose last
    loss was 24967.77 (what the report used to average in); L=2 at lr 1e-3 one seed never finished."""
    runs = [fabricate.run("none-nores", 8, 1e-3, s, 3.436 + 0.001 * s) for s in range(3)]
    runs += [fabricate.run("none-nores", 8, 1e-2, 0, 3.4594), fabricate.run("none-nores", 8, 1e-2, 2, 3.4665),
             fabricate.run("none-nores", 8, 1e-2, 1, 24967.7744, status="diverged", diverged_step=133)]
    runs += [fabricate.run("none-nores", 2, 1e-3, s, 3.437) for s in range(2)]
    runs += [fabricate.run("none-nores", 2, 1e-3, 2, None, status="interrupted")]
    return sf.Training([fabricate.FakeSweep("train_grid", runs)])


def cell(table, wiring, col, depth=None):
    header, rows = table
    row = next(r for r in rows if r[0] == f"`{wiring}`" and (depth is None or r[1] == str(depth)))
    return row[header.index(col)]


class Tables(unittest.TestCase):
    def test_a_diverged_seed_is_left_out_and_counted_in_its_cell(self):
        tr = study()
        c = cell(report.lr_table(tr), "none-nores", "lr 0.01", depth=8)
        self.assertIn("n=2", c)
        self.assertIn("1 of 3 seeds excluded", c)
        self.assertIn("diverged at step 133", c)
        self.assertNotIn("8324", c)  # the mean with the exploded seed in it

    def test_a_rate_whose_every_seed_diverged_keeps_its_column_and_says_so(self):
        tr = study()
        tr = sf.Training([fabricate.FakeSweep("train_grid", tr.runs + [
            fabricate.run("none-nores", 8, 3e-2, s, None, status="diverged", diverged_step=9) for s in range(3)])])
        c = cell(report.lr_table(tr), "none-nores", "lr 0.03", depth=8)
        why = "; ".join(f"s{s} diverged at step 9" for s in range(3))
        self.assertEqual(c, f"excluded: 3 of 3 seeds ({why})")

    def test_a_cell_without_excluded_seeds_says_nothing_about_them(self):
        c = cell(report.lr_table(study()), "none-nores", "lr 0.001", depth=8)
        self.assertIn("n=3", c)
        self.assertNotIn("excluded", c)

    def test_the_loss_table_counts_the_excluded_seeds_at_its_rate_only(self):
        tr = study()
        self.assertEqual(tr.ref_lr, 1e-3)
        c8 = cell(report.loss_table(tr), "none-nores", "L=8")
        self.assertNotIn("excluded", c8)  # the diverged seed is at lr 1e-2, not in this table
        c2 = cell(report.loss_table(tr), "none-nores", "L=2")
        self.assertIn("1 of 3 seeds excluded: s2 incomplete", c2)

    def test_no_interval_in_a_table_reaches_below_zero(self):
        tr = study()
        far = fabricate.run("none-nores", 8, 3e-3, 0, 3.44), fabricate.run("none-nores", 8, 3e-3, 1, 30.0)
        tr = sf.Training([fabricate.FakeSweep("train_grid", tr.runs + list(far))])
        c = cell(report.lr_table(tr), "none-nores", "lr 0.003", depth=8)
        self.assertIn("95% CI 0.0000-", c)
        self.assertIn("clipped at 0", c)


class Findings(unittest.TestCase):
    def test_the_plateau_finding_lists_the_diverged_seed_it_could_not_judge(self):
        f = sf.finding_5(study())
        text = " ".join(f["measured"])
        self.assertIn("left out", text)
        self.assertIn("none-nores L=8 lr 0.01", text)
        self.assertIn("diverged at step 133", text)


if __name__ == "__main__":
    unittest.main()
