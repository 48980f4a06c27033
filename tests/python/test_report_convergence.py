"""The report's front page and convergence section (report/: front.py, convergence.py,
plot_convergence.py) on fabricated sweeps written into a temp OUT: the headline figure opens report.md
and report.html before any table; the verdict table holds the fabricated verdicts at H and 4H; a short
"no residual stays on the plateau" that the long horizon reverses is named in the summary; without the
converge sweeps the section is one line with the command; findings.json has "convergence".
Fabricated unigram 3.412: escaped means val <= 3.312."""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

import fabricate
from fabricate import curve, long_run

from stacklab.studies import convergence as cv
from stacklab import report
from stacklab.studies import prepost_map as stability_map
from stacklab.report import convergence as rc
from stacklab.report import front as report_front
from stacklab.studies.findings import GRID_WIRINGS, Training

DEPTHS = (2, 8, 32)
SEEDS = (20, 21, 22)
# The fabricated runs follow configs/experiments/convergence_rules.json (its horizons, seeds and rates): the
# judge does not judge a run whose settings differ from the rules' (issue 60).
RULES = cv.load_rules()
H, LONG = RULES["horizon"]["measured"]["H"], RULES["extend_factor"] * RULES["horizon"]["measured"]["H"]


def rate(w, d, source="synthetic"):
    """The rules' rate of a wiring at a depth (rates.<source>)."""
    return RULES["rates"][source][w][str(d)]


def short_run(w, d, s):
    """train_grid at 150 steps: residual stacks end at 3.0 (trained), the others on the plateau."""
    res = w.endswith("-res")
    r = fabricate.run(w, d, 1e-3, s, 3.0 + 0.01 * s if res else 3.43 + 0.001 * s,
                      evals=[(0, 3.45), (75, 3.3 if res else 3.44), (150, 3.0 + 0.01 * s if res else 3.43)])
    r.summary["steps"] = 150
    r.config["model"].update(init="scaled", norm="none" if w.startswith("none-") else "layernorm",
                             residual=res, norm_position=w.split("-")[0] if w[:3] in ("pre", "pos") else "pre")
    return r


def converge_sweeps(text=True, h=H, long=LONG, rate=rate):
    """converge_synth at H: residual stacks converge (one x + f(x) seed at L=32 diverges), without a
    residual L=2 escapes at 300 and L=8, 32 never within H; converge_synth_long at 4H: L=8 escapes at
    2000-2200 (100 steps a seed apart) and converges, L=32 never. converge_text (2000 steps): pre-norm
    converges, f(layernorm(x)) never escapes. h, long, rate(wiring, depth, source): the rules' by default
    (test_report_unchanged keeps the fixture it was pinned on)."""
    conv = []
    for w in GRID_WIRINGS:
        for d in DEPTHS:
            for s in SEEDS:
                esc = 100 + 50 * (s - 20) if w.endswith("-res") else 300 if d == 2 else None
                status = "diverged" if (w, d, s) == ("none-res", 32, 22) else "completed"
                conv.append(long_run(w, d, rate(w, d), s, curve(h, 50, esc, tau=50), status=status))
    ext = [long_run(w, d, rate(w, d), s, curve(long, 50, 2000 + 100 * (s - 20) if d == 8 else None, tau=50))
           for w in GRID_WIRINGS if w.endswith("-nores") for d in (8, 32) for s in SEEDS]
    out = {"converge_synth": fabricate.FakeSweep("converge_synth", conv),
           "converge_synth_long": fabricate.FakeSweep("converge_synth_long", ext)}
    if text:
        txt = [long_run(w, d, rate(w, d, "text"), s, curve(2000, 50, 200 if w.endswith("-res") else None, tau=50),
                        source="text")
               for w in ("pre-layernorm-res", "pre-layernorm-nores") for d in DEPTHS for s in SEEDS]
        out["converge_text"] = fabricate.FakeSweep("converge_text", txt)
    return out


def base_sweeps():
    probes = [fabricate.probe(w, d, [0.1 * (k + 1) for k in range(d)], [0.5] * (d + 1))
              for w in GRID_WIRINGS for d in DEPTHS]
    return {"probe_grid": fabricate.FakeSweep("probe_grid", probes),
            "train_grid": fabricate.FakeSweep("train_grid", [short_run(w, d, s) for w in GRID_WIRINGS
                                                             for d in DEPTHS for s in range(3)])}


