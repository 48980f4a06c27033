"""The figures built from fabricated data (scripts/stacklab/plots/run.py, plot_study.py): one colour per
series key in every panel, no text label over another, no series hidden under another."""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest
import warnings
from unittest import mock

import fabricate
from full_run import full_run_only
import matplotlib.pyplot as plt
import numpy as np
from stacklab.studies import claims, prepost_map as stability_map
from stacklab.plots import common as plot_common, compare as plot_compare, run as plot_run, study as plot_study
from stacklab.runs import runlog
from stacklab.plots import convergence as plot_convergence, escape_law as plot_escape_law, prepost_map as map_plot
from stacklab.studies import convergence as cv
from stacklab.studies.escape import fit as law

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "run_small")


def colours_by_label(fig):
    """{legend label: {colours}} over every axes' lines and the figure legend's handles."""
    out = {}
    pairs = [(ln.get_label(), ln) for ax in fig.axes for ln in ax.get_lines()]
    for leg in fig.legends:
        handles = getattr(leg, "legend_handles", None) or leg.legendHandles  # renamed in matplotlib 3.7
        pairs += [(t.get_text(), h) for t, h in zip(leg.get_texts(), handles)]
    for lab, ln in pairs:
        if lab and not lab.startswith("_") and isinstance(ln, plt.Line2D):
            out.setdefault(lab, set()).add(tuple(round(c, 4) for c in plt.matplotlib.colors.to_rgba(ln.get_color())))
    return out


class LayerMetrics(unittest.TestCase):
    def test_each_step_keeps_its_colour_in_every_panel(self):
        run = runlog.load_run(FIXTURE)
        recs = plot_run.choose_layer_records(run, None)
        self.assertIsNone(recs[0].get("update_ratio"))  # null at step 0: the panel draws 2 of 3 steps
        fig = plot_run.layer_metrics_figure(run, recs)
        by = colours_by_label(fig)
        self.assertEqual(sorted(by), sorted(f"step {r['step']}" for r in recs))
        for lab, cols in by.items():
            self.assertEqual(len(cols), 1, f"{lab} drawn in {len(cols)} colours")
        plt.close(fig)


class Labels(unittest.TestCase):
    def diverged_at_step_1(self):
        run = fabricate.run("none-nores", 8, 1e-2, 0, None, status="diverged", diverged_step=1)
        run.records["train"] = [{"step": 0, "kind": "train", "loss": 3.47},
                                {"step": 1, "kind": "train", "loss": 5000.0}]
        return run

    def test_no_label_of_the_loss_figure_covers_another(self):
        fig = plot_run.loss_figure(self.diverged_at_step_1())
        self.assertEqual(plot_common.overlapping_texts(fig), [])
        plt.close(fig)

    def test_the_divergence_step_is_named(self):
        fig = plot_run.loss_figure(self.diverged_at_step_1())
        names = [t.get_text() for t in fig.axes[0].get_legend().get_texts()] + [t.get_text() for t in fig.axes[0].texts]
        self.assertTrue(any("diverged (step 1)" in n for n in names), names)
        plt.close(fig)

    def test_a_completed_run_with_a_huge_loss_is_not_marked_diverged(self):
        run = self.diverged_at_step_1()
        run.summary["status"] = "completed"
        fig = plot_run.loss_figure(run)
        names = [t.get_text() for t in fig.axes[0].get_legend().get_texts()] + [t.get_text() for t in fig.axes[0].texts]
        self.assertFalse(any("diverged" in n for n in names), names)
        plt.close(fig)


def lr_runs():
    """Two no-residual wirings with identical losses (the plateau) at 3 rates, L=2 and L=8; one
    diverged seed; at lr 1e-2 two completed means far above the axis at the same rate."""
    runs = []
    for d in (2, 8):
        for w in ("pre-layernorm-nores", "post-layernorm-nores"):
            for lr in (1e-3, 3e-3):
                runs += [fabricate.run(w, d, lr, s, 3.437) for s in range(3)]
            runs += [fabricate.run(w, d, 1e-2, s, 30.0 + s) for s in range(2)]
    runs.append(fabricate.run("none-nores", 8, 1e-2, 1, None, status="diverged", diverged_step=133))
    runs += [fabricate.run("none-nores", 8, lr, 0, 3.436) for lr in (1e-3, 3e-3)]
    return runs


