#!/usr/bin/env python3
"""stacklab against nanoGPT on nanoGPT's own CPU recipe for tiny Shakespeare, side by side.

nanoGPT is not part of this project: pass a copy of its public repository (--nanogpt DIR). Its
files are copied into OUT/nanogpt_src, where its own prepare step
(data/shakespeare_char/prepare.py) runs on the text the data step brought (scripts/get_data.py;
its download is skipped because input.txt is already there), and its train.py runs with the
README's CPU flags. nanoGPT seeds torch with 1337 + its DDP rank and has no seed flag, so seed s
runs it under a wrapper that adds s to the seed of torch.manual_seed; stacklab runs
configs/shakespeare_char.json with --train.seed=1337+s.

For each program, thread count (OMP_NUM_THREADS and, for stacklab, --train.threads) and seed it
records the final val loss as the program reports it (nanoGPT: "step 2000: ... val loss"; stacklab:
summary.json's final_val_loss), the whole process's wall time and end-to-end tokens per second
(iters x batch x context over that wall time, evaluations included). Runs are interleaved (nanoGPT
seed s, then stacklab seed s) so that a change in machine load hits both. A JSON line per run goes
to OUT/runs.jsonl; the table (mean, min-max over seeds) is printed as Markdown.

Each program reports a loss on its own sample of 20 batches (nanoGPT: new random ones at every
evaluation; stacklab: the same 20, fixed by data.seed, for every run). So that the comparison does
not hang on those samples, --common-eval (on by default) also scores every final model in one
PyTorch process on the same tokens: the whole val split in consecutive windows of 64 characters
(1,742 windows, 111,488 predictions), both in float32. nanoGPT's model is its own GPT class
loaded from its ckpt.pt (the checkpoint at its best val loss, which is step 2000 when the val loss
falls at every evaluation, as it does in this recipe; the step is recorded); stacklab's is
stacklab.load_run(RUN, "latest"), the package's PyTorch mirror with the run's final weights.

    PYTHONPATH=scripts /usr/bin/python3 tests/bench/vs_nanogpt.py --nanogpt /tmp/nanogpt --out /tmp/vs_nanogpt \
        [--seeds 3] [--first-seed 0] [--threads 1,2] [--stacklab build/stacklab] [--iters 2000] \
        [--programs nanogpt,stacklab] [--rescore] [--no-common-eval]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/bench/../..
CONFIG = os.path.join(REPO, "configs", "shakespeare_char.json")
TEXT = os.path.join(REPO, "data", "shakespeare_char", "input.txt")
BATCH, CONTEXT = 12, 64  # the recipe's; configs/shakespeare_char.json holds the same

# The README's CPU recipe (nanoGPT README, "I only have a macbook").
NANOGPT_FLAGS = ["config/train_shakespeare_char.py", "--device=cpu", "--compile=False", "--eval_iters=20",
                 "--log_interval=1", "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4",
                 "--n_embd=128", "--dropout=0.0"]

# Runs train.py as __main__ with torch.manual_seed(s) replaced by torch.manual_seed(s + offset).
SEED_WRAPPER = """
import runpy, sys, torch
offset = int(sys.argv[1])
seed = torch.manual_seed
torch.manual_seed = lambda s: seed(s + offset)
sys.argv = ["train.py"] + sys.argv[2:]
runpy.run_path("train.py", run_name="__main__")
"""


def prepare_nanogpt(src, out, python):
    work = os.path.join(out, "nanogpt_src")
    if not os.path.exists(work):
        shutil.copytree(src, work, ignore=shutil.ignore_patterns(".git", "assets", "*.ipynb"))
    data = os.path.join(work, "data", "shakespeare_char")
    if not os.path.exists(os.path.join(data, "train.bin")):
        shutil.copyfile(TEXT, os.path.join(data, "input.txt"))
        subprocess.run([python, "prepare.py"], cwd=data, check=True, stdout=subprocess.DEVNULL)
    return work


def run_nanogpt(work, out, python, seed, threads, iters):
    run_dir = os.path.join(out, f"nanogpt-t{threads}-s{seed}")
    os.makedirs(run_dir, exist_ok=True)
    flags = NANOGPT_FLAGS + [f"--max_iters={iters}", f"--lr_decay_iters={iters}", f"--out_dir={run_dir}",
                             f"--eval_interval={min(250, iters)}"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    t0 = time.monotonic()
    p = subprocess.run([python, "-c", SEED_WRAPPER, str(seed)] + flags, cwd=work, env=env,
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    with open(os.path.join(run_dir, "train.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    if p.returncode != 0:
        sys.exit(f"vs_nanogpt: nanoGPT seed {seed} failed (exit {p.returncode}); see {run_dir}/train.log")
    evals = re.findall(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", p.stdout)
    step, train, val = evals[-1]
    if int(step) != iters:
        sys.exit(f"vs_nanogpt: nanoGPT seed {seed}: last eval at step {step}, expected {iters}")
    return {"val": float(val), "train": float(train), "wall_s": wall, "dir": run_dir}


def run_stacklab(stacklab, out, seed, threads, iters):
    run_dir = os.path.join(out, f"stacklab-t{threads}-s{seed}")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    cmd = [stacklab, "train", CONFIG, f"--train.seed={1337 + seed}", f"--train.threads={threads}",
           f"--train.max_iters={iters}", f"--optim.lr_decay_iters={iters}", f"--train.eval_interval={min(250, iters)}",
           "--out", run_dir, "--force"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"vs_nanogpt: stacklab seed {seed} failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    with open(os.path.join(run_dir, "summary.json")) as f:
        s = json.load(f)
    return {"val": s["final_val_loss"], "train": s.get("final_train_loss"), "wall_s": wall, "dir": run_dir}


def val_windows(T=CONTEXT):
    """The val split (the last 10 % of the characters, nanoGPT's split) as (N, T+1) windows of ids."""
    import torch
    text = open(TEXT, encoding="utf-8").read()
    stoi = {c: i for i, c in enumerate(sorted(set(text)))}  # both programs' vocabulary: sorted characters
    val = text[int(len(text) * 0.9):]
    ids = torch.tensor([stoi[c] for c in val], dtype=torch.long)
    n = (len(ids) - 1) // T
    return torch.stack([ids[i * T:i * T + T + 1] for i in range(n)])


def mean_loss(forward, windows, batch=64):
    import torch
    total, count = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(windows), batch):
            w = windows[i:i + batch]
            logits = forward(w[:, :-1].contiguous())
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1),
                                                     reduction="sum")
            total += float(loss)
            count += w[:, 1:].numel()
    return total / count