def section_of(md, anchor):
    """The Markdown from <a id="anchor"> to the next anchor of a section at the same or a higher level."""
    body = md.split(f'<a id="{anchor}"></a>', 1)[1]
    return body.split("\n<a id=", 1)[0] if anchor == "summary" else body


class Written(unittest.TestCase):
    """One report written from fabricated sweeps in a temp OUT."""
    converge = True

    @classmethod
    def setUpClass(cls):
        cls.root = tempfile.mkdtemp(prefix="report36-")
        sweeps = base_sweeps()
        if cls.converge:
            sweeps.update(converge_sweeps())
        with contextlib.redirect_stdout(io.StringIO()):  # the verdicts it prints
            md_path, html_path, cls.fj = report.write_report(cls.root, sweeps)
        with open(md_path, encoding="utf-8") as f:
            cls.md = f.read()
        with open(html_path, encoding="utf-8") as f:
            cls.html = f.read()
        with open(os.path.join(cls.root, "findings.json"), encoding="utf-8") as f:
            cls.fj_file = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)


class FrontPage(Written):
    def test_report_md_opens_with_the_headline_figure_before_any_table_or_method(self):
        lines = self.md.splitlines()
        fig = next(i for i, ln in enumerate(lines) if ln.startswith("!["))
        table = next(i for i, ln in enumerate(lines) if ln.startswith("|"))
        count = next(i for i, ln in enumerate(lines) if "completed training runs" in ln)
        self.assertEqual(lines[0], "# Why deep stacks need residuals and norms: measured")
        self.assertLess(fig, 5)
        self.assertLess(fig, table)
        self.assertLess(fig, count)
        self.assertIn("figures/front/final_loss_vs_depth_horizons.png", lines[fig])
        caption = lines[fig + 2]
        for part in ("synthetic short 150 steps", f"synthetic long {H} steps", f"synthetic extended {LONG} steps",
                     "text long 2000 steps"):
            self.assertIn(part, caption)
        self.assertTrue(os.path.isfile(os.path.join(self.root, "figures", "front", "final_loss_vs_depth_horizons.png")))

    def test_report_html_shows_the_same_order(self):
        img = self.html.index("<img")
        self.assertLess(img, self.html.index("<table"))
        self.assertLess(img, self.html.index("completed training runs"))
        self.assertLess(self.html.index("<strong>Do deep stacks without a residual"), self.html.index("<table"))

    def test_the_paragraph_answers_with_the_runs_numbers(self):
        para = next(p for p in self.md.split("\n\n") if p.startswith("**Do deep stacks"))
        # L=8 escapes at 4H at 2000, 2100, 2200 over the seeds; L=32 never within 4H
        self.assertIn(f"`f(layernorm(x))`: L=2 converged within {H}, escape step 300 (seeds 300); L=8 converged "
                      f"within {LONG}, escape step 2100 (seeds 2000-2200); L=32 never escaped within {LONG}", para)
        self.assertIn("At 150 steps on the synthetic source", para)
        self.assertIn("every wiring without a residual stays on the plateau", para)
        self.assertIn("reversed at the long horizon: seen -> not seen", para)
        self.assertNotIn("was not run", para)