class LossVsLearningRate(unittest.TestCase):
    def setUp(self):
        self.fig = plot_study.loss_vs_lr_figure(lr_runs())

    def tearDown(self):
        plt.close(self.fig)

    def test_coincident_series_stay_visible(self):
        for ax in self.fig.axes:
            lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
            self.assertGreaterEqual(len(lines), 2)
            for i, a in enumerate(lines):
                for b in lines[i + 1:]:
                    same_place = (list(a.get_xdata()) == list(b.get_xdata())
                                  and list(a.get_ydata()) == list(b.get_ydata()))
                    same_look = (a.get_marker(), a.get_linestyle()) == (b.get_marker(), b.get_linestyle())
                    self.assertFalse(same_place, f"{a.get_label()} drawn exactly on {b.get_label()}")
                    self.assertFalse(same_look, f"{a.get_label()} looks like {b.get_label()}")

    def test_each_wiring_keeps_its_colour_in_every_panel(self):
        for lab, cols in colours_by_label(self.fig).items():
            self.assertEqual(len(cols), 1, f"{lab} drawn in {len(cols)} colours")

    def test_no_label_covers_another(self):
        self.assertEqual(plot_common.overlapping_texts(self.fig), [])

    def test_a_diverged_run_is_shown_by_its_status_and_a_high_loss_is_not_called_diverged(self):
        legend = " ".join(t.get_text() for leg in self.fig.legends for t in leg.get_texts())
        self.assertIn("diverged: 1 run(s) (summary.json status)", legend)
        title = self.fig._suptitle.get_text()
        self.assertIn("above the axis", title)
        self.assertNotIn("diverged", title)


class DepthFigures(unittest.TestCase):
    def test_the_per_layer_figures_leave_out_exactly_the_runs_whose_summary_says_diverged(self):
        ok = fabricate.run("none-nores", 8, 1e-2, 0, 3.46)
        huge = fabricate.run("none-nores", 8, 1e-2, 2, 24967.77)  # completed: the trainer's call
        div = fabricate.run("none-nores", 8, 1e-2, 1, None, status="diverged", diverged_step=133)
        note = set()
        self.assertEqual(plot_compare.layer_figure_runs([ok, huge, div], note), [ok, huge])
        self.assertEqual(len(note), 1)


def runs_with_empty_cells():
    """Training runs whose seed summaries have empty columns: block 0's gradient 0 in every seed
    (float32 underflow) and the first stream boundary's RMS 0; the deepest stack's seeds evaluated
    at different steps, one eval's loss null."""
    runs = []
    for d in (2, 8):
        for s in range(2):
            evals = [(0, 3.47), (25 + 5 * s, 3.3 if s else None), (50, 3.2)]
            r = fabricate.run("pre-layernorm-res", d, 1e-3, s, 3.2, evals=evals)
            r.records["layers"] = [{"step": 0, "kind": "layers", "grad_norm": [0.0] + [1e-3] * (d - 1),
                                    "rank_ratio": [1.0] * (d + 1), "act_rms": [0.0] + [1.0] * d}]
            runs.append(r)
    return runs


