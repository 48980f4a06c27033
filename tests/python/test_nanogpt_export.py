"""The nanoGPT export (scripts/stacklab/runs/nanogpt_export.py): the ckpt.pt of a run of nanoGPT's wiring
holds exactly nanoGPT's parameter names and shapes (LAYOUT below, written from nanoGPT's model.py:
GPT.transformer.{wte, wpe, h.N.{ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f},
lm_head tied to wte, attn.bias the causal-mask buffer of torch < 2.0) and its model_args; loaded
back into the mirror configured as nanoGPT's model it gives the run's logits; meta.pkl carries a
text run's vocabulary; any other wiring is refused naming what nanoGPT lacks, and so are a Markov
run (no characters for meta.pkl), another run's checkpoint, and an OUT_DIR that is a file or already
holds ckpt.pt or meta.pkl (unless --force). No nanoGPT code is needed: docs/usage.md records a load
into nanoGPT itself.
"""
import contextlib
import io
import os
import pickle
import tempfile
import unittest

try:
    import torch
except ImportError:  # the python stage's interpreter needs only numpy and matplotlib
    raise unittest.SkipTest("needs torch (apt-get install python3-torch)")
from stacklab.runs import load, nanogpt_export
from test_load_run import flip_bit, write_run

NANO = {"n_layer": 2, "n_head": 2, "n_embd": 8, "block_size": 6, "vocab_size": 5, "tie_weights": True}
CHARS = "\nab c"  # a text run's vocabulary of NANO's vocab_size


def layout(L, C, T, V, bias, masks):
    """{name: shape} of nanoGPT's GPT state dict (n_layer L, n_embd C, block_size T, vocab V)."""
    def lin(name, n_out, n_in):
        return {f"{name}.weight": (n_out, n_in), **({f"{name}.bias": (n_out,)} if bias else {})}

    def ln(name):
        return {f"{name}.weight": (C,), **({f"{name}.bias": (C,)} if bias else {})}
    out = {"transformer.wte.weight": (V, C), "transformer.wpe.weight": (T, C), "lm_head.weight": (V, C),
           **ln("transformer.ln_f")}
    for l in range(L):  # noqa: E741 (l is the block index, as in nanoGPT's notation l/L)
        h = f"transformer.h.{l}"
        out.update({**ln(f"{h}.ln_1"), **lin(f"{h}.attn.c_attn", 3 * C, C), **lin(f"{h}.attn.c_proj", C, C),
                    **ln(f"{h}.ln_2"), **lin(f"{h}.mlp.c_fc", 4 * C, C), **lin(f"{h}.mlp.c_proj", C, 4 * C)})
        if masks:
            out[f"{h}.attn.bias"] = (1, 1, T, T)
    return out