class Section(Written):
    def table_row(self, formula):
        sec = section_of(self.md, "convergence-synthetic").split("<a id=", 1)[0]
        header = next(ln for ln in sec.splitlines() if ln.startswith("| wiring |"))
        row = next(ln for ln in sec.splitlines() if ln.startswith(f"| `{formula}` |"))
        cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in (header, row)]
        return dict(zip(*cells))

    def test_the_verdict_table_has_the_fabricated_verdicts_at_H_and_4H(self):
        row = self.table_row("f(layernorm(x))")
        self.assertEqual(row["L=2"], f"{H} steps: **converged** (3 converged); final 1.0000 (1.0000-1.0000); lr 0.0003")
        self.assertEqual(row["L=8"].split("<br>")[0][:45], f"{H} steps: **never escaped** (3 never escape")
        self.assertTrue(row["L=8"].split("<br>")[1].startswith(f"{LONG} steps: **converged** (3 converged)"),
                        row["L=8"])
        self.assertTrue(row["L=32"].split("<br>")[1].startswith(f"{LONG} steps: **never escaped**"), row["L=32"])
        self.assertTrue(self.table_row("x + f(layernorm(x))")["L=32"].startswith(f"{H} steps: **converged**"))
        self.assertTrue(self.table_row("x + f(x)")["L=32"].startswith(
            f"{H} steps: **converged** (2 converged, 1 diverged)"), self.table_row("x + f(x)")["L=32"])

    def test_each_source_has_its_table_fits_and_figures(self):
        for src in ("synthetic", "text"):
            self.assertIn(f'<a id="convergence-{src}"></a>', self.md)
            self.assertTrue(os.path.isfile(os.path.join(self.root, "figures", "convergence", f"loss_curves_{src}.png")))
            self.assertTrue(os.path.isfile(os.path.join(self.root, "figures", "convergence",
                                                        f"escape_step_fit_{src}.png")))
        self.assertIn("- pre-layernorm-nores (synthetic): median escape step L=2: 300", self.md)
        self.assertIn("**grows, form not told apart (2 depths)**", self.md)
        self.assertIn("- pre-layernorm-nores (text): median escape step L=2: > 2000", self.md)

    def test_pre_vs_post_shows_the_short_horizon_on_the_same_cells(self):
        sec = section_of(self.md, "convergence-synthetic").split("<a id=", 1)[0]
        self.assertIn("The same cells at the short horizon (train_grid's cells at L=32, lr 0.001): rule P **not run**; "
                      "init scaled: **not told apart**; init xavier: **not run**.", sec)

    def test_a_reversal_is_named_in_the_summary_and_nothing_is_dropped(self):
        summary = section_of(self.md, "summary")
        row = next(ln for ln in summary.splitlines() if ln.startswith("| [F3ii long]") and "(synthetic)" in ln)
        self.assertIn("short: seen; long: not seen; **reversed at the long horizon: seen -> not seen**", row)
        self.assertIn("1 of 8 short-horizon statements reversed at the long horizon: F3ii (synthetic)", summary)
        self.assertIn("no verdict is dropped", summary)

    def test_a_short_verdict_this_folder_lacks_says_where_it_was_measured(self):
        sec = section_of(self.md, "convergence-short-long")
        row = next(ln for ln in sec.splitlines() if ln.startswith("| finding 3 (ii)") and "| text |" in ln)
        self.assertIn("not in this output folder: docs/study.md, 'Measured on tiny Shakespeare'", row)
        self.assertIn("**seen**", row.split("|")[4])  # long: f(layernorm(x)) never escaped on text

    def test_findings_json_has_the_convergence_verdicts(self):
        c = self.fj_file["convergence"]
        self.assertTrue(c["present"])
        by = {(p["source"], p["wiring"], p["depth"], p["horizon"]): p["verdict"] for p in c["points"]}
        self.assertEqual(by[("synthetic", "pre-layernorm-nores", 8, H)], "never escaped")
        self.assertEqual(by[("synthetic", "pre-layernorm-nores", 8, LONG)], "converged")
        self.assertEqual(by[("text", "pre-layernorm-res", 32, 2000)], "converged")
        self.assertEqual(c["reversals"], [{"id": "F3ii", "source": "synthetic",
                                           "note": "reversed at the long horizon: seen -> not seen"}])
        fit = next(f for f in c["escape_fits"] if (f["source"], f["wiring"]) == ("synthetic", "none-nores"))
        self.assertEqual([r["median"] for r in fit["rows"]], [300, 2100, None])


class NotRun(Written):
    converge = False

    def test_the_section_is_one_line_with_the_command(self):
        sec = section_of(self.md, rc.ANCHOR).split("\n<a id=", 1)[0]
        paras = [p.strip() for p in sec.split("\n\n")[1:] if p.strip()]
        self.assertEqual(paras, ["The convergence study (issue 36: 10-30x the steps) was not run: "
                                 "`bash scripts/reproduce.sh --converge` runs it."])

    def test_the_front_page_says_what_the_short_horizon_shows_and_that_the_long_was_not_run(self):
        lines = self.md.splitlines()
        self.assertTrue(lines[2].startswith("![figures/front/"), lines[:4])
        para = next(p for p in self.md.split("\n\n") if p.startswith("**Do deep stacks"))
        self.assertIn("every residual wiring leaves the plateau at L=2, 8, 32 (final val loss 3.000-3.020", para)
        self.assertIn("was not run: `bash scripts/reproduce.sh --converge` runs it", para)
        self.assertNotIn("[F3ii long]", self.md)

    def test_findings_json_says_not_run(self):
        self.assertEqual(self.fj_file["convergence"], {"present": False, "how": rc.COMMAND, "rules": rc.RULES_FILE})


