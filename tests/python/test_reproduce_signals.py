"""scripts/reproduce.sh stopped by a signal while it plots (issue 60, defect 9): SIGINT or SIGTERM to
its process group ends the plot jobs and the script, non-zero and with a message, and runs no
report. The plot scripts are stood in for by a Python that sleeps (STACKLAB_PYTHON: a wrapper that
runs Debian's Python for everything else), the binary by a script that answers --version and
`sweep --status`; --report-only runs no sweep. Before the fix the plot jobs, started in the
background, ignored SIGINT (a non-interactive shell's background jobs do) and the script ended
"done", exit 0.
"""
import os
import signal
import stat
import subprocess
import tempfile
import time
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPRODUCE = os.path.join(REPO, "scripts", "reproduce.sh")
PLOT_SECONDS = 30  # how long each stand-in plot job sleeps: longer than the test waits

FAKE_PYTHON = """#!/usr/bin/env bash
# The plot scripts sleep (their pid kept in $PIDS), report.py says it ran; the rest is Debian's Python.
case "${1:-}" in
  scripts/plot_*) echo $$ >>"$PIDS"; exec /usr/bin/python3 -c "import time; time.sleep(%d)" ;;
  scripts/report.py) echo "report.py ran" >>"$PIDS.report"; exit 0 ;;
esac
exec /usr/bin/python3 "$@"
""" % PLOT_SECONDS

FAKE_BIN = """#!/usr/bin/env bash
case "$*" in
  --version) echo "stacklab 0.0.0-test" ;;
  "sweep --status"*) exit 0 ;;
  *) echo "fake stacklab: unexpected $*" >&2; exit 1 ;;
esac
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie has exited
        return f.read().split(")")[-1].split()[0] != "Z"


class ReproduceStoppedWhilePlotting(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.pids = os.path.join(d, "pids")
        for name, text in (("python3", FAKE_PYTHON), ("stacklab", FAKE_BIN)):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        self.env = dict(os.environ, STACKLAB_PYTHON=os.path.join(d, "python3"), PIDS=self.pids,
                        STACKLAB_BIN=os.path.join(d, "stacklab"), STACKLAB_JOBS="2")
        self.out = os.path.join(d, "study")
        names = subprocess.run(["/usr/bin/python3", "scripts/tier.py", "list", "quick"], cwd=REPO, text=True,
                               capture_output=True, check=True).stdout.strip().split(", ")
        for n in names:  # the quick tier's sweeps ran (their manifests are what the plotting looks for)
            os.makedirs(os.path.join(self.out, n))
            with open(os.path.join(self.out, n, "manifest.json"), "w") as f:
                f.write('{"runs": []}')

    def tearDown(self):
        for pid in self.plot_pids():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.tmp.cleanup()

    def plot_pids(self):
        if not os.path.isfile(self.pids):
            return []
        with open(self.pids) as f:
            return [int(line) for line in f if line.strip()]

    def stop_while_plotting(self, sig):
        """(exit code, output, plot pids) of reproduce.sh --report-only sent `sig` to its process group
        once two plot jobs run."""
        p = subprocess.Popen(["bash", REPRODUCE, "--report-only", "--out", self.out],
                             cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)  # its own process group, as a terminal gives it
        deadline = time.time() + 60
        while len(self.plot_pids()) < 2 and time.time() < deadline and p.poll() is None:
            time.sleep(0.1)
        self.assertEqual(len(self.plot_pids()), 2, "the plot jobs did not start")
        time.sleep(1)  # the script is waiting for them (plot_bg's wait -n)
        os.killpg(p.pid, sig)
        try:
            out, _ = p.communicate(timeout=PLOT_SECONDS // 2)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            self.fail(f"reproduce.sh still running {PLOT_SECONDS // 2} s after {sig.name}: it waits for its "
                      f"plots\n{out}")
        return p.returncode, out, self.plot_pids()

    def check_stopped(self, sig):
        rc, out, pids = self.stop_while_plotting(sig)
        self.assertNotEqual(rc, 0, out)
        self.assertIn(f"plots stopped by a signal ({sig.name})", out)
        self.assertNotIn("reproduce: done", out)
        self.assertFalse(os.path.exists(self.pids + ".report"), "the report ran after the signal")
        time.sleep(0.5)
        self.assertEqual([pid for pid in pids if alive(pid)], [], "plot jobs survived the script")

    def test_sigint_to_its_process_group_stops_the_plot_jobs_and_exits_non_zero(self):
        self.check_stopped(signal.SIGINT)

    def test_sigterm_to_its_process_group_stops_the_plot_jobs_and_exits_non_zero(self):
        self.check_stopped(signal.SIGTERM)


if __name__ == "__main__":
    unittest.main()
