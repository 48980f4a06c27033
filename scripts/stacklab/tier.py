"""The study's tiers for scripts/reproduce.sh: the full tier's sweep files, the sweep files of one
invocation, and the size and estimated cost of a tier before it runs.

    python3 scripts/tier.py full-configs [--check]   # configs/experiments/full/*.json from the quick tier
    python3 scripts/tier.py files quick|full [--claims] [--text] [--converge] [--signal]   # a tier's sweep files
    python3 scripts/tier.py later                      # the extension sweeps, run after their sources
    python3 scripts/tier.py list quick|claims|text|converge|signal|full|full-only|extends|covered   # one line
    python3 scripts/tier.py text-files FILE...         # the sweep files that read a text file
    python3 scripts/tier.py extend BIN OUT             # copy the runs an extension sweep continues
    python3 scripts/tier.py prepare OUT FILE... [--tiny]   # OUT/sweeps/<name>.json, out_dir OUT/<name>
    python3 scripts/tier.py size BIN FILE... [--timing OUT/timing.jsonl] [--floor [--jobs N]]   # runs, core-hours
    python3 scripts/tier.py deepest OUT                # the deepest pre-norm res/no-res runs, seed 0

full-configs derives the full tier from the quick tier's files (seeds, rates and horizon below), so
a change of the quick tier's horizon or depths is one edit plus a rerun (--check fails while the
written files differ). prepare rewrites each sweep's out_dir (and base, made absolute) so that
`reproduce.sh --out DIR` never reuses another directory's runs (a relative data.path is made absolute
against the source file's folder, as stacklab sweep reads it), and sets its train.keep_final
(keep_final: the optimizer state is kept only where an extension may follow); --tiny scales a tier down for the
tests through the same path (depths capped at 2, 2 seeds, the first and last rate, a 16-wide
model, 6 steps). size reads `stacklab sweep --dry-run` (the sweep's own expansion and states) and
times each model shape with `stacklab bench` (see cost_model). Errors name the file, exit 1.
Not here: running the sweeps (reproduce.sh), the report (report.py).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from stacklab import paths

ROOT = paths.ROOT
QUICK_DIR = os.path.join(ROOT, "configs", "experiments")
FULL_DIR = os.path.join(QUICK_DIR, "full")
# The quick tier's sweeps, and the sweeps of claims.json's configs (`reproduce.sh --claims` adds
# them to the quick tier; claims.py reads their output: round 1's, then round 2's). The quick tier's
# pre- vs post-norm core of the map (map_core: pre and post x scaled, xavier x lr 1e-3, 1e-2 at L = 32,
# study_rules.json's rule P) and its real-text point (text_point: L = 32, `x + f(norm(x))`,
# `norm(x + f(x))`, `f(norm(x))`) are cells of stability_map and text_train, which run instead where a
# tier has them (COVERED_BY). The text study's sweeps (TEXT_SWEEPS, tiny Shakespeare: `reproduce.sh --text`).
# The escape law's core (escape_law_core: issue 45, configs/experiments/escape_law_rules.json's budget.core:
# no-residual stacks at L = 1-3, 3 seeds, each stopped at its escape) is in the quick tier; the whole law
# (escape_law_h0/h1/h2, escape_law_scaled_h*) is opt-in, run by hand (docs/reproducing.md).
QUICK_SWEEPS = ("probe_grid", "train_grid", "lr_grid", "map_core", "text_point", "escape_law_core")
CLAIMS_SWEEPS = ("claims_probe", "claims_probe_rank", "claims_probe_l32", "claims_train", "stability_map",
                 "claims2_probe", "claims2_probe_l32", "claims2_train", "claims2_qknorm")  # round 1, round 2
TEXT_SWEEPS = ("text_probe", "text_train", "text_map")
# The convergence study (issue 36, configs/experiments/convergence_rules.json; `reproduce.sh --converge`,
# opt-in, in no tier by default). converge_synth_long continues converge_synth's runs without a residual
# from H to 4H: EXTENDS names each extension sweep's source, whose completed runs `extend` copies and
# `stacklab train --resume --train.max_iters=N` continues, so nothing is trained twice.
CONVERGE_SWEEPS = ("converge_synth", "converge_synth_map", "converge_text", "converge_text_map", "converge_synth_long")
EXTENDS = {"converge_synth_long": "converge_synth"}
# What a finished run of a tier's sweep keeps of its checkpoints (train.keep_final, docs/reference.md;
# prepare writes it into every sweep that does not set it): the optimizer state only where an extension
# may continue the run (an extension sweep's source, and the extension, which may be extended again),
# the weights alone elsewhere: the report reads no checkpoint, load_run and `stacklab sample` the
# weights (the default study's 1.4 GB was almost all optimizer state).
KEEP_FULL = tuple(EXTENDS) + tuple(EXTENDS.values())
# The residual-or-signal study (issue 45 part 2, configs/experiments/signal_rules.json; `reproduce.sh
# --signal`, opt-in, in no tier by default): the probe at init, then the trainings, each run stopped at
# its escape. signal_study.py judges them from OUT/<name>.
SIGNAL_SWEEPS = ("signal_probe", "signal_shaped", "signal_sublayer")
COVERED_BY = {"map_core": "stability_map", "text_point": "text_train"}
# The full tier: >= 5 training seeds (from the quick file's first seed: round 2 of the claims runs
# at seeds 5-7, so 5-9), these rates at every wiring and depth, twice the
# quick tier's horizon. Sweeps of the quick tier that the full tier widens, and lr_grid, which the
# full tier's train_grid contains (every depth at every rate).
FULL_SEEDS = [0, 1, 2, 3, 4]
FULL_RATES = [0.0003, 0.001, 0.003, 0.01]
FULL_SWEEPS = ("probe_grid", "train_grid", "extras", "extras_init", "extras_lr") + CLAIMS_SWEEPS + TEXT_SWEEPS
HORIZON_FACTOR = 2
# Sweeps whose learning rates are claims.json's (the map's grid, C6's and C7's rates): the full tier
# keeps them as written instead of FULL_RATES. Sweeps whose depth grid gains L = 96 in the full tier
# (claims.json: C1's and C5's probe depths {2, 8, 32, 96}; the stability map).
# The text sweeps keep their rates (study_rules.json's) and gain L = 96 too.
OWN_RATES = ("stability_map", "claims_train", "claims2_train", "claims2_qknorm", "text_train", "text_map")
# train_grid's L = 96 trainings are the full tier's only: the quick tier gave them up for its map core and
# text point (its 25-minute bound, docs/study.md).
FULL_ADD_DEPTHS = {"claims_probe": [96], "claims_probe_rank": [96], "stability_map": [96], "claims2_probe": [96],
                   "text_probe": [96], "text_train": [96], "text_map": [96], "train_grid": [96]}
TINY = {"model.n_embd": 16, "model.n_head": 2, "model.block_size": 16, "train.batch_size": 2,
        "train.max_iters": 6, "train.eval_interval": 2, "train.eval_iters": 1, "train.ckpt_interval": 0,
        "log.layer_interval": 2, "log.log_interval": 2}
# What a step costs depends on: the model's shape, the batch, and (since bench times the trainer's
# step) the micro-batches per step and whether dropout draws masks.
SHAPE_KEYS = ("model.n_layer", "model.n_embd", "model.n_head", "model.block_size", "model.vocab_size",
              "train.batch_size", "train.grad_accum_steps", "model.dropout")


NO_CEILING = []  # ["--no-ceiling"] when the binary's bench has it (set in cmd_size)


class TierError(Exception):
    pass


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise TierError(f"{path}: cannot read ({e.strerror})")
    except ValueError as e:
        raise TierError(f"{path}: not valid JSON ({e})")


def get_key(cfg, dotted):
    node = cfg
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def base_value(sweep_path, sweep, key):
    """A key's value in a sweep: its overrides, else its base config (following `extends`)."""
    if key in (sweep.get("overrides") or {}):
        return sweep["overrides"][key]
    path = os.path.join(os.path.dirname(sweep_path), sweep["base"])
    seen = set()
    while path and path not in seen:
        seen.add(path)
        cfg = read_json(path)
        v = get_key(cfg, key)
        if v is not None:
            return v
        ext = cfg.get("extends")
        path = os.path.join(os.path.dirname(path), ext) if ext else None
    return None


