#!/usr/bin/env python3
"""Checks stacklab.load_run against the stacklab binary on trained runs: for every wiring the
PyTorch mirror supports (torch_parity.wirings over `stacklab registry --json`), trains a tiny run
(configs/parity.json, 2 layers, 3 steps), has the binary compute the logits of its latest
checkpoint on a batch (`stacklab gradients RUN/config.json --checkpoint ... --out`), and compares
them with load_run(RUN)'s logits on the same tokens: max|ours - ref| / max|ref| < 1e-4 (the
parity check's tolerance; float32 stacklab against the float64 mirror). A text run also checks the
vocabulary (the batch decodes to a piece of the corpus) and the best checkpoint, and its nanoGPT
export read back into the mirror gives the binary's logits too; another run's checkpoint must be
refused by load_run as by `stacklab sample`, and so must a checkpoint with a flipped bit (the
checksum), and a run whose checkpoint names a wiring the mirror lacks by name.

    PYTHONPATH=scripts /usr/bin/python3 tests/parity/load_run_check.py [--stacklab build/stacklab]
Run by tests/integration/check_load_run.sh. Not here: gradients (torch_parity.py).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
from stacklab.runs import io_util, load, nanogpt_export
from torch_parity import rel_err, slug, stacklab_registry, wirings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 1e-4
TRAIN = ["--model.n_layer=2", "--train.max_iters=3", "--train.eval_interval=2", "--train.eval_iters=1",
         "--train.ckpt_interval=0", "--log.layer_interval=3", "--log.log_interval=1"]
CORPUS = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 8


def sh(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"exit {r.returncode}: {' '.join(cmd)}\n{r.stderr.strip()}")


def check(binary, run_dir, overrides, checkpoint="latest"):
    """Trains the run (when overrides is not None); (rel_err of load_run's logits against the
    binary's on one batch, the model, the batch's token ids)."""
    if overrides is not None:
        sh([binary, "train", os.path.join(REPO, "configs", "parity.json"), *overrides, *TRAIN, "--out", run_dir])
    out = os.path.join(run_dir, f"logits_{checkpoint}")
    sh([binary, "gradients", os.path.join(run_dir, "config.json"),
        "--checkpoint", load.checkpoint_path(run_dir, checkpoint), "--out", out])
    batch, _ = io_util.load(os.path.join(out, "batch.safetensors"))
    ref, _ = io_util.load(os.path.join(out, "outputs.safetensors"))
    model = load.load_run(run_dir, checkpoint, dtype=torch.float64)
    x = torch.from_numpy(batch["x"].astype("int64"))
    with torch.no_grad():
        ours = model(x)[0].numpy()
    return rel_err(ref["logits"], ours), model, x


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stacklab", default=os.path.join(REPO, "build", "stacklab"))
    args = ap.parse_args()
    binary = os.path.abspath(args.stacklab)
    torch.set_num_threads(1)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="load_run_check_") as root:
        cases = [(name, ov + [f"--model.tie_weights={str(i % 2 == 1).lower()}"])
                 for i, (name, ov) in enumerate(wirings(stacklab_registry(binary)))]
        for name, ov in cases:
            try:
                err, _, _ = check(binary, os.path.join(root, slug(name)), ov)
                ok = err < TOL
                print(f"{name:44s} logits rel err {err:9.2e}  {'PASS' if ok else 'FAIL'}")
            except (RuntimeError, load.RunLoadError) as e:
                ok = False
                print(f"{name:44s} FAIL: {e}")
            failed += not ok

        # A text run: the vocabulary maps the binary's token ids back to the corpus; best and latest.
        corpus = os.path.join(root, "corpus.txt")
        with open(corpus, "w") as f:
            f.write(CORPUS)
        text_run = os.path.join(root, "text")
        text = ["--data.source=text", f"--data.path={corpus}", "--model.tie_weights=true"]
        for which, overrides in (("latest", text), ("best", None)):
            err, model, x = check(binary, text_run, overrides, which)
            piece = model.vocab.decode(x[0].tolist())
            ok = err < TOL and piece in CORPUS and model.vocab.encode(piece) == x[0].tolist()
            print(f"{'text run, ' + which + ' checkpoint':44s} logits rel err {err:9.2e}, batch decodes to "
                  f"{piece[:24]!r}...  {'PASS' if ok else 'FAIL'}")
            failed += not ok

        # The text run is nanoGPT's wiring: its export, read back into the mirror configured as
        # nanoGPT's model, gives the binary's logits too.
        out = os.path.join(text_run, "logits_latest")
        ref, _ = io_util.load(os.path.join(out, "outputs.safetensors"))
        batch, _ = io_util.load(os.path.join(out, "batch.safetensors"))
        ckpt = torch.load(nanogpt_export.export(text_run, os.path.join(root, "nanogpt")))
        mirror = nanogpt_export.load_into_mirror(ckpt, torch.float64)
        with torch.no_grad():
            ours = mirror(torch.from_numpy(batch["x"].astype("int64")))[0]
        err = rel_err(ref["logits"], ours.numpy())
        verdict = "PASS" if err < TOL else "FAIL"
        print(f"{'text run exported to nanoGPT, read back':44s} logits rel err {err:9.2e}  {verdict}")
        failed += not err < TOL

        # Another run's checkpoint (a Markov one, as the binary wrote it) is refused by the keys
        # that differ, as `stacklab sample` and `gradients --checkpoint` refuse it.
        markov = load.checkpoint_path(os.path.join(root, slug(cases[0][0])), "latest")
        try:
            load.load_run(text_run, markov)
            print("another run's checkpoint was loaded: FAIL")
            failed += 1
        except load.RunLoadError as e:
            ok = "written with a different config: 'data.path'" in str(e) and "'data.source' is \"markov\"" in str(e)
            print(f"{'checkpoint of another run refused':44s} {str(e)[-90:]}  {'PASS' if ok else 'FAIL'}")
            failed += not ok
        r = subprocess.run([binary, "sample", text_run, "--checkpoint", markov, "--tokens", "1"],
                           capture_output=True, text=True)
        ok = r.returncode != 0 and "written with a different config: 'data.path'" in r.stderr
        print(f"{'  ... and by stacklab sample':44s} exit {r.returncode}  {'PASS' if ok else 'FAIL'}")
        failed += not ok

        # A flipped bit (one weight's exponent) is refused by load_run as by `stacklab sample`: the
        # checksum is the binary's (issue 48 item 7).
        flipped = os.path.join(text_run, "checkpoints", "flipped.safetensors")
        with open(load.checkpoint_path(text_run, "latest"), "rb") as f:
            data = bytearray(f.read())
        data[-5] ^= 1 << 6
        with open(flipped, "wb") as f:
            f.write(data)
        try:
            load.load_run(text_run, checkpoint=flipped)
            print("a checkpoint with a flipped bit was loaded: FAIL")
            failed += 1
        except load.RunLoadError as e:
            ok = f"{flipped}: checksum mismatch" in str(e)
            print(f"{'flipped bit refused':44s} {str(e)[-90:]}  {'PASS' if ok else 'FAIL'}")
            failed += not ok
        r = subprocess.run([binary, "sample", text_run, "--checkpoint", flipped, "--tokens", "1"],
                           capture_output=True, text=True)
        ok = r.returncode != 0 and "checksum mismatch" in r.stderr
        print(f"{'  ... and by stacklab sample':44s} exit {r.returncode}  {'PASS' if ok else 'FAIL'}")
        failed += not ok

        # A wiring the mirror lacks is refused by name (the run's config and its checkpoint's
        # edited to one, so that they still agree).
        path = load.checkpoint_path(text_run, "latest")
        tensors, meta = io_util.load(path)
        cfg = json.loads(meta["config"])
        cfg["model"]["norm_position"] = "peri"
        meta = {**meta, "config": json.dumps(cfg)}
        io_util.save(path, tensors, {**meta, "checksum": load.checkpoint_checksum(tensors, meta)})
        with open(os.path.join(text_run, "config.json"), "w") as f:
            json.dump(cfg, f)
        try:
            load.load_run(text_run)
            print("a wiring the mirror lacks was loaded: FAIL")
            failed += 1
        except load.RunLoadError as e:
            ok = "model.norm_position: no mirror of 'peri'" in str(e)
            print(f"{'unmirrored wiring refused':44s} {str(e)[:90]}  {'PASS' if ok else 'FAIL'}")
            failed += not ok
    print(f"load_run check: {len(cases) + 8 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
