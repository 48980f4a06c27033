"""The HTML views (scripts/stacklab/plots/views.py) on the committed example run tests/fixtures/run_small:
the plotting step writes view.html beside the PNGs (plot_run.py and plot_compare.py), a page loads
plotly.js from one copy shared by every view written with the same plotly_dir (by a relative path,
never a URL) and holds the run's own numbers, the sweep view starts with at most MAX_PICKED runs
shown, and the report links every view by a relative path (never a URL). Rendering in a browser:
tests/integration/check_views.sh.
"""
import contextlib
import io
import json
import os
import re
import tempfile
import types
import unittest

try:
    import plotly  # noqa: F401 (only whether it imports)
except ImportError:
    raise unittest.SkipTest("needs plotly (apt-get install python3-plotly)")
from full_run import full_run_only
from stacklab.plots import compare as plot_compare, run as plot_run, views
from stacklab.runs import runlog
from stacklab.report import doc as report_doc
from stacklab.report import page as report_page

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "run_small")


def quiet(f, *args):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return f(*args)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def chart_data(path):
    """The data arrays of every Plotly.newPlot call in a page: [[trace dict]]."""
    page = read(path)
    calls = re.findall(r'Plotly\.newPlot\(\s*"[-\w]+",\s*(\[.*?\]),\s*\{"template"', page, re.S)
    return [json.loads(c) for c in calls]


def script_sources(page):
    """The src of every <script src=...> of a page."""
    return re.findall(r'<script src="([^"]*)"', page)


