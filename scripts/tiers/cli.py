"""The command line of scripts/tier.py: the study's tiers for scripts/reproduce.sh.

    python3 scripts/tier.py full-configs [--check]   # configs/experiments/full/*.json from the quick tier
    python3 scripts/tier.py files quick|full [--claims] [--text] [--converge] [--signal]   # a tier's sweep files
    python3 scripts/tier.py later                      # the extension sweeps, run after their sources
    python3 scripts/tier.py list quick|claims|text|converge|signal|full|full-only|extends|covered   # one line
    python3 scripts/tier.py text-files FILE...         # the sweep files that read a text file
    python3 scripts/tier.py extend BIN OUT             # copy the runs an extension sweep continues
    python3 scripts/tier.py prepare OUT FILE... [--tiny]   # OUT/sweeps/<name>.json, out_dir OUT/<name>
    python3 scripts/tier.py size BIN FILE... [--timing OUT/timing.jsonl] [--floor [--jobs N]]   # runs, core-hours
    python3 scripts/tier.py deepest OUT                # the deepest pre-norm res/no-res runs, seed 0

Errors name the file, exit 1 (argparse's usage errors: exit 2). Each subcommand's module says what
it does (tiers/__init__.py's map).
"""
import argparse
import os
import sys

from stacklab.runs.tier_lists import TierError
from tiers import extend, files, full, prepare, size


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
    a.add_argument("what", choices=tuple(files.LISTS))
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
        return {"full-configs": full.cmd_full_configs, "files": files.cmd_files, "prepare": prepare.cmd_prepare,
                "size": size.cmd_size, "deepest": files.cmd_deepest, "later": files.cmd_later,
                "extend": extend.cmd_extend, "list": files.cmd_list,
                "text-files": files.cmd_text_files}[args.cmd](args)
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
