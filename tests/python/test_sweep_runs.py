"""The runs of a sweep come from one place, its manifest.json (runlog.sweep_entries): every reader of a
sweep (plot_compare, the report, claims, the stability map, tier.py deepest) leaves out the
`<dir>.changed-N` folders that `stacklab sweep --on-change rerun` keeps beside the runs (issue 31,
item 4: a 2-run sweep was plotted as "4 run(s)", a 30-step and a 60-step run averaged into one point).
The sweep dirs here are fabricated on disk from tests/fixtures/run_small.
"""
import contextlib
import io
import json
import os
import shutil
import tempfile
import unittest

from stacklab import report
from tiers import cli as tier
from stacklab.studies import claims, prepost_map as stability_map
from stacklab.plots import compare as plot_compare
from stacklab.runs import runlog

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "run_small")
RUN_IDS = ("L4-pre-layernorm-res-s0", "L4-pre-layernorm-res-s1")


def write_run(path, seed, max_iters=60, init="normal"):
    """A copy of the fixture run with its seed, horizon and init set."""
    shutil.copytree(FIXTURE, path, ignore=shutil.ignore_patterns("generate.py"))
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["train"].update(seed=seed, max_iters=max_iters, name=os.path.basename(path))
    cfg["model"]["init"] = init
    with open(os.path.join(path, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f)


def write_sweep(sweep_dir, mode="train", with_manifest=True):
    """Two runs the manifest lists, plus each one's older self moved aside as <dir>.changed-1
    (another seed and half the steps), as `stacklab sweep --on-change rerun` leaves them."""
    os.makedirs(sweep_dir)
    for i, rid in enumerate(RUN_IDS):
        write_run(os.path.join(sweep_dir, rid), seed=i)
        write_run(os.path.join(sweep_dir, rid + ".changed-1"), seed=7 + i, max_iters=30)
    if with_manifest:
        manifest = {"name": os.path.basename(sweep_dir), "mode": mode, "base": "base.json",
                    "sweep_file": "sweep.json", "executor": "local",
                    "runs": [{"id": rid, "dir": rid, "overrides": [], "seeds": [i], "status": "completed"}
                             for i, rid in enumerate(RUN_IDS)]}
        with open(os.path.join(sweep_dir, "manifest.json"), "w", encoding="utf-8") as f:
            json.dump(manifest, f)


def quiet(fn, *args, **kwargs):
    """fn's result and what it printed on (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        result = fn(*args, **kwargs)
    return result, out.getvalue(), err.getvalue()


class SweepRuns(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)

    def names(self, runs):
        return sorted(os.path.basename(r.path) for r in runs)

    def test_a_sweep_has_the_runs_its_manifest_lists_not_the_changed_folders_beside_them(self):
        d = os.path.join(self.tmp, "sw")
        write_sweep(d)
        runs, _, _ = quiet(runlog.sweep_runs, d)
        self.assertEqual(self.names(runs), list(RUN_IDS))
        self.assertEqual(sorted(r.config["train"]["seed"] for r in runs), [0, 1])
        found, _, _ = quiet(runlog.find_runs, [d])
        self.assertEqual(self.names(found), list(RUN_IDS))
        found, _, _ = quiet(runlog.find_runs, [self.tmp])  # the sweep one level down: still its manifest
        self.assertEqual(self.names(found), list(RUN_IDS))

    def test_a_run_listed_but_not_started_is_left_out_and_the_report_says_so(self):
        d = os.path.join(self.tmp, "sw")
        write_sweep(d)
        shutil.rmtree(os.path.join(d, RUN_IDS[1]))
        runs, _, _ = quiet(runlog.sweep_runs, d)
        self.assertEqual(self.names(runs), [RUN_IDS[0]])
        sweep, _, _ = quiet(report.Sweep, self.tmp, "sw")
        self.assertEqual([r.sweep_id for r in sweep.runs], [RUN_IDS[0]])
        self.assertEqual([rid for rid, _ in sweep.excluded], [RUN_IDS[1]])

    def test_a_folder_without_a_manifest_is_walked_with_a_note_and_without_the_changed_folders(self):
        d = os.path.join(self.tmp, "mine")
        write_sweep(d, with_manifest=False)
        found, _, err = quiet(runlog.find_runs, [d])
        self.assertEqual(self.names(found), list(RUN_IDS))
        self.assertIn("outside any sweep's manifest.json", err)
        self.assertIn("L4-pre-layernorm-res-s0.changed-1: a run moved aside by --on-change rerun; left out", err)
        runs, _, err = quiet(runlog.sweep_runs, d)  # asked for a sweep's runs: none, and why
        self.assertEqual(runs, [])
        self.assertIn("not a sweep directory (no manifest.json)", err)

    def test_a_changed_run_given_by_name_is_still_read(self):
        d = os.path.join(self.tmp, "sw")
        write_sweep(d)
        found, _, _ = quiet(runlog.find_runs, [os.path.join(d, RUN_IDS[0] + ".changed-1")])
        self.assertEqual([r.config["train"]["max_iters"] for r in found], [30])

    def test_a_manifest_without_a_runs_list_gives_no_runs_and_a_warning(self):
        d = os.path.join(self.tmp, "sw")
        write_sweep(d)
        with open(os.path.join(d, "manifest.json"), "w", encoding="utf-8") as f:
            f.write('{"name": "sw"}')
        runs, _, err = quiet(runlog.sweep_runs, d)
        self.assertEqual(runs, [])
        self.assertIn("not a stacklab sweep manifest", err)

    def test_plot_compare_counts_the_sweeps_two_runs_not_four(self):
        d = os.path.join(self.tmp, "sw")
        write_sweep(d)
        rc, out, _ = quiet(plot_compare.main, [d, "--out", os.path.join(self.tmp, "plots")])
        self.assertEqual(rc, 0)
        self.assertIn("plot_compare: 2 run(s)", out)

    def test_the_claims_and_the_stability_map_read_the_manifest(self):
        for name in ("claims_train", stability_map.SWEEP):
            write_sweep(os.path.join(self.tmp, name))
        rs, _, _ = quiet(claims.load_runset, self.tmp)
        self.assertEqual(sorted(r.config["train"]["seed"] for r in rs.runs), [0, 0, 1, 1])
        data, _, _ = quiet(stability_map.load, os.path.join(self.tmp, stability_map.SWEEP))
        cells = list(data.cells.values())
        self.assertEqual(len(cells), 1)
        self.assertEqual(len(cells[0].finals), 2)  # not 4: the changed runs are not seeds of the cell

    def test_tier_deepest_prints_a_run_of_the_manifest(self):
        d = os.path.join(self.tmp, "train_grid")
        write_sweep(d)
        moved = os.path.join(d, RUN_IDS[0] + ".changed-1", "config.json")  # from when the grid went deeper
        with open(moved, encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["model"]["n_layer"] = 8
        with open(moved, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        rc, out, _ = quiet(tier.main, ["deepest", self.tmp])
        self.assertEqual(rc, 0)
        self.assertEqual([os.path.basename(p) for p in out.split()], [RUN_IDS[0]])


if __name__ == "__main__":
    unittest.main()