class Views(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name
        self.run = quiet(runlog.load_run, FIXTURE)

    def tearDown(self):
        self.tmp.cleanup()

    def test_plot_run_writes_the_view_beside_the_pngs(self):
        quiet(plot_run.main, [FIXTURE, "--out", self.out])
        self.assertTrue(os.path.isfile(os.path.join(self.out, "view.html")))
        self.assertTrue(os.path.isfile(os.path.join(self.out, "loss.png")))

    def test_plot_compare_writes_the_sweep_view(self):
        quiet(plot_compare.main, [FIXTURE, "--out", self.out])
        page = read(os.path.join(self.out, "view.html"))
        self.assertIn('id="run-picker"', page)
        self.assertIn('value="run_small" onchange="pickRuns()" checked', page)
        heat = chart_data(os.path.join(self.out, "view.html"))[3]  # every run's heatmap, one at a time
        self.assertEqual([t["type"] for t in heat], ["heatmap"])
        self.assertEqual(heat[0]["customdata"][2], [r["grad_norm"][2] for r in self.run.records["layers"]])

    def test_a_run_view_loads_plotly_from_beside_it_and_holds_the_runs_numbers(self):
        from plotly.offline import get_plotlyjs
        path = views.write_run_view(self.run, self.out)
        page = read(path)
        self.assertNotIn(get_plotlyjs()[:2000], page)
        self.assertEqual(script_sources(page), [views.plotly_file_name()])
        self.assertEqual(read(os.path.join(self.out, views.plotly_file_name())), get_plotlyjs())
        self.assertNotRegex(page, r'(src|href)\s*=\s*"(https?:)?//')
        self.assertLess(os.path.getsize(path), 1e6)
        loss, grad, metrics = chart_data(path)
        val = next(t for t in loss if t["name"] == "val loss")
        evals = self.run.records["eval"]
        self.assertEqual(val["x"], [r["step"] for r in evals])
        self.assertEqual(val["y"], [r["val_loss"] for r in evals])  # the fixture's 5 decimals, unchanged
        layers = self.run.records["layers"]
        self.assertEqual(grad[0]["x"], [r["step"] for r in layers])
        self.assertEqual(grad[0]["customdata"][2], [r["grad_norm"][2] for r in layers])  # block 2 over steps
        self.assertIn("block %{y}<br>step %{x}<br>grad_norm %{customdata:.5g}", grad[0]["hovertemplate"])
        self.assertEqual([t["name"] for t in metrics], [d["name"] for d in self.run.layer_metrics
                                                        if any(isinstance(r.get(d["name"]), list) for r in layers)])

    # Pins issue 60 part B: every view carried its own 8.7 MB copy of plotly.js (9 in the default study).
    @full_run_only
    def test_views_written_with_one_plotly_dir_share_one_copy_of_plotly(self):
        from plotly.offline import get_plotlyjs
        figures = os.path.join(self.out, "figures")
        quiet(plot_run.main, [FIXTURE, "--out", os.path.join(figures, "runs", "run_small"), "--plotly-dir", figures])
        quiet(plot_compare.main, [FIXTURE, "--out", os.path.join(figures, "sweep"), "--plotly-dir", figures])
        copies = [os.path.relpath(os.path.join(d, f), self.out) for d, _, files in os.walk(self.out)
                  for f in files if f.endswith(".js")]
        self.assertEqual(copies, [os.path.join("figures", views.plotly_file_name())])
        self.assertEqual(read(os.path.join(figures, views.plotly_file_name())), get_plotlyjs())
        for sub, src in (("runs/run_small", "../../"), ("sweep", "../")):
            page = read(os.path.join(figures, sub, "view.html"))
            self.assertEqual(script_sources(page), [src + views.plotly_file_name()])
            self.assertLess(len(page), 1e6)

    def test_a_view_says_so_when_its_plotly_copy_is_missing(self):
        page = read(views.write_run_view(self.run, os.path.join(self.out, "v"), self.out))
        self.assertIn(f"plotly.js not found at ../{views.plotly_file_name()} (relative to this page)", page)

    # Pins issue 37 item 9: a 1-step run's one train-loss point, in "lines" mode, drew nothing.
    def test_a_one_step_runs_train_loss_is_drawn_as_a_marker(self):
        self.run.records["train"] = self.run.records["train"][:1]
        train = next(t for t in chart_data(views.write_run_view(self.run, self.out))[0]
                     if t["name"] == "train loss (batch)")
        self.assertEqual(len(train["x"]), 1)
        self.assertIn("markers", train["mode"])

    def test_a_metric_spanning_more_than_30x_is_coloured_on_a_log_scale(self):
        self.assertTrue(views.log_scaled([0.01, 0.5, 2.0]))
        self.assertFalse(views.log_scaled([0.1, 0.5, 2.0]))
        self.assertFalse(views.log_scaled([-1.0, 0.5, 100.0]))  # not all positive: linear

    def test_gradients_that_are_all_zero_or_not_finite_draw_as_values_and_gaps(self):
        # float32 underflow (exactly 0) and a diverged step (NaN, inf) must not break the page
        for rec in self.run.records["layers"]:
            rec["grad_norm"] = [0.0, 0.0, float("nan"), float("inf")]
        grad = chart_data(views.write_run_view(self.run, self.out))[1][0]
        self.assertEqual(grad["z"][0], [0.0] * len(self.run.records["layers"]))  # linear colour: no log of 0
        self.assertEqual(grad["z"][2], [None] * len(self.run.records["layers"]))
        self.assertEqual(grad["z"][3], [None] * len(self.run.records["layers"]))

    def test_a_sweep_view_starts_with_at_most_max_picked_runs_shown(self):
        runs = []
        for i in range(views.MAX_PICKED + 3):
            r = quiet(runlog.load_run, FIXTURE)
            r.path = f"/fabricated/run{i:02d}"
            runs.append(r)
        page = read(views.write_sweep_view(runs, self.out))
        self.assertEqual(page.count(" checked>"), views.MAX_PICKED)
        self.assertEqual(page.count('type="checkbox"'), len(runs))

    def test_the_report_links_every_view_by_relative_path(self):
        for sub in ("figures/train_grid", "figures/runs/L8-pre"):
            os.makedirs(os.path.join(self.out, sub))
            open(os.path.join(self.out, sub, "view.html"), "w").close()
        doc = report_doc.Doc()
        report_page.view_links(types.SimpleNamespace(doc=doc), types.SimpleNamespace(root=self.out))
        page = doc.html(self.out, "t")
        self.assertIn('<a href="figures/runs/L8-pre/view.html">figures/runs/L8-pre</a>', page)
        self.assertIn('<a href="figures/train_grid/view.html">figures/train_grid</a>', page)

    def test_only_relative_html_paths_become_links(self):
        self.assertEqual(report_doc.inline_html("[v](figures/a/view.html)"), '<a href="figures/a/view.html">v</a>')
        for text in ("[v](https://x.org/view.html)", "[v](//x.org/view.html)", "[v](figures/a/x.png)"):
            self.assertNotIn("<a ", report_doc.inline_html(text), text)


if __name__ == "__main__":
    unittest.main()
