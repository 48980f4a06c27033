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

    /usr/bin/python3 tests/bench/vs_nanogpt.py --nanogpt /tmp/nanogpt --out /tmp/vs_nanogpt \
        [--seeds 3] [--threads 1,2] [--stacklab build/stacklab] [--iters 2000] [--programs nanogpt,stacklab]
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


def table(rows, iters):
    lines = ["| program | threads | seeds | final val loss, mean (min-max) | wall s, mean (min-max) | tokens/s |",
             "|---|---|---|---|---|---|"]
    keys = sorted({(r["program"], r["threads"]) for r in rows})
    for prog, th in keys:
        rs = [r for r in rows if r["program"] == prog and r["threads"] == th]
        v = [r["val"] for r in rs]
        w = [r["wall_s"] for r in rs]
        tps = iters * BATCH * CONTEXT / statistics.mean(w)
        lines.append(f"| {prog} | {th} | {len(rs)} | {statistics.mean(v):.4f} ({min(v):.4f}-{max(v):.4f}) | "
                     f"{statistics.mean(w):.1f} ({min(w):.1f}-{max(w):.1f}) | {tps:,.0f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nanogpt", required=True, help="a copy of nanoGPT's public repository")
    ap.add_argument("--out", required=True, help="where the runs go")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--programs", default="nanogpt,stacklab")
    ap.add_argument("--stacklab", default=os.path.join(REPO, "build", "stacklab"))
    ap.add_argument("--python", default="/usr/bin/python3", help="a Python with torch and numpy")
    args = ap.parse_args()
    if not os.path.isfile(TEXT):
        sys.exit(f"vs_nanogpt: {TEXT} is missing; bring it with: python3 scripts/get_data.py")
    programs = args.programs.split(",")
    os.makedirs(args.out, exist_ok=True)
    work = prepare_nanogpt(args.nanogpt, args.out, args.python) if "nanogpt" in programs else None
    rows = []
    with open(os.path.join(args.out, "runs.jsonl"), "a") as log:
        for threads in [int(t) for t in args.threads.split(",")]:
            for seed in range(args.seeds):
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
    print(table(rows, args.iters))


if __name__ == "__main__":
    main()
