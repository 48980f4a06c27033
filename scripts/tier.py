#!/usr/bin/env python3
"""The study's tiers for scripts/reproduce.sh: full-tier files, one invocation's sweep files, sizes.

    python3 scripts/tier.py full-configs [--check] | prepare OUT FILE... [--tiny] | size BIN FILE... | deepest OUT

The code is in the package: stacklab/tier.py.
"""
import sys

from stacklab.tier import main

if __name__ == "__main__":
    sys.exit(main())
