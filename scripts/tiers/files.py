"""Which sweep files one invocation of reproduce.sh runs, and the lists it names:

    tier.py files quick|full [--claims] [--text] [--converge] [--signal]   # one path a line
    tier.py list quick|claims|text|converge|signal|full|full-only|extends|covered   # one line
    tier.py later            # the extension sweeps, run after their sources
    tier.py text-files FILE...   # those of FILE... that read a text file (the data step first)
    tier.py deepest OUT      # the deepest pre-norm res/no-res runs of OUT/train_grid, seed 0

The lists are configs/experiments/tiers.json's, read by stacklab.runs.tier_lists.
"""
import os

from stacklab.runs.tier_lists import (CLAIMS_SWEEPS, CONVERGE_SWEEPS, COVERED_BY, EXTENDS, FULL_DIR, FULL_SWEEPS,
                                      QUICK_DIR, QUICK_SWEEPS, ROOT, SIGNAL_SWEEPS, TEXT_SWEEPS, TierError, read_json,
                                      tier_sweeps)

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