# ---- full-configs ----------------------------------------------------------------------------

def full_sweep(name):
    src = os.path.join(QUICK_DIR, name + ".json")
    q = read_json(src)
    quick_iters = base_value(src, q, "train.max_iters")
    if not isinstance(quick_iters, int):
        raise TierError(f"{src}: no integer train.max_iters in its overrides or base")
    # full/ is one folder down: its base and a relative data.path (both read against the sweep
    # file's folder) gain "../".
    f = dict(q)
    f["base"] = os.path.join("..", q["base"])

    f["out_dir"] = "runs/deep_stacking_full/" + name
    first = (q.get("seeds") or [0])[0]
    f["seeds"] = [first + s for s in FULL_SEEDS]
    f["description"] = (f"Full tier of {name}.json (written by scripts/tier.py full-configs; edit the quick file "
                        f"and rerun): " + q.get("description", ""))
    if q.get("mode", "train") == "train":
        f["overrides"] = dict(q.get("overrides") or {}, **{"train.max_iters": HORIZON_FACTOR * quick_iters})
        if name not in OWN_RATES:
            f["grid"] = dict(q.get("grid") or {}, **{"optim.learning_rate": FULL_RATES})
    if name in FULL_ADD_DEPTHS:
        grid = dict(f.get("grid") or {})
        if "model.n_layer" not in grid:
            raise TierError(f"{src}: no model.n_layer grid to add the full tier's depths to")
        grid["model.n_layer"] = grid["model.n_layer"] + [d for d in FULL_ADD_DEPTHS[name]
                                                         if d not in grid["model.n_layer"]]
        f["grid"] = grid
    path = (f.get("overrides") or {}).get("data.path")
    if isinstance(path, str) and path and not os.path.isabs(path):
        f["overrides"] = dict(f["overrides"], **{"data.path": os.path.join("..", path)})
    return f


