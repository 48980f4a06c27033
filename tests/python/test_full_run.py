"""The edit loop's python stage (tests/python/full_run.py): `scripts/test.sh --fast` sets
STACKLAB_FAST_TESTS=1, a test marked @full_run_only is skipped then and run otherwise, and every test
module keeps tests the edit loop runs, so --fast still covers every module."""
import glob
import importlib
import os
import re
import unittest
from unittest import mock

import full_run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_names(module):
    """[(class, method name)] of every test the module's loader finds."""
    out = []

    def walk(suite):
        for t in suite:
            if isinstance(t, unittest.TestSuite):
                walk(t)
            else:
                out.append((type(t), t._testMethodName))
    walk(unittest.defaultTestLoader.loadTestsFromModule(module))
    return out


class FullRunOnly(unittest.TestCase):
    def test_every_test_module_keeps_tests_the_edit_loop_runs(self):
        for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
            name = os.path.basename(path)[:-3]
            with self.subTest(module=name):
                names = test_names(importlib.import_module(name))
                fast = [n for c, n in names if not full_run.is_full_run_only(c, n)]
                self.assertTrue(fast, f"{name}: every test is @full_run_only; --fast would not cover it")

    def test_a_marked_test_is_skipped_only_when_the_edit_loop_asks(self):
        def run(env):
            with mock.patch.dict(os.environ, env):
                mod = importlib.reload(full_run)

                class T(unittest.TestCase):
                    @mod.full_run_only
                    def test_slow(self):
                        pass

                    def test_quick(self):
                        pass
            importlib.reload(full_run)
            result = unittest.TestResult()
            unittest.defaultTestLoader.loadTestsFromTestCase(T).run(result)
            return result.testsRun, [t._testMethodName for t, _ in result.skipped], full_run.is_full_run_only(
                T, "test_slow"), full_run.is_full_run_only(T, "test_quick")
        self.assertEqual(run({full_run.ENV: "1"}), (2, ["test_slow"], True, False))
        self.assertEqual(run({full_run.ENV: "0"}), (2, [], True, False))

    def test_a_marked_class_skips_its_set_up_too(self):
        with mock.patch.dict(os.environ, {full_run.ENV: "1"}):
            mod = importlib.reload(full_run)

            @mod.full_run_only
            class T(unittest.TestCase):
                @classmethod
                def setUpClass(cls):
                    raise AssertionError("setUpClass ran")

                def test_x(self):
                    pass
        importlib.reload(full_run)
        result = unittest.TestResult()
        unittest.defaultTestLoader.loadTestsFromTestCase(T).run(result)
        self.assertEqual((result.errors, len(result.skipped)), ([], 1))
        self.assertTrue(full_run.is_full_run_only(T, "test_x"))

    def test_the_edit_loop_sets_it_for_its_python_stage_and_the_complete_run_does_not(self):
        with open(os.path.join(ROOT, "scripts", "test.sh"), encoding="utf-8") as f:
            text = f.read()
        stage = text.split("stage_python() {", 1)[1].split("\n}\n", 1)[0]
        self.assertEqual(len(re.findall(rf"{full_run.ENV}=1", text)), 2)  # the comment above the stage, and it
        self.assertIn(f"((fast == 0)) || edit_loop=({full_run.ENV}=1)", stage)
        self.assertIn('env MPLBACKEND=Agg "${edit_loop[@]}"', stage)
        with open(os.path.join(ROOT, "docs", "testing.md"), encoding="utf-8") as f:
            self.assertIn("@full_run_only", f.read())


if __name__ == "__main__":
    unittest.main()
