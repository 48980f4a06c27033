"""The report of one fabricated study folder against the outputs the report wrote on it before issue 47's
restructuring (tests/python/data/report_unchanged/: findings.json and report.md, written by
`python3 tests/python/test_report_unchanged.py --write` on 1b49b95): findings.json must be equal, and
report.md equal but for the changes a commit names (listed in CHANGED below, each with its commit's
subject), and findings.json may hold the keys ADDED names beside them. The study: the probe and train
grids and the convergence sweeps of test_report_convergence,
a map core and a text map on disk (four outcomes), and timing.jsonl's start record; the claims' sweeps
are absent (every claim "not run"). The folder's path is written as OUT in the expected files. Writing
them again (--write) records the report as it is then: CHANGED and ADDED start empty again, in the same
commit."""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

import fabricate
from test_report_convergence import base_sweeps, converge_sweeps

from stacklab import report

EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "report_unchanged")
# (old, new) replacements in the expected report.md, one per change a commit names.
CHANGED = [
    # "report_sections, study_text: no measured time typed into code ...": the line for the claims (in the
    # summary and the claims section) and the text findings' line name the tier table instead of a time
    ("(60.9 minutes from a fresh clone on a 2-core Intel Xeon (Ice Lake); round 2 adds 49 runs, 40 core-minutes "
     "of training on a 2-core Intel Xeon (model 167): 20 minutes with two at once)",
     '(measured times: `configs/experiments/README.md`, "Two tiers")'),
    ("(about 40 more minutes on a 2-core Intel Xeon (model 167), from its runs' measured times)",
     '(measured times: `configs/experiments/README.md`, "Two tiers")'),
    # "The escape law's core in the default tier (issue 45 part 5) ...": the fixture holds no escape_law_core,
    # so its paragraph under the headline says it was not run
    ("\n\nQuick tier: 54 completed training runs",
     "\n\n**The escape law's core** (escape_law_core: stacks without a residual at L = 1-3, 3 seeds, stopped at "
     "their escape): not run in this folder; `bash scripts/reproduce.sh` runs it (the default tier).\n\n"
     "Quick tier: 54 completed training runs"),
    # "report: the section 'The residual, or the signal?' (issue 45 part 2, report/signal.py) ...": the fixture
    # holds no signal sweep, so one line under the summary and the section say it was not run and what runs it
    ("no verdict is dropped.\n\n<a id=\"finding-1\">",
     "no verdict is dropped.\n\n[The residual, or the signal?](#signal): not run (`bash scripts/reproduce.sh "
     "--signal` runs it).\n\n<a id=\"finding-1\">"),
    ("\n<a id=\"final-loss\"></a>",
     "\n<a id=\"signal\"></a>\n## The residual, or the signal?\n\nThe residual-or-signal study (issue 45 part 2) "
     "was not run: `bash scripts/reproduce.sh --signal` runs it.\n\n<a id=\"final-loss\"></a>"),
]
# Keys findings.json gained after the expected file was written, with their value on the fixture (a
# commit that adds one names it here; the other keys must stay equal).
ADDED = {
    # the escape law's core (issue 45 part 5): absent from the fixture, "not run"
    "escape_law_core": {"present": False, "verdict": "not run", "sweep": "escape_law_core",
                        "rules": "configs/experiments/escape_law_rules.json"},
    # the residual, or the signal? (issue 45 part 2): absent from the fixture, "not run"
    "signal": {"present": False, "verdict": "not run", "how": "bash scripts/reproduce.sh --signal",
               "rules": "configs/experiments/signal_rules.json"},
}


def map_runs():
    """A map core (pre, post x scaled, xavier x two rates at L = 8, two seeds) with each outcome."""
    out = []
    for v in ("pre", "post"):
        for init in ("scaled", "xavier"):
            for lr in (1e-3, 1e-2):
                for s in (0, 1):
                    o = ("trained" if v == "pre" or lr == 1e-3 else "diverged") if init == "scaled" else \
                        ("plateau" if v == "post" and s == 1 else "trained")
                    out.append((f"{v}-{init}-lr{lr:g}-s{s}", fabricate.map_run(v, init, 32, lr, s, o)))
    return out


def write_study(root):
    """The fabricated study: on-disk sweeps in root, and the in-memory sweeps write_report takes."""
    fabricate.write_sweep_dir(root, "map_core", map_runs())
    fabricate.write_sweep_dir(root, "text_map", map_runs()[::2])
    with open(os.path.join(root, "timing.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"stage": "start", "tier": "quick", "tiny": False, "time": 1.0e9, "nproc": 2,
                            "jobs": 2, "cpu_model": "fabricated CPU"}) + "\n")
        f.write(json.dumps({"stage": "sweeps", "seconds": 120.5}) + "\n")
    sweeps = base_sweeps()
    sweeps.update(converge_sweeps())
    return sweeps


def generate(root):
    """(findings.json's text, report.md's text) of the report on the fabricated study in root, OUT for root."""
    sweeps = write_study(root)
    with contextlib.redirect_stdout(io.StringIO()):
        md_path, _, _ = report.write_report(root, sweeps)
    with open(md_path, encoding="utf-8") as f:
        md = f.read()
    with open(os.path.join(root, "findings.json"), encoding="utf-8") as f:
        fj = f.read()
    return fj.replace(root, "OUT"), md.replace(root, "OUT")


class Unchanged(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="report47-")
        cls.fj, cls.md = generate(cls.root)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def test_findings_json_is_equal(self):
        with open(os.path.join(EXPECTED, "findings.json"), encoding="utf-8") as f:
            want = dict(json.load(f), **ADDED)
        self.assertEqual(json.loads(self.fj), want)

    def test_report_md_differs_only_where_a_commit_names_it(self):
        with open(os.path.join(EXPECTED, "report.md"), encoding="utf-8") as f:
            want = f.read()
        for old, new in CHANGED:
            self.assertIn(old, want)
            want = want.replace(old, new)
        self.assertEqual(self.md.splitlines(), want.splitlines())


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    os.makedirs(EXPECTED, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="report47-")
    fj_text, md_text = generate(tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    for name, text in (("findings.json", fj_text), ("report.md", md_text)):
        with open(os.path.join(EXPECTED, name), "w", encoding="utf-8") as f:
            f.write(text)