def cmd_full_configs(args):
    os.makedirs(FULL_DIR, exist_ok=True)
    stale = []
    for name in FULL_SWEEPS:
        text = json.dumps(full_sweep(name), indent=2) + "\n"
        path = os.path.join(FULL_DIR, name + ".json")
        old = open(path, encoding="utf-8").read() if os.path.isfile(path) else None
        if old != text:
            stale.append(path)
            if not args.check:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
    if args.check and stale:
        print("tier.py: full tier out of date with the quick tier (run `python3 scripts/tier.py full-configs`): "
              + ", ".join(os.path.relpath(p, ROOT) for p in stale), file=sys.stderr)
        return 1
    print(("up to date: " if args.check else "wrote: ") + ", ".join(f"full/{n}.json" for n in FULL_SWEEPS))
    return 0


def tier_sweeps(tier, claims=False, text=False, converge=False, signal=False):
    """The sweep names of a tier: the full tier's, or the quick tier's with the claims sweeps
    (--claims), the text study's (--text) added; either with the convergence study's (--converge)
    and the residual-or-signal study's (--signal) added; a quick sweep whose cells an added sweep
    holds (COVERED_BY) is left out, so no config runs twice."""
    extra = (CONVERGE_SWEEPS if converge else ()) + (SIGNAL_SWEEPS if signal else ())
    if tier == "full":
        return FULL_SWEEPS + extra
    names = QUICK_SWEEPS + (CLAIMS_SWEEPS if claims else ()) + (TEXT_SWEEPS if text else ()) + extra
    return tuple(n for n in names if COVERED_BY.get(n) not in names)


def reads_text(sweep_file) -> bool:
    """Whether a sweep file's runs read a text file: data.source "text" in its overrides, a variant, its
    grid or, where none of these sets it, its base config (reproduce.sh runs the data step first)."""
    s = read_json(sweep_file)
    values = [(s.get("overrides") or {}).get("data.source")]
    values += [v.get("data.source") for v in s.get("variants") or []]
    values += list((s.get("grid") or {}).get("data.source") or [])
    if not any(values) and s.get("base"):
        base = read_json(os.path.join(os.path.dirname(os.path.abspath(sweep_file)), s["base"]))
        values.append((base.get("data") or {}).get("source"))
    return "text" in values


def text_sweeps(names, tier_dir=QUICK_DIR):
    """The sweeps among `names` (files in tier_dir) that read a text file (reads_text)."""
    return [n for n in names if reads_text(os.path.join(tier_dir, n + ".json"))]


