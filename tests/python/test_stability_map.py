"""The stability map (scripts/stacklab/studies/prepost_map.py) on fabricated runs: each run's wiring read
from its config, its outcome by claims.json's definitions, a cell's counts and colour, and the text
generated from the counts where post-norm fails and pre-norm trains, and where it does not."""
import unittest

import fabricate
import matplotlib.pyplot as plt
from stacklab.studies import claims
from stacklab.runs import runlog
from stacklab.plots import prepost_map as map_plot
from stacklab.studies import prepost_map as sm
from stacklab.report import map as report_map

UNI = fabricate.REFS["unigram"]


def local(run):
    return claims.outcome(run)  # claims.json's margin: 0.05


def text_of(data):
    """The map's sentences as the report writes them: what map_facts judged, in report/map.py's words."""
    return report_map.map_text(data, sm.map_facts(data))


def cells(spec):
    """Runs from {(variant, init, depth, lr): [outcome per seed]}."""
    return [fabricate.map_run(v, init, d, lr, s, o) for (v, init, d, lr), outs in spec.items()
            for s, o in enumerate(outs)]


def grid(post_xavier_32, pre_xavier_32=("trained",) * 3, warm=("trained",) * 3, deep=("trained",) * 3):
    """Every wiring at init scaled and xavier, L=8 and 32, lr 1e-3 and 1e-2, 3 seeds, all trained
    except the cells at xavier, L=32, lr 1e-2, which are given."""
    spec = {}
    for v in sm.WIRINGS:
        for init in ("scaled", "xavier"):
            for d in (8, 32):
                for lr in (1e-3, 1e-2):
                    spec[(v, init, d, lr)] = ["trained"] * 3
    spec[("post", "xavier", 32, 1e-2)] = list(post_xavier_32)
    spec[("pre", "xavier", 32, 1e-2)] = list(pre_xavier_32)
    spec[("post-warmup", "xavier", 32, 1e-2)] = list(warm)
    spec[("deepnorm", "xavier", 32, 1e-2)] = list(deep)
    return sm.build(cells(spec), local)


class Outcome(unittest.TestCase):
    def test_the_map_judges_by_claims_outcome(self):
        r = fabricate.map_run("pre", "scaled", 8, 1e-3, 0, "trained", final=UNI - 0.0501)
        self.assertEqual(sm.build([r]).source, "claims.outcome")
        self.assertEqual(sm.build([r]).cell("pre", "scaled", 8, 1e-3).trained, 1)

    def test_trained_is_more_than_the_margin_below_the_unigram_loss(self):
        self.assertEqual(local(fabricate.map_run("pre", "scaled", 8, 1e-3, 0, "trained", final=UNI - 0.0501)),
                         "trained")
        self.assertEqual(local(fabricate.map_run("pre", "scaled", 8, 1e-3, 0, "plateau", final=UNI - 0.05)), "plateau")
        self.assertEqual(local(fabricate.map_run("pre", "scaled", 8, 1e-3, 0, "diverged")), "diverged")

    def test_a_run_that_neither_completed_nor_diverged_is_not_judged(self):
        r = fabricate.map_run("pre", "scaled", 8, 1e-3, 0, "trained")
        r.summary["status"] = "interrupted"
        self.assertEqual(local(r), "incomplete")
        c = sm.build([r], local).cell("pre", "scaled", 8, 1e-3)
        self.assertEqual((c.n, c.unfinished), (0, 1))


class Wiring(unittest.TestCase):
    def test_the_wiring_comes_from_the_config_not_the_path(self):
        for v in sm.WIRINGS:
            r = fabricate.map_run(v, "xavier", 32, 1e-2, 0, "trained")
            r.path = "/fabricated/stability_map/L32-post-s0"  # a misleading name
            self.assertEqual(sm.wiring_of(r), v)

    def test_a_run_outside_the_map_is_left_out(self):
        r = fabricate.map_run("pre", "xavier", 8, 1e-3, 0, "trained")
        r.config["model"]["residual"] = False
        self.assertIsNone(sm.point_of(r))
        self.assertTrue(sm.build([r], local).empty)


