"""The tier's cost model (scripts/tiers/size.py): a training run costs its steps plus, per eval,
2 x eval_iters forward passes (train and val split); the floor is the same work at the sgemm
ceiling, from the bench's FLOPs. A stand-in binary prints what `stacklab bench --json` prints. The
tiers' sweeps: the quick tier's map core and text point give way to the sweeps that hold their cells,
and a relative data.path keeps pointing at the same file wherever a sweep file is copied or derived."""
import contextlib
import io
import json
import os
import stat
import tempfile
import unittest

from stacklab.runs import tier_lists
from tiers import cli, extend, files, full as full_configs, prepare, size

BENCH = {"ms_per_step": 90.0, "forward_ms": 30.0, "flops_per_step": 3e9, "ceiling_gflops": 100.0}


def fake_binary(folder, bench=BENCH):
    path = os.path.join(folder, "stacklab")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("#!/bin/sh\n"
                 "case \" $* \" in *' --rounds 3 '*|*' --no-ceiling '*) ;;\n"
                 "  *) echo 'no timing flag' >&2; exit 2;; esac\n"
                 f"echo '{json.dumps(bench)}'\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


class CostModel(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = os.path.join(self.dir.name, "base.json")
        with open(self.base, "w", encoding="utf-8") as fh:
            json.dump({"train": {"max_iters": 150, "eval_interval": 25, "eval_iters": 8}}, fh)
        self.binary = fake_binary(self.dir.name)
        self.no_ceiling = list(size.NO_CEILING)
        size.NO_CEILING[:] = ["--no-ceiling"]

    def tearDown(self):
        size.NO_CEILING[:] = self.no_ceiling
        self.dir.cleanup()

    def run_of(self, mode="train", seeds=1, **kv):
        return ("s/r", "pending", mode, self.base, {"model.n_layer": "96", **kv}, None, seeds)

    def test_a_training_costs_its_steps_and_both_splits_of_every_eval(self):
        secs, _ = size.cost_model(self.binary, [self.run_of()])
        # 150 steps x 90 ms + 7 evals (steps 0, 25, ..., 150) x 2 x 8 forwards x 30 ms
        self.assertAlmostEqual(secs[0], (150 * 90 + 7 * 16 * 30) / 1000)

    def test_the_floor_is_the_runs_flops_at_the_sgemm_ceiling(self):
        secs, timed = size.cost_model(self.binary, [self.run_of(), self.run_of(mode="probe", seeds=4)], floor=True)
        step_ms = 3e9 / 100e9 * 1000  # 30 ms a step at 100 GFLOP/s
        self.assertAlmostEqual(secs[0], (150 * step_ms + 7 * 16 * step_ms / 3) / 1000)
        self.assertAlmostEqual(secs[1], 4 * step_ms / 1000)
        self.assertEqual(list(timed.values()), [(3e9, 100.0)])

    def test_the_floor_takes_the_faster_of_openblas_and_the_builds_own_path(self):
        binary = fake_binary(self.dir.name, dict(BENCH, ceiling_build_gflops=150.0))
        secs, timed = size.cost_model(binary, [self.run_of()], floor=True)
        self.assertEqual(list(timed.values()), [(3e9, 150.0)])
        slow = fake_binary(self.dir.name, dict(BENCH, ceiling_build_gflops=60.0))
        _, timed = size.cost_model(slow, [self.run_of()], floor=True)
        self.assertEqual(list(timed.values()), [(3e9, 100.0)])

    def test_the_floor_needs_a_binary_that_times_the_ceiling(self):
        binary = fake_binary(self.dir.name, {k: v for k, v in BENCH.items() if k != "ceiling_gflops"})
        with self.assertRaisesRegex(tier_lists.TierError, "no ceiling_gflops"):
            size.cost_model(binary, [self.run_of()], floor=True)

    def test_the_eval_count_follows_the_runs_own_interval(self):
        secs, _ = size.cost_model(self.binary, [self.run_of(**{"train.eval_interval": "150"})])
        self.assertAlmostEqual(secs[0], (150 * 90 + 2 * 16 * 30) / 1000)


class CostModelAccumulation(unittest.TestCase):
    """Issue 48 item 8: a run with grad_accum_steps (or dropout) set in its sweep is benched with
    them (bench times the trainer's step), not at the base config's values, and an eval batch costs
    one micro-batch's forward, not the step's k."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.base = os.path.join(self.dir.name, "base.json")
        with open(self.base, "w", encoding="utf-8") as fh:
            json.dump({"train": {"max_iters": 150, "eval_interval": 25, "eval_iters": 8}}, fh)
        # The stand-in echoes what it was asked: 4 micro-batches take 4 x 90 ms a step, 4 x 30 forward.
        path = os.path.join(self.dir.name, "stacklab")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("#!/bin/sh\n"
                     "case \" $* \" in *' --train.grad_accum_steps=4 '*)\n"
                     "  echo '{\"ms_per_step\": 360.0, \"forward_ms\": 120.0, \"grad_accum_steps\": 4}';;\n"
                     "  *) echo '{\"ms_per_step\": 90.0, \"forward_ms\": 30.0, \"grad_accum_steps\": 1}';; esac\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        self.binary = path

    def tearDown(self):
        self.dir.cleanup()

    def test_a_run_that_accumulates_is_benched_with_its_micro_batches_and_evals_at_one(self):
        run = ("s/r", "pending", "train", self.base, {"model.n_layer": "8", "train.grad_accum_steps": "4"}, None, 1)
        plain = ("s/p", "pending", "train", self.base, {"model.n_layer": "8"}, None, 1)
        secs, timed = size.cost_model(self.binary, [run, plain])
        self.assertEqual(len(timed), 2, "the two runs are two shapes, not one")
        self.assertAlmostEqual(secs[0], (150 * 360 + 7 * 16 * 30) / 1000)
        self.assertAlmostEqual(secs[1], (150 * 90 + 7 * 16 * 30) / 1000)


class FullTierSeeds(unittest.TestCase):
    def test_the_full_tier_takes_five_seeds_from_the_quick_files_first(self):
        # Round 2 of the claims runs at seeds 5-7 (quick), so 5-9 in the full tier; before, every
        # full file ran seeds 0-4 and round 2's full tier would have rerun round 1's seeds.
        self.assertEqual(full_configs.full_sweep("claims2_probe")["seeds"], [5, 6, 7, 8, 9])
        self.assertEqual(full_configs.full_sweep("claims_probe")["seeds"], tier_lists.FULL_SEEDS)

    def test_the_claims_sweeps_of_both_rounds_are_in_the_full_tier_and_with_claims(self):
        for name in ("claims_probe", "stability_map", "claims2_probe", "claims2_train", "claims2_qknorm"):
            self.assertIn(name, tier_lists.CLAIMS_SWEEPS)
            self.assertIn(name, tier_lists.FULL_SWEEPS)
        self.assertEqual(full_configs.full_sweep("claims2_train")["overrides"]["train.max_iters"], 2000)


class SizeFlags(unittest.TestCase):
    def test_jobs_below_one_is_refused_with_the_value(self):
        with contextlib.redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as ex:
            cli.main(["size", "stacklab", "sweep.json", "--floor", "--jobs", "0"])
        self.assertEqual(ex.exception.code, 2)
        self.assertIn("--jobs: expected a whole number >= 1, got '0'", err.getvalue())

    def test_a_size_whose_first_argument_is_not_the_binary_names_it(self):
        # The tier's name where the binary goes used to end in a FileNotFoundError traceback.
        with contextlib.redirect_stderr(io.StringIO()) as err:
            code = cli.main(["size", "quick", "sweep.json"])
        self.assertEqual(code, 1)
        self.assertIn("'quick' is not an executable file", err.getvalue())

    def test_prepare_into_an_existing_file_names_it(self):
        # Found with issue 37's last paragraph: OUT an existing file raised NotADirectoryError.
        with tempfile.NamedTemporaryFile() as f, contextlib.redirect_stderr(io.StringIO()) as err:
            code = cli.main(["prepare", f.name, os.path.join(tier_lists.QUICK_DIR, "claims.json")])
        self.assertEqual(code, 1)
        self.assertIn(f"tier.py: {f.name}: cannot make {f.name}/sweeps (Not a directory)", err.getvalue())


class Tiers(unittest.TestCase):
    def test_the_quick_tier_holds_the_map_core_the_text_point_and_the_escape_law_core(self):
        # escape_law_core added by issue 45 part 5 (the law's core in the default tier)
        self.assertEqual(tier_lists.tier_sweeps("quick"), ("probe_grid", "train_grid", "lr_grid", "map_core",
                                                           "text_point", "escape_law_core"))
        self.assertNotIn("escape_law_core", tier_lists.tier_sweeps("full"))

    def test_the_tiny_escape_law_core_keeps_its_stop_and_runs_in_a_few_steps(self):
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(cli.main(["prepare", d, os.path.join(tier_lists.QUICK_DIR, "escape_law_core.json"),
                                       "--tiny"]), 0)
            with open(os.path.join(d, "sweeps", "escape_law_core.json"), encoding="utf-8") as f:
                s = json.load(f)
        self.assertEqual(s["grid"]["model.n_layer"], [1, 2])
        self.assertEqual(s["seeds"], [30, 31])
        self.assertEqual(s["overrides"]["train.max_iters"], tier_lists.TINY["train.max_iters"])
        self.assertEqual(s["overrides"]["train.stop_below_unigram"], 0.1)
        self.assertEqual(len(s["variants"]), 2)

    def test_a_sweep_that_holds_the_quick_cells_replaces_them_so_no_config_runs_twice(self):
        self.assertNotIn("map_core", tier_lists.tier_sweeps("quick", claims=True))
        self.assertIn("stability_map", tier_lists.tier_sweeps("quick", claims=True))
        self.assertNotIn("text_point", tier_lists.tier_sweeps("quick", text=True))
        self.assertEqual(files.text_sweeps(tier_lists.tier_sweeps("quick", text=True)),
                         ["text_probe", "text_train", "text_map"])
        self.assertTrue(set(tier_lists.TEXT_SWEEPS) <= set(tier_lists.tier_sweeps("full")))

    def test_a_sweep_reads_text_by_its_data_source_not_its_name(self):
        with tempfile.TemporaryDirectory() as d:
            def sweep(name, **parts):
                with open(os.path.join(d, name + ".json"), "w", encoding="utf-8") as f:
                    json.dump(dict({"name": name, "base": "base.json", "mode": "train"}, **parts), f)
                return os.path.join(d, name + ".json")
            with open(os.path.join(d, "base.json"), "w", encoding="utf-8") as f:
                json.dump({"data": {"source": "markov"}}, f)
            self.assertTrue(files.reads_text(sweep("a", overrides={"data.source": "text"})))
            self.assertTrue(files.reads_text(sweep("b", variants=[{"name": "v", "data.source": "text"}])))
            self.assertTrue(files.reads_text(sweep("c", grid={"data.source": ["markov", "text"]})))
            self.assertFalse(files.reads_text(sweep("text_named", overrides={"model.n_layer": 2})))
            with open(os.path.join(d, "base.json"), "w", encoding="utf-8") as f:
                json.dump({"data": {"source": "text"}}, f)
            self.assertTrue(files.reads_text(sweep("d", overrides={})))
        quick = tier_lists.tier_sweeps("quick", claims=True, text=True, converge=True)
        self.assertEqual(files.text_sweeps(quick), ["text_probe", "text_train", "text_map", "converge_text",
                                                    "converge_text_map"])

    def test_reproduce_sh_help_lists_tier_pys_sweeps(self):
        import subprocess
        out = subprocess.run(["bash", os.path.join(tier_lists.ROOT, "scripts", "reproduce.sh"), "--help"], check=True,
                             capture_output=True, text=True).stdout
        listed = " ".join(out.split("The sweeps", 1)[1].split())
        for what in ("quick", "claims", "text", "converge", "signal", "full-only"):
            with contextlib.redirect_stdout(io.StringIO()) as f:
                cli.main(["list", what])
            self.assertIn(f.getvalue().strip(), listed, what)
        self.assertEqual(files.LISTS["full-only"](), ("extras", "extras_init", "extras_lr"))

    def test_the_report_only_hint_repeats_every_flag_that_adds_sweeps(self):
        # After a Slurm submission reproduce.sh prints the command that writes the report; a flag left
        # out of it would judge the folder without that study's sweeps (their section "not run").
        with open(os.path.join(tier_lists.ROOT, "scripts", "reproduce.sh"), encoding="utf-8") as f:
            hint = next(ln for ln in f if "when the jobs are done: bash scripts/reproduce.sh" in ln)
        for flag in ("--full", "--claims", "--text", "--converge", "--signal"):
            self.assertIn(f"echo '{flag} '", hint, flag)

    def test_map_core_is_cells_of_the_stability_map_with_its_configs(self):
        core = tier_lists.read_json(os.path.join(tier_lists.QUICK_DIR, "map_core.json"))
        smap = tier_lists.read_json(os.path.join(tier_lists.QUICK_DIR, "stability_map.json"))
        for key, v in core["grid"].items():
            self.assertTrue(set(v) <= set(smap["grid"][key]), key)
        self.assertIn(core["overrides"]["model.n_layer"], smap["grid"]["model.n_layer"])
        shared = {k: v for k, v in core["overrides"].items() if k != "model.n_layer"}
        self.assertEqual(shared, smap["overrides"])

    def test_the_full_text_sweeps_read_the_same_file_one_folder_down(self):
        quick = tier_lists.read_json(os.path.join(tier_lists.QUICK_DIR, "text_train.json"))
        full = full_configs.full_sweep("text_train")
        here = os.path.normpath(os.path.join(tier_lists.QUICK_DIR, quick["overrides"]["data.path"]))
        there = os.path.normpath(os.path.join(tier_lists.FULL_DIR, full["overrides"]["data.path"]))
        self.assertEqual(here, there)
        self.assertEqual(here, os.path.join(tier_lists.ROOT, "data", "shakespeare_char", "input.txt"))
        self.assertEqual((full["seeds"], full["grid"]["model.n_layer"][-1], full["overrides"]["train.max_iters"]),
                         ([0, 1, 2, 3, 4], 96, 600))
        self.assertEqual(full["grid"]["optim.learning_rate"], quick["grid"]["optim.learning_rate"])

    def test_prepare_makes_a_relative_data_path_absolute_against_the_source_files_folder(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "conf", "exp")
            os.makedirs(src)
            path = os.path.join(src, "t.json")
            with open(path, "w", encoding="utf-8") as fh:
                json.dump({"name": "t", "base": "../base.json", "overrides": {"data.path": "../../data/x.txt"},
                           "variants": [{"name": "v", "data.path": "y.txt"}, {"name": "w", "data.path": "/abs.txt"}]},
                          fh)
            with contextlib.redirect_stdout(io.StringIO()):
                cli.main(["prepare", os.path.join(d, "out"), path])
            out = tier_lists.read_json(os.path.join(d, "out", "sweeps", "t.json"))
        self.assertEqual(out["overrides"]["data.path"], os.path.join(d, "data", "x.txt"))
        self.assertEqual([v["data.path"] for v in out["variants"]], [os.path.join(src, "y.txt"), "/abs.txt"])


class ConvergeTier(unittest.TestCase):
    """The convergence study's sweeps (convergence_rules.json): opt-in, their configs as the rules
    name them, the extension costed at its steps past the source's horizon."""

    def setUp(self):
        from stacklab.studies import convergence
        self.rules = convergence.load_rules()
        self.files = {n: tier_lists.read_json(os.path.join(tier_lists.QUICK_DIR, n + ".json"))
                      for n in tier_lists.CONVERGE_SWEEPS}

    def test_no_tier_runs_it_unless_asked(self):
        for t in ("quick", "full"):
            self.assertFalse(set(tier_lists.CONVERGE_SWEEPS) & set(tier_lists.tier_sweeps(t, claims=True, text=True)))
        quick = tier_lists.tier_sweeps("quick", converge=True)
        self.assertEqual(quick[-len(tier_lists.CONVERGE_SWEEPS):], tier_lists.CONVERGE_SWEEPS)
        self.assertIn("converge_text", files.text_sweeps(tier_lists.CONVERGE_SWEEPS))

    def test_the_sweeps_run_the_rules_rates_seeds_and_horizons(self):
        H, factor = self.rules["horizon"]["measured"]["H"], self.rules["extend_factor"]
        for name, src, steps in (("converge_synth", "synthetic", H), ("converge_text", "text", 2000)):
            f = self.files[name]
            self.assertEqual(f["seeds"], self.rules["seeds"]["runs"])
            self.assertEqual(f["overrides"]["train.max_iters"], steps)
            got = {(v["name"].rsplit("-L", 1)[0], v["model.n_layer"]): v["optim.learning_rate"] for v in f["variants"]}
            want = {(w.replace("-layernorm", ""), int(d)): lr
                    for w, by in self.rules["rates"][src].items() for d, lr in by.items()}
            self.assertEqual(got, want, name)
        long = self.files["converge_synth_long"]
        self.assertEqual(long["overrides"]["train.max_iters"], factor * H)
        self.assertEqual({(v["name"], v["optim.learning_rate"]) for v in long["variants"]},
                         {(v["name"], v["optim.learning_rate"]) for v in self.files["converge_synth"]["variants"]
                          if "nores" in v["name"] and v["model.n_layer"] >= 8})
        for name in ("converge_synth_map", "converge_text_map"):  # the scaled cell is the main sweep's L = 32
            self.assertEqual(self.files[name]["grid"], {"model.init": ["xavier"]})

    def test_an_extension_costs_only_its_steps_past_the_source(self):
        paths = [os.path.join(tier_lists.QUICK_DIR, n + ".json") for n in ("converge_synth", "converge_synth_long")]
        runs = [("converge_synth_long/L8-x-s20", "new", "train", "b", {"train.max_iters": "22000"}, None, 1),
                ("converge_synth/L8-x-s20", "new", "train", "b", {"train.max_iters": "5500"}, None, 1)]
        out = size.extension_steps(runs, paths)
        self.assertEqual([r[4]["train.max_iters"] for r in out], ["16500", "5500"])

    def test_a_copy_not_yet_extended_is_listed_with_the_horizon_it_is_continued_to(self):
        # `stacklab sweep --dry-run --on-change extend` lists such a copy as `train --resume DIR` plus
        # the keys it changes; its config.json still holds the source's horizon.
        with tempfile.TemporaryDirectory() as d:
            run = os.path.join(d, "L8-x-s20")
            os.makedirs(run)
            with open(os.path.join(run, "config.json"), "w", encoding="utf-8") as fh:
                json.dump({"model": {"n_layer": 8}, "train": {"max_iters": 5500}}, fh)
            sweep = os.path.join(d, "converge_synth_long.json")
            with open(sweep, "w", encoding="utf-8") as fh:
                json.dump({"name": "converge_synth_long", "base": "b.json"}, fh)
            binary = os.path.join(d, "stacklab")
            with open(binary, "w", encoding="utf-8") as fh:
                fh.write("#!/bin/sh\n"
                         "case \" $* \" in *' --on-change extend '*) ;; *) echo refused >&2; exit 2;; esac\n"
                         f"echo '  L8-x-s20   resumable    stacklab train --resume {run} "
                         "--train.max_iters=22000 --optim.lr_decay_iters=22000'\n")
            os.chmod(binary, 0o755)
            with self.assertRaisesRegex(tier_lists.TierError, "refused"):
                size.dry_run(binary, [sweep])
            (rid, state, _, _, kv, run_dir, _), = size.dry_run(binary, [sweep], on_change="extend")
        self.assertEqual((rid, state, run_dir), ("L8-x-s20", "resumable", run))
        self.assertEqual((kv["model.n_layer"], kv["train.max_iters"]), (8, "22000"))
        paths = [os.path.join(tier_lists.QUICK_DIR, n + ".json") for n in ("converge_synth", "converge_synth_long")]
        runs = [("converge_synth_long/L8-x-s20", state, "train", "b", kv, run_dir, 1)]
        self.assertEqual(size.extension_steps(runs, paths)[0][4]["train.max_iters"], "16500")

    def test_tiny_keeps_the_extensions_ratio_to_its_source(self):
        with tempfile.TemporaryDirectory() as d:
            with contextlib.redirect_stdout(io.StringIO()):
                cli.main(["prepare", d, os.path.join(tier_lists.QUICK_DIR, "converge_synth_long.json"), "--tiny"])
            out = tier_lists.read_json(os.path.join(d, "sweeps", "converge_synth_long.json"))
        steps = tier_lists.TINY["train.max_iters"] * self.rules["extend_factor"]
        self.assertEqual((out["overrides"]["train.max_iters"], out["overrides"]["optim.lr_decay_iters"]),
                         (steps, steps))


class KeepFinal(unittest.TestCase):
    """What a tier's runs keep once finished (issue 60): prepare gives every sweep train.keep_final,
    "full" (the optimizer state, for `--on-change extend`) in an extension sweep and its source only,
    "weights" elsewhere; a sweep file that sets the key keeps its own."""

    def prepare(self, names, folder=tier_lists.QUICK_DIR):
        with tempfile.TemporaryDirectory() as d:
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(["prepare", d, *[os.path.join(folder, n + ".json") for n in names]]), 0)
            return {n: tier_lists.read_json(os.path.join(d, "sweeps", n + ".json"))["overrides"].get("train.keep_final")
                    for n in names}

    def test_only_the_extension_sweeps_and_their_sources_keep_the_optimizer_state(self):
        names = tier_lists.tier_sweeps("quick", claims=True, text=True, converge=True, signal=True)
        kept = self.prepare(names)
        self.assertEqual({n for n, k in kept.items() if k == "full"}, {"converge_synth", "converge_synth_long"})
        self.assertEqual({k for n, k in kept.items() if n not in prepare.KEEP_FULL}, {"weights"})

    def test_the_full_tier_keeps_the_weights_alone(self):
        self.assertEqual(set(self.prepare(tier_lists.FULL_SWEEPS, tier_lists.FULL_DIR).values()), {"weights"})

    def test_a_sweep_that_sets_the_key_keeps_its_own_choice(self):
        for where in ({"overrides": {"train.keep_final": "none"}}, {"grid": {"train.keep_final": ["none", "full"]}},
                      {"variants": [{"name": "a", "train.keep_final": "none"}]}):
            s = dict({"name": "train_grid", "base": "b.json"}, **where)
            self.assertEqual(prepare.with_keep_final(s), s, where)


class SignalTier(unittest.TestCase):
    """The residual-or-signal study's sweeps (signal_rules.json, issue 45 part 2): opt-in like the
    convergence study, and prepared into OUT/<name>, where signal_study reads them."""

    def files(self, *flags):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(cli.main(["files", "quick", *flags]), 0)
        return out.getvalue().split()

    def test_no_tier_runs_it_unless_asked(self):
        for t in ("quick", "full"):
            self.assertFalse(set(tier_lists.SIGNAL_SWEEPS)
                             & set(tier_lists.tier_sweeps(t, claims=True, text=True, converge=True)))
        self.assertEqual(tier_lists.tier_sweeps("quick", signal=True)[-3:], tier_lists.SIGNAL_SWEEPS)

    def test_files_with_signal_adds_its_three_sweep_files_to_the_quick_tier(self):
        plain, with_signal = self.files(), self.files("--signal")
        added = [f"configs/experiments/{n}.json" for n in ("signal_probe", "signal_shaped", "signal_sublayer")]
        self.assertEqual(with_signal, plain + added)
        self.assertFalse(set(added) & set(self.files("--converge", "--claims", "--text")))

    def test_the_full_tier_adds_the_opt_in_studies_from_their_own_files(self):
        # `--full --converge` looked for configs/experiments/full/converge_synth.json, which full-configs
        # never writes, and stopped there.
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(cli.main(["files", "full", "--converge", "--signal"]), 0)
        paths = out.getvalue().split()
        self.assertIn("configs/experiments/full/train_grid.json", paths)
        opt_in = tier_lists.CONVERGE_SWEEPS + tier_lists.SIGNAL_SWEEPS
        self.assertEqual(paths[-len(opt_in):], [f"configs/experiments/{n}.json" for n in opt_in])

    def test_list_signal_names_the_sweeps_on_one_line(self):
        with contextlib.redirect_stdout(io.StringIO()) as out:
            self.assertEqual(cli.main(["list", "signal"]), 0)
        self.assertEqual(out.getvalue(), "signal_probe, signal_shaped, signal_sublayer\n")

    def test_the_names_are_the_sweeps_signal_study_reads(self):
        from stacklab.studies import signal as signal_study
        self.assertEqual(set(tier_lists.SIGNAL_SWEEPS), {signal_study.PROBE_SWEEP, *signal_study.TRAIN_SWEEPS})
        for name in tier_lists.SIGNAL_SWEEPS:
            s = tier_lists.read_json(os.path.join(tier_lists.QUICK_DIR, name + ".json"))
            self.assertEqual(s["name"], name)
            self.assertEqual(s["mode"], "probe" if name == signal_study.PROBE_SWEEP else "train")

    def test_prepare_points_each_copy_at_out_not_at_runs_signal(self):
        srcs = [os.path.join(tier_lists.QUICK_DIR, n + ".json") for n in tier_lists.SIGNAL_SWEEPS]
        with tempfile.TemporaryDirectory() as d:
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(["prepare", d, *srcs]), 0)
            for name in tier_lists.SIGNAL_SWEEPS:
                s = tier_lists.read_json(os.path.join(d, "sweeps", name + ".json"))
                self.assertEqual(s["out_dir"], os.path.join(d, name))
                self.assertEqual(s["base"], os.path.join(tier_lists.ROOT, "configs", "base.json"))
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(cli.main(["prepare", d, *srcs, "--tiny"]), 0)
            tiny = tier_lists.read_json(os.path.join(d, "sweeps", "signal_shaped.json"))
        self.assertEqual(tiny["grid"]["model.n_layer"], [2])
        self.assertEqual(tiny["overrides"]["train.stop_below_unigram"], 0.1)
        self.assertEqual(tiny["overrides"]["train.max_iters"], tier_lists.TINY["train.max_iters"])


