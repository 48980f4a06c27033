"""The tiers' sweep lists exist once, in configs/experiments/tiers.json: the judges and the report
import them from stacklab.runs.tier_lists, which reads that file; reproduce.sh gets them from
`scripts/tier.py list` and `files`, which read the same module; no module defines a list of its own.
The orchestration (scripts/tiers/) is apart from the analysis package, which never imports it, and
the old name stacklab.tier still imports and runs, saying where it moved. A malformed tiers.json is
refused with its file and field named."""
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile
import unittest

from stacklab.runs import tier_lists

ROOT = tier_lists.ROOT
SCRIPTS = os.path.join(ROOT, "scripts")
PACKAGE = os.path.join(SCRIPTS, "stacklab")
LISTS = ("quick", "claims", "text", "converge", "signal")


def data_file():
    with open(os.path.join(ROOT, "configs", "experiments", "tiers.json"), encoding="utf-8") as f:
        return json.load(f)


def tier_py(*args):
    p = subprocess.run([sys.executable, os.path.join(SCRIPTS, "tier.py"), *args], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    return p.returncode, p.stdout, p.stderr


def full_from_file(doc):
    return tuple(doc["full"]["sweeps"]) + sum((tuple(doc[n]["sweeps"]) for n in doc["full"]["with"]), ())


class OneSource(unittest.TestCase):
    def test_the_module_holds_the_data_files_lists(self):
        doc = data_file()
        for name in LISTS:
            self.assertEqual(getattr(tier_lists, name.upper() + "_SWEEPS"), tuple(doc[name]["sweeps"]), name)
        self.assertEqual(tier_lists.FULL_SWEEPS, full_from_file(doc))
        self.assertEqual(tier_lists.COVERED_BY, doc["covered_by"]["sweeps"])
        self.assertEqual(tier_lists.EXTENDS, doc["extends"]["sweeps"])
        self.assertEqual(tier_lists.TINY, doc["tiny"]["overrides"])
        self.assertEqual(tier_lists.FULL_ADD_DEPTHS, doc["full_tier"]["add_depths"])

    def test_the_judges_and_the_report_use_the_modules_lists_themselves(self):
        from stacklab.report import figures
        from stacklab.studies import claims, convergence, judge, rules_check, signal
        for mod in (judge, figures, convergence, signal):
            for name in ("CLAIMS_SWEEPS", "CONVERGE_SWEEPS", "SIGNAL_SWEEPS", "TEXT_SWEEPS", "COVERED_BY"):
                if hasattr(mod, name):
                    self.assertIs(getattr(mod, name), getattr(tier_lists, name), f"{mod.__name__}.{name}")
        self.assertIs(judge.CLAIMS_SWEEPS, tier_lists.CLAIMS_SWEEPS)
        self.assertIs(convergence.CONVERGE_SWEEPS, tier_lists.CONVERGE_SWEEPS)
        self.assertIs(signal.SIGNAL_SWEEPS, tier_lists.SIGNAL_SWEEPS)
        self.assertIs(claims.tier.CLAIMS_SWEEPS, tier_lists.CLAIMS_SWEEPS)
        self.assertIs(rules_check.tier.prepared, tier_lists.prepared)

    def test_reproduce_sh_gets_the_same_lists_from_tier_py(self):
        doc = data_file()
        for name in LISTS:
            rc, out, err = tier_py("list", name)
            self.assertEqual(rc, 0, err)
            self.assertEqual(out.strip(), ", ".join(doc[name]["sweeps"]), name)
        rc, out, err = tier_py("list", "full")
        self.assertEqual(out.strip(), ", ".join(full_from_file(doc)))
        with open(os.path.join(SCRIPTS, "reproduce.sh"), encoding="utf-8") as f:
            sh = f.read()
        self.assertIn("scripts/tier.py files", sh)
        self.assertIn("scripts/tier.py list", sh)

    def test_tier_py_files_are_the_data_files_sweeps_in_its_folders(self):
        doc = data_file()
        rc, out, err = tier_py("files", "quick", "--claims", "--text", "--converge", "--signal")
        self.assertEqual(rc, 0, err)
        names = [os.path.basename(p)[:-5] for p in out.split()]
        want = [n for name in LISTS for n in doc[name]["sweeps"]]
        want = [n for n in dict.fromkeys(want) if doc["covered_by"]["sweeps"].get(n) not in want]
        self.assertEqual(names, want)
        rc, out, err = tier_py("files", "full")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split(), [f"configs/experiments/full/{n}.json" for n in full_from_file(doc)])

    def test_every_name_in_the_data_file_is_a_sweep_file(self):
        doc = data_file()
        names = {n for name in LISTS + ("full",) for n in doc[name]["sweeps"]}
        names |= {n for pair in doc["covered_by"]["sweeps"].items() for n in pair}
        names |= {n for pair in doc["extends"]["sweeps"].items() for n in pair}
        names |= set(doc["full_tier"]["own_rates"]) | set(doc["full_tier"]["add_depths"])
        for n in sorted(names):
            s = tier_lists.read_json(os.path.join(tier_lists.QUICK_DIR, n + ".json"))
            self.assertEqual(s.get("name"), n, f"configs/experiments/{n}.json")

    def test_no_python_module_defines_a_tier_list_of_its_own(self):
        lists = {tier_lists.QUICK_SWEEPS, tier_lists.CLAIMS_SWEEPS, tier_lists.TEXT_SWEEPS,
                 tier_lists.CONVERGE_SWEEPS, tier_lists.SIGNAL_SWEEPS}
        for path in glob.glob(os.path.join(SCRIPTS, "**", "*.py"), recursive=True):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in node.elts):
                    values = tuple(e.value for e in node.elts)
                    self.assertNotIn(values, lists, f"{os.path.relpath(path, ROOT)}:{node.lineno}")


