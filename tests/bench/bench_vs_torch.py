#!/usr/bin/env python3
"""stacklab's training step against plain PyTorch eager on the same model, config by config.

For each config (default: configs/bench/*.json) it alternates, --repeats times, one process of
`stacklab bench CONFIG --json --threads n` per n in --stacklab-threads (default 1,2) and one
torch worker process per intra-op thread count in {1, 2} (torch.set_num_threads(n),
OMP_NUM_THREADS=n). Both sides run with OMP_WAIT_POLICY=PASSIVE, so that neither spins on a
shared machine; each side's best thread count is compared (stacklab-best / torch-best). The torch worker builds
scripts/stacklab/runs/torch_model.py's model from the resolved `model` section stacklab reports, float32,
AdamW with the config's hyperparameters, and times forward+loss, backward and
optimizer.step + zero_grad exactly as `stacklab bench` does. Per side the median over repeats
of each process's median ms/step is reported; torch-best is the faster thread setting.
GFLOP/s on both sides: 6*N_matmul*B*T + 12*L*B*T^2*C FLOPs per step (full T^2; src/train/bench.h).
The sgemm ceiling is `stacklab bench --sgemm CONFIG --threads 2`: OpenBLAS on the config's own
Linear shapes. Not here: correctness (tests/parity/torch_parity.py checks that).

    /usr/bin/python3 tests/bench/bench_vs_torch.py [--stacklab build/stacklab] [--repeats 3]
        [--steps N] [--warmup W] [--md docs/table.md] [configs/bench/b1.json ...]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/bench/../..
TARGETS = {"b1": 0.3, "b2": 0.3, "b3": 0.3, "b4": 0.7, "b5": 0.7}  # stacklab / torch-best, at most


# ---- the torch side (runs in its own process) --------------------------------------------------

def torch_worker(spec):
    """Times `steps` training steps after `warmup`; prints one JSON object."""
    import resource
    import time

    import torch
    from stacklab.runs import torch_model  # torch_run puts scripts/ on the worker's PYTHONPATH

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    m = spec["model"]
    model = torch_model.build_model(m).float()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, m.get("init_std", 0.02))
    o = spec["optim"]
    opt = torch.optim.AdamW(model.parameters(), lr=o["learning_rate"], betas=(o["beta1"], o["beta2"]),
                            eps=o["eps"], weight_decay=o["weight_decay"], foreach=spec["foreach"])
    B, T, V = spec["batch_size"], m["block_size"], m["vocab_size"]
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, V, (B, T), generator=g)
    y = torch.randint(0, V, (B, T), generator=g)
    fwd, bwd, upd, step = [], [], [], []
    for s in range(spec["warmup"] + spec["steps"]):
        t0 = time.perf_counter()
        _, loss = model(x, y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t3 = time.perf_counter()
        if s >= spec["warmup"]:
            fwd.append(1e3 * (t1 - t0))
            bwd.append(1e3 * (t2 - t1))
            upd.append(1e3 * (t3 - t2))
            step.append(1e3 * (t3 - t0))
    med = statistics.median
    print(json.dumps({"ms_per_step": med(step), "ms_min": min(step), "ms_max": max(step),
                      "forward_ms": med(fwd), "backward_ms": med(bwd), "optimizer_ms": med(upd),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
                      "threads": spec["threads"], "torch": torch.__version__}))


# ---- the driver ---------------------------------------------------------------------------------

def run_json(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"bench_vs_torch: {' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def stacklab_run(args, cfg, threads):
    cmd = [args.stacklab, "bench", cfg, "--json", "--threads", str(threads)]
    if args.steps:
        cmd += ["--steps", str(args.steps)]
    if args.warmup is not None:
        cmd += ["--warmup", str(args.warmup)]
    return run_json(cmd, env=dict(os.environ, OMP_WAIT_POLICY=args.omp_wait_policy))


def torch_run(args, sl, optim, threads, steps, warmup):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY=args.omp_wait_policy,
               MKL_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join(p for p in (os.path.join(REPO, "scripts"), os.environ.get("PYTHONPATH"))
                                          if p))
    spec = {"model": sl["model"], "optim": optim, "batch_size": sl["batch_size"], "threads": threads,
            "steps": steps, "warmup": warmup, "foreach": args.foreach}
    return run_json([args.python, os.path.abspath(__file__), "--torch-worker", json.dumps(spec)], env=env)


def resolved_optim(args, cfg):
    out = subprocess.run([args.stacklab, "validate", cfg], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench_vs_torch: stacklab validate {cfg} failed:\n{out.stderr}")
    return json.loads(out.stdout)["optim"]


def bench_config(args, cfg):
    name = os.path.splitext(os.path.basename(cfg))[0]
    optim = resolved_optim(args, cfg)
    ceilings = []  # one sgemm measurement per round, in the alternation like the rest
    ours, theirs = {n: [] for n in args.stacklab_threads}, {1: [], 2: []}
    for rep in range(args.repeats):
        ceilings.append(run_json([args.stacklab, "bench", "--sgemm", cfg, "--threads", "2", "--json"],
                                 env=dict(os.environ, OMP_WAIT_POLICY=args.omp_wait_policy))["ceiling_gflops"])
        for n in args.stacklab_threads:
            ours[n].append(stacklab_run(args, cfg, n))
        first = ours[args.stacklab_threads[0]][-1]
        steps = first["steps"]
        warmup = args.warmup if args.warmup is not None else 3
        for n in (1, 2):
            theirs[n].append(torch_run(args, first, optim, n, steps, warmup))
        print(f"  {name} round {rep + 1}/{args.repeats}: stacklab "
              + ", ".join(f"{n}t {ours[n][-1]['ms_per_step']:.2f} ms" for n in args.stacklab_threads)
              + f"; torch 1t {theirs[1][-1]['ms_per_step']:.2f} ms, 2t {theirs[2][-1]['ms_per_step']:.2f} ms",
              file=sys.stderr)

    def med(runs, key):
        return statistics.median(r[key] for r in runs)
    first = ours[args.stacklab_threads[0]][0]
    flops = first["flops_per_step"]
    rows = [("stacklab", n, ours[n]) for n in args.stacklab_threads] + [("torch", n, theirs[n]) for n in (1, 2)]
    table = []
    for who, n, runs in rows:
        ms = med(runs, "ms_per_step")
        table.append({"who": who, "threads": n, "ms": ms, "min": min(r["ms_min"] for r in runs),
                      "max": max(r["ms_max"] for r in runs), "fwd": med(runs, "forward_ms"),
                      "bwd": med(runs, "backward_ms"), "opt": med(runs, "optimizer_ms"),
                      "gflops": flops / (ms * 1e6), "rss": med(runs, "peak_rss_mb")})
    ns = len(args.stacklab_threads)
    ours_best = min(table[:ns], key=lambda r: r["ms"])
    best = min(table[ns:], key=lambda r: r["ms"])
    return {"name": name, "config": cfg, "rows": table, "ours": ours_best, "best": best,
            "ratio": ours_best["ms"] / best["ms"],
            "ceiling": statistics.median(ceilings), "flops": flops, "n_params": first["n_params"],
            "target": TARGETS.get(name)}


def render(results, machine):
    lines = [f"Machine: {machine}. Medians over repeated alternations; each side's best of its thread "
             "counts (threads in parentheses); OMP_WAIT_POLICY=PASSIVE on both sides.", "",
             "| config | stacklab-best ms/step | torch-best ms/step | ratio (target) | stacklab GFLOP/s | "
             "torch GFLOP/s | sgemm ceiling (2t) | stacklab % of ceiling | peak RSS stacklab / torch MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, b = r["ours"], r["best"]
        tgt = f"<= {r['target']}" if r["target"] else "-"
        ok = "" if not r["target"] else (" ok" if r["ratio"] <= r["target"] else " MISSED")
        lines.append(f"| {r['name']} | {s['ms']:.2f} ({s['threads']}t) | {b['ms']:.2f} ({b['threads']}t) | "
                     f"{r['ratio']:.2f} ({tgt}{ok}) | {s['gflops']:.1f} | {b['gflops']:.1f} | {r['ceiling']:.1f} | "
                     f"{100 * s['gflops'] / r['ceiling']:.0f}% | {s['rss']:.0f} / {b['rss']:.0f} |")
    lines += ["", "Per config (ms; min-max over all timed steps; fwd/bwd/opt are medians):", ""]
    for r in results:
        lines += [f"**{r['name']}** ({r['config']}, {r['n_params']:,} parameters, {r['flops'] / 1e9:.2f} GFLOP/step)",
                  "", "| run | threads | ms/step | min-max | forward | backward | optimizer | GFLOP/s | peak RSS MB |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for row in r["rows"]:
            lines.append(f"| {row['who']} | {row['threads']} | {row['ms']:.2f} | {row['min']:.2f}-{row['max']:.2f} | "
                         f"{row['fwd']:.2f} | {row['bwd']:.2f} | {row['opt']:.2f} | {row['gflops']:.1f} | "
                         f"{row['rss']:.0f} |")
        lines.append("")
    return "\n".join(lines)


def machine_name():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "?")
    except OSError:
        model = "?"
    return f"{model}, {os.cpu_count()} cores"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--torch-worker":
        torch_worker(json.loads(sys.argv[2]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("configs", nargs="*", help="config files (default: configs/bench/*.json)")
    ap.add_argument("--stacklab", default=os.path.join(REPO, "build", "stacklab"))
    ap.add_argument("--python", default=sys.executable, help="python with torch for the workers")
    ap.add_argument("--repeats", type=int, default=3, help="alternations per config")
    ap.add_argument("--steps", type=int, default=0, help="timed steps per process (default: stacklab's)")
    ap.add_argument("--warmup", type=int, default=None)
    ap.add_argument("--stacklab-threads", default="1,2", help="thread counts to run stacklab at (best is compared)")
    ap.add_argument("--omp-wait-policy", default="PASSIVE", help="OMP_WAIT_POLICY for both sides")
    ap.add_argument("--foreach", action=argparse.BooleanOptionalAction, default=False,
                    help="torch AdamW foreach (multi-tensor) implementation")
    ap.add_argument("--md", help="also write the tables as markdown to this file")
    args = ap.parse_args()
    args.stacklab_threads = [int(t) for t in args.stacklab_threads.split(",")]
    configs = args.configs or sorted(glob.glob(os.path.join(REPO, "configs", "bench", "*.json")))
    if not configs:
        ap.error("no configs given and none in configs/bench/")
    results = []
    for cfg in configs:
        results.append(bench_config(args, cfg))
    text = render(results, machine_name())
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