class Cells(unittest.TestCase):
    def setUp(self):
        # lr 1e-3: all 3 trained; lr 1e-2: 2 trained, 1 diverged; lr 3e-2: all 3 diverged; L=32 not run.
        self.data = sm.build(cells({("post", "xavier", 8, 1e-3): ["trained"] * 3,
                                    ("post", "xavier", 8, 1e-2): ["trained", "diverged", "trained"],
                                    ("post", "xavier", 8, 3e-2): ["diverged"] * 3,
                                    ("pre", "xavier", 32, 1e-3): ["plateau"] * 3}), local)
        self.fig = map_plot.map_figure(self.data)

    def tearDown(self):
        plt.close(self.fig)

    def drawn(self, gid):
        """(facecolour, text) of the cell drawn with this gid."""
        rect = [p for ax in self.fig.axes for p in ax.patches if p.get_gid() == gid]
        text = [t.get_text() for ax in self.fig.axes for t in ax.texts if t.get_gid() == gid]
        self.assertEqual((len(rect), len(text)), (1, 1), gid)
        return plt.matplotlib.colors.to_hex(rect[0].get_facecolor()), text[0]

    def test_each_cell_counts_its_seeds_and_is_coloured_by_the_majority(self):
        for lr, counts, colour in ((1e-3, "3/0/0", "trained"), (1e-2, "2/1/0", "trained"),
                                   (3e-2, "0/3/0", "diverged")):
            face, text = self.drawn(f"post|xavier|8|{lr:g}")
            self.assertEqual(face, map_plot.COLOURS[colour], lr)
            self.assertEqual(text.splitlines()[0], counts)
        self.assertEqual(self.drawn("pre|xavier|32|0.001")[0], map_plot.COLOURS["plateau"])

    def test_the_mean_final_loss_is_that_of_the_completed_seeds(self):
        self.assertEqual(self.drawn("post|xavier|8|0.001")[1].splitlines()[1], "3.200")
        self.assertEqual(self.drawn("post|xavier|8|0.03")[1].splitlines()[1], "-")  # no completed seed
        self.assertAlmostEqual(self.data.cell("post", "xavier", 8, 1e-2).mean_final, 3.2)

    def test_a_cell_without_runs_says_so(self):
        face, text = self.drawn("post|xavier|32|0.001")
        self.assertEqual((face, text), (map_plot.COLOURS["empty"], "not run"))

    def test_two_outcomes_with_equal_counts_are_a_tie(self):
        c = sm.Cell(trained=1, diverged=1)
        self.assertEqual(c.majority, "tie")


class Facts(unittest.TestCase):
    def test_the_cells_where_post_fails_and_a_fix_rescues_or_not_are_judged_by_majority(self):
        f = sm.map_facts(grid(post_xavier_32=("diverged", "diverged", "trained"), warm=("trained",) * 3,
                              deep=("diverged",) * 3))
        self.assertEqual((f.post_fails, f.pre_fails), ([("xavier", 32, 1e-2)], []))
        self.assertEqual(f.fixes, {"post-warmup": ([("xavier", 32, 1e-2)], []),
                                   "deepnorm": ([], [("xavier", 32, 1e-2)])})
        self.assertEqual(f.totals["diverged"], 2 + 3)
        self.assertEqual(f.decides["post"], {("trained", "diverged"): [(32, 1e-2)]})
        self.assertFalse(f.decides_none)

    def test_without_pre_and_post_nothing_is_said_of_them(self):
        self.assertIsNone(sm.map_facts(sm.build([], local)).post_fails)