def common_eval(rows, work):
    """Adds common_val (and, for nanoGPT, ckpt_step) to every row: see the module docstring."""
    import importlib.util

    import torch
    from stacklab import load_run
    windows = val_windows()
    torch.set_num_threads(2)
    if work:
        spec = importlib.util.spec_from_file_location("nanogpt_model", os.path.join(work, "model.py"))
        nano = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(nano)
    for r in rows:
        if r["program"] == "nanogpt":
            ck = torch.load(os.path.join(r["dir"], "ckpt.pt"), map_location="cpu")
            model = nano.GPT(nano.GPTConfig(**ck["model_args"]))
            sd = {k.removeprefix("_orig_mod."): v for k, v in ck["model"].items()}
            model.load_state_dict(sd)
            model.eval()
            r["ckpt_step"] = ck["iter_num"]
            r["common_val"] = mean_loss(lambda x: model(x, x)[0], windows)  # targets given: logits at every position
        else:
            model = load_run(r["dir"], "latest")
            r["common_val"] = mean_loss(lambda x: model(x)[0], windows)


def table(rows, iters):
    common = all("common_val" in r for r in rows)
    lines = ["| program | threads | seeds | final val loss, own eval, mean (min-max) | "
             + ("whole val split, mean (min-max) | " if common else "")
             + "wall s, mean (min-max) | tokens/s |",
             "|---|---|---|---|" + ("---|" if common else "") + "---|---|"]
    keys = sorted({(r["program"], r["threads"]) for r in rows})
    for prog, th in keys:
        rs = [r for r in rows if r["program"] == prog and r["threads"] == th]
        v = [r["val"] for r in rs]
        w = [r["wall_s"] for r in rs]
        tps = iters * BATCH * CONTEXT / statistics.mean(w)
        cv = [r["common_val"] for r in rs] if common else []
        cell = f"{statistics.mean(cv):.4f} ({min(cv):.4f}-{max(cv):.4f}) | " if common else ""
        lines.append(f"| {prog} | {th} | {len(rs)} | {statistics.mean(v):.4f} ({min(v):.4f}-{max(v):.4f}) | "
                     f"{cell}{statistics.mean(w):.1f} ({min(w):.1f}-{max(w):.1f}) | {tps:,.0f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nanogpt", required=True, help="a copy of nanoGPT's public repository")
    ap.add_argument("--out", required=True, help="where the runs go")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--programs", default="nanogpt,stacklab")
    ap.add_argument("--stacklab", default=os.path.join(REPO, "build", "stacklab"))
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with torch and numpy")
    ap.add_argument("--no-common-eval", action="store_true",
                    help="skip scoring the final models on the whole val split")
    ap.add_argument("--rescore", action="store_true", help="train nothing: score the runs of OUT/runs.jsonl")
    args = ap.parse_args()
    if not os.path.isfile(TEXT):
        sys.exit(f"vs_nanogpt: {TEXT} is missing; bring it with: python3 scripts/get_data.py")
    programs = args.programs.split(",")
    os.makedirs(args.out, exist_ok=True)
    work = prepare_nanogpt(args.nanogpt, args.out, args.python) if "nanogpt" in programs else None
    rows = []
    if args.rescore:
        with open(os.path.join(args.out, "runs.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        programs = []
    with open(os.path.join(args.out, "runs.jsonl"), "a") as log:
        for threads in [int(t) for t in args.threads.split(",")] if programs else []:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                for prog in programs:
                    if prog == "nanogpt":
                        r = run_nanogpt(work, args.out, args.python, seed, threads, args.iters)
                    else:
                        r = run_stacklab(args.stacklab, args.out, seed, threads, args.iters)
                    r.update(program=prog, threads=threads, seed=seed, iters=args.iters)
                    rows.append(r)
                    log.write(json.dumps(r) + "\n")
                    log.flush()
                    print(f"{prog} threads={threads} seed={seed}: val {r['val']:.4f}, {r['wall_s']:.1f} s",
                          flush=True)
    if not args.no_common_eval:
        common_eval(rows, work or os.path.join(args.out, "nanogpt_src"))
        with open(os.path.join(args.out, "scored.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    print(table(rows, args.iters))


if __name__ == "__main__":
    main()