class NanoGPTExport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run_dir = os.path.join(self.tmp.name, "run")
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self):
        self.tmp.cleanup()

    def test_names_shapes_and_model_args_are_nanogpts(self):
        for bias in (True, False):
            for masks in (True, False):
                with self.subTest(bias=bias, masks=masks):
                    write_run(self.run_dir, {**NANO, "bias": bias}, text=CHARS)
                    path = nanogpt_export.export(self.run_dir, self.out, mask_buffers=masks, force=True)
                    ckpt = torch.load(path)
                    got = {k: tuple(v.shape) for k, v in ckpt["model"].items()}
                    self.assertEqual(got, layout(2, 8, 6, 5, bias, masks))
                    self.assertEqual(ckpt["model_args"], {"n_layer": 2, "n_head": 2, "n_embd": 8, "block_size": 6,
                                                          "bias": bias, "vocab_size": 5, "dropout": 0.0})
                    sd = ckpt["model"]
                    self.assertTrue(torch.equal(sd["lm_head.weight"], sd["transformer.wte.weight"]))
                    self.assertEqual(ckpt["iter_num"], 7)
                    self.assertEqual(ckpt["best_val_loss"], 1.5)
                    if masks:
                        self.assertTrue(torch.equal(ckpt["model"]["transformer.h.1.attn.bias"][0, 0],
                                                    torch.tril(torch.ones(6, 6))))

    def test_the_file_loaded_into_the_mirror_as_nanogpts_model_gives_the_runs_logits(self):
        for bias in (True, False):
            with self.subTest(bias=bias):
                write_run(self.run_dir, {**NANO, "bias": bias}, text=CHARS, seed=5)
                ckpt = torch.load(nanogpt_export.export(self.run_dir, self.out, force=True))
                mirror = nanogpt_export.load_into_mirror(ckpt)
                idx = torch.tensor([[4, 3, 2, 1, 0, 1]])
                self.assertTrue(torch.equal(mirror(idx)[0], load.load_run(self.run_dir)(idx)[0]))

    def test_a_text_run_writes_a_char_level_meta_pkl_that_sample_py_finds(self):
        write_run(self.run_dir, NANO, text=CHARS)
        ckpt = torch.load(nanogpt_export.export(self.run_dir, self.out))
        # sample.py: os.path.join('data', config['dataset'], 'meta.pkl'); an absolute dataset wins the join
        meta_path = os.path.join("data", ckpt["config"]["dataset"], "meta.pkl")
        with open(meta_path, "rb") as f:
            meta = pickle.load(f)
        self.assertEqual(meta["itos"], {0: "\n", 1: "a", 2: "b", 3: " ", 4: "c"})
        self.assertEqual(meta["stoi"], {"\n": 0, "a": 1, "b": 2, " ": 3, "c": 4})
        self.assertEqual(meta["vocab_size"], 5)

    def test_other_wirings_are_refused_naming_what_nanogpt_lacks(self):
        cases = (({"norm_position": "post"}, "model.norm_position='post': nanoGPT's blocks are pre-norm"),
                 ({"tie_weights": False}, "model.tie_weights=False: nanoGPT's head is tied to wte"),
                 ({"norm": "rmsnorm", "qk_norm": True},
                  "model.norm='rmsnorm': nanoGPT's blocks use LayerNorm only; model.qk_norm=True"),
                 ({"activation": "relu"}, "model.activation='relu': nanoGPT's MLP uses exact GELU"),
                 ({"emb_scale": "unit"}, r"model.emb_scale='unit': nanoGPT's embeddings have no sqrt\(C\) factor"))
        for over, said in cases:
            with self.subTest(over=over):
                write_run(self.run_dir, {**NANO, **over}, text=CHARS)
                with self.assertRaisesRegex(nanogpt_export.ExportError, said):
                    nanogpt_export.export(self.run_dir, self.out)

    def test_the_command_line_refuses_with_one_line_and_exit_1(self):
        write_run(self.run_dir, {**NANO, "pos_emb": "none"}, text=CHARS)
        self.assertEqual(nanogpt_export.main([self.run_dir, self.out]), 1)
        self.assertFalse(os.path.exists(os.path.join(self.out, "ckpt.pt")))

    def main_says(self, argv):
        """(exit code, stderr) of the command line."""
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = nanogpt_export.main(argv)
        return code, err.getvalue()

    # Pins issue 37 item 2: another run's weights were written with this run's meta.pkl, exit 0.
    def test_another_runs_checkpoint_is_refused(self):
        other = os.path.join(self.tmp.name, "other")
        write_run(self.run_dir, NANO, text=CHARS, data_path="a/input.txt")
        write_run(other, NANO, text="\nab@c", data_path="b/input.txt", seed=2)
        code, err = self.main_says([self.run_dir, self.out, "--checkpoint",
                                    os.path.join(other, "checkpoints", "latest.safetensors")])
        self.assertEqual(code, 1)
        self.assertRegex(err, "written with a different config: 'data.path' is \"b/input.txt\"")
        self.assertFalse(os.path.exists(self.out))

    # Pins issue 37 item 3: a nanoGPT out_dir's ckpt.pt was replaced without a word.
    def test_files_already_in_out_dir_are_replaced_only_with_force(self):
        write_run(self.run_dir, NANO, text=CHARS)
        for name in ("ckpt.pt", "meta.pkl"):
            with self.subTest(name=name):
                os.makedirs(self.out, exist_ok=True)
                for f in os.listdir(self.out):
                    os.remove(os.path.join(self.out, f))
                with open(os.path.join(self.out, name), "w") as f:
                    f.write("nanoGPT's own")
                code, err = self.main_says([self.run_dir, self.out])
                self.assertEqual(code, 2)
                self.assertIn(f"already holds {os.path.join(self.out, name)}", err)
                self.assertIn("--force", err)
                with open(os.path.join(self.out, name)) as f:
                    self.assertEqual(f.read(), "nanoGPT's own")
                self.assertEqual(self.main_says([self.run_dir, self.out, "--force"])[0], 0)
                self.assertEqual(torch.load(os.path.join(self.out, "ckpt.pt"))["iter_num"], 7)

    # Pins issue 37 item 4: OUT_DIR an existing file raised FileExistsError (a traceback).
    def test_an_out_dir_that_is_a_file_is_a_usage_error(self):
        write_run(self.run_dir, NANO, text=CHARS)
        with open(self.out, "w") as f:
            f.write("x")
        code, err = self.main_says([self.run_dir, self.out])
        self.assertEqual(code, 2)
        self.assertIn(f"{self.out}: exists and is not a folder", err)
        self.assertNotIn("Traceback", err)

    # Pins issue 37 item 7: a missing run said "checkpoint 'latest' ... not found".
    def test_a_missing_run_dir_is_named_as_load_run_names_it(self):
        missing = os.path.join(self.tmp.name, "nonexistent")
        code, err = self.main_says([missing, self.out])
        self.assertEqual(code, 1)
        self.assertIn(f"{missing}: not a directory", err)
        self.assertNotIn("checkpoint 'latest'", err)

    # Pins issue 37 item 10: a Markov run got a ckpt.pt without meta.pkl, so nanoGPT's sample.py
    # encoded with GPT-2's tokenizer and drew ids above the vocabulary.
    def test_a_markov_run_is_refused_saying_why(self):
        write_run(self.run_dir, NANO)
        code, err = self.main_says([self.run_dir, self.out])
        self.assertEqual(code, 1)
        self.assertRegex(err, "data.source is 'markov', not 'text'.*no meta.pkl.*GPT-2's tokenizer")
        self.assertFalse(os.path.exists(os.path.join(self.out, "ckpt.pt")))

    # Pins issue 48 item 7: a checkpoint with a flipped bit exported with exit 0.
    def test_a_flipped_bit_is_refused_with_exit_1_naming_the_file(self):
        write_run(self.run_dir, NANO, text=CHARS)
        path = os.path.join(self.run_dir, "checkpoints", "latest.safetensors")
        flip_bit(path)
        code, err = self.main_says([self.run_dir, self.out])
        self.assertEqual(code, 1)
        self.assertIn(f"{path}: checksum mismatch", err)
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()