class Text(unittest.TestCase):
    def test_post_norm_failing_where_pre_norm_trains_is_said_with_its_cell(self):
        text = " ".join(text_of(grid(post_xavier_32=("diverged", "diverged", "trained"))))
        self.assertIn("Post-norm fails where pre-norm trains at init xavier, L=32, lr 0.01 (post 1/2/0, pre 3/0/0)",
                      text)
        self.assertIn("Warm-up rescues post-norm at init xavier, L=32, lr 0.01", text)
        self.assertIn("DeepNorm rescues post-norm at init xavier, L=32, lr 0.01", text)
        self.assertIn("The init decides for post: trained under scaled, diverged under xavier at L=32, lr 0.01 "
                      "(3/0/0 against 1/2/0).", text)
        self.assertNotIn("Nowhere", text)

    def test_a_rescue_that_fails_is_said(self):
        text = " ".join(text_of(grid(post_xavier_32=("plateau",) * 3, deep=("diverged",) * 3)))
        self.assertIn("DeepNorm does not rescue post-norm at init xavier, L=32, lr 0.01 (post 0/0/3, deepnorm 0/3/0)",
                      text)

    def test_when_post_norm_trains_wherever_pre_norm_does_the_text_says_so(self):
        text = " ".join(text_of(grid(post_xavier_32=("trained",) * 3)))
        self.assertIn("Nowhere in the map does post-norm fail where pre-norm trains.", text)
        self.assertNotIn("rescues", text)
        self.assertIn("The init decides no cell", text)

    def test_cells_the_init_decides_alike_are_one_sentence_per_wiring(self):
        data = sm.build(cells({("post", "scaled", 8, 1e-3): ["trained"] * 3,
                               ("post", "xavier", 8, 1e-3): ["plateau"] * 3,
                               ("post", "scaled", 32, 1e-2): ["trained"] * 3,
                               ("post", "xavier", 32, 1e-2): ["plateau", "plateau", "trained"]}), local)
        lines = [t for t in text_of(data) if t.startswith("The init decides for post")]
        self.assertEqual(lines, ["The init decides for post: trained under scaled, plateau under xavier at "
                                 "L=8, lr 0.001 (3/0/0 against 0/0/3); L=32, lr 0.01 (3/0/0 against 1/0/2)."])

    def test_the_init_decides_only_where_it_turns_training_into_failure(self):
        data = sm.build(cells({("post", "scaled", 32, 1e-2): ["plateau"] * 3,
                               ("post", "xavier", 32, 1e-2): ["diverged"] * 3}), local)
        text = " ".join(text_of(data))
        self.assertNotIn("The init decides for", text)  # plateau vs diverged: both fail
        self.assertIn("The init decides no cell", text)

    def test_pre_norm_failing_where_post_norm_trains_is_said_too(self):
        text = " ".join(text_of(grid(post_xavier_32=("trained",) * 3, pre_xavier_32=("diverged",) * 3)))
        self.assertIn("Pre-norm fails where post-norm trains at init xavier, L=32, lr 0.01 (pre 0/3/0, post 3/0/0)",
                      text)

    def test_without_map_runs_the_text_says_it_was_not_run_and_how_to_run_it(self):
        lines = text_of(sm.build([], local))
        self.assertEqual(len(lines), 1)
        self.assertIn("not run", lines[0])
        self.assertIn("bash scripts/reproduce.sh --claims", lines[0])


if __name__ == "__main__":
    unittest.main()


class BranchSizes(unittest.TestCase):
    """The branch size at init: per (placement, init) at L = 32 the seeds' block means of
    branch_ratio, and the sentence that compares the inits."""

    def probe(self, position, init, per_seed, depth=32):
        r = runlog.Run(path=f"/fabricated/claims_probe/L{depth}-{position}-{init}.json", is_probe=True,
                       has_metrics=True, probe_seeds=len(per_seed))
        r.config = {"model": {"n_layer": depth, "norm_position": position, "init": init}}
        r.probe_per_seed = [{"seed": i, "branch_ratio": v} for i, v in enumerate(per_seed)]
        return r

    def test_each_seed_is_the_mean_over_blocks_and_rows_give_mean_and_range(self):
        runs = [self.probe("post", "xavier", [[0.2, 0.4], [0.3, 0.3]]),
                self.probe("post", "scaled", [[1e-6, 3e-6], [2e-6, None]]),
                self.probe("post", "xavier", [[9.0, 9.0]], depth=8)]  # another depth: left out
        rows = sm.branch_sizes(runs)
        self.assertEqual([(r["position"], r["init"]) for r in rows], [("post", "scaled"), ("post", "xavier")])
        scaled, xavier = rows
        self.assertEqual(scaled["seeds"], [2e-6, 2e-6])  # (1e-6 + 3e-6) / 2; the null entry skipped
        self.assertAlmostEqual(xavier["mean"], 0.3)
        self.assertAlmostEqual(xavier["min"], 0.3)
        self.assertAlmostEqual(xavier["max"], 0.3)
        text = report_map.branch_text(rows)
        self.assertEqual(len(text), 1)
        self.assertIn("scaled 2e-06", text[0])
        self.assertIn("xavier over scaled: 1.5e+05x", text[0])  # 0.3 / 2e-6

    def test_probes_without_the_metric_give_no_row(self):
        self.assertEqual(sm.branch_sizes([self.probe("pre", "xavier", [[], []])]), [])
        self.assertEqual(report_map.branch_text([]), [])
