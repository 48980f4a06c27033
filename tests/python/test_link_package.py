"""The one set-up step that makes `import stacklab` work from any folder (scripts/link_package.sh):
before it a Python started in another folder without PYTHONPATH cannot import the package, after
it it can (and finds stacklab.load_run), and --remove undoes it. The user site is a temp dir
(PYTHONUSERBASE), so the machine's Python is not changed; a temp venv with the system packages
takes the same step through --python.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "link_package.sh")
PY = "/usr/bin/python3"
PROBE = "import stacklab, os; print(os.path.dirname(stacklab.__file__)); print(stacklab.load_run.__name__)"


def python_elsewhere(py, userbase):
    """(exit code, stdout) of PROBE run in a temp folder with no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONUSERBASE"] = userbase
    with tempfile.TemporaryDirectory() as cwd:
        r = subprocess.run([py, "-c", PROBE], cwd=cwd, env=env, capture_output=True, text=True)
    return r.returncode, r.stdout


@unittest.skipUnless(os.access(PY, os.X_OK), "needs Debian's /usr/bin/python3")
class LinkPackage(unittest.TestCase):
    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="stacklab_userbase_")
        self.env = {**os.environ, "PYTHONUSERBASE": self.base}

    def tearDown(self):
        shutil.rmtree(self.base, ignore_errors=True)

    def test_import_stacklab_works_from_any_folder_after_the_step_and_not_before(self):
        self.assertNotEqual(python_elsewhere(PY, self.base)[0], 0, "stacklab imported before the step")
        subprocess.run(["bash", SCRIPT], env=self.env, check=True, capture_output=True)
        code, out = python_elsewhere(PY, self.base)
        self.assertEqual(code, 0)
        self.assertEqual(out.split(), [os.path.join(REPO, "scripts", "stacklab"), "load_run"])
        subprocess.run(["bash", SCRIPT, "--remove"], env=self.env, check=True, capture_output=True)
        self.assertNotEqual(python_elsewhere(PY, self.base)[0], 0, "stacklab still imports after --remove")

    def test_a_venv_takes_the_same_step_with_its_python(self):
        venv = os.path.join(self.base, "venv")
        r = subprocess.run([PY, "-m", "venv", "--system-site-packages", "--without-pip", venv], capture_output=True)
        if r.returncode:
            self.skipTest(f"no venv module ({r.stderr.decode().strip()[:80]})")
        vpy = os.path.join(venv, "bin", "python3")
        self.assertNotEqual(python_elsewhere(vpy, self.base)[0], 0)
        subprocess.run(["bash", SCRIPT, "--python", vpy], env=self.env, check=True, capture_output=True)
        self.assertEqual(python_elsewhere(vpy, self.base)[0], 0)
        self.assertTrue(any(f == "stacklab.pth" for _, _, fs in os.walk(venv) for f in fs))
        self.assertFalse(os.path.exists(os.path.join(self.base, "lib")), "the venv step wrote the user site")


if __name__ == "__main__":
    unittest.main()