# The lists `tier.py list` prints (reproduce.sh's --help names them from here).
LISTS = {"quick": lambda: QUICK_SWEEPS, "claims": lambda: CLAIMS_SWEEPS, "text": lambda: TEXT_SWEEPS,
         "converge": lambda: CONVERGE_SWEEPS, "signal": lambda: SIGNAL_SWEEPS, "full": lambda: FULL_SWEEPS,
         "full-only": lambda: tuple(n for n in FULL_SWEEPS if n not in tier_sweeps("quick", claims=True, text=True)),
         "extends": lambda: tuple(f"{n} continues {src}" for n, src in EXTENDS.items()),
         "covered": lambda: tuple(f"{by} holds {n}'s cells" for n, by in COVERED_BY.items())}


def cmd_list(args):
    """One of LISTS on one line, comma-separated."""
    print(", ".join(LISTS[args.what]()))
    return 0


def cmd_text_files(args):
    """The files among FILE... whose runs read a text file (reads_text), one a line."""
    for f in args.files:
        if reads_text(f):
            print(f)
    return 0


def cmd_files(args):
    """The source sweep files of a tier, one per line, relative to the repository (reproduce.sh's
    working directory): the quick tier's (with --claims also the claims sweeps, with --text the
    text study's) or the full tier's; either with --converge and --signal's opt-in studies, whose
    files are configs/experiments/'s at both tiers (full-configs derives none of them)."""
    names = tier_sweeps(args.tier, args.claims, args.text, args.converge, args.signal)
    paths = [os.path.join(FULL_DIR if args.tier == "full" and n in FULL_SWEEPS else QUICK_DIR, n + ".json")
             for n in names]
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        hint = " (python3 scripts/tier.py full-configs)" if args.tier == "full" else ""
        raise TierError("no such sweep file: " + ", ".join(os.path.relpath(p, ROOT) for p in missing) + hint)
    for p in paths:
        print(os.path.relpath(p, ROOT))
    return 0


def cmd_later(args):
    """The extension sweeps (EXTENDS), one name a line: reproduce.sh runs them after the others."""
    for name in EXTENDS:
        print(name)
    return 0


def extension_plan(binary, sweep_file, out):
    """[(run dir, max_iters, source run dir)] of an extension sweep prepared into OUT/sweeps/: its runs
    as `stacklab sweep --dry-run` lists them for an empty out_dir (a copy of the file pointing at a
    scratch folder, so the copies already made cannot make the listing refuse them as changed)."""
    import tempfile
    s = read_json(sweep_file)
    src = EXTENDS[s["name"]]
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, s["name"] + ".json")
        with open(probe, "w", encoding="utf-8") as fh:
            json.dump(dict(s, out_dir=os.path.join(tmp, "runs")), fh)
        runs = dry_run(binary, [probe])
    return [(os.path.join(out, s["name"], rid.split("/")[-1]), int(kv["train.max_iters"]),
             os.path.join(out, src, rid.split("/")[-1])) for rid, _, _, _, kv, _, _ in runs]


def run_status(run_dir):
    """(summary status or None, config max_iters or None) of a run directory."""
    summ = os.path.join(run_dir, "summary.json")
    cfg = os.path.join(run_dir, "config.json")
    status = read_json(summ).get("status") if os.path.isfile(summ) else None
    iters = get_key(read_json(cfg), "train.max_iters") if os.path.isfile(cfg) else None
    return status, iters


SETTLED = ("completed", "diverged")  # a source run that will not change any more


def copy_run(src, dst):
    """Copies a run folder (without its lock) so that dst is whole or absent at every instant: into a
    temporary folder beside it (.NAME.copying, which a copy killed midway leaves and the next one
    removes), then one rename. A folder copied file by file and killed midway was a run with a
    completed summary and no config.json, which the sweep took as done."""
    import shutil
    tmp = os.path.join(os.path.dirname(dst), f".{os.path.basename(dst)}.copying")
    if os.path.lexists(tmp):
        shutil.rmtree(tmp)
    shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("train.lock"))
    os.rename(tmp, dst)


