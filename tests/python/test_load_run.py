"""stacklab.load_run (scripts/stacklab/runs/load.py) on fabricated run dirs: a checkpoint written the
way src/train/checkpoint.cpp writes it (format v2, config and train_state in the metadata, optim.*
tensors beside the model's) becomes the mirror with those weights; the vocabulary of a text run
comes with it; a wiring the mirror lacks, a file that is no checkpoint and a missing best
checkpoint are refused by name. The logits against the stacklab binary: tests/parity/load_run_check.py.
"""
import json
import os
import tempfile
import unittest

import numpy as np
try:
    import torch
except ImportError:  # the python stage's interpreter needs only numpy and matplotlib
    raise unittest.SkipTest("needs torch (apt-get install python3-torch)")
from stacklab.runs import checkpoint_config, io_util, load, torch_model

TINY = {"n_layer": 2, "n_head": 2, "n_embd": 8, "block_size": 6, "vocab_size": 5}


def save_checkpoint(path, tensors, meta):
    """io_util.save with the checksum the binary stores (src/train/checkpoint.cpp)."""
    io_util.save(path, tensors, {**meta, "checksum": load.checkpoint_checksum(tensors, meta)})


def flip_bit(path, from_end=5, bit=6):
    """Flips one bit of a file's bytes, counted from its end (a weight's float32: 0.3 becomes ~1e37)."""
    with open(path, "r+b") as f:
        f.seek(-from_end, os.SEEK_END)
        b = f.read(1)[0]
        f.seek(-from_end, os.SEEK_END)
        f.write(bytes([b ^ (1 << bit)]))


def write_run(root, model_cfg, text=None, which="latest", seed=0, fmt="stacklab.checkpoint.v2",
              data_path="input.txt"):
    """A run dir with config.json and checkpoints/WHICH.safetensors of a random mirror model; a
    text run (text: its characters, data.path data_path) also gets vocab.json. Returns the model
    written."""
    model = torch_model.build_model(model_cfg)
    torch_model.randomize_(model, 0.3, torch.Generator().manual_seed(seed))
    data = {"source": "text", "path": data_path} if text else {"source": "markov"}
    # Every key, as the binary writes a run's config (to_json of the resolved Config).
    config = {**checkpoint_config.with_defaults({"model": dict(model_cfg), "data": data}),
              "derived": {"wiring": "pre-layernorm-res"}}
    os.makedirs(os.path.join(root, "checkpoints"), exist_ok=True)
    with open(os.path.join(root, "config.json"), "w") as f:
        json.dump(config, f)
    tensors = {n: p.detach().numpy() for n, p in model.named_parameters()}
    tensors["optim.m.tok_emb.weight"] = np.ones((1,), np.float32)  # optimizer state: not the model's
    meta = {"format": fmt, "config": json.dumps(config),
            "train_state": json.dumps({"step": 7, "optimizer_steps": 7, "best_val_loss": 1.5})}
    save_checkpoint(os.path.join(root, "checkpoints", f"{which}.safetensors"), tensors, meta)
    if text:
        with open(os.path.join(root, "vocab.json"), "w") as f:
            json.dump({"format": "stacklab.char_vocab", "version": 1, "vocab_size": len(text),
                       "code_points": [ord(c) for c in text], "chars": text}, f)
    return model.eval()


class LoadRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_loaded_model_gives_the_logits_of_the_weights_written(self):
        for cfg in (TINY, {**TINY, "norm_position": "post", "residual_scale": "deepnorm", "tie_weights": True},
                    {**TINY, "norm": "rmsnorm", "norm_position": "sandwich", "pos_emb": "sinusoidal"}):
            with self.subTest(cfg=cfg):
                written = write_run(self.dir, cfg)
                model = load.load_run(self.dir)
                idx = torch.tensor([[0, 1, 2, 3, 4, 0]])
                self.assertFalse(model.training)
                self.assertTrue(torch.equal(model(idx)[0], written(idx)[0]))
                self.assertEqual(model.train_state["step"], 7)
                self.assertIsNone(model.vocab)

    def test_the_package_holds_load_run_itself(self):
        import stacklab
        self.assertIs(stacklab.load_run, load.load_run)

    def test_a_text_run_comes_with_its_vocabulary(self):
        write_run(self.dir, TINY, text="\n abé")
        model = load.load_run(self.dir)
        self.assertEqual(model.vocab.encode("bé a"), [3, 4, 1, 2])
        self.assertEqual(model.vocab.decode([3, 4, 1, 2]), "bé a")
        with self.assertRaisesRegex(KeyError, "'z'"):
            model.vocab.encode("za")

    def test_best_reads_best_and_a_missing_best_is_named(self):
        with self.assertRaisesRegex(load.RunLoadError, "checkpoint 'best': .*best.safetensors not found"):
            write_run(self.dir, TINY)
            load.load_run(self.dir, checkpoint="best")
        written = write_run(self.dir, TINY, which="best", seed=3)
        idx = torch.tensor([[1, 2]])
        self.assertTrue(torch.equal(load.load_run(self.dir, "best")(idx)[0], written(idx)[0]))

    def test_a_wiring_the_mirror_lacks_is_refused_by_name(self):
        write_run(self.dir, TINY)
        path = os.path.join(self.dir, "checkpoints", "latest.safetensors")
        tensors, meta = io_util.load(path)
        config = json.loads(meta["config"])
        config["model"]["norm"] = "batchnorm"
        meta["config"] = json.dumps(config)
        save_checkpoint(path, tensors, meta)
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump(config, f)
        with self.assertRaisesRegex(load.RunLoadError, r"model\.norm: no mirror of 'batchnorm'"):
            load.load_run(self.dir)

    def test_a_file_that_is_not_a_checkpoint_is_refused(self):
        write_run(self.dir, TINY, fmt="something.else")
        with self.assertRaisesRegex(load.RunLoadError, "not a stacklab checkpoint .*'something.else'"):
            load.load_run(self.dir)

    # Pins issue 37 item 1: another run's checkpoint loaded into this run (decoded with this run's
    # vocab.json), and a Markov checkpoint into a text run, where `stacklab sample` refuses both.
    def test_another_runs_checkpoint_is_refused_naming_the_keys_that_differ(self):
        other = os.path.join(self.dir, "other")
        write_run(self.dir, TINY, text="abcde", data_path="a/input.txt")
        write_run(other, TINY, text="abcd@", data_path="b/input.txt", seed=4)
        ckpt = os.path.join(other, "checkpoints", "latest.safetensors")
        with self.assertRaisesRegex(load.RunLoadError, r"latest.safetensors: written with a different config: "
                                    r"'data.path' is \"b/input.txt\" in the checkpoint but \"a/input.txt\" in "
                                    r".*config.json$"):
            load.load_run(self.dir, checkpoint=ckpt)

    def test_a_markov_checkpoint_in_a_text_run_is_refused(self):
        markov = os.path.join(self.dir, "markov")
        write_run(self.dir, TINY, text="abcde")
        write_run(markov, TINY)
        with self.assertRaisesRegex(load.RunLoadError, "'data.path' .*; 'data.source' is \"markov\" in the "
                                    "checkpoint but \"text\""):
            load.load_run(self.dir, checkpoint=os.path.join(markov, "checkpoints", "latest.safetensors"))

    def test_a_checkpoint_differing_only_where_a_reader_may_loads(self):
        write_run(self.dir, TINY, text="abcde")
        path = os.path.join(self.dir, "checkpoints", "latest.safetensors")
        tensors, meta = io_util.load(path)
        config = json.loads(meta["config"])
        config["train"] = {"name": "old", "out_dir": "elsewhere", "max_iters": 5, "threads": 3}
        config["optim"] = {"lr_decay_iters": 5}
        config["model"].pop("vocab_size")  # a key it lacks counts as its default... which differs here
        meta["config"] = json.dumps(config)
        save_checkpoint(path, tensors, meta)
        with self.assertRaisesRegex(load.RunLoadError, "'model.vocab_size' is \\(absent\\) in the checkpoint but 5"):
            load.load_run(self.dir)
        config["model"]["vocab_size"] = 5
        meta["config"] = json.dumps(config)
        save_checkpoint(path, tensors, meta)
        self.assertEqual(load.load_run(self.dir).train_state["step"], 7)

    def test_a_folder_without_config_json_is_not_a_run(self):
        write_run(self.dir, TINY)
        os.remove(os.path.join(self.dir, "config.json"))
        with self.assertRaisesRegex(load.RunLoadError, "not a run directory \\(no config.json\\)"):
            load.load_run(self.dir)

    # Pins issue 48 item 7: a flipped bit loaded silently (a weight of ~1e37), where `stacklab sample`
    # says "checksum mismatch".
    def test_the_checksum_is_the_binarys_fnv1a64(self):
        self.assertEqual(load.fnv1a64(load.FNV_BASIS, b""), 0xcbf29ce484222325)  # FNV's published values
        self.assertEqual(load.fnv1a64(load.FNV_BASIS, b"a"), 0xaf63dc4c8601ec8c)
        self.assertEqual(load.fnv1a64(load.FNV_BASIS, b"foobar"), 0x85944171f73967e8)
        # checkpoint.cpp's order: metadata by key without the checksum, then name, shape, bytes by name.
        w, b = np.array([[1.0, -2.0]], np.float32), np.zeros((0,), np.float32)
        want = load.fnv1a64(load.FNV_BASIS, b"config\0{}\0format\0v\0b\0(0)\0w\0(1,2)\0" + w.tobytes())
        got = load.checkpoint_checksum({"w": w, "b": b}, {"format": "v", "checksum": "x", "config": "{}"})
        self.assertEqual(got, f"{want:016x}")

    def test_a_flipped_bit_is_refused_naming_the_file(self):
        write_run(self.dir, TINY)
        load.load_run(self.dir)
        path = os.path.join(self.dir, "checkpoints", "latest.safetensors")
        flip_bit(path)
        with self.assertRaisesRegex(load.RunLoadError, "latest.safetensors: checksum mismatch \\(stored [0-9a-f]{16}, "
                                    "computed [0-9a-f]{16}\\): the file is corrupt"):
            load.load_run(self.dir)
        tensors, meta = io_util.load(path)
        del meta["checksum"]
        io_util.save(path, tensors, meta)
        with self.assertRaisesRegex(load.RunLoadError, "latest.safetensors: corrupt checkpoint: its 'checksum' "
                                    "metadata is missing"):
            load.load_run(self.dir)

    def test_a_checkpoint_from_before_checksums_is_read_unchecked(self):
        write_run(self.dir, TINY, fmt="stacklab.checkpoint.v1")
        path = os.path.join(self.dir, "checkpoints", "latest.safetensors")
        tensors, meta = io_util.load(path)
        del meta["checksum"]
        io_util.save(path, tensors, meta)
        self.assertEqual(load.load_run(self.dir).train_state["step"], 7)

    # Pins issue 48 item 11: a checkpoint folder given for the checkpoint said "... not found", for the
    # run "not a run directory (no config.json)"; a checkpoint file "not a directory".
    def test_a_checkpoint_given_where_a_run_goes_is_named_with_the_call_that_loads_it(self):
        write_run(self.dir, TINY)
        ckpts = os.path.join(self.dir, "checkpoints")
        latest = os.path.join(ckpts, "latest.safetensors")
        with self.assertRaisesRegex(load.RunLoadError, f"{ckpts}: a folder of checkpoints, not a run directory "
                                    f".*load_run\\('{self.dir}'\\)"):
            load.load_run(ckpts)
        with self.assertRaisesRegex(load.RunLoadError, f"{latest}: a checkpoint file, not a run directory: .*"
                                    f"load_run\\('{self.dir}', checkpoint='{latest}'\\)"):
            load.load_run(latest)
        with self.assertRaises(load.RunLoadError) as e:
            load.load_run(self.dir, checkpoint=ckpts)
        self.assertIn(f"{ckpts} is a folder, not a checkpoint file", str(e.exception))
        self.assertNotIn("not found", str(e.exception))

    def test_a_vocabulary_of_the_wrong_size_is_refused(self):
        write_run(self.dir, TINY, text="abc")
        with self.assertRaisesRegex(load.RunLoadError, "vocab.json: 3 characters, the model's vocab_size is 5"):
            load.load_run(self.dir)


if __name__ == "__main__":
    unittest.main()
