"""The report's sections judge nothing (STYLE.md, "Reports: judge once, then render"): no module of
scripts/stacklab/report/ but its __init__ (which loads the sweeps and calls judge.judge once) calls a
judging function (a finding's or a rule's, an outcome, a fit, a map's cells or facts, the claims'
verdicts, loading runs); each section is a function of the page and the judged result. The checker is
tried first on a snippet that judges, so that a checker that finds nothing cannot pass."""
import ast
import glob
import os
import unittest

from stacklab.report import page

REPORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "stacklab", "report")
JUDGING = {"finding_1", "finding_2", "finding_3", "finding_4", "finding_5", "outcome_of", "outcome", "pre_post",
           "pre_post_map", "point_verdicts", "escape_fits", "growth_fit", "fit_line", "evaluate_all", "map_facts",
           "build", "sweep_runs", "judge", "structure", "text_study", "text_point", "short_horizons", "escape_table",
           "load_probe", "load_entry", "sweep_entries", "compare", "long_statements", "short_statements",
           "majority", "run_outcome", "seed_rule", "branch_sizes", "read_timing",
           # the escape law (studies/escape/: its core, the opt-in study, the fit) and the signal study
           "from_root", "judge_core", "read_wiring", "read_points", "fit_all", "fit_form", "fit_points", "fit_rank",
           "predict", "profile", "falsifier", "best_rates", "supersede", "deep_tests", "path_checks", "pooled_rank",
           "second_knob", "read_table", "read_probe_table", "probe_rows", "rows_of", "finished_runs", "run_escape",
           "load_points", "verdicts", "rank_reading", "judge_tables", "table_points"}


def judging_calls(source: str) -> set:
    calls = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            calls.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None))
    return calls & JUDGING


class RendersOnly(unittest.TestCase):
    def test_the_checker_finds_a_call_that_judges(self):
        self.assertEqual(judging_calls("def cell(v, u):\n    return study_text.outcome_of(v, u)\n"), {"outcome_of"})

    def test_the_checker_finds_the_laws_and_the_signals_judging(self):
        self.assertEqual(judging_calls("st = escape_study.from_root(root)\nss.judge(root, rules)\n"),
                         {"from_root", "judge"})
        self.assertEqual(judging_calls("law.predict(obs, fit, 96)\nss.verdicts(pts, rules)\n"), {"predict", "verdicts"})

    def test_no_section_module_calls_a_judging_function(self):
        paths = sorted(p for p in glob.glob(os.path.join(REPORT, "*.py")) if not p.endswith("__init__.py"))
        self.assertGreater(len(paths), 5)
        for p in paths:
            with open(p, encoding="utf-8") as f:
                self.assertEqual(judging_calls(f.read()), set(), os.path.basename(p))

    def test_every_section_takes_the_page_and_the_result(self):
        for section in page.SECTIONS:
            self.assertEqual(section.__code__.co_varnames[:section.__code__.co_argcount], ("pg", "res"),
                             section.__name__)


if __name__ == "__main__":
    unittest.main()