def cmd_extend(args):
    """For each extension sweep prepared into OUT/sweeps/: copy each completed source run not yet
    copied (without its lock), and print `RUN_DIR MAX_ITERS` for every copy not yet completed at the
    extension's horizon. `stacklab sweep EXTENSION --on-change extend` then continues each copy to
    MAX_ITERS with `train --resume` (its config differs from the sweep's in the horizon alone), on
    either executor. A source run that did not complete is not copied: the extension sweep then trains
    it from step 0 (a diverged one diverges where it did). Each copy is atomic (copy_run); a copy without
    config.json (made file by file by an older tier.py and killed midway) is refused, named, with the
    fix. Every copy is made before the first line is printed, so a reader that stops early (`| head`)
    leaves none undone. An OUT without a prepared extension sweep is refused (a mistyped OUT copied
    nothing, silently). With --settled, nothing is copied and the
    exit code is 3 unless every source run has completed or diverged (the Slurm path submits the
    extension only then: a source run still queued would otherwise be trained again from step 0)."""
    if not os.path.isdir(args.out):
        raise TierError(f"extend: {args.out}: no such folder (OUT is the study folder reproduce.sh --converge "
                        "--out OUT writes)")
    files = [os.path.join(args.out, "sweeps", name + ".json") for name in EXTENDS]
    if not any(os.path.isfile(f) for f in files):
        raise TierError(f"extend: {args.out} holds no extension sweep ({', '.join(files)}): not a study folder of "
                        "reproduce.sh --converge, or its sweeps not prepared yet (tier.py prepare OUT FILE...)")
    plans = [extension_plan(args.binary, f, args.out) for f in files if os.path.isfile(f)]
    if args.settled:
        waiting = [src for plan in plans for dst, _, src in plan
                   if not os.path.isdir(dst) and run_status(src)[0] not in SETTLED]
        if waiting:
            print(f"tier.py: {len(waiting)} source run(s) of the extension sweeps have not completed yet, "
                  f"e.g. {waiting[0]}", file=sys.stderr)
            return 3
    todo = []
    for plan in plans:
        for dst, iters, src in plan:
            if not os.path.isdir(dst):
                if run_status(src)[0] != "completed":
                    continue
                copy_run(src, dst)
            elif not os.path.isfile(os.path.join(dst, "config.json")):
                raise TierError(f"{dst}: a run folder without config.json (a copy interrupted midway?): it is done "
                                f"under no config, so it is neither continued nor counted; remove it (rm -r {dst}) "
                                "and run tier.py extend again, which copies it whole")
            if run_status(dst) != ("completed", iters):
                todo.append(f"{dst} {iters}")
    for line in todo:
        print(line)
    sys.stdout.flush()  # a closed reader is met here, in main's hands, not at exit
    return 0


# ---- prepare ---------------------------------------------------------------------------------

def tiny(sweep):
    grid = dict(sweep.get("grid") or {})
    if "model.n_layer" in grid:
        grid["model.n_layer"] = sorted({min(d, 2) for d in grid["model.n_layer"]})
    # A depth set in the overrides or a variant (claims_probe_l32, claims_train) is capped too.
    over = sweep.get("overrides") or {}
    if isinstance(over.get("model.n_layer"), int):
        sweep = dict(sweep, overrides=dict(over, **{"model.n_layer": min(over["model.n_layer"], 2)}))
    if isinstance(sweep.get("variants"), list):
        sweep = dict(sweep, variants=[dict(v, **{"model.n_layer": min(v["model.n_layer"], 2)})
                                      if isinstance(v, dict) and isinstance(v.get("model.n_layer"), int) else v
                                      for v in sweep["variants"]])
    if "optim.learning_rate" in grid and len(grid["optim.learning_rate"]) > 2:
        r = sorted(grid["optim.learning_rate"])
        grid["optim.learning_rate"] = [r[0], r[-1]]
    out = dict(sweep, grid=grid, seeds=(sweep.get("seeds") or [0])[:2])
    out["overrides"] = dict(sweep.get("overrides") or {}, **TINY)
    # A warm-up longer than the run is an invalid config: scale it down with the run.
    steps = TINY["train.max_iters"]
    if "optim.warmup_iters" in grid:
        grid["optim.warmup_iters"] = sorted({min(w, steps) for w in grid["optim.warmup_iters"]})
    if isinstance(sweep.get("variants"), list):
        out["variants"] = [dict(v, **{"optim.warmup_iters": min(v["optim.warmup_iters"], steps)})
                           if isinstance(v, dict) and isinstance(v.get("optim.warmup_iters"), int) else v
                           for v in sweep["variants"]]
    return out


