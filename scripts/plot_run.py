#!/usr/bin/env python3
"""Plots one stacklab run: loss curves, per-block gradient norms, the residual stream.

    /usr/bin/python3 scripts/plot_run.py RUN_DIR [--out DIR] [--steps 0,100,300] [--plotly-dir DIR]

The code is in the package: stacklab/plots/run.py.
"""
import sys

from stacklab.plots.run import main

if __name__ == "__main__":
    sys.exit(main())
