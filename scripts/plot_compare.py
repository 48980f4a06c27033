#!/usr/bin/env python3
"""Compares stacklab runs across depth and wiring (and, for training runs, the study's figures).

    /usr/bin/python3 scripts/plot_compare.py PATH... [--out DIR] [--step 0|last] [--plotly-dir DIR]

The code is in the package: stacklab/plots/compare.py.
"""
import sys

from stacklab.plots.compare import main

if __name__ == "__main__":
    sys.exit(main())