def absolute_data_path(sweep, folder):
    """The sweep with a relative data.path (overrides, grid, variants) made absolute against
    `folder`, the source file's: stacklab sweep reads it relative to the sweep file, and prepare
    writes the copy elsewhere."""
    def fix(v):
        return os.path.normpath(os.path.join(folder, v)) if isinstance(v, str) and v and not os.path.isabs(v) else v
    key = "data.path"
    out = dict(sweep)
    if key in (sweep.get("overrides") or {}):
        out["overrides"] = dict(sweep["overrides"], **{key: fix(sweep["overrides"][key])})
    if key in (sweep.get("grid") or {}):
        out["grid"] = dict(sweep["grid"], **{key: [fix(v) for v in sweep["grid"][key]]})
    if isinstance(sweep.get("variants"), list):
        out["variants"] = [dict(v, **{key: fix(v[key])}) if isinstance(v, dict) and key in v else v
                           for v in sweep["variants"]]
    return out


def prepared(path, is_tiny=False) -> dict:
    """The sweep file at `path` as prepare writes it (but its out_dir): base and a relative data.path made
    absolute, and scaled down by tiny() when is_tiny (an extension keeping its ratio to its source's
    horizon). Also what the study judges compare a run's config with (rules_check.py)."""
    s = read_json(path)
    for key in ("name", "base"):
        if not isinstance(s.get(key), str):
            raise TierError(f"{path}: no '{key}' string")
    folder = os.path.dirname(os.path.abspath(path))
    s = dict(absolute_data_path(s, folder), base=os.path.abspath(os.path.join(folder, s["base"])))
    if is_tiny:
        src = EXTENDS.get(s["name"])
        factor = 1
        if src is not None:  # an extension keeps its ratio to its source's horizon, so --tiny extends too
            src_path = os.path.join(folder, src + ".json")
            factor = (base_value(path, read_json(path), "train.max_iters")
                      // base_value(src_path, read_json(src_path), "train.max_iters"))
        s = tiny(s)
        if factor > 1:
            for key in ("train.max_iters", "optim.lr_decay_iters"):
                if key == "train.max_iters" or key in s["overrides"]:
                    s["overrides"][key] = factor * TINY["train.max_iters"]
    return s


def keep_final(name) -> str:
    """train.keep_final of a tier's sweep: "full" where an extension may follow (KEEP_FULL), else "weights"."""
    return "full" if name in KEEP_FULL else "weights"


def with_keep_final(sweep) -> dict:
    """The sweep with train.keep_final in its overrides (keep_final), unless its overrides, grid or a
    variant set the key already: the file's own choice stands."""
    key = "train.keep_final"
    if (key in (sweep.get("overrides") or {}) or key in (sweep.get("grid") or {})
            or any(isinstance(v, dict) and key in v for v in sweep.get("variants") or [])):
        return sweep
    return dict(sweep, overrides=dict(sweep.get("overrides") or {}, **{key: keep_final(sweep["name"])}))


def cmd_prepare(args):
    out = os.path.abspath(args.out)
    try:
        os.makedirs(os.path.join(out, "sweeps"), exist_ok=True)
    except OSError as e:  # OUT (or OUT/sweeps) an existing file, no permission: named, no traceback
        raise TierError(f"{args.out}: cannot make {os.path.join(out, 'sweeps')} ({e.strerror or e})") from e
    for path in args.files:
        s = dict(prepared(path, args.tiny))
        s["out_dir"] = os.path.join(out, s["name"])
        s = with_keep_final(s)
        dst = os.path.join(out, "sweeps", s["name"] + ".json")
        with open(dst, "w", encoding="utf-8") as fh:
            json.dump(s, fh, indent=2)
            fh.write("\n")
        print(dst)
    return 0


# ---- size ------------------------------------------------------------------------------------

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


# ---- deepest ---------------------------------------------------------------------------------

def cmd_deepest(args):
    """The deepest train_grid runs of pre-norm LayerNorm with and without residual, lowest seed, at
    the rate every depth has: single-run figures for the report (plot_run.py)."""
    from stacklab.runs import runlog  # here, not at the top: the other commands need no numpy
    from stacklab.studies import stats
    grid = os.path.join(args.out, "train_grid")
    runs = [r for r in runlog.sweep_runs(grid) if r.status == "completed"] if os.path.isdir(grid) else []
    if not runs:
        return 0
    ref = stats.reference_rate(stats.points(runs))
    deep = max(r.n_layer for r in runs)
    for w in ("pre-layernorm-res", "pre-layernorm-nores"):
        rs = sorted((r for r in runs if r.wiring == w and r.n_layer == deep and stats.learning_rate(r) == ref),
                    key=lambda r: stats.seed_of(r) or 0)
        if rs:
            print(rs[0].path)
    return 0


def positive_int(text):
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got '{text}'")
    return n


def main(argv=None):
    p = argparse.ArgumentParser(description="The deep-stacking study's tiers (used by scripts/reproduce.sh).")
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("full-configs", help="write configs/experiments/full/*.json from the quick tier")
    a.add_argument("--check", action="store_true", help="only check that they are up to date (exit 1 if not)")
    a = sub.add_parser("files", help="print a tier's sweep files (reproduce.sh runs these)")
    a.add_argument("tier", choices=("quick", "full"))
    a.add_argument("--claims", action="store_true", help="quick tier: add the claims sweeps (the full tier has them)")
    a.add_argument("--text", action="store_true",
                   help="quick tier: add the text study's sweeps on tiny Shakespeare (the full tier has them)")
    a.add_argument("--converge", action="store_true",
                   help="add the convergence study's sweeps (issue 36; in no tier by default)")
    a.add_argument("--signal", action="store_true",
                   help="add the residual-or-signal study's sweeps (issue 45 part 2; in no tier by default)")
    sub.add_parser("later", help="print the extension sweeps' names (run after their sources)")
    a = sub.add_parser("list", help="print a list of sweep names on one line (reproduce.sh --help reads them)")
    a.add_argument("what", choices=tuple(LISTS))
    a = sub.add_parser("text-files", help="print the sweep files among FILE... that read a text file")
    a.add_argument("files", nargs="+")
    a = sub.add_parser("extend", help="copy the completed runs each extension sweep in OUT/sweeps continues; "
                                      "print RUN_DIR MAX_ITERS for each to resume")
    a.add_argument("binary")
    a.add_argument("out")
    a.add_argument("--settled", action="store_true",
                   help="copy nothing and exit 3 unless every source run has completed or diverged")
    a = sub.add_parser("prepare", help="write OUT/sweeps/<name>.json with out_dir OUT/<name>")
    a.add_argument("out")
    a.add_argument("files", nargs="+")
    a.add_argument("--tiny", action="store_true", help="scale down (for tests)")
    a = sub.add_parser("size", help="print the runs, how many are done and the estimated core-hours")
    a.add_argument("binary", help="the stacklab binary whose `bench` times the steps (e.g. build/stacklab)")
    a.add_argument("files", nargs="+")
    a.add_argument("--timing", help="append a 'size' record to this timing.jsonl")
    a.add_argument("--floor", action="store_true",
                   help="also the least time at this machine's sgemm ceiling (the runs' FLOPs over it)")
    a.add_argument("--jobs", type=positive_int, default=2, help="runs at once, for --floor's minutes (default 2)")
    a = sub.add_parser("deepest", help="print the deepest pre-norm res/no-res run dirs of OUT/train_grid")
    a.add_argument("out")
    args = p.parse_args(argv)
    try:
        return {"full-configs": cmd_full_configs, "files": cmd_files, "prepare": cmd_prepare, "size": cmd_size,
                "deepest": cmd_deepest, "later": cmd_later, "extend": cmd_extend, "list": cmd_list,
                "text-files": cmd_text_files}[args.cmd](args)
    except TierError as e:
        print(f"tier.py: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # stdout closed by its reader (`tier.py extend ... | head`): what was to be done is done (extend
        # prints after its copies); no traceback, and none at exit when Python flushes stdout again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (AttributeError, OSError, ValueError):
            pass
        return 141


if __name__ == "__main__":
    sys.exit(main())