class ExtensionStillRunning(unittest.TestCase):
    # Pins issue 48 item 4: a --report-only while the extension runs (no seed finished at 4H) said
    # "never escaped within 4000" in the fit and the front paragraph, and "4000 for the stacks continued".
    def test_the_fit_and_the_paragraph_use_the_longest_horizon_with_finished_seeds(self):
        sweeps = converge_sweeps(text=False)
        running = [long_run(w, d, rate(w, d), s, curve(1500, 50, None), status="running")
                   for w in GRID_WIRINGS if w.endswith("-nores") for d in (8, 32) for s in SEEDS]
        for r in running:
            r.config["train"]["max_iters"] = LONG
        sweeps["converge_synth_long"] = fabricate.FakeSweep("converge_synth_long", running)
        study = cv.judge(sweeps, {"syn_tr": None, "text_tr": None, "syn_map": None, "syn_map_name": "",
                                  "text_map": None, "text_map_name": ""})
        para = report_front.long_sentence("synthetic", study, rc.formulas(study.runs), "150")
        self.assertNotIn(str(LONG), para)
        self.assertIn(f"`f(layernorm(x))`: L=2 converged within {H}, escape step 300 (seeds 300); L=8 never escaped "
                      f"within {H}; L=32 never escaped within {H}", para)
        fit = study.fits[("synthetic", "pre-layernorm-nores")]
        self.assertEqual([(d, h) for d, _, h, _, _ in fit.rows], [(2, H), (8, H), (32, H)])
        self.assertNotIn(str(LONG), rc.fit_text(fit))
        at = {(p.depth, p.horizon): p for p in study.points if p.wiring == "pre-layernorm-nores"}
        self.assertEqual(at[(32, LONG)].verdict, "not judged")


class ShortAgainstLongOnTheMap(unittest.TestCase):
    def test_post_lower_at_150_steps_reversed_when_pre_ends_lower_at_convergence(self):
        rules = rc.cv.load_rules()
        short_runs = [fabricate.map_run(v, "scaled", 32, 1e-3, s, "trained", final=f)
                      for v, f in (("pre", 3.05), ("post", 2.90)) for s in range(3)]
        short_runs += [fabricate.map_run(v, "xavier", 32, 1e-3, s, o)
                       for v, o in (("pre", "trained"), ("post", "plateau")) for s in range(3)]
        tr = Training([fabricate.FakeSweep("train_grid", [])])
        short, where, _ = cv.short_statements(tr, None, stability_map.build(short_runs), "map_core", None, "text_map",
                                              rules)
        self.assertEqual((short[("P", "synthetic")], short[("post_lower", "synthetic")]), ("seen", "seen"))
        self.assertEqual(where[("post_lower", "synthetic")], "map_core's cells at L=32, lr 0.001")
        long_runs = [long_run(w, 32, 1e-3, s, [(0, 3.45), (H, v + 0.001 * (s - 20))], init=i)
                     for i, finals in (("scaled", (0.80, 0.90)), ("xavier", (0.85, 3.44)))
                     for w, v in zip(("pre-layernorm-res", "post-layernorm-res"), finals) for s in SEEDS]
        long_runs += [long_run("none-res", 32, 1e-3, s, [(0, 3.45), (H, 0.5)]) for s in SEEDS]  # x + f(x): no map
        pp = rc.cv.pre_post(long_runs, rules, "synthetic")
        self.assertEqual(pp.lower["scaled"], "pre lower")
        rows = {r[0]: r for r in rc.cv.compare(short, rc.cv.long_statements([], {"synthetic": pp}, rules), rules)}
        self.assertEqual(rows["post_lower"][3:], ("seen", "not seen", "reversed at the long horizon: seen -> not seen"))
        self.assertEqual(rows["P"][5], "")

    def test_a_run_without_a_norm_is_no_map_wiring(self):
        self.assertIsNone(stability_map.wiring_of(long_run("none-res", 32, 1e-3, 20, [(0, 3.45)])))
        self.assertEqual(stability_map.wiring_of(long_run("pre-layernorm-res", 32, 1e-3, 20, [(0, 3.45)])), "pre")


if __name__ == "__main__":
    unittest.main()
