"""scripts/reproduce.sh --report-only on a study where a sweep never ran (issue 60, defect 11): a
--tiny study whose text sweep was skipped (no text) says that sweep was not run and why, passes only
the sweeps that ran to `stacklab sweep --status` and the plots, and does not say "not every run
completed". The
binary is stood in for by a script that answers `sweep --status` as the real one does (a folder
without manifest.json is an error, exit 1), the plot scripts and the report by a Python that does
nothing for them.
"""
import json
import os
import stat
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPRODUCE = os.path.join(REPO, "scripts", "reproduce.sh")

FAKE_PYTHON = """#!/usr/bin/env bash
case "${1:-}" in
  scripts/plot_*) echo "$*" >>"$PLOTS"; exit 0 ;;
  scripts/report.py) exit 0 ;;
esac
exec /usr/bin/python3 "$@"
"""

FAKE_BIN = """#!/usr/bin/env bash
# --status as the real binary answers it: every run completed, or an error for a non-sweep folder.
case "$1 ${2:-}" in
  "--version ") echo "stacklab 0.0.0-test"; exit 0 ;;
  "sweep --status") shift 2 ;;
  *) echo "fake stacklab: unexpected $*" >&2; exit 1 ;;
esac
echo "status of: $*"
for d in "$@"; do
  [[ -f "$d/manifest.json" ]] || { echo "error: $d: not a sweep directory (no manifest.json)" >&2; exit 1; }
  echo "sweep $(basename "$d"): 4 runs in $d (local executor): completed 4"
done
"""


class ReportOnlyOnAStudyWithoutItsTextSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        for name, text in (("python3", FAKE_PYTHON), ("stacklab", FAKE_BIN)):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        self.plots = os.path.join(d, "plots")
        self.env = dict(os.environ, STACKLAB_PYTHON=os.path.join(d, "python3"),
                        STACKLAB_BIN=os.path.join(d, "stacklab"), PLOTS=self.plots)
        self.out = os.path.join(d, "study")
        names = subprocess.run(["/usr/bin/python3", "scripts/tier.py", "list", "quick"], cwd=REPO, text=True,
                               capture_output=True, check=True).stdout.strip().split(", ")
        self.assertIn("text_point", names)
        self.ran = [n for n in names if n != "text_point"]
        for n in self.ran:  # every sweep but the text one ran and completed
            os.makedirs(os.path.join(self.out, n))
            with open(os.path.join(self.out, n, "manifest.json"), "w") as f:
                json.dump({"name": n, "runs": []}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def report_only(self):
        r = subprocess.run(["bash", REPRODUCE, "--tiny", "--report-only", "--out", self.out], cwd=REPO, env=self.env,
                           capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout + r.stderr

    def test_it_names_the_absent_text_sweep_and_why_not_an_incomplete_run(self):
        rc, out = self.report_only()
        self.assertEqual(rc, 0, out)
        self.assertNotIn("not every run completed", out)
        self.assertIn(f"reproduce: text_point: not run (no {self.out}/text_point/manifest.json): it reads tiny "
                      "Shakespeare, and a --tiny study skips its text sweeps", out)
        status = next(line for line in out.splitlines() if line.startswith("status of: "))
        self.assertEqual(status.split()[2:], [os.path.join(self.out, n) for n in self.ran])
        with open(self.plots) as f:
            plotted = f.read()
        self.assertNotIn("text_point", plotted)  # not plotted either ("no figures" said of it before)
        self.assertIn(os.path.join(self.out, "probe_grid"), plotted)

    def test_a_sweep_that_ran_with_a_run_not_completed_is_still_said(self):
        with open(os.path.join(self.tmp.name, "stacklab"), "a") as f:
            f.write("exit 1  # --status: a run failed or changed\n")
        rc, out = self.report_only()
        self.assertIn("not every run completed (see above)", out)


if __name__ == "__main__":
    unittest.main()
