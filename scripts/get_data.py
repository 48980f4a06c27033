#!/usr/bin/env python3
"""The data step: fetches an outside data set (tiny Shakespeare) into data/, checked by size and SHA-256.

    python3 scripts/get_data.py                               # downloads shakespeare_char
    python3 scripts/get_data.py --local ../shared/data        # no internet: copy a local copy, same check
    STACKLAB_DATA_LOCAL=/shared/datasets python3 scripts/get_data.py   # the same, for clusters and CI

The code is in the package: stacklab/runs/datasets.py (standard library only).
"""
import sys

from stacklab.runs.datasets import main

if __name__ == "__main__":
    sys.exit(main())
