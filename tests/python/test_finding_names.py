"""One naming of the findings: numbered 1-5 in README.md, the report generator, the experiment
configs and their README, and findings.json's ids; no lettered "(a)"-"(e)" left anywhere."""
import glob
import os
import re
import unittest

import fabricate
from stacklab.studies import findings as sf

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NAMED = (["README.md", "configs/experiments/README.md", "scripts/README.md", "scripts/stacklab/studies/findings.py",
          "tests/integration/check_report.sh", "tests/integration/check_report_html.sh",
          "tests/integration/check_full_tier.sh"]
         + [os.path.relpath(p, ROOT)
            for p in glob.glob(os.path.join(ROOT, "configs/experiments/**/*.json"), recursive=True)]
         + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "scripts/stacklab/report/*.py"))]
         + [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs/*.md"))])


class FindingNames(unittest.TestCase):
    def test_no_file_names_a_finding_by_letter(self):
        for rel in NAMED:
            with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                text = f.read()
            hits = re.findall(r".{0,30}(?<![\w)\]])\([a-e]\).{0,10}", text)  # not str(d), exp(b)
            self.assertEqual(hits, [], f"{rel} names a finding by letter")

    def test_the_readme_numbers_the_five_findings(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            heads = re.findall(r"^\*\*([1-9])\. ", f.read(), re.M)
        self.assertEqual(heads, ["1", "2", "3", "4", "5"])

    def test_findings_json_ids_are_the_numbers(self):
        tr = sf.Training([fabricate.FakeSweep("train_grid", [])])
        self.assertEqual([sf.finding_3(tr).id, sf.finding_5(tr).id], [3, 5])


if __name__ == "__main__":
    unittest.main()
