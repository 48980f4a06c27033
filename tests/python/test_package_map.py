"""The analysis package by role (issue 58): every module lives in runs/, studies/, plots/ or report/
(or is one of the package's own few), the package's map names every module, and the old flat names
(stacklab.escape_study, ...) still import as the moved module and still run with `python3 -m`."""
import ast
import glob
import importlib
import os
import subprocess
import sys
import unittest

from stacklab import moved

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "stacklab")
ROLES = ("runs", "studies", "plots", "report")
TOP = {"__init__", "moved", "paths", "tier"}  # the package's own modules (tier: the stub of a move)


def modules():
    """Every module of the package as its path below stacklab/, without .py: 'studies/escape/fit'."""
    paths = glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)
    return sorted(os.path.relpath(p, PACKAGE)[:-3] for p in paths)


class PackageByRole(unittest.TestCase):
    def test_every_module_sits_in_a_role_folder_or_is_one_of_the_few_top_ones(self):
        loose = [m for m in modules() if "/" not in m and m not in TOP]
        self.assertEqual(loose, [], "modules outside runs/, studies/, plots/, report/")
        self.assertEqual({m.split("/")[0] for m in modules() if "/" in m}, set(ROLES))

    def test_the_package_map_names_every_module_but_the_reports(self):
        import stacklab
        doc = stacklab.__doc__
        for m in modules():
            if m.startswith("report/") or m.endswith("__init__"):
                continue
            self.assertIn(os.path.basename(m), doc, f"stacklab/__init__.py's map does not name {m}")

    def test_the_extending_guide_names_every_module(self):
        with open(os.path.join(PACKAGE, "..", "..", "docs", "extending.md"), encoding="utf-8") as f:
            guide = f.read()
        for m in modules():
            name = os.path.basename(m)
            self.assertIn(f"`{name}`", guide, f"docs/extending.md does not name {m}")

    def test_each_role_folder_says_what_it_holds(self):
        for role in ROLES:
            with open(os.path.join(PACKAGE, role, "__init__.py"), encoding="utf-8") as f:
                self.assertTrue(f.read().startswith('"""'), f"{role}/__init__.py has no docstring")


def top_level_imports(module):
    """The modules `module` (a path below stacklab/) imports at its top level, not inside a function."""
    with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    out = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return out


class OneWay(unittest.TestCase):
    """runs <- studies <- plots <- report: a role imports only the roles before it."""
    BANNED = {"runs": ("stacklab.studies", "stacklab.plots", "stacklab.report", "matplotlib"),
              "studies": ("stacklab.plots", "stacklab.report", "matplotlib"),
              "plots": ("stacklab.report",)}

    def test_no_role_imports_one_after_it_and_no_study_draws(self):
        found = []
        for m in modules():
            role = m.split("/")[0]
            for name in top_level_imports(m):
                if any(name == b or name.startswith(b + ".") for b in self.BANNED.get(role, ())):
                    found.append(f"{m} imports {name}")
        self.assertEqual(found, [])


class OldNames(unittest.TestCase):
    def test_every_moved_name_points_at_a_module_that_exists(self):
        for old, new in moved.MOVED.items():
            self.assertTrue(os.path.isfile(os.path.join(PACKAGE, *new.split(".")) + ".py"), f"{old} -> {new}")

    def test_an_old_name_imports_the_same_module_object_as_its_new_name(self):
        for old, new in moved.MOVED.items():
            if old in ("load", "torch_model", "nanogpt_export"):
                continue  # need torch; the mapping is the same code path
            self.assertIs(importlib.import_module(f"stacklab.{old}"), importlib.import_module(f"stacklab.{new}"))

    def test_a_name_that_never_existed_is_still_an_import_error(self):
        with self.assertRaises(ModuleNotFoundError):
            importlib.import_module("stacklab.no_such_module")

    def test_python_m_with_an_old_name_says_where_it_moved_and_runs_it(self):
        env = dict(os.environ, PYTHONPATH=os.path.dirname(PACKAGE))
        p = subprocess.run([sys.executable, "-m", "stacklab.verdicts", "--help"], capture_output=True, text=True,
                           env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("stacklab.verdicts is now stacklab.studies.verdicts", p.stderr)
        self.assertIn("usage:", p.stdout)


if __name__ == "__main__":
    unittest.main()