class NoWarnings(unittest.TestCase):
    """A figure built from a run set with empty cells draws gaps and says nothing to the user:
    no numpy RuntimeWarning ("Mean of empty slice", "All-NaN slice encountered", log of 0)."""

    def test_the_study_figures_raise_no_runtime_warning(self):
        runs = runs_with_empty_cells()
        with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
            warnings.simplefilter("error")
            written, note = [], set()
            plot_compare.plot_grad_by_block(runs, 0, out, written, note)
            plot_compare.plot_ratio(runs, 0, out, written, note)
            plot_compare.plot_rank(runs, 0, out, written, note)
            plot_compare.plot_last_grad(runs, 0, out, written, note)
            plot_compare.plot_layer_metrics(runs, 0, out, written, note)
            plot_study.plot_deepest_curves(runs, out, written)
            plot_study.plot_escape(runs, out, written)
            self.assertIn("loss_curves_deepest.png", [os.path.basename(p) for p in written])
            self.assertIn("grad_norm_by_block.png", [os.path.basename(p) for p in written])

    def test_the_stability_map_with_empty_cells_raises_no_runtime_warning(self):
        runs = [fabricate.map_run("pre", "xavier", 8, 1e-3, 0, "diverged"),
                fabricate.map_run("post", "scaled", 32, 1e-2, 0, "trained")]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fig = map_plot.map_figure(stability_map.build(runs, claims.outcome))
            fig.canvas.draw()
        plt.close(fig)

    def test_column_summary_leaves_an_empty_column_a_gap(self):
        a = np.array([[0.0, 1.0, np.nan], [0.0, 4.0, np.nan]])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mean, lo, hi = plot_common.column_summary(a, geometric=True)
            plain = plot_common.column_summary(a)
        self.assertTrue(np.isnan(mean[0]) and np.isnan(mean[2]))
        self.assertAlmostEqual(mean[1], 2.0)  # geometric mean of 1 and 4
        self.assertEqual((lo[1], hi[1]), (1.0, 4.0))
        self.assertEqual(list(plain[0][:2]), [0.0, 2.5])
        self.assertTrue(np.isnan(plain[0][2]))


