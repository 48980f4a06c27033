#!/usr/bin/env python3
"""Judges the claims of configs/experiments/claims.json (C1-C7) on a study's runs, by their fixed rules.

    /usr/bin/python3 scripts/claims.py runs/deep_stacking [--tier quick|full] [--json FILE]
    /usr/bin/python3 scripts/claims.py runs/deep_stacking --compare runs/deep_stacking_haswell   # mixed?

The code is in the package: stacklab/studies/claims.py (the verdicts, this command line), with
claim_runs.py (the claims' files, runs and outcomes) and claim_rules.py (each claim's rule).
"""
import sys

from stacklab.studies.claims import main

if __name__ == "__main__":
    sys.exit(main())
