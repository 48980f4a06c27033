"""scripts/run.sh's closing hint for using the run in PyTorch: the load_run command only when a
Python with torch was found (scripts/find_python.sh --torch), else what to install. Calls the
hint function with run.sh sourced (its main job runs only when executed)."""
import os
import subprocess
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_SH = os.path.join(REPO, "scripts", "run.sh")


def hint(torch_py: str) -> str:
    r = subprocess.run(["bash", "-c", 'source "$1"; load_run_hint /tmp/some_run "$2"', "bash", RUN_SH, torch_py],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"load_run_hint failed ({r.returncode}): {r.stderr}")
    return r.stdout


class RunShHint(unittest.TestCase):
    def setUp(self):
        with open(RUN_SH, encoding="utf-8") as f:
            text = f.read()
        # Checked before sourcing: a run.sh without the guard would start its whole job.
        self.assertIn("load_run_hint()", text, "run.sh must print its PyTorch hint through load_run_hint")
        self.assertIn("if ! (return 0 2>/dev/null); then", text)
        self.assertIn("find_python.sh --torch", text, "the hint must depend on finding torch")

    def test_without_torch_it_says_what_to_install_and_prints_no_failing_command(self):
        out = hint("")
        self.assertIn("apt-get install python3-torch", out)
        self.assertNotIn("-c 'from stacklab import load_run", out)

    def test_with_torch_it_prints_the_command_with_that_python(self):
        out = hint("/opt/py/bin/python3")
        self.assertIn("/opt/py/bin/python3 -c 'from stacklab import load_run; print(load_run(\"/tmp/some_run\"))'",
                      out)


if __name__ == "__main__":
    unittest.main()