def zero_gradient_run(path):
    """The fixture run as a run that cannot learn (a one-character text): every gradient and update
    in its layers records 0."""
    shutil.copytree(FIXTURE, path, ignore=shutil.ignore_patterns("generate.py", "plots"))
    lines = []
    with open(os.path.join(path, "metrics.jsonl"), encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # the fixture's torn last line
            rec = json.loads(line)
            if rec.get("kind") == "layers":
                for k, v in rec.items():
                    if isinstance(v, list) and ("grad" in k or "update" in k):
                        rec[k] = [0.0] * len(v)
            lines.append(json.dumps(rec) + "\n")
    with open(os.path.join(path, "metrics.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(lines)


class ZeroGradients(unittest.TestCase):
    def test_a_run_whose_gradients_are_all_zero_skips_the_empty_panels_with_a_note(self):
        # issue 31 item 15: plot_run.py failed with "zero-size array to reduction operation minimum"
        with tempfile.TemporaryDirectory() as d:
            run_dir, out = os.path.join(d, "run"), os.path.join(d, "plots")
            zero_gradient_run(run_dir)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(plot_run.main([run_dir, "--out", out]), 0)
            text = printed.getvalue()
            self.assertIn("plot_run: skipping grad_norm_by_block.png: no positive finite 'grad_norm'", text)
            self.assertIn("plot_run: skipping stream_grad.png: no positive finite 'stream_grad_norm'", text)
            self.assertIn("plot_run: skipping grad_norm_heatmap.png", text)
            self.assertTrue(os.path.isfile(os.path.join(out, "loss.png")))  # the rest is still drawn


class EscapeDrawnOnce(unittest.TestCase):
    """Escape step against depth is drawn by one function (plots/escape_law.escape_points) in every figure
    of it: the study's, the convergence study's and the escape law's, each with its options."""

    def test_the_three_figures_draw_their_points_through_escape_points(self):
        rows = [(2, 1e-3, 4000, [300, 400, None], 400), (8, 1e-3, 4000, [None, None, None], None)]
        fits = [cv.Fit("synthetic", "none-nores", rows, cv.growth_fit([(2, 400, 4000), (8, None, 4000)], 0.5), {})]
        obs = [law.escaped_at(1, 200, 50), law.escaped_at(2, 600, 50), law.never_within(3, 3000)]
        with tempfile.TemporaryDirectory() as out:
            with mock.patch.object(plot_study, "escape_points", wraps=plot_escape_law.escape_points) as study, \
                    contextlib.redirect_stdout(io.StringIO()):
                plot_study.plot_escape(runs_with_empty_cells(), out, [])
            with mock.patch.object(plot_convergence, "escape_points", wraps=plot_escape_law.escape_points) as conv:
                plt.close(plot_convergence.escape_figure(fits, {}))
            with mock.patch.object(plot_escape_law, "escape_points", wraps=plot_escape_law.escape_points) as lw:
                plot_escape_law.plot_escape_law({"f(x)": (obs, None)}, os.path.join(out, "law.png"))
        self.assertTrue(study.called)
        self.assertEqual(conv.call_args.args[1], {2: [(300, 4000), (400, 4000), (None, 4000)],
                                                  8: [(None, 4000)] * 3})
        self.assertEqual(conv.call_args.kwargs["medians"], {2: 400, 8: None})
        self.assertEqual(lw.call_args.args[1], {1: [(200, 150)], 2: [(600, 550)], 3: [(None, 3000)]})
        self.assertEqual(lw.call_args.kwargs["censored"], "arrow")

    def test_an_arrow_tip_sets_the_top_and_a_censored_median_is_not_drawn(self):
        fig, ax = plt.subplots()
        top = plot_escape_law.escape_points(ax, {2: [(500, 3000), (None, 3000)]}, censored="arrow",
                                            medians={2: None})
        self.assertAlmostEqual(top, 6600.0)
        self.assertEqual(ax.get_lines(), [])
        plt.close(fig)


if __name__ == "__main__":
    unittest.main()


# Pins issue 37 item 9: plot_compare put runs on three data sets on one loss axis without a word.
class MixedDataSets(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def copy_run(self, name, **data):
        """The fixture run under TMP/NAME with these data.* keys."""
        path = os.path.join(self.tmp.name, name)
        shutil.copytree(FIXTURE, path)
        with open(os.path.join(path, "config.json")) as f:
            cfg = json.load(f)
        cfg["data"].update(data)
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(cfg, f)
        return path

    def stderr_of(self, paths):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            plot_compare.main([*paths, "--out", os.path.join(self.tmp.name, "out")])
        return err.getvalue()

    def test_runs_on_several_data_sets_are_warned_about(self):
        paths = [self.copy_run("markov"), self.copy_run("markov3", order=3),
                 self.copy_run("text", source="text", path="a/input.txt")]
        err = self.stderr_of(paths)
        self.assertIn("warning: the runs trained on 3 data sets (markov order=2 alpha=0.5 seed=1234 (1 run); "
                      "markov order=3 alpha=0.5 seed=1234 (1 run); text a/input.txt (1 run))", err)

    @full_run_only
    def test_runs_on_one_data_set_are_not(self):
        err = self.stderr_of([self.copy_run("a"), self.copy_run("b")])
        self.assertNotIn("data sets", err)

    @full_run_only
    def test_a_text_file_is_known_by_its_hash_where_provenance_gives_it(self):
        a = self.copy_run("a", source="text", path="input.txt")
        b = self.copy_run("b", source="text", path="/elsewhere/input.txt")
        for p in (a, b):
            with open(os.path.join(p, "provenance.json"), "w") as f:
                json.dump({"data": {"source": "text", "file": {"bytes": 10, "fnv1a64": "ab"}}}, f)
        self.assertEqual(runlog.data_set(runlog.load_run(a))[0], runlog.data_set(runlog.load_run(b))[0])
        self.assertNotIn("data sets", self.stderr_of([a, b]))


# Found with issue 37's last paragraph: --out naming an existing file raised FileExistsError.
class OutIsAFile(unittest.TestCase):
    def test_plot_run_and_plot_compare_say_so_and_exit_2(self):
        with tempfile.NamedTemporaryFile() as f:
            for prog, main in (("plot_run", plot_run.main), ("plot_compare", plot_compare.main)):
                with self.subTest(prog=prog):
                    err = io.StringIO()
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                        code = main([FIXTURE, "--out", f.name])
                    self.assertEqual(code, 2)
                    self.assertIn(f"{prog}: --out {f.name}: exists and is not a folder", err.getvalue())