class Extend(unittest.TestCase):
    """tier.py extend copies an extension sweep's completed source runs for `stacklab sweep
    --on-change extend` to continue; with --settled (the Slurm path) it copies nothing while a
    source run may still change."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = self.tmp.name
        os.makedirs(os.path.join(self.out, "sweeps"))
        name = next(iter(tier_lists.EXTENDS))
        with open(os.path.join(self.out, "sweeps", name + ".json"), "w", encoding="utf-8") as fh:
            json.dump({"name": name}, fh)
        self.src = os.path.join(self.out, tier_lists.EXTENDS[name], "r1")
        self.dst = os.path.join(self.out, name, "r1")
        os.makedirs(self.src)
        self.real_plan = extend.extension_plan
        extend.extension_plan = lambda binary, path, out: [(self.dst, 20, self.src)]

    def tearDown(self):
        extend.extension_plan = self.real_plan
        self.tmp.cleanup()

    def status(self, status):
        with open(os.path.join(self.src, "summary.json"), "w", encoding="utf-8") as fh:
            json.dump({"status": status}, fh)
        with open(os.path.join(self.src, "config.json"), "w", encoding="utf-8") as fh:
            json.dump({"train": {"max_iters": 5}}, fh)

    def extend(self, *flags):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["extend", "stacklab", self.out, *flags])
        return code, out.getvalue(), err.getvalue()

    def test_settled_refuses_while_a_source_run_is_still_running_and_copies_nothing(self):
        self.status("running")
        code, _, err = self.extend("--settled")
        self.assertEqual(code, 3)
        self.assertIn("have not completed yet", err)
        self.assertFalse(os.path.exists(self.dst))

    def test_a_completed_source_run_is_copied_and_listed_with_the_extensions_horizon(self):
        self.status("completed")
        self.assertEqual(self.extend("--settled")[0], 0)
        code, out, _ = self.extend()
        self.assertEqual(code, 0)
        self.assertEqual(out.split(), [self.dst, "20"])
        self.assertTrue(os.path.isfile(os.path.join(self.dst, "summary.json")))

    def test_a_diverged_source_run_is_settled_but_not_copied(self):
        self.status("diverged")
        self.assertEqual(self.extend("--settled")[0], 0)
        self.assertEqual(self.extend()[1], "")
        self.assertFalse(os.path.exists(self.dst))

    # Pins issue 48 item 3: the copy was made file by file into the run's own folder, so a kill midway
    # left a run with a completed summary and no config.json, which the sweep took as done.
    def test_a_copy_killed_midway_leaves_no_run_folder_and_the_next_one_is_whole(self):
        import shutil
        self.status("completed")
        real, copied = shutil.copytree, []

        def killed_after_one(s, d, **kw):
            if copied:
                raise KeyboardInterrupt  # a kill between two files of the copy
            copied.append(d)
            return shutil.copy2(s, d, **kw)
        shutil.copytree = lambda *a, **kw: real(*a, **kw, copy_function=killed_after_one)
        try:
            with self.assertRaises(KeyboardInterrupt):
                self.extend()
        finally:
            shutil.copytree = real
        self.assertEqual(len(copied), 1)
        self.assertFalse(os.path.exists(self.dst))
        code, out, _ = self.extend()
        self.assertEqual((code, out.split()), (0, [self.dst, "20"]))
        self.assertEqual(sorted(os.listdir(self.dst)), ["config.json", "summary.json"])
        self.assertEqual(os.listdir(os.path.dirname(self.dst)), ["r1"])  # the interrupted copy's folder is gone

    def test_a_copy_without_config_json_is_refused_naming_it_and_the_fix(self):
        self.status("completed")
        os.makedirs(self.dst)
        with open(os.path.join(self.dst, "summary.json"), "w", encoding="utf-8") as fh:
            json.dump({"status": "completed"}, fh)
        code, out, err = self.extend()
        self.assertEqual((code, out), (1, ""))
        self.assertIn(f"{self.dst}: a run folder without config.json", err)
        self.assertIn(f"rm -r {self.dst}", err)


class ExtendOnTheCommandLine(unittest.TestCase):
    """tier.py extend as reproduce.sh and a person run it: a stand-in binary lists three runs of the
    extension sweep (`stacklab sweep --dry-run`), whose sources have completed."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")
        name = next(iter(tier_lists.EXTENDS))
        os.makedirs(os.path.join(self.out, "sweeps"))
        with open(os.path.join(self.out, "sweeps", name + ".json"), "w", encoding="utf-8") as fh:
            json.dump({"name": name, "base": "base.json"}, fh)
        self.binary = os.path.join(self.tmp.name, "stacklab")
        with open(self.binary, "w", encoding="utf-8") as fh:
            fh.write("#!/bin/sh\nfor i in 1 2 3; do echo \"  %s/r$i  new  stacklab train base.json "
                     "--train.max_iters=20 --out x\"; done\n" % name)
        os.chmod(self.binary, os.stat(self.binary).st_mode | stat.S_IEXEC)
        self.copies = [os.path.join(self.out, name, f"r{i}") for i in (1, 2, 3)]
        for i in (1, 2, 3):
            src = os.path.join(self.out, tier_lists.EXTENDS[name], f"r{i}")
            os.makedirs(src)
            for f, j in (("summary.json", {"status": "completed"}), ("config.json", {"train": {"max_iters": 5}})):
                with open(os.path.join(src, f), "w", encoding="utf-8") as fh:
                    json.dump(j, fh)

    def tearDown(self):
        self.tmp.cleanup()

    def main(self, *argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(list(argv))
        return code, out.getvalue(), err.getvalue()

    def test_every_copy_is_made_and_listed(self):
        code, out, _ = self.main("extend", self.binary, self.out)
        self.assertEqual((code, out.split()), (0, [w for c in self.copies for w in (c, "20")]))

    # Pins issue 48 item 11: a mistyped OUT exited 0 without a word; piped to `head`, extend stopped with
    # a BrokenPipeError traceback.
    def test_a_mistyped_out_is_refused_naming_it(self):
        code, out, err = self.main("extend", self.binary, self.out + "x")
        self.assertEqual((code, out), (1, ""))
        self.assertIn(f"extend: {self.out}x: no such folder", err)
        os.makedirs(self.out + "y")
        code, _, err = self.main("extend", self.binary, self.out + "y")
        self.assertEqual(code, 1)
        self.assertIn(f"extend: {self.out}y holds no extension sweep", err)

    def test_a_reader_that_closes_early_leaves_every_copy_whole_and_no_traceback(self):
        import subprocess
        import sys
        scripts = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts")
        p = subprocess.Popen([sys.executable, os.path.join(scripts, "tier.py"), "extend", self.binary, self.out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdout.close()  # as `| head -0` would: before tier.py writes a line
        err = p.stderr.read().decode()
        p.stderr.close()
        self.assertEqual(p.wait(), 141, err)
        self.assertNotIn("Traceback", err)
        self.assertNotIn("BrokenPipeError", err)
        for c in self.copies:
            self.assertEqual(sorted(os.listdir(c)), ["config.json", "summary.json"])


if __name__ == "__main__":
    unittest.main()
