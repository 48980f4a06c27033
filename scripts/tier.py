#!/usr/bin/env python3
"""The study's tiers for scripts/reproduce.sh: full-tier files, one invocation's sweep files, sizes.

    python3 scripts/tier.py full-configs [--check] | files TIER [--claims] ... | list WHAT | prepare OUT FILE...
                            [--tiny] | size BIN FILE... | extend BIN OUT | later | text-files FILE... | deepest OUT

The code is scripts/tiers/ (cli.py); the sweep lists are configs/experiments/tiers.json's.
"""
import sys

try:
    from tiers.cli import main
except Exception as e:  # a malformed configs/experiments/tiers.json: its file and field, no traceback
    if type(e).__module__ != "stacklab.runs.tier_lists":
        raise
    print(f"tier.py: {e}", file=sys.stderr)
    sys.exit(1)

if __name__ == "__main__":
    sys.exit(main())