class OrchestrationApart(unittest.TestCase):
    def test_no_module_of_the_package_imports_the_orchestration_or_the_old_name(self):
        for path in glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True):
            rel = os.path.relpath(path, PACKAGE)
            if rel == "tier.py":
                continue  # the old name's stub itself
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            package = ["stacklab"] + rel.split(os.sep)[:-1]
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):  # `from ..tier import X` resolved against the module's package
                    base = ".".join(package[:len(package) - node.level + 1] if node.level else [])
                    module = ".".join(x for x in (base, node.module or "") if x)
                    names = [module] + [f"{module}.{a.name}" for a in node.names]
                else:
                    continue
                for n in names:
                    self.assertFalse(n == "tiers" or n.startswith("tiers.") or n == "stacklab.tier",
                                     f"stacklab/{rel}:{node.lineno} imports {n}")

    def test_the_orchestrations_files_stay_small(self):
        for path in glob.glob(os.path.join(SCRIPTS, "tiers", "*.py")):
            with open(path, encoding="utf-8") as f:
                self.assertLessEqual(len(f.readlines()), 400, path)

    def test_python_m_stacklab_tier_says_where_it_moved_and_runs_it(self):
        env = dict(os.environ, PYTHONPATH=SCRIPTS)
        p = subprocess.run([sys.executable, "-m", "stacklab.tier", "list", "signal"], capture_output=True,
                           text=True, env=env, cwd=tempfile.gettempdir(), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("stacklab.tier is now scripts/tier.py", p.stderr)
        self.assertEqual(p.stdout.strip(), ", ".join(tier_lists.SIGNAL_SWEEPS))

    def test_the_old_names_still_import(self):
        from stacklab import tier
        from stacklab.tier import COVERED_BY
        self.assertIs(COVERED_BY, tier_lists.COVERED_BY)
        self.assertIs(tier.prepared, tier_lists.prepared)
        self.assertTrue(callable(tier.main) and callable(tier.cost_model))


class MalformedFile(unittest.TestCase):
    def load(self, doc):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tiers.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            with self.assertRaises(tier_lists.TierError) as e:
                tier_lists.load(path)
            return str(e.exception).replace(path, "tiers.json")

    def test_a_list_that_is_not_names_is_refused_with_its_field(self):
        doc = data_file()
        doc["claims"]["sweeps"] = "claims_probe"
        self.assertEqual(self.load(doc), "tiers.json: field 'claims.sweeps' must be a list of sweep names, "
                                         "got \"claims_probe\"")

    def test_a_missing_field_is_refused_with_its_name(self):
        doc = data_file()
        del doc["tiny"]
        self.assertIn("field 'tiny.overrides' must be an object, got null", self.load(doc))

    def test_the_full_tier_may_add_only_lists_the_file_holds(self):
        doc = data_file()
        doc["full"]["with"] = ["claims", "texts"]
        self.assertIn("field 'full.with' names 'texts'", self.load(doc))

    def test_tier_py_names_the_field_of_a_malformed_file_without_a_traceback(self):
        import shutil
        with tempfile.TemporaryDirectory() as d:  # a checkout of its own: stacklab finds its root from its folder
            for sub in ("stacklab", "tiers"):
                shutil.copytree(os.path.join(SCRIPTS, sub), os.path.join(d, "scripts", sub),
                                ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(os.path.join(SCRIPTS, "tier.py"), os.path.join(d, "scripts"))
            doc = data_file()
            doc["signal"]["sweeps"] = ["signal_probe", 3]
            os.makedirs(os.path.join(d, "configs", "experiments"))
            with open(os.path.join(d, "configs", "experiments", "tiers.json"), "w", encoding="utf-8") as f:
                json.dump(doc, f)
            p = subprocess.run([sys.executable, os.path.join(d, "scripts", "tier.py"), "list", "quick"],
                               capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=""))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("configs/experiments/tiers.json: field 'signal.sweeps' must be a list of sweep names, got "
                      '["signal_probe", 3]', p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_the_checked_in_file_loads(self):
        self.assertEqual(tier_lists.load()["FULL_SWEEPS"], tier_lists.FULL_SWEEPS)


if __name__ == "__main__":
    unittest.main()
