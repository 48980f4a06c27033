#!/usr/bin/env python3
"""Draws the stability map (OUT/stability_map's runs: wiring x init x learning rate x depth) as one
figure, stability_map.png.

    /usr/bin/python3 scripts/plot_stability_map.py OUT/stability_map --out OUT/figures/stability_map

The code is in the package: stacklab/plots/prepost_map.py (the judging: studies/prepost_map.py).
"""
import sys

from stacklab.plots.prepost_map import main

if __name__ == "__main__":
    sys.exit(main())
