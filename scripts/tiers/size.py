"""`tier.py size BIN FILE... [--timing FILE] [--floor [--jobs N]]`: a tier's runs, how many are done,
and their estimated core-hours before it runs.

size reads `stacklab sweep --dry-run` (the sweep's own expansion and states) and times each model shape
with `stacklab bench` (cost_model).
"""
import json
import os
import re
import subprocess
import time

from stacklab.runs.tier_lists import EXTENDS, TierError, base_value, get_key, read_json

# What a step costs depends on: the model's shape, the batch, and (since bench times the trainer's
# step) the micro-batches per step and whether dropout draws masks.
SHAPE_KEYS = ("model.n_layer", "model.n_embd", "model.n_head", "model.block_size", "model.vocab_size",
              "train.batch_size", "train.grad_accum_steps", "model.dropout")


NO_CEILING = []  # ["--no-ceiling"] when the binary's bench has it (set in cmd_size)


LINE = re.compile(r"^\s+(\S+)\s+(\S+)\s+stacklab (train|probe) (\S+)(.*)$")
FLAG = re.compile(r"--([a-z_]+\.[a-z_0-9.]+)=(\S+)")  # a listed command's --key=value


def dry_run(binary, files, on_change=None):
    """[(id, state, mode, base, {key: value}, run_dir, seeds)] from `stacklab sweep --dry-run`
    (with `--on-change ON_CHANGE` when given). A run that started lists `stacklab train --resume DIR`
    and, for an extension's copy not yet extended, the keys it is continued with (`--train.max_iters=N
    ...`): its keys come from DIR/config.json with those on top, its base from its sweep file."""
    cmd = [binary, "sweep", *files, "--dry-run"] + (["--on-change", on_change] if on_change else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise TierError(f"{' '.join(cmd[1:])} failed:\n{p.stderr.strip()}")
    bases = {}
    for f in files:
        s = read_json(f)
        bases[s.get("name")] = os.path.join(os.path.dirname(os.path.abspath(f)), s.get("base", ""))
    runs = []
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        rid, state, mode, base, rest = m.groups()
        sweep = rid.split("/", 1)[0] if "/" in rid else next(iter(bases))
        if base == "--resume":
            run_dir = rest.split()[0]
            cfg = read_json(os.path.join(run_dir, "config.json"))
            keys = SHAPE_KEYS + ("train.max_iters", "train.eval_interval", "train.eval_iters")
            kv = {k: get_key(cfg, k) for k in keys if get_key(cfg, k) is not None}
            kv.update(FLAG.findall(rest))
            runs.append((rid, state, mode, bases[sweep], kv, run_dir, 1))
            continue
        kv = dict(FLAG.findall(rest))
        out = re.search(r"--out (\S+)", rest)
        seeds = re.search(r"--seeds (\S+)", rest)
        runs.append((rid, state, mode, base, kv, out.group(1) if out else None,
                     len(seeds.group(1).split(",")) if seeds else 1))
    if not runs:
        raise TierError(f"stacklab sweep --dry-run {' '.join(files)}: no runs listed")
    return runs


def value(kv, base_cfg, key):
    v = kv.get(key, get_key(base_cfg, key))
    return v


def cost_model(binary, runs, floor=False):
    """Seconds per run on this machine: each distinct model shape (depth, width, heads, context,
    vocab, batch) is timed once with `stacklab bench BASE <shape> --steps 3 --warmup 1 --threads 1
    --json [--no-ceiling]` (the base config's wiring); a training run costs max_iters x ms_per_step plus,
    per eval (every eval_interval steps and at step 0), 2 x eval_iters forward passes (the train and
    the val split), a probe one forward+backward per seed. Layer records and checkpoints are not counted.

    With floor=True the bench also times the shape's own products (median of 3 rounds) through OpenBLAS
    (ceiling_gflops) and, in a build whose products run elsewhere (libxsmm, the default), through the
    build's own path (ceiling_build_gflops), and a run costs its FLOPs at the faster of the two
    instead: max_iters x flops_per_step plus the eval forwards at a third of a step's FLOPs (bench.h's
    formula: forward 2, backward 4 per weight and token). That is the least this build could take on
    this core while its products run at their best measured speed, with nothing else in the step.
    (Before 2026-12-06 the floor was OpenBLAS's alone, the one path then.) Returns ([seconds per
    run], {shape: (ms, fwd)}) or, with floor, {shape: (flops_per_step, ceiling_gflops)}."""
    bases, timed, secs = {}, {}, []
    for rid, state, mode, base, kv, run_dir, nseeds in runs:
        cfg = bases.setdefault(base, read_json(base))
        shape = tuple((k, str(kv[k])) for k in SHAPE_KEYS if k in kv)
        key = (base, shape)
        if key not in timed:
            cmd = [binary, "bench", base, *[f"--{k}={v}" for k, v in shape], "--steps", "3", "--warmup", "1",
                   "--threads", "1", "--json"] + (["--rounds", "3"] if floor else NO_CEILING)
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                raise TierError(f"{' '.join(cmd)} failed:\n{p.stderr.strip()}")
            j = json.loads(p.stdout.strip().splitlines()[-1])
            if floor:
                if not j.get("ceiling_gflops"):
                    raise TierError(f"{' '.join(cmd)}: no ceiling_gflops in its output (a binary without the "
                                    "sgemm ceiling cannot give the floor)")
                best = max(j["ceiling_gflops"], j.get("ceiling_build_gflops") or 0.0)
                timed[key] = (j["flops_per_step"], best)
            else:
                # forward_ms adds up the step's grad_accum_steps micro-batch forwards; an eval batch
                # is one forward (without dropout's masks, which bench's forward draws: a slight
                # overestimate)
                timed[key] = (j["ms_per_step"], j["forward_ms"] / int(j.get("grad_accum_steps") or 1))
        if floor:
            flops, gflops = timed[key]
            accum = int(value(kv, cfg, "train.grad_accum_steps") or 1)  # flops count every micro-batch
            step, fwd = flops / (gflops * 1e6), flops / 3 / accum / (gflops * 1e6)  # ms at the ceiling
        else:
            step, fwd = timed[key]
        if mode == "probe":
            s = nseeds * step / 1000
        else:
            iters = int(value(kv, cfg, "train.max_iters"))
            every = int(value(kv, cfg, "train.eval_interval") or 0)
            evals = (iters // every + 1) if every > 0 else 1
            s = (iters * step + evals * 2 * int(value(kv, cfg, "train.eval_iters") or 0) * fwd) / 1000
        secs.append(s)
    return secs, timed


def extension_steps(runs, files):
    """The runs with each extension sweep's (EXTENDS) new runs costed at their steps past the source
    sweep's horizon, the part `extend` trains (max_iters minus the source's; the evals counted are
    then those of that many steps)."""
    horizon = {}
    for f in files:
        s = read_json(f)
        horizon[s.get("name")] = base_value(f, s, "train.max_iters")
    out = []
    for r in runs:
        rid, state, mode, base, kv, run_dir, nseeds = r
        sweep = rid.split("/", 1)[0] if "/" in rid else next(iter(horizon))
        src = horizon.get(EXTENDS.get(sweep))
        # new: trained from the source's horizon once copied; resumable: a copy still at that horizon
        if src is not None and state in ("new", "resumable") and "train.max_iters" in kv:
            kv = dict(kv, **{"train.max_iters": str(int(kv["train.max_iters"]) - int(src))})
        out.append((rid, state, mode, base, kv, run_dir, nseeds))
    return out


def cmd_size(args):
    t0 = time.time()
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        raise TierError(f"size: the first argument names the stacklab binary, and '{args.binary}' is not an "
                        "executable file (e.g. `python3 scripts/tier.py size build/stacklab "
                        "$(python3 scripts/tier.py files quick)`)")
    # Newer binaries also time the sgemm ceiling in every bench; the cost model needs only the steps.
    helptext = subprocess.run([args.binary, "bench", "--help"], capture_output=True, text=True).stdout
    NO_CEILING[:] = ["--no-ceiling"] if "--no-ceiling" in helptext else []
    # The extension sweeps are listed as `reproduce.sh` runs them (--on-change extend): a copy not yet
    # continued to their horizon is resumable there, not a changed run.
    later = [f for f in args.files if read_json(f).get("name") in EXTENDS]
    first = [f for f in args.files if f not in later]
    runs = (dry_run(args.binary, first) if first else []) + \
        (dry_run(args.binary, later, on_change="extend") if later else [])
    runs = extension_steps(runs, args.files)
    secs, timed = cost_model(args.binary, runs)
    shapes = len(timed)
    done = [i for i, r in enumerate(runs) if r[1] in ("completed", "diverged")]
    n_probe = sum(r[2] == "probe" for r in runs)
    total_h = sum(secs) / 3600
    todo_h = sum(s for i, s in enumerate(secs) if i not in set(done)) / 3600
    # Calibration check: the estimate against the completed training runs' own wall time.
    pred, took = 0.0, 0.0
    for i in done:
        rd = runs[i][5]
        summ = os.path.join(rd, "summary.json") if rd else ""
        if runs[i][2] == "train" and os.path.isfile(summ):
            w = (read_json(summ) or {}).get("wall_seconds")
            if w:
                pred, took = pred + secs[i], took + w
    model = (f"per run: ms/step and forward ms from `stacklab bench --steps 3 --threads 1` at each of its "
             f"{shapes} model shapes, x train.max_iters, plus the eval forwards; 1 core per run; layer records and "
             f"checkpoints not counted; calibrated in {time.time() - t0:.0f} s")
    print(f"reproduce: size: {len(runs)} runs ({n_probe} probes, {len(runs) - n_probe} trainings), "
          f"{len(done)} done already, {len(runs) - len(done)} to run")
    print(f"reproduce: estimated {total_h:.3g} core-hours in all, {todo_h:.3g} core-hours to go ({model})")
    print("reproduce: measured: " + "; ".join(
        f"{', '.join(f'{k.split(chr(46))[-1]}={v}' for k, v in shape) or 'base shape'}: {ms:.1f} ms/step, "
        f"forward {fwd:.1f} ms"
        for (_, shape), (ms, fwd) in sorted(timed.items(), key=lambda kv: kv[1][0])))
    if took:
        print(f"reproduce: check: for the completed trainings the model predicts {pred / 3600:.3f} h, they took "
              f"{took / 3600:.3f} h (ratio {took / pred:.2f})")
    floor_h = None
    if args.floor:
        fsecs, ftimed = cost_model(args.binary, runs, floor=True)
        floor_h = sum(fsecs) / 3600
        wall = sum(fsecs) / args.jobs
        ratio = f"{total_h / floor_h:.2f}x" if floor_h > 0 else "n/a"
        print(f"reproduce: floor: at the sgemm ceiling the runs take at least {floor_h:.3g} core-hours, "
              f"{wall / 60:.1f} minutes of sweeps with {args.jobs} runs at once (the estimate above is "
              f"{ratio} that). Per shape: " + "; ".join(
                  f"{', '.join(f'{k.split(chr(46))[-1]}={v}' for k, v in shape) or 'base shape'}: "
                  f"{fl / 1e9:.2f} GFLOP/step at {g:.1f} GFLOP/s"
                  for (_, shape), (fl, g) in sorted(ftimed.items(), key=lambda kv: kv[1][0])))
    if args.timing:
        rec = {"stage": "size", "runs": len(runs), "done": len(done), "probes": n_probe, "core_hours": total_h,
               "core_hours_to_go": todo_h, "model": model, "completed_predicted_h": pred / 3600 if took else None,
               "completed_took_h": took / 3600 if took else None}
        if floor_h is not None:
            rec["floor_core_hours"] = floor_h
        with open(args.timing, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
    return 0
