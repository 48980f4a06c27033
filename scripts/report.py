#!/usr/bin/env python3
"""Writes the deep-stacking report (report.md, report.html, findings.json) from a study's runs.

    /usr/bin/python3 scripts/report.py runs/deep_stacking [--out report.md]

The code is in the package: stacklab/report/ (judged by stacklab/studies/judge.py).
"""
import sys

from stacklab.report import main

if __name__ == "__main__":
    sys.exit(main())
